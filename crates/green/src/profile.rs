//! A run's power over time, epoch by epoch: what the charts of appendices A and B plot (Figs. A.6, B.8-B.12).

use serde::{Deserialize, Serialize};

/// One epoch of a run's power profile, mean kW over the epoch.
#[derive(Debug, Clone, Copy, PartialEq, Default, Serialize, Deserialize)]
pub struct EpochPower {
    /// The epoch's start, hours from the trace's start.
    pub time_h: f64,
    /// Solar production.
    pub produced_kw: f64,
    /// The production predicted for this epoch by the latest issue before it (one hour
    /// ahead, as Fig. A.6's dashed line).
    pub predicted_kw: f64,
    /// Green power used to meet Green SLAs (appendix A; 0 for GreenPar).
    pub green_sla_kw: f64,
    /// Other green power used.
    pub green_other_kw: f64,
    /// Brown power used.
    pub brown_kw: f64,
    /// Servers running jobs.
    pub servers: u32,
}
