//! The thresholds of a heterogeneous-core run over time: fixed, or set each control epoch by EETL, Reactive or an open-loop schedule.
//!
//! Shared by the simulator and a live runtime: both report arrivals and completions with
//! times in ms, and read the current thresholds. Haque's dissertation, §5.2.4: the tail
//! is the p99 of the last 2000 requests, which is also the control epoch; §5.1.2: a load
//! estimator picks the gain set (and, in tailor, feeds the operating point forward,
//! docs/as2f.md).

use std::collections::VecDeque;
use std::sync::Arc;

use crate::control::{EetlController, EetlPlan, Reactive, RISE_WINDOWS};
use crate::hetero::CoreSet;
use crate::s2f::HeteroPolicy;
use crate::summary::{exact_quantile, EpochStats};

/// Arrivals the load estimator's longest window averages over.
pub const LOAD_WINDOW: usize = RISE_WINDOWS[0].0;

enum Kind {
    Fixed,
    Eetl(Arc<EetlPlan>, EetlController),
    Reactive(usize, Reactive),
    OpenLoop(usize, Vec<Vec<f64>>, usize),
}

/// A run's thresholds and the epoch bookkeeping that moves them.
pub struct ThresholdControl {
    kind: Kind,
    thresholds: Vec<f64>,
    window: Vec<f64>,
    epoch_start: f64,
    epoch_arrivals: usize,
    recent: VecDeque<f64>,
    epochs: Vec<EpochStats>,
}

impl ThresholdControl {
    /// The control of a threshold policy on `cores`, or
    /// `None` for the policies without thresholds (Oblivious, RC). `open_loop` (window,
    /// thresholds per epoch, the last held) overrides the policy's, for identifying the
    /// plant. Errors name what does not fit the cores.
    pub fn new(
        policy: &HeteroPolicy,
        cores: &CoreSet,
        open_loop: Option<(usize, Vec<Vec<f64>>)>,
    ) -> Result<Option<ThresholdControl>, String> {
        let speeds: Vec<f64> = cores.types().iter().map(|t| t.speed).collect();
        if let HeteroPolicy::Eetl(plan) | HeteroPolicy::Reactive(_, plan) = policy {
            let planned = CoreSet::parse(&plan.cores).map(|c| c.spec());
            if plan.pstates.is_some() || planned.as_deref() != Ok(cores.spec().as_str()) {
                return Err(format!(
                    "the eetl plan is for cores {}, not {}; plan one for these cores",
                    plan.cores,
                    cores.spec()
                ));
            }
        }
        Self::with_levels(policy, &speeds, open_loop)
    }

    /// The control of a slow-to-fast policy on `cores` DVFS cores, its levels their
    /// P-states (issue 42): `eetl-dvfs` needs a plan for the same count and P-states.
    pub fn for_dvfs(
        policy: &HeteroPolicy,
        cores: &crate::DvfsCores,
        open_loop: Option<(usize, Vec<Vec<f64>>)>,
    ) -> Result<Option<ThresholdControl>, String> {
        if let HeteroPolicy::Eetl(plan) | HeteroPolicy::Reactive(_, plan) = policy {
            let planned = plan
                .pstates
                .as_deref()
                .and_then(|p| crate::PStates::parse(p).ok())
                .map(|p| p.spec());
            let default = crate::StaticRule::default().name();
            let rule = plan.static_power.as_deref().unwrap_or(&default);
            let planned_rule = crate::StaticRule::parse(rule).map(|r| r.name());
            let same = plan.cores.trim() == cores.count.to_string()
                && planned.as_deref() == Some(cores.pstates.spec().as_str())
                && planned_rule.as_deref() == Ok(cores.static_rule.name().as_str());
            if !same {
                return Err(format!(
                    "the eetl plan is for cores {} with P-states {} and static power {rule}, \
                     not {} with {} and {}; plan one for these cores",
                    plan.cores,
                    plan.pstates.as_deref().unwrap_or("(none)"),
                    cores.count,
                    cores.pstates.spec(),
                    cores.static_rule.name()
                ));
            }
        }
        Self::with_levels(policy, &cores.pstates.speeds(), open_loop)
    }

    fn with_levels(
        policy: &HeteroPolicy,
        speeds: &[f64],
        open_loop: Option<(usize, Vec<Vec<f64>>)>,
    ) -> Result<Option<ThresholdControl>, String> {
        let n = speeds.len().saturating_sub(1);
        let (kind, thresholds) = match open_loop {
            Some((window, steps)) => {
                if window == 0 || steps.is_empty() || steps.iter().any(|t| t.len() != n) {
                    return Err(format!(
                        "an open-loop schedule needs a window and {n} thresholds per epoch"
                    ));
                }
                let first = steps[0].clone();
                (Kind::OpenLoop(window, steps, 0), first)
            }
            None => {
                let Some(start) = policy.initial_thresholds(speeds.len())? else {
                    return Ok(None);
                };
                match policy {
                    HeteroPolicy::Eetl(plan) => {
                        let c = EetlController::new(plan, 1.0);
                        let t = start.iter().map(|x| x * c.z()).collect();
                        (Kind::Eetl(plan.clone(), c), t)
                    }
                    HeteroPolicy::Reactive(target, plan) => (
                        Kind::Reactive(plan.window, Reactive::new(*target, start.clone(), speeds)),
                        start,
                    ),
                    _ => (Kind::Fixed, start),
                }
            }
        };
        Ok(Some(ThresholdControl {
            kind,
            thresholds,
            window: Vec::new(),
            epoch_start: 0.0,
            epoch_arrivals: 0,
            recent: VecDeque::new(),
            epochs: Vec::new(),
        }))
    }

