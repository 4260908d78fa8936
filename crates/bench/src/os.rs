//! The few operating-system calls the harness needs: process CPU time, and a precise,
//! high-priority generator thread.

// getrusage, sysconf, prctl and setpriority are foreign functions; each block says why it is sound.
#![allow(unsafe_code)]

/// CPU time the whole process has used, user and system, in seconds.
pub fn process_cpu_seconds() -> f64 {
    // SAFETY: getrusage writes one rusage struct into the zeroed value we pass.
    unsafe {
        let mut usage: libc::rusage = std::mem::zeroed();
        if libc::getrusage(libc::RUSAGE_SELF, &mut usage) != 0 {
            return 0.0;
        }
        let secs = |t: libc::timeval| t.tv_sec as f64 + t.tv_usec as f64 / 1e6;
        secs(usage.ru_utime) + secs(usage.ru_stime)
    }
}

/// The kernel's clock ticks per second (the unit of /proc/stat), if it says.
pub(crate) fn clock_ticks_per_second() -> Option<f64> {
    // SAFETY: sysconf only reads a configuration value.
    let hz = unsafe { libc::sysconf(libc::_SC_CLK_TCK) };
    (hz > 0).then_some(hz as f64)
}

/// How the generator thread got its priority.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum GeneratorPriority {
    /// Real-time (SCHED_FIFO): it preempts every ordinary thread when a release is due.
    RealTime,
    /// Raised nice value (-10).
    Nice,
    /// Neither was allowed; it runs at the default priority.
    Default,
}

// The real-time ladder (request threads 1, boosted 2, harness 3, hiccup meter 4) is the
// runtime's, so that its emulators and the harness agree.
use tailor_runtime::ThreadClass;
pub(crate) use tailor_runtime::{
    HARNESS_PRIORITY as GENERATOR_PRIORITY, HICCUP_PRIORITY, REQUEST_PRIORITY,
};

/// Makes the calling thread's sleeps precise (timer slack of 1 ns instead of the default
/// 50 us) and gives it the highest priority the process may: real-time (SCHED_FIFO,
/// priority 3), else nice -10. It sleeps between releases and never spins, so real time
/// cannot starve the machine.
pub fn prepare_generator_thread() -> GeneratorPriority {
    prepare_realtime_thread(GENERATOR_PRIORITY)
}

/// As [`prepare_generator_thread`], at real-time priority `priority`.
pub(crate) fn prepare_realtime_thread(priority: i32) -> GeneratorPriority {
    #[cfg(target_os = "linux")]
    // SAFETY: prctl(PR_SET_TIMERSLACK), pthread_setschedparam on pthread_self() and
    // setpriority on the calling thread's id only change this thread's scheduling.
    unsafe {
        libc::prctl(libc::PR_SET_TIMERSLACK, 1 as libc::c_ulong, 0, 0, 0);
        let param = libc::sched_param {
            sched_priority: priority,
        };
        // A process allowed only low real-time priorities (RLIMIT_RTPRIO) gets 1.
        let lowest = libc::sched_param { sched_priority: 1 };
        if libc::pthread_setschedparam(libc::pthread_self(), libc::SCHED_FIFO, &param) == 0
            || libc::pthread_setschedparam(libc::pthread_self(), libc::SCHED_FIFO, &lowest) == 0
        {
            return GeneratorPriority::RealTime;
        }
        if libc::setpriority(libc::PRIO_PROCESS, libc::gettid() as libc::id_t, -10) == 0 {
            return GeneratorPriority::Nice;
        }
    }
    GeneratorPriority::Default
}

/// How the operating system schedules a live run's request threads.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Scheduler {
    /// The kernel's default fair scheduler (SCHED_OTHER).
    Fair,
    /// Real-time round robin (SCHED_RR) at priority 1, below the harness's own threads.
    /// The kernel's real-time class places a runnable thread on any CPU running something
    /// of lower priority at once, where the fair scheduler's load balancing can leave a
    /// CPU idle for milliseconds while a thread waits behind another (docs/demo.md,
    /// "2026-11-25 afternoon: the fair scheduler leaves a core idle").
    RoundRobin,
}

