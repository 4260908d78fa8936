package dev.tailor.lucene;

import java.io.IOException;
import java.util.List;
import java.util.Objects;
import org.apache.lucene.index.IndexReader;
import org.apache.lucene.index.LeafReaderContext;
import org.apache.lucene.search.Collector;
import org.apache.lucene.search.CollectorManager;
import org.apache.lucene.search.IndexSearcher;
import org.apache.lucene.search.Query;
import org.apache.lucene.search.Weight;

/**
 * An {@link IndexSearcher} whose slices run on an {@link FmExecutor}: each search is one FM query
 * (a scope is opened around it unless the calling thread has one open), and each slice reports
 * when it starts and ends, so the executor knows exactly which slices are left for helpers and
 * what degree a query reached.
 */
public final class FmSearcher extends IndexSearcher {
  private final FmExecutor fm;
  private final int maxDocsPerSlice;
  private final int maxSegmentsPerSlice;

  /** Searches {@code reader} with Lucene's default slices. */
  public FmSearcher(IndexReader reader, FmExecutor fm) {
    this(reader, fm, 0, 0);
  }

  /**
   * Searches {@code reader} with slices of at most {@code maxSegmentsPerSlice} segments and
   * {@code maxDocsPerSlice} documents ({@link IndexSearcher#slices(List, int, int)}); zero for
   * either means Lucene's defaults.
   */
  public FmSearcher(
      IndexReader reader, FmExecutor fm, int maxDocsPerSlice, int maxSegmentsPerSlice) {
    super(reader, Objects.requireNonNull(fm, "fm"));
    if (maxDocsPerSlice < 0 || maxSegmentsPerSlice < 0) {
      throw new IllegalArgumentException(
          "slice limits must not be negative: " + maxDocsPerSlice + ", " + maxSegmentsPerSlice);
    }
    this.fm = fm;
    this.maxDocsPerSlice = maxDocsPerSlice;
    this.maxSegmentsPerSlice = maxSegmentsPerSlice;
  }

  /** The executor. */
  public FmExecutor executor() {
    return fm;
  }

  @Override
  protected LeafSlice[] slices(List<LeafReaderContext> leaves) {
    if (maxDocsPerSlice == 0 || maxSegmentsPerSlice == 0) {
      return super.slices(leaves);
    }
    return slices(leaves, maxDocsPerSlice, maxSegmentsPerSlice);
  }

  @Override
  public <C extends Collector, T> T search(Query query, CollectorManager<C, T> collectorManager)
      throws IOException {
    if (fm.inScope()) {
      return super.search(query, collectorManager);
    }
    try (FmQueryScope scope = fm.enter()) {
      return super.search(query, collectorManager);
    }
  }

  @Override
  protected void search(List<LeafReaderContext> leaves, Weight weight, Collector collector)
      throws IOException {
    FmQueryScope query = fm.sliceStarted();
    try {
      super.search(leaves, weight, collector);
    } finally {
      fm.sliceFinished(query);
    }
  }
}
