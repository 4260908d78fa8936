//! EETL's feedback control of the slow-to-fast thresholds: gain-scheduled PID, the plan file it reads, and the Reactive heuristic.
//!
//! Haque's dissertation, Chapter 5:
//! - §5.1.2: the controller's input is the measured tail latency's error against the
//!   target, its output the migration threshold; one PID gain set per load interval
//!   (gain scheduling), picked by a load estimator (Fig. 5.2, Table 5.1);
//! - §5.1.4: with N core types the thresholds are z · t*, t* solving the low-load problem
//!   of Fig. 5.3, and the controller sets the one variable z;
//! - §5.2.4: the tail is the p99 over the last 2000 requests, which is also the epoch;
//! - §5.3.4: Reactive, the comparison heuristic.
//!
//! tailor's PID runs in velocity form on the relative error e = (p99 - target) / target,
//! once per epoch: Δz = -(Kp (e_k - e_{k-1}) + Ki e_k + Kd (e_k - 2 e_{k-1} + e_{k-2})),
//! then z is clamped to [0, z_max] (which also stops integral wind-up). The gains come
//! from `tailor plan eetl` (docs/as2f.md says how they are tuned).

use std::io::{self, Write};
use std::path::Path;

use serde::{Deserialize, Serialize};

use crate::csvfile::read_text;
use crate::error::{Location, ReadError, ReadErrorKind};
use crate::table::parse_json;

/// The `kind` of an EETL plan file.
pub const EETL_PLAN_KIND: &str = "eetl-controller";

/// One load interval's PID gains.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct GainSet {
    /// The interval holds estimated loads below this (requests per second); `None` for
    /// the last, which holds everything above the previous bound.
    pub rps_below: Option<f64>,
    /// The load its gains were tuned at (the interval's mid-point, §5.1.2).
    pub rps_tuned: f64,
    /// Proportional gain.
    pub kp: f64,
    /// Integral gain.
    pub ki: f64,
    /// Derivative gain.
    pub kd: f64,
    /// The identified first-order plant, y_k = a y_{k-1} + b z_{k-1} + c, per epoch.
    pub model_a: f64,
    /// Its input gain (relative p99 per unit of z).
    pub model_b: f64,
    /// The z at which the model's steady state meets the setpoint, clamped to
    /// [0, z_max]; the controller drops to it when the load moves into this interval.
    pub z_steady: f64,
}

/// What `tailor plan eetl` writes: the low-load thresholds and the gain schedule.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct EetlPlan {
    /// Always [`EETL_PLAN_KIND`].
    pub kind: String,
    /// The tail-latency target, ms.
    pub target_ms: f64,
    /// The p99 the controller steers each window to, ms: the target less a margin, so
    /// that the tail over many windows stays within the target.
    pub setpoint_ms: f64,
    /// The cores planned for, as `COUNT@SPEED,...`, or a count of DVFS cores.
    pub cores: String,
    /// For DVFS cores (`plan eetl --pstates`): their P-states, `S:P,...` slowest first;
    /// the thresholds are then one per faster state. Absent for core types.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pstates: Option<String>,
    /// For DVFS cores: the static-power rule planned with (the default, `voltage`, when
    /// absent).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub static_power: Option<String>,
    /// t*: the low-load thresholds (Fig. 5.3), one per faster core type, ms.
    pub thresholds_ms: Vec<f64>,
    /// The largest z the controller may set.
    pub z_max: f64,
    /// Requests per measurement window and control epoch (§5.2.4: 2000).
    pub window: usize,
    /// The gain schedule, by increasing load.
    pub gains: Vec<GainSet>,
}

impl EetlPlan {
    /// The index of the gain set for an estimated load.
    pub fn interval_of(&self, rps: f64) -> usize {
        self.gains
            .iter()
            .position(|g| g.rps_below.is_none_or(|b| rps < b))
            .unwrap_or(self.gains.len() - 1)
    }

    /// The gains for an estimated load.
    pub fn gains_for(&self, rps: f64) -> &GainSet {
        &self.gains[self.interval_of(rps)]
    }

