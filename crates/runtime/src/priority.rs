//! Thread priorities for selective boosting, through per-thread nice values.
//!
//! Boosted requests run on a small pool of boost threads whose priority sits above the
//! ordinary pool's. Linux lets an unprivileged thread raise its own nice value (lower its
//! priority) but not lower it, so the two pools get their nice values once, at start-up:
//! - with the privilege (root, CAP_SYS_NICE or a high enough RLIMIT_NICE), ordinary
//!   threads keep nice 0 and boost threads get a real raise to nice -10;
//! - without it, ordinary threads drop to nice +10 and boost threads keep nice 0, which
//!   gives the same relative priority (a CFS weight ratio of about 9);
//! - when the runtime starts on a real-time thread (a live run under `--scheduler rr`),
//!   its threads inherit SCHED_RR, where nice values mean nothing: boost threads then
//!   run one real-time priority above the ordinary ones.

// setpriority and gettid are foreign functions; every unsafe block says why it is sound.
#![allow(unsafe_code)]

use std::fmt;

/// How boosted threads get their priority.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BoostMode {
    /// Boost threads are raised above normal (nice `boosted` < 0); ordinary threads stay 0.
    Raise {
        /// The boost threads' nice value.
        boosted: i32,
    },
    /// Ordinary threads are lowered (nice `ordinary` > 0); boost threads stay at 0.
    LowerOthers {
        /// The ordinary threads' nice value.
        ordinary: i32,
    },
    /// The threads run in a real-time class at priority `ordinary`; boost threads get
    /// `boosted` (one above).
    RealTime {
        /// The ordinary threads' real-time priority (inherited).
        ordinary: i32,
        /// The boost threads' real-time priority.
        boosted: i32,
    },
    /// Neither could be applied (not Linux, or setpriority failed); boosting changes
    /// only which pool runs a request.
    Unavailable,
}

/// The nice step between the pools: 10 steps, a CFS weight ratio of 1024 / 110.
const STEP: i32 = 10;

impl BoostMode {
    /// Finds out what this process may do, by trying a raise on the calling thread and
    /// undoing it.
    pub fn detect() -> BoostMode {
        if let Some(class) = ThreadClass::current().filter(|c| c.is_realtime()) {
            // Nice values mean nothing here: try one real-time priority up, and undo it.
            let ordinary = class.priority;
            let raised = set_current_realtime(ordinary + 1);
            class.apply();
            return if raised {
                BoostMode::RealTime {
                    ordinary,
                    boosted: ordinary + 1,
                }
            } else {
                BoostMode::Unavailable
            };
        }
        let Some(original) = current_nice() else {
            return BoostMode::Unavailable;
        };
        if set_current_nice(original - STEP) {
            set_current_nice(original);
            BoostMode::Raise {
                boosted: original - STEP,
            }
        } else if set_current_nice(original) {
            BoostMode::LowerOthers {
                ordinary: original + STEP,
            }
        } else {
            BoostMode::Unavailable
        }
    }

    /// The nice values (ordinary, boosted) to give the pools, where they change.
    pub(crate) fn nice_values(self) -> (Option<i32>, Option<i32>) {
        match self {
            BoostMode::Raise { boosted } => (None, Some(boosted)),
            BoostMode::LowerOthers { ordinary } => (Some(ordinary), None),
            BoostMode::RealTime { .. } | BoostMode::Unavailable => (None, None),
        }
    }

    /// The boost threads' real-time priority, under a real-time class.
    pub(crate) fn realtime_boost(self) -> Option<i32> {
        match self {
            BoostMode::RealTime { boosted, .. } => Some(boosted),
            _ => None,
        }
    }
}

impl fmt::Display for BoostMode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            BoostMode::Raise { boosted } => write!(
                f,
                "boosting raises boosted threads to nice {boosted} (ordinary threads stay at 0)"
            ),
            BoostMode::LowerOthers { ordinary } => write!(
                f,
                "boosting lowers ordinary threads to nice {ordinary} (boosted threads keep 0): \
                 this process may not raise priorities"
            ),
            BoostMode::RealTime { ordinary, boosted } => write!(
                f,
                "boosting raises boosted threads to real-time priority {boosted} (ordinary \
                 threads at {ordinary}, as the runtime was started)"
            ),
            BoostMode::Unavailable => {
                write!(f, "boosting cannot change priorities on this system")
            }
        }
    }
}

/// The calling thread's nice value.
#[cfg(target_os = "linux")]
fn current_nice() -> Option<i32> {
    // SAFETY: getpriority has no memory effects; errno is reset first because -1 is a
    // valid nice value, and read through the libc accessor.
    unsafe {
        *libc::__errno_location() = 0;
        let tid = libc::gettid() as libc::id_t;
        let nice = libc::getpriority(libc::PRIO_PROCESS, tid);
        if nice == -1 && *libc::__errno_location() != 0 {
            None
        } else {
            Some(nice)
        }
    }
}

