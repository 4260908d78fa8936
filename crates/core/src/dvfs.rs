//! DVFS cores for issue 42: a table of P-states, the chip they make, and its energy.
//!
//! A P-state is a (relative speed, peak dynamic power) pair, as a core type of Haque's
//! asymmetric-core model is (dissertation, Ch. 5, §5.2.5): dynamic power follows V²f and
//! is about cubic in speed. Here every core can take any P-state, so the chip's peak is
//! `count` cores at the top state, and its static power is [`STATIC_SHARE`] of that peak,
//! charged, as for asymmetric cores, only while a core is busy. That static rule is an
//! open question of issue 42 (a DVFS chip of N big cores has more static power than an
//! asymmetric chip of N - 1 small and one big); it is stated here so that it can change
//! in one place.

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
}

/// `count` cores that each take any of `pstates`.
#[derive(Debug, Clone, PartialEq)]
pub struct DvfsCores {
    /// How many cores.
    pub count: usize,
    /// The states each may take.
    pub pstates: PStates,
}

impl DvfsCores {
    /// The chip's static power: [`STATIC_SHARE`] of its peak, every core at the top state.
    pub fn static_power(&self) -> f64 {
        let dynamic = self.count as f64 * self.pstates.top().power;
        dynamic * STATIC_SHARE / (1.0 - STATIC_SHARE)
    }

    /// Power of a busy core in state `k`: the state's dynamic power and an equal share of
    /// the static power (idle cores power-gated, as `CoreSet::busy_power`).
    pub fn busy_power(&self, k: usize) -> f64 {
        self.pstates.states[k].power + self.static_power() / self.count.max(1) as f64
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
        // busy core at the top draws 8 + 2 = 10 and at (1, 1) draws 3.
        let chip = DvfsCores {
            count: 9,
            pstates: PStates::parse("1:1,2:8").unwrap(),
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
            count: 1,
            pstates: PStates::parse("1:3.2,2:8").unwrap(),
        };
        assert!(!chip.efficient());
    }
}
