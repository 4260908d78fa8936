//! GreenPar (Haque's dissertation, appendix B): parallel HPC jobs that grow on green energy and shrink, within a slowdown bound F, on brown; its five policies and their simulator.
//!
//! Each job asks for N_j servers (a [`Job`]'s `servers`), runs an NPB application (its
//! `app`) and may be slowed by at most F (§B.3.1). The simulator ([`simulate_par`]) runs
//! a trace over 15-minute epochs ([`EPOCH_H`](crate::EPOCH_H), §B.4): jobs start on
//! arrival when their requested servers are free, progress at SP(n, v) relative to their
//! requested allocation, and finish; each epoch's energy is met by the solar production
//! first and the grid ("brown") for the rest, brown = max(0, used − green) (Eq. B.3).
//!
//! The policies (§B.3.2), from least to most knowledge:
//! - **Baseline** ignores green energy: 2N VMs on N servers, always.
//! - **Reactive** knows speedup profiles and the current epoch's predicted green energy:
//!   each job's minimum allocation keeps AverageSpeedup_j ≥ SP_j(N)/F, and predicted
//!   green power grows the jobs with the best marginal speedups (Fig. B.2).
//! - **Nebulous** has speedup hints and the runtimes of earlier runs of each application
//!   only; it keeps each job's average allocation at least N/F.
//! - **Aggressive** plans the running jobs by Eqs. B.1-B.9 with runtime estimates and
//!   predicted green energy, re-planning on arrivals, completions and new predictions.
//! - **Offline** plans all jobs at once by Eqs. B.1-B.9 with oracle knowledge of
//!   arrivals, runtimes and production.
//!
//! When a job cannot start on arrival, every policy reverts to the requested allocations
//! (N servers, and 2N VMs for jobs started then) until the queue is empty (§B.3.1).
//!
//! Where we depart from the appendix (each module's docs give the details):
//! - the speedup profiles are ours, shaped by what §B.4-B.5 say of each application
//!   (Fig. B.4's numbers are not in the text), and depend on n/N and v/N only;
//! - power is linear in busy cores (22-30 W, §B.4), sleeping servers draw 5% of peak,
//!   and a migration costs 30 s of a server at peak per server moved (ours);
//! - Reactive and Nebulous look one hour ahead (Fig. B.2's t), §B.4's shortest interval
//!   between migrations, and revisit allocations every epoch;
//! - Eqs. B.1-B.9 are solved by a heuristic (a per-job dynamic program inside block
//!   coordinate descent) that reaches the MILP's optimum on small instances, not by a
//!   MILP solver; β weighs each job's runtime by its requested servers' electricity, and
//!   both optimizers average over the trace's job count;
//! - Aggressive keeps every job able to meet F on its requested servers at every epoch's
//!   end, so that arrivals it cannot foresee never cost an SLA;
//! - an allocation n is v/4, v/2 or v servers, whole numbers, so an N that is not a power
//!   of two gets N times powers of two.

mod greedy;
#[cfg(test)]
mod milp_oracle;
mod optimize;
mod plan;
mod policy;
mod power;
mod sim;
mod speedup;
#[cfg(test)]
mod tests;

use std::fmt;

use serde::{Deserialize, Serialize};

use crate::{EpochPower, Job, Prediction, Solar};

/// A GreenPar policy (§B.3.2).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ParPolicy {
    /// Green-oblivious: 2N VMs on N servers (§B.3.2's Baseline).
    Baseline,
    /// Grows and shrinks running jobs by speedup profiles and the next epoch's predicted
    /// green energy (Fig. B.2).
    Reactive,
    /// Eqs. B.1-B.9 over the active jobs, with runtime estimates and predicted green
    /// energy.
    Aggressive,
    /// Eqs. B.1-B.9 over all jobs, with oracle knowledge.
    Offline,
    /// Speedup hints and runtime averages only; keeps average allocations ≥ N/F.
    Nebulous,
}

impl ParPolicy {
    /// Every policy, in the appendix's order.
    pub const ALL: [ParPolicy; 5] = [
        ParPolicy::Baseline,
        ParPolicy::Reactive,
        ParPolicy::Aggressive,
        ParPolicy::Offline,
        ParPolicy::Nebulous,
    ];

    /// Parses `baseline`, `reactive`, `aggressive`, `offline` or `nebulous`.
    pub fn parse(text: &str) -> Result<ParPolicy, UnknownParPolicy> {
        ParPolicy::ALL
            .into_iter()
            .find(|p| p.name() == text)
            .ok_or_else(|| UnknownParPolicy(text.to_string()))
    }

