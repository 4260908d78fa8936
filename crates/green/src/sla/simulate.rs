//! The Green SLA simulator of §A.5.1: jobs arrive, a policy admits and places them, and each 15-minute epoch runs on the solar energy actually produced, brown energy making up the rest.
//!
//! Each epoch `now`:
//! 1. **Decide** (the scheduler runs at the end of the epoch before, §A.4.2). Jobs that
//!    arrived since the last epoch boundary start now, if admitted, and run T_j
//!    consecutive epochs (constraint A.9). The policy sees the latest prediction
//!    issued at or before `now`. Before the arrivals, SA reruns if the schedule, with
//!    the latest prediction and the green slots jobs have had so far, is expected to
//!    miss more green slots of some job than when SA last planned (§A.4.2, §A.4.4).
//! 2. **Run.** The racks' buses are set by the energy produced in the epoch
//!    ([`Datacenter::partition`](super::datacenter::Datacenter::partition)): a rack
//!    the plan took to be green turns brown when the sun falls short of the
//!    prediction, and partly loaded green racks leave room for more. A job's slots on
//!    green racks count towards its Green SLA; those beyond what it still needs are
//!    "other green", as is green energy routed to the Mixed Bus (Fig. A.6's split).
//! 3. **Settle.** When the run is over, each admitted job pays Eq. A.2's revenue and
//!    the provider pays Eq. A.3's penalty for its missed green slots; brown energy is
//!    paid at PB (Eq. A.8).
//!
//! The simulation covers the solar trace and runs on until the last admitted job ends
//! (jobs that run past the trace run on brown energy).

use std::time::Instant;

use serde::{Deserialize, Serialize};

use crate::{EpochPower, Job, Prediction, Solar, EPOCH_H};

use super::anneal::Annealer;
use super::datacenter::{Datacenter, Plan, Schedule};
use super::forecast::{outlook, Forecast, ToPlace};
use super::greedy::{first_fit, static_green};
use super::milp::{solve, MilpStats, Model};
use super::profit::{brown_cost, JobTerms};
use super::{SlaConfig, SlaError, SlaPolicy};

/// The longest simulation held in memory: a year of epochs.
const MAX_EPOCHS: usize = 4 * 24 * 366;
/// Epochs in an hour, the lead of the prediction the power profile shows (Fig. A.6).
const HOUR_EPOCHS: usize = 4;
/// Slack when turning arrival times into epochs.
const TIME_SLACK: f64 = 1e-9;

/// What a Green SLA simulation produced.
///
/// Money is in dollars, energy in kWh. `profit` is revenue − penalty − brown_cost
/// (Eq. A.1 without the opportunity cost, which is reported apart).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SlaSummary {
    /// The policy simulated.
    pub policy: String,
    /// Jobs in the trace.
    pub jobs: usize,
    /// Revenue − penalty − brown energy cost.
    pub profit: f64,
    /// Eq. A.2 over the admitted jobs.
    pub revenue: f64,
    /// Eq. A.3 over the admitted jobs.
    pub penalty: f64,
    /// Eq. A.8: the brown energy bought.
    pub brown_cost: f64,
    /// Eq. A.7 over the slots run: steers the schedulers, not paid.
    pub opportunity_cost: f64,
    /// Green energy used, on either bus.
    pub green_kwh: f64,
    /// Of it, green energy that met Green SLAs.
    pub green_sla_kwh: f64,
    /// Brown energy used.
    pub brown_kwh: f64,
    /// Solar energy produced over the simulation.
    pub produced_kwh: f64,
    /// Jobs admitted.
    pub admitted: usize,
    /// Jobs rejected.
    pub rejected: usize,
    /// Admitted jobs whose Green SLA was missed.
    pub violations: usize,
    /// Green VM-hours contracted but not run on green energy.
    pub missed_green_vm_hours: f64,
    /// VM migrations run.
    pub migrations: u64,
    /// How often and how fast the scheduler ran.
    pub scheduler: SchedulerStats,
    /// The power profile, one entry per epoch.
    pub epochs: Vec<EpochPower>,
}

