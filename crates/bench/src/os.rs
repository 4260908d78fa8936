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

/// Makes the calling thread's sleeps precise (timer slack of 1 ns instead of the default
/// 50 us) and gives it the highest priority the process may: real-time (SCHED_FIFO,
/// priority 1), else nice -10. It sleeps between releases and never spins, so real time
/// cannot starve the machine.
pub fn prepare_generator_thread() -> GeneratorPriority {
    prepare_realtime_thread(1)
}

/// As [`prepare_generator_thread`], at real-time priority `priority`: the hiccup meter
/// takes 2, above the generator's and the slow-core emulators' 1, so that it measures
/// only what stops every thread.
pub(crate) fn prepare_realtime_thread(priority: i32) -> GeneratorPriority {
    #[cfg(target_os = "linux")]
    // SAFETY: prctl(PR_SET_TIMERSLACK), pthread_setschedparam on pthread_self() and
    // setpriority on the calling thread's id only change this thread's scheduling.
    unsafe {
        libc::prctl(libc::PR_SET_TIMERSLACK, 1 as libc::c_ulong, 0, 0, 0);
        let param = libc::sched_param {
            sched_priority: priority,
        };
        if libc::pthread_setschedparam(libc::pthread_self(), libc::SCHED_FIFO, &param) == 0 {
            return GeneratorPriority::RealTime;
        }
        if libc::setpriority(libc::PRIO_PROCESS, libc::gettid() as libc::id_t, -10) == 0 {
            return GeneratorPriority::Nice;
        }
    }
    GeneratorPriority::Default
}
