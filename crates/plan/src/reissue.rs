//! SingleR's reissue delay and probability from a log of response times (Kaler, He and
//! Elnikety, "Optimal Reissue Policies for Reducing Tail Latency", SPAA 2017: the
//! data-driven computation of d and q under a reissue budget), for a fan-out whose
//! queries wait for all their shards.
//!
//! # The model
//!
//! A shard request's first copy answers after X; a reissue sent at d (only if no answer
//! came by then) answers after d + Y. In the paper's simplified model X and Y are
//! independent and drawn from the same distribution, which the log's response times
//! estimate. SingleR(d, q) reissues with probability q, so
//!
//! - the request is late at t when X > t and not (reissued and Y <= t - d):
//!   P(late at t) = S(t) (1 - q F(t - d)) for d <= t, S(t) otherwise, where S(v) =
//!   P(X > v) and F(v) = P(X <= v), both empirical;
//! - the budget B bounds the reissues per request: q S(d) <= B, so at each d the best q
//!   is min(1, B / S(d)).
//!
//! The plan is the (d, q) whose k-th percentile is smallest: the least t for which some
//! d has P(late at t) <= 1 - k. Feasibility only changes where S or F jumps, the best d
//! for a given t is 0 or a sample (S is constant between samples while F(t - d) falls),
//! and it is monotone in t, so t is found by bisection, each step a sweep over the sorted
//! samples (O(n) with a pointer for F). SingleD is the same with q fixed at 1.
//!
//! # Fan-out
//!
//! A query of S shards is on time when every shard is; with independent shards its k-th
//! percentile is the shard requests' k^(1/S)-th, which is the percentile planned for.
//! This, and taking the whole log as one distribution for every shard, are this
//! module's adaptations to fan-out; the paper plans single requests.
//!
//! Load: reissues add work, so the response times under a plan differ from the log's.
//! The paper iterates: run with the plan, log, re-plan. A log taken under a reissue
//! policy has first copies that were cancelled when their reissue won: their X is only
//! known to exceed the time the reissue answered (right-censored). The distribution is
//! then the Kaplan-Meier estimate (Kaplan and Meier, JASA 1958), computed by
//! redistributing each censored sample's weight equally over the samples after it
//! (Efron 1967); weight left after the last answered sample never answers.
//!
//! # Spending the budget
//!
//! Neither plan, from a log without reissue or from one under the plan, aims at the
//! reissue rate the plan will cause: under fan-out with stalls the first underspends at
//! high load. `adapt_reissue` (reissue_adapt.rs) plans from the log for a multiple of
//! the budget and searches the multiple (bracketing, then secant steps:
//! `next_multiplier`) until the rate measured under the plan, by a simulation or a live
//! run that the caller passes in, is within a band of the budget (90-100% by default).
//! This search is tailor's.

/// What to plan for.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ReissueParams {
    /// The most reissues per shard request, B, in [0, 1].
    pub budget: f64,
    /// The query percentile to minimize, in (0, 100).
    pub percentile: f64,
    /// The shards a query waits for.
    pub shards: usize,
}

/// A planned reissue policy and what the log predicts for it.
#[derive(Debug, Clone, PartialEq)]
pub struct ReissuePlan {
    /// SingleR's delay.
    pub d_ms: f64,
    /// SingleR's probability.
    pub q: f64,
    /// The shard-level percentile planned for, in (0, 100).
    pub shard_percentile: f64,
    /// SingleR's predicted shard-level percentile, in ms.
    pub predicted_ms: f64,
    /// The predicted reissues per shard request, q S(d).
    pub predicted_rate: f64,
    /// The best SingleD within the budget: its delay and predicted percentile (none when
    /// no delay keeps within the budget at q = 1).
    pub single_d: Option<(f64, f64)>,
    /// The log's percentile with no reissue (none when too many first copies never
    /// answered).
    pub no_reissue_ms: Option<f64>,
}

/// Why a plan cannot be made.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum ReissueError {
    /// A parameter is out of range.
    #[error("{0}")]
    BadParameter(String),
    /// The log has too few answered requests to meet the percentile even with reissue.
    #[error(
        "{censored} of {samples} first copies never answered in the log, more than the \
         {percentile}th percentile allows even with reissue; log a run with less reissue"
    )]
    TooCensored {
        /// Samples without an answer.
        censored: usize,
        /// All samples.
        samples: usize,
        /// The shard-level percentile.
        percentile: f64,
    },
}

