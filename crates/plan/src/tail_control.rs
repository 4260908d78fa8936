//! Tail-control's threshold table: for each number of active requests, the work past which
//! a request is serialized, chosen to minimize the expected target misses (Li et al.,
//! "Work Stealing for Interactive Services to Meet Target Latency", PPoPP 2016, §4.1 and
//! Fig. 3). The formulas and the conventions that settle the paper's ambiguities are in
//! docs/tail-control.md (E1-E13, [C1]-[C5]); names below follow it.

use tailor_core::{BinnedDistribution, TailControlRow, TailControlTable, TAIL_CONTROL_TABLE_KIND};

/// What the planner needs besides the work distribution.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct TailControlParams {
    /// Cores m.
    pub cores: usize,
    /// Arrival rate, requests per second.
    pub rps: f64,
    /// The latency target, ms.
    pub target_ms: f64,
    /// The largest number of active requests q in the table.
    pub max_active: usize,
    /// The part of each request's work that runs sequentially, in [0, 1): 0 for the
    /// paper's linear model. Above 0 the span variant of §4.1's Discussion applies (a
    /// small request takes at least its span, F times its work; docs/tail-control.md).
    pub sequential_fraction: f64,
}

/// Why no table could be planned.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum TailControlError {
    /// A parameter is out of range.
    #[error("{0}")]
    BadParams(String),
    /// The load needs all the cores or more: the paper's model assumes U < m.
    #[error(
        "overload: {rps} requests/s of mean work {mean_ms} ms keep {utilization:.3} cores busy, \
         not fewer than the {cores} cores (tail-control's model needs utilization below the cores)"
    )]
    Overload {
        /// The arrival rate.
        rps: f64,
        /// The mean work.
        mean_ms: f64,
        /// U = mean work x rate, in cores.
        utilization: f64,
        /// m.
        cores: usize,
    },
}

/// The quantities of one candidate threshold l that do not depend on q (E2-E5).
#[derive(Debug, Clone, Copy)]
struct Candidate {
    l: f64,
    /// p_l: a request is large (w_i > l).
    p_large: f64,
    /// w̄_s: mean work of a small request.
    small_mean: f64,
    /// w̄_e: expected essential work per request.
    essential: f64,
    /// w̄_f: expected superfluous (serialized) work per large request.
    superfluous: f64,
}

/// E2-E5 for every candidate l ∈ {w_1, ..., w_n}, with prefix sums over the bins.
fn candidates(dist: &BinnedDistribution) -> Vec<Candidate> {
    let bins = dist.bins();
    let mut out = Vec::with_capacity(bins.len());
    let (mut p_small, mut work_small) = (0.0, 0.0);
    // Suffix sums of probability and probability x work over bins j+1..n.
    let (mut p_after, mut work_after) = (vec![0.0; bins.len() + 1], vec![0.0; bins.len() + 1]);
    for j in (0..bins.len()).rev() {
        p_after[j] = p_after[j + 1] + bins[j].probability;
        work_after[j] = work_after[j + 1] + bins[j].probability * bins[j].work_ms;
    }
    for (j, bin) in bins.iter().enumerate() {
        // Small: bins 0..=j (w_i <= l, convention [C1]); large: the rest.
        p_small += bin.probability;
        work_small += bin.probability * bin.work_ms;
        let l = bin.work_ms;
        let p_large = p_after[j + 1];
        let over = work_after[j + 1] - l * p_large;
        out.push(Candidate {
            l,
            p_large,
            small_mean: if p_small > 0.0 {
                work_small / p_small
            } else {
                0.0
            },
            essential: work_small + l * p_large,
            // [C2]: w̄_f = 0 when nothing is large.
            superfluous: if p_large > 0.0 { over / p_large } else { 0.0 },
        });
    }
    out
}

