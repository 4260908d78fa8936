//! DVFS cores for issue 42: a table of P-states, the chip they make, and its energy.
//!
//! A P-state is a (relative speed, peak dynamic power) pair, as a core type of Haque's
//! asymmetric-core model is (dissertation, Ch. 5, §5.2.5): dynamic power follows V²f and
//! is about cubic in speed. Here every core can take any P-state, so the chip's peak is
//! `count` cores at the top state, and its static power is [`STATIC_SHARE`] of that peak,
//! charged, as for asymmetric cores, only while a core is busy.
//!
//! How a core's share of that static power moves with its P-state is a modelling choice
//! ([`StaticRule`]): `voltage` (the default) scales it with the state's voltage, taken as
//! proportional to speed (leakage power is V × leakage current, and V tracks f, the
//! assumption that makes dynamic power cubic); `fixed` keeps it, as the asymmetric-core
//! model gives every core the same share whatever its size. docs/dvfs.md shows why the
//! choice decides how DVFS compares with asymmetric cores.

use std::sync::Arc;

use crate::control::EetlPlan;
use crate::error::SpecError;
use crate::hetero::{energy_of, CoreType, STATIC_SHARE};

/// The most P-states a table may have.
pub const MAX_PSTATES: usize = 16;

/// A core's P-states, slowest first.
#[derive(Debug, Clone, PartialEq)]
pub struct PStates {
    states: Vec<CoreType>,
}

impl PStates {
    /// Parses `--pstates S1:P1,S2:P2,...` (shared/spec/cli.md): speed and peak dynamic
    /// power of each state, relative to a speed-1 core's. States are sorted by speed;
    /// a speed given twice, a speed or power not above 0, or a faster state that does
    /// not draw more power is refused.
    pub fn parse(text: &str) -> Result<PStates, SpecError> {
        let bad = |reason: String| SpecError::syntax("--pstates", text, reason);
        let mut states = Vec::new();
        for state in text.split(',') {
            let (speed, power) = state
                .trim()
                .split_once(':')
                .ok_or_else(|| bad(format!("{:?} is not SPEED:POWER", state.trim())))?;
            let number = |v: &str, what: &str| {
                v.trim()
                    .parse::<f64>()
                    .ok()
                    .filter(|x| x.is_finite() && *x > 0.0 && *x <= 1e6)
                    .ok_or_else(|| bad(format!("{what} {:?} must be a number above 0", v.trim())))
            };
            states.push(CoreType {
                speed: number(speed, "speed")?,
                power: number(power, "power")?,
            });
        }
        if states.len() > MAX_PSTATES {
            return Err(bad(format!("at most {MAX_PSTATES} P-states")));
        }
        states.sort_by(|a, b| a.speed.total_cmp(&b.speed));
        for pair in states.windows(2) {
            if pair[0].speed == pair[1].speed {
                return Err(bad(format!("speed {} is given twice", pair[0].speed)));
            }
            if pair[1].power <= pair[0].power {
                return Err(bad(format!(
                    "speed {} draws no more power than speed {}: a faster state costs more",
                    pair[1].speed, pair[0].speed
                )));
            }
        }
        Ok(PStates { states })
    }

    /// The states, slowest first.
    pub fn states(&self) -> &[CoreType] {
        &self.states
    }

    /// The fastest state.
    pub fn top(&self) -> CoreType {
        *self.states.last().expect("a table has at least one state")
    }

    /// The canonical `S:P,...` form, slowest first: what plan files store and compare.
    pub fn spec(&self) -> String {
        self.states
            .iter()
            .map(|s| format!("{}:{}", s.speed, s.power))
            .collect::<Vec<_>>()
            .join(",")
    }

    /// The states' speeds, slowest first.
    pub fn speeds(&self) -> Vec<f64> {
        self.states.iter().map(|s| s.speed).collect()
    }
}

/// How a busy core's share of the chip's static power depends on its P-state.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub enum StaticRule {
    /// The same share in every state, as every core type gets the same share on
    /// asymmetric cores (`CoreSet::busy_power`).
    Fixed,
    /// The share times the state's speed over the top's: leakage power is voltage times
    /// leakage current, and voltage is taken to track frequency (the same assumption
    /// that makes dynamic power cubic). The default.
    #[default]
    Voltage,
    /// `busy:W`: every busy core pays W in every state, whatever the chip's peak: for
    /// comparing with another chip at its static power per core (an asymmetric chip's
    /// 8@1,1@2 pays 4/9).
    Busy(f64),
}

