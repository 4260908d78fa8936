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

//! - [`profile`]: a run's power epoch by epoch, for charts.

pub mod input;
pub mod profile;

pub use input::{Job, Prediction, Solar, EPOCH_H};
pub use profile::EpochPower;
