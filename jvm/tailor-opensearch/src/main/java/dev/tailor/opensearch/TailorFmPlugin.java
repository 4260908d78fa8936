package dev.tailor.opensearch;

import dev.tailor.lucene.FmExecutor;
import dev.tailor.lucene.FmPolicy;
import dev.tailor.lucene.FmStats;
import dev.tailor.lucene.FmTable;
import dev.tailor.lucene.FmTableException;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.AccessController;
import java.security.PrivilegedAction;
import java.util.Collection;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.Supplier;
import org.opensearch.action.support.ActionFilter;
import org.opensearch.client.Client;
import org.opensearch.cluster.metadata.IndexNameExpressionResolver;
import org.opensearch.cluster.node.DiscoveryNodes;
import org.opensearch.cluster.service.ClusterService;
import org.opensearch.common.settings.ClusterSettings;
import org.opensearch.common.settings.IndexScopedSettings;
import org.opensearch.common.settings.Setting;
import org.opensearch.common.settings.Setting.Property;
import org.opensearch.common.settings.Settings;
import org.opensearch.common.settings.SettingsFilter;
import org.opensearch.core.common.io.stream.NamedWriteableRegistry;
import org.opensearch.core.xcontent.NamedXContentRegistry;
import org.opensearch.core.xcontent.XContentBuilder;
import org.opensearch.env.Environment;
import org.opensearch.env.NodeEnvironment;
import org.opensearch.index.IndexModule;
import org.opensearch.plugins.ActionPlugin;
import org.opensearch.plugins.Plugin;
import org.opensearch.plugins.SearchPlugin;
import org.opensearch.repositories.RepositoriesService;
import org.opensearch.rest.RestController;
import org.opensearch.rest.RestHandler;
import org.opensearch.script.ScriptService;
import org.opensearch.search.deciders.ConcurrentSearchRequestDecider;
import org.opensearch.threadpool.ThreadPool;
import org.opensearch.watcher.ResourceWatcherService;

/**
 * FM (Haque et al., ASPLOS 2015) inside an OpenSearch node: tailor's {@link FmExecutor} becomes
 * the index searcher's executor ({@link SearchPlugin#getIndexSearcherExecutorProvider()}), so
 * the slices of a concurrent segment search run on the query's own search thread at degree 1 and
 * helpers join them at the FM table's interval times. The load FM reads is the number of shard
 * query phases in flight on the node, counted by a {@link FmSearchListener} on every index; the
 * search requests in flight ({@link FmRequestFilter}) also hold cores in FM's guard.
 *
 * <p>Settings (node scope):
 *
 * <ul>
 *   <li>{@code tailor.fm.enabled} (default false, dynamic): whether new shard query phases go
 *       through FM. Off, slices run on OpenSearch's own {@code index_searcher} pool.
 *   <li>{@code tailor.fm.table}: the fm-table.json that {@code tailor plan fm} writes, resolved
 *       under the node's config directory (an absolute path is taken as is). Required to enable.
 *   <li>{@code tailor.fm.cores} (default: available processors): the cores FM's guard shares.
 *   <li>{@code tailor.fm.count_search_requests} (default true): the guard counts the searches
 *       the node coordinates as holding cores outside their query phases.
 *   <li>{@code tailor.fm.decider} (default {@code core}, dynamic): in search mode {@code auto},
 *       which shard requests are sliced ({@link FmDecider.Rule}): {@code core}, those with a core
 *       of their own and a row that adds threads; {@code row}, those whose row adds threads.
 *   <li>{@code tailor.fm.yield} (default {@code cores}, dynamic): when a helper leaves its query
 *       once an arrival has left more threads than cores ({@link FmPolicy.Yield}): {@code
 *       cores}, at its next slice; {@code row}, only when the table's row for the load then no
 *       longer gives its query that thread, or a query waits for admission; {@code mean}, as
 *       {@code row} with the row of the larger of the load then and the mean load arrivals
 *       found lately.
 * </ul>
 *
 * <p>Observability: {@code GET /_tailor/fm/stats} ({@link RestFmStatsAction}).
 */