/// The first copies' response-time distribution: the answered times sorted, their
/// cumulative Kaplan-Meier weights (`cum[i]`: the weight of the first i), and by
/// difference the weight that never answers.
pub(crate) struct Empirical {
    x: Vec<f64>,
    cum: Vec<f64>,
}

impl Empirical {
    /// The Kaplan-Meier estimate from answered and right-censored times: each censored
    /// sample's weight goes equally to the samples after it (answered before censored
    /// at equal times).
    pub(crate) fn kaplan_meier(answered: &[f64], censored: &[f64]) -> Empirical {
        let mut all: Vec<(f64, bool)> = answered
            .iter()
            .map(|&t| (t, false))
            .chain(censored.iter().map(|&t| (t, true)))
            .collect();
        all.sort_by(|a, b| a.0.total_cmp(&b.0).then(a.1.cmp(&b.1)));
        let n = all.len();
        let mut weight = 1.0 / n as f64;
        let (mut x, mut cum) = (Vec::with_capacity(answered.len()), vec![0.0]);
        for (j, &(t, is_censored)) in all.iter().enumerate() {
            if is_censored {
                let after = n - j - 1;
                if after > 0 {
                    weight += weight / after as f64;
                }
            } else {
                x.push(t);
                cum.push(cum[cum.len() - 1] + weight);
            }
        }
        Empirical { x, cum }
    }

    /// The weight of the samples <= v: F(v).
    fn at_most(&self, v: f64) -> f64 {
        self.cum[self.x.partition_point(|&s| s <= v)]
    }

    /// S(v) = P(X > v), never-answering weight included.
    fn tail(&self, v: f64) -> f64 {
        (1.0 - self.at_most(v)).max(0.0)
    }

    /// The least P(late at t) over the candidate delays, and the (d, q) giving it; only
    /// q = 1 delays for SingleD.
    fn best_at(&self, t: f64, budget: f64, single_d: bool) -> Option<(f64, f64, f64)> {
        let n = self.x.len();
        let s_t = self.tail(t);
        let mut best: Option<(f64, f64, f64)> = None;
        // Candidate d = 0, then each distinct sample d <= t; `at_most_d` counts samples
        // <= d, rising with it, and `below` those <= t - d, falling.
        let mut below = self.x.partition_point(|&s| s <= t);
        let mut at_most_d = 0;
        let mut d = 0.0;
        loop {
            while at_most_d < n && self.x[at_most_d] <= d {
                at_most_d += 1;
            }
            let tail_d = (1.0 - self.cum[at_most_d]).max(0.0);
            if tail_d > 1e-15 {
                let q = (budget / tail_d).min(1.0);
                if !single_d || q >= 1.0 {
                    while below > 0 && self.x[below - 1] > t - d {
                        below -= 1;
                    }
                    let late = s_t * (1.0 - q * self.cum[below]);
                    if best.is_none_or(|(l, ..)| late < l) {
                        best = Some((late, d, q));
                    }
                }
            }
            // The next distinct sample above d.
            match self.x.get(at_most_d) {
                Some(&next) if next <= t => d = next,
                _ => break,
            }
        }
        best
    }
}

/// Plans SingleR for `params` from the first copies' response times: `answered_ms`,
/// and `censored_ms` for copies cancelled before they answered (each known only to
/// exceed its time).
pub fn plan_reissue(
    answered_ms: &[f64],
    censored_ms: &[f64],
    params: ReissueParams,
) -> Result<ReissuePlan, ReissueError> {
    let k = check(answered_ms, censored_ms, params)?;
    let e = Empirical::kaplan_meier(answered_ms, censored_ms);
    plan_on(
        &e,
        k,
        params,
        answered_ms.len() + censored_ms.len(),
        censored_ms.len(),
    )
}

