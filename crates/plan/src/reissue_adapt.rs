//! Adapting SingleR's plan until the reissue it causes spends the budget (tailor's
//! search on the planned budget; the plan itself is Kaler, He and Elnikety's, SPAA 2017,
//! in `reissue.rs`).

use crate::reissue::{check, plan_on, Empirical, ReissueError, ReissueParams, ReissuePlan};

/// How [`adapt_reissue`] looks for a plan that spends its budget under the load it adds.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct AdaptParams {
    /// The band the measured reissue rate must end in, as fractions (low, high) of the
    /// budget. Issue #39 asks for within 10% of the budget and never above it: (0.9, 1.0),
    /// the default.
    pub band: (f64, f64),
    /// The most plans measured before the search gives up; 12 is picked by hand (the
    /// fan-out set-ups of docs/fanout.md need 2 to 4).
    pub max_trials: usize,
}

impl Default for AdaptParams {
    fn default() -> Self {
        AdaptParams {
            band: (0.9, 1.0),
            max_trials: 12,
        }
    }
}

/// What a plan did when it ran (simulated, or logged by a live front end).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Measured {
    /// Reissues sent per shard request.
    pub reissue_rate: f64,
    /// The query percentile planned for, in ms (NaN where it was not measured).
    pub percentile_ms: f64,
}

/// One plan the adaptation measured.
#[derive(Debug, Clone, PartialEq)]
pub struct ReissueTrial {
    /// The plan was made for this multiple of the budget.
    pub multiplier: f64,
    /// The plan, from the log at `multiplier` x the budget.
    pub plan: ReissuePlan,
    /// What it did.
    pub measured: Measured,
}

/// The adaptation's result: every plan it measured, and the one it chose.
#[derive(Debug, Clone, PartialEq)]
pub struct AdaptedPlan {
    /// The plans measured, in order.
    pub trials: Vec<ReissueTrial>,
    /// The index of the chosen plan in `trials`.
    pub chosen: usize,
    /// Whether the chosen plan's measured rate is in the band; if not, it is the one that
    /// spent most without going over the budget's high end (see [`AdaptStep::Stuck`]).
    pub within_band: bool,
}

impl AdaptedPlan {
    /// The chosen plan and what it did.
    pub fn chosen(&self) -> &ReissueTrial {
        &self.trials[self.chosen]
    }
}

/// The adaptation's next move, from the (multiplier, measured rate) pairs so far.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum AdaptStep {
    /// Plan for this multiple of the budget and measure the plan.
    Try(f64),
    /// This trial's rate is in the band.
    Done(usize),
    /// No trial is in the band and none is worth making: the trials ran out, the planned
    /// budget is already 1 (reissue everything), or the band lies inside a jump of the
    /// rate, the bracket around it having shrunk to a thousandth of the multiplier. The
    /// trial given is the one that spent most within the band's high end (or, if every
    /// trial spent more, the one that spent least).
    Stuck(usize),
}

/// The most a multiplier moves in one step before the band is bracketed, picked by
/// hand: far enough to cross a 2x underspend in one step, near enough that a rate far
/// from proportional to the planned budget is not overshot wildly.
const MAX_STEP: f64 = 4.0;

/// A secant step inside a bracket is kept this fraction of its width away from either
/// end (picked by hand), so that a bracket around a steep rise still shrinks.
const SECANT_GUARD: f64 = 0.1;

