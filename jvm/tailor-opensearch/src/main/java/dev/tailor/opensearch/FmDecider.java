package dev.tailor.opensearch;

import dev.tailor.lucene.FmExecutor;
import java.util.Optional;
import org.opensearch.index.IndexSettings;
import org.opensearch.index.query.QueryBuilder;
import org.opensearch.search.deciders.ConcurrentSearchDecision;
import org.opensearch.search.deciders.ConcurrentSearchDecision.DecisionStatus;
import org.opensearch.search.deciders.ConcurrentSearchRequestDecider;

/**
 * FM's answer to OpenSearch's {@code auto} mode: slice a shard request only if FM could send it a
 * helper, else run it on OpenSearch's plain sequential path. Which requests could is the {@code
 * tailor.fm.decider} setting's {@link Rule}.
 *
 * <p>A sliced query at degree 1 costs more than the same query unsliced (likely because each
 * slice has its own collector and its own top-k threshold). Measured on GCIDE with 16 slices on 2
 * vCPUs, FM with a table that never sends a helper had a mean latency 1.1-1.6x mode {@code
 * none}'s at 45-75% load, paired by round (docs/opensearch.md, run degree1), and 1.08x {@code
 * none}'s p99 at 75% after FmExecutor ran a query's slices inline on its caller (run
 * degree1-75): an overhead too small to see on an idle node grows into queueing near saturation.
 * This is tailor's departure from the FM paper (Haque et al., ASPLOS 2015, §4.2), whose Lucene
 * requests were always divisible at no cost: the choice of path is made once, on arrival, and a
 * query left unsliced stays at degree 1 even if cores free later.
 *
 * <p>OpenSearch consults deciders in mode {@code auto} only; mode {@code all} slices every request.
 */
final class FmDecider extends ConcurrentSearchRequestDecider {
  /** Which arriving shard requests the decider slices. */
  enum Rule {
    /**
     * Those that find a core of their own and a row that raises ({@link FmExecutor#mayHelp}): a
     * query that would wait for a core on arrival is unlikely to gain. The default.
     */
    CORE,
    /**
     * Those whose row for the load they find raises before the table's horizon, whatever the cores
     * ({@link FmExecutor#rowMayHelp}): a long query that arrives while both cores are held can
     * still take a helper once the queries ahead of it leave, and at loads whose row never adds a
     * thread no query pays for slicing.
     */
    ROW;

    /** The setting's value, {@code core} or {@code row}. */
    static Rule parse(String value) {
      for (Rule r : values()) {
        if (r.name().equalsIgnoreCase(value)) {
          return r;
        }
      }
      throw new IllegalArgumentException(
          "[" + TailorFmPlugin.DECIDER_KEY + "] must be core or row, found [" + value + "]");
    }

    @Override
    public String toString() {
      return name().toLowerCase(java.util.Locale.ROOT);
    }
  }

  private final ConcurrentSearchDecision decision;

  private FmDecider(ConcurrentSearchDecision decision) {
    this.decision = decision;
  }

  /** The factory: a decider per shard request while FM is on, none (no opinion) while it is off. */
  static ConcurrentSearchRequestDecider.Factory factory(TailorFmPlugin plugin) {
    return new ConcurrentSearchRequestDecider.Factory() {
      @Override
      public Optional<ConcurrentSearchRequestDecider> create(IndexSettings indexSettings) {
        FmExecutor fm = plugin.activeFm();
        if (fm == null) {
          return Optional.empty();
        }
        Rule rule = plugin.decider();
        boolean slice = rule == Rule.ROW ? fm.rowMayHelp() : fm.mayHelp();
        return Optional.of(new FmDecider(decide(slice, rule)));
      }
    };
  }

  static ConcurrentSearchDecision decide(boolean slice, Rule rule) {
    if (rule == Rule.ROW) {
      return slice
          ? new ConcurrentSearchDecision(
              DecisionStatus.YES, "tailor-fm: the FM table adds threads at this load")
          : new ConcurrentSearchDecision(
              DecisionStatus.NO, "tailor-fm: the FM table adds no thread at this load, or a query waits; the sequential path costs less");
    }
    return slice
        ? new ConcurrentSearchDecision(
            DecisionStatus.YES, "tailor-fm: the query has a core and the FM table adds threads at this load")
        : new ConcurrentSearchDecision(
            DecisionStatus.NO, "tailor-fm: no helper possible (no core of its own, a query waiting, or a row that never adds threads); the sequential path costs less");
  }

  @Override
  public void evaluateForQuery(QueryBuilder queryBuilder, IndexSettings indexSettings) {
    // The decision depends on the node's load when the request arrives, not on the query.
  }

  @Override
  public ConcurrentSearchDecision getConcurrentSearchDecision() {
    return decision;
  }
}
