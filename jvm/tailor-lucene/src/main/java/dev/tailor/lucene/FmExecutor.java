package dev.tailor.lucene;

import java.io.Closeable;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.List;
import java.util.Objects;
import java.util.concurrent.Executor;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.locks.Condition;
import java.util.concurrent.locks.ReentrantLock;
import org.apache.lucene.util.ThreadInterruptedException;

/**
 * FM (Haque et al., ASPLOS 2015, §4.2) as the {@link Executor} of Lucene's {@code IndexSearcher}.
 *
 * <p>Since Lucene 9.12, {@code TaskExecutor.invokeAll} hands the executor count - 1 copies of one
 * runnable, each of which claims the next slice task not yet started, and then runs every unclaimed
 * task on the calling thread. This executor holds those copies back: a query's caller runs its
 * slices alone, at degree 1, and at each boundary of its row (v1, v1 + v2, ...) one more helper
 * thread may take a copy, up to the row's degree. Which row is the instantaneous load's, as §4.2
 * self-schedules, and a degree never falls.
 *
 * <ul>
 *   <li><b>Queries</b> are identified by {@link #enter()}, which opens an {@link FmQueryScope} on
 *       the calling thread; {@link FmSearcher} does it around each search. The load that picks
 *       a running query's row is the number of requests in the system (§4.2): the open scopes,
 *       waiting ones included, or the engine's requests in flight ({@link #requestStarted}) if it
 *       reports more.
 *   <li><b>Admission</b> follows the row of the open scopes' count, the arrival included: start
 *       now, after v0, or when another query leaves (e1). An on-exit query starts at once if no
 *       other query of this executor runs or is delayed, as no exit would come.
 *   <li><b>The guard</b> ({@link FmPolicy#helpersGranted}, docs/guard.md) sends a helper only to a
 *       free core (of the {@code cores} setting: running queries' callers and helpers each hold
 *       one, and so does each request an engine reports outside a query, {@link
 *       #requestStarted}) and a slice left over, and none while queries wait to start. Between
 *       slices a helper leaves its query when an arrival has left more threads than cores ({@link
 *       FmPolicy#helperYields}); under {@link #setYield} {@code ROW} it leaves then only if the
 *       row for the load now no longer gives its query that thread, or a query waits to start,
 *       and under {@code MEAN} the row for the larger of the load now and the mean load
 *       arrivals found lately ({@link FmPolicy#sustainedLoad}).
 *       The helper pool has {@code cores - 1} threads. Queries are served oldest first.
 * </ul>
 *
 * <p>Every runnable given to {@link #execute} runs exactly once: on a helper, or on the submitting
 * thread when its query moves on to another batch or ends (for TaskExecutor's copies that is a
 * no-op, since the caller has claimed every task by then), or at once when the submitting thread
 * has no open scope of this executor.
 *
 * <p>A single scheduler thread wakes at the next boundary of any query with copies held; arrivals,
 * exits, new batches and returning helpers re-decide at once. All state sits behind one lock, taken
 * a few times per slice, never per document.
 */
public final class FmExecutor implements Executor, Closeable {
  private static final ThreadLocal<FmQueryScope> CURRENT = new ThreadLocal<>();

  /**
   * The scheduler's shortest sleep, so that a boundary that rounding puts a hair ahead of the clock
   * never spins it. Picked by hand: well under the table's 0.5 ms grid.
   */
  private static final long MIN_SLEEP_NANOS = 20_000;

  private final FmPolicy policy;
  private final int cores;

  private final ReentrantLock lock = new ReentrantLock();
  /** Signalled when an exit releases on-exit queries, and at close. */
  private final Condition exits = lock.newCondition();
  /** Signalled at close only: delayed queries sleep on it. */
  private final Condition closing = lock.newCondition();
  /** Signalled when a helper ticket is queued, and at close. */
  private final Condition tickets = lock.newCondition();
  /** Signalled when the scheduler's next wake-up may have moved. */
  private final Condition schedule = lock.newCondition();

