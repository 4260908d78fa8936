package dev.tailor.lucene;

import java.util.Arrays;

/**
 * What an {@link FmExecutor} decided, since it was made: a snapshot, for tests and for an engine's
 * statistics endpoint.
 */
public final class FmStats {
  /** How many finished queries the snapshot lists one by one (the most recent). */
  public static final int RECENT = 10_000;

  private final long[] degrees;
  private final long[] recentRunNanos;
  private final int[] recentDegrees;
  private final int[] recentLoads;
  private final boolean[] recentSliced;
  private final int[] recentRefused;
  private final long admissionsDelayed;
  private final long admissionsOnExit;
  private final long helpersSent;
  private final long helpersRefused;
  private final long helpersYielded;
  private final long helpersStayed;
  private final int peakHelpers;
  private final int peakThreads;

  FmStats(
      long[] degrees,
      long[] recentRunNanos,
      int[] recentDegrees,
      int[] recentLoads,
      boolean[] recentSliced,
      int[] recentRefused,
      long admissionsDelayed,
      long admissionsOnExit,
      long helpersSent,
      long helpersRefused,
      long helpersYielded,
      long helpersStayed,
      int peakHelpers,
      int peakThreads) {
    this.degrees = degrees.clone();
    this.recentRunNanos = recentRunNanos.clone();
    this.recentDegrees = recentDegrees.clone();
    this.recentLoads = recentLoads.clone();
    this.recentSliced = recentSliced.clone();
    this.recentRefused = recentRefused.clone();
    this.admissionsDelayed = admissionsDelayed;
    this.admissionsOnExit = admissionsOnExit;
    this.helpersSent = helpersSent;
    this.helpersRefused = helpersRefused;
    this.helpersYielded = helpersYielded;
    this.helpersStayed = helpersStayed;
    this.peakHelpers = peakHelpers;
    this.peakThreads = peakThreads;
  }

  /** Queries that finished. */
  public long queries() {
    return Arrays.stream(degrees).sum();
  }

  /** Finished queries whose highest degree was {@code degree} (1 to the table's max_degree). */
  public long queriesAtDegree(int degree) {
    return degree >= 1 && degree <= degrees.length ? degrees[degree - 1] : 0;
  }

  /** The degree histogram: element d - 1 counts the finished queries whose highest was d. */
  public long[] degreeHistogram() {
    return degrees.clone();
  }

  /**
   * The run times, in nanoseconds from start to exit (admission waits excluded; work before
   * the executor that {@link FmExecutor#enter(long)} was given included), of the last
   * {@link #RECENT} finished queries at most, oldest first; element i goes with {@link
   * #recentDegrees()}'s element i.
   */
  public long[] recentRunNanos() {
    return recentRunNanos.clone();
  }

  /** The highest degree of each query that {@link #recentRunNanos()} lists, in the same order. */
  public int[] recentDegrees() {
    return recentDegrees.clone();
  }

  /**
   * The load each query that {@link #recentRunNanos()} lists found on arrival (itself included):
   * the row of the table it followed.
   */
  public int[] recentLoads() {
    return recentLoads.clone();
  }

  /**
   * Whether each query that {@link #recentRunNanos()} lists was sliced: false for one the engine
   * ran on its sequential path ({@link FmExecutor#enter(long, boolean)}), which stays at degree 1.
   */
  public boolean[] recentSliced() {
    return recentSliced.clone();
  }

  /**
   * For each query that {@link #recentRunNanos()} lists, the most helpers the guard withheld from
   * it at one decision ({@link #helpersRefused()} sums these).
   */
  public int[] recentRefused() {
    return recentRefused.clone();
  }

  /** Queries that waited their row's delay v0 before starting. */
  public long admissionsDelayed() {
    return admissionsDelayed;
  }

  /** Queries that waited for another query to leave before starting (the paper's e1). */
  public long admissionsOnExit() {
    return admissionsOnExit;
  }

  /** Helper threads sent to queries. */
  public long helpersSent() {
    return helpersSent;
  }

  /**
   * Helpers the guard refused: for each finished query, the most helpers that its row asked for
   * and its slices could use but that the guard withheld at one decision, for want of a free core
   * or because queries were waiting; summed over queries.
   */
  public long helpersRefused() {
    return helpersRefused;
  }

  /**
   * Helpers that left a query with slices still held, because an arrival had left more query
   * threads than cores, or a query waited to start ({@link FmPolicy#helperYields}); under
   * {@link FmPolicy.Yield#ROW}, only once the row no longer kept them ({@link FmPolicy#rowKeeps}).
   */
  public long helpersYielded() {
    return helpersYielded;
  }

  /**
   * Helpers that stayed on their query past the cores, with slices held, because the table's row
   * for the load then still gave the query their thread ({@link FmPolicy.Yield#ROW}); counted
   * once per helper sent. A helper that stays and later leaves counts in {@link
   * #helpersYielded()} too.
   */
  public long helpersStayed() {
    return helpersStayed;
  }

  /** The most helper threads ever sent and not yet back (at most cores - 1). */
  public int peakHelpers() {
    return peakHelpers;
  }

  /** The most threads ever held at once: running queries' callers plus helpers. */
  public int peakThreads() {
    return peakThreads;
  }

  @Override
  public String toString() {
    return "FmStats(degrees="
        + Arrays.toString(degrees)
        + ", delayed="
        + admissionsDelayed
        + ", on_exit="
        + admissionsOnExit
        + ", helpers_sent="
        + helpersSent
        + ", helpers_refused="
        + helpersRefused
        + ", helpers_yielded="
        + helpersYielded
        + ", helpers_stayed="
        + helpersStayed
        + ", peak_helpers="
        + peakHelpers
        + ", peak_threads="
        + peakThreads
        + ")";
  }
}
