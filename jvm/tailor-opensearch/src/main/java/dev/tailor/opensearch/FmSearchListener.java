package dev.tailor.opensearch;

import dev.tailor.lucene.FmExecutor;
import dev.tailor.lucene.FmQueryScope;
import org.opensearch.index.shard.SearchOperationListener;
import org.opensearch.search.internal.SearchContext;

/**
 * FM's view of a node's searches. OpenSearch's {@code SearchService} calls {@link
 * #onPreQueryPhase} and then {@link #onQueryPhase} or {@link #onFailedQueryPhase} on the same
 * search thread around a shard's query phase: that span is one FM query ({@link FmExecutor#enter},
 * which also waits for admission), and the open ones are FM's load. {@code ContextIndexSearcher}
 * calls the slice hooks on the thread that runs each slice, caller or helper: they tell FM which
 * slices are claimed and what degree a query reached.
 */
final class FmSearchListener implements SearchOperationListener {
  private final TailorFmPlugin plugin;
  private final ThreadLocal<FmQueryScope> query = new ThreadLocal<>();
  private final ThreadLocal<FmQueryScope> slice = new ThreadLocal<>();

  FmSearchListener(TailorFmPlugin plugin) {
    this.plugin = plugin;
  }

  @Override
  public void onPreQueryPhase(SearchContext searchContext) {
    plugin.queryPhases.incrementAndGet();
    FmExecutor fm = plugin.activeFm();
    if (fm != null && !fm.inScope()) {
      query.set(fm.enter());
    }
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
