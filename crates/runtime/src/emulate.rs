//! Slow cores emulated on a homogeneous machine by duty cycling, and thread pinning.
//!
//! Haque's dissertation (ch. 5, §5.2.3) emulates slower cores by running, on each "slow"
//! core, a CPU-bound background thread that computes for part of every period and sleeps
//! for the rest, with periods of 100 to 500 us. A request thread pinned to that core gets
//! what the background thread leaves, so a planned slowdown f (the core at 1/f of its
//! speed) takes a duty cycle of 1 - 1/f. The background thread must win the core whenever
//! it wants it: it asks for SCHED_FIFO at priority 3 (real-time, above every ordinary
//! thread, and above request threads run under SCHED_RR at 1 or boosted at 2), and failing that for
//! nice -20.

// sched_setaffinity, sched_setscheduler and setpriority are foreign functions; every
// unsafe block says why it is sound.
#![allow(unsafe_code)]

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// Pins the calling thread to one CPU. Returns whether the kernel accepted it.
pub fn pin_current_thread(cpu: usize) -> bool {
    if cpu >= libc::CPU_SETSIZE as usize {
        return false;
    }
    // SAFETY: cpu_set_t is plain data, zeroed is a valid empty set; CPU_SET writes a bit
    // inside it (cpu < CPU_SETSIZE, checked above); sched_setaffinity reads exactly
    // size_of::<cpu_set_t>() bytes from a valid pointer; pid 0 is the calling thread.
    unsafe {
        let mut set: libc::cpu_set_t = std::mem::zeroed();
        libc::CPU_SET(cpu, &mut set);
        libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &set) == 0
    }
}

/// How the emulator thread got priority over request threads.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EmulatorPriority {
    /// SCHED_FIFO at priority 3: it preempts every ordinary thread, and request threads
    /// under SCHED_RR (at 1, boosted at 2), at once.
    RealTime,
    /// Nice -20: a CFS weight about 86 times an ordinary thread's.
    Nice,
    /// Neither was allowed; the emulator competes as an ordinary thread and the
    /// slowdown will fall short of the plan.
    Ordinary,
}

fn raise_current_thread() -> EmulatorPriority {
    // SAFETY: sched_param is plain data; the pointer is valid for the call; pid 0 is the
    // calling thread.
    let fifo = unsafe {
        let param = libc::sched_param {
            sched_priority: crate::HARNESS_PRIORITY,
        };
        libc::sched_setscheduler(0, libc::SCHED_FIFO, &param) == 0
    };
    if fifo {
        return EmulatorPriority::RealTime;
    }
    // SAFETY: gettid and setpriority take plain integers.
    let nice = unsafe {
        let tid = libc::gettid() as libc::id_t;
        libc::setpriority(libc::PRIO_PROCESS, tid, -20) == 0
    };
    if nice {
        EmulatorPriority::Nice
    } else {
        EmulatorPriority::Ordinary
    }
}

/// A running slow-core emulator; stopped and joined on drop.
#[derive(Debug)]
pub struct SlowCore {
    stop: Arc<AtomicBool>,
    thread: Option<JoinHandle<()>>,
    priority: EmulatorPriority,
    pinned: bool,
    duty: Duty,
}

/// A handle that changes a running emulator's slowdown (DVFS emulation, issue 42): the
/// emulator reads its busy time at the start of each period, so a change lands within
/// one period.
#[derive(Debug, Clone)]
pub struct Duty {
    busy_ns: Arc<AtomicU64>,
    period: Duration,
    loss: Duration,
}

impl Duty {
    fn busy_for(&self, slowdown: f64) -> Duration {
        self.period
            .mul_f64(1.0 - 1.0 / slowdown)
            .saturating_sub(self.loss)
    }

    /// Runs other threads at 1/`slowdown` of the CPU's speed from the next period on
    /// (1: the emulator stays out of the way). Values below 1 or not finite count as 1.
    pub fn set_slowdown(&self, slowdown: f64) {
        let f = if slowdown.is_finite() {
            slowdown.max(1.0)
        } else {
            1.0
        };
        let ns = u64::try_from(self.busy_for(f).as_nanos()).unwrap_or(u64::MAX);
        self.busy_ns.store(ns, Ordering::Relaxed);
    }
}

