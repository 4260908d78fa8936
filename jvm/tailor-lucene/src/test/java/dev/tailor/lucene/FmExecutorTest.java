package dev.tailor.lucene;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.node.ObjectNode;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import org.apache.lucene.search.IndexSearcher;
import org.apache.lucene.search.Query;
import org.apache.lucene.search.ScoreDoc;
import org.apache.lucene.search.TopDocs;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/** FmExecutor under a real IndexSearcher, on a generated index of one slice per segment. */
class FmExecutorTest {
  private static final long SEED = 20_150_314L;
  private static TestIndex index;

  @BeforeAll
  static void buildIndex() throws Exception {
    index = new TestIndex(SEED, 4_000, 10);
  }

  @AfterAll
  static void closeIndex() throws Exception {
    index.close();
  }

  /** One slice per segment, so a query has as many tasks as segments. */
  private static FmSearcher searcher(FmExecutor fm) {
    return new FmSearcher(index.reader, fm, 1, 1);
  }

  private static void assertSameHits(TopDocs expected, TopDocs actual, String what) {
    int[] docs = new int[expected.scoreDocs.length];
    float[] scores = new float[expected.scoreDocs.length];
    for (int i = 0; i < docs.length; i++) {
      docs[i] = expected.scoreDocs[i].doc;
      scores[i] = expected.scoreDocs[i].score;
    }
    int[] gotDocs = new int[actual.scoreDocs.length];
    float[] gotScores = new float[actual.scoreDocs.length];
    for (int i = 0; i < gotDocs.length; i++) {
      ScoreDoc d = actual.scoreDocs[i];
      gotDocs[i] = d.doc;
      gotScores[i] = d.score;
    }
    assertArrayEquals(docs, gotDocs, what);
    assertArrayEquals(scores, gotScores, what);
  }

  @Test
  void resultsEqualThoseWithoutAnExecutor() throws Exception {
    FmTable table =
        Tables.of(new double[][] {{0, 0, 0, 0}, {0, 0.5, 1, 1}, {1, 0.5, 2, 2}, {2, 1, 1, 1}});
    IndexSearcher plain = new IndexSearcher(index.reader);
    List<Query> queries = TestIndex.queries(SEED, 50);
    List<TopDocs> expected = new ArrayList<>();
    for (Query q : queries) {
      expected.add(plain.search(q, 10));
    }
    assertTrue(
        expected.stream().filter(t -> t.scoreDocs.length > 0).count() >= 40,
        "most queries match something");
    try (FmExecutor fm = new FmExecutor(table, 4)) {
      FmSearcher searcher = searcher(fm);
      assertTrue(searcher.getSlices().length >= 8, "slices: " + searcher.getSlices().length);
      for (int i = 0; i < queries.size(); i++) {
        assertSameHits(expected.get(i), searcher.search(queries.get(i), 10), "query " + i);
      }
      // The same queries from three threads at once, so loads 1-3 and the guard are exercised.
      ExecutorService clients = Executors.newFixedThreadPool(3);
      try {
        List<Future<?>> runs = new ArrayList<>();
        for (int c = 0; c < 3; c++) {
          runs.add(
              clients.submit(
                  () -> {
                    for (int i = 0; i < queries.size(); i++) {
                      assertSameHits(
                          expected.get(i), searcher.search(queries.get(i), 10), "query " + i);
                    }
                    return null;
                  }));
        }
        for (Future<?> run : runs) {
          run.get();
        }
      } finally {
        clients.shutdown();
      }
      assertEquals(4 * queries.size(), fm.stats().queries());
      assertEquals(0, fm.load());
    }
  }

  @Test
  void aQueryAtLowLoadGainsHelpersWhenTheRowStartsAtOnce() throws Exception {
    try (FmExecutor fm = new FmExecutor(Tables.constant(0, 0, 0, 0), 4)) {
      FmSearcher searcher = searcher(fm);
      int expected = new IndexSearcher(index.reader).count(TestIndex.queries(SEED, 1).get(0));
      for (int i = 0; i < 5; i++) {
        try (FmQueryScope query = fm.enter()) {
          assertEquals(1, query.arrivalLoad());
          int hits = searcher.search(TestIndex.queries(SEED, 1).get(0), new SliceProbe(5));
          assertEquals(expected, hits);
          assertTrue(query.degree() > 1, "degree " + query.degree() + ", " + fm.stats());
          assertTrue(query.degree() <= 4);
        }
      }
      FmStats stats = fm.stats();
      assertEquals(5, stats.queries());
      assertEquals(0, stats.queriesAtDegree(1), stats.toString());
      assertTrue(stats.helpersSent() > 0);
    }
  }