/// How the scheduler ran. The counts repeat from run to run; the times are wall-clock
/// and do not.
#[derive(Debug, Clone, Copy, PartialEq, Default, Serialize, Deserialize)]
pub struct SchedulerStats {
    /// Scheduler runs: one per arrival, plus SA's reruns on predicted violations.
    pub runs: u64,
    /// SA's reruns on predicted violations.
    pub reruns: u64,
    /// MILPs solved.
    pub milp_solves: u64,
    /// MILPs with no solution (infeasible, or none within the time limit).
    pub milp_failures: u64,
    /// MILPs stopped by their time limit; when not 0, the run depends on the machine's
    /// speed.
    pub milp_time_limited: u64,
    /// Mean milliseconds per MILP.
    pub milp_mean_ms: f64,
    /// Milliseconds of the slowest MILP.
    pub milp_max_ms: f64,
    /// Integer variables of the largest MILP.
    pub milp_max_variables: usize,
    /// Mean milliseconds per scheduler run.
    pub run_mean_ms: f64,
    /// Milliseconds of the slowest scheduler run.
    pub run_max_ms: f64,
}

/// Simulates `jobs` under `policy` with the solar production `solar`, and `prediction`
/// for the schedulers (§A.5.1).
pub fn simulate_sla(
    jobs: &[Job],
    solar: &Solar,
    prediction: &Prediction,
    cfg: &SlaConfig,
    policy: SlaPolicy,
) -> Result<SlaSummary, SlaError> {
    cfg.validate()?;
    let terms: Vec<JobTerms> = jobs.iter().map(JobTerms::of).collect();
    let starts: Vec<usize> = jobs
        .iter()
        .map(|j| (j.arrival_h / EPOCH_H - TIME_SLACK).ceil().max(0.0) as usize)
        .collect();
    let mut horizon = solar.kw.len();
    for (i, job) in jobs.iter().enumerate() {
        let end = starts[i].saturating_add(terms[i].epochs as usize);
        if end > MAX_EPOCHS {
            return Err(SlaError::TooLong {
                id: job.id.clone(),
                line: job.line,
                end_h: end as f64 * EPOCH_H,
                limit_h: MAX_EPOCHS as f64 * EPOCH_H,
            });
        }
        horizon = horizon.max(end);
    }
    let mut order: Vec<usize> = (0..jobs.len()).collect();
    order.sort_by_key(|&i| starts[i]);

    let mut sim = Sim {
        cfg,
        policy,
        schedule: Schedule::new(Datacenter::new(cfg.racks, cfg.rack_capacity, horizon)),
        annealer: Annealer::new(cfg.seed),
        milp: MilpStats::default(),
        stats: SchedulerStats::default(),
        run_seconds: 0.0,
        expected_missed: Vec::new(),
        rejected: 0,
    };
    let mut totals = Totals::default();
    let mut epochs = Vec::with_capacity(horizon);
    let mut next = 0;
    for now in 0..horizon {
        let first = next;
        while next < order.len() && starts[order[next]] <= now {
            next += 1;
        }
        let arriving = &order[first..next];
        let until = arriving
            .iter()
            .map(|&i| now + terms[i].epochs as usize)
            .chain(sim.schedule.jobs.iter().map(|a| a.plan.end()))
            .max()
            .unwrap_or(now);
        let forecast = (policy == SlaPolicy::Sa || !arriving.is_empty())
            .then(|| Forecast::new(prediction, now, until, cfg));
        if let Some(f) = &forecast {
            if policy == SlaPolicy::Sa {
                sim.rerun_if_violations_expected(f, now);
            }
            for &i in arriving {
                sim.arrive(i, terms[i], now, f);
            }
        }
        epochs.push(sim.run_epoch(now, solar, prediction, &mut totals));
    }
    Ok(sim.summary(jobs.len(), totals, epochs))
}

/// Energy and migrations summed over the epochs run.
#[derive(Debug, Default)]
struct Totals {
    green_kwh: f64,
    green_sla_kwh: f64,
    brown_kwh: f64,
    produced_kwh: f64,
    opportunity_cost: f64,
    migrations: u64,
}