impl StaticRule {
    /// Parses `fixed`, `voltage` or `busy:W` (`--static-power`).
    pub fn parse(text: &str) -> Result<StaticRule, SpecError> {
        let bad = |why: &str| SpecError::syntax("--static-power", text, why);
        match text.split_once(':') {
            None if text == "fixed" => Ok(StaticRule::Fixed),
            None if text == "voltage" => Ok(StaticRule::Voltage),
            Some(("busy", w)) => w
                .parse::<f64>()
                .ok()
                .filter(|w| w.is_finite() && *w >= 0.0 && *w <= 1e6)
                .map(StaticRule::Busy)
                .ok_or_else(|| bad("busy:W needs a power W of 0 or more")),
            _ => Err(bad("expected fixed, voltage or busy:W")),
        }
    }

    /// The rule's name, as `parse` reads it.
    pub fn name(self) -> String {
        match self {
            StaticRule::Fixed => "fixed".into(),
            StaticRule::Voltage => "voltage".into(),
            StaticRule::Busy(w) => format!("busy:{w}"),
        }
    }
}

/// `count` cores that each take any of `pstates`.
#[derive(Debug, Clone, PartialEq)]
pub struct DvfsCores {
    /// How many cores.
    pub count: usize,
    /// The states each may take.
    pub pstates: PStates,
    /// How static power follows the state.
    pub static_rule: StaticRule,
}

impl DvfsCores {
    /// `count` cores of `pstates` under the default static rule.
    pub fn new(count: usize, pstates: PStates) -> DvfsCores {
        DvfsCores {
            count,
            pstates,
            static_rule: StaticRule::default(),
        }
    }

    /// The chip's static power: [`STATIC_SHARE`] of its peak, every core at the top state.
    pub fn static_power(&self) -> f64 {
        let dynamic = self.count as f64 * self.pstates.top().power;
        dynamic * STATIC_SHARE / (1.0 - STATIC_SHARE)
    }

    /// Power of a busy core in state `k`: the state's dynamic power and its share of the
    /// static power (an equal share under [`StaticRule::Fixed`]; idle cores are
    /// power-gated, as `CoreSet::busy_power`).
    pub fn busy_power(&self, k: usize) -> f64 {
        let state = self.pstates.states[k];
        let share = self.static_power() / self.count.max(1) as f64;
        state.power
            + match self.static_rule {
                StaticRule::Fixed => share,
                StaticRule::Voltage => share * state.speed / self.pstates.top().speed,
                StaticRule::Busy(w) => w,
            }
    }

    /// The least energy per unit of work any state gives, over the top state's: a floor
    /// on what slowing down can save against running at the top (the acceptance's "at
    /// most 0.6x `max`" is checked against it in docs/dvfs.md).
    pub fn energy_floor(&self) -> f64 {
        let per_work = |k: usize| self.busy_power(k) / self.pstates.states[k].speed;
        let top = per_work(self.pstates.states.len() - 1);
        (0..self.pstates.states.len())
            .map(per_work)
            .fold(f64::INFINITY, f64::min)
            / top
    }

    /// Energy of a run from its busy core-ms in each state.
    pub fn energy(&self, busy_ms: &[f64]) -> f64 {
        energy_of(busy_ms, |k| self.busy_power(k))
    }

    /// Work-ms per ms with every core at the top state.
    pub fn capacity(&self) -> f64 {
        self.count as f64 * self.pstates.top().speed
    }

    /// Whether a slower state always costs less energy per unit of work (busy power over
    /// speed rising with speed): what a slow-to-fast threshold planner assumes. With a
    /// large static share, racing to finish can win instead.
    pub fn efficient(&self) -> bool {
        let per_work: Vec<f64> = (0..self.pstates.states.len())
            .map(|k| self.busy_power(k) / self.pstates.states[k].speed)
            .collect();
        per_work.windows(2).all(|w| w[0] < w[1])
    }
}

/// Whether a DVFS policy sets each core's state or one state for the whole chip.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Scope {
    /// Each core its own state (a per-core voltage regulator).
    PerCore,
    /// One state for every core (one clock domain).
    AllCore,
}

/// A DVFS policy by its `POLICY` name (shared/spec/cli.md, §DVFS).
#[derive(Debug, Clone, PartialEq)]
pub enum DvfsPolicy {
    /// `eetl-dvfs:TARGET_MS`: a request starts at the slowest state and its core steps up
    /// a state each time its age passes a threshold z · t*, z set by EETL's controller
    /// (needs `--table` from `tailor plan eetl --pstates`).
    EetlDvfs(Arc<EetlPlan>),
    /// `tl-dvfs`: every threshold 0, so every request runs at the top state.
    TlDvfs,
    /// `s2f-dvfs:T1[:T2...]`: fixed age thresholds, one per faster state.
    Fixed(Vec<f64>),
    /// `pegasus:TARGET_MS`: one state for the chip, set by Pegasus's feedback on the
    /// measured tail (Lo et al., ISCA 2014).
    Pegasus(f64),
    /// `schedutil`: one state for the chip, 1.25 × top × PELT utilization.
    Schedutil,
    /// `max`: always the top state.
    Max,
}

