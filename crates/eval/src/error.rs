//! `EvalError`, what stopped an evaluation, and the one-line form of an error's chain.

use std::error::Error;
use std::io;
use std::path::Path;

use tailor_bench::{LiveError, SchedulerError};
use tailor_core::{ReadError, SpecError};
use tailor_plan::PlanError;
use tailor_runtime::StartError;
use tailor_sim::SimError;

/// Why the demo or the check of a planned table stopped.
#[derive(Debug, thiserror::Error)]
pub enum EvalError {
    /// A profile, table or calibration file could not be read.
    #[error(transparent)]
    Read(#[from] ReadError),
    /// A policy or demand the evaluation built was refused.
    #[error(transparent)]
    Spec(#[from] SpecError),
    /// A planner refused its problem (FM's or Adaptive's table).
    #[error(transparent)]
    Plan(#[from] PlanError),
    /// The simulator refused a run.
    #[error(transparent)]
    Sim(#[from] SimError),
    /// The runtime that measures the query profile did not start.
    #[error(transparent)]
    Start(#[from] StartError),
    /// A live run failed.
    #[error(transparent)]
    Live(#[from] LiveError),
    /// The live runs' scheduler (`--scheduler`) could not be entered.
    #[error(transparent)]
    Scheduler(#[from] SchedulerError),
    /// The search requests could not be set up from the prepared index and queries.
    #[error("{0}")]
    Search(String),
    /// The query profile was measured twice under bad conditions (`why`), and a noisy
    /// profile was not accepted.
    #[error(
        "the query profile was measured twice under bad conditions ({why}); a profile \
         taken on a busy machine misstates the queries' speedups, and FM planned from it \
         would be wrong. Stop other programs and run again, or pass \
         --accept-noisy-profile to use it anyway"
    )]
    NoisyProfile {
        /// The conditions' problem, as `ProfileConditions::problem` words it.
        why: String,
    },
    /// The profile of predicted degree-d times could not be made.
    #[error("the projected profile: {0}")]
    ProjectedProfile(String),
    /// Each query's measured costs do not fit the profile or the rates they are for.
    #[error("{0}")]
    Costs(String),
    /// A projected policy overloaded its cores at a load below the profile's capacity.
    #[error("{label} at {cores} cores is overloaded")]
    Overloaded {
        /// The policy's label.
        label: String,
        /// The projected cores.
        cores: usize,
    },
    /// A file or directory could not be written (`what` names it).
    #[error("{what}")]
    File {
        /// What could not be done, with the path.
        what: String,
        /// The operating system's reason.
        #[source]
        source: io::Error,
    },
    /// Writing failed.
    #[error(transparent)]
    Io(#[from] io::Error),
    /// A summary could not be turned into JSON.
    #[error(transparent)]
    Json(#[from] serde_json::Error),
    /// The chart could not be drawn.
    #[error("{0}")]
    Chart(String),
    /// A step failed; `what` says which (a policy at a rate, a candidate target).
    #[error("{what}")]
    Context {
        /// The step, such as "FM at 120 queries/s".
        what: String,
        /// Why it failed.
        #[source]
        source: Box<EvalError>,
    },
}

impl EvalError {
    /// `source` wrapped with what was being done.
    pub(crate) fn context(what: impl Into<String>, source: impl Into<EvalError>) -> EvalError {
        EvalError::Context {
            what: what.into(),
            source: Box::new(source.into()),
        }
    }

    /// An I/O failure on `path`: "cannot `verb` PATH".
    pub(crate) fn file(verb: &str, path: &Path, source: io::Error) -> EvalError {
        EvalError::File {
            what: format!("cannot {verb} {}", path.display()),
            source,
        }
    }
}

/// Adds what was being done to a failure (as `anyhow::Context` does in the binary).
pub(crate) trait Context<T> {
    /// The error wrapped in [`EvalError::Context`] with `what()`.
    fn context_with(self, what: impl FnOnce() -> String) -> Result<T, EvalError>;
}

impl<T, E: Into<EvalError>> Context<T> for Result<T, E> {
    fn context_with(self, what: impl FnOnce() -> String) -> Result<T, EvalError> {
        self.map_err(|e| EvalError::context(what(), e))
    }
}

/// An error and its sources on one line, each after ": " (as the binary prints errors).
pub(crate) fn chain(error: &dyn Error) -> String {
    let mut text = error.to_string();
    let mut source = error.source();
    while let Some(s) = source {
        text.push_str(": ");
        text.push_str(&s.to_string());
        source = s.source();
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_chain_names_each_step_once() {
        let inner = EvalError::file("write", Path::new("/x/y"), io::Error::other("disk full"));
        let e = EvalError::context("FM at 20 queries/s", inner);
        assert_eq!(
            chain(&e),
            "FM at 20 queries/s: cannot write /x/y: disk full"
        );
        let e = EvalError::context("outer", EvalError::Search("no queries".into()));
        assert_eq!(chain(&e), "outer: no queries");
    }
}
