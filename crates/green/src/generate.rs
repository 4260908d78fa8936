//! Seeded inputs shaped from the appendices' facts: job traces (Grid5k-, Intrepid-shaped), solar days (High, Medium, Low) and their predictions, for Green SLAs (appendix A) or GreenPar (appendix B).
//!
//! The Grid5k and Intrepid traces and the Rutgers solar data that Haque's dissertation
//! used are not available (issue 43), so [`generate`] makes inputs with the same stated
//! facts. Which facts, and what is invented, is listed where each part is made:
//!
//! - jobs (`workload.rs`): §A.5.1's job counts, peaks, long jobs, Intrepid scaling and Green
//!   SLA levels; §B.4's job counts, peaks, application mixes and Table B.2;
//! - solar (`solar.rs`): §A.5.1's and §B.4's peaks and day totals, and the prediction
//!   errors they describe, predicted by §A.4.5's method ([`crate::predict`]).
//!
//! Summary of the facts hit, tested below:
//!
//! | | Green SLAs (48 h) | GreenPar (24 h) |
//! |---|---|---|
//! | Grid5k jobs, peak | 675, 1,654 VMs; 7 jobs > 48 h | 26, 48 servers (96 cores) |
//! | Intrepid jobs, peak | 446, 1,620 VMs; 1 job > 48 h | 113, 44 servers (88 cores, not 86) |
//! | solar peak | 176.4 kW (75% of 42 × 40 × 140 W) | 1.5 kW |
//! | High, Medium, Low | 3.23, 1.94, 0.626 MWh | 12, 8, 2.84 kWh |
//!
//! Everything random comes from one ChaCha8 stream ([`tailor_core::seeded_rng`]): the same
//! seed gives the same jobs, solar and prediction, and the writers the same bytes.

use std::io::Write;
use std::path::Path;

use crate::input::{Job, Prediction, Solar, EPOCH_H};

mod solar;
mod workload;

/// The horizon of each forecast issue and prediction, hours (§A.4.5: 48; §B.4 too).
pub const PREDICTION_HORIZON_H: usize = 48;

/// A name that is not one of the known ones.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown {what} `{found}`: expected one of {expected}")]
pub struct UnknownName {
    what: &'static str,
    found: String,
    expected: &'static str,
}

impl UnknownName {
    pub(crate) fn new(what: &'static str, found: &str, expected: &'static str) -> UnknownName {
        UnknownName {
            what,
            found: found.to_string(),
            expected,
        }
    }
}