  /** Queries started and not yet finished, oldest first. */
  private final List<FmQueryScope> running = new ArrayList<>();
  /** Queries waiting for an exit, first come first served. */
  private final ArrayDeque<FmQueryScope> onExit = new ArrayDeque<>();
  /** Helpers sent: one entry per helper, naming its query. */
  private final ArrayDeque<FmQueryScope> ticketQueue = new ArrayDeque<>();
  /** Queries in the system: started or waiting. */
  private int load;
  /** Queries waiting out their delay v0. */
  private int delayed;
  /** Helpers sent and not yet back, pending ones included: each holds a core. */
  private int busyHelpers;
  /**
   * An engine's requests in flight ({@link #requestStarted}), in a query scope or not. Those
   * outside one (parsing, fetching, replying) hold a core that FM's queries do not account for.
   */
  private int requests;
  private boolean closed;

  private final long[] degrees;
  /**
   * The last {@link FmStats#RECENT} finished queries: run time (ns), highest degree, load at
   * arrival, whether it was sliced, and the helpers the guard withheld from it; a ring.
   */
  private final long[] recentRunNanos = new long[FmStats.RECENT];
  private final int[] recentDegrees = new int[FmStats.RECENT];
  private final int[] recentLoads = new int[FmStats.RECENT];
  private final boolean[] recentSliced = new boolean[FmStats.RECENT];
  private final int[] recentRefused = new int[FmStats.RECENT];
  private long finished;
  private long admissionsDelayed;
  private long admissionsOnExit;
  private long helpersSent;
  private long helpersRefused;
  private long helpersYielded;
  private long helpersStayed;
  /** When a helper past the cores leaves its query ({@link #setYield}). */
  private volatile FmPolicy.Yield yield = FmPolicy.Yield.CORES;
  /**
   * The mean load arrivals found lately, themselves included ({@link FmPolicy#meanLoadAfter}),
   * which {@link FmPolicy.Yield#MEAN} reads. Starts at one, an idle node's.
   */
  private double meanLoad = 1.0;
  private int peakHelpers;
  private int peakThreads;
  /**
   * Set once an engine has reported a slice ({@link #sliceStarted}): from then on only batches
   * with a slice started get helpers, since a batch that reports none (Lucene's per-segment term
   * lookups) cannot be told claimed from unclaimed, and its caller has usually run it all.
   */
  private boolean sliceHooks;

  private final List<Thread> threads = new ArrayList<>();

  /**
   * An executor that follows {@code table} on a node of {@code cores} cores, with {@code cores -
   * 1} helper threads.
   *
   * @throws IllegalArgumentException if {@code cores} is less than 1
   */
  public FmExecutor(FmTable table, int cores) {
    if (cores < 1) {
      throw new IllegalArgumentException("cores must be at least 1, found " + cores);
    }
    this.policy = new FmPolicy(table);
    this.cores = cores;
    this.degrees = new long[table.maxDegree()];
    for (int i = 0; i < cores - 1; i++) {
      Thread t = new Thread(this::helperLoop, "fm-helper-" + i);
      t.setDaemon(true);
      threads.add(t);
    }
    Thread scheduler = new Thread(this::schedulerLoop, "fm-scheduler");
    scheduler.setDaemon(true);
    threads.add(scheduler);
    threads.forEach(Thread::start);
  }

  /** The policy this executor follows. */
  public FmPolicy policy() {
    return policy;
  }

  /** The cores setting. */
  public int cores() {
    return cores;
  }

  /**
   * Sets when a helper past the cores leaves its query ({@link FmPolicy.Yield}): {@code CORES}
   * (the default), {@code ROW} or {@code MEAN}. Takes effect at each helper's next slice.
   */
  public void setYield(FmPolicy.Yield rule) {
    yield = Objects.requireNonNull(rule, "rule");
  }

  /** When a helper past the cores leaves its query ({@link #setYield}). */
  public FmPolicy.Yield yieldRule() {
    return yield;
  }

  /**
   * The mean load arrivals found lately, themselves included ({@link FmPolicy#meanLoadAfter}):
   * the sustained load {@link FmPolicy.Yield#MEAN} reads rows at.
   */
  public double meanLoad() {
    lock.lock();
    try {
      return meanLoad;
    } finally {
      lock.unlock();
    }
  }

