//! The core gate of FM's guarded runtime: one token per core, held by every request thread
//! while it works, and the queue of requests waiting for one.
//!
//! The decisions are `tailor_core::helpers_granted` and `start_threads` (docs/guard.md);
//! this is their bookkeeping under one short lock. A core changes hands in four ways:
//! an arriving request takes a free one ([`Gate::arrive`]); a raise takes free ones for
//! its helpers ([`Gate::grant`]); a thread leaving a request hands its core to the oldest
//! waiting request, or frees it ([`Gate::release`]); and a helper at a unit boundary gives
//! its core to a waiting request ([`Gate::yield_core`]). Cores held = cores - free never
//! exceeds the cores: every path that takes one checks `free` under the lock, and a core
//! handed from one request to the next is never free in between. The waiting count is
//! mirrored in an atomic so that a helper checks it between units without the lock.

use std::collections::VecDeque;

#[cfg(loom)]
use loom::sync::atomic::{AtomicUsize, Ordering};
#[cfg(loom)]
use loom::sync::Mutex;
#[cfg(not(loom))]
use std::sync::atomic::{AtomicUsize, Ordering};
#[cfg(not(loom))]
use std::sync::Mutex;

struct State<T> {
    /// Cores no request thread holds.
    free: usize,
    /// Requests waiting for a core, oldest first.
    queue: VecDeque<T>,
    /// Whether new arrivals are taken.
    accepting: bool,
}

/// Why [`Gate::arrive`] did not start a request.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Refusal {
    /// The waiting room is at its bound.
    Full,
    /// The gate stopped accepting (shutdown).
    Closed,
}

pub(crate) struct Gate<T> {
    state: Mutex<State<T>>,
    /// `queue.len()`, readable without the lock.
    waiting: AtomicUsize,
    cores: usize,
    bound: usize,
}

impl<T> Gate<T> {
    /// A gate over `cores` cores with room for `bound` waiting requests.
    pub(crate) fn new(cores: usize, bound: usize) -> Gate<T> {
        Gate {
            state: Mutex::new(State {
                free: cores,
                queue: VecDeque::new(),
                accepting: true,
            }),
            waiting: AtomicUsize::new(0),
            cores,
            bound,
        }
    }

