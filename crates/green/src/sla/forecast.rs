//! What the schedulers expect: the green energy predicted for each coming epoch, and a schedule's predicted profit under Eqs. A.1-A.8 with green racks set by load (Eq. A.5).
//!
//! The prediction used at epoch `now` is the latest issue at or before it
//! ([`Prediction::kw`]); an epoch the issue does not cover is predicted to produce
//! nothing, since the appendix's predictions reach 48 hours and no further (§A.4.5).
//!
//! [`outlook`] is the non-linear model SA maximizes (§A.4.4): unlike the LP, which
//! takes green racks to be full, it lets the predicted energy power racks from the
//! right by their actual load and migrations ([`Datacenter::partition`]). The simulator
//! uses it too, to see when Green SLAs are expected to be missed.

use crate::{Prediction, EPOCH_H};

use super::datacenter::{assumed_full_boundary, Datacenter, Schedule};
use super::milp::MilpInstance;
use super::profit::{brown_cost, JobTerms};
use super::SlaConfig;

/// Green energy predicted at one epoch for the epochs after it.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Forecast {
    now: usize,
    /// kWh predicted for epoch `now + i`.
    kwh: Vec<f64>,
}

impl Forecast {
    /// The prediction issued at or before `now` for epochs `now..until`, scaled by
    /// [`SlaConfig::prediction_scale`].
    pub(crate) fn new(
        prediction: &Prediction,
        now: usize,
        until: usize,
        cfg: &SlaConfig,
    ) -> Forecast {
        // Past the issue's last epoch every prediction is 0: stop there.
        let covered = prediction
            .issues()
            .range(..=now)
            .next_back()
            .and_then(|(_, list)| list.last())
            .map_or(now, |&(t, _)| t + 1);
        let kwh = (now..until.min(covered).max(now))
            .map(|t| prediction.kw(now, t).unwrap_or(0.0) * cfg.prediction_scale * EPOCH_H)
            .collect();
        Forecast { now, kwh }
    }

    /// Green energy predicted for epoch `t`, kWh; 0 outside the forecast.
    pub(crate) fn kwh(&self, t: usize) -> f64 {
        t.checked_sub(self.now)
            .and_then(|i| self.kwh.get(i))
            .copied()
            .unwrap_or(0.0)
    }

    /// The LP's boundary for epoch `t`: green racks taken to be full (§A.4.4).
    pub(crate) fn assumed_full_boundary(&self, t: usize, cfg: &SlaConfig) -> usize {
        assumed_full_boundary(self.kwh(t), cfg)
    }

    /// The MILP placing `job` in the servers `dc` leaves free (§A.4.4).
    pub(crate) fn milp_instance(
        &self,
        dc: &Datacenter,
        cfg: &SlaConfig,
        job: ToPlace,
    ) -> MilpInstance {
        let racks = dc.racks();
        let epochs = job.start..job.start + job.epochs;
        MilpInstance {
            vms: job.vms,
            green_slots: job.green_slots,
            free: epochs
                .clone()
                .map(|t| (0..racks).map(|r| dc.free(t, r)).collect())
                .collect(),
            boundary: epochs.map(|t| self.assumed_full_boundary(t, cfg)).collect(),
            previous: job.previous,
            opportunity: (0..racks).map(|r| cfg.opportunity(r)).collect(),
            penalty_slot: cfg.penalty_slot(),
            migration_cost: cfg.migration_cost(),
        }
    }
}

/// A job, or the rest of one, to place with the MILP.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct ToPlace {
    /// Its first epoch to place.
    pub(crate) start: usize,
    /// Epochs from `start` to its end.
    pub(crate) epochs: usize,
    /// V: its VMs.
    pub(crate) vms: u32,
    /// Green slots it still needs.
    pub(crate) green_slots: u32,
    /// Its VMs per rack in the epoch before `start`, if it was running then.
    pub(crate) previous: Option<Vec<u32>>,
}

/// A schedule's predicted costs from `now` on, and each active job's expected green.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Outlook {
    /// Predicted penalty + opportunity cost + brown energy cost, dollars: the part of
    /// Eq. A.1 that scheduling can change once the jobs are admitted.
    pub(crate) cost: f64,
    /// The active jobs, as indices into [`Schedule::jobs`].
    pub(crate) active: Vec<usize>,
    /// Green slots each active job is expected to have had when it ends.
    pub(crate) expected_green: Vec<u64>,
}

impl Outlook {
    /// Green slots job `active[i]` is expected to miss.
    pub(crate) fn missed(&self, schedule: &Schedule, i: usize) -> u64 {
        schedule.jobs[self.active[i]]
            .terms
            .missed(self.expected_green[i])
    }
}

/// Predicts `schedule` from epoch `now` with `forecast`: Eqs. A.3-A.8 with the green
/// racks of each epoch set by [`Datacenter::partition`].
pub(crate) fn outlook(
    schedule: &Schedule,
    forecast: &Forecast,
    cfg: &SlaConfig,
    now: usize,
) -> Outlook {
    let active = schedule.active(now);
    let end = active
        .iter()
        .map(|&j| schedule.jobs[j].plan.end())
        .max()
        .unwrap_or(now);
    let mut boundary = Vec::with_capacity(end.saturating_sub(now));
    let mut brown_kwh = 0.0;
    for t in now..end {
        let p = schedule.dc.partition(t, forecast.kwh(t), cfg);
        boundary.push(p.boundary);
        brown_kwh += p.brown_kwh;
    }
    let opportunity: Vec<f64> = (0..schedule.dc.racks())
        .map(|r| cfg.opportunity(r))
        .collect();
    let mut cost = brown_cost(brown_kwh, cfg);
    let mut expected_green = Vec::with_capacity(active.len());
    for &j in &active {
        let a = &schedule.jobs[j];
        let mut green = a.green;
        for t in now.max(a.plan.start)..a.plan.end() {
            let b = boundary[t - now];
            for &(r, x) in a.plan.at(t) {
                if r as usize >= b {
                    green += x as u64;
                }
                cost += x as f64 * opportunity[r as usize];
            }
        }
        cost += a.terms.penalty(green, cfg);
        expected_green.push(green);
    }
    Outlook {
        cost,
        active,
        expected_green,
    }
}

impl ToPlace {
    /// A job arriving now: all of it, from `start`.
    pub(crate) fn new_job(start: usize, terms: JobTerms) -> ToPlace {
        ToPlace {
            start,
            epochs: terms.epochs as usize,
            vms: terms.vms,
            green_slots: terms.green_slots,
            previous: None,
        }
    }
}
