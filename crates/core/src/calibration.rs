//! A machine's calibration: what a request thread really costs there, as the simulator and
//! the planner charge it (the `tailor-calibration` file, docs/calibration.md).
//!
//! The FM paper's model (Haque et al., ASPLOS 2015, §4.1, Eq. 1-2) prices a request at
//! degree d by its isolated speedup s(d) and d held threads; tailor's `busy` model priced
//! it at s(d) threads. Neither charges what a real machine takes: on 16 cores a query
//! costs more under load than alone, a woken thread starts late, and a degree-16 request
//! does not get its isolated speedup (shared/data/live16-2026-11-27). A calibration holds
//! the measured prices:
//!
//! - **units and merge**: a request is `units` units (a count, such as 16 index
//!   segments, or a size in ms, as the synthetic workload cuts them) plus a serial part
//!   run by the thread that finishes the last unit. The serial part of each request is
//!   fitted to its own profiled speedups ([`serial_fraction`]);
//! - **hand-off delay**: a thread handed a request (to start it, or to help) begins
//!   after a delay whose mean grows with the machine's busy threads ([`Curve`]);
//! - **helper cost**: CPU each helper spends before its first unit;
//! - **slowdown**: the factor by which work takes longer when other threads run beside
//!   it, by busy threads per core.
//!
//! `tailor calibrate` measures them from a profile and live SEQ runs (`tailor_plan`);
//! this module holds the file and the pure functions both engines need.

use std::io::{self, Write};
use std::path::Path;

use serde::{Deserialize, Serialize};

use crate::csvfile::read_text;
use crate::error::{Location, ReadError, ReadErrorKind};
use crate::speedup::Speedup;
use crate::table::parse_json;

/// The `kind` of a calibration file.
pub const CALIBRATION_KIND: &str = "tailor-calibration";

/// The most points a curve may have.
const MAX_POINTS: usize = 64;

/// How a request is cut into units.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Units {
    /// A fixed number of units per request (the search workload's index segments).
    Count(usize),
    /// Units of about this many ms of sequential work (the synthetic workload's 0.25 ms).
    UnitMs(f64),
}

impl Units {
    /// The units of a request whose parallel part is `parallel_ms` of sequential work,
    /// and each unit's work: (count, ms). A request with no parallel work has none.
    pub fn split(self, parallel_ms: f64) -> (usize, f64) {
        if parallel_ms <= 0.0 {
            return (0, 0.0);
        }
        let count = match self {
            Units::Count(k) => k.max(1),
            Units::UnitMs(ms) => ((parallel_ms / ms.max(1e-6)).ceil() as usize).max(1),
        };
        (count, parallel_ms / count as f64)
    }

    /// The fraction of its parallel work a request's longest thread does at degree d
    /// when its units are dealt out in rounds: ceil(k / d) / k for k units, 1 / d for
    /// units fine enough to divide evenly.
    fn round_share(self, degree: usize) -> f64 {
        let d = degree.max(1);
        match self {
            Units::Count(k) => {
                let k = k.max(1);
                k.div_ceil(d) as f64 / k as f64
            }
            Units::UnitMs(_) => 1.0 / d as f64,
        }
    }
}

/// A piecewise-linear curve y(x) through measured points, extended along its first and
/// last segments beyond them (a single point gives a constant), never below `floor`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Curve {
    /// (x, y) points with strictly rising x.
    pub points: Vec<[f64; 2]>,
    /// The least value the curve takes.
    pub floor: f64,
}

impl Curve {
    /// A curve through `points` (sorted here by x; points with equal x are averaged).
    pub fn through(mut points: Vec<[f64; 2]>, floor: f64) -> Curve {
        points.sort_by(|a, b| a[0].total_cmp(&b[0]));
        let mut merged: Vec<([f64; 2], usize)> = Vec::new();
        for p in points {
            match merged.last_mut() {
                Some((q, n)) if (q[0] - p[0]).abs() < 1e-12 => {
                    q[1] = (q[1] * *n as f64 + p[1]) / (*n + 1) as f64;
                    *n += 1;
                }
                _ => merged.push((p, 1)),
            }
        }
        Curve {
            points: merged.into_iter().map(|(p, _)| p).collect(),
            floor,
        }
    }