/// miss(q, l) (E7-E13) for `q` active requests; `lambda` per ms, `mean` = w̄.
fn expected_misses(
    c: &Candidate,
    q: usize,
    m: f64,
    lambda: f64,
    mean: f64,
    target: f64,
    sequential: f64,
) -> f64 {
    let utilization = mean * lambda;
    let q = q as f64;
    // E7: the pileup's length.
    let t =
        ((c.superfluous + c.l + (q - 1.0) * mean) / (m - utilization)).max(c.l / m + c.superfluous);
    // E8: large requests that miss (all of them, pessimistically, plus the detected one).
    let miss_large = c.p_large * (lambda * t + q - 1.0) + 1.0;
    // E9: cores left for essential work.
    let m_small = m - miss_large * c.superfluous / t;
    // E11: the queue's drain rate.
    let drain = m_small / c.essential - lambda;
    // [C4]: footnotes 1 and 2.
    if m_small <= 0.0 || drain <= 0.0 {
        return f64::INFINITY;
    }
    // E10: the queue depth at which a small request misses. A small request alone takes
    // t_s = w̄_s / m_s, or its span F w̄_s if longer (the span variant; t_s m_s = w̄_s
    // when F = 0, which is E10 as written).
    let alone = (c.small_mean / m_small).max(sequential * c.small_mean);
    let x = (m_small * (target - alone) - c.l) / c.essential;
    // E12: requests behind more than x others, active now or arriving while it drains.
    let y1 = (q - 1.0 - x).max(0.0);
    let y2 = lambda * y1 / drain;
    let miss_small = (y1 + y2) * (1.0 - c.p_large);
    // E13.
    miss_large + miss_small
}

