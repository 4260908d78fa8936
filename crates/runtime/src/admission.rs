//! Admission control: who starts now, who waits (first come, first served), who is refused.
//!
//! Every policy but FM runs at most `workers` requests at once and queues the rest. FM
//! admits by its interval table (FM paper §4.2): start now, start after v0 (a single
//! admission thread releases delayed requests; no thread or timer per request), or wait
//! for another request to leave. Waiting requests are bounded; past the bound a
//! submission is refused. Decisions take one short lock per request, never per unit.

use arc_swap::ArcSwap;
use std::collections::{BinaryHeap, VecDeque};
use std::sync::{Arc, Condvar, Mutex};
use std::time::Instant;

use tailor_core::{Admission, Policy};

use crate::request::Work;

/// A request released at `due`; earliest first, then by id.
struct Delayed {
    due: Instant,
    work: Arc<dyn Work>,
}

impl PartialEq for Delayed {
    fn eq(&self, other: &Self) -> bool {
        (self.due, self.work.core().id) == (other.due, other.work.core().id)
    }
}
impl Eq for Delayed {}
impl PartialOrd for Delayed {
    fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}
impl Ord for Delayed {
    fn cmp(&self, other: &Self) -> std::cmp::Ordering {
        (other.due, other.work.core().id).cmp(&(self.due, self.work.core().id))
    }
}

struct State {
    /// Whether new submissions are taken.
    accepting: bool,
    /// Requests started and not yet finished.
    running: usize,
    /// Waiting for a worker (pool policies) or for an exit (FM's e1).
    queue: VecDeque<Arc<dyn Work>>,
    /// Waiting out FM's admission delay v0.
    delayed: BinaryHeap<Delayed>,
    /// Set when the admission thread should stop.
    closed: bool,
}

/// What to do with a submitted request.
pub(crate) enum Decision {
    /// Start it now; `after_exit` says it was admitted on an exit (FM's e1).
    Start { after_exit: bool },
    /// It waits; the admission side will start it.
    Wait,
    /// The waiting room is full.
    Full,
    /// The runtime is shutting down.
    Closed,
}

pub(crate) struct Admitter {
    state: Mutex<State>,
    /// Wakes the admission thread when a delayed request arrives or at shutdown.
    wake: Condvar,
    /// The running policy, swappable (`Runtime::set_policy`).
    policy: Arc<ArcSwap<Policy>>,
    workers: usize,
    bound: usize,
}

impl Admitter {
    pub(crate) fn new(policy: Arc<ArcSwap<Policy>>, workers: usize, bound: usize) -> Admitter {
        Admitter {
            state: Mutex::new(State {
                accepting: true,
                running: 0,
                queue: VecDeque::new(),
                delayed: BinaryHeap::new(),
                closed: false,
            }),
            wake: Condvar::new(),
            policy,
            workers,
            bound,
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Decides for a request arriving at `load` (itself included).
    pub(crate) fn submit(&self, work: &Arc<dyn Work>, load: usize) -> Decision {
        let mut s = self.lock();
        if !s.accepting {
            return Decision::Closed;
        }
        let waiting = s.queue.len() + s.delayed.len();
        let policy = self.policy.load();
        if policy.uses_worker_pool() {
            if s.running < self.workers {
                s.running += 1;
                return Decision::Start { after_exit: false };
            }
        } else {
            match policy.admission(load) {
                Admission::Now => {
                    s.running += 1;
                    return Decision::Start { after_exit: false };
                }
                Admission::Delay(ms) => {
                    if waiting >= self.bound {
                        return Decision::Full;
                    }
                    let due = Instant::now() + std::time::Duration::from_secs_f64(ms / 1000.0);
                    s.delayed.push(Delayed {
                        due,
                        work: work.clone(),
                    });
                    self.wake.notify_one();
                    return Decision::Wait;
                }
                // With nothing running or about to run, no exit would ever come.
                Admission::OnExit if s.running == 0 && s.delayed.is_empty() => {
                    s.running += 1;
                    return Decision::Start { after_exit: true };
                }
                Admission::OnExit => {}
            }
        }
        if waiting >= self.bound {
            return Decision::Full;
        }
        s.queue.push_back(work.clone());
        Decision::Wait
    }

    /// A request finished: returns the next to start from the queue, if any, and whether
    /// it was admitted on an exit.
    pub(crate) fn exit(&self) -> Option<(Arc<dyn Work>, bool)> {
        let mut s = self.lock();
        s.running -= 1;
        let next = s.queue.pop_front()?;
        s.running += 1;
        Some((next, !self.policy.load().uses_worker_pool()))
    }

    /// The admission thread's loop: releases delayed requests when due, until closed.
    pub(crate) fn release_delayed(&self, start: impl Fn(Arc<dyn Work>)) {
        let mut s = self.lock();
        loop {
            if s.closed {
                return;
            }
            let now = Instant::now();
            match s.delayed.peek() {
                Some(d) if d.due <= now => {
                    let d = s.delayed.pop().expect("peeked");
                    s.running += 1;
                    drop(s);
                    start(d.work);
                    s = self.lock();
                }
                Some(d) => {
                    let wait = d.due - now;
                    s = self
                        .wake
                        .wait_timeout(s, wait)
                        .unwrap_or_else(|e| e.into_inner())
                        .0;
                }
                None => s = self.wake.wait(s).unwrap_or_else(|e| e.into_inner()),
            }
        }
    }

    /// Refuses new submissions; waiting requests stay and still start.
    pub(crate) fn stop_accepting(&self) {
        self.lock().accepting = false;
    }

    /// Takes every request still waiting (to cancel them).
    pub(crate) fn take_waiting(&self) -> Vec<Arc<dyn Work>> {
        let mut s = self.lock();
        let mut waiting: Vec<Arc<dyn Work>> = s.queue.drain(..).collect();
        waiting.extend(s.delayed.drain().map(|d| d.work));
        waiting
    }

    /// Requests waiting for admission now.
    pub(crate) fn waiting(&self) -> usize {
        let s = self.lock();
        s.queue.len() + s.delayed.len()
    }

    /// Stops the admission thread.
    pub(crate) fn close(&self) {
        self.lock().closed = true;
        self.wake.notify_all();
    }
}