#[cfg(not(target_os = "linux"))]
fn current_nice() -> Option<i32> {
    None
}

/// Sets the calling thread's nice value (on Linux a nice value belongs to a thread).
#[cfg(target_os = "linux")]
pub(crate) fn set_current_nice(nice: i32) -> bool {
    // SAFETY: setpriority on the calling thread's id has no memory effects.
    unsafe {
        let tid = libc::gettid() as libc::id_t;
        libc::setpriority(libc::PRIO_PROCESS, tid, nice) == 0
    }
}

#[cfg(not(target_os = "linux"))]
pub(crate) fn set_current_nice(_nice: i32) -> bool {
    false
}

/// Real-time priorities, lowest first, for live runs under SCHED_RR: request threads at
/// [`REQUEST_PRIORITY`] (FM's boosted threads one above); the harness's load generator
/// and submitter, FM's admission thread and the slow-core emulators at
/// [`HARNESS_PRIORITY`], so that none waits behind a request; the hiccup meter at
/// [`HICCUP_PRIORITY`], so that it measures only what stops every thread.
pub const REQUEST_PRIORITY: i32 = 1;
/// See [`REQUEST_PRIORITY`].
pub const HARNESS_PRIORITY: i32 = 3;
/// See [`REQUEST_PRIORITY`].
pub const HICCUP_PRIORITY: i32 = 4;

/// A thread's scheduling policy and priority: to give a thread started elsewhere the
/// class of the thread that started the runtime, or to set a class for a scope.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ThreadClass {
    policy: libc::c_int,
    priority: libc::c_int,
}

impl ThreadClass {
    /// SCHED_RR at `priority`.
    pub fn round_robin(priority: i32) -> ThreadClass {
        ThreadClass {
            policy: libc::SCHED_RR,
            priority,
        }
    }

    /// The calling thread's class, if the kernel says.
    pub fn current() -> Option<ThreadClass> {
        // SAFETY: pthread_getschedparam writes into valid pointers to locals.
        unsafe {
            let mut policy: libc::c_int = 0;
            let mut param: libc::sched_param = std::mem::zeroed();
            (libc::pthread_getschedparam(libc::pthread_self(), &mut policy, &mut param) == 0)
                .then_some(ThreadClass {
                    policy,
                    priority: param.sched_priority,
                })
        }
    }

    /// Whether it is a real-time class (SCHED_RR or SCHED_FIFO).
    pub fn is_realtime(self) -> bool {
        self.policy == libc::SCHED_RR || self.policy == libc::SCHED_FIFO
    }

    /// Gives the calling thread this class, or says why the kernel refused.
    pub fn try_apply(self) -> std::io::Result<()> {
        // SAFETY: pthread_setschedparam on pthread_self() reads a valid sched_param and
        // changes only this thread's scheduling; it returns an error number, not -1.
        let err = unsafe {
            let param = libc::sched_param {
                sched_priority: self.priority,
            };
            libc::pthread_setschedparam(libc::pthread_self(), self.policy, &param)
        };
        match err {
            0 => Ok(()),
            e => Err(std::io::Error::from_raw_os_error(e)),
        }
    }

    /// Gives the calling thread this class; returns whether the kernel agreed.
    pub fn apply(self) -> bool {
        self.try_apply().is_ok()
    }
}

/// Gives the calling thread SCHED_RR at `priority`; returns whether the kernel agreed.
pub(crate) fn set_current_realtime(priority: i32) -> bool {
    ThreadClass::round_robin(priority).apply()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn detection_restores_the_thread() {
        let before = current_nice();
        let mode = BoostMode::detect();
        assert_eq!(current_nice(), before);
        assert!(!mode.to_string().is_empty());
    }

    #[test]
    fn under_a_real_time_class_boosting_is_one_priority_up_and_detection_undoes_it() {
        std::thread::spawn(|| {
            if !set_current_realtime(1) {
                return; // no privilege here: the fair-class path is tested above
            }
            let before = ThreadClass::current();
            let mode = BoostMode::detect();
            assert_eq!(ThreadClass::current(), before);
            assert_eq!(
                mode,
                BoostMode::RealTime {
                    ordinary: 1,
                    boosted: 2
                }
            );
            assert_eq!(mode.nice_values(), (None, None));
            assert_eq!(mode.realtime_boost(), Some(2));
        })
        .join()
        .unwrap();
    }

    #[test]
    fn a_thread_can_always_lower_itself() {
        std::thread::spawn(|| {
            let n = current_nice().unwrap_or(0);
            assert!(set_current_nice((n + 1).min(19)));
        })
        .join()
        .unwrap();
    }
}