/// Plans the table: for q = 1..=max_active, the candidate with the fewest expected misses,
/// ties to the larger threshold ([C5]). O(n + Q n) for n bins.
pub fn plan_tail_control(
    dist: &BinnedDistribution,
    params: &TailControlParams,
) -> Result<TailControlTable, TailControlError> {
    let p = params;
    let bad = |what: String| Err(TailControlError::BadParams(what));
    if p.cores == 0 {
        return bad("--cores must be at least 1".into());
    }
    if !(p.rps.is_finite() && p.rps > 0.0) {
        return bad(format!("--rps {}: must be a positive number", p.rps));
    }
    if !(p.target_ms.is_finite() && p.target_ms > 0.0) {
        return bad(format!(
            "--target {}: must be a positive number",
            p.target_ms
        ));
    }
    if p.max_active == 0 {
        return bad("--max-active must be at least 1".into());
    }
    if !(0.0..1.0).contains(&p.sequential_fraction) {
        return bad(format!(
            "--sequential-fraction {}: must be in [0, 1)",
            p.sequential_fraction
        ));
    }
    let m = p.cores as f64;
    // [C3]: rates per ms, as the works are in ms.
    let lambda = p.rps / 1000.0;
    let mean = dist.mean_work_ms();
    let utilization = mean * lambda;
    if utilization >= m {
        return Err(TailControlError::Overload {
            rps: p.rps,
            mean_ms: mean,
            utilization,
            cores: p.cores,
        });
    }
    let candidates = candidates(dist);
    let rows = (1..=p.max_active)
        .map(|q| {
            let mut best: Option<(f64, f64)> = None;
            for c in &candidates {
                let miss =
                    expected_misses(c, q, m, lambda, mean, p.target_ms, p.sequential_fraction);
                // Candidates come in increasing l, so `<=` hands ties to the larger one.
                if best.is_none_or(|(b, _)| miss <= b) {
                    best = Some((miss, c.l));
                }
            }
            let (miss, l) = best.expect("a distribution has at least one bin");
            TailControlRow {
                active: q,
                threshold_ms: l,
                expected_misses: miss,
            }
        })
        .collect();
    Ok(TailControlTable {
        kind: TAIL_CONTROL_TABLE_KIND.into(),
        target_ms: p.target_ms,
        rps: p.rps,
        cores: p.cores,
        rows,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use tailor_core::Bin;

    fn dist(bins: &[(f64, f64)]) -> BinnedDistribution {
        BinnedDistribution::new(
            bins.iter()
                .map(|&(work_ms, probability)| Bin {
                    work_ms,
                    probability,
                })
                .collect(),
        )
        .unwrap()
    }

    fn params(cores: usize, rps: f64, target_ms: f64, max_active: usize) -> TailControlParams {
        TailControlParams {
            cores,
            rps,
            target_ms,
            max_active,
            sequential_fraction: 0.0,
        }
    }

    /// The worked example of docs/tail-control.md §2, computed by hand.
    #[test]
    fn the_hand_computed_example() {
        let d = dist(&[(1.0, 0.8), (3.0, 0.1), (9.0, 0.1)]);
        let table = plan_tail_control(&d, &params(2, 500.0, 6.25, 4)).unwrap();
        let got: Vec<(usize, f64, f64)> = table
            .rows
            .iter()
            .map(|r| (r.active, r.threshold_ms, r.expected_misses))
            .collect();
        // The file round-trips through the spec's format.
        let mut json = Vec::new();
        table.write(&mut json).unwrap();
        let back = TailControlTable::parse(std::str::from_utf8(&json).unwrap(), "t").unwrap();
        assert_eq!(back, table);
        let want = [(1, 9.0, 1.0), (2, 9.0, 1.5), (3, 3.0, 1.85), (4, 1.0, 2.8)];
        for ((q, l, miss), (wq, wl, wmiss)) in got.iter().zip(want) {
            assert_eq!((*q, *l), (wq, wl), "{got:?}");
            assert!((miss - wmiss).abs() < 1e-9, "{got:?}");
        }
        // Every (q, l) of the example, against its hand-computed misses.
        let cands = candidates(&d);
        let by_hand = [
            [1.6, 2.0, 2.4, 2.8],
            [1.45, 1.65, 1.85, 3.704_985],
            [1.0, 1.5, 3.5, 5.5],
        ];
        for (c, row) in cands.iter().zip(by_hand) {
            for (q, want) in (1..=4).zip(row) {
                let miss = expected_misses(c, q, 2.0, 0.5, 2.0, 6.25, 0.0);
                assert!(
                    (miss - want).abs() < 1e-5,
                    "l {} q {q}: {miss} vs {want}",
                    c.l
                );
            }
        }
    }

    #[test]
    fn essential_and_superfluous_work_add_up_to_the_mean() {
        let d = dist(&[(0.5, 0.3), (2.0, 0.4), (10.0, 0.2), (40.0, 0.1)]);
        for c in candidates(&d) {
            assert!((c.essential + c.p_large * c.superfluous - d.mean_work_ms()).abs() < 1e-12);
        }
    }

    #[test]
    fn thresholds_fall_as_active_requests_rise_and_grow_with_the_target() {
        // Fig. 4's shape on a heavy-tailed distribution.
        let d = dist(&[
            (1.0, 0.5),
            (2.0, 0.2),
            (5.0, 0.15),
            (10.0, 0.08),
            (25.0, 0.05),
            (60.0, 0.02),
        ]);
        let mut last_first_cut = 0;
        for target in [10.0, 20.0, 40.0] {
            let t = plan_tail_control(&d, &params(4, 600.0, target, 30)).unwrap();
            let ls: Vec<f64> = t.rows.iter().map(|r| r.threshold_ms).collect();
            assert!(ls.windows(2).all(|w| w[1] <= w[0]), "{target}: {ls:?}");
            assert!(ls[0] > *ls.last().unwrap(), "{target}: {ls:?}");
            // The first load at which anything is serialized moves right as the target
            // grows.
            let first_cut = ls.iter().position(|&l| l < 60.0).unwrap_or(ls.len());
            assert!(first_cut >= last_first_cut, "{target}: {ls:?}");
            last_first_cut = first_cut;
        }
    }

    #[test]
    fn overload_and_bad_parameters_are_refused() {
        let d = dist(&[(1.0, 0.5), (3.0, 0.5)]);
        // Mean 2 ms at 1,000 rps is 2 cores.
        let err = plan_tail_control(&d, &params(2, 1000.0, 5.0, 4)).unwrap_err();
        assert!(matches!(err, TailControlError::Overload { .. }), "{err}");
        for bad in [
            params(0, 10.0, 5.0, 4),
            params(2, 0.0, 5.0, 4),
            params(2, f64::NAN, 5.0, 4),
            params(2, 10.0, -1.0, 4),
            params(2, 10.0, 5.0, 0),
        ] {
            assert!(matches!(
                plan_tail_control(&d, &bad),
                Err(TailControlError::BadParams(_))
            ));
        }
    }

    #[test]
    fn the_span_variant_only_adds_misses_and_is_the_plain_model_at_zero() {
        let d = dist(&[(1.0, 0.5), (4.0, 0.3), (20.0, 0.15), (60.0, 0.05)]);
        let plain = plan_tail_control(&d, &params(4, 300.0, 30.0, 12)).unwrap();
        let mut p = params(4, 300.0, 30.0, 12);
        p.sequential_fraction = 0.0;
        assert_eq!(plan_tail_control(&d, &p).unwrap(), plain);
        p.sequential_fraction = 0.5;
        let span = plan_tail_control(&d, &p).unwrap();
        for (a, b) in plain.rows.iter().zip(&span.rows) {
            assert!(
                b.expected_misses >= a.expected_misses - 1e-12,
                "{a:?} {b:?}"
            );
        }
        assert!(span
            .rows
            .iter()
            .zip(&plain.rows)
            .any(|(b, a)| b.expected_misses > a.expected_misses + 1e-9));
        p.sequential_fraction = 1.0;
        assert!(plan_tail_control(&d, &p).is_err());
    }
}
