//! tailor's evaluation harness: the demo, its statistics and charts, and the table check.
//!
//! `tailor demo`'s live runs, projection, verdict and chart, and the check that simulates
//! a planned FM table against SEQ.
//!
//! The binary parses its flags into a [`DemoConfig`] and calls [`run_demo`]; `tailor plan
//! fm` calls [`check_fm_table`] and [`print_check`]. Everything else is crate-private:
//!
//! - `demo.rs` strings the phases together (profile, plan, live rounds, projection,
//!   results); `demo_setup.rs` plans the tables, probes SEQ's capacity, draws each query's
//!   costs and makes the projection's calibration; `demo_profile.rs` keeps the query
//!   profile with its conditions and unit times; `demo_keep.rs` keeps the tables and
//!   prints the `tailor serve` and `tailor load` commands that use them.
//! - `verdict.rs` pools a cell's rounds and gives FM's verdict per load from the
//!   two-stage bootstrap of `bootstrap.rs`.
//! - `projection.rs` predicts degree-d times from unit times and simulates the projected
//!   profile at 16 and 64 cores, and the live cells at the machine's cores, each query at
//!   costs drawn by `spread.rs`.
//! - `demo_report.rs` prints the comparison, the model check and the projections;
//!   `chart.rs` draws the latency chart (plotters).
//! - `plan_check.rs` is the check after `tailor plan fm`.

mod bootstrap;
mod chart;
mod demo;
mod demo_keep;
mod demo_profile;
mod demo_report;
mod demo_setup;
mod error;
mod plan_check;
mod projection;
mod spread;
mod verdict;

pub use demo::{run_demo, DemoConfig, DemoFormat, DEMO_PHASES};
pub use error::EvalError;
pub use plan_check::{check_fm_table, print_check, CheckRow};
pub use projection::TargetChoice;

/// A progress bar for one long phase of the demo (profiling, the live rounds). The
/// binary draws it on a terminal; the demo only says how far it is.
pub trait Bar {
    /// `done` of `total` steps are done.
    fn set(&self, done: u64, total: u64);
    /// Prints `line` above the bar, on stderr.
    fn println(&self, line: String);
    /// Clears the bar.
    fn finish(self: Box<Self>);
}

/// Starts a [`Bar`] for `total` steps of the phase named by the first argument.
pub type Bars<'a> = &'a dyn Fn(&str, u64) -> Box<dyn Bar>;
