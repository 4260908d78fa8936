//! Speed decisions for DVFS cores (issue 42), as pure code shared by the simulator and the
//! runtime: the slow-to-fast P-state for a request's age, and Linux's schedutil governor.
//!
//! - **Slow-to-fast by age.** EETL on asymmetric cores moves a request to a faster core
//!   once its age passes each threshold (Haque's dissertation, §5.1.3, Algorithm 2); on DVFS
//!   cores the request stays and its core steps up a P-state instead.
//! - **schedutil** (kernel/sched/cpufreq_schedutil.c, `get_next_freq`): the next frequency
//!   is 1.25 × the top frequency × utilization (the tipping point is utilization 0.8),
//!   resolved to the lowest available frequency at or above it; utilization is PELT's, a
//!   geometric average whose weight halves every 32 ms; changes are at least a rate limit
//!   apart (`rate_limit_us`; intel_pstate's 500 µs by default).
//! - **Pegasus** (Lo, Cheng, Govindaraju, Barroso and Kozyrakis, "Towards Energy
//!   Proportionality for Large-Scale Latency-Critical Workloads", ISCA 2014, §5): a
//!   feedback controller that sets every core's power limit from measured latency against
//!   the target, with the rule table of [`Pegasus::decide`].

use std::collections::VecDeque;

use crate::dvfs::PStates;
use crate::hetero::AGE_TOLERANCE_MS;
use crate::summary::exact_quantile;

/// PELT's half-life in ms: y^32 = 1/2 with 1 ms periods.
pub const PELT_HALF_LIFE_MS: f64 = 32.0;
/// schedutil's headroom: a CPU is given 1.25 times the speed its utilization asks for.
pub const SCHEDUTIL_HEADROOM: f64 = 1.25;
/// schedutil's default minimum time between speed changes, in ms (intel_pstate's 500 us).
pub const SCHEDUTIL_RATE_LIMIT_MS: f64 = 0.5;

/// The P-state (index into the table, slowest first) for a request of age `age_ms` under
/// slow-to-fast thresholds, ascending (ages within [`AGE_TOLERANCE_MS`] below a threshold
/// count as past it, as on asymmetric cores, so that a crossing scheduled at arrival +
/// threshold is seen then despite rounding): one step up for each threshold passed, at most the
/// top. All zeros (`tl-dvfs`) is the top state from the start.
pub fn pstate_for_age(age_ms: f64, thresholds_ms: &[f64], states: usize) -> usize {
    let passed = thresholds_ms
        .iter()
        .filter(|&&t| age_ms + AGE_TOLERANCE_MS >= t)
        .count();
    passed.min(states.saturating_sub(1))
}

/// PELT's utilization after `dt_ms` more of running at `running` (1 busy, 0 idle, or the
/// busy share in between) from `before`: the geometric average in closed form.
pub fn pelt(before: f64, running: f64, dt_ms: f64) -> f64 {
    let keep = (-dt_ms.max(0.0) / PELT_HALF_LIFE_MS).exp2();
    running + (before - running) * keep
}

/// The state schedutil asks for at utilization `util` (already frequency-invariant, in
/// [0, 1] of the top speed): the slowest state at least 1.25 × top speed × util, or the top.
pub fn schedutil_target(pstates: &PStates, util: f64) -> usize {
    let states = pstates.states();
    let want = SCHEDUTIL_HEADROOM * pstates.top().speed * util.clamp(0.0, 1.0);
    states
        .iter()
        .position(|s| s.speed >= want - 1e-12)
        .unwrap_or(states.len() - 1)
}

/// schedutil's rate limit: the state to run at `now_ms`, given the current state, the
/// target and when the state last changed. A change sooner than `rate_limit_ms` after the
/// last waits.
pub fn schedutil_decide(
    current: usize,
    target: usize,
    (now_ms, last_change_ms): (f64, f64),
    rate_limit_ms: f64,
) -> usize {
    if target != current && now_ms - last_change_ms >= rate_limit_ms {
        target
    } else {
        current
    }
}

