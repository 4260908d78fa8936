//! tailor's load harness: open-loop live runs of the runtime, and request profiling.

mod host;
mod live;
mod os;
mod predict;
mod profile;
mod records;
mod source;

pub use host::{HostMeter, HostTrace, HICCUP_MS};
pub use live::{
    release_at, run_live, run_live_keeping_units, HeteroLive, LiveConfig, LiveError, LiveOutput,
    OPEN_LOOP_PREFIX,
};
pub use os::{
    prepare_generator_thread, process_cpu_seconds, GeneratorPriority, Scheduler, SchedulerError,
    SchedulerGuard,
};
pub use predict::{
    charged_profile, predicted_ms, predicted_ms_with_helper_start, projected_profile, serial_ms,
};
pub use profile::{
    measure_profile, measure_profile_in_detail, MeasuredProfile, ProfileConfig, UnitTimes,
    PROFILE_METHOD,
};
pub use records::{profile_from_records, write_records_with_units, RecordsProfile};
pub use source::{AsianSource, BlackScholesSource, RequestSource, SearchSource, SyntheticSource};