/// The simulation's state.
struct Sim<'a> {
    cfg: &'a SlaConfig,
    policy: SlaPolicy,
    schedule: Schedule,
    annealer: Annealer,
    milp: MilpStats,
    stats: SchedulerStats,
    run_seconds: f64,
    /// Green slots each admitted job was expected to miss when SA last planned.
    expected_missed: Vec<u64>,
    rejected: usize,
}

impl Sim<'_> {
    /// Admits job `i`, starting at `now`, or rejects it.
    fn arrive(&mut self, i: usize, terms: JobTerms, now: usize, f: &Forecast) {
        let started = Instant::now();
        let epochs = terms.epochs as usize;
        let (cfg, dc) = (self.cfg, &self.schedule.dc);
        let plan = |epochs: Vec<_>| Plan { start: now, epochs };
        let admitted = match self.policy {
            SlaPolicy::Ff => first_fit(dc, now, epochs, terms.vms)
                .map(|p| self.schedule.admit(i, terms, plan(p)))
                .is_some(),
            SlaPolicy::Sgp => static_green(dc, f, cfg, now, epochs, terms.vms, terms.green_slots)
                .map(|p| self.schedule.admit(i, terms, plan(p)))
                .is_some(),
            SlaPolicy::Lp => {
                let inst = f.milp_instance(dc, cfg, ToPlace::new_job(now, terms));
                match solve(&inst, Model::Reduced, &mut self.milp) {
                    Some(s) => {
                        // §A.4.4: rejected if it lowers the profit, by the LP's model
                        // plus the brown energy of its slots on brown racks.
                        let brown_slots = terms.slots() - s.green;
                        let energy = brown_cost(brown_slots as f64 * cfg.slot_kwh(), cfg);
                        let gain = terms.revenue(cfg) - s.cost.total() - energy;
                        (gain > 0.0)
                            .then(|| self.schedule.admit(i, terms, plan(s.epochs)))
                            .is_some()
                    }
                    None => false,
                }
            }
            SlaPolicy::Sa => self.sa_arrive(i, terms, now, f),
        };
        if !admitted {
            self.rejected += 1;
        }
        self.record_run(started);
    }

    /// SA's admission (§A.4.4): the MILP places the job around the fixed schedule, SA
    /// improves the whole, and the job stays only if the predicted profit rises.
    fn sa_arrive(&mut self, i: usize, terms: JobTerms, now: usize, f: &Forecast) -> bool {
        let inst = f.milp_instance(&self.schedule.dc, self.cfg, ToPlace::new_job(now, terms));
        let Some(placed) = solve(&inst, Model::Reduced, &mut self.milp) else {
            return false;
        };
        let base = outlook(&self.schedule, f, self.cfg, now).cost;
        let j = self.schedule.admit(
            i,
            terms,
            Plan {
                start: now,
                epochs: placed.epochs,
            },
        );
        let annealed = self.annealer.run(
            &mut self.schedule,
            f,
            self.cfg,
            now,
            Some(j),
            &mut self.milp,
        );
        let gain = terms.revenue(self.cfg) - (annealed.cost - base);
        if gain > 0.0 {
            self.note_expectations(f, now);
            true
        } else {
            annealed.undo(&mut self.schedule, now);
            self.schedule.withdraw_last();
            false
        }
    }

    /// SA reruns when some job is expected to miss more green slots than when it last
    /// planned, and adopts its best schedule whatever it is (§A.4.4).
    fn rerun_if_violations_expected(&mut self, f: &Forecast, now: usize) {
        self.expected_missed.resize(self.schedule.jobs.len(), 0);
        let view = outlook(&self.schedule, f, self.cfg, now);
        let worse = (0..view.active.len())
            .any(|i| view.missed(&self.schedule, i) > self.expected_missed[view.active[i]]);
        if !worse {
            return;
        }
        let started = Instant::now();
        self.annealer
            .run(&mut self.schedule, f, self.cfg, now, None, &mut self.milp);
        self.note_expectations(f, now);
        self.stats.reruns += 1;
        self.record_run(started);
    }

    /// Records what each active job is expected to miss now.
    fn note_expectations(&mut self, f: &Forecast, now: usize) {
        self.expected_missed.resize(self.schedule.jobs.len(), 0);
        let view = outlook(&self.schedule, f, self.cfg, now);
        for i in 0..view.active.len() {
            self.expected_missed[view.active[i]] = view.missed(&self.schedule, i);
        }
    }

    fn record_run(&mut self, started: Instant) {
        let s = started.elapsed().as_secs_f64();
        self.stats.runs += 1;
        self.run_seconds += s;
        self.stats.run_max_ms = self.stats.run_max_ms.max(s * 1e3);
    }

    /// Runs epoch `now` on the energy produced in it.
    fn run_epoch(
        &mut self,
        now: usize,
        solar: &Solar,
        prediction: &Prediction,
        totals: &mut Totals,
    ) -> EpochPower {
        let cfg = self.cfg;
        let dc = &self.schedule.dc;
        let produced_kwh = solar.kw_at(now) * EPOCH_H;
        let p = dc.partition(now, produced_kwh, cfg);
        let mut sla_kwh = 0.0;
        for a in self.schedule.jobs.iter_mut() {
            let placement = a.plan.at(now);
            if placement.is_empty() {
                continue;
            }
            let mut green = 0u64;
            for &(r, x) in placement {
                if r as usize >= p.boundary {
                    green += x as u64;
                }
                totals.opportunity_cost += x as f64 * cfg.opportunity(r as usize);
            }
            sla_kwh += green.min(a.green_needed() as u64) as f64 * cfg.slot_kwh();
            a.green += green;
        }
        totals.migrations += (0..dc.racks())
            .map(|r| dc.arriving(now, r) as u64)
            .sum::<u64>();
        let green_kwh = p.green_racks_kwh + p.green_to_mixed_kwh;
        totals.green_kwh += green_kwh;
        totals.green_sla_kwh += sla_kwh;
        totals.brown_kwh += p.brown_kwh;
        totals.produced_kwh += produced_kwh;
        EpochPower {
            time_h: now as f64 * EPOCH_H,
            produced_kw: produced_kwh / EPOCH_H,
            predicted_kw: prediction
                .kw(now.saturating_sub(HOUR_EPOCHS), now)
                .unwrap_or(0.0),
            green_sla_kw: sla_kwh / EPOCH_H,
            green_other_kw: (green_kwh - sla_kwh).max(0.0) / EPOCH_H,
            brown_kw: p.brown_kwh / EPOCH_H,
            servers: dc.servers(now),
        }
    }

    /// Settles every admitted job (Eqs. A.1-A.3, A.8).
    fn summary(mut self, jobs: usize, totals: Totals, epochs: Vec<EpochPower>) -> SlaSummary {
        let cfg = self.cfg;
        let mut revenue = 0.0;
        let mut penalty = 0.0;
        let mut violations = 0;
        let mut missed = 0;
        for a in &self.schedule.jobs {
            revenue += a.terms.revenue(cfg);
            penalty += a.terms.penalty(a.green, cfg);
            let m = a.terms.missed(a.green);
            violations += usize::from(m > 0);
            missed += m;
        }
        let brown = brown_cost(totals.brown_kwh, cfg);
        let runs = self.stats.runs.max(1) as f64;
        self.stats.run_mean_ms = self.run_seconds / runs * 1e3;
        self.stats.milp_solves = self.milp.solves;
        self.stats.milp_failures = self.milp.failures;
        self.stats.milp_time_limited = self.milp.time_limited;
        self.stats.milp_mean_ms = self.milp.seconds / self.milp.solves.max(1) as f64 * 1e3;
        self.stats.milp_max_ms = self.milp.max_seconds * 1e3;
        self.stats.milp_max_variables = self.milp.max_variables;
        SlaSummary {
            policy: self.policy.name().to_string(),
            jobs,
            profit: revenue - penalty - brown,
            revenue,
            penalty,
            brown_cost: brown,
            opportunity_cost: totals.opportunity_cost,
            green_kwh: totals.green_kwh,
            green_sla_kwh: totals.green_sla_kwh,
            brown_kwh: totals.brown_kwh,
            produced_kwh: totals.produced_kwh,
            admitted: self.schedule.jobs.len(),
            rejected: self.rejected,
            violations,
            missed_green_vm_hours: missed as f64 * EPOCH_H,
            migrations: totals.migrations,
            scheduler: self.stats,
            epochs,
        }
    }
}