    /// y at `x`.
    pub fn at(&self, x: f64) -> f64 {
        let p = &self.points;
        let y = match p.len() {
            0 => self.floor,
            1 => p[0][1],
            n => {
                // The segment holding x, or the end segment it extends.
                let i = p.partition_point(|q| q[0] <= x).clamp(1, n - 1);
                let (a, b) = (p[i - 1], p[i]);
                a[1] + (b[1] - a[1]) * (x - a[0]) / (b[0] - a[0])
            }
        };
        y.max(self.floor)
    }
}

/// What a calibration was measured from, kept for the record and for people.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct CalibrationSource {
    /// The profile, as given.
    #[serde(default)]
    pub profile: String,
    /// The profile's mean sequential time, ms.
    #[serde(default)]
    pub mean_t1_ms: f64,
    /// The profile's work-weighted speedups s(2), s(4), s(8), s(16) where profiled.
    #[serde(default)]
    pub speedups: Vec<[f64; 2]>,
    /// One line per live run used: its load and what was measured and fitted.
    #[serde(default)]
    pub runs: Vec<CalibrationRun>,
    /// Anything else worth saying (a run left out and why).
    #[serde(default)]
    pub notes: Vec<String>,
}

/// A live run a calibration used.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct CalibrationRun {
    /// Its policy.
    pub policy: String,
    /// Its offered rate, requests per second.
    pub rps: f64,
    /// Busy request threads per core (its `mean_threads` over the cores).
    pub busy: f64,
    /// Its mean time on a thread over the profile's mean: the slowdown.
    pub slowdown: f64,
    /// Its mean latency, ms.
    pub mean_ms: f64,
    /// Its p99, ms.
    pub p99_ms: f64,
    /// The hand-off delay fitted to it, ms.
    pub dispatch_ms: f64,
    /// CPU per request beyond its time on a thread, ms.
    pub overhead_ms: f64,
}

/// A machine's calibration (module docs). Read with [`Calibration::read`].
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Calibration {
    /// Always [`CALIBRATION_KIND`].
    pub kind: String,
    /// The machine's cores.
    pub cores: usize,
    /// How a request is cut into units.
    pub units: Units,
    /// CPU a helper spends before its first unit, ms.
    pub helper_cost_ms: f64,
    /// The mean hand-off delay, ms, by busy request threads per core.
    pub dispatch_ms: Curve,
    /// The slowdown of work, by busy request threads per core.
    pub slowdown: Curve,
    /// SEQ's capacity under concurrency, requests per second: the cores over the mean
    /// sequential time at the slowdown of every core busy.
    pub capacity_rps: f64,
    /// What it was measured from.
    #[serde(default)]
    pub source: CalibrationSource,
}

fn invalid(file: &str, field: &str, reason: String) -> ReadError {
    ReadError::new(
        Location::file(file),
        ReadErrorKind::Invalid(format!("{field}: {reason}")),
    )
}

impl Calibration {
    /// A calibration that charges nothing beyond units and merges: no hand-off delay, no
    /// helper cost, no slowdown.
    pub fn ideal(cores: usize, units: Units) -> Calibration {
        Calibration {
            kind: CALIBRATION_KIND.into(),
            cores,
            units,
            helper_cost_ms: 0.0,
            dispatch_ms: Curve::through(vec![[0.0, 0.0]], 0.0),
            slowdown: Curve::through(vec![[0.0, 1.0]], MIN_SLOWDOWN),
            capacity_rps: 0.0,
            source: CalibrationSource::default(),
        }
    }

    /// Reads and checks a calibration file.
    pub fn read(path: &Path) -> Result<Calibration, ReadError> {
        Self::parse(&read_text(path)?, &path.display().to_string())
    }