public class TailorFmPlugin extends Plugin implements SearchPlugin, ActionPlugin {
  public static final Setting<Boolean> ENABLED =
      Setting.boolSetting("tailor.fm.enabled", false, Property.NodeScope, Property.Dynamic);
  public static final Setting<String> TABLE =
      Setting.simpleString("tailor.fm.table", Property.NodeScope);
  /**
   * Whether FM's guard counts the searches this node coordinates as holding its cores outside
   * their query phases ({@link FmRequestFilter}). Right where a node serves the searches it
   * coordinates (one node, or clients that send each search to the node holding its shard); on
   * a cluster whose nodes coordinate searches of other nodes' shards it overcounts, and should be
   * off.
   */
  public static final Setting<Boolean> COUNT_SEARCH_REQUESTS =
      Setting.boolSetting("tailor.fm.count_search_requests", true, Property.NodeScope);
  static final String DECIDER_KEY = "tailor.fm.decider";
  public static final Setting<FmDecider.Rule> DECIDER =
      new Setting<>(
          DECIDER_KEY, "core", FmDecider.Rule::parse, Property.NodeScope, Property.Dynamic);
  static final String YIELD_KEY = "tailor.fm.yield";
  public static final Setting<FmPolicy.Yield> YIELD =
      new Setting<>(
          YIELD_KEY, "cores", TailorFmPlugin::parseYield, Property.NodeScope, Property.Dynamic);
  public static final Setting<Integer> CORES =
      Setting.intSetting(
          "tailor.fm.cores", Runtime.getRuntime().availableProcessors(), 1, Property.NodeScope);

  private final Path tablePath;
  private final int cores;
  private final boolean countSearchRequests;
  /** The executor, or null if no table is configured: then the plugin only passes slices on. */
  private final FmExecutor fm;
  private volatile boolean enabled;
  private volatile FmDecider.Rule decider;
  /** Shard query phases in flight on this node, FM on or off. */
  final AtomicInteger queryPhases = new AtomicInteger();
  private final FmSearchListener listener = new FmSearchListener(this);

  /**
   * Reads the settings and the table. A missing or invalid table, or FM enabled without one, fails
   * the node's start with a message naming the setting, the file and (for a bad table) the field.
   */
  public TailorFmPlugin(Settings settings, Path configPath) {
    this.cores = CORES.get(settings);
    this.countSearchRequests = COUNT_SEARCH_REQUESTS.get(settings);
    this.enabled = ENABLED.get(settings);
    this.decider = DECIDER.get(settings);
    FmPolicy.Yield yield = YIELD.get(settings); // a bad value fails the start, table or not
    String table = TABLE.get(settings);
    if (table.isEmpty()) {
      if (enabled) {
        throw new IllegalArgumentException(
            "[" + ENABLED.getKey() + "] is true but [" + TABLE.getKey() + "] is not set: "
                + "name the fm-table.json that `tailor plan fm` writes, under the config directory");
      }
      this.tablePath = null;
      this.fm = null;
      return;
    }
    this.tablePath = resolve(configPath, table);
    FmTable t = readTablePrivileged(tablePath);
    this.fm = newExecutor(t, cores);
    fm.setYield(yield);
  }

  /** The yield rule's setting value, {@code cores}, {@code row} or {@code mean}. */
  static FmPolicy.Yield parseYield(String value) {
    FmPolicy.Yield y = FmPolicy.Yield.named(value);
    if (y == null) {
      throw new IllegalArgumentException(
          "[" + YIELD_KEY + "] must be cores, row or mean, found [" + value + "]");
    }
    return y;
  }

  /** The table's path: under the config directory, unless absolute (in the config's file system). */
  static Path resolve(Path configPath, String table) {
    if (configPath == null) {
      return Path.of(table);
    }
    return configPath.resolve(table).normalize();
  }