  @Test
  void aQueryStaysAtDegreeOneBeforeItsFirstBoundary() throws Exception {
    try (FmExecutor fm = new FmExecutor(Tables.constant(0, 1e9, 1e9, 1e9), 4)) {
      FmSearcher searcher = searcher(fm);
      SliceProbe probe = new SliceProbe(5);
      for (int i = 0; i < 5; i++) {
        try (FmQueryScope query = fm.enter()) {
          searcher.search(TestIndex.queries(SEED, 1).get(0), probe);
          assertEquals(1, query.degree());
        }
      }
      FmStats stats = fm.stats();
      assertEquals(5, stats.queriesAtDegree(1), stats.toString());
      assertEquals(0, stats.helpersSent());
      assertEquals(0, probe.peakHelpersInside(), "every slice ran on its caller");
    }
  }

  @Test
  void helpersJoinAtTheFirstBoundaryNotBefore() throws Exception {
    try (FmExecutor fm = new FmExecutor(Tables.constant(0, 10, 0, 0), 4)) {
      FmSearcher searcher = searcher(fm);
      SliceProbe probe = new SliceProbe(5);
      long before = System.nanoTime();
      try (FmQueryScope query = fm.enter()) {
        searcher.search(TestIndex.queries(SEED, 1).get(0), probe);
        assertTrue(query.degree() > 1, "degree " + query.degree() + ", " + fm.stats());
      }
      long joinedMs = TimeUnit.NANOSECONDS.toMillis(probe.firstHelperNanos() - before);
      assertTrue(joinedMs >= 10, "a helper joined " + joinedMs + " ms in, before v1 = 10 ms");
      FmStats stats = fm.stats();
      assertEquals(1, stats.recentRunNanos().length);
      assertEquals(stats.degreeHistogram().length, 4);
      assertTrue(stats.recentDegrees()[0] > 1, stats.toString());
      assertTrue(
          stats.recentRunNanos()[0] >= TimeUnit.MILLISECONDS.toNanos(10),
          "a query that gained a helper at 10 ms ran " + stats.recentRunNanos()[0] + " ns");
    }
  }

  /**
   * Work a query did before it reached the executor (an engine's rewrite) counts in its executed
   * time: a query entered 300 ms into its work finds its 200 ms boundary passed, and gets helpers
   * for slices that alone would end long before 200 ms.
   */
  @Test
  void workBeforeTheExecutorCountsInTheExecutedTime() throws Exception {
    try (FmExecutor fm = new FmExecutor(Tables.constant(0, 200, 0, 0), 4)) {
      FmSearcher searcher = searcher(fm);
      SliceProbe probe = new SliceProbe(5);
      try (FmQueryScope query = fm.enter(TimeUnit.MILLISECONDS.toNanos(300))) {
        searcher.search(TestIndex.queries(SEED, 1).get(0), probe);
        assertTrue(query.degree() > 1, "degree " + query.degree() + ", " + fm.stats());
      }
      long runNanos = fm.stats().recentRunNanos()[0];
      assertTrue(runNanos >= TimeUnit.MILLISECONDS.toNanos(300), "run time " + runNanos + " ns");
      try (FmQueryScope query = fm.enter()) {
        searcher.search(TestIndex.queries(SEED, 1).get(0), probe);
        assertEquals(1, query.degree(), "the same query from zero stays before its boundary");
      }
      assertThrows(IllegalArgumentException.class, () -> fm.enter(-1));
      assertEquals(0, fm.load());
    }
  }