    /// Parses and checks calibration JSON; `file` names it in errors.
    pub fn parse(text: &str, file: &str) -> Result<Calibration, ReadError> {
        let c: Calibration = parse_json(text, file)?;
        if c.kind != CALIBRATION_KIND {
            return Err(invalid(
                file,
                "kind",
                format!("expected {CALIBRATION_KIND:?}, found {:?}", c.kind),
            ));
        }
        if c.cores == 0 || c.cores > crate::MAX_CORES {
            return Err(invalid(
                file,
                "cores",
                format!("must be 1 to {}, found {}", crate::MAX_CORES, c.cores),
            ));
        }
        match c.units {
            Units::Count(k) if !(1..=1_000_000).contains(&k) => {
                return Err(invalid(
                    file,
                    "units.count",
                    format!("must be 1 to 1000000, found {k}"),
                ))
            }
            Units::UnitMs(ms) if !(ms.is_finite() && ms >= 1e-3) => {
                return Err(invalid(
                    file,
                    "units.unit_ms",
                    format!("must be at least 0.001 ms, found {ms}"),
                ))
            }
            _ => {}
        }
        if !(c.helper_cost_ms.is_finite() && (0.0..=1000.0).contains(&c.helper_cost_ms)) {
            return Err(invalid(
                file,
                "helper_cost_ms",
                format!("must be 0 to 1000 ms, found {}", c.helper_cost_ms),
            ));
        }
        if !(c.capacity_rps.is_finite() && c.capacity_rps >= 0.0) {
            return Err(invalid(
                file,
                "capacity_rps",
                format!("must be finite and non-negative, found {}", c.capacity_rps),
            ));
        }
        for (name, curve, least) in [
            ("dispatch_ms", &c.dispatch_ms, 0.0),
            ("slowdown", &c.slowdown, MIN_SLOWDOWN),
        ] {
            if curve.points.is_empty() || curve.points.len() > MAX_POINTS {
                return Err(invalid(
                    file,
                    name,
                    format!(
                        "needs 1 to {MAX_POINTS} points, found {}",
                        curve.points.len()
                    ),
                ));
            }
            if !(curve.floor.is_finite() && curve.floor >= least) {
                return Err(invalid(
                    file,
                    &format!("{name}.floor"),
                    format!("must be at least {least}, found {}", curve.floor),
                ));
            }
            for (i, p) in curve.points.iter().enumerate() {
                if !(p[0].is_finite() && p[0] >= 0.0 && p[1].is_finite() && p[1] >= 0.0) {
                    return Err(invalid(
                        file,
                        &format!("{name}.points[{i}]"),
                        format!("must be finite and non-negative, found {p:?}"),
                    ));
                }
                if i > 0 && p[0] <= curve.points[i - 1][0] {
                    return Err(invalid(
                        file,
                        &format!("{name}.points[{i}]"),
                        "x must rise from point to point".into(),
                    ));
                }
            }
        }
        Ok(c)
    }

    /// Writes it as pretty JSON with a final newline.
    pub fn write(&self, mut out: impl Write) -> io::Result<()> {
        serde_json::to_writer_pretty(&mut out, self)?;
        writeln!(out)
    }

    /// The hand-off delay's mean at `busy` request threads per core, ms.
    pub fn dispatch_at(&self, busy: f64) -> f64 {
        self.dispatch_ms.at(busy)
    }

    /// The slowdown at `busy` request threads per core.
    pub fn slowdown_at(&self, busy: f64) -> f64 {
        self.slowdown.at(busy)
    }

    /// A line for people: the prices it charges.
    pub fn describe(&self) -> String {
        let curve = |c: &Curve, unit: &str| {
            c.points
                .iter()
                .map(|p| format!("{:.3} at {:.2}", p[1], p[0]))
                .collect::<Vec<_>>()
                .join(", ")
                + unit
        };
        let units = match self.units {
            Units::Count(k) => format!("{k} units per request"),
            Units::UnitMs(ms) => format!("units of {ms} ms"),
        };
        format!(
            "{} cores, {units}; hand-off delay {}; helper {:.3} ms of CPU; slowdown {}; \
             SEQ capacity {:.0}/s (by busy threads per core)",
            self.cores,
            curve(&self.dispatch_ms, " ms"),
            self.helper_cost_ms,
            curve(&self.slowdown, ""),
            self.capacity_rps
        )
    }
}

/// The least slowdown a calibration may state (work at most twice as fast as profiled).
pub const MIN_SLOWDOWN: f64 = 0.5;