    /// The current thresholds, ms, one per faster core type.
    pub fn thresholds(&self) -> &[f64] {
        &self.thresholds
    }

    /// The epochs closed so far.
    pub fn epochs(&self) -> &[EpochStats] {
        &self.epochs
    }

    /// An arrival at `now_ms`. Returns whether the thresholds changed (EETL's load
    /// feedforward).
    pub fn on_arrival(&mut self, now_ms: f64) -> bool {
        self.epoch_arrivals += 1;
        let Kind::Eetl(plan, c) = &mut self.kind else {
            return false;
        };
        self.recent.push_back(now_ms);
        if self.recent.len() > LOAD_WINDOW {
            self.recent.pop_front();
        }
        let have = self.recent.len();
        // Every full window's estimate, longest first; any of them may trigger a rise.
        // The first estimate of a run is the shortest window's, after its 50 arrivals.
        let last = self.recent[have - 1];
        let mut changed = None;
        for (n, margin) in RISE_WINDOWS {
            if n > have {
                continue;
            }
            let first = self.recent[have - n];
            if last > first {
                let rps = (n - 1) as f64 * 1000.0 / (last - first);
                changed = c.on_load(plan, rps, margin).or(changed);
            }
        }
        match changed {
            Some(z) => {
                self.thresholds = plan.thresholds_ms.iter().map(|t| t * z).collect();
                true
            }
            None => false,
        }
    }

    /// A completion at `now_ms` of a request that took `latency_ms`. Returns whether the
    /// thresholds changed (an epoch closed).
    pub fn on_completion(&mut self, now_ms: f64, latency_ms: f64) -> bool {
        let window = match &self.kind {
            Kind::Fixed => return false,
            Kind::Eetl(plan, _) => plan.window,
            Kind::Reactive(w, _) | Kind::OpenLoop(w, _, _) => *w,
        };
        self.window.push(latency_ms);
        if self.window.len() < window {
            return false;
        }
        let p99 = exact_quantile(&self.window, 0.99);
        let span = (now_ms - self.epoch_start).max(1e-9);
        let rps = self.epoch_arrivals as f64 * 1000.0 / span;
        self.thresholds = match &mut self.kind {
            Kind::Fixed => unreachable!("returned above"),
            Kind::Eetl(plan, c) => {
                let z = c.update(plan, p99, rps);
                plan.thresholds_ms.iter().map(|t| t * z).collect()
            }
            Kind::Reactive(_, r) => r.update(p99).to_vec(),
            Kind::OpenLoop(_, steps, next) => {
                *next = (*next + 1).min(steps.len() - 1);
                steps[*next].clone()
            }
        };
        self.epochs.push(EpochStats {
            time_ms: now_ms,
            p99_ms: p99,
            rps_estimate: rps,
            thresholds_ms: self.thresholds.clone(),
        });
        self.window.clear();
        self.epoch_start = now_ms;
        self.epoch_arrivals = 0;
        true
    }