/// The next budget multiplier, given the trials so far as (multiplier, measured reissue
/// rate) pairs, for `budget` and `adapt`'s band. Pure and deterministic, so that a live
/// front end can take one step per period of its own records.
///
/// The search (tailor's; see [`adapt_reissue`]) aims at the band's middle:
/// - the first trial is the plan for the budget itself (multiplier 1);
/// - until the band is bracketed (a trial below it at a smaller multiplier than one
///   above it), the rate is taken as a power of the multiplier: proportional after one
///   trial (the next multiplier is its times target / rate, at most 4x away), then with
///   the exponent read from the two trials nearest the band on that side (at most 16x a
///   step);
/// - once bracketed, a secant step between the bracket's ends (regula falsi), kept a
///   tenth of the bracket inside it, or the midpoint when the last two trials fell on
///   the same side of the band (which keeps one-sided secant steps from stalling).
pub fn next_multiplier(budget: f64, adapt: AdaptParams, trials: &[(f64, f64)]) -> AdaptStep {
    let Some(&(last_m, _)) = trials.last() else {
        return AdaptStep::Try(1.0);
    };
    if budget <= 0.0 {
        // Nothing to spend: the plan reissues nothing whatever it is planned for.
        return AdaptStep::Done(trials.len() - 1);
    }
    let (low, high) = (adapt.band.0 * budget, adapt.band.1 * budget);
    let target = 0.5 * (low + high);
    if let Some(i) = trials.iter().position(|&(_, r)| (low..=high).contains(&r)) {
        return AdaptStep::Done(i);
    }
    let stuck = || {
        let best = (0..trials.len())
            .filter(|&i| trials[i].1 <= high)
            .max_by(|&a, &b| trials[a].1.total_cmp(&trials[b].1))
            .or_else(|| (0..trials.len()).min_by(|&a, &b| trials[a].1.total_cmp(&trials[b].1)));
        AdaptStep::Stuck(best.expect("at least one trial"))
    };
    if trials.len() >= adapt.max_trials {
        return stuck();
    }
    let max_m = 1.0 / budget;
    // The least multiplier that overspent, and the largest below it that underspent.
    let above = trials
        .iter()
        .filter(|&&(_, r)| r > high)
        .min_by(|a, b| a.0.total_cmp(&b.0))
        .copied();
    let below = trials
        .iter()
        .filter(|&&(m, r)| r < low && above.is_none_or(|(m_hi, _)| m < m_hi))
        .max_by(|a, b| a.0.total_cmp(&b.0))
        .copied();
    // Before the band is bracketed: the rate taken as a power of the multiplier, its
    // exponent read from the two trials nearest the band on this side (1, proportional,
    // while there is only one), the step at most MAX_STEP^2 (MAX_STEP for the first).
    let proportional = |(m, r): (f64, f64)| {
        if r <= 0.0 {
            return m * MAX_STEP;
        }
        let side_of = |t: &(f64, f64)| (t.1 > high) == (r > high) && t.0 != m && t.1 > 0.0;
        let neighbour = trials
            .iter()
            .filter(|t| side_of(t))
            .min_by(|a, b| (a.0 / m).ln().abs().total_cmp(&(b.0 / m).ln().abs()));
        let power = neighbour
            .map(|&(m2, r2)| (r / r2).ln() / (m / m2).ln())
            .filter(|k| k.is_finite() && *k > 0.05)
            .unwrap_or(1.0);
        let reach = if neighbour.is_some() {
            MAX_STEP * MAX_STEP
        } else {
            MAX_STEP
        };
        m * (target / r).powf(1.0 / power).clamp(1.0 / reach, reach)
    };
    let next = match (below, above) {
        (Some((m_lo, r_lo)), Some((m_hi, r_hi))) => {
            let width = m_hi - m_lo;
            if width <= 1e-3 * m_hi {
                return stuck();
            }
            let side = |r: f64| r > high;
            let same_side = trials.len() >= 2 && {
                let n = trials.len();
                side(trials[n - 1].1) == side(trials[n - 2].1)
            };
            if same_side {
                m_lo + 0.5 * width
            } else {
                let secant = m_lo + (target - r_lo) * width / (r_hi - r_lo);
                secant.clamp(m_lo + SECANT_GUARD * width, m_hi - SECANT_GUARD * width)
            }
        }
        (Some(lo), None) => {
            if lo.0 >= max_m {
                return stuck();
            }
            proportional(lo).min(max_m)
        }
        (None, Some(hi)) => proportional(hi),
        (None, None) => unreachable!("a trial outside the band is below or above it"),
    };
    // A step that lands on a multiplier already tried (the cap) ends the search.
    if trials.iter().any(|&(m, _)| m == next) || next == last_m {
        return stuck();
    }
    AdaptStep::Try(next)
}