    /// Reads and checks a plan file.
    pub fn read(path: &Path) -> Result<Self, ReadError> {
        Self::parse(&read_text(path)?, &path.display().to_string())
    }

    /// Parses and checks plan JSON; `file` names it in errors.
    pub fn parse(text: &str, file: &str) -> Result<Self, ReadError> {
        let invalid = |field: String, why: String| {
            ReadError::new(
                Location::file(file).with_field(field),
                ReadErrorKind::Invalid(why),
            )
        };
        let plan: EetlPlan = parse_json(text, file)?;
        if plan.kind != EETL_PLAN_KIND {
            return Err(invalid(
                "kind".into(),
                format!("expected {EETL_PLAN_KIND:?}, found {:?}", plan.kind),
            ));
        }
        let finite = |field: &str, v: f64, min: f64| {
            if v.is_finite() && v >= min {
                Ok(())
            } else {
                Err(invalid(
                    field.into(),
                    format!("must be finite and >= {min}, found {v}"),
                ))
            }
        };
        finite("target_ms", plan.target_ms, f64::MIN_POSITIVE)?;
        finite("z_max", plan.z_max, 0.0)?;
        finite("setpoint_ms", plan.setpoint_ms, f64::MIN_POSITIVE)?;
        if plan.setpoint_ms > plan.target_ms {
            return Err(invalid(
                "setpoint_ms".into(),
                format!("must not exceed target_ms ({})", plan.target_ms),
            ));
        }
        if plan.window == 0 {
            return Err(invalid("window".into(), "must be at least 1".into()));
        }
        if plan.thresholds_ms.is_empty() {
            return Err(invalid(
                "thresholds_ms".into(),
                "needs at least one threshold".into(),
            ));
        }
        for (i, t) in plan.thresholds_ms.iter().enumerate() {
            finite(&format!("thresholds_ms[{i}]"), *t, 0.0)?;
            if i > 0 && *t < plan.thresholds_ms[i - 1] {
                return Err(invalid(
                    format!("thresholds_ms[{i}]"),
                    "thresholds must not decrease".into(),
                ));
            }
        }
        if let Some(spec) = &plan.pstates {
            let states = crate::PStates::parse(spec)
                .map_err(|e| invalid("pstates".into(), e.to_string()))?;
            if states.states().len() != plan.thresholds_ms.len() + 1 {
                return Err(invalid(
                    "thresholds_ms".into(),
                    format!(
                        "{} P-states need {} thresholds, found {}",
                        states.states().len(),
                        states.states().len() - 1,
                        plan.thresholds_ms.len()
                    ),
                ));
            }
        }
        if plan.gains.is_empty() {
            return Err(invalid(
                "gains".into(),
                "needs at least one gain set".into(),
            ));
        }
        for (i, g) in plan.gains.iter().enumerate() {
            for (name, v) in [
                ("kp", g.kp),
                ("ki", g.ki),
                ("kd", g.kd),
                ("model_a", g.model_a),
                ("z_steady", g.z_steady),
            ] {
                if !v.is_finite() {
                    return Err(invalid(
                        format!("gains[{i}].{name}"),
                        format!("must be finite, found {v}"),
                    ));
                }
            }
            if let Some(b) = g.rps_below.filter(|b| !(b.is_finite() && *b > 0.0)) {
                return Err(invalid(
                    format!("gains[{i}].rps_below"),
                    format!("must be a positive number, found {b}"),
                ));
            }
            let last = i + 1 == plan.gains.len();
            if g.rps_below.is_none() != last {
                return Err(invalid(
                    format!("gains[{i}].rps_below"),
                    "every interval but the last needs a bound, and the last has none".into(),
                ));
            }
            if let (Some(b), Some(Some(prev))) =
                (g.rps_below, (i > 0).then(|| plan.gains[i - 1].rps_below))
            {
                if b <= prev {
                    return Err(invalid(
                        format!("gains[{i}].rps_below"),
                        "load intervals must increase".into(),
                    ));
                }
            }
        }
        Ok(plan)
    }

    /// Writes the plan as pretty JSON with a final newline.
    pub fn write(&self, mut out: impl Write) -> io::Result<()> {
        serde_json::to_writer_pretty(&mut out, self)?;
        writeln!(out)
    }
}

