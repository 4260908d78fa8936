//! Green datacenter schedulers: Green SLAs (Haque's dissertation, appendix A) and GreenPar (appendix B), on a discrete-time simulator.
//!
//! These are batch schedulers, not request schedulers: jobs of many servers that run for
//! hours, in a datacenter partly powered by solar energy. They share the rest of tailor's
//! way of working: a trace in, policies offline and online, a simulator, and energy
//! accounting. docs/green.md describes the models and where they depart from the
//! appendices.
//!
//! - [`input`]: the job trace (`jobs.csv`), the solar production (`solar.csv`) and its
//!   predictions (`prediction.csv`), read with errors that name the file, line and field.

//! - [`profile`]: a run's power epoch by epoch, and [`chart`], its SVG chart.
//! - [`generate`]: seeded workloads and solar days shaped from the appendices' facts;
//!   [`predict`]: the solar prediction of §A.4.5; [`archive`]: the Grid Workload
//!   Archive's and the Parallel Workload Archive's (SWF) trace formats.
//! - [`sla`]: Green SLAs (appendix A): the profit model, SA, LP (a MILP), FF and SGP, and
//!   their simulator.
//! - [`par`]: GreenPar (appendix B): Baseline, Reactive, Aggressive, Offline and
//!   Nebulous, and their simulator.

pub mod archive;
pub mod chart;
pub mod generate;
pub mod input;
pub mod par;
pub mod predict;
pub mod profile;
pub mod sla;

pub use chart::power_chart;
pub use input::{Job, Prediction, Solar, EPOCH_H};
pub use profile::EpochPower;