/// Plans SingleR, as [`plan_reissue`], so that the reissue the plan causes, measured by
/// `measure`, spends the budget: within `adapt.band` of it.
///
/// Why: a plan spends exactly the budget on the log it came from, but its reissues
/// change the load and so the response times. Under fan-out with stalls, reissues drain
/// a stalled replica's queue, fewer requests stay unanswered at d, and the plan made
/// from a log without reissue underspends (2.6% of a 5% budget at 60% utilization,
/// issue #39), leaving tail latency unrescued.
///
/// How: the plan is made from the same log for a planned budget of m x `params.budget`,
/// and m is searched by [`next_multiplier`] until the rate `measure` reports is in the
/// band; `measure` runs a plan (the binary passes a fan-out simulation; a live front end
/// would log a period under it) and is called at most `adapt.max_trials` times, never
/// twice for the same (d, q). The planned budget is capped at 1.
///
/// Kaler, He and Elnikety (SPAA 2017) say in their abstract that they apply iterative
/// adaptation for systems with load-dependent queueing delays: plan, run under the plan,
/// log, plan again (what scripts/fanout-experiments.py's `--iterations` does, from logs
/// under the plan, by Kaplan-Meier). That loop does not aim at the budget: on the
/// shard-sized work of docs/fanout.md it spent 5.0-5.3% of a 5% budget. The search on
/// the budget multiplier, with its band, is tailor's own; the paper's body was not
/// available to us, so whether it adjusts the budget as well is not known.
pub fn adapt_reissue<E: From<ReissueError>>(
    answered_ms: &[f64],
    censored_ms: &[f64],
    params: ReissueParams,
    adapt: AdaptParams,
    mut measure: impl FnMut(&ReissuePlan) -> Result<Measured, E>,
) -> Result<AdaptedPlan, E> {
    let k = check(answered_ms, censored_ms, params)?;
    let (low, high) = adapt.band;
    if !(low > 0.0 && low <= high && high <= 1.0) {
        return Err(ReissueError::BadParameter(format!(
            "the adaptation's band must be fractions of the budget with 0 < low <= high <= 1, \
             found {low}:{high}"
        ))
        .into());
    }
    if adapt.max_trials == 0 {
        return Err(
            ReissueError::BadParameter("the adaptation needs at least one trial".into()).into(),
        );
    }
    let e = Empirical::kaplan_meier(answered_ms, censored_ms);
    let (samples, censored) = (answered_ms.len() + censored_ms.len(), censored_ms.len());
    let mut trials: Vec<ReissueTrial> = Vec::new();
    loop {
        let points: Vec<(f64, f64)> = trials
            .iter()
            .map(|t| (t.multiplier, t.measured.reissue_rate))
            .collect();
        match next_multiplier(params.budget, adapt, &points) {
            AdaptStep::Try(multiplier) => {
                let planned = ReissueParams {
                    budget: (multiplier * params.budget).min(1.0),
                    ..params
                };
                let plan = plan_on(&e, k, planned, samples, censored)?;
                let measured = match trials
                    .iter()
                    .find(|t| t.plan.d_ms == plan.d_ms && t.plan.q == plan.q)
                {
                    Some(same) => same.measured,
                    None => measure(&plan)?,
                };
                trials.push(ReissueTrial {
                    multiplier,
                    plan,
                    measured,
                });
            }
            AdaptStep::Done(chosen) => {
                return Ok(AdaptedPlan {
                    trials,
                    chosen,
                    within_band: true,
                })
            }
            AdaptStep::Stuck(chosen) => {
                return Ok(AdaptedPlan {
                    trials,
                    chosen,
                    within_band: false,
                })
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// Runs [`next_multiplier`] against a synthetic rate function of the multiplier;
    /// returns the final step and the multipliers tried.
    fn search(budget: f64, rate: impl Fn(f64) -> f64) -> (AdaptStep, Vec<(f64, f64)>) {
        let mut trials = Vec::new();
        loop {
            match next_multiplier(budget, AdaptParams::default(), &trials) {
                AdaptStep::Try(m) => trials.push((m, rate(m))),
                step => return (step, trials),
            }
        }
    }

    #[test]
    fn the_budget_search_brackets_and_lands_in_the_band() {
        let b = 0.05;
        // Rate proportional to the planned budget, at 52% of it (issue #39 at 60%): one
        // proportional step lands in the middle of the band.
        let (step, trials) = search(b, |m| 0.52 * b * m);
        assert_eq!(step, AdaptStep::Done(1), "{trials:?}");
        assert_eq!(trials[0].0, 1.0);
        assert!((trials[1].1 - 0.95 * b).abs() < 1e-12, "{trials:?}");
        // Overspending: the search goes down.
        let (step, trials) = search(b, |m| 1.3 * b * m);
        assert_eq!(step, AdaptStep::Done(1), "{trials:?}");
        assert!(trials[1].0 < 1.0);
        // Far from proportional (a rate that saturates, then rises steeply): the first
        // step overshoots, then secant and bisection steps inside the bracket.
        let rate = |m: f64| b * (0.3 * m.min(2.0) + 2.0 * (m - 2.0).max(0.0));
        let (step, trials) = search(b, rate);
        let AdaptStep::Done(i) = step else {
            panic!("{step:?} {trials:?}")
        };
        assert!((0.9 * b..=b).contains(&trials[i].1), "{trials:?}");
        assert!(trials.len() <= 8, "{trials:?}");
        // Once the band is bracketed, every multiplier tried lies inside the bracket.
        let first_above = trials.iter().position(|t| t.1 > b).unwrap();
        for i in first_above + 1..trials.len() {
            let lo = trials[..i].iter().filter(|t| t.1 < 0.9 * b).map(|t| t.0);
            let hi = trials[..i].iter().filter(|t| t.1 > b).map(|t| t.0);
            let (lo, hi) = (lo.fold(0.0, f64::max), hi.fold(f64::INFINITY, f64::min));
            assert!(trials[i].0 > lo && trials[i].0 < hi, "{i}: {trials:?}");
        }
    }

    #[test]
    fn the_budget_search_reports_a_band_it_cannot_reach() {
        let b = 0.05;
        // The rate jumps over the band at m = 1.5: the bracket shrinks around the jump
        // and the best plan within the budget is kept.
        let (step, trials) = search(b, |m| if m < 1.5 { 0.8 * b } else { 1.2 * b });
        let AdaptStep::Stuck(i) = step else {
            panic!("{step:?} {trials:?}")
        };
        assert_eq!(trials[i].1, 0.8 * b);
        assert!(trials.len() <= AdaptParams::default().max_trials);
        // A rate that never reaches the band: the planned budget stops at 1.
        let (step, trials) = search(b, |m| (0.1 * b * m).min(0.5 * b));
        assert!(matches!(step, AdaptStep::Stuck(_)), "{trials:?}");
        assert!(trials.iter().all(|t| t.0 <= 1.0 / b));
        // Without a budget there is nothing to search.
        let (step, trials) = search(0.0, |_| 0.0);
        assert_eq!((step, trials.len()), (AdaptStep::Done(0), 1));
    }

    /// The whole adaptation on a log, with a "load" that makes every plan spend half
    /// what it predicts: the chosen plan is planned for about twice the budget and
    /// measured within the band; no (d, q) is measured twice.
    #[test]
    fn adaptation_plans_for_the_budget_the_load_leaves() {
        let x: Vec<f64> = (1..=2000).map(|i| 1.0 + f64::from(i % 100) * 0.1).collect();
        let p = ReissueParams {
            budget: 0.05,
            percentile: 99.0,
            shards: 10,
        };
        let mut seen = Vec::new();
        let adapted = adapt_reissue::<ReissueError>(&x, &[], p, AdaptParams::default(), |plan| {
            assert!(!seen.contains(&(plan.d_ms, plan.q)), "measured twice");
            seen.push((plan.d_ms, plan.q));
            Ok(Measured {
                reissue_rate: 0.5 * plan.predicted_rate,
                percentile_ms: f64::NAN,
            })
        })
        .unwrap();
        let chosen = adapted.chosen();
        assert!(adapted.within_band, "{adapted:?}");
        assert!((0.045..=0.05).contains(&chosen.measured.reissue_rate));
        assert!(
            chosen.multiplier > 1.7 && chosen.multiplier < 2.1,
            "{adapted:?}"
        );
        let bad = AdaptParams {
            band: (0.9, 1.1),
            ..AdaptParams::default()
        };
        assert!(matches!(
            adapt_reissue::<ReissueError>(&x, &[], p, bad, |_| unreachable!()),
            Err(ReissueError::BadParameter(_))
        ));
    }

    proptest! {
        /// On any rate that grows with the planned budget as a power of it, from a
        /// tenth to ten times the budget at multiplier 1, the search ends in the band
        /// within its trials, where the band can be reached at all, and never tries a
        /// multiplier twice.
        #[test]
        fn the_search_lands_in_the_band_on_smooth_rising_rates(
            budget in 0.005f64..0.2,
            at_one in 0.1f64..10.0,
            power in 0.3f64..3.0,
        ) {
            let rate = |m: f64| (at_one * budget * m.powf(power)).min(1.0);
            // The band must be reachable with the planned budget at most 1.
            prop_assume!(rate(1.0 / budget) >= 0.9 * budget);
            let (step, trials) = search(budget, rate);
            let AdaptStep::Done(i) = step else {
                return Err(TestCaseError::fail(format!("{step:?} {trials:?}")));
            };
            prop_assert!((0.9 * budget..=budget).contains(&trials[i].1));
            prop_assert!(trials.len() <= AdaptParams::default().max_trials);
            for (k, t) in trials.iter().enumerate() {
                prop_assert!(trials[..k].iter().all(|u| u.0 != t.0), "{:?}", trials);
            }
        }
    }
}
