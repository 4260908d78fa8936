package dev.tailor.opensearch;

import dev.tailor.lucene.FmExecutor;
import java.util.concurrent.atomic.AtomicBoolean;
import org.opensearch.action.ActionRequest;
import org.opensearch.action.search.SearchAction;
import org.opensearch.action.support.ActionFilter;
import org.opensearch.action.support.ActionFilterChain;
import org.opensearch.core.action.ActionListener;
import org.opensearch.core.action.ActionResponse;
import org.opensearch.tasks.Task;

/**
 * Tells FM of every search request on the node, from the search action's start to its response
 * ({@link FmExecutor#requestStarted}). A request spends part of its time outside its shard query
 * phase: parsing, fetching, merging and replying, each on a core that FM's own count of queries
 * misses. Without this count FM may take a node busy with those for an idle one, and slice a query
 * or send a helper where no core is free.
 */
final class FmRequestFilter implements ActionFilter {
  private final TailorFmPlugin plugin;

  FmRequestFilter(TailorFmPlugin plugin) {
    this.plugin = plugin;
  }

  /** Last of the filters, next to the action, so that only requests that run are counted. */
  @Override
  public int order() {
    return Integer.MAX_VALUE;
  }

  @Override
  public <Request extends ActionRequest, Response extends ActionResponse> void apply(
      Task task,
      String action,
      Request request,
      ActionListener<Response> listener,
      ActionFilterChain<Request, Response> chain) {
    FmExecutor fm = plugin.activeFm();
    if (fm == null || !SearchAction.NAME.equals(action)) {
      chain.proceed(task, action, request, listener);
      return;
    }
    fm.requestStarted();
    AtomicBoolean finished = new AtomicBoolean();
    Runnable finish =
        () -> {
          if (finished.compareAndSet(false, true)) {
            fm.requestFinished();
          }
        };
    try {
      chain.proceed(task, action, request, ActionListener.runAfter(listener, finish));
    } catch (RuntimeException | Error e) {
      finish.run();
      throw e;
    }
  }
}