  /** Queries in the system now, started or waiting to. */
  public int load() {
    lock.lock();
    try {
      return load;
    } finally {
      lock.unlock();
    }
  }

  /**
   * An engine's request (a whole search, of which the query scope is a part) starts. Requests in
   * flight outside a query scope hold cores: the guard counts them as taken, so that FM sends no
   * helper to a core that is parsing, fetching or replying for another request, and {@link
   * #mayHelp} counts the arriving query's own request among them. Optional: an engine that counts
   * nothing leaves the guard to FM's own queries. Call {@link #requestFinished} once for each.
   */
  public void requestStarted() {
    lock.lock();
    try {
      requests++;
    } finally {
      lock.unlock();
    }
  }

  /** A request of {@link #requestStarted} ends: the core it held may take a helper. */
  public void requestFinished() {
    lock.lock();
    try {
      requests = Math.max(0, requests - 1);
      rebalance(); // a core is free: a helper withheld for it may go now
      schedule.signal(); // a lower row may bring a boundary forward
    } finally {
      lock.unlock();
    }
  }

  /**
   * The load that picks a running query's degree from the table: the requests in the system, as
   * the FM paper counts them (Haque et al., ASPLOS 2015, §4.2). That is the engine's requests in
   * flight where it reports them ({@link #requestStarted}), so that a request queued for a search
   * thread, or fetching or replying, raises the row as the planner's model assumes, and never
   * fewer than the queries in this executor. Admission reads the queries in this executor alone
   * ({@link #enter(long, boolean)}). Under the lock.
   */
  private int rowLoad() {
    return Math.max(load, requests);
  }

  /**
   * Requests in flight outside a query scope, each on a core: those started less the queries in
   * the system (one request, one query, as for a single-shard search). Under the lock.
   */
  private int outside() {
    return Math.max(0, requests - load);
  }

  /** Requests in flight, as an engine reports them ({@link #requestStarted}). */
  public int requestsInFlight() {
    lock.lock();
    try {
      return requests;
    } finally {
      lock.unlock();
    }
  }

  /** Whether the calling thread has a query scope of this executor open. */
  public boolean inScope() {
    FmQueryScope q = CURRENT.get();
    return q != null && q.fm == this && !q.closed;
  }

  /**
   * Whether a task the calling thread hands over now may be held for a helper: it has a query scope
   * of this executor open, as its caller, and the query is not on its sequential path ({@link
   * #enter(long, boolean)}). Otherwise {@link #execute} runs the task at once on this thread.
   */
  public boolean mayHoldTasks() {
    return mayHold(CURRENT.get());
  }

  /** Whether the calling thread's scope {@code q} may have tasks held ({@link #mayHoldTasks}). */
  private boolean mayHold(FmQueryScope q) {
    return q != null
        && q.fm == this
        && !q.closed
        && !q.inline
        && q.caller == Thread.currentThread();
  }

  /**
   * Whether a query arriving now could get a helper, now or once a core frees: nothing waits to
   * start, the query has a core of its own (helpers give theirs back to an arrival, {@link
   * FmPolicy#helperYields}; under {@link #setYield} {@code ROW} or {@code MEAN} a helper may
   * stay, so each busy helper counts as holding its core), and the table's row for the load it
   * would find raises the degree before the table's horizon y ({@link #rowMayHelp}). A query that arrives to a node whose
   * other cores are all held by queries and requests may get the helper when one of them ends,
   * as FM re-decides a request's degree when the load changes (Haque et al., ASPLOS 2015, §4.2).
   * An engine can run a query that could not on its plain sequential path instead of slicing it,
   * as the OpenSearch plugin's decider does.
   */
  public boolean mayHelp() {
    lock.lock();
    try {
      // The arriving query's own request is among those outside a scope, if the engine counts them.
      int helpers = yield == FmPolicy.Yield.CORES ? 0 : busyHelpers;
      int left = cores - running.size() - helpers - Math.max(1, requests - load);
      return rowRaises() && left >= 0;
    } finally {
      lock.unlock();
    }
  }

