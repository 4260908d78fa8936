package dev.tailor.opensearch;

import dev.tailor.lucene.FmExecutor;
import java.util.List;
import java.util.concurrent.AbstractExecutorService;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.TimeUnit;
import org.opensearch.common.util.concurrent.ThreadContext;

/**
 * The index searcher's executor. {@code SearchPlugin.ExecutorServiceProvider} asks for an {@link
 * ExecutorService}; Lucene's {@code TaskExecutor} only calls {@link #execute}. A task submitted
 * from a search thread inside an FM query goes to {@link FmExecutor}, which holds it for a helper,
 * unless the query runs unsliced: then it runs at once on that thread. Any other task (FM off, or
 * a query phase that began while it was off) goes to OpenSearch's {@code index_searcher} pool, as
 * without the plugin.
 *
 * <p>Tasks held for FM carry the submitter's {@link ThreadContext}, as the {@code index_searcher}
 * pool's do. TaskExecutor submits one runnable count - 1 times and FmExecutor recognises a batch by
 * that identity, so each thread wraps a runnable once and reuses the wrapper for its copies.
 *
 * <p>The plugin owns the executor: shutting it down does nothing (FM stops when the node closes the
 * plugin).
 */
final class FmExecutorService extends AbstractExecutorService {
  /** The last runnable this thread submitted to FM and its context-preserving wrapper. */
  private static final ThreadLocal<Runnable[]> LAST = new ThreadLocal<>();

  private final TailorFmPlugin plugin;
  private final ExecutorService indexSearcher;
  private final ThreadContext threadContext;

  FmExecutorService(TailorFmPlugin plugin, ExecutorService indexSearcher, ThreadContext threadContext) {
    this.plugin = plugin;
    this.indexSearcher = indexSearcher;
    this.threadContext = threadContext;
  }

  @Override
  public void execute(Runnable command) {
    FmExecutor fm = plugin.fm();
    if (fm != null && fm.mayHoldTasks()) {
      fm.execute(wrap(command));
    } else if (fm != null && fm.inScope()) {
      // An unsliced FM query (or a helper's own task): it runs here, in this thread's context.
      command.run();
    } else {
      indexSearcher.execute(command);
    }
  }

  private Runnable wrap(Runnable command) {
    Runnable[] last = LAST.get();
    if (last != null && last[0] == command) {
      return last[1];
    }
    Runnable wrapped = threadContext.preserveContext(command);
    LAST.set(new Runnable[] {command, wrapped});
    return wrapped;
  }

  /** Drops the thread's last wrapper, so that it does not keep a finished query's results alive. */
  static void forgetThread() {
    LAST.remove();
  }

  @Override
  public void shutdown() {}

  @Override
  public List<Runnable> shutdownNow() {
    return List.of();
  }

  @Override
  public boolean isShutdown() {
    return false;
  }

  @Override
  public boolean isTerminated() {
    return false;
  }

  @Override
  public boolean awaitTermination(long timeout, TimeUnit unit) {
    return false;
  }

  @Override
  public String toString() {
    return "FmExecutorService(" + plugin.fm() + ", else " + indexSearcher + ")";
  }
}
