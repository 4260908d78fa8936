package dev.tailor.opensearch;

import static org.hamcrest.Matchers.greaterThan;
import static org.hamcrest.Matchers.greaterThanOrEqualTo;

import dev.tailor.lucene.FmQueryScope;
import dev.tailor.lucene.FmStats;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collection;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import org.hamcrest.MatcherAssert;
import org.opensearch.action.bulk.BulkRequestBuilder;
import org.opensearch.action.search.SearchResponse;
import org.opensearch.action.support.WriteRequest;
import org.opensearch.action.support.ActionFilters;
import org.opensearch.common.settings.Settings;
import org.opensearch.common.xcontent.XContentHelper;
import org.opensearch.core.rest.RestStatus;
import org.opensearch.core.xcontent.MediaTypeRegistry;
import org.opensearch.index.query.BoolQueryBuilder;
import org.opensearch.index.query.Operator;
import org.opensearch.index.query.QueryBuilder;
import org.opensearch.index.query.QueryBuilders;
import org.opensearch.plugins.Plugin;
import org.opensearch.plugins.PluginsService;
import org.opensearch.rest.RestRequest;
import org.opensearch.search.SearchHit;
import org.opensearch.test.OpenSearchSingleNodeTestCase;
import org.opensearch.test.rest.FakeRestChannel;
import org.opensearch.test.rest.FakeRestRequest;

/**
 * The plugin in a real OpenSearch node (one node in this JVM): it loads, FM runs concurrent
 * segment search's slices, the hits equal those without FM, and the statistics show the degrees.
 */
public class TailorFmNodeTests extends OpenSearchSingleNodeTestCase {
  private static final String[] WORDS = {
    "fox", "dog", "cat", "bird", "fish", "tree", "river", "stone", "cloud", "rain",
    "sun", "moon", "star", "wind", "fire", "snow", "leaf", "root", "seed", "hill",
    "lake", "sand", "wave", "road", "door", "wall", "roof", "bell", "book", "lamp"
  };
  private static final int SEGMENTS = 8;
  private static final int DOCS_PER_SEGMENT = 60;
  private static final int QUERIES = 200;

  @Override
  protected Collection<Class<? extends Plugin>> getPlugins() {
    return List.of(TailorFmPlugin.class);
  }

  @Override
  protected Settings nodeSettings() {
    return Settings.builder()
        .put("tailor.fm.enabled", true)
        .put("tailor.fm.table", getDataPath("/fm-table.json").toAbsolutePath().toString())
        .put("tailor.fm.cores", 4)
        .put("search.concurrent_segment_search.mode", "all")
        .put("search.concurrent.max_slice_count", 4)
        .build();
  }

  private TailorFmPlugin plugin() {
    List<TailorFmPlugin> plugins =
        getInstanceFromNode(PluginsService.class).filterPlugins(TailorFmPlugin.class);
    assertEquals(1, plugins.size());
    return plugins.get(0);
  }

  public void testPluginLoads() {
    assertNotNull("runs under OpenSearch's test security manager", System.getSecurityManager());
    TailorFmPlugin plugin = plugin();
    assertNotNull("the node read the table", plugin.fm());
    assertTrue(plugin.enabled());
    assertEquals(4, plugin.fm().cores());
  }

