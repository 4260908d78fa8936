//! What a GreenPar policy sees and decides: the running jobs and what it may know of the future ([`View`]), the [`Allocator`] trait every policy implements, and the Baseline (§B.3.2).
//!
//! The simulator asks a policy two things: how many VMs a job starts with (2N or 4N,
//! §B.3.1) and, at every decision point (an arrival, a completion, an epoch's start),
//! how many servers each running job gets. Policies are pure functions of what the view
//! shows them plus their own plans; the knowledge each may use is the appendix's (§B.3.2):
//! only Offline reads the solar trace's future, and no policy but Offline sees true
//! runtimes (the view carries none).

use crate::input::{Prediction, Solar, EPOCH_H};

use super::speedup::AppProfile;
use super::ParConfig;

/// Times closer than this, hours, are the same instant.
pub(crate) const TIME_EPS: f64 = 1e-9;

/// The epoch holding time `t_h`.
pub(crate) fn epoch_of(t_h: f64) -> usize {
    ((t_h + TIME_EPS) / EPOCH_H).floor().max(0.0) as usize
}

/// What every policy knows of a job from its submission.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct JobInfo {
    /// When it arrives, hours.
    pub(crate) arrival_h: f64,
    /// The servers it asks for, N_j.
    pub(crate) requested: u32,
    /// Its application's speedup profile.
    pub(crate) profile: AppProfile,
}

/// A running job's state, as the simulator keeps it.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Running {
    /// Its index in the trace.
    pub(crate) job: usize,
    /// Its VMs, V_j.
    pub(crate) vms: u32,
    /// Its servers now, S_j(t).
    pub(crate) servers: u32,
    /// Started this instant: its servers are not placed yet (no migration to count).
    pub(crate) fresh: bool,
    /// When it started, hours.
    pub(crate) start_h: f64,
    /// Work done, in hours at the requested allocation (observable from its allocations
    /// and its profile).
    pub(crate) done_h: f64,
    /// ∫ SP(S_j(t), V_j)/SP_j(N) dt: its average relative speedup times its age.
    pub(crate) speed_h: f64,
    /// ∫ S_j(t) dt: its average allocation times its age.
    pub(crate) servers_h: f64,
}

impl Running {
    /// Hours since it started.
    pub(crate) fn age(&self, now_h: f64) -> f64 {
        (now_h - self.start_h).max(0.0)
    }
}

/// Why the policy is asked now (several may hold).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct Events {
    /// A job started.
    pub(crate) arrived: bool,
    /// A job finished.
    pub(crate) finished: bool,
    /// An epoch starts.
    pub(crate) new_epoch: bool,
    /// The queue just emptied: allocations come back to the policy after a revert.
    pub(crate) after_pressure: bool,
}

/// What a policy sees at a decision point.
pub(crate) struct View<'a> {
    /// Now, hours.
    pub(crate) now_h: f64,
    /// The epoch holding now.
    pub(crate) epoch: usize,
    /// The datacenter's servers, C.
    pub(crate) capacity: u32,
    /// The settings.
    pub(crate) cfg: &'a ParConfig,
    /// Every job of the trace as submitted (no runtimes).
    pub(crate) jobs: &'a [JobInfo],
    /// The jobs running now.
    pub(crate) running: &'a [Running],
    /// Whether each job has started (running or finished).
    pub(crate) started: &'a [bool],
    /// Jobs finished so far, in order.
    pub(crate) finished: &'a [usize],
    /// Jobs arrived so far (a prefix of the trace).
    pub(crate) arrived: usize,
    /// The predictions.
    pub(crate) prediction: &'a Prediction,
    /// The production: past epochs for every policy, all of it for Offline.
    pub(crate) solar: &'a Solar,
    /// Why it is asked.
    pub(crate) events: Events,
}

impl View<'_> {
    /// The green power predicted now for epoch `e`, kW: the latest issue at or before
    /// now; for the current epoch without one, the last epoch's production (persistence,
    /// ours). `None` past what the predictions cover.
    pub(crate) fn predicted_kw(&self, e: usize) -> Option<f64> {
        self.prediction.kw(self.epoch, e).or_else(|| {
            (e == self.epoch).then(|| {
                self.epoch
                    .checked_sub(1)
                    .map_or(0.0, |p| self.solar.kw_at(p))
            })
        })
    }
}

/// A GreenPar policy.
pub(crate) trait Allocator {
    /// The VMs job `job` starts with now (it is not yet among `view.running`).
    fn vms(&mut self, view: &View<'_>, job: usize) -> u32 {
        2 * view.jobs[job].requested
    }

    /// The servers of each of `view.running`, in order. The simulator reverts to the
    /// requested allocations if the answer is not allowed or does not fit.
    fn allocate(&mut self, view: &View<'_>) -> Vec<u32>;
}

/// §B.3.2's Baseline: 2N VMs on the N requested servers, whatever the energy.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct Baseline;

impl Allocator for Baseline {
    fn allocate(&mut self, view: &View<'_>) -> Vec<u32> {
        requested(view)
    }
}

/// Every running job on its requested servers.
pub(crate) fn requested(view: &View<'_>) -> Vec<u32> {
    view.running
        .iter()
        .map(|r| view.jobs[r.job].requested)
        .collect()
}
