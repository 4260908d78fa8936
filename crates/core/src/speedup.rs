//! Speedup curves s(d): how much faster a request runs with d threads than with one.

use std::sync::Arc;

use crate::error::SpecError;

/// How many threads a request at degree d keeps busy: the charge behind the FM paper's
/// Eq. 1-2 thread-time and behind the simulator's sharing of cores.
///
/// Haque et al. (ASPLOS 2015, §4.1, Eq. 1-2) charge a request running at degree d for d
/// threads the whole time: its threads are held until it ends. tailor's runtime does not
/// hold them: a request is a list of units, and a thread that finds none left to claim
/// leaves to serve another request. Its request then keeps on average s(d) threads busy
/// (its work over its time at degree d), so parallelism costs only what it adds to the
/// work. `Busy` is that model, a departure from the paper documented in
/// docs/fm-planner.md; `Held` is the paper's and the default.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum ThreadModel {
    /// The paper's charge: d threads for as long as the request runs at degree d.
    #[default]
    Held,
    /// Threads leave when their request has no unit left: s(d) busy threads on
    /// average (at most d).
    Busy,
}

impl ThreadModel {
    /// Parses `held` or `busy`.
    pub fn parse(text: &str) -> Result<ThreadModel, SpecError> {
        match text {
            "held" => Ok(ThreadModel::Held),
            "busy" => Ok(ThreadModel::Busy),
            _ => Err(SpecError::syntax(
                "thread model",
                text,
                "expected held or busy",
            )),
        }
    }

    /// Its name, as [`ThreadModel::parse`] reads it.
    pub fn name(self) -> &'static str {
        match self {
            ThreadModel::Held => "held",
            ThreadModel::Busy => "busy",
        }
    }

    /// The threads a request at `degree` with speedup `speedup` (s(degree)) keeps busy.
    pub fn charge(self, degree: usize, speedup: f64) -> f64 {
        let d = degree.max(1) as f64;
        match self {
            ThreadModel::Held => d,
            ThreadModel::Busy => speedup.min(d),
        }
    }
}

/// A speedup curve. s(1) = 1 always; s(d) for d below 1 is taken as s(1).
#[derive(Debug, Clone, PartialEq)]
pub enum Speedup {
    /// s(d) = d.
    Linear,
    /// Amdahl's law with serial fraction f: s(d) = 1 / (f + (1 - f) / d).
    Amdahl {
        /// The fraction of the work that does not parallelize, in [0, 1].
        serial_fraction: f64,
    },
    /// Explicit values s(1), s(2), ...; degrees past the table keep its last value.
    /// Used both for `table:` curves and for one profiled request's own speedups.
    Table(Arc<[f64]>),
}

impl Speedup {
    /// The speedup at `degree` threads.
    pub fn at(&self, degree: usize) -> f64 {
        let d = degree.max(1);
        match self {
            Speedup::Linear => d as f64,
            Speedup::Amdahl { serial_fraction } => {
                1.0 / (serial_fraction + (1.0 - serial_fraction) / d as f64)
            }
            Speedup::Table(values) => values[(d - 1).min(values.len() - 1)],
        }
    }

    /// A table curve, checking that s(1) = 1 and every value is finite and positive.
    pub fn table(values: Vec<f64>) -> Result<Self, String> {
        if values.is_empty() {
            return Err("a speedup table needs at least S1".into());
        }
        if (values[0] - 1.0).abs() > 1e-9 {
            return Err(format!("S1 must be 1, found {}", values[0]));
        }
        if let Some(v) = values.iter().find(|v| !(v.is_finite() && **v > 0.0)) {
            return Err(format!("speedups must be finite and positive, found {v}"));
        }
        Ok(Speedup::Table(values.into()))
    }