/// The names and forms [`DvfsPolicy::parse`] accepts.
pub const DVFS_POLICY_FORMS: &str =
    "eetl-dvfs:TARGET_MS, tl-dvfs, s2f-dvfs:T1[:T2...], pegasus:TARGET_MS, schedutil, max";

impl DvfsPolicy {
    /// Whether `spec` names a DVFS policy.
    pub fn is_dvfs_policy(spec: &str) -> bool {
        matches!(spec, "tl-dvfs" | "schedutil" | "max")
            || ["eetl-dvfs", "s2f-dvfs", "pegasus"]
                .iter()
                .any(|p| spec.split(':').next() == Some(p))
    }

    /// Parses a policy; `eetl-dvfs` takes `plan` (from `--table`), which must be for
    /// P-states and for the same target.
    pub fn parse(spec: &str, plan: Option<&Arc<EetlPlan>>) -> Result<DvfsPolicy, SpecError> {
        let bad = |reason: String| SpecError::syntax("policy", spec, reason);
        let target = |text: &str| -> Result<f64, SpecError> {
            let t = crate::s2f::parse_ms(spec, text, "target")?;
            if t > 0.0 {
                Ok(t)
            } else {
                Err(bad("the target must be above 0 ms".into()))
            }
        };
        Ok(match spec.split_once(':') {
            None => match spec {
                "tl-dvfs" => DvfsPolicy::TlDvfs,
                "schedutil" => DvfsPolicy::Schedutil,
                "max" => DvfsPolicy::Max,
                "eetl-dvfs" | "pegasus" => {
                    return Err(bad(format!("needs a target: {spec}:TARGET_MS")))
                }
                _ => return Err(bad(format!("expected one of {DVFS_POLICY_FORMS}"))),
            },
            Some(("eetl-dvfs", t)) => {
                let t = target(t)?;
                let plan = plan.cloned().ok_or_else(|| {
                    bad("needs --table FILE from `tailor plan eetl --pstates`".into())
                })?;
                if plan.pstates.is_none() {
                    return Err(bad(
                        "the table was planned for core types, not P-states; plan one with                          `tailor plan eetl --pstates`"
                            .into(),
                    ));
                }
                if (plan.target_ms - t).abs() > 1e-9 * t.max(1.0) {
                    return Err(bad(format!(
                        "the table was planned for a {} ms target, not {t} ms; plan one for this target",
                        plan.target_ms
                    )));
                }
                DvfsPolicy::EetlDvfs(plan)
            }
            Some(("pegasus", t)) => DvfsPolicy::Pegasus(target(t)?),
            Some(("s2f-dvfs", list)) => {
                DvfsPolicy::Fixed(crate::s2f::parse_thresholds(spec, list)?)
            }
            _ => return Err(bad(format!("expected one of {DVFS_POLICY_FORMS}"))),
        })
    }

    /// The policy's name for summaries.
    pub fn name(&self) -> String {
        match self {
            DvfsPolicy::EetlDvfs(p) => format!("eetl-dvfs:{}", p.target_ms),
            DvfsPolicy::TlDvfs => "tl-dvfs".into(),
            DvfsPolicy::Fixed(t) => format!("s2f-dvfs:{}", crate::s2f::join_thresholds(t)),
            DvfsPolicy::Pegasus(t) => format!("pegasus:{t}"),
            DvfsPolicy::Schedutil => "schedutil".into(),
            DvfsPolicy::Max => "max".into(),
        }
    }

    /// Per-core or all-core control.
    pub fn scope(&self) -> Scope {
        match self {
            DvfsPolicy::Pegasus(_) | DvfsPolicy::Schedutil => Scope::AllCore,
            _ => Scope::PerCore,
        }
    }