  @Test
  void theRecentQueriesAreTheLastOnesInOrder() throws Exception {
    try (FmExecutor fm = new FmExecutor(Tables.constant(0, 1e9, 1e9, 1e9), 2)) {
      int n = FmStats.RECENT + 17;
      for (int i = 0; i < n; i++) {
        try (FmQueryScope query = fm.enter()) {
          if (i == n - 1) {
            Thread.sleep(3);
          }
        }
      }
      FmStats stats = fm.stats();
      assertEquals(n, stats.queries());
      long[] runs = stats.recentRunNanos();
      int[] degrees = stats.recentDegrees();
      assertEquals(FmStats.RECENT, runs.length);
      assertEquals(FmStats.RECENT, degrees.length);
      assertTrue(java.util.Arrays.stream(degrees).allMatch(d -> d == 1));
      assertTrue(java.util.Arrays.stream(stats.recentLoads()).allMatch(l -> l == 1), "one at a time");
      assertTrue(
          runs[runs.length - 1] >= TimeUnit.MILLISECONDS.toNanos(3),
          "the newest query, which slept 3 ms, is last: " + runs[runs.length - 1] + " ns");
      assertTrue(runs[0] < TimeUnit.MILLISECONDS.toNanos(3), "an empty query ran " + runs[0] + " ns");
    }
  }

  @Test
  void theGuardNeverWorksMoreHelpersThanCoresLessOne() throws Exception {
    int cores = 3;
    try (FmExecutor fm = new FmExecutor(Tables.constant(0, 0, 0, 0), cores)) {
      FmSearcher searcher = searcher(fm);
      Query query = TestIndex.queries(SEED, 2).get(1);
      int expected = new IndexSearcher(index.reader).count(query);
      SliceProbe probe = new SliceProbe(2);
      // Two callers leave a core free for helpers; more would take every core themselves, and
      // helpers would give their cores back between slices (helperYields).
      ExecutorService clients = Executors.newFixedThreadPool(2);
      try {
        List<Future<?>> runs = new ArrayList<>();
        for (int c = 0; c < 2; c++) {
          runs.add(
              clients.submit(
                  () -> {
                    for (int i = 0; i < 16; i++) {
                      assertEquals(expected, searcher.search(query, probe));
                    }
                    return null;
                  }));
        }
        for (Future<?> run : runs) {
          run.get();
        }
      } finally {
        clients.shutdown();
      }
      FmStats stats = fm.stats();
      assertEquals(32, stats.queries());
      assertTrue(probe.peakHelpersInside() >= 1, "helpers took slices: " + stats);
      assertTrue(probe.peakHelpersInside() <= cores - 1, "measured: " + probe.peakHelpersInside());
      assertTrue(stats.peakHelpers() <= cores - 1, stats.toString());
      assertTrue(stats.helpersRefused() > 0, "two callers at degree 4 on three cores: " + stats);
      assertEquals(
          stats.helpersRefused(),
          java.util.Arrays.stream(stats.recentRefused()).asLongStream().sum(),
          "the per-query refusals sum to the total");
      for (boolean sliced : stats.recentSliced()) {
        assertTrue(sliced, "every query here entered on the sliced path");
      }
    }
  }

  /** Each recent query says whether the engine sliced it (FmExecutor.enter's second argument). */
  @Test
  void theRecentQueriesSayWhichWereSliced() {
    try (FmExecutor fm = new FmExecutor(Tables.constant(0, 1e9, 1e9, 1e9), 2)) {
      try (FmQueryScope query = fm.enter(0, true)) {
        assertEquals(1, query.degree());
      }
      try (FmQueryScope query = fm.enter(0, false)) {
        assertEquals(1, query.degree());
      }
      try (FmQueryScope query = fm.enter()) {
        assertEquals(1, query.degree());
      }
      FmStats stats = fm.stats();
      assertArrayEquals(new boolean[] {true, false, true}, stats.recentSliced());
      assertArrayEquals(new int[] {0, 0, 0}, stats.recentRefused());
    }
  }

  /**
   * A helper leaves its query between tasks once an arrival leaves more query threads than cores:
   * the arrival's thread gets the core back after one task, not after the query.
   */
  @Test
  void aHelperGivesItsCoreBackToAnArrivalBetweenTasks() throws Exception {
    try (FmExecutor fm = new FmExecutor(Tables.constant(0, 0), 2)) {
      assertEquals(FmPolicy.Yield.CORES, fm.yieldRule(), "the guard's yield is the default");
      assertEquals(1, tasksOnHelpersWithAnArrival(fm, false), "the helper left after its first task");
      assertEquals(1, fm.stats().helpersYielded(), fm.stats().toString());
      assertEquals(0, fm.stats().helpersStayed(), fm.stats().toString());
    }
  }