/// The input levels of an identification experiment, as fractions of t*.
pub const IDENTIFY_LEVELS: [f64; 5] = [0.0, 0.25, 0.5, 0.75, 1.0];

/// The open-loop experiment that identifies the plant (§5.1.2, tailor's version): z for
/// each of `epochs` epochs, each draw from [`IDENTIFY_LEVELS`] held two epochs, in an
/// order seeded by `seed`. The simulator's identification (`tailor plan eetl`) and a
/// live one (`tailor run --open-loop`) run the same schedule.
pub fn identify_schedule(seed: u64, epochs: usize) -> Vec<f64> {
    let mut state = seed ^ 0x4545_544C;
    (0..epochs)
        .map(|k| {
            if k % 2 == 0 {
                state = state
                    .wrapping_mul(6_364_136_223_846_793_005)
                    .wrapping_add(1_442_695_040_888_963_407);
            }
            IDENTIFY_LEVELS[((state >> 33) % IDENTIFY_LEVELS.len() as u64) as usize]
        })
        .collect()
}

/// The load estimator's windows, longest first: (arrivals averaged over, how far above a
/// load interval's lower bound that window's estimate must be to trigger the feedforward
/// into the interval). The shortest window's first estimate, after 50 arrivals, is the
/// run's first. A shorter window sees a rise sooner but scatters more, so it needs a
/// wider margin; each margin makes a Poisson load sitting exactly on a bound fire falsely
/// in about 1-3% of 2000-arrival epochs (docs/as2f.md, section 5; tested in `epochs`).
pub const RISE_WINDOWS: [(usize, f64); 4] = [(500, 0.15), (200, 0.3), (100, 0.5), (50, 0.9)];

/// EETL's gain-scheduled PID on z (§5.1.2, §5.1.4).
#[derive(Debug, Clone)]
pub struct EetlController {
    target_ms: f64,
    z: f64,
    z_max: f64,
    errors: [f64; 2],
    /// The gain set the last load estimate fell in.
    interval: Option<usize>,
}

impl EetlController {
    /// Starts at z = `z0` (1 is the low-load solution).
    pub fn new(plan: &EetlPlan, z0: f64) -> Self {
        EetlController {
            target_ms: plan.setpoint_ms,
            z: z0.clamp(0.0, plan.z_max),
            z_max: plan.z_max,
            errors: [0.0; 2],
            interval: None,
        }
    }

    /// The current z.
    pub fn z(&self) -> f64 {
        self.z
    }

    /// A new load estimate, between epochs, from a window that needs `margin` (one of
    /// [`RISE_WINDOWS`]). When it is in a busier load interval than the last epoch's
    /// estimate (or the last rise's), and at least `margin` above that interval's lower
    /// bound, z drops to the interval's `z_steady` if it is above it (a feedforward of
    /// the scheduled operating point; docs/as2f.md). It fires into an interval at most
    /// once until an epoch's estimate re-arms it. The first estimate of a run, before
    /// any epoch, places z the same way in whichever interval it falls, whatever the
    /// margin. Returns the new z when it changed.
    pub fn on_load(&mut self, plan: &EetlPlan, rps: f64, margin: f64) -> Option<f64> {
        let i = plan.interval_of(rps);
        if let Some(armed) = self.interval {
            if i <= armed {
                return None;
            }
            let lower = plan.gains[i - 1].rps_below.unwrap_or(0.0);
            if rps < lower * (1.0 + margin) {
                return None;
            }
        }
        self.interval = Some(i);
        let steady = plan.gains[i].z_steady;
        if self.z > steady {
            self.z = steady.clamp(0.0, self.z_max);
            return Some(self.z);
        }
        None
    }

    /// One epoch: the window's p99 and the estimated load in; the new z out. The error
    /// is taken against the plan's setpoint.
    pub fn update(&mut self, plan: &EetlPlan, p99_ms: f64, rps: f64) -> f64 {
        let g = plan.gains_for(rps);
        self.interval = Some(plan.interval_of(rps));
        let e = (p99_ms - self.target_ms) / self.target_ms;
        let [e1, e2] = self.errors;
        let dz = g.kp * (e - e1) + g.ki * e + g.kd * (e - 2.0 * e1 + e2);
        self.z = (self.z - dz).clamp(0.0, self.z_max);
        self.errors = [e, e1];
        self.z
    }
}

