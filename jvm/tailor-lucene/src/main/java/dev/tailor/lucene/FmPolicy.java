package dev.tailor.lucene;

import java.util.Objects;

/**
 * FM's decisions as pure functions of the signals: the load, a query's executed time, and the core
 * guard's counts. It holds no thread and no clock; {@link FmExecutor} calls it, and the shared test
 * vectors prove it decides as the Rust policy does ({@code Policy::admission} and {@code
 * Policy::degree} in crates/core/src/policy.rs, {@code helpers_granted} and {@code start_threads}
 * in crates/core/src/guard.rs).
 *
 * <p>Admission and self-scheduling follow Haque et al. (ASPLOS 2015, §4.2): a query arriving at
 * load L waits v0, or for another query to leave when the row says (e1, d1); once running, it
 * indexes the table by the instantaneous load and its executed time, and its degree only grows.
 * The guard is tailor's departure from §4.2 (docs/guard.md): helpers never outnumber the free
 * cores or the slices left, and none are sent while queries wait. {@link #helperYields},
 * {@link #rowKeeps} and {@link #sustainedLoad} (the {@link Yield} rules) are the JVM's own, with
 * no Rust counterpart and no shared vectors.
 */
public final class FmPolicy {
  private final FmTable table;

  /** The policy of {@code table}. */
  public FmPolicy(FmTable table) {
    this.table = Objects.requireNonNull(table, "table");
  }

  /** The table. */
  public FmTable table() {
    return table;
  }

  /** When a newly arrived query may start. */
  public enum AdmissionKind {
    /** At once. */
    NOW,
    /** After waiting v0 ms. */
    DELAY,
    /** When another query leaves the system (the paper's e1). */
    ON_EXIT,
  }

  /**
   * An admission decision: its kind, and for {@link AdmissionKind#DELAY} the delay v0 in ms (0
   * otherwise).
   */
  public record Admission(AdmissionKind kind, double delayMs) {
    /** Start at once. */
    public static final Admission NOW = new Admission(AdmissionKind.NOW, 0.0);
    /** Start when another query leaves. */
    public static final Admission ON_EXIT = new Admission(AdmissionKind.ON_EXIT, 0.0);
  }

  /**
   * When a query arriving at {@code load} (queries in the executor, itself included) may start: on
   * an exit if its row says (e1, d1), after v0 if v0 &gt; 0, else now.
   */
  public Admission admission(int load) {
    FmTable.Row row = table.row(load);
    if (row.admitOnExit()) {
      return Admission.ON_EXIT;
    } else if (row.admissionDelayMs() > 0.0) {
      return new Admission(AdmissionKind.DELAY, row.admissionDelayMs());
    } else {
      return Admission.NOW;
    }
  }

  /**
   * The degree a running query should have at a self-scheduling point, given the load now, its
   * executed time and its current degree: the row's {@link FmTable.Row#degreeAt}, never less than
   * {@code current} (degrees only grow, few to many).
   */
  public int degree(int load, double executedMs, int current) {
    return Math.max(table.row(load).degreeAt(executedMs), current);
  }

  /**
   * The executed time at which {@link #degree} next exceeds {@code current} if the load stays at
   * {@code load}, or positive infinity if it never does.
   */
  public double nextIncreaseMs(int load, int current) {
    return table.row(load).nextIncreaseMs(current);
  }

  /**
   * Helpers a raise may send now (the core guard, docs/guard.md).
   *
   * <p>{@code wanted} is the degree the policy asks for, {@code threads} the threads on the query
   * now (its caller included) and {@code pending} the helpers sent that have not joined yet. {@code
   * unclaimed} is its slices no thread has taken; each thread on it and each pending helper takes
   * one of them next, so only the rest can use a new helper. {@code freeCores} are the cores no
   * query thread holds, and {@code waiting} the queries waiting to start.
   *
   * <p>The result never exceeds {@code freeCores}, is zero while anything waits, and keeps {@code
   * pending + result <= unclaimed - threads}. Counts are non-negative; subtractions saturate at
   * zero as Rust's {@code saturating_sub} does.
   */
  public static int helpersGranted(
      int wanted, int threads, int pending, int unclaimed, int freeCores, int waiting) {
    if (waiting > 0) {
      return 0;
    }
    long onIt = (long) threads + pending;
    long shortfall = Math.max(0L, wanted - onIt);
    long useful = Math.max(0L, unclaimed - onIt);
    return (int) Math.min(Math.min(shortfall, useful), Math.max(0, freeCores));
  }