  public void testSameHitsWithFmOnAndOff() throws Exception {
    TailorFmPlugin plugin = plugin();
    Random r = new Random(random().nextLong());
    indexDocs(r);

    List<QueryBuilder> queries = new ArrayList<>();
    for (int i = 0; i < QUERIES; i++) {
      queries.add(query(r));
    }
    FmStats before = plugin.stats();
    List<List<String>> off;
    List<List<String>> on;
    try {
      setFm(false);
      off = run(queries);
      assertEquals("FM off: no FM queries", before.queries(), plugin.stats().queries());
      setFm(true);
      on = run(queries);
    } finally {
      client().admin().cluster().prepareUpdateSettings()
          .setTransientSettings(Settings.builder().putNull("tailor.fm.enabled")).get();
    }
    for (int i = 0; i < QUERIES; i++) {
      assertEquals("query " + i + ": " + queries.get(i), off.get(i), on.get(i));
    }
    long hits = off.stream().mapToLong(List::size).sum();
    MatcherAssert.assertThat("the queries find documents", hits, greaterThan((long) QUERIES));

    FmStats after = plugin.stats();
    logger.info("FM stats after {} queries with FM on: {}", QUERIES, after);
    assertEquals("one FM query per shard query phase", before.queries() + QUERIES, after.queries());
    MatcherAssert.assertThat("helpers were sent", after.helpersSent(), greaterThan(before.helpersSent()));

    // The REST endpoint, through its handler.
    FakeRestRequest request =
        new FakeRestRequest.Builder(xContentRegistry())
            .withMethod(RestRequest.Method.GET)
            .withPath("/_tailor/fm/stats")
            .withParams(new java.util.HashMap<>(Map.of("recent", "50")))
            .build();
    FakeRestChannel channel = new FakeRestChannel(request, true, 1);
    new RestFmStatsAction(plugin).handleRequest(request, channel, null);
    assertEquals(RestStatus.OK, channel.capturedResponse().status());
    Map<String, Object> json =
        XContentHelper.convertToMap(channel.capturedResponse().content(), false, MediaTypeRegistry.JSON).v2();
    logger.info("GET /_tailor/fm/stats: {}", json);
    @SuppressWarnings("unchecked")
    Map<String, Object> degrees = (Map<String, Object>) json.get("degrees");
    assertEquals(Arrays.asList("1", "2", "3", "4"), new ArrayList<>(degrees.keySet()));
    long sum = degrees.values().stream().mapToLong(v -> ((Number) v).longValue()).sum();
    assertEquals(after.queries(), sum);
    assertEquals(after.queries(), ((Number) json.get("queries")).longValue());
    assertEquals(Boolean.TRUE, json.get("enabled"));
    assertEquals(0, ((Number) json.get("query_phases_in_flight")).intValue());
    assertEquals("every search counted in has left", 0, ((Number) json.get("search_requests_in_flight")).intValue());
    assertTrue(
        "the node runs FM's request filter",
        Arrays.stream(getInstanceFromNode(ActionFilters.class).filters()).anyMatch(f -> f instanceof FmRequestFilter));
    @SuppressWarnings("unchecked")
    Map<String, List<Number>> recent = (Map<String, List<Number>>) json.get("recent");
    assertEquals(50, recent.get("run_us").size());
    assertEquals(50, recent.get("degree").size());
    @SuppressWarnings("unchecked")
    List<Object> sliced = ((Map<String, List<Object>>) json.get("recent")).get("sliced");
    assertEquals(50, sliced.size());
    assertEquals(50, recent.get("refused").size());
    boolean[] lastSliced = after.recentSliced();
    int[] lastDegrees = after.recentDegrees();
    for (int i = 0; i < 50; i++) {
      assertEquals(lastDegrees[lastDegrees.length - 50 + i], recent.get("degree").get(i).intValue());
      assertEquals(lastSliced[lastSliced.length - 50 + i], sliced.get(i));
    }
  }

  /** Indexes the documents in SEGMENTS refreshes, so the shard has several segments. */
  private void indexDocs(Random r) {
    createIndex(
        "docs",
        client()
            .admin()
            .indices()
            .prepareCreate("docs")
            .setSettings(
                Settings.builder()
                    .put("index.number_of_shards", 1)
                    .put("index.number_of_replicas", 0)
                    .put("index.refresh_interval", -1))
            .setMapping("body", "type=text", "tag", "type=keyword", "n", "type=integer"));
    for (int s = 0; s < SEGMENTS; s++) {
      BulkRequestBuilder bulk = client().prepareBulk();
      for (int i = 0; i < DOCS_PER_SEGMENT; i++) {
        int id = s * DOCS_PER_SEGMENT + i;
        bulk.add(
            client()
                .prepareIndex("docs")
                .setId(Integer.toString(id))
                .setSource("body", text(r, 5 + r.nextInt(40)), "tag", WORDS[r.nextInt(5)], "n", r.nextInt(1000)));
      }
      bulk.setRefreshPolicy(WriteRequest.RefreshPolicy.IMMEDIATE);
      assertFalse(bulk.get().hasFailures());
    }
    long segments =
        client().admin().indices().prepareStats("docs").setSegments(true).get().getTotal().getSegments().getCount();
    MatcherAssert.assertThat("several segments, so several slices", segments, greaterThanOrEqualTo(4L));
  }