  /**
   * Under the row rule a helper stays past the cores while the row for the load the arrival made
   * still gives its query two threads, and leaves as under the guard once it does not.
   */
  @Test
  void underTheRowRuleTheRowForTheLoadNowDecidesWhetherAHelperStays() throws Exception {
    // Load 2's row gives two threads at once: the helper stays for a second task.
    try (FmExecutor fm = new FmExecutor(Tables.of(new double[][] {{0, 0}, {0, 0}}), 2)) {
      fm.setYield(FmPolicy.Yield.ROW);
      assertTrue(tasksOnHelpersWithAnArrival(fm, true) >= 2, fm.stats().toString());
      assertEquals(0, fm.stats().helpersYielded(), fm.stats().toString());
      assertEquals(1, fm.stats().helpersStayed(), fm.stats().toString());
    }
    // Load 2's row gives the second thread only after a minute: the helper leaves as the guard's
    // does.
    FmTable late = Tables.withHorizon(120_000, new double[][] {{0, 0}, {0, 60_000}});
    try (FmExecutor fm = new FmExecutor(late, 2)) {
      fm.setYield(FmPolicy.Yield.ROW);
      assertEquals(1, tasksOnHelpersWithAnArrival(fm, false), fm.stats().toString());
      assertEquals(1, fm.stats().helpersYielded(), fm.stats().toString());
      assertEquals(0, fm.stats().helpersStayed(), fm.stats().toString());
    }
  }

  /**
   * Under the mean rule the row is the sustained load's: after a spell of arrivals at load 3,
   * whose row gives no second thread, a helper leaves at an arrival that makes load 2 only, whose
   * row would keep it; on a node whose arrivals found it idle, it stays as under the row rule.
   */
  @Test
  void underTheMeanRuleTheSustainedLoadsRowDecidesWhetherAHelperStays() throws Exception {
    FmTable table = Tables.withHorizon(120_000, new double[][] {{0, 0}, {0, 0}, {0, 60_000}});
    try (FmExecutor fm = new FmExecutor(table, 2)) {
      fm.setYield(FmPolicy.Yield.MEAN);
      assertEquals(1.0, fm.meanLoad(), 0.0);
      assertTrue(tasksOnHelpersWithAnArrival(fm, true) >= 2, fm.stats().toString());
      assertEquals(0, fm.stats().helpersYielded(), fm.stats().toString());
      assertEquals(1, fm.stats().helpersStayed(), fm.stats().toString());
    }
    try (FmExecutor fm = new FmExecutor(table, 2)) {
      fm.setYield(FmPolicy.Yield.MEAN);
      // Three requests in flight: each query arriving meanwhile finds load 3.
      for (int i = 0; i < 3; i++) {
        fm.requestStarted();
      }
      for (int i = 0; i < 4 * FmPolicy.MEAN_LOAD_ARRIVALS; i++) {
        fm.enter().close();
      }
      for (int i = 0; i < 3; i++) {
        fm.requestFinished();
      }
      assertTrue(fm.meanLoad() > 2.9, "the arrivals found load 3: " + fm.meanLoad());
      assertEquals(1, tasksOnHelpersWithAnArrival(fm, false), fm.stats().toString());
      assertEquals(1, fm.stats().helpersYielded(), fm.stats().toString());
      assertEquals(0, fm.stats().helpersStayed(), fm.stats().toString());
    }
  }