  /**
   * Whether a helper between two of its query's tasks leaves the query (the guard's yield,
   * docs/guard.md): when the query threads now exceed the cores, or queries wait to start.
   *
   * <p>{@code runningQueries} are the started queries, each with its own caller on a core, and any
   * other work an engine reports on a core ({@link FmExecutor#requestStarted}); {@code
   * busyHelpers} the helpers on queries, this one included. In tailor's runtime a request that
   * finds no free core waits, and a helper gives its core to it between units. An engine's
   * search threads do not wait for FM, so here an arrival takes a core by running; the helper then
   * gives that core back between slices instead of keeping a third thread on two cores.
   */
  public static boolean helperYields(int runningQueries, int busyHelpers, int cores, int waiting) {
    return waiting > 0 || (long) runningQueries + busyHelpers > cores;
  }

  /**
   * When a helper past the cores leaves its query ({@link FmExecutor#setYield}). Both rules send
   * helpers only to free cores ({@link #helpersGranted}); they differ in what a helper does once
   * an arrival has left more threads than cores.
   */
  public enum Yield {
    /**
     * It leaves between two slices ({@link #helperYields}): FM's threads never stay above the
     * cores. The default, the guard of docs/guard.md.
     */
    CORES,
    /**
     * It stays while the table's row for the load now still gives its query that many threads at
     * the query's executed time ({@link #rowKeeps}), and leaves as the CORES rule does otherwise.
     * The table then decides, by the load, when a long query keeps its second thread past the
     * cores, as the paper's runtime lets the table's target parallelism exceed the cores (Haque et
     * al., ASPLOS 2015, §4.2); a departure from docs/guard.md.
     */
    ROW,
    /**
     * As {@link #ROW}, but the row is read at the node's sustained load ({@link #sustainedLoad}):
     * the larger of the load now and the mean load arrivals have found lately. A kept helper puts
     * more threads than cores on the node, and what that costs the other queries grows with the
     * load the node sustains, not with the lull of the moment: at a sustained load whose row gives
     * no early helper, a helper leaves as under {@link #CORES}. Tailor's own rule, with no
     * counterpart in the paper.
     */
    MEAN;

    /**
     * The rule named {@code value} ({@code cores}, {@code row} or {@code mean}, any case), or null
     * if none.
     */
    public static Yield named(String value) {
      for (Yield y : values()) {
        if (y.name().equalsIgnoreCase(value)) {
          return y;
        }
      }
      return null;
    }

    @Override
    public String toString() {
      return name().toLowerCase(java.util.Locale.ROOT);
    }
  }

  /**
   * Whether a helper that {@link #helperYields} would send away stays under {@link Yield#ROW}:
   * nothing waits to start, and the row for {@code load} (the requests in the system now, §4.2)
   * gives a query that has run {@code executedMs} at least {@code threads} threads, this helper
   * among them. The row's degree here may fall as the load rises: that is the departure. As in
   * {@link FmExecutor#rowMayHelp}, a boundary at or past the table's horizon y ({@code
   * max_interval_ms}) gives no thread: the rows that send no helper before y keep none either.
   */
  public boolean rowKeeps(int load, double executedMs, int threads, int waiting) {
    double y = table.maxIntervalMs();
    double ms = y > 0.0 ? Math.min(executedMs, Math.nextDown(y)) : executedMs;
    return waiting == 0 && table.row(load).degreeAt(ms) >= threads;
  }

  /**
   * Arrivals the mean load of {@link Yield#MEAN} averages over: the weight of each arrival's load
   * in {@link #meanLoadAfter} is one over this. Picked by hand: at 30% of a two-core node's
   * capacity (about 130 queries a second) it spans about 2 s, at 75% about 0.8 s, long enough to
   * tell the two apart and short enough to follow a burst.
   */
  public static final int MEAN_LOAD_ARRIVALS = 256;

  /**
   * The mean load arrivals find after one more arrival found {@code arrivalLoad} (itself
   * included, as the table's rows count it): an exponentially weighted mean with weight {@code
   * 1 / MEAN_LOAD_ARRIVALS}.
   */
  public static double meanLoadAfter(double mean, int arrivalLoad) {
    return mean + (arrivalLoad - mean) / MEAN_LOAD_ARRIVALS;
  }

  /**
   * The load whose row {@link Yield#MEAN} reads: the larger of the load now and the mean load
   * arrivals found ({@link #meanLoadAfter}), rounded to the nearest whole load.
   */
  public static int sustainedLoad(int loadNow, double meanLoad) {
    return (int) Math.max(loadNow, Math.round(meanLoad));
  }

  /**
   * The threads a query starts with under the guard: the policy's {@code degree}, but 1 while
   * other queries wait, and never more than its caller plus {@link #helpersGranted} allows ({@code
   * freeCores} are those left after its caller took one).
   */
  public static int startThreads(int degree, int units, int freeCores, int waiting) {
    return 1 + helpersGranted(Math.max(degree, 1), 1, 0, units, freeCores, waiting);
  }
}
