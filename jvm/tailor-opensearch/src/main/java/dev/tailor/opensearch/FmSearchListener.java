package dev.tailor.opensearch;

import dev.tailor.lucene.FmExecutor;
import dev.tailor.lucene.FmQueryScope;
import org.opensearch.action.search.SearchType;
import org.opensearch.index.shard.SearchOperationListener;
import org.opensearch.search.internal.ReaderContext;
import org.opensearch.search.internal.SearchContext;
import org.opensearch.search.internal.ShardSearchContextId;

/**
 * FM's view of a node's searches. OpenSearch's {@code SearchService} calls {@link
 * #onPreQueryPhase} and then {@link #onQueryPhase} or {@link #onFailedQueryPhase} on the same
 * search thread around a shard's query phase: that span is one FM query ({@link FmExecutor#enter},
 * which also waits for admission), and the open ones are FM's load. {@code ContextIndexSearcher}
 * calls the slice hooks on the thread that runs each slice, caller or helper: they tell FM which
 * slices are claimed and what degree a query reached.
 *
 * <p>Before its query phase a shard request has already parsed its query and rewritten it (a fuzzy
 * query's term expansion happens there), on the same thread, from {@link #onNewReaderContext}
 * on. That work counts in the query's executed time ({@link FmExecutor#enter(long)}), so that the
 * node's clock is the one the table was planned on: a Lucene profile times the rewrite too.
 */
final class FmSearchListener implements SearchOperationListener {
  private final TailorFmPlugin plugin;
  private final ThreadLocal<FmQueryScope> query = new ThreadLocal<>();
  private final ThreadLocal<FmQueryScope> slice = new ThreadLocal<>();
  /** The reader context this thread opened last, and when: a shard request's start. */
  private final ThreadLocal<RequestStart> requestStart = new ThreadLocal<>();

  private record RequestStart(ShardSearchContextId context, long nanos) {}

  FmSearchListener(TailorFmPlugin plugin) {
    this.plugin = plugin;
  }

  @Override
  public void onNewReaderContext(ReaderContext readerContext) {
    requestStart.set(new RequestStart(readerContext.id(), System.nanoTime()));
  }

  /** A point in time's context is made now and searched later: no request starts here. */
  @Override
  public void onNewPitContext(ReaderContext readerContext) {
    requestStart.remove();
  }

  @Override
  public void onPreQueryPhase(SearchContext searchContext) {
    plugin.queryPhases.incrementAndGet();
    RequestStart start = requestStart.get();
    requestStart.remove();
    FmExecutor fm = plugin.activeFm();
    if (fm != null && !fm.inScope()) {
      // A search OpenSearch runs unsliced (mode auto, and FM's decider said no) still hands
      // Lucene's term lookups to the executor: those run at once on its thread.
      query.set(fm.enter(executedBefore(start, searchContext), searchContext.shouldUseConcurrentSearch()));
    }
  }

  /**
   * The work the request did on this thread before its query phase: from its reader context's
   * creation, if this thread created the query phase's context for it; else none. A scroll's later
   * pages and a point in time's searches reuse a context made earlier, and a DFS query phase's
   * context was made by its DFS phase, whose thread then waited for the other shards: neither
   * has its own start here.
   */
  private static long executedBefore(RequestStart start, SearchContext searchContext) {
    if (start == null || searchContext.readerContext() == null) {
      return 0;
    }
    if (searchContext.request() != null
        && searchContext.request().searchType() == SearchType.DFS_QUERY_THEN_FETCH) {
      return 0;
    }
    if (!start.context().equals(searchContext.readerContext().id())) {
      return 0;
    }
    return Math.max(0, System.nanoTime() - start.nanos());
  }

  @Override
  public void onQueryPhase(SearchContext searchContext, long tookInNanos) {
    leave();
  }

  @Override
  public void onFailedQueryPhase(SearchContext searchContext) {
    leave();
  }

  private void leave() {
    plugin.queryPhases.decrementAndGet();
    FmQueryScope q = query.get();
    if (q != null) {
      query.remove();
      q.close();
    }
    FmExecutorService.forgetThread();
  }

  @Override
  public void onPreSliceExecution(SearchContext searchContext) {
    FmExecutor fm = plugin.fm();
    if (fm != null) {
      slice.set(fm.sliceStarted());
    }
  }

  @Override
  public void onSliceExecution(SearchContext searchContext) {
    sliceDone();
  }

  @Override
  public void onFailedSliceExecution(SearchContext searchContext) {
    sliceDone();
  }

  private void sliceDone() {
    FmQueryScope q = slice.get();
    if (q != null) {
      slice.remove();
      plugin.fm().sliceFinished(q);
    }
  }
}