  /**
   * Runs a query of 8 tasks on a two-core {@code fm} whose row for load 1 sends a helper at once.
   * While the helper is inside its first task a second query arrives and holds the other core;
   * if {@code helperStays}, the caller waits for the helper to claim a second task before
   * claiming any itself. Returns the tasks the helper ran.
   */
  private static long tasksOnHelpersWithAnArrival(FmExecutor fm, boolean helperStays)
      throws Exception {
    int tasks = 8;
    AtomicInteger next = new AtomicInteger();
    ConcurrentHashMap<Integer, Thread> ranOn = new ConcurrentHashMap<>();
    CountDownLatch helperInside = new CountDownLatch(1);
    CountDownLatch helperAgain = new CountDownLatch(1);
    CountDownLatch arrived = new CountDownLatch(1);
    CountDownLatch callerDone = new CountDownLatch(1);
    Thread caller = Thread.currentThread();
    // As TaskExecutor does: one runnable, submitted tasks - 1 times, claims the next task.
    Runnable work =
        () -> {
          int id = next.getAndIncrement();
          if (id >= tasks) {
            return;
          }
          ranOn.put(id, Thread.currentThread());
          if (Thread.currentThread() != caller) {
            if (id == 0) {
              helperInside.countDown();
              await(arrived);
            } else {
              helperAgain.countDown();
            }
          }
          sleepMs(2);
        };
    ExecutorService other = Executors.newSingleThreadExecutor();
    try (FmQueryScope query = fm.enter()) {
      for (int i = 0; i < tasks - 1; i++) {
        fm.execute(work);
      }
      await(helperInside);
      assertEquals(
          fm.yieldRule() == FmPolicy.Yield.CORES,
          fm.mayHelp(),
          "a busy helper counts as giving its core back to an arrival only under the cores rule");
      Future<?> arrival =
          other.submit(
              () -> {
                try (FmQueryScope second = fm.enter()) {
                  arrived.countDown();
                  await(callerDone);
                }
                return null;
              });
      await(arrived);
      if (helperStays) {
        await(helperAgain);
      }
      // The caller claims the tasks the helper leaves, as TaskExecutor's caller does.
      int id;
      while ((id = next.getAndIncrement()) < tasks) {
        ranOn.put(id, caller);
        sleepMs(2);
      }
      callerDone.countDown();
      arrival.get();
    } finally {
      other.shutdown();
    }
    assertEquals(tasks, ranOn.size());
    return ranOn.values().stream().filter(t -> t != caller).count();
  }

  private static void await(CountDownLatch latch) {
    try {
      assertTrue(latch.await(30, TimeUnit.SECONDS), "timed out");
    } catch (InterruptedException e) {
      throw new AssertionError(e);
    }
  }

  private static void sleepMs(long ms) {
    try {
      Thread.sleep(ms);
    } catch (InterruptedException e) {
      throw new AssertionError(e);
    }
  }

  @Test
  void aQueryMayGetAHelperOnlyWithACoreOfItsOwnAndARowThatRaises() throws Exception {
    try (FmExecutor fm = new FmExecutor(Tables.constant(0, 5), 2)) {
      assertTrue(fm.mayHelp(), "idle, two cores");
      try (FmQueryScope query = fm.enter()) {
        assertTrue(fm.mayHelp(), "one query runs: the arrival takes the last core, a helper later");
        boolean[] withTwo = {true};
        Thread other =
            new Thread(
                () -> {
                  try (FmQueryScope second = fm.enter()) {
                    withTwo[0] = fm.mayHelp();
                  }
                });
        other.start();
        other.join();
        assertFalse(withTwo[0], "two queries hold both cores: an arrival has none of its own");
      }
      assertTrue(fm.mayHelp(), "idle again");
    }
    try (FmExecutor fm = new FmExecutor(Tables.constant(0), 4)) {
      assertFalse(fm.mayHelp(), "a table of degree 1 never adds a thread");
    }
    try (FmExecutor fm = new FmExecutor(Tables.constant(0, 5), 1)) {
      assertFalse(fm.mayHelp(), "one core");
    }
  }

  /**
   * {@link FmExecutor#rowMayHelp} reads the arriving query's row only: with both cores held it
   * still says yes where the row raises before y, and no where the helper comes only at y (the
   * planner's horizon, which no profiled request reaches), as in the on-exit row of load 5.
   */
  @Test
  void theRowAloneDecidesWhetherAQueryMayGetAHelperLater() throws Exception {
    // Rows for loads 1-4: a helper after 2.5 ms, 2.5 ms, 13.5 ms, y; from load 5, on an exit.
    FmTable table =
        Tables.of(
            new double[][] {{0, 2.5}, {0, 2.5}, {0, 13.5}, {0, 100}, {100, 100}},
            false,
            false,
            false,
            false,
            true);
    try (FmExecutor fm = new FmExecutor(table, 2)) {
      boolean[] row = new boolean[5];
      boolean[] core = new boolean[5];
      CountDownLatch done = new CountDownLatch(1);
      List<Thread> queries = new ArrayList<>();
      try {
        for (int i = 0; i < 5; i++) {
          row[i] = fm.rowMayHelp(); // an arrival now would find load i + 1
          core[i] = fm.mayHelp();
          if (i == 4) {
            break; // a fifth query would wait for an exit
          }
          queries.add(holdQueryOpen(fm, done));
        }
      } finally {
        done.countDown();
        for (Thread t : queries) {
          t.join();
        }
      }
      assertArrayEquals(new boolean[] {true, true, true, false, false}, row);
      assertArrayEquals(new boolean[] {true, true, false, false, false}, core);
    }
  }

