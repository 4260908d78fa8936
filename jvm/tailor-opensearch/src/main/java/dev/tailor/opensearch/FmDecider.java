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
 * helper, now or once a core frees ({@link FmExecutor#mayHelp}), else run it on OpenSearch's plain
 * sequential path.
 *
 * <p>A sliced query at degree 1 costs more than the same query unsliced (likely because each
 * slice has its own collector and its own top-k threshold). Measured on GCIDE with 16 slices on 2
 * vCPUs, FM with a table that never sends a helper had a mean latency 1.1-1.6x mode {@code
 * none}'s at 45-75% load, paired by round (docs/opensearch.md, run degree1). That was before
 * FmExecutor ran a query's slices inline on its caller; since then the node's CPU per query with
 * every query sliced at degree 1 is within a few percent of mode {@code none}'s at 1-16 slices
 * (run slice-cost), so whether this decider still pays for itself is open. A query that would
 * wait for a core on arrival would pay that and is unlikely to gain, so it runs unsliced. This is
 * tailor's departure from the FM paper (Haque et al., ASPLOS 2015, §4.2), whose Lucene requests
 * were always divisible at no cost: the choice of path is made once, on arrival, and such a query
 * stays at degree 1 even if cores free later. A query that finds a core of its own but none for a
 * helper is sliced, so that it can take the next core that frees, as in the paper.
 *
 * <p>OpenSearch consults deciders in mode {@code auto} only; mode {@code all} slices every request.
 */
final class FmDecider extends ConcurrentSearchRequestDecider {
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
        return Optional.of(new FmDecider(decide(fm.mayHelp())));
      }
    };
  }

  static ConcurrentSearchDecision decide(boolean mayHelp) {
    return mayHelp
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