impl Scheduler {
    /// The name used on the command line and in reports.
    pub fn name(self) -> &'static str {
        match self {
            Scheduler::Fair => "fair",
            Scheduler::RoundRobin => "rr",
        }
    }

    /// A one-line description of the request threads' scheduling, for reports.
    pub fn describe(self) -> &'static str {
        match self {
            Scheduler::Fair => "request threads under the fair scheduler (SCHED_OTHER)",
            Scheduler::RoundRobin => {
                "request threads under SCHED_RR (real-time round robin, priority 1; the \
                 generator, submitter and hiccup meter above them)"
            }
        }
    }
}

/// Why the calling thread could not take a scheduler.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "the operating system refused SCHED_RR at priorities 1-4 for the request and harness \
     threads ({0}); it needs root, CAP_SYS_NICE or an RLIMIT_RTPRIO of at least 4 \
     (`ulimit -r`), or use --scheduler fair"
)]
pub struct SchedulerError(String);

/// The calling thread's scheduling policy and priority, set for a scope: threads it starts
/// meanwhile (the runtime's pools, tantivy's executor, the submitter) inherit them. On
/// drop the thread gets back what it had.
pub struct SchedulerGuard {
    saved: Option<ThreadClass>,
    /// It belongs to the thread it changed (not `Send`).
    _thread: std::marker::PhantomData<*const ()>,
}

impl SchedulerGuard {
    /// Gives the calling thread `scheduler`'s policy until the guard drops. Fair changes
    /// nothing (the thread keeps what it has).
    pub fn enter(scheduler: Scheduler) -> Result<SchedulerGuard, SchedulerError> {
        let saved = match scheduler {
            Scheduler::Fair => None,
            Scheduler::RoundRobin => {
                let saved = ThreadClass::current().ok_or_else(|| {
                    SchedulerError("cannot read the thread's scheduling class".into())
                })?;
                // The harness's threads need up to HICCUP_PRIORITY: try it first, so that
                // a process limited below it is refused here rather than measured wrong.
                for priority in [HICCUP_PRIORITY, REQUEST_PRIORITY] {
                    if let Err(e) = ThreadClass::round_robin(priority).try_apply() {
                        saved.apply();
                        return Err(SchedulerError(e.to_string()));
                    }
                }
                Some(saved)
            }
        };
        Ok(SchedulerGuard {
            saved,
            _thread: std::marker::PhantomData,
        })
    }
}

impl Drop for SchedulerGuard {
    fn drop(&mut self) {
        // Giving back the class the thread had succeeds unless the process's limits were
        // lowered meanwhile; then the thread keeps SCHED_RR at priority 1, and there is
        // nothing better to do in a drop.
        if let Some(saved) = self.saved {
            saved.apply();
        }
    }
}

/// Whether the calling thread runs in a real-time class (its threads' requests then do).
pub(crate) fn current_is_realtime() -> bool {
    ThreadClass::current().is_some_and(ThreadClass::is_realtime)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_robin_holds_for_its_scope_or_says_what_it_needs() {
        std::thread::spawn(|| {
            assert!(!current_is_realtime());
            match SchedulerGuard::enter(Scheduler::RoundRobin) {
                Ok(guard) => {
                    assert!(current_is_realtime());
                    let child = std::thread::spawn(current_is_realtime).join().unwrap();
                    assert!(child, "a thread started in the scope inherits the class");
                    drop(guard);
                    assert!(!current_is_realtime());
                }
                Err(e) => assert!(e.to_string().contains("CAP_SYS_NICE"), "{e}"),
            }
            let _fair = SchedulerGuard::enter(Scheduler::Fair).unwrap();
            assert!(!current_is_realtime());
        })
        .join()
        .unwrap();
    }
}