/// How often Pegasus decides, ms. The paper's controller runs every few seconds on a
/// cluster; tailor's single server decides each second.
pub const PEGASUS_PERIOD_MS: f64 = 1000.0;
/// The window of Pegasus's "instantaneous" latency, ms.
pub const PEGASUS_INSTANT_MS: f64 = 5_000.0;
/// The window of its "overall" latency, the SLO's own measure, ms (the paper's 30 s).
pub const PEGASUS_OVERALL_MS: f64 = 30_000.0;
/// How long Pegasus holds maximum power after the overall latency misses, ms (5 minutes).
pub const PEGASUS_HOLD_MS: f64 = 300_000.0;

/// Pegasus's controller: a power budget, as a share of the top state's dynamic power,
/// moved by its rule table each period (Lo et al., ISCA 2014, §5, Table 2), with
/// latency measured as the p99 (the issue asks for the tail; the paper's search SLO is on
/// its own statistic). The chip's state is the fastest whose dynamic power fits the
/// budget, as a RAPL limit would settle; on a cluster it sets every server alike.
#[derive(Debug, Clone)]
pub struct Pegasus {
    target_ms: f64,
    budget: f64,
    floor: f64,
    hold_until_ms: f64,
    /// (finish ms, latency ms) of the completions within the overall window.
    window: VecDeque<(f64, f64)>,
}

impl Pegasus {
    /// A controller for `target_ms` on `pstates`, starting at full power.
    pub fn new(target_ms: f64, pstates: &PStates) -> Pegasus {
        Pegasus {
            target_ms,
            budget: 1.0,
            floor: pstates.states()[0].power / pstates.top().power,
            hold_until_ms: f64::NEG_INFINITY,
            window: VecDeque::new(),
        }
    }

    /// A request finished at `now_ms` after `latency_ms`.
    pub fn on_completion(&mut self, now_ms: f64, latency_ms: f64) {
        self.window.push_back((now_ms, latency_ms));
    }

    /// The budget, a share of the top state's dynamic power.
    pub fn budget(&self) -> f64 {
        self.budget
    }

    /// The rule table at `now_ms`, with X the target, "overall" the p99 over the last
    /// 30 s and "instantaneous" the p99 over the last 5 s:
    ///
    /// | latency | action |
    /// |---|---|
    /// | overall > X | full power, held 5 minutes |
    /// | instantaneous > 1.35 X | full power |
    /// | instantaneous > X | power + 7% |
    /// | 0.85 X ≤ instantaneous ≤ X | keep |
    /// | instantaneous < 0.85 X | power − 1% |
    /// | instantaneous < 0.60 X | power − 3% |
    ///
    /// With no completions in the instantaneous window it keeps the budget. Returns it.
    pub fn decide(&mut self, now_ms: f64) -> f64 {
        while self
            .window
            .front()
            .is_some_and(|&(t, _)| t < now_ms - PEGASUS_OVERALL_MS)
        {
            self.window.pop_front();
        }
        let p99 = |from: f64| {
            let l: Vec<f64> = self
                .window
                .iter()
                .filter(|&&(t, _)| t >= from)
                .map(|&(_, l)| l)
                .collect();
            (!l.is_empty()).then(|| exact_quantile(&l, 0.99))
        };
        let x = self.target_ms;
        let (Some(overall), Some(instant)) = (
            p99(now_ms - PEGASUS_OVERALL_MS),
            p99(now_ms - PEGASUS_INSTANT_MS),
        ) else {
            return self.budget;
        };
        self.budget = if overall > x {
            self.hold_until_ms = now_ms + PEGASUS_HOLD_MS;
            1.0
        } else if now_ms < self.hold_until_ms || instant > 1.35 * x {
            1.0
        } else if instant > x {
            self.budget * 1.07
        } else if instant < 0.60 * x {
            self.budget * 0.97
        } else if instant < 0.85 * x {
            self.budget * 0.99
        } else {
            self.budget
        }
        .clamp(self.floor, 1.0);
        self.budget
    }