  /**
   * Searches from several client threads at once, so that shard query phases overlap and FM's load
   * can exceed 1 (up to the search pool's size). Every search completes with the hits of the same
   * query run alone, and the load returns to 0. (The test table admits every row at once, so that
   * the auto-mode test can hold cores with open queries; tailor-lucene's FmAdmissionTest covers
   * admission on an exit.)
   */
  public void testConcurrentSearchesWithFm() throws Exception {
    TailorFmPlugin plugin = plugin();
    Random r = new Random(random().nextLong());
    indexDocs(r);
    List<QueryBuilder> queries = new ArrayList<>();
    for (int i = 0; i < 100; i++) {
      queries.add(query(r));
    }
    List<List<String>> alone = run(queries);
    long before = plugin.stats().queries();
    int threads = 6;
    List<List<List<String>>> results = new ArrayList<>();
    List<Thread> workers = new ArrayList<>();
    List<Throwable> failures = java.util.Collections.synchronizedList(new ArrayList<>());
    for (int t = 0; t < threads; t++) {
      List<List<String>> mine = new ArrayList<>();
      results.add(mine);
      Thread w =
          new Thread(
              () -> {
                try {
                  mine.addAll(run(queries));
                } catch (Throwable e) {
                  failures.add(e);
                }
              },
              "client-" + t);
      workers.add(w);
      w.start();
    }
    for (Thread w : workers) {
      w.join(120_000);
      assertFalse("a client is stuck", w.isAlive());
    }
    assertEquals(List.of(), failures);
    for (List<List<String>> mine : results) {
      assertEquals(alone, mine);
    }
    FmStats after = plugin.stats();
    logger.info("FM stats after {} concurrent searches: {}", threads * queries.size(), after);
    assertEquals(before + (long) threads * queries.size(), after.queries());
    assertEquals(0, plugin.fm().load());
    assertEquals(0, plugin.queryPhases.get());
  }

