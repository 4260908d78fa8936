//! tailor's core: the workload model, table types and file formats that every other crate shares.
//!
//! Nothing here holds threads, clocks or I/O beyond reading and writing files: demand
//! profiles and binned distributions (shared/spec/formats.md), demand distributions and
//! presets, speedup curves, arrival processes, and the planned tables.

mod arrivals;
mod csvfile;
mod demand;
mod distribution;
mod error;
mod job;
mod policy;
mod profile;
mod shapes;
mod speedup;
mod summary;
mod table;

pub use arrivals::{parse_trace, read_trace, ArrivalError, ArrivalStream, Arrivals, Phase};
pub use demand::{lognormal_params, Demand, DemandModel, RequestDemand};
pub use distribution::{Bin, BinnedDistribution, PROBABILITY_TOLERANCE};
pub use error::{Location, ReadError, ReadErrorKind, SpecError};
pub use job::Job;
pub use policy::{Admission, Policy, Tables};
pub use profile::{DemandProfile, RequestProfile};
pub use shapes::Shape;
pub use speedup::{Speedup, SpeedupSpec};
pub use summary::{exact_quantile, LatencyRecorder, LatencyStats, PhaseStats, RunSummary};
pub use table::{
    AdaptiveRow, AdaptiveTable, IntervalRow, IntervalTable, ADAPTIVE_TABLE_KIND,
    INTERVAL_TABLE_KIND,
};

/// The random generator used everywhere: ChaCha8, whose stream is fixed by its seed on
/// every platform and version, so a seed repeats a run exactly.
pub type Rng = rand_chacha::ChaCha8Rng;

/// A generator seeded with `seed`.
pub fn seeded_rng(seed: u64) -> Rng {
    use rand::SeedableRng;
    Rng::seed_from_u64(seed)
}