  /**
   * Once an engine reports slices, a batch that reports none (as Lucene's per-segment term
   * lookups) gets no helper: its copies cannot be told claimed from unclaimed, and a helper sent
   * to it would only run no-ops while holding a core.
   */
  @Test
  void batchesThatReportNoSliceGetNoHelperOnceSlicesAreReported() throws Exception {
    try (FmExecutor fm = new FmExecutor(Tables.constant(0, 0), 2)) {
      runBatch(fm, 8, true);
      long sent = fm.stats().helpersSent();
      assertTrue(sent >= 1, "a reported slice batch gets a helper: " + fm.stats());
      assertEquals(2, fm.stats().recentDegrees()[0], fm.stats().toString());
      runBatch(fm, 8, false);
      assertEquals(sent, fm.stats().helpersSent(), "no helper for the unreported batch");
    }
  }

  /**
   * Requests an engine reports ({@link FmExecutor#requestStarted}) hold cores while outside a query
   * scope: on two cores, a query whose own request is one of two in flight gets no helper, and
   * gets one as soon as the other request ends.
   */
  @Test
  void requestsOutsideQueriesHoldCoresUntilTheyEnd() throws Exception {
    try (FmExecutor fm = new FmExecutor(Tables.constant(0, 0), 2)) {
      fm.requestStarted(); // the arriving query's own request
      assertTrue(fm.mayHelp(), "a query's own request is the core it runs on");
      fm.requestStarted(); // another request, replying on the other core
      assertTrue(fm.mayHelp(), "the query has its core; a helper once the other request ends");
      fm.requestStarted(); // a third: the query would wait for a core
      assertFalse(fm.mayHelp());
      fm.requestFinished();
      runBatch(fm, 8, true);
      assertEquals(0, fm.stats().helpersSent(), fm.stats().toString());
      assertEquals(1, fm.stats().recentDegrees()[0]);

      // The other request ends while the query runs its first slice, with 35 ms of slices left.
      runBatch(fm, 8, true, fm::requestFinished);
      assertTrue(fm.stats().helpersSent() >= 1, fm.stats().toString());
      assertEquals(2, fm.stats().recentDegrees()[1], fm.stats().toString());
      fm.requestFinished();
      assertEquals(0, fm.requestsInFlight());
    }
  }

  /**
   * The row is the requests in the system's (Haque et al., ASPLOS 2015, §4.2): an engine's request
   * in flight outside a query scope (queued for a search thread, fetching, replying) raises it as
   * the planner's model counts it, and a running query reads the lower row once it ends. Four
   * cores, so that the guard has a core for the helper throughout and only the row decides.
   */
  @Test
  void theRowFollowsTheEnginesRequestsInFlight() throws Exception {
    // Load 1: a helper at once; loads 2 and up: only at y (1 s), which no query here reaches.
    ObjectNode json = Tables.json(new double[][] {{0, 0}, {0, 1000}});
    json.put("max_interval_ms", 1000.0);
    FmTable table = FmTable.parse(json.toString(), "test table");
    try (FmExecutor fm = new FmExecutor(table, 4)) {
      fm.requestStarted(); // the query's own request
      assertTrue(fm.rowMayHelp(), "alone: row 1");
      runBatch(fm, 8, true);
      fm.requestStarted(); // another request, outside any query scope
      assertFalse(fm.rowMayHelp(), "two requests in the system: row 2");
      runBatch(fm, 8, true);
      runBatch(fm, 8, true, fm::requestFinished); // it ends during the first slice
      FmStats st = fm.stats();
      assertArrayEquals(new int[] {1, 2, 2}, st.recentLoads(), st.toString());
      assertArrayEquals(new int[] {2, 1, 2}, st.recentDegrees(), st.toString());
      fm.requestFinished();
    }
  }