    /// The epochs, for the run summary.
    pub fn into_epochs(self) -> Vec<EpochStats> {
        self.epochs
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::control::{GainSet, EETL_PLAN_KIND};
    use rand_distr::{Distribution, Exp};

    /// Three load intervals (below 75, 75-125, above), steady z 0.7, 0.3 and 0, and an
    /// integral gain that brings z back to 1 within two epochs of a tail half the setpoint.
    fn three_intervals() -> (HeteroPolicy, CoreSet) {
        let gain = |rps_below, rps_tuned, z_steady| GainSet {
            rps_below,
            rps_tuned,
            kp: 0.0,
            ki: 1.0,
            kd: 0.0,
            model_a: 0.0,
            model_b: 1.0,
            z_steady,
        };
        let plan = EetlPlan {
            kind: EETL_PLAN_KIND.into(),
            target_ms: 25.0,
            setpoint_ms: 25.0,
            cores: "1@1,1@2".into(),
            pstates: None,
            static_power: None,
            thresholds_ms: vec![20.0],
            z_max: 1.0,
            window: 2000,
            gains: vec![
                gain(Some(75.0), 50.0, 0.7),
                gain(Some(125.0), 100.0, 0.3),
                gain(None, 150.0, 0.0),
            ],
        };
        (
            HeteroPolicy::Eetl(Arc::new(plan)),
            CoreSet::parse("1@1,1@2").unwrap(),
        )
    }

    /// Feeds Poisson arrivals at each (rps, count) in turn, each completing at once with
    /// a tail half the setpoint; returns the arrival indices at which the thresholds moved
    /// between epochs, and the thresholds after each arrival.
    fn drive(phases: &[(f64, usize)], seed: u64) -> (Vec<usize>, Vec<f64>) {
        let (policy, cores) = three_intervals();
        let mut c = ThresholdControl::new(&policy, &cores, None)
            .unwrap()
            .unwrap();
        let mut rng = crate::seeded_rng(seed);
        let (mut now, mut fired, mut trace) = (0.0, Vec::new(), Vec::new());
        for &(rps, count) in phases {
            let gap = Exp::new(rps / 1000.0).unwrap();
            for _ in 0..count {
                now += gap.sample(&mut rng);
                if c.on_arrival(now) {
                    fired.push(trace.len());
                }
                c.on_completion(now, 12.5);
                trace.push(c.thresholds()[0]);
            }
        }
        (fired, trace)
    }

    #[test]
    fn a_run_starts_at_its_loads_operating_point_after_50_arrivals() {
        // z = 1 (threshold 20) until the shortest window fills, then the steady z of the
        // estimate's interval: 0.7 at 50 rps, 0 at 150.
        let (_, trace) = drive(&[(50.0, 100)], 1);
        assert_eq!(trace[RISE_WINDOWS[3].0 - 2], 20.0);
        assert!(
            (trace[RISE_WINDOWS[3].0 - 1] - 14.0).abs() < 1e-9,
            "{trace:?}"
        );
        let (_, trace) = drive(&[(150.0, 100)], 1);
        assert_eq!(trace[RISE_WINDOWS[3].0 - 1], 0.0);
    }

    #[test]
    fn a_load_rise_is_fed_forward_within_a_short_window() {
        // 50 rps, then 150: the shorter windows see the rise into the middle interval
        // (z 0.3) within 150 arrivals, where the 500-arrival window alone took about 310;
        // the busiest interval (z 0) comes within 500.
        for seed in 1..=20 {
            let (_, trace) = drive(&[(50.0, 5000), (150.0, 1000)], seed);
            let after = &trace[5000..];
            let middle = after.iter().position(|&t| t <= 0.3 * 20.0 + 1e-9).unwrap();
            let busiest = after.iter().position(|&t| t == 0.0).unwrap();
            assert!(middle < 150, "seed {seed}: z 0.3 after {middle} arrivals");
            assert!(busiest < 500, "seed {seed}: z 0 after {busiest} arrivals");
        }
    }

    #[test]
    fn a_load_on_an_interval_bound_seldom_fires_the_feedforward() {
        // 75 rps sits on the first bound: each epoch's estimate falls either side of it,
        // and a window's scatter above it must not fire too often. Far from any bound
        // (50 rps) it never fires after the run's start.
        let epochs = 200;
        let (fired, _) = drive(&[(75.0, 2000 * epochs)], 7);
        let late: Vec<_> = fired.iter().filter(|&&i| i >= 2000).collect();
        assert!(
            late.len() <= epochs / 10,
            "{} of {epochs} epochs fired",
            late.len()
        );
        let (fired, _) = drive(&[(50.0, 2000 * epochs)], 7);
        assert!(fired.iter().all(|&i| i < 2000), "{fired:?}");
    }

    #[test]
    fn fixed_thresholds_never_move_and_open_loop_steps_each_epoch() {
        let two = CoreSet::parse("1@1,1@2").unwrap();
        let mut c = ThresholdControl::new(&HeteroPolicy::Fixed(vec![30.0]), &two, None)
            .unwrap()
            .unwrap();
        for i in 0..5000 {
            assert!(!c.on_completion(i as f64, 10.0));
        }
        assert_eq!(c.thresholds(), &[30.0]);
        let steps = vec![vec![1.0], vec![2.0], vec![3.0]];
        let mut c = ThresholdControl::new(&HeteroPolicy::Ee, &two, Some((2, steps)))
            .unwrap()
            .unwrap();
        assert_eq!(c.thresholds(), &[1.0]);
        assert!(!c.on_completion(1.0, 5.0));
        assert!(c.on_completion(2.0, 7.0));
        assert_eq!(c.thresholds(), &[2.0]);
        c.on_completion(3.0, 5.0);
        c.on_completion(4.0, 5.0);
        c.on_completion(5.0, 5.0);
        c.on_completion(6.0, 5.0);
        assert_eq!(c.thresholds(), &[3.0]);
        let e = c.into_epochs();
        assert_eq!(e.len(), 3);
        assert_eq!(e[0].p99_ms, 7.0);
        // Policies without thresholds have no control.
        assert!(ThresholdControl::new(&HeteroPolicy::Oblivious, &two, None)
            .unwrap()
            .is_none());
        assert!(ThresholdControl::new(&HeteroPolicy::Ee, &two, Some((2, vec![vec![]]))).is_err());
    }
}