  /**
   * Whether the table's row for the load a query arriving now would find raises its degree
   * before the table's horizon y, and nothing waits to start: {@link #mayHelp} without its count
   * of free cores. A query that arrives while every core is held may still get a helper if it outlives
   * the queries ahead of it, as the long ones do; an engine that slices only such queries pays
   * the slicing's cost only at the loads where the table would spend threads on them.
   */
  public boolean rowMayHelp() {
    lock.lock();
    try {
      return rowRaises();
    } finally {
      lock.unlock();
    }
  }

  /**
   * {@link #rowMayHelp}, under the lock. A row raises if its first boundary v1 lies before the
   * table's y ({@code max_interval_ms}), or is 0. The paper takes y as the longest request's
   * lifetime (Haque et al., ASPLOS 2015, §4.1), and {@code tailor plan fm} does by default, so
   * a row whose helper comes only at y gives none to a request of the profile. A table planned
   * with a y below the longest request (its {@code --max-interval}) would have such rows help
   * the requests longer than y; this reads them as not helping.
   */
  private boolean rowRaises() {
    if (closed || !onExit.isEmpty() || delayed > 0 || cores < 2) {
      return false;
    }
    // An arriving request is among the engine's requests already, not yet among the queries.
    double boundary = policy.nextIncreaseMs(Math.max(load + 1, requests), 1);
    return boundary == 0.0 || boundary < policy.table().maxIntervalMs();
  }

  /**
   * A query arrives: it joins the load and waits for admission (v0, or an exit) if its row says
   * so, on this thread. Close the scope when the query is done.
   *
   * @throws IllegalStateException if this thread already has a scope of this executor open
   * @throws ThreadInterruptedException if the thread is interrupted while waiting; the query then
   *     leaves without starting
   */
  public FmQueryScope enter() {
    return enter(0);
  }

  /**
   * As {@link #enter()}, for a query that has already worked {@code executedNanos} on this thread
   * before it reached the executor (an engine's parsing and query rewrite, say). That work counts
   * in the query's executed time, the clock its row's boundaries are read on (the FM paper indexes
   * its table by a request's processing time so far, §4.1), and in its recorded run time. Time
   * spent waiting for admission does not count.
   *
   * @throws IllegalArgumentException if {@code executedNanos} is negative
   */
  public FmQueryScope enter(long executedNanos) {
    return enter(executedNanos, true);
  }

  /**
   * As {@link #enter(long)}, for a query the engine may run sequentially: with {@code sliced}
   * false (an engine's plain path, no slices), every task the query hands the executor runs at
   * once on its thread, without FM's lock, and it never gets a helper. Such tasks are an engine's
   * small per-segment batches (Lucene's term lookups while a weight is built); holding them back
   * for helpers that cannot come only costs a lock, a re-decision and a scheduler wake-up each.
   * The query still counts in the load and follows its row's admission.
   */
  public FmQueryScope enter(long executedNanos, boolean sliced) {
    if (executedNanos < 0) {
      throw new IllegalArgumentException(
          "executed time must not be negative, found " + executedNanos + " ns");
    }
    if (inScope()) {
      throw new IllegalStateException(
          "a query scope is already open on " + Thread.currentThread().getName());
    }
    FmQueryScope q;
    lock.lock();
    try {
      load++;
      // Admission reads the queries in FM only: the engine queues the rest for its own threads
      // already, and a request it holds back would hold no core an exit could free.
      q = new FmQueryScope(this, Thread.currentThread(), rowLoad(), policy.admission(load));
      q.executedBeforeNanos = executedNanos;
      q.inline = !sliced;
      meanLoad = FmPolicy.meanLoadAfter(meanLoad, q.arrivalLoad());
      try {
        admit(q);
      } catch (InterruptedException e) {
        if (!q.started) {
          onExit.remove(q);
          load--;
          q.closed = true;
          Thread.currentThread().interrupt();
          throw new ThreadInterruptedException(e);
        }
        Thread.currentThread().interrupt();
      }
    } finally {
      lock.unlock();
    }
    CURRENT.set(q);
    return q;
  }

