//! tailor's load harness: open-loop live runs of the runtime, and request profiling.

mod live;
pub(crate) mod os;
mod profile;
mod source;

pub use live::{run_live, LiveConfig, LiveError, LiveOutput};
pub use os::GeneratorPriority;
pub use profile::{measure_profile, ProfileConfig};
pub use source::{RequestSource, SearchSource, SyntheticSource};