  static FmTable readTable(Path path) {
    if (!Files.isRegularFile(path)) {
      throw new IllegalArgumentException(
          "[" + TABLE.getKey() + "]: no FM table at " + path + " (a relative path is resolved under"
              + " the node's config directory)");
    }
    try {
      return FmTable.read(path);
    } catch (FmTableException e) {
      throw new IllegalArgumentException(
          "[" + TABLE.getKey() + "]: " + path + " is not a valid FM table: " + e.getMessage(), e);
    }
  }

  /** Reads the table with the plugin's own permissions (OpenSearch lets all code read config/). */
  @SuppressWarnings("removal")
  private static FmTable readTablePrivileged(Path path) {
    return AccessController.doPrivileged((PrivilegedAction<FmTable>) () -> readTable(path));
  }

  @SuppressWarnings("removal")
  private static FmExecutor newExecutor(FmTable table, int cores) {
    // FM's helper threads and scheduler are the plugin's own: OpenSearch's default policy lets any
    // code create threads in its own thread group, and doPrivileged keeps callers out of the check.
    return AccessController.doPrivileged((PrivilegedAction<FmExecutor>) () -> new FmExecutor(table, cores));
  }

  @Override
  public List<Setting<?>> getSettings() {
    return List.of(ENABLED, TABLE, CORES, COUNT_SEARCH_REQUESTS, DECIDER, YIELD);
  }

  @Override
  public Collection<Object> createComponents(
      Client client,
      ClusterService clusterService,
      ThreadPool threadPool,
      ResourceWatcherService resourceWatcherService,
      ScriptService scriptService,
      NamedXContentRegistry xContentRegistry,
      Environment environment,
      NodeEnvironment nodeEnvironment,
      NamedWriteableRegistry namedWriteableRegistry,
      IndexNameExpressionResolver indexNameExpressionResolver,
      Supplier<RepositoriesService> repositoriesServiceSupplier) {
    clusterService
        .getClusterSettings()
        .addSettingsUpdateConsumer(ENABLED, this::setEnabled, this::validateEnabled);
    clusterService.getClusterSettings().addSettingsUpdateConsumer(DECIDER, r -> decider = r);
    // Registered on every node, as cluster settings must be accepted everywhere; a node without
    // a table has no executor to act on it.
    clusterService
        .getClusterSettings()
        .addSettingsUpdateConsumer(
            YIELD,
            r -> {
              if (fm != null) {
                fm.setYield(r);
              }
            });
    return List.of();
  }

  private void validateEnabled(boolean on) {
    if (on && fm == null) {
      throw new IllegalArgumentException(
          "[" + ENABLED.getKey() + "] cannot be turned on: this node was started without ["
              + TABLE.getKey() + "]");
    }
  }

  private void setEnabled(boolean on) {
    this.enabled = on;
  }

  /** Counts shard query phases and opens an FM query around each, on every index. */
  @Override
  public void onIndexModule(IndexModule indexModule) {
    indexModule.addSearchOperationListener(listener);
  }

  @Override
  public Optional<ExecutorServiceProvider> getIndexSearcherExecutorProvider() {
    return Optional.of(
        threadPool ->
            new FmExecutorService(
                this,
                threadPool.executor(ThreadPool.Names.INDEX_SEARCHER),
                threadPool.getThreadContext()));
  }

  /** In mode {@code auto}, FM decides which shard requests are sliced ({@link FmDecider}). */
  @Override
  public Optional<ConcurrentSearchRequestDecider.Factory> getConcurrentSearchRequestDeciderFactory() {
    return Optional.of(FmDecider.factory(this));
  }

  /** Counts the node's search requests for FM's guard ({@link FmRequestFilter}), unless off. */
  @Override
  public List<ActionFilter> getActionFilters() {
    return countSearchRequests ? List.of(new FmRequestFilter(this)) : List.of();
  }