    /// Its name, as [`ParPolicy::parse`] reads it.
    pub fn name(self) -> &'static str {
        match self {
            ParPolicy::Baseline => "baseline",
            ParPolicy::Reactive => "reactive",
            ParPolicy::Aggressive => "aggressive",
            ParPolicy::Offline => "offline",
            ParPolicy::Nebulous => "nebulous",
        }
    }
}

impl fmt::Display for ParPolicy {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl std::str::FromStr for ParPolicy {
    type Err = UnknownParPolicy;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        ParPolicy::parse(s)
    }
}

/// A name [`ParPolicy::parse`] does not know.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "unknown GreenPar policy `{0}`: expected baseline, reactive, aggressive, offline or nebulous"
)]
pub struct UnknownParPolicy(pub String);

/// GreenPar's settings; [`ParConfig::default`] gives the appendix's (§B.4).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ParConfig {
    /// Servers in the datacenter (C). `None`: max(50, the trace's peak of concurrently
    /// requested servers when every job runs its requested runtime from its arrival), so
    /// that a trace larger than §B.4's 50 servers still runs without queueing under
    /// Baseline.
    pub servers: Option<u32>,
    /// The slowdown bound F ≥ 1 (§B.3.1; 1.1 by default, §B.4; Nebulous reads it as the
    /// bound on average allocation, N/F).
    pub slowdown: f64,
    /// β, runtime's weight against brown energy cost in Eq. B.1 (8, §B.4).
    pub beta: f64,
    /// The brown energy price PB(t), $ per kWh (New Jersey's 10.55 cents, §B.4).
    pub price_per_kwh: f64,
    /// The runtime estimates' error, a fraction: 0.25 makes every estimate 25% long,
    /// -0.25 25% short (§B.5's ±25% sensitivity). Aggressive and Nebulous read estimates;
    /// Offline knows the truth.
    pub runtime_error: f64,
    /// A powered-on server with idle cores, W (22, §B.4).
    pub idle_w: f64,
    /// A server with both cores busy, W (30, §B.4).
    pub peak_w: f64,
    /// A server asleep in ACPI S3, W (5% of peak, ours; 0 for servers turned off).
    pub sleep_w: f64,
    /// Seconds of one server at peak power charged per server a job gains or loses
    /// (ME(n), §B.4's measured average migration time; 30 s is ours).
    pub migration_s: f64,
}

impl Default for ParConfig {
    fn default() -> Self {
        ParConfig {
            servers: None,
            slowdown: 1.1,
            beta: 8.0,
            price_per_kwh: 0.1055,
            runtime_error: 0.0,
            idle_w: 22.0,
            peak_w: 30.0,
            sleep_w: 1.5,
            migration_s: 30.0,
        }
    }
}

impl ParConfig {
    fn check(&self) -> Result<(), ParError> {
        let bad = |field: &'static str, reason: &str| {
            Err(ParError::Config {
                field,
                reason: reason.to_string(),
            })
        };
        let finite = [
            ("slowdown", self.slowdown),
            ("beta", self.beta),
            ("price_per_kwh", self.price_per_kwh),
            ("runtime_error", self.runtime_error),
            ("idle_w", self.idle_w),
            ("peak_w", self.peak_w),
            ("sleep_w", self.sleep_w),
            ("migration_s", self.migration_s),
        ];
        if let Some((field, _)) = finite.iter().find(|(_, v)| !v.is_finite()) {
            return bad(field, "must be finite");
        }
        if self.servers == Some(0) {
            return bad("servers", "must be at least 1");
        }
        if self.slowdown < 1.0 {
            return bad("slowdown", "F must be at least 1");
        }
        if self.beta < 0.0 || self.price_per_kwh < 0.0 || self.migration_s < 0.0 {
            return bad(
                "beta",
                "beta, price_per_kwh and migration_s must not be negative",
            );
        }
        if self.runtime_error <= -1.0 {
            return bad(
                "runtime_error",
                "must be above -1 (estimates stay positive)",
            );
        }
        if !(0.0 <= self.sleep_w && self.sleep_w <= self.idle_w && self.idle_w <= self.peak_w)
            || self.peak_w <= 0.0
        {
            return bad(
                "peak_w",
                "need 0 <= sleep_w <= idle_w <= peak_w and peak_w > 0",
            );
        }
        Ok(())
    }
}

