package dev.tailor.lucene;

import java.util.ArrayDeque;

/**
 * One query in an {@link FmExecutor}: from its admission to its exit, on the thread that opened it.
 * Slice tasks that thread hands the executor (through {@code IndexSearcher}'s {@code TaskExecutor})
 * belong to this query; helper threads take them at the table's interval times.
 *
 * <pre>{@code
 * try (FmQueryScope query = fm.enter()) {
 *   TopDocs hits = searcher.search(q, 10);
 * }
 * }</pre>
 *
 * <p>{@link FmSearcher} opens one around each search by itself. Close a scope on the thread that
 * opened it. The fields are the executor's, guarded by its lock.
 */
public final class FmQueryScope implements AutoCloseable {
  final FmExecutor fm;
  /** The thread that opened the scope: the query's first thread, which runs slices itself. */
  final Thread caller;
  /** The load when the query arrived, itself included: the row it follows. */
  final int arrivalLoad;
  /** How the table admitted it. */
  final FmPolicy.Admission admission;
  /** Work on the caller before it reached the executor, ns ({@link FmExecutor#enter(long)}). */
  long executedBeforeNanos;
  /**
   * When it started, System.nanoTime(): its admission less {@link #executedBeforeNanos}, so that
   * now - startNanos is its executed time.
   */
  long startNanos;
  /** Set when an exit admitted it (the paper's e1). */
  boolean released;
  /** Runs its tasks at once on its caller, unhelped ({@link FmExecutor#enter(long, boolean)}). */
  boolean inline;
  boolean started;
  volatile boolean closed;

  /** The runnable of the current batch: TaskExecutor submits one runnable count - 1 times. */
  Runnable batch;
  /** Submissions not yet taken by a helper (all copies of {@link #batch}, or distinct ones). */
  final ArrayDeque<Runnable> held = new ArrayDeque<>();
  /** Tasks in the current batch: its submissions plus the one the caller always runs. */
  int batchTasks;
  /** Submissions of the current batch helpers took. */
  int taken;
  /** Slices of the current batch that started, as {@link FmSearcher} reports them. */
  int sliceStarts;

  /** The degree the policy asks for now (it only grows). */
  int wanted = 1;
  /** Threads on the query: its caller and the helpers that joined. */
  int threads = 1;
  /** Helpers sent that have not joined yet. */
  int pending;
  int peakThreads = 1;
  /** Threads of the query inside a slice now, and the most at once (as FmSearcher reports). */
  int inSlices;
  int peakInSlices;
  boolean slicesReported;
  /** The most useful helpers the guard withheld at one decision. */
  int refused;

  FmQueryScope(FmExecutor fm, Thread caller, int arrivalLoad, FmPolicy.Admission admission) {
    this.fm = fm;
    this.caller = caller;
    this.arrivalLoad = arrivalLoad;
    this.admission = admission;
  }

  /** How the table admitted the query: now, after a delay v0, or on another query's exit. */
  public FmPolicy.Admission admission() {
    return admission;
  }

  /**
   * The load when the query arrived, itself included: the queries in the executor, or the
   * engine's requests in flight if it reports more ({@link FmExecutor#requestStarted}).
   */
  public int arrivalLoad() {
    return arrivalLoad;
  }

  /**
   * The most threads the query has had working at once: slices running together as {@link
   * FmSearcher} reports them, or, for another searcher, its caller plus the helpers that joined.
   */
  public int degree() {
    return fm.degreeOf(this);
  }

  /** Ends the query: it leaves the load, and a query waiting for an exit may start. */
  @Override
  public void close() {
    fm.exit(this);
  }

  /** The degree to record: measured in slices if they were reported, else threads joined. */
  int degreeReached() {
    return slicesReported ? Math.max(1, peakInSlices) : peakThreads;
  }
}