    /// The fastest state whose dynamic power is within the budget.
    pub fn state(&self, pstates: &PStates) -> usize {
        let cap = self.budget * pstates.top().power * (1.0 + 1e-9);
        pstates
            .states()
            .iter()
            .rposition(|s| s.power <= cap)
            .unwrap_or(0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn table() -> PStates {
        PStates::parse("1:1,1.5:3.375,2:8").unwrap()
    }

    #[test]
    fn a_request_steps_up_a_state_at_each_threshold() {
        assert_eq!(pstate_for_age(0.0, &[40.0, 80.0], 3), 0);
        assert_eq!(pstate_for_age(39.999, &[40.0, 80.0], 3), 0);
        assert_eq!(pstate_for_age(40.0, &[40.0, 80.0], 3), 1);
        assert_eq!(pstate_for_age(1e6, &[40.0, 80.0], 3), 2);
        // tl-dvfs: zero thresholds, the top at once; more thresholds than steps stop there.
        assert_eq!(pstate_for_age(0.0, &[0.0, 0.0], 3), 2);
        assert_eq!(pstate_for_age(5.0, &[0.0, 1.0, 2.0, 3.0], 3), 2);
    }

    #[test]
    fn pelt_halves_in_32_ms() {
        assert!((pelt(1.0, 0.0, 32.0) - 0.5).abs() < 1e-12);
        assert!((pelt(0.0, 1.0, 64.0) - 0.75).abs() < 1e-12);
        assert!((pelt(0.3, 1.0, 0.0) - 0.3).abs() < 1e-12);
    }

    #[test]
    fn schedutil_asks_for_a_quarter_more_than_its_utilization() {
        let p = table();
        // 0.8 of the top speed is the tipping point: the top state.
        assert_eq!(schedutil_target(&p, 0.8), 2);
        // 0.4 of 2 with headroom is 1.0: the slowest state suffices.
        assert_eq!(schedutil_target(&p, 0.4), 0);
        // 0.5 of 2 with headroom is 1.25: the next state up, 1.5.
        assert_eq!(schedutil_target(&p, 0.5), 1);
        assert_eq!(schedutil_target(&p, 0.0), 0);
        assert_eq!(schedutil_target(&p, 7.0), 2);
    }

    #[test]
    fn pegasus_moves_its_budget_by_the_band_the_tail_falls_in() {
        let p = table();
        let step = |latency: f64| {
            let mut g = Pegasus::new(100.0, &p);
            g.budget = 0.5;
            g.on_completion(0.0, latency);
            g.decide(1.0)
        };
        assert!((step(50.0) - 0.5 * 0.97).abs() < 1e-12);
        assert!((step(70.0) - 0.5 * 0.99).abs() < 1e-12);
        assert!((step(90.0) - 0.5).abs() < 1e-12);
        // Above the target overall as well: full power, and held.
        assert_eq!(step(110.0), 1.0);
        // Between the target and 1.35 of it in the last 5 s, but not over 30 s: +7%.
        let mut g = Pegasus::new(100.0, &p);
        g.budget = 0.5;
        for i in 0..200 {
            g.on_completion(i as f64 * 100.0, 50.0);
        }
        g.on_completion(20_000.0, 120.0);
        g.on_completion(20_001.0, 120.0);
        assert!((g.decide(20_002.0) - 0.5 * 1.07).abs() < 1e-12);
        // The budget never goes below the slowest state's power.
        let mut g = Pegasus::new(100.0, &p);
        for i in 0..1000 {
            g.on_completion(i as f64 * 1000.0, 1.0);
            g.decide(i as f64 * 1000.0 + 1.0);
        }
        assert!((g.budget() - 1.0 / 8.0).abs() < 1e-12);
        assert_eq!(g.state(&p), 0);
    }

    #[test]
    fn pegasus_holds_full_power_five_minutes_after_a_miss() {
        let p = table();
        let mut g = Pegasus::new(100.0, &p);
        g.on_completion(0.0, 500.0);
        assert_eq!(g.decide(1.0), 1.0);
        // Fast completions from then on: no cut until the hold ends.
        let mut t = 40_000.0;
        g.on_completion(t, 1.0);
        assert_eq!(g.decide(t), 1.0);
        t = PEGASUS_HOLD_MS + 2.0;
        g.on_completion(t, 1.0);
        assert!(g.decide(t) < 1.0);
        // With the budget at 0.5, the fastest state within it is 1.5 (3.375 of 8).
        g.budget = 0.5;
        assert_eq!(g.state(&p), 1);
        g.budget = 1.0;
        assert_eq!(g.state(&p), 2);
    }

    #[test]
    fn schedutil_changes_at_most_once_per_rate_limit() {
        assert_eq!(schedutil_decide(0, 2, (10.0, 9.8), 0.5), 0);
        assert_eq!(schedutil_decide(0, 2, (10.3, 9.8), 0.5), 2);
        assert_eq!(schedutil_decide(1, 1, (100.0, 0.0), 0.5), 1);
    }
}