/// [`plan_reissue`] on an estimated distribution, for the checked shard-level quantile
/// `k`; `samples` and `censored` name the log in errors.
pub(crate) fn plan_on(
    e: &Empirical,
    k: f64,
    params: ReissueParams,
    samples: usize,
    censored: usize,
) -> Result<ReissuePlan, ReissueError> {
    // A hair of slack, so that a late fraction equal to the allowed one in exact
    // arithmetic is not refused for a rounding error.
    let allowed = 1.0 - k + 1e-12;
    let top = e.x.last().copied().unwrap_or(0.0);
    let no_reissue_ms = (e.tail(top) <= allowed).then(|| least_t(top, |t| e.tail(t) <= allowed));
    let feasible = |t: f64, single_d: bool| {
        e.best_at(t, params.budget, single_d)
            .is_some_and(|(late, ..)| late <= allowed)
            || e.tail(t) <= allowed
    };
    // With every sample answered by 2 x top, a reissue at any d <= top answers too.
    let hi = 2.0 * top + 1.0;
    if !feasible(hi, false) {
        return Err(ReissueError::TooCensored {
            censored,
            samples,
            percentile: 100.0 * k,
        });
    }
    let t = least_t(hi, |t| feasible(t, false));
    // The plain percentile may already do (then no reissue: q = 0).
    let (_, d_ms, q) = e
        .best_at(t, params.budget, false)
        .filter(|&(late, ..)| late <= allowed)
        .unwrap_or((e.tail(t), 0.0, 0.0));
    // SingleD: q = 1, so d at least the budget's quantile (the least sample with
    // S(d) <= B). Where no such d at or below the target helps, the target is the plain
    // percentile, which SingleD at that least d keeps.
    let least_d = e.x.iter().copied().find(|&d| e.tail(d) <= params.budget);
    let single_d = least_d.map(|least_d| {
        let t = least_t(hi, |t| feasible(t, true));
        let d = e
            .best_at(t, params.budget, true)
            .filter(|&(late, ..)| late <= allowed)
            .map_or(least_d, |(_, d, _)| d);
        (d, t)
    });
    Ok(ReissuePlan {
        d_ms,
        q,
        shard_percentile: 100.0 * k,
        predicted_ms: t,
        predicted_rate: q * e.tail(d_ms),
        single_d,
        no_reissue_ms,
    })
}

/// The shard-level quantile k, after checking the parameters and the log.
pub(crate) fn check(
    answered: &[f64],
    censored: &[f64],
    params: ReissueParams,
) -> Result<f64, ReissueError> {
    let bad = |m: String| Err(ReissueError::BadParameter(m));
    if !(0.0..=1.0).contains(&params.budget) {
        return bad(format!(
            "--budget: must be from 0 to 1, found {}",
            params.budget
        ));
    }
    if !(params.percentile > 0.0 && params.percentile < 100.0) {
        return bad(format!(
            "--percentile: must be above 0 and below 100, found {}",
            params.percentile
        ));
    }
    if params.shards == 0 {
        return bad("the log names no shard".into());
    }
    if answered.is_empty() {
        return bad("the log has no answered first copy".into());
    }
    if let Some(v) = answered
        .iter()
        .chain(censored)
        .find(|v| !v.is_finite() || **v <= 0.0)
    {
        return bad(format!(
            "response times must be positive and finite, found {v}"
        ));
    }
    Ok((params.percentile / 100.0).powf(1.0 / params.shards as f64))
}

/// The least t in [0, hi] with `ok(t)`, which is monotone and true at `hi`, to within
/// a millionth of `hi` (and never below the true least t).
fn least_t(hi: f64, ok: impl Fn(f64) -> bool) -> f64 {
    let (mut lo, mut hi) = (0.0, hi);
    if ok(lo) {
        return lo;
    }
    while hi - lo > 1e-6 * hi.max(1e-9) {
        let mid = 0.5 * (lo + hi);
        if ok(mid) {
            hi = mid;
        } else {
            lo = mid;
        }
    }
    hi
}

