//! tailor's core: the workload model, table types and file formats that every other crate shares.
//!
//! Nothing here holds threads, clocks or I/O beyond reading and writing files: demand
//! profiles and binned distributions (shared/spec/formats.md), demand distributions and
//! presets, speedup curves, arrival processes, and the planned tables.

mod arrivals;
mod baselines;
mod calibration;
mod control;
mod csvfile;
mod demand;
mod distribution;
mod dvfs;
mod epochs;
mod error;
mod governor;
mod guard;
mod hetero;
mod job;
mod policy;
mod profile;
mod reissue;
mod s2f;
mod shapes;
mod speed;
mod speedup;
mod steal;
mod summary;
mod table;

pub use arrivals::{
    parse_trace, read_trace, ArrivalError, ArrivalStream, Arrivals, Phase, MAX_REQUESTS,
};
pub use baselines::{oblivious_moves, rc_moves, RcRequest};
pub use calibration::{
    serial_fraction, Calibration, CalibrationRun, CalibrationSource, Curve, Units,
    CALIBRATION_KIND, MIN_SLOWDOWN,
};
pub use control::{
    identify_schedule, EetlController, EetlPlan, GainSet, Reactive, EETL_PLAN_KIND,
    IDENTIFY_LEVELS, RISE_WINDOWS,
};
pub use demand::{lognormal_params, Demand, DemandModel, RequestDemand};
pub use distribution::{Bin, BinnedDistribution, PROBABILITY_TOLERANCE};
pub use dvfs::{DvfsCores, DvfsPolicy, PStates, Scope, StaticRule, DVFS_POLICY_FORMS, MAX_PSTATES};
pub use epochs::{ThresholdControl, LOAD_WINDOW};
pub use error::{clip, Location, ReadError, ReadErrorKind, SpecError, QUOTE_CHARS};
pub use governor::{
    pelt, pstate_for_age, schedutil_decide, schedutil_target, Pegasus, PEGASUS_HOLD_MS,
    PEGASUS_INSTANT_MS, PEGASUS_OVERALL_MS, PEGASUS_PERIOD_MS, PELT_HALF_LIFE_MS,
    SCHEDUTIL_HEADROOM, SCHEDUTIL_RATE_LIMIT_MS,
};
pub use guard::{helpers_granted, start_threads};
pub use hetero::{
    as2f_moves, dynamic_power, CoreSet, CoreType, Move, Placed, AGE_TOLERANCE_MS, MAX_CORES,
    STATIC_SHARE,
};
pub use job::Job;
pub use policy::{Admission, Policy, Tables};
pub use profile::{DemandProfile, ProfileConditions, RequestProfile};
pub use reissue::{write_shard_records, Noise, Reissue, ShardLog, ShardRecord, HEDGE_MIN_SAMPLES};
pub use s2f::{HeteroPolicy, HETERO_POLICY_FORMS};
pub use shapes::Shape;
pub use speed::{SpeedTrace, MAX_WORK_SCALE};
pub use speedup::{Speedup, SpeedupSpec, ThreadModel};
pub use steal::{Dissolve, StealAdmission, StealPolicy, STEAL_POLICY_NAMES};
pub use summary::{
    degree_stats, exact_quantile, phase_stats, quantile_in_place, DegreeStats, EnergySummary,
    EpochStats, HostStats, LatencyRecorder, LatencyStats, PhaseStats, RunSummary, NOISE_CPU_SHARE,
    NOISE_STALL_MS,
};
pub use table::{
    AdaptiveRow, AdaptiveTable, IntervalRow, IntervalTable, TailControlRow, TailControlTable,
    ADAPTIVE_TABLE_KIND, INTERVAL_TABLE_KIND, TAIL_CONTROL_TABLE_KIND,
};

/// The random generator used everywhere: ChaCha8, whose stream is fixed by its seed on
/// every platform and version, so a seed repeats a run exactly.
pub type Rng = rand_chacha::ChaCha8Rng;

/// A generator seeded with `seed`.
pub fn seeded_rng(seed: u64) -> Rng {
    use rand::SeedableRng;
    Rng::seed_from_u64(seed)
}

/// The generators of a run's workload: arrival times, and request demands drawn in
/// arrival order. Both engines (the simulator and the live harness) draw from these, so a
/// seed gives them the same workload.
pub fn workload_rngs(seed: u64) -> (Rng, Rng) {
    /// Salt that separates the demand stream from the arrival stream of a seed.
    const DEMAND_STREAM: u64 = 0x9E37_79B9_7F4A_7C15;
    (seeded_rng(seed), seeded_rng(seed ^ DEMAND_STREAM))
}

/// A number in `0..n` from a seeded splitmix64 stream whose state is `state`: the cheap
/// choices of victims, queues and cores in the simulator and the live runtime.
pub fn splitmix_below(state: &mut u64, n: usize) -> usize {
    *state = state.wrapping_add(0x9E37_79B9_7F4A_7C15);
    let mut x = *state;
    x = (x ^ (x >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    x = (x ^ (x >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    ((x ^ (x >> 31)) % n.max(1) as u64) as usize
}