    #[cfg(not(loom))]
    fn lock(&self) -> std::sync::MutexGuard<'_, State<T>> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    #[cfg(loom)]
    fn lock(&self) -> loom::sync::MutexGuard<'_, State<T>> {
        self.state.lock().unwrap()
    }

    fn sync_waiting(&self, s: &State<T>) {
        self.waiting.store(s.queue.len(), Ordering::Release);
    }

    /// A request arrives: `Ok(Some(item))` hands it back with a core to start on now
    /// (none waits and a core is free); `Ok(None)` means it waits its turn.
    pub(crate) fn arrive(&self, item: T) -> Result<Option<T>, Refusal> {
        let mut s = self.lock();
        if !s.accepting {
            return Err(Refusal::Closed);
        }
        if s.queue.is_empty() && s.free > 0 {
            s.free -= 1;
            return Ok(Some(item));
        }
        if s.queue.len() >= self.bound {
            return Err(Refusal::Full);
        }
        s.queue.push_back(item);
        self.sync_waiting(&s);
        Ok(None)
    }

    /// A request released by FM's admission delay: starts now or waits like an arrival,
    /// even after the gate stopped accepting (it was accepted before).
    pub(crate) fn admit_delayed(&self, item: T) -> Option<T> {
        let mut s = self.lock();
        if s.queue.is_empty() && s.free > 0 {
            s.free -= 1;
            return Some(item);
        }
        s.queue.push_back(item);
        self.sync_waiting(&s);
        None
    }

    /// A request's raise: takes the cores for the helpers that
    /// `decide(free cores, waiting requests)` grants (at most the free cores).
    pub(crate) fn grant(&self, decide: impl FnOnce(usize, usize) -> usize) -> usize {
        let mut s = self.lock();
        let n = decide(s.free, s.queue.len()).min(s.free);
        s.free -= n;
        n
    }

    /// The start degree of a request whose first thread holds a core:
    /// `decide(free cores, waiting requests)` threads in all, its first one included;
    /// takes cores for the others.
    pub(crate) fn start(&self, decide: impl FnOnce(usize, usize) -> usize) -> usize {
        1 + self.grant(|free, waiting| decide(free, waiting).saturating_sub(1))
    }

    /// A thread leaves its request: its core goes to the oldest waiting request, which
    /// is returned for the thread to start, or is freed.
    pub(crate) fn release(&self) -> Option<T> {
        let mut s = self.lock();
        match s.queue.pop_front() {
            Some(next) => {
                self.sync_waiting(&s);
                Some(next)
            }
            None => {
                debug_assert!(s.free < self.cores, "a core released twice");
                s.free += 1;
                None
            }
        }
    }

    /// A helper between units: if a request waits, it takes the helper's core (the helper
    /// leaves its request and starts the returned one).
    pub(crate) fn yield_core(&self) -> Option<T> {
        if self.waiting() == 0 {
            return None;
        }
        let mut s = self.lock();
        let next = s.queue.pop_front();
        self.sync_waiting(&s);
        next
    }

    /// Requests waiting for a core now (no lock).
    pub(crate) fn waiting(&self) -> usize {
        self.waiting.load(Ordering::Acquire)
    }

    /// Cores no request thread holds now.
    #[cfg(test)]
    pub(crate) fn free(&self) -> usize {
        self.lock().free
    }

    /// Refuses new arrivals (shutdown); waiting requests stay.
    pub(crate) fn stop_accepting(&self) {
        self.lock().accepting = false;
    }

    /// Takes every waiting request (to cancel them).
    pub(crate) fn take_waiting(&self) -> Vec<T> {
        let mut s = self.lock();
        let all = s.queue.drain(..).collect();
        self.sync_waiting(&s);
        all
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use tailor_core::helpers_granted;

    /// A request in the model: unclaimed units, threads on it, helpers sent to it.
    #[derive(Debug, Clone)]
    struct Req {
        unclaimed: usize,
        threads: usize,
        pending: usize,
        wanted: usize,
    }

    #[derive(Debug, Clone)]
    enum Op {
        Arrive { units: usize, degree: usize },
        Raise { pick: usize, wanted: usize },
        Join { pick: usize },
        Unit { pick: usize },
    }

    fn op() -> impl Strategy<Value = Op> {
        prop_oneof![
            (1usize..20, 1usize..17).prop_map(|(units, degree)| Op::Arrive { units, degree }),
            (any::<usize>(), 1usize..17).prop_map(|(pick, wanted)| Op::Raise { pick, wanted }),
            any::<usize>().prop_map(|pick| Op::Join { pick }),
            any::<usize>().prop_map(|pick| Op::Unit { pick }),
        ]
    }

    /// Drives the gate as the runtime does, one thread at a time, through random
    /// arrivals, raises, helper joins and unit completions, checking after every step
    /// that the cores held never exceed the cores, that they equal the threads and help
    /// tickets in the model, and that a raise never sends more tickets than its
    /// request's units left but one.
    fn run(cores: usize, ops: Vec<Op>) {
        let gate: Gate<usize> = Gate::new(cores, 1_000);
        let mut reqs: Vec<Req> = Vec::new();
        let mut queued: Vec<(usize, usize)> = Vec::new(); // (units, degree) by id
        let start = |gate: &Gate<usize>, reqs: &mut Vec<Req>, units: usize, degree: usize| {
            let threads = gate
                .start(|free, waiting| tailor_core::start_threads(degree, units, free, waiting));
            assert!(threads <= degree.max(1));
            if threads > 1 {
                assert!(
                    threads - 1 < units,
                    "tickets {} for {units} units",
                    threads - 1
                );
            }
            // The first thread claims a unit at once.
            reqs.push(Req {
                unclaimed: units - 1,
                threads: 1,
                pending: threads - 1,
                wanted: degree,
            });
        };
        for op in ops {
            match op {
                Op::Arrive { units, degree } => {
                    let id = queued.len();
                    queued.push((units, degree));
                    if let Some(id) = gate.arrive(id).unwrap() {
                        let (u, d) = queued[id];
                        start(&gate, &mut reqs, u, d);
                    }
                }
                Op::Raise { pick, wanted } if !reqs.is_empty() => {
                    let i = pick % reqs.len();
                    let r = &mut reqs[i];
                    r.wanted = r.wanted.max(wanted);
                    let n = gate.grant(|free, waiting| {
                        helpers_granted(r.wanted, r.threads, r.pending, r.unclaimed, free, waiting)
                    });
                    if n > 0 {
                        // Help tickets <= units left - 1.
                        assert!(r.pending + n < r.unclaimed, "{r:?} got {n}");
                    }
                    r.pending += n;
                }
                Op::Join { pick } if reqs.iter().any(|r| r.pending > 0) => {
                    let with: Vec<usize> =
                        (0..reqs.len()).filter(|&i| reqs[i].pending > 0).collect();
                    let r = &mut reqs[with[pick % with.len()]];
                    r.pending -= 1;
                    if r.unclaimed > 0 {
                        r.unclaimed -= 1;
                        r.threads += 1;
                    } else if let Some(id) = gate.release() {
                        let (u, d) = queued[id];
                        start(&gate, &mut reqs, u, d);
                    }
                }
                Op::Unit { pick } if reqs.iter().any(|r| r.threads > 0) => {
                    // A thread on a request finishes its unit: it claims the next, gives
                    // its core to a waiting request (helpers only), or leaves.
                    let with: Vec<usize> =
                        (0..reqs.len()).filter(|&i| reqs[i].threads > 0).collect();
                    let i = with[pick % with.len()];
                    let helper = reqs[i].threads > 1;
                    let yielded = if helper { gate.yield_core() } else { None };
                    if let Some(id) = yielded {
                        reqs[i].threads -= 1;
                        let (u, d) = queued[id];
                        start(&gate, &mut reqs, u, d);
                    } else if reqs[i].unclaimed > 0 {
                        reqs[i].unclaimed -= 1;
                    } else {
                        reqs[i].threads -= 1;
                        if let Some(id) = gate.release() {
                            let (u, d) = queued[id];
                            start(&gate, &mut reqs, u, d);
                        }
                    }
                }
                _ => {}
            }
            let held: usize = reqs.iter().map(|r| r.threads + r.pending).sum();
            assert!(held <= cores, "{held} threads and tickets on {cores} cores");
            assert_eq!(
                cores - gate.free(),
                held,
                "the gate's count and the model's"
            );
            if gate.waiting() > 0 {
                assert_eq!(gate.free(), 0, "a request waits while a core is free");
            }
        }
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(2_000))]
        #[test]
        fn threads_never_outnumber_the_cores(cores in 1usize..6, ops in proptest::collection::vec(op(), 0..200)) {
            run(cores, ops);
        }
    }

    #[test]
    fn a_core_goes_to_the_oldest_waiting_request() {
        let gate: Gate<u32> = Gate::new(1, 10);
        assert_eq!(gate.arrive(1), Ok(Some(1)));
        assert_eq!(gate.arrive(2), Ok(None));
        assert_eq!(gate.arrive(3), Ok(None));
        assert_eq!(gate.waiting(), 2);
        assert_eq!(gate.yield_core(), Some(2));
        assert_eq!(gate.release(), Some(3));
        assert_eq!(gate.release(), None);
        assert_eq!(gate.free(), 1);
        gate.stop_accepting();
        assert_eq!(gate.arrive(4), Err(Refusal::Closed));
        let full: Gate<u32> = Gate::new(1, 1);
        assert_eq!(full.arrive(1), Ok(Some(1)));
        assert_eq!(full.arrive(2), Ok(None));
        assert_eq!(full.arrive(3), Err(Refusal::Full));
    }
}