/// Defines a name enum with `parse`, `name`, `ALL`, `FromStr` and `Display`.
macro_rules! names {
    ($(#[$doc:meta])* $ty:ident, $what:literal, $expected:literal,
     $($(#[$vdoc:meta])* $variant:ident = $name:literal),+ $(,)?) => {
        $(#[$doc])*
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
        pub enum $ty {
            $($(#[$vdoc])* $variant),+
        }

        impl $ty {
            /// Every value, in order.
            pub const ALL: &'static [$ty] = &[$($ty::$variant),+];

            /// The value named `name` (any case).
            pub fn parse(name: &str) -> Result<$ty, UnknownName> {
                $ty::ALL
                    .iter()
                    .copied()
                    .find(|v| v.name().eq_ignore_ascii_case(name.trim()))
                    .ok_or_else(|| UnknownName::new($what, name, $expected))
            }

            /// Its name, lower case.
            pub fn name(self) -> &'static str {
                match self {
                    $($ty::$variant => $name),+
                }
            }
        }

        impl std::str::FromStr for $ty {
            type Err = UnknownName;
            fn from_str(s: &str) -> Result<$ty, UnknownName> {
                $ty::parse(s)
            }
        }

        impl std::fmt::Display for $ty {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str(self.name())
            }
        }
    };
}

names!(
    /// Which real trace the jobs are shaped like.
    Workload, "workload", "grid5k, intrepid",
    /// The Grid Workload Archive's Grid'5000 trace (§A.5.1, §B.4).
    Grid5k = "grid5k",
    /// The Parallel Workload Archive's Intrepid trace (§A.5.1, §B.4).
    Intrepid = "intrepid",
);

names!(
    /// Which solar day (pair of days for Green SLAs).
    Day, "day", "high, medium, low",
    /// Sunny: 3.23 MWh over two days (§A.5.1), 12 kWh (§B.4).
    High = "high",
    /// Broken clouds: 1.94 MWh (§A.5.1), 8 kWh (§B.4).
    Medium = "medium",
    /// Overcast: 626 kWh (§A.5.1), 2.84 kWh (§B.4).
    Low = "low",
);

names!(
    /// Which system the inputs are for.
    System, "system", "sla, par",
    /// Green SLAs (appendix A): 48 hours, a 1,680-server datacenter, VMs and Green SLAs.
    Sla = "sla",
    /// GreenPar (appendix B): 24 hours, 50 servers, requested servers and applications.
    Par = "par",
);

/// Generated inputs: what `jobs.csv`, `solar.csv` and `prediction.csv` hold.
#[derive(Debug, Clone, PartialEq)]
pub struct Generated {
    /// The jobs, in arrival order.
    pub jobs: Vec<Job>,
    /// The solar production, per epoch.
    pub solar: Solar,
    /// Its prediction (§A.4.5), issued each hour.
    pub prediction: Prediction,
}

/// Rounds to 4 decimals, so values print short and read back identical.
pub(crate) fn round4(x: f64) -> f64 {
    (x * 1e4).round() / 1e4
}

/// Inputs for `system`: jobs shaped like `workload`, solar of kind `day`, all from `seed`.
pub fn generate(workload: Workload, day: Day, system: System, seed: u64) -> Generated {
    let mut rng = tailor_core::seeded_rng(seed);
    let jobs = workload::jobs(workload, system, &mut rng);
    let days = solar::solar_days(day, system, &mut rng);
    let prediction = crate::predict::predict(
        &days.best,
        &days.solar,
        &days.forecast,
        PREDICTION_HORIZON_H,
    );
    let prediction = Prediction::from_issues(
        prediction
            .issues()
            .iter()
            .map(|(&t, rows)| (t, rows.iter().map(|&(k, kw)| (k, round4(kw))).collect()))
            .collect(),
    );
    Generated {
        jobs,
        solar: days.solar,
        prediction,
    }
}

impl Generated {
    /// Writes `jobs.csv`, `solar.csv` and `prediction.csv` into `dir`, creating it.
    pub fn write_dir(&self, dir: &Path) -> std::io::Result<()> {
        std::fs::create_dir_all(dir)?;
        let open = |name: &str| std::fs::File::create(dir.join(name)).map(std::io::BufWriter::new);
        write_jobs(open("jobs.csv")?, &self.jobs)?;
        write_solar(open("solar.csv")?, &self.solar)?;
        write_prediction(open("prediction.csv")?, &self.prediction)
    }
}

/// Writes `jobs` as `jobs.csv` (the format of [`crate::input`]).
pub fn write_jobs<W: Write>(w: W, jobs: &[Job]) -> std::io::Result<()> {
    let mut out = csv::Writer::from_writer(w);
    out.write_record([
        "job",
        "arrival_h",
        "servers",
        "runtime_h",
        "green_sla",
        "app",
    ])?;
    for j in jobs {
        out.write_record([
            j.id.clone(),
            j.arrival_h.to_string(),
            j.servers.to_string(),
            j.runtime_h.to_string(),
            j.green_sla.to_string(),
            j.app.clone(),
        ])?;
    }
    out.flush()
}

/// Writes `solar` as `solar.csv`.
pub fn write_solar<W: Write>(w: W, solar: &Solar) -> std::io::Result<()> {
    let mut out = csv::Writer::from_writer(w);
    out.write_record(["time_h", "kw"])?;
    for (k, kw) in solar.kw.iter().enumerate() {
        out.write_record([(k as f64 * EPOCH_H).to_string(), kw.to_string()])?;
    }
    out.flush()
}

/// Writes `prediction` as `prediction.csv`.
pub fn write_prediction<W: Write>(w: W, prediction: &Prediction) -> std::io::Result<()> {
    let mut out = csv::Writer::from_writer(w);
    out.write_record(["issued_h", "time_h", "kw"])?;
    for (&issued, rows) in prediction.issues() {
        for &(k, kw) in rows {
            out.write_record([
                (issued as f64 * EPOCH_H).to_string(),
                (k as f64 * EPOCH_H).to_string(),
                kw.to_string(),
            ])?;
        }
    }
    out.flush()
}

#[cfg(test)]
mod tests;