  /**
   * Admission reads the queries in the executor alone: requests the engine has in flight outside
   * it (queued for its own threads, say) hold no core an exit of this executor would free, so an
   * on-exit row they alone would reach must not hold an arrival back.
   */
  @Test
  void admissionIgnoresRequestsOutsideTheExecutor() throws Exception {
    FmTable table =
        Tables.of(new double[][] {{0, 0}, {0, 0}, {100, 100}}, false, false, true);
    try (FmExecutor fm = new FmExecutor(table, 2)) {
      CountDownLatch done = new CountDownLatch(1);
      ExecutorService arrival = Executors.newSingleThreadExecutor();
      Thread holder = null;
      try {
        fm.requestStarted(); // the holder's request
        holder = holdQueryOpen(fm, done);
        fm.requestStarted(); // two requests outside the executor
        fm.requestStarted();
        fm.requestStarted(); // the arrival's own: four in the system, two queries in FM
        Future<Integer> row =
            arrival.submit(
                () -> {
                  try (FmQueryScope q = fm.enter()) {
                    return q.arrivalLoad();
                  }
                });
        assertEquals(4, row.get(10, TimeUnit.SECONDS), "started at once, on row 4's degrees");
        assertEquals(0, fm.stats().admissionsOnExit());
      } finally {
        done.countDown();
        if (holder != null) {
          holder.join();
        }
        arrival.shutdownNow();
      }
    }
  }

  /**
   * A query an engine runs on its plain path ({@code sliced} false) gets its tasks run at once on
   * its own thread, in the order handed over, and never a helper, even with its row's degree due.
   */
  @Test
  void aQueryOnItsSequentialPathRunsItsTasksAtOnceWithoutHelpers() throws Exception {
    try (FmExecutor fm = new FmExecutor(Tables.constant(0, 0, 0, 0), 4)) {
      Thread caller = Thread.currentThread();
      List<Integer> ran = new ArrayList<>();
      try (FmQueryScope query = fm.enter(0, false)) {
        assertEquals(1, fm.load());
        for (int i = 0; i < 8; i++) {
          int id = i;
          fm.execute(
              () -> {
                assertEquals(caller, Thread.currentThread());
                ran.add(id);
              });
          assertEquals(i + 1, ran.size(), "task " + i + " ran before execute returned");
        }
        assertEquals(1, query.degree());
      }
      assertEquals(List.of(0, 1, 2, 3, 4, 5, 6, 7), ran);
      assertEquals(0, fm.stats().helpersSent());
      assertEquals(1, fm.stats().queriesAtDegree(1));
      assertEquals(0, fm.load());
    }
  }

  /**
   * Starts a thread that opens a query scope of {@code fm} and holds it until {@code done} counts
   * down; returns once the query has started.
   */
  private static Thread holdQueryOpen(FmExecutor fm, CountDownLatch done)
      throws InterruptedException {
    CountDownLatch entered = new CountDownLatch(1);
    Thread t =
        new Thread(
            () -> {
              try (FmQueryScope q = fm.enter()) {
                entered.countDown();
                done.await();
              } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
              }
            });
    t.start();
    assertTrue(entered.await(10, TimeUnit.SECONDS), "a held query started");
    return t;
  }

  /**
   * One query of {@code tasks} tasks of 5 ms, submitted as TaskExecutor does (one runnable,
   * tasks - 1 times, then the caller claims what is left); {@code report}: each task reports its
   * slice to the executor, as FmSearcher does.
   */
  private static void runBatch(FmExecutor fm, int tasks, boolean report) {
    runBatch(fm, tasks, report, () -> {});
  }

  /** As above; {@code first} runs once, inside the first task to start. */
  private static void runBatch(FmExecutor fm, int tasks, boolean report, Runnable first) {
    AtomicInteger next = new AtomicInteger();
    AtomicBoolean started = new AtomicBoolean();
    CountDownLatch done = new CountDownLatch(tasks);
    Runnable task =
        () -> {
          FmQueryScope slice = report ? fm.sliceStarted() : null;
          if (started.compareAndSet(false, true)) {
            first.run();
          }
          sleepMs(5);
          fm.sliceFinished(slice);
          done.countDown();
        };
    Runnable work =
        () -> {
          if (next.getAndIncrement() < tasks) {
            task.run();
          }
        };
    try (FmQueryScope query = fm.enter()) {
      for (int i = 0; i < tasks - 1; i++) {
        fm.execute(work);
      }
      while (next.getAndIncrement() < tasks) {
        task.run();
      }
      await(done);
    }
  }
}
