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

use crate::dvfs::PStates;

/// PELT's half-life in ms: y^32 = 1/2 with 1 ms periods.
pub const PELT_HALF_LIFE_MS: f64 = 32.0;
/// schedutil's headroom: a CPU is given 1.25 times the speed its utilization asks for.
pub const SCHEDUTIL_HEADROOM: f64 = 1.25;
/// schedutil's default minimum time between speed changes, in ms (intel_pstate's 500 us).
pub const SCHEDUTIL_RATE_LIMIT_MS: f64 = 0.5;
/// Ages within this of a threshold count as past it (the simulator's float slack).
const AGE_TOLERANCE_MS: f64 = 1e-9;

/// The P-state (index into the table, slowest first) for a request of age `age_ms` under
/// slow-to-fast thresholds, ascending: one step up for each threshold passed, at most the
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
    fn schedutil_changes_at_most_once_per_rate_limit() {
        assert_eq!(schedutil_decide(0, 2, (10.0, 9.8), 0.5), 0);
        assert_eq!(schedutil_decide(0, 2, (10.3, 9.8), 0.5), 2);
        assert_eq!(schedutil_decide(1, 1, (100.0, 0.0), 0.5), 1);
    }
}