impl SlowCore {
    /// Starts duty cycling `cpu` so that it runs other threads at 1/`slowdown` of its
    /// speed: every `period`, the emulator computes for (1 - 1/slowdown) of it and sleeps
    /// for the rest. `slowdown` must be at least 1 (1 starts nothing that takes time).
    pub fn start(cpu: usize, slowdown: f64, period: Duration) -> std::io::Result<SlowCore> {
        Self::start_compensated(cpu, slowdown, period, Duration::ZERO)
    }

    /// Like [`start`](Self::start), with the emulator computing `loss` less per period:
    /// the time each period costs the other threads beyond the emulator's own share
    /// (two context switches and their cache effects; `tailor emulate` measures it).
    pub fn start_compensated(
        cpu: usize,
        slowdown: f64,
        period: Duration,
        loss: Duration,
    ) -> std::io::Result<SlowCore> {
        assert!(
            slowdown >= 1.0 && slowdown.is_finite(),
            "slowdown must be >= 1"
        );
        let duty = Duty {
            busy_ns: Arc::new(AtomicU64::new(0)),
            period,
            loss,
        };
        duty.set_slowdown(slowdown);
        let busy_ns = duty.busy_ns.clone();
        let stop = Arc::new(AtomicBool::new(false));
        let (tx, rx) = std::sync::mpsc::channel();
        let flag = stop.clone();
        let thread = std::thread::Builder::new()
            .name(format!("tailor-slow-core-{cpu}"))
            .spawn(move || {
                let pinned = pin_current_thread(cpu);
                let priority = raise_current_thread();
                // SAFETY: PR_SET_TIMERSLACK takes an integer argument and affects only
                // this thread. 1 ns of slack keeps each sleep close to its period's end
                // (ordinary threads get 50 us, which would come out of the busy phase).
                unsafe {
                    libc::prctl(libc::PR_SET_TIMERSLACK, 1 as libc::c_ulong);
                }
                let _ = tx.send((pinned, priority));
                let mut next = Instant::now();
                while !flag.load(Ordering::Relaxed) {
                    let until = next + Duration::from_nanos(busy_ns.load(Ordering::Relaxed));
                    while Instant::now() < until {
                        std::hint::spin_loop();
                    }
                    next += period;
                    let now = Instant::now();
                    if next > now {
                        std::thread::sleep(next - now);
                    } else {
                        // Overran (preempted or descheduled): start the next period now.
                        next = now;
                    }
                }
            })?;
        let (pinned, priority) = rx.recv().unwrap_or((false, EmulatorPriority::Ordinary));
        Ok(SlowCore {
            stop,
            thread: Some(thread),
            priority,
            pinned,
            duty,
        })
    }

    /// A handle that changes this emulator's slowdown while it runs.
    pub fn duty(&self) -> Duty {
        self.duty.clone()
    }

    /// The priority the emulator thread got.
    pub fn priority(&self) -> EmulatorPriority {
        self.priority
    }

    /// Whether the emulator thread is pinned to its CPU.
    pub fn pinned(&self) -> bool {
        self.pinned
    }
}

impl Drop for SlowCore {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pinning_takes_a_valid_cpu_and_refuses_an_impossible_one() {
        let handle = std::thread::spawn(|| (pin_current_thread(0), pin_current_thread(1 << 20)));
        let (ok, bad) = handle.join().unwrap();
        assert!(ok);
        assert!(!bad);
    }

    #[test]
    fn a_duty_change_sets_the_busy_share_of_each_period() {
        let slow = SlowCore::start_compensated(
            0,
            1.0,
            Duration::from_micros(200),
            Duration::from_micros(10),
        )
        .unwrap();
        let duty = slow.duty();
        let busy = || Duration::from_nanos(duty.busy_ns.load(Ordering::Relaxed));
        assert_eq!(busy(), Duration::ZERO);
        duty.set_slowdown(2.0);
        assert_eq!(busy(), Duration::from_micros(90));
        duty.set_slowdown(0.5);
        assert_eq!(busy(), Duration::ZERO);
        duty.set_slowdown(f64::NAN);
        assert_eq!(busy(), Duration::ZERO);
    }

    #[test]
    fn an_emulator_starts_and_stops() {
        let slow = SlowCore::start(0, 2.0, Duration::from_micros(200)).unwrap();
        assert!(slow.pinned());
        std::thread::sleep(Duration::from_millis(5));
        drop(slow);
    }
}