/// The exhaustive oracle for small logs: every candidate t (each sample, and each
/// sample plus each candidate delay) in increasing order, every candidate d, the
/// probability the budget allows; the least feasible t, on the same Kaplan-Meier
/// distribution. For tests.
pub fn plan_reissue_exhaustive(
    answered_ms: &[f64],
    censored_ms: &[f64],
    params: ReissueParams,
) -> Result<f64, ReissueError> {
    let k = check(answered_ms, censored_ms, params)?;
    let e = Empirical::kaplan_meier(answered_ms, censored_ms);
    let weight = |i: usize| e.cum[i + 1] - e.cum[i];
    let cdf = |v: f64| {
        (0..e.x.len())
            .filter(|&i| e.x[i] <= v)
            .map(weight)
            .sum::<f64>()
    };
    let tail = |v: f64| (1.0 - cdf(v)).max(0.0);
    let delays: Vec<f64> = std::iter::once(0.0).chain(e.x.iter().copied()).collect();
    let mut candidates = delays.clone();
    for &d in &delays {
        candidates.extend(e.x.iter().map(|&y| d + y));
    }
    candidates.sort_by(f64::total_cmp);
    for t in candidates {
        let mut late = tail(t);
        for &d in delays.iter().filter(|&&d| d <= t) {
            if tail(d) > 1e-15 {
                let q = (params.budget / tail(d)).min(1.0);
                late = late.min(tail(t) * (1.0 - q * cdf(t - d)));
            }
        }
        if late <= 1.0 - k + 1e-9 {
            return Ok(t);
        }
    }
    Err(ReissueError::TooCensored {
        censored: censored_ms.len(),
        samples: answered_ms.len() + censored_ms.len(),
        percentile: 100.0 * k,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn params(budget: f64, percentile: f64) -> ReissueParams {
        ReissueParams {
            budget,
            percentile,
            shards: 1,
        }
    }

    #[test]
    fn no_budget_gives_the_plain_percentile() {
        let x: Vec<f64> = (1..=100).map(f64::from).collect();
        let plan = plan_reissue(&x, &[], params(0.0, 90.0)).unwrap();
        assert!(
            (plan.no_reissue_ms.unwrap() - 90.0).abs() < 1e-3,
            "{plan:?}"
        );
        assert!((plan.predicted_ms - 90.0).abs() < 1e-3);
    }

    /// The helper's worked case: 1 ms requests, 4% of them hit by a 20 ms hiccup. At a
    /// 3.5% budget SingleD must wait past the 96.5th percentile, inside the hiccup, and
    /// cannot help; SingleR reissues early with q < 1 and rescues the tail.
    #[test]
    fn single_r_rescues_a_hiccup_that_single_d_cannot() {
        let mut x: Vec<f64> = (0..1000).map(|i| 1.0 + f64::from(i % 25) * 0.02).collect();
        for v in x.iter_mut().step_by(25) {
            *v += 20.0;
        }
        let plan = plan_reissue(&x, &[], params(0.035, 99.0)).unwrap();
        assert!(plan.no_reissue_ms.unwrap() > 20.0);
        assert!(plan.predicted_ms < 3.5, "{plan:?}");
        assert!(plan.q < 1.0 && plan.d_ms < 2.0, "{plan:?}");
        assert!(plan.predicted_rate <= 0.035 + 1e-12);
        let (_, single_d_ms) = plan.single_d.unwrap();
        assert!(single_d_ms > 20.0, "{plan:?}");
    }

    #[test]
    fn fan_out_plans_for_a_higher_shard_percentile() {
        let x: Vec<f64> = (1..=1000).map(f64::from).collect();
        let mut p = params(0.0, 99.0);
        p.shards = 10;
        let plan = plan_reissue(&x, &[], p).unwrap();
        assert!((plan.shard_percentile - 100.0 * 0.99f64.powf(0.1)).abs() < 1e-9);
        assert!(plan.no_reissue_ms.unwrap() > 998.0);
    }

    #[test]
    fn bad_parameters_are_refused() {
        for (x, p) in [
            (vec![1.0], params(1.5, 99.0)),
            (vec![1.0], params(0.05, 100.0)),
            (vec![], params(0.05, 99.0)),
            (vec![0.0], params(0.05, 99.0)),
            (vec![f64::INFINITY], params(0.05, 99.0)),
        ] {
            assert!(matches!(
                plan_reissue(&x, &[], p),
                Err(ReissueError::BadParameter(_))
            ));
        }
        // Nine of ten never answer, after the only answer: no reissue can meet p99.
        assert!(matches!(
            plan_reissue(&[1.0], &[2.0; 9], params(0.05, 99.0)),
            Err(ReissueError::TooCensored { .. })
        ));
    }

    #[test]
    fn censored_weight_moves_to_the_later_samples() {
        let e = Empirical::kaplan_meier(&[1.0, 3.0], &[2.0]);
        assert_eq!(e.x, vec![1.0, 3.0]);
        assert!((e.cum[1] - 1.0 / 3.0).abs() < 1e-12 && (e.cum[2] - 1.0).abs() < 1e-12);
        // Censored last: its weight never answers.
        let e = Empirical::kaplan_meier(&[1.0], &[2.0]);
        assert!((e.tail(5.0) - 0.5).abs() < 1e-12);
        // Censored at an answered time counts after it.
        let e = Empirical::kaplan_meier(&[1.0, 2.0], &[1.0]);
        assert!((e.cum[1] - 1.0 / 3.0).abs() < 1e-12);
        assert!((e.tail(1.5) - 2.0 / 3.0).abs() < 1e-12);
    }
}
