//! Green SLAs (Haque's dissertation, appendix A): a cloud sells each job a minimum share of green energy, and a scheduler admits and places jobs to maximize profit.
//!
//! The pieces, each in its own file:
//! - [`SlaConfig`] and [`SlaPolicy`]: §A.5.1's datacenter, prices and penalty, and
//!   the four schedulers of §A.4.4;
//! - `profit`: Eqs. A.1-A.8, a job's revenue, penalty and the price of brown energy;
//! - `datacenter`: the schedule, and the racks' split between the Mixed Bus and the
//!   Green Bus (§A.3, constraints A.12-A.13);
//! - `milp`: the MILP reformulation of §A.4.4 for one job, with good_lp's pure-Rust
//!   microlp back end;
//! - `greedy`: First-Fit and Static Green-aware Placement (§A.4.4);
//! - `forecast`: a schedule's predicted profit under Eqs. A.1-A.8 with the green
//!   racks set by load (Eq. A.5), which SA maximizes and which predicts violations;
//! - `anneal`: simulated annealing (§A.4.4);
//! - `simulate`: the discrete-time simulator of §A.5.1, [`simulate_sla`].
//!
//! ```no_run
//! use tailor_green::sla::{simulate_sla, SlaConfig, SlaPolicy};
//! use tailor_green::{Job, Prediction, Solar};
//! # fn main() -> Result<(), Box<dyn std::error::Error>> {
//! let jobs = Job::read_all("jobs.csv".as_ref())?;
//! let solar = Solar::read("solar.csv".as_ref())?;
//! let prediction = Prediction::read("prediction.csv".as_ref())?;
//! let policy = SlaPolicy::parse("sa")?;
//! let summary = simulate_sla(&jobs, &solar, &prediction, &SlaConfig::default(), policy)?;
//! println!("{}", serde_json::to_string(&summary)?);
//! # Ok(())
//! # }
//! ```
//!
//! Where this departs from the appendix, each file says so; in short:
//! - G_j is rounded up to whole slots, and the reported profit leaves out the
//!   opportunity cost, which only steers (`profit`);
//! - EM and ε are not given in the appendix and were picked by hand ([`SlaConfig`]);
//! - the MILP the schedulers solve groups epochs into runs and offers only the
//!   cheapest racks of each kind, since microlp cannot solve the rack-by-epoch model
//!   fast enough at §A.5.1's size; the exact model is kept for the tests (`milp`);
//! - SA's moves place their jobs one after another, each as a new arrival, and its
//!   temperature, cooling and move count were picked by hand (`anneal`);
//! - the smoothing battery of §A.3 is not modelled (`datacenter`).

mod anneal;
mod config;
mod datacenter;
mod forecast;
mod greedy;
mod milp;
mod profit;
mod simulate;

pub use config::{SlaConfig, SlaPolicy};
pub use simulate::{simulate_sla, SchedulerStats, SlaSummary};

/// Why a Green SLA simulation could not run.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum SlaError {
    /// A policy name other than `sa`, `lp`, `ff` or `sgp`.
    #[error("unknown Green SLA policy `{0}`: expected sa, lp, ff or sgp")]
    UnknownPolicy(String),
    /// A setting of [`SlaConfig`] is out of its range.
    #[error("bad Green SLA setting `{field}`: {reason}")]
    Config {
        /// The field of [`SlaConfig`].
        field: &'static str,
        /// What is wrong with it.
        reason: String,
    },
    /// A job would run past the longest simulation the simulator holds in memory.
    #[error("job `{id}` (line {line}) would run until {end_h} h, past the {limit_h} h the simulator covers")]
    TooLong {
        /// The job's id.
        id: String,
        /// Its line in the trace.
        line: u64,
        /// When it would end if started on arrival, hours.
        end_h: f64,
        /// The longest simulation, hours.
        limit_h: f64,
    },
}

#[cfg(test)]
mod tests;