    /// Parses the `SPEEDUP` syntax of shared/spec/cli.md, except `profile`, which the
    /// caller resolves because it depends on the demand (see [`SpeedupSpec`]).
    pub fn parse(spec: &str) -> Result<SpeedupSpec, SpecError> {
        let bad = |reason: String| SpecError::syntax("speedup", spec, reason);
        let forms = "expected linear, amdahl:SERIAL_FRACTION, table:S1,S2,... or profile";
        let (head, rest) = match spec.split_once(':') {
            Some((h, r)) => (h, Some(r)),
            None => (spec, None),
        };
        match (head, rest) {
            ("linear", None) => Ok(SpeedupSpec::Curve(Speedup::Linear)),
            ("profile", None) => Ok(SpeedupSpec::Profile),
            ("amdahl", Some(f)) => {
                let f: f64 = f
                    .parse()
                    .map_err(|_| bad(format!("serial fraction {f:?} is not a number")))?;
                if !(0.0..=1.0).contains(&f) {
                    return Err(bad(format!("serial fraction {f} is not in [0, 1]")));
                }
                Ok(SpeedupSpec::Curve(Speedup::Amdahl { serial_fraction: f }))
            }
            ("table", Some(list)) => {
                let values = list
                    .split(',')
                    .map(|v| {
                        v.trim()
                            .parse::<f64>()
                            .map_err(|_| bad(format!("{v:?} is not a number")))
                    })
                    .collect::<Result<Vec<_>, _>>()?;
                Ok(SpeedupSpec::Curve(Speedup::table(values).map_err(bad)?))
            }
            _ => Err(bad(forms.to_string())),
        }
    }
}

/// A parsed `SPEEDUP` argument: a curve for every request, or each profiled request's own.
#[derive(Debug, Clone, PartialEq)]
pub enum SpeedupSpec {
    /// The same curve for every request.
    Curve(Speedup),
    /// Each request's own speedups from its profile.
    Profile,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn thread_models_charge_held_or_busy_threads() {
        assert_eq!(ThreadModel::Held.charge(4, 2.5), 4.0);
        assert_eq!(ThreadModel::Busy.charge(4, 2.5), 2.5);
        // Superlinear speedups cannot keep more threads busy than the degree.
        assert_eq!(ThreadModel::Busy.charge(2, 2.4), 2.0);
        assert_eq!(ThreadModel::Busy.charge(1, 1.0), 1.0);
        for m in [ThreadModel::Held, ThreadModel::Busy] {
            assert_eq!(ThreadModel::parse(m.name()).unwrap(), m);
        }
        assert!(ThreadModel::parse("hold").is_err());
        assert_eq!(ThreadModel::default(), ThreadModel::Held);
    }

    #[test]
    fn curves_start_at_one() {
        for s in [
            Speedup::Linear,
            Speedup::Amdahl {
                serial_fraction: 0.1,
            },
            Speedup::table(vec![1.0, 1.5, 2.0]).unwrap(),
        ] {
            assert_eq!(s.at(1), 1.0);
            assert_eq!(s.at(0), 1.0);
        }
    }

    #[test]
    fn amdahl_and_table_values() {
        let a = Speedup::Amdahl {
            serial_fraction: 0.1,
        };
        assert!((a.at(4) - 1.0 / (0.1 + 0.9 / 4.0)).abs() < 1e-12);
        let t = Speedup::table(vec![1.0, 1.5, 2.0]).unwrap();
        assert_eq!(t.at(3), 2.0);
        assert_eq!(t.at(9), 2.0);
    }

    #[test]
    fn parses_the_spec_forms() {
        assert_eq!(
            Speedup::parse("linear").unwrap(),
            SpeedupSpec::Curve(Speedup::Linear)
        );
        assert_eq!(Speedup::parse("profile").unwrap(), SpeedupSpec::Profile);
        assert_eq!(
            Speedup::parse("amdahl:0.1").unwrap(),
            SpeedupSpec::Curve(Speedup::Amdahl {
                serial_fraction: 0.1
            })
        );
        assert_eq!(
            Speedup::parse("table:1,1.5,2").unwrap(),
            SpeedupSpec::Curve(Speedup::table(vec![1.0, 1.5, 2.0]).unwrap())
        );
    }

    #[test]
    fn rejects_malformed_specs() {
        for bad in [
            "",
            "fast",
            "amdahl",
            "amdahl:x",
            "amdahl:1.5",
            "table:",
            "table:2,3",
            "table:1,x",
            "table:1,-1",
            "linear:2",
        ] {
            assert!(Speedup::parse(bad).is_err(), "{bad:?} was accepted");
        }
    }
}