  /** Admission by the arriving query's row (§4.2), under the lock. */
  private void admit(FmQueryScope q) throws InterruptedException {
    switch (q.admission.kind()) {
      case NOW:
        start(q);
        return;
      case DELAY:
        admissionsDelayed++;
        delayed++;
        try {
          long due = System.nanoTime() + delayNanos(q.admission.delayMs());
          long left;
          while (!closed && (left = due - System.nanoTime()) > 0) {
            closing.awaitNanos(left);
          }
        } finally {
          delayed--;
        }
        start(q);
        return;
      case ON_EXIT:
        if (closed || (running.isEmpty() && delayed == 0)) {
          start(q); // no exit would ever come
          return;
        }
        admissionsOnExit++;
        onExit.add(q);
        rebalance(); // a query now waits: helpers stop
        while (!q.released && !closed) {
          exits.await();
        }
        if (!q.released) {
          onExit.remove(q);
          start(q);
        }
        return;
      default:
        throw new AssertionError(q.admission);
    }
  }

  private static long delayNanos(double ms) {
    double nanos = Math.ceil(ms * 1e6);
    return nanos >= Long.MAX_VALUE / 4 ? Long.MAX_VALUE / 4 : (long) nanos;
  }

  /** The query starts running, under the lock. */
  private void start(FmQueryScope q) {
    q.started = true;
    q.startNanos = System.nanoTime() - q.executedBeforeNanos;
    running.add(q);
    peakThreads = Math.max(peakThreads, running.size() + busyHelpers);
    rebalance();
    wakeSchedulerIfNeeded();
  }

  /** The query leaves (its scope closes). */
  void exit(FmQueryScope q) {
    if (CURRENT.get() == q) {
      CURRENT.remove();
    }
    List<Runnable> leftover;
    lock.lock();
    try {
      if (q.closed) {
        return;
      }
      q.closed = true;
      running.remove(q);
      load--;
      leftover = new ArrayList<>(q.held);
      q.held.clear();
      q.batch = null;
      int degree = Math.min(q.degreeReached(), degrees.length);
      degrees[degree - 1]++;
      int slot = (int) (finished++ % FmStats.RECENT);
      recentRunNanos[slot] = q.started ? System.nanoTime() - q.startNanos : 0;
      recentDegrees[slot] = degree;
      recentLoads[slot] = q.arrivalLoad();
      recentSliced[slot] = !q.inline;
      recentRefused[slot] = q.refused;
      helpersRefused += q.refused;
      FmQueryScope next = onExit.poll();
      if (next != null) {
        next.released = true;
        start(next);
        exits.signalAll();
      }
      rebalance();
      wakeSchedulerIfNeeded();
    } finally {
      lock.unlock();
    }
    leftover.forEach(Runnable::run);
  }

  /**
   * Holds {@code task} for a helper of the calling thread's query, or runs it now if the thread has
   * no open scope of this executor (then its query runs sequentially on its caller).
   */
  @Override
  public void execute(Runnable task) {
    Objects.requireNonNull(task, "task");
    FmQueryScope q = CURRENT.get();
    if (!mayHold(q)) {
      task.run();
      return;
    }
    List<Runnable> previous = List.of();
    lock.lock();
    try {
      if (q.closed || closed) {
        previous = List.of(task);
      } else {
        if (task != q.batch) {
          previous = new ArrayList<>(q.held);
          q.held.clear();
          q.batch = task;
          q.batchTasks = 1;
          q.taken = 0;
          q.sliceStarts = 0;
        }
        q.held.add(task);
        q.batchTasks++;
        if (helpable(q)) {
          // A batch that cannot get a helper yet (no slice of it reported) waits for its first
          // slice (sliceStarted) rather than wake the scheduler for nothing.
          rebalance();
          schedule.signal();
        }
      }
    } finally {
      lock.unlock();
    }
    previous.forEach(Runnable::run);
  }

