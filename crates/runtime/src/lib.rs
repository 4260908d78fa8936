//! tailor's live runtime: requests run on pooled threads, their degree raised as the
//! policy says.
//!
//! A service submits a [`Job`](tailor_core::Job) (its work as units plus a merge) and gets
//! a [`Handle`], which it can await or wait on. The runtime admits the request (at once,
//! after FM's delay v0, on the next exit, or into a bounded first-come-first-served
//! queue), starts it on one pool thread at the policy's degree, and adds pool threads as
//! the policy raises the degree; an added thread takes the next unclaimed unit. The
//! policies are the decision code of `tailor_core::Policy`, the same the simulator runs.
//!
//! - **Self-scheduling** (FM paper §4.2): the request's first thread re-examines the load
//!   (one atomic counter) and its executed time every quantum, between units. No global
//!   lock is taken per unit and no timer thread serves a request.
//! - **Selective boosting**: a request at the maximum degree moves to a boost pool of
//!   higher priority while the boosted threads stay fewer than the cores; a slot that
//!   frees goes to the oldest request waiting at the maximum degree, which moves there
//!   mid-run, between units ([`BoostMode`] says how the priority is obtained).
//! - **Failures**: a panic in a unit fails that request alone; every submitted request
//!   either resolves or is refused at submission; shutdown drains or cancels.
//! - **Tower**: [`RuntimeLayer`] wraps a service that turns a request into a job; the
//!   [`RuntimeService`] it makes runs the job here, cancels it when its response future is
//!   dropped, and reports `Overloaded` from `poll_ready` while the admission queue is full
//!   (`examples/axum_search.rs` serves an axum route through it).

mod admission;
pub mod emulate;
mod fn_job;
mod guard;
mod handle;
mod layer;
mod metrics;
mod noise;
mod priority;
mod request;
mod runtime;
pub mod s2f;
mod served;
pub mod steal;

pub use handle::{oneshot, Completer, Done, Handle, RequestError, Timing};
pub use layer::{BoxError, RuntimeFuture, RuntimeLayer, RuntimeService, RuntimeServiceError};
pub use metrics::MetricsSnapshot;
pub use priority::{BoostMode, ThreadClass, HARNESS_PRIORITY, HICCUP_PRIORITY, REQUEST_PRIORITY};
pub use runtime::{
    PolicySwapError, Runtime, RuntimeConfig, Shutdown, ShutdownReport, StartError, SubmitError,
    DEFAULT_PROFILE_WINDOW,
};
pub use served::ServedRequest;

pub use fn_job::{job_fn, FnJob};
/// What an embedder needs from `tailor-core`, so that it can depend on this crate alone:
/// the job trait, the policies and their tables.
pub use tailor_core::{AdaptiveTable, IntervalTable, Job, Policy, Tables};

/// The README's Rust snippets, compiled and run as doc-tests (`tests/readme.rs` checks
/// that README.md shows exactly these).
#[cfg(doctest)]
#[doc = include_str!("readme_snippets.md")]
struct ReadmeDoctests;