#[cfg(all(test, loom))]
mod loom_tests {
    //! The gate under every interleaving loom finds: threads that release, grant and
    //! arrive at once never hold more cores than there are, and no waiting request is
    //! lost.
    use super::*;
    use loom::sync::Arc;

    #[test]
    fn cores_held_never_exceed_the_cores() {
        loom::model(|| {
            let gate: Arc<Gate<usize>> = Arc::new(Gate::new(2, 10));
            let held = Arc::new(AtomicUsize::new(0));
            // One request holds a core; a second arrives while the first's thread leaves
            // and a third request's raise asks for helpers.
            assert_eq!(gate.arrive(0).unwrap(), Some(0));
            held.fetch_add(1, Ordering::SeqCst);
            let leaver = {
                let (gate, held) = (gate.clone(), held.clone());
                loom::thread::spawn(move || {
                    held.fetch_sub(1, Ordering::SeqCst);
                    if gate.release().is_some() {
                        held.fetch_add(1, Ordering::SeqCst);
                    }
                })
            };
            let arriver = {
                let (gate, held) = (gate.clone(), held.clone());
                loom::thread::spawn(move || {
                    if gate.arrive(1).unwrap().is_some() {
                        held.fetch_add(1, Ordering::SeqCst);
                    }
                })
            };
            let n = gate.grant(|free, waiting| if waiting > 0 { 0 } else { free });
            held.fetch_add(n, Ordering::SeqCst);
            assert!(held.load(Ordering::SeqCst) <= 2);
            leaver.join().unwrap();
            arriver.join().unwrap();
            let total = held.load(Ordering::SeqCst);
            assert!(total <= 2, "{total} cores held");
            assert_eq!(2 - gate.free(), total, "the gate's count and the threads'");
            // Request 1 either runs or waits; if it waits, no core is free.
            let waiting = gate.waiting();
            assert!(waiting <= 1);
            if waiting == 1 {
                assert_eq!(total, 2);
            }
        });
    }
}