  /**
   * Sends the helpers the policy and the guard allow to each running query with tasks held, oldest
   * first. Under the lock.
   */
  private void rebalance() {
    if (closed) {
      return;
    }
    long now = System.nanoTime();
    int waiting = onExit.size() + delayed;
    for (FmQueryScope q : running) {
      if (!helpable(q)) {
        continue;
      }
      double executedMs = (now - q.startNanos) / 1e6;
      q.wanted = policy.degree(rowLoad(), executedMs, q.wanted);
      int unclaimed = Math.max(0, q.batchTasks - Math.max(q.sliceStarts, q.taken));
      int free = Math.max(0, cores - running.size() - busyHelpers - outside());
      int onIt = q.threads + q.pending;
      int usable = Math.max(0, Math.min(q.wanted - onIt, unclaimed - onIt));
      int n = FmPolicy.helpersGranted(q.wanted, q.threads, q.pending, unclaimed, free, waiting);
      // Each helper takes a held task; the guard's unclaimed bound already implies this.
      n = Math.min(n, Math.max(0, q.held.size() - q.pending));
      q.refused = Math.max(q.refused, usable - n);
      for (int i = 0; i < n; i++) {
        ticketQueue.add(q);
        tickets.signal();
      }
      q.pending += n;
      busyHelpers += n;
      helpersSent += n;
    }
    peakHelpers = Math.max(peakHelpers, busyHelpers);
    peakThreads = Math.max(peakThreads, running.size() + busyHelpers);
  }

  /**
   * Wakes the scheduler to re-read its next boundary, if any running query has one to wait for:
   * an arrival or an exit changes the load, and so the rows. Queries with nothing held (unsliced
   * ones, or between batches) need no wake-up; a batch that becomes helpable wakes it itself.
   * Under the lock.
   */
  private void wakeSchedulerIfNeeded() {
    for (FmQueryScope q : running) {
      if (helpable(q)) {
        schedule.signal();
        return;
      }
    }
  }

  /**
   * Whether {@code q}'s current batch may get helpers: it has copies held and, once the engine
   * reports slices, a slice of it has started. Under the lock.
   */
  private boolean helpable(FmQueryScope q) {
    return !q.inline && !q.held.isEmpty() && !(sliceHooks && q.sliceStarts == 0);
  }

  /** A helper: takes a ticket, then its query's held tasks one by one until none are left. */
  private void helperLoop() {
    lock.lock();
    try {
      while (true) {
        while (ticketQueue.isEmpty() && !closed) {
          tickets.awaitUninterruptibly();
        }
        if (closed) {
          return;
        }
        FmQueryScope q = ticketQueue.poll();
        q.pending--;
        q.threads++;
        q.peakThreads = Math.max(q.peakThreads, q.threads);
        Runnable task;
        boolean stayed = false;
        while (!q.closed && !closed) {
          int holding = running.size() + outside();
          int waiting = onExit.size() + delayed;
          if (FmPolicy.helperYields(holding, busyHelpers, cores, waiting)) {
            double executedMs = (System.nanoTime() - q.startNanos) / 1e6;
            FmPolicy.Yield rule = yield;
            int keepLoad =
                rule == FmPolicy.Yield.MEAN
                    ? FmPolicy.sustainedLoad(rowLoad(), meanLoad)
                    : rowLoad();
            if (rule != FmPolicy.Yield.CORES
                && policy.rowKeeps(keepLoad, executedMs, q.threads, waiting)) {
              if (!stayed && !q.held.isEmpty()) {
                helpersStayed++;
                stayed = true;
              }
            } else {
              if (!q.held.isEmpty()) {
                helpersYielded++;
              }
              break;
            }
          }
          if ((task = q.held.poll()) == null) {
            break;
          }
          q.taken++;
          lock.unlock();
          CURRENT.set(q);
          try {
            task.run();
          } catch (RuntimeException | Error e) {
            // TaskExecutor's tasks keep their own failures; anything else is the submitter's.
            Thread t = Thread.currentThread();
            t.getUncaughtExceptionHandler().uncaughtException(t, e);
          } finally {
            CURRENT.remove();
            lock.lock();
          }
        }
        q.threads--;
        busyHelpers--;
        rebalance();
        schedule.signal();
      }
    } finally {
      lock.unlock();
    }
  }