  /**
   * In mode auto FM's decider slices a query only if FM could send it a helper, now or once a core
   * frees: on an idle node the searches are sliced and get helpers; with every core held by open
   * FM queries they run unsliced, with the same hits. With {@code tailor.fm.decider: row} they
   * are sliced again, since the table's row adds threads at that load, and get no helper.
   */
  public void testAutoModeSlicesOnlyWhereFmMayHelp() throws Exception {
    TailorFmPlugin plugin = plugin();
    Random r = new Random(random().nextLong());
    indexDocs(r);
    List<QueryBuilder> queries = new ArrayList<>();
    for (int i = 0; i < 30; i++) {
      queries.add(query(r));
    }
    List<List<String>> sliced = run(queries);
    try {
      setMode("auto");
      FmStats before = plugin.stats();
      assertEquals(sliced, run(queries));
      FmStats idle = plugin.stats();
      MatcherAssert.assertThat(
          "idle: sliced, with helpers", idle.helpersSent(), greaterThan(before.helpersSent()));

      // Hold an FM query open on every core: an arrival has no core of its own.
      int held = plugin.fm().cores();
      CountDownLatch open = new CountDownLatch(held);
      CountDownLatch done = new CountDownLatch(1);
      List<Thread> holders = new ArrayList<>();
      for (int i = 0; i < held; i++) {
        Thread t =
            new Thread(
                () -> {
                  try (FmQueryScope q = plugin.fm().enter()) {
                    open.countDown();
                    done.await();
                  } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                  }
                },
                "holder-" + i);
        holders.add(t);
        t.start();
      }
      try {
        assertTrue(open.await(30, TimeUnit.SECONDS));
        assertFalse(plugin.fm().mayHelp());
        assertEquals(sliced, run(queries));
        FmStats busy = plugin.stats();
        assertEquals("busy: unsliced, no helper", idle.helpersSent(), busy.helpersSent());
        assertEquals(
            "busy: every query at degree 1",
            busy.queries() - idle.queries(),
            busy.queriesAtDegree(1) - idle.queriesAtDegree(1));
        assertEquals(0, countTrue(tail(busy.recentSliced(), queries.size())));

        // The row rule slices them: the arriving load's row adds threads, whatever the cores.
        setDecider("row");
        assertTrue(plugin.fm().rowMayHelp());
        assertEquals(sliced, run(queries));
        FmStats byRow = plugin.stats();
        assertEquals(
            "row: every query sliced",
            queries.size(),
            countTrue(tail(byRow.recentSliced(), queries.size())));
        assertEquals("row: no core for a helper", busy.helpersSent(), byRow.helpersSent());
      } finally {
        client().admin().cluster().prepareUpdateSettings()
            .setTransientSettings(Settings.builder().putNull("tailor.fm.decider")).get();
        done.countDown();
        for (Thread t : holders) {
          t.join(30_000);
        }
      }
    } finally {
      client().admin().cluster().prepareUpdateSettings()
          .setTransientSettings(Settings.builder().putNull("search.concurrent_segment_search.mode")).get();
    }
  }

  /** The yield rule is dynamic: the running node's executor takes it, and a bad value is refused. */
  public void testTheYieldRuleChangesOnARunningNode() {
    try {
      setTransient("tailor.fm.yield", "row");
      assertEquals("row", plugin().fm().yieldRule().toString());
      IllegalArgumentException e =
          expectThrows(IllegalArgumentException.class, () -> setTransient("tailor.fm.yield", "later"));
      assertTrue(e.getMessage(), e.getMessage().contains("tailor.fm.yield"));
      assertEquals("row", plugin().fm().yieldRule().toString());
    } finally {
      client().admin().cluster().prepareUpdateSettings()
          .setTransientSettings(Settings.builder().putNull("tailor.fm.yield")).get();
    }
    assertEquals("cores", plugin().fm().yieldRule().toString());
  }

  private void setMode(String mode) {
    setTransient("search.concurrent_segment_search.mode", mode);
  }

  private void setDecider(String rule) {
    setTransient("tailor.fm.decider", rule);
    assertEquals(rule, plugin().decider().toString());
  }

  private void setTransient(String key, String value) {
    assertTrue(
        client().admin().cluster().prepareUpdateSettings()
            .setTransientSettings(Settings.builder().put(key, value))
            .get()
            .isAcknowledged());
  }

  /** The last {@code n} elements of {@code xs}. */
  private static boolean[] tail(boolean[] xs, int n) {
    return Arrays.copyOfRange(xs, Math.max(0, xs.length - n), xs.length);
  }

  private static int countTrue(boolean[] xs) {
    int n = 0;
    for (boolean x : xs) {
      n += x ? 1 : 0;
    }
    return n;
  }

  private void setFm(boolean on) {
    assertTrue(
        client().admin().cluster().prepareUpdateSettings()
            .setTransientSettings(Settings.builder().put("tailor.fm.enabled", on))
            .get()
            .isAcknowledged());
    assertEquals(on, plugin().enabled());
  }

  /** Each query's hits: id and score, in order. */
  private List<List<String>> run(List<QueryBuilder> queries) {
    List<List<String>> all = new ArrayList<>();
    for (QueryBuilder q : queries) {
      SearchResponse resp = client().prepareSearch("docs").setQuery(q).setSize(10).setTrackTotalHits(true).get();
      assertEquals(0, resp.getFailedShards());
      List<String> hits = new ArrayList<>();
      hits.add("total=" + resp.getHits().getTotalHits().value);
      for (SearchHit h : resp.getHits().getHits()) {
        hits.add(h.getId() + ":" + h.getScore());
      }
      all.add(hits);
    }
    return all;
  }

  private static String text(Random r, int n) {
    StringBuilder b = new StringBuilder();
    for (int i = 0; i < n; i++) {
      // Skewed: low words are common, as in real text.
      int w = (int) (WORDS.length * Math.pow(r.nextDouble(), 2));
      b.append(i == 0 ? "" : " ").append(WORDS[w]);
    }
    return b.toString();
  }

  private static QueryBuilder query(Random r) {
    switch (r.nextInt(4)) {
      case 0:
        return QueryBuilders.matchQuery("body", text(r, 1 + r.nextInt(3)));
      case 1:
        return QueryBuilders.matchQuery("body", text(r, 2)).operator(Operator.AND);
      case 2:
        BoolQueryBuilder b = QueryBuilders.boolQuery().must(QueryBuilders.matchQuery("body", text(r, 2)));
        b.filter(QueryBuilders.rangeQuery("n").gte(r.nextInt(500)));
        return b;
      default:
        return QueryBuilders.boolQuery()
            .should(QueryBuilders.matchQuery("body", text(r, 1)))
            .should(QueryBuilders.termQuery("tag", WORDS[r.nextInt(5)]));
    }
  }
}