/// Reactive (§5.3.4): lower the slowest-level threshold still above zero while the tail
/// is over the target, each by s e / (s - 1) with s the speed ratio into that level;
/// raise them back, fastest level first and never above where they started, while it
/// is under.
#[derive(Debug, Clone)]
pub struct Reactive {
    target_ms: f64,
    start: Vec<f64>,
    thresholds: Vec<f64>,
    /// Speed ratio of core type k + 1 over type k, for each threshold k.
    ratios: Vec<f64>,
}

impl Reactive {
    /// Starts at `start` thresholds; `speeds` are the core types' speeds, slowest first.
    pub fn new(target_ms: f64, start: Vec<f64>, speeds: &[f64]) -> Self {
        let ratios = speeds.windows(2).map(|w| w[1] / w[0]).collect();
        Reactive {
            target_ms,
            thresholds: start.clone(),
            start,
            ratios,
        }
    }

    /// The current thresholds.
    pub fn thresholds(&self) -> &[f64] {
        &self.thresholds
    }

    /// One epoch: the window's p99 in; the new thresholds out.
    pub fn update(&mut self, p99_ms: f64) -> &[f64] {
        let e = p99_ms - self.target_ms;
        let step = |ratio: f64| ratio * e.abs() / (ratio - 1.0).max(1e-9);
        if e > 0.0 {
            if let Some(k) = (0..self.thresholds.len()).find(|&k| self.thresholds[k] > 0.0) {
                self.thresholds[k] = (self.thresholds[k] - step(self.ratios[k])).max(0.0);
            }
        } else if e < 0.0 {
            if let Some(k) = (0..self.thresholds.len())
                .rev()
                .find(|&k| self.thresholds[k] < self.start[k])
            {
                self.thresholds[k] = (self.thresholds[k] + step(self.ratios[k])).min(self.start[k]);
            }
        }
        &self.thresholds
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn the_identification_schedule_holds_each_level_two_epochs_and_visits_several() {
        let z = super::identify_schedule(1, 40);
        assert_eq!(z.len(), 40);
        assert!(z.chunks(2).all(|p| p[0] == p[1]));
        assert!(z.iter().all(|v| super::IDENTIFY_LEVELS.contains(v)));
        let mut seen = z.clone();
        seen.sort_by(f64::total_cmp);
        seen.dedup();
        assert!(seen.len() >= 3, "{seen:?}");
        assert_eq!(z, super::identify_schedule(1, 40));
        assert_ne!(z, super::identify_schedule(2, 40));
    }

    use super::*;

    fn plan() -> EetlPlan {
        EetlPlan {
            kind: EETL_PLAN_KIND.into(),
            target_ms: 100.0,
            setpoint_ms: 100.0,
            cores: "8@1,1@2".into(),
            pstates: None,
            static_power: None,
            thresholds_ms: vec![40.0],
            z_max: 1.0,
            window: 2000,
            gains: vec![
                GainSet {
                    rps_below: Some(20.0),
                    rps_tuned: 10.0,
                    kp: 0.0,
                    ki: 0.5,
                    kd: 0.0,
                    model_a: 0.0,
                    model_b: 1.0,
                    z_steady: 1.0,
                },
                GainSet {
                    rps_below: None,
                    rps_tuned: 30.0,
                    kp: 0.1,
                    ki: 1.0,
                    kd: 0.0,
                    model_a: 0.0,
                    model_b: 0.5,
                    z_steady: 0.4,
                },
            ],
        }
    }

    #[test]
    fn gains_follow_the_load_estimate() {
        let p = plan();
        assert_eq!(p.gains_for(5.0).ki, 0.5);
        assert_eq!(p.gains_for(25.0).ki, 1.0);
        assert_eq!(p.gains_for(500.0).ki, 1.0);
    }

    #[test]
    fn over_the_target_lowers_z_and_under_raises_it_within_bounds() {
        let p = plan();
        let mut c = EetlController::new(&p, 1.0);
        // 20% over at low load: Ki 0.5 lowers z by 0.1.
        assert!((c.update(&p, 120.0, 10.0) - 0.9).abs() < 1e-12);
        // Far under: z rises but stops at z_max.
        for _ in 0..10 {
            c.update(&p, 10.0, 10.0);
        }
        assert_eq!(c.z(), 1.0);
        // Far over: z stops at 0.
        for _ in 0..10 {
            c.update(&p, 1000.0, 30.0);
        }
        assert_eq!(c.z(), 0.0);
    }

    /// The longest window's margin.
    const M: f64 = RISE_WINDOWS[0].1;

    #[test]
    fn a_rise_into_a_busier_interval_drops_z_to_its_steady_state() {
        let p = plan();
        let mut c = EetlController::new(&p, 1.0);
        c.update(&p, 100.0, 10.0);
        // Just past the 20 rps bound is not enough; 15% past it is, but not for a short
        // window, which needs 90%.
        assert_eq!(c.on_load(&p, 21.0, M), None);
        assert_eq!(c.on_load(&p, 30.0, RISE_WINDOWS[3].1), None);
        assert_eq!(c.on_load(&p, 30.0, M), Some(0.4));
        // Falling back does not raise it; the integral does that.
        assert_eq!(c.on_load(&p, 10.0, M), None);
        assert_eq!(c.z(), 0.4);
        // It fires once until an epoch re-arms it.
        c.z = 0.9;
        assert_eq!(c.on_load(&p, 30.0, M), None);
        c.update(&p, 100.0, 10.0);
        assert_eq!(c.on_load(&p, 30.0, M), Some(0.4));
    }

    #[test]
    fn the_first_load_estimate_starts_z_at_its_intervals_steady_state() {
        let mut p = plan();
        p.gains[0].z_steady = 0.7;
        // Low load: interval 0's operating point, then nothing until an epoch.
        let mut c = EetlController::new(&p, 1.0);
        assert_eq!(c.on_load(&p, 10.0, M), Some(0.7));
        assert_eq!(c.on_load(&p, 10.0, M), None);
        // Busy from the start: the busier interval's, even on its bound.
        let mut c = EetlController::new(&p, 1.0);
        assert_eq!(c.on_load(&p, 20.5, M), Some(0.4));
        // Never raised: a start below the operating point stays.
        let mut c = EetlController::new(&p, 0.2);
        assert_eq!(c.on_load(&p, 10.0, M), None);
        assert_eq!(c.z(), 0.2);
    }

    #[test]
    fn plan_files_round_trip_and_bad_ones_are_named() {
        let p = plan();
        let mut text = Vec::new();
        p.write(&mut text).unwrap();
        let text = String::from_utf8(text).unwrap();
        assert_eq!(EetlPlan::parse(&text, "p.json").unwrap(), p);
        let bad = text.replace("\"window\": 2000", "\"window\": 0");
        let err = EetlPlan::parse(&bad, "p.json").unwrap_err().to_string();
        assert!(err.contains("p.json") && err.contains("window"), "{err}");
        let bad = text.replace("40.0\n  ]", "-1.0\n  ]");
        assert!(EetlPlan::parse(&bad, "p.json").is_err());
    }

    #[test]
    fn reactive_lowers_the_slow_level_first_and_restores_the_fast_level_first() {
        // Medium 1.5x the slow core: 1 ms of error moves the first threshold by 3 ms.
        let mut r = Reactive::new(100.0, vec![10.0, 40.0], &[1.0, 1.5, 2.0]);
        r.update(101.0);
        assert_eq!(r.thresholds(), &[7.0, 40.0]);
        r.update(110.0);
        assert_eq!(r.thresholds(), &[0.0, 40.0]);
        // Now the fast level, 2/1.5 = 1.33x: 1 ms moves it by 4 ms.
        r.update(101.0);
        assert!((r.thresholds()[1] - 36.0).abs() < 1e-9);
        // Under the target: the fast level comes back first, capped at its start.
        r.update(50.0);
        assert_eq!(r.thresholds(), &[0.0, 40.0]);
        r.update(99.0);
        assert_eq!(r.thresholds(), &[3.0, 40.0]);
    }
}