  /** Wakes at the next interval boundary of any query with tasks held, and re-decides. */
  private void schedulerLoop() {
    lock.lock();
    try {
      while (!closed) {
        rebalance();
        long now = System.nanoTime();
        long next = Long.MAX_VALUE;
        for (FmQueryScope q : running) {
          if (!helpable(q)) {
            continue;
          }
          double ms = policy.nextIncreaseMs(rowLoad(), q.wanted);
          if (Double.isFinite(ms)) {
            next = Math.min(next, q.startNanos + delayNanos(ms) + 1);
          }
        }
        if (next == Long.MAX_VALUE) {
          schedule.awaitUninterruptibly();
        } else {
          try {
            schedule.awaitNanos(Math.max(next - now, MIN_SLEEP_NANOS));
          } catch (InterruptedException e) {
            return;
          }
        }
      }
    } finally {
      lock.unlock();
    }
  }

  /**
   * Called by {@link FmSearcher} (or an engine's per-slice hook) as a slice starts on this thread:
   * counts it as claimed, and measures the query's degree. Returns the query, or null if the thread
   * runs none.
   */
  public FmQueryScope sliceStarted() {
    FmQueryScope q = CURRENT.get();
    if (q == null || q.fm != this) {
      return null;
    }
    lock.lock();
    try {
      q.slicesReported = true;
      sliceHooks = true;
      q.sliceStarts++;
      q.inSlices++;
      q.peakInSlices = Math.max(q.peakInSlices, q.inSlices);
      if (q.sliceStarts == 1 && !q.held.isEmpty()) {
        // The batch is known to be slices now: it may get its helpers.
        rebalance();
        schedule.signal();
      }
    } finally {
      lock.unlock();
    }
    return q;
  }

  /**
   * Called by {@link FmSearcher} (or an engine's per-slice hook) as a slice of {@code q} (from
   * {@link #sliceStarted}) ends; null is ignored.
   */
  public void sliceFinished(FmQueryScope q) {
    if (q == null) {
      return;
    }
    lock.lock();
    try {
      q.inSlices--;
    } finally {
      lock.unlock();
    }
  }

  /** The query's degree so far ({@link FmQueryScope#degree()}). */
  int degreeOf(FmQueryScope q) {
    lock.lock();
    try {
      return q.degreeReached();
    } finally {
      lock.unlock();
    }
  }

  /** A snapshot of the statistics. */
  public FmStats stats() {
    lock.lock();
    try {
      int n = (int) Math.min(finished, FmStats.RECENT);
      long[] runs = new long[n];
      int[] degs = new int[n];
      int[] loads = new int[n];
      boolean[] sliced = new boolean[n];
      int[] refused = new int[n];
      for (int i = 0; i < n; i++) {
        int slot = (int) ((finished - n + i) % FmStats.RECENT);
        runs[i] = recentRunNanos[slot];
        degs[i] = recentDegrees[slot];
        loads[i] = recentLoads[slot];
        sliced[i] = recentSliced[slot];
        refused[i] = recentRefused[slot];
      }
      return new FmStats(
          degrees,
          runs,
          degs,
          loads,
          sliced,
          refused,
          admissionsDelayed,
          admissionsOnExit,
          helpersSent,
          helpersRefused,
          helpersYielded,
          helpersStayed,
          peakHelpers,
          peakThreads);
    } finally {
      lock.unlock();
    }
  }

  /**
   * Stops the helpers and the scheduler. Waiting queries start at once; open queries finish on
   * their callers, and later ones run sequentially.
   */
  @Override
  public void close() {
    lock.lock();
    try {
      closed = true;
      exits.signalAll();
      closing.signalAll();
      tickets.signalAll();
      schedule.signalAll();
    } finally {
      lock.unlock();
    }
    for (Thread t : threads) {
      if (t != Thread.currentThread()) {
        try {
          t.join(TimeUnit.SECONDS.toMillis(10));
        } catch (InterruptedException e) {
          Thread.currentThread().interrupt();
          return;
        }
      }
    }
  }

  @Override
  public String toString() {
    return "FmExecutor(cores=" + cores + ", " + policy.table() + ")";
  }
}
