//! `--scheduler`: how the operating system schedules a live run's request threads.

use tailor_bench::{Scheduler, SchedulerGuard};

/// The operating system's scheduler for the request threads of live runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub(crate) enum SchedulerArg {
    /// SCHED_RR where the process may (root, CAP_SYS_NICE or RLIMIT_RTPRIO), else the
    /// fair scheduler, with a note.
    Auto,
    /// The kernel's fair scheduler (SCHED_OTHER).
    Fair,
    /// Real-time round robin (SCHED_RR, priority 1, below the harness's threads); an
    /// error where the process may not.
    Rr,
}

impl SchedulerArg {
    /// The scheduler the runs will use: `auto` tries SCHED_RR once and falls back.
    pub(crate) fn resolve(self) -> anyhow::Result<Scheduler> {
        match self {
            SchedulerArg::Fair => Ok(Scheduler::Fair),
            SchedulerArg::Rr => {
                drop(SchedulerGuard::enter(Scheduler::RoundRobin)?);
                Ok(Scheduler::RoundRobin)
            }
            SchedulerArg::Auto => match SchedulerGuard::enter(Scheduler::RoundRobin) {
                Ok(guard) => {
                    drop(guard);
                    Ok(Scheduler::RoundRobin)
                }
                Err(e) => {
                    eprintln!("tailor: note: {e}; live runs use the fair scheduler");
                    Ok(Scheduler::Fair)
                }
            },
        }
    }
}

/// A one-line description for reports (`Scheduler::describe`).
pub(crate) fn describe(scheduler: Scheduler) -> &'static str {
    scheduler.describe()
}