    /// The slow-to-fast policy whose thresholds drive this one's per-core states
    /// ([`crate::ThresholdControl`]), for `eetl-dvfs`, `tl-dvfs` and `s2f-dvfs`.
    pub fn thresholds_policy(&self) -> Option<crate::HeteroPolicy> {
        match self {
            DvfsPolicy::EetlDvfs(plan) => Some(crate::HeteroPolicy::Eetl(plan.clone())),
            DvfsPolicy::TlDvfs => Some(crate::HeteroPolicy::Rtl),
            DvfsPolicy::Fixed(t) => Some(crate::HeteroPolicy::Fixed(t.clone())),
            _ => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_table_is_sorted_and_bad_ones_are_refused_with_the_reason() {
        let p = PStates::parse("2:8, 1:1,1.5:3.375").unwrap();
        let speeds: Vec<f64> = p.states().iter().map(|s| s.speed).collect();
        assert_eq!(speeds, vec![1.0, 1.5, 2.0]);
        assert_eq!(p.top().power, 8.0);
        for (text, why) in [
            ("1:1,1:2", "given twice"),
            ("1:1,2:1", "no more power"),
            ("0:1", "above 0"),
            ("1:-1", "above 0"),
            ("1", "not SPEED:POWER"),
            ("1:x", "above 0"),
        ] {
            let e = PStates::parse(text).unwrap_err().to_string();
            assert!(e.contains(why) && e.contains("--pstates"), "{text}: {e}");
        }
    }

    #[test]
    fn static_power_is_a_fifth_of_the_chips_peak() {
        // 9 cores whose top state is (2, 8): peak dynamic 72, static 72 / 4 = 18, so a
        // busy core at the top draws 8 + 2 = 10 and, with a fixed share, 3 at (1, 1).
        let chip = DvfsCores {
            static_rule: StaticRule::Fixed,
            ..DvfsCores::new(9, PStates::parse("1:1,2:8").unwrap())
        };
        assert!((chip.static_power() - 18.0).abs() < 1e-12);
        assert!((chip.busy_power(1) - 10.0).abs() < 1e-12);
        assert!((chip.busy_power(0) - 3.0).abs() < 1e-12);
        assert!((chip.energy(&[10.0, 5.0]) - 80.0).abs() < 1e-12);
        assert_eq!(chip.capacity(), 18.0);
        // Per unit of work: 3 slow, 5 fast: slower is cheaper.
        assert!(chip.efficient());
    }

    #[test]
    fn a_voltage_floor_can_make_the_slow_state_the_costlier() {
        // (1, 3.2) and (2, 8) on 1 core: static 2, so 5.2 per work slow, 5 fast.
        let chip = DvfsCores {
            static_rule: StaticRule::Fixed,
            ..DvfsCores::new(1, PStates::parse("1:3.2,2:8").unwrap())
        };
        assert!(!chip.efficient());
    }

    #[test]
    fn under_a_fixed_static_share_a_cubic_table_saves_at_most_four_tenths() {
        // Per unit of work, (s³ + s_top³/4) / s is least at s = s_top / 2, where it is
        // 0.6 of the top's: no cubic table does better, whatever its states.
        let chip = DvfsCores {
            static_rule: StaticRule::Fixed,
            ..DvfsCores::new(9, PStates::parse("0.5:0.125,1:1,1.5:3.375,2:8").unwrap())
        };
        assert!((chip.energy_floor() - 0.6).abs() < 1e-12);
        // With static power following voltage (the default), (1 + 1) / 1 against
        // (8 + 2) / 2.
        let chip = DvfsCores::new(9, PStates::parse("1:1,2:8").unwrap());
        assert_eq!(chip.static_rule, StaticRule::Voltage);
        assert!((chip.busy_power(0) - 2.0).abs() < 1e-12);
        assert!((chip.busy_power(1) - 10.0).abs() < 1e-12);
        assert!((chip.energy_floor() - 0.4).abs() < 1e-12);
        assert_eq!(StaticRule::parse("voltage").unwrap(), StaticRule::Voltage);
        assert!(StaticRule::parse("leaky")
            .unwrap_err()
            .to_string()
            .contains("--static-power"));
    }

    #[test]
    fn policies_round_trip_and_name_what_is_missing() {
        for name in [
            "tl-dvfs",
            "schedutil",
            "max",
            "pegasus:200",
            "s2f-dvfs:40:80",
        ] {
            assert!(DvfsPolicy::is_dvfs_policy(name), "{name}");
            assert_eq!(DvfsPolicy::parse(name, None).unwrap().name(), name);
        }
        assert!(!DvfsPolicy::is_dvfs_policy("eetl:200"));
        assert!(!DvfsPolicy::is_dvfs_policy("maximal"));
        assert!(DvfsPolicy::is_dvfs_policy("eetl-dvfs:200"));
        assert_eq!(
            DvfsPolicy::parse("pegasus:200", None).unwrap().scope(),
            Scope::AllCore
        );
        assert_eq!(
            DvfsPolicy::parse("max", None).unwrap().scope(),
            Scope::PerCore
        );
        for (spec, why) in [
            ("eetl-dvfs:200", "--table"),
            ("pegasus", "needs a target"),
            ("pegasus:0", "above 0"),
            ("s2f-dvfs:80:40", "must not decrease"),
            ("turbo", "expected one of"),
        ] {
            let e = DvfsPolicy::parse(spec, None).unwrap_err().to_string();
            assert!(e.contains(why), "{spec}: {e}");
        }
    }
}