/// Why [`simulate_par`] refused its inputs.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum ParError {
    /// The trace holds no jobs.
    #[error("the job trace is empty")]
    NoJobs,
    /// A job names an application without a speedup profile.
    #[error(
        "job `{job}` (line {line}): no speedup profile for application `{app}`; known: {known}"
    )]
    UnknownApp {
        /// The job's id.
        job: String,
        /// Its line in the trace.
        line: u64,
        /// The application it names.
        app: String,
        /// The applications with profiles.
        known: String,
    },
    /// A job asks for more servers than the datacenter has.
    #[error("job `{job}` (line {line}) asks for {servers} servers; the datacenter has {capacity}")]
    TooLarge {
        /// The job's id.
        job: String,
        /// Its line in the trace.
        line: u64,
        /// The servers it asks for.
        servers: u32,
        /// The datacenter's servers.
        capacity: u32,
    },
    /// A setting is out of range.
    #[error("GreenPar setting `{field}`: {reason}")]
    Config {
        /// The setting's name, as in [`ParConfig`].
        field: &'static str,
        /// What is wrong with it.
        reason: String,
    },
}

/// One job's outcome.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ParJobResult {
    /// Its id.
    pub id: String,
    /// The VMs it ran (V_j).
    pub vms: u32,
    /// The servers it asked for (N_j).
    pub requested: u32,
    /// Its runtime on its requested allocation, hours.
    pub requested_runtime_h: f64,
    /// From its start to its end, hours.
    pub runtime_h: f64,
    /// From its arrival to its start, hours.
    pub wait_h: f64,
    /// The fewest servers it ran on.
    pub min_servers: u32,
    /// The most servers it ran on.
    pub max_servers: u32,
    /// Its time-averaged servers.
    pub mean_servers: f64,
}

/// A GreenPar run's outcome: energy, runtimes, VMs, SLA violations and the power profile.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ParSummary {
    /// The policy's name.
    pub policy: String,
    /// The datacenter's servers (C).
    pub servers: u32,
    /// The slowdown bound F.
    pub slowdown: f64,
    /// Jobs in the trace (all complete).
    pub jobs: usize,
    /// Grid energy used, kWh.
    pub brown_kwh: f64,
    /// Solar energy used, kWh.
    pub green_kwh: f64,
    /// All energy used (green + brown), kWh, migrations and sleeping servers included.
    pub energy_kwh: f64,
    /// Of which migrations, kWh.
    pub migration_kwh: f64,
    /// Solar energy produced over the run, kWh.
    pub produced_kwh: f64,
    /// Brown energy's cost, $ (Eq. B.2).
    pub brown_cost: f64,
    /// Mean runtime (start to end), hours.
    pub mean_runtime_h: f64,
    /// Mean runtime on the requested allocations, hours: Baseline's without queueing.
    pub mean_requested_runtime_h: f64,
    /// 1 − mean runtime / mean requested runtime: the reduction in average runtime.
    pub runtime_reduction: f64,
    /// Mean wait from arrival to start, hours.
    pub mean_wait_h: f64,
    /// Jobs that waited to start.
    pub waited: usize,
    /// The VMs of all jobs together (Fig. B.7's "total number of VMs").
    pub total_vms: u64,
    /// Jobs whose runtime exceeded F times their requested runtime.
    pub sla_violations: usize,
    /// The largest runtime over requested runtime.
    pub max_slowdown: f64,
    /// The most servers busy at once.
    pub peak_servers: u32,
    /// When the last job ended, hours.
    pub makespan_h: f64,
    /// Each job's outcome, in trace order.
    pub job_results: Vec<ParJobResult>,
    /// The power profile, one entry per epoch from 0 to the end energy is counted to: the
    /// latest of the solar trace's end, the latest end any job may have within F of its
    /// requested runtime (the same for every policy on the same inputs), and the last
    /// job's end.
    pub epochs: Vec<EpochPower>,
}

/// Simulates `jobs` under `policy`: production from `solar`, predictions from
/// `prediction` (Reactive, Aggressive and Nebulous read it; Offline reads `solar`).
pub fn simulate_par(
    jobs: &[Job],
    solar: &Solar,
    prediction: &Prediction,
    cfg: &ParConfig,
    policy: ParPolicy,
) -> Result<ParSummary, ParError> {
    cfg.check()?;
    sim::run(jobs, solar, prediction, cfg, policy)
}