  @Override
  public List<RestHandler> getRestHandlers(
      Settings settings,
      RestController restController,
      ClusterSettings clusterSettings,
      IndexScopedSettings indexScopedSettings,
      SettingsFilter settingsFilter,
      IndexNameExpressionResolver indexNameExpressionResolver,
      Supplier<DiscoveryNodes> nodesInCluster) {
    return List.of(new RestFmStatsAction(this));
  }

  /** The executor new query phases should enter, or null if FM is off. */
  FmExecutor activeFm() {
    return enabled ? fm : null;
  }

  /** The executor (on or off), or null if the node has no table. */
  public FmExecutor fm() {
    return fm;
  }

  public boolean enabled() {
    return enabled;
  }

  /** Which shard requests FM's decider slices in mode {@code auto}. */
  FmDecider.Rule decider() {
    return decider;
  }

  /** FM's statistics on this node, or null if it has no table. */
  public FmStats stats() {
    return fm == null ? null : fm.stats();
  }

  /** The statistics as the stats endpoint writes them, without the recent queries. */
  public void statsToXContent(XContentBuilder b) throws IOException {
    statsToXContent(b, 0);
  }

  /** The statistics as the stats endpoint writes them, with the last {@code recent} queries. */
  public void statsToXContent(XContentBuilder b, int recent) throws IOException {
    b.startObject();
    b.field("enabled", enabled);
    b.field("table", tablePath == null ? null : tablePath.toString());
    b.field("cores", cores);
    b.field("decider", decider.toString());
    b.field("query_phases_in_flight", queryPhases.get());
    if (fm != null) {
      FmStats s = fm.stats();
      b.field("load", fm.load());
      b.field("search_requests_in_flight", fm.requestsInFlight());
      b.field("yield", fm.yieldRule().toString());
      b.field("mean_load", fm.meanLoad());
      b.field("queries", s.queries());
      b.startObject("degrees");
      long[] h = s.degreeHistogram();
      for (int d = 1; d <= h.length; d++) {
        b.field(Integer.toString(d), h[d - 1]);
      }
      b.endObject();
      b.startObject("admissions_waited");
      b.field("total", s.admissionsDelayed() + s.admissionsOnExit());
      b.field("delayed", s.admissionsDelayed());
      b.field("on_exit", s.admissionsOnExit());
      b.endObject();
      b.startObject("helpers");
      b.field("sent", s.helpersSent());
      b.field("refused_by_guard", s.helpersRefused());
      b.field("yielded", s.helpersYielded());
      b.field("stayed", s.helpersStayed());
      b.field("peak", s.peakHelpers());
      b.endObject();
      b.field("peak_threads", s.peakThreads());
      if (recent > 0) {
        long[] runs = s.recentRunNanos();
        int[] degs = s.recentDegrees();
        int[] loads = s.recentLoads();
        boolean[] sliced = s.recentSliced();
        int[] refused = s.recentRefused();
        int n = runs.length;
        int from = Math.max(0, n - recent);
        b.startObject("recent");
        recentArray(b, "run_us", from, n, i -> runs[i] / 1000);
        recentArray(b, "degree", from, n, i -> degs[i]);
        recentArray(b, "load", from, n, i -> loads[i]);
        recentArray(b, "sliced", from, n, i -> sliced[i]);
        recentArray(b, "refused", from, n, i -> refused[i]);
        b.endObject();
      }
    }
    b.endObject();
  }

  /** One array of the recent queries: element i of each list goes with the same query. */
  private static void recentArray(
      XContentBuilder b, String name, int from, int n, java.util.function.IntFunction<Object> value)
      throws IOException {
    b.startArray(name);
    for (int i = from; i < n; i++) {
      b.value(value.apply(i));
    }
    b.endArray();
  }

  @Override
  public void close() throws IOException {
    if (fm != null) {
      fm.close();
    }
  }
}