/// The serial part of a request with speedup curve `speedup`, as a fraction of its
/// sequential work, under the unit model: alone at degree d it takes
/// serial + (1 - serial) x ceil(k / d) / k of its sequential time (k units dealt out in
/// rounds, the serial part run by one thread). Amdahl curves give their serial fraction
/// and linear ones zero; others are fitted by least squares over d = 2..=`max_degree`,
/// clamped to [0, 1].
pub fn serial_fraction(speedup: &Speedup, units: Units, max_degree: usize) -> f64 {
    match speedup {
        Speedup::Linear => 0.0,
        Speedup::Amdahl { serial_fraction } => *serial_fraction,
        Speedup::Table(_) => {
            let (mut num, mut den) = (0.0, 0.0);
            for d in 2..=max_degree.max(2) {
                let g = units.round_share(d);
                let t = 1.0 / speedup.at(d);
                num += (t - g) * (1.0 - g);
                den += (1.0 - g) * (1.0 - g);
            }
            if den <= 0.0 {
                1.0
            } else {
                (num / den).clamp(0.0, 1.0)
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn curves_interpolate_and_extend_their_end_segments() {
        let c = Curve::through(vec![[0.5, 2.0], [0.25, 1.0]], 0.0);
        assert_eq!(c.points, vec![[0.25, 1.0], [0.5, 2.0]]);
        assert!((c.at(0.375) - 1.5).abs() < 1e-12);
        assert!((c.at(1.0) - 4.0).abs() < 1e-12, "extended: {}", c.at(1.0));
        assert_eq!(c.at(0.0), 0.0, "extended below, then floored");
        let one = Curve::through(vec![[0.3, 1.2]], 0.0);
        assert_eq!(one.at(5.0), 1.2);
        let twice = Curve::through(vec![[0.3, 1.0], [0.3, 2.0], [0.6, 4.0]], 0.0);
        assert_eq!(twice.points[0], [0.3, 1.5]);
    }

    #[test]
    fn units_split_by_count_or_size() {
        assert_eq!(Units::Count(16).split(8.0), (16, 0.5));
        assert_eq!(Units::UnitMs(0.25).split(1.0), (4, 0.25));
        assert_eq!(Units::UnitMs(0.25).split(1.1), (5, 0.22000000000000003));
        assert_eq!(Units::Count(16).split(0.0), (0, 0.0));
        assert_eq!(Units::Count(16).round_share(3), 6.0 / 16.0);
        assert_eq!(Units::Count(16).round_share(16), 1.0 / 16.0);
        assert_eq!(Units::Count(16).round_share(40), 1.0 / 16.0);
    }

    #[test]
    fn serial_fractions_are_recovered_from_the_unit_model() {
        let units = Units::Count(16);
        for f in [0.0, 0.1, 0.3, 0.9] {
            let values: Vec<f64> = (1..=16)
                .map(|d| 1.0 / (f + (1.0 - f) * units.round_share(d)))
                .collect();
            let s = Speedup::table(values).unwrap();
            assert!((serial_fraction(&s, units, 16) - f).abs() < 1e-9);
        }
        let amdahl = Speedup::Amdahl {
            serial_fraction: 0.25,
        };
        assert_eq!(serial_fraction(&amdahl, units, 16), 0.25);
        assert_eq!(serial_fraction(&Speedup::Linear, units, 16), 0.0);
        // No speedup at all: everything is serial.
        let flat = Speedup::table(vec![1.0; 16]).unwrap();
        assert!((serial_fraction(&flat, units, 16) - 1.0).abs() < 1e-9);
    }

    #[test]
    fn files_round_trip_and_bad_ones_are_refused() {
        let mut c = Calibration::ideal(16, Units::Count(16));
        c.dispatch_ms = Curve::through(vec![[0.3, 0.6], [0.48, 2.25]], 0.0);
        let mut text = Vec::new();
        c.write(&mut text).unwrap();
        let text = String::from_utf8(text).unwrap();
        assert_eq!(Calibration::parse(&text, "c.json").unwrap(), c);
        for (from, to) in [
            ("\"cores\": 16", "\"cores\": 0"),
            ("\"helper_cost_ms\": 0.0", "\"helper_cost_ms\": -1.0"),
            ("tailor-calibration", "fm-interval-table"),
            ("\"count\": 16", "\"count\": 0"),
        ] {
            let bad = text.replacen(from, to, 1);
            assert_ne!(bad, text, "{from}");
            let e = Calibration::parse(&bad, "c.json").unwrap_err().to_string();
            assert!(e.contains("c.json"), "{e}");
        }
        let unsorted = text.replacen("0.48", "0.1", 1);
        assert!(Calibration::parse(&unsorted, "c.json").is_err());
        assert!(Calibration::parse("", "c.json").is_err());
        assert!(Calibration::parse("{", "c.json").is_err());
    }
}
