//! The executor-style peer as rayon runs it: per-thread deques, steals, and nested scopes.
//!
//! tantivy's multi-threaded executor runs a query's segments with `rayon::ThreadPool::scope`
//! called from the query's own thread (tantivy 0.27, `Executor::map`). In rayon-core 1.13:
//! - the scope's body goes to the pool's global injector and runs on a pool thread, which
//!   pushes one job per segment onto its own deque;
//! - a pool thread looking for work takes its own deque's newest job first, then steals
//!   the oldest job of another thread's deque (trying the threads in turn from a random
//!   one), and only then takes a new body from the injector (`WorkerThread::find_work`);
//! - a thread whose scope still has jobs out keeps looking for work the same way while
//!   it waits (`wait_until_cold`), so it can take another query's body from the injector
//!   and run that scope nested inside its own: the outer query cannot finish before the
//!   inner one does.
//!
//! - the scope returns to the query's own thread, which then merges the segments' results
//!   and does the rest of its serial work (`Searcher::search_with_executor` calls
//!   `merge_fruits` after `Executor::map`): the pool thread that ran the scope goes back to
//!   whatever it was doing, so an outer scope waits for a nested one's segments, not for
//!   its merge.
//!
//! This model runs exactly that on `cores` threads, one per core. A scope ends when its
//! units are done and it is the innermost on its thread, as soon as that thread is not
//! running a unit (a thread whose core a query's merge has is waiting in its scope, and
//! returns it at once); its merge then waits for a core with the other merges, first
//! in, first out, and an idle core takes a waiting merge before any unit (a woken query thread gets a core before pool threads go on). Until
//! 2026-11-27 the merge ran on the pool thread whose scope ended, before that thread
//! returned to an outer scope, so a query with a scope nested in it also waited for the
//! inner query's merge; that made the peer slower than tantivy is (docs/demo.md). After an
//! event the thread whose work just ended looks for work first (it is awake), then the
//! idle ones from a random one on; after an arrival, from a random one. Like the
//! first-in, first-out model in `pool.rs` it charges no steal, wake-up or fan-out cost.
//! No paper's algorithm.

use std::cmp::Reverse;
use std::collections::{BinaryHeap, VecDeque};

use crate::config::SimError;
use crate::measure::{finish, Measurements};
use crate::pool::{done_record, validate, PoolSimConfig};
use crate::report::SimOutput;
use crate::time::SimTime;

/// What a pool thread runs: a unit of a request, or a request's merge.
#[derive(Debug, Clone, Copy)]
enum Work {
    Unit(usize),
    Merge(usize),
}

/// One pool thread.
#[derive(Debug, Default)]
struct Thread {
    /// Its deque of units: (request, ms); newest at the back.
    deque: VecDeque<(usize, f64)>,
    /// The requests whose scopes it is inside, innermost last.
    scopes: Vec<usize>,
    busy: bool,
    /// Whether it is running a unit (a pool job), not a query's merge: while a query's
    /// own thread has its core, the pool thread is waiting in its scope.
    on_unit: bool,
}

/// A request in the system.
struct Req {
    kind: usize,
    arrival: f64,
    start: f64,
    /// Units not finished yet.
    left: usize,
}

/// Simulates the executor-style peer on rayon's scheduling (see the module's summary).
pub(crate) fn simulate_rayon(cfg: &PoolSimConfig) -> Result<SimOutput, SimError> {
    validate(cfg)?;
    let base = &cfg.base;
    let count = base.request_count();
    // The same draws as the engine and the first-in, first-out model (`pool.rs`).
    let mut arrivals = crate::pool::pool_arrivals(cfg)?.into_iter().peekable();
    let workers = base.worker_count();
    let mut m = Measurements::with_max_degree(base, base.cores);
    let mut reqs: Vec<Req> = Vec::with_capacity(count);
    let mut waiting: VecDeque<usize> = VecDeque::new();
    let mut injector: VecDeque<usize> = VecDeque::new();
    // Queries whose scope has returned, waiting for a core to merge on.
    let mut merges: VecDeque<usize> = VecDeque::new();
    let mut threads: Vec<Thread> = (0..base.cores).map(|_| Thread::default()).collect();
    // Running work by its end (ties by start order), with its thread.
    let mut running: BinaryHeap<Reverse<(SimTime, usize, usize)>> = BinaryHeap::new();
    let mut works: Vec<Work> = Vec::new();
    let mut in_service = 0;
    let mut victim_rng = base.seed ^ 0x5241_594F;
    loop {
        let next_end = running.peek().map(|Reverse((t, _, _))| t.ms());
        let next_arrival = arrivals.peek().map(|a| a.0);
        let now = match (next_end, next_arrival) {
            (None, None) => break,
            (Some(e), Some(a)) if e <= a => e,
            (Some(e), None) => e,
            (_, Some(a)) => a,
        };
        // The thread that looks for work first: the one whose work just ended (it is
        // awake; in rayon it goes straight on to `find_work`), else one at random (for an
        // arrival: whichever idle thread the injection wakes).
        let first;
        if next_end == Some(now) {
            let Reverse((_, id, t)) = running.pop().expect("peeked");
            threads[t].busy = false;
            threads[t].on_unit = false;
            first = t;
            match works[id] {
                Work::Unit(r) => reqs[r].left -= 1,
                Work::Merge(r) => {
                    let req = &reqs[r];
                    let kind = &cfg.requests[req.kind];
                    m.file(
                        r,
                        done_record(r, kind, req.arrival, req.start, now, base.cores),
                    );
                    in_service -= 1;
                    if let Some(next) = waiting.pop_front() {
                        reqs[next].start = now;
                        injector.push_back(next);
                        in_service += 1;
                    }
                }
            }
        } else {
            first = tailor_core::splitmix_below(&mut victim_rng, threads.len());
            let (_, arrival, kind) = arrivals.next().expect("peeked");
            let id = reqs.len();
            reqs.push(Req {
                kind,
                arrival,
                start: now,
                left: cfg.requests[kind].units_ms.len(),
            });
            if in_service < workers {
                injector.push_back(id);
                in_service += 1;
            } else {
                waiting.push_back(id);
            }
        }
        // A pool thread not running a unit returns its finished scopes at once, even where
        // a query's merge has its core (in rayon it waits in `wait_until_cold`).
        let n = threads.len();
        for u in (0..n).map(|k| (first + k) % n) {
            if !threads[u].on_unit {
                return_scopes(&mut threads[u], &reqs, &mut merges);
            }
        }
        // Every idle thread looks for work, until none finds any.
        let mut found = true;
        while found {
            found = false;
            for t in (0..n).map(|k| (first + k) % n) {
                if threads[t].busy {
                    continue;
                }
                let queues = (&mut injector, &mut merges);
                let Some((work, ms)) =
                    find_work(t, &mut threads, queues, &reqs, cfg, &mut victim_rng)
                else {
                    continue;
                };
                threads[t].busy = true;
                threads[t].on_unit = matches!(work, Work::Unit(_));
                m.cpu_time += ms;
                m.thread_time += ms;
                works.push(work);
                running.push(Reverse((SimTime::from_ms(now + ms), works.len() - 1, t)));
                found = true;
            }
        }
    }
    Ok(finish(base, m, Vec::new()))
}

/// Returns `thread`'s innermost scopes whose units are all done, outermost last: each
/// query's merge joins the queue of merges.
fn return_scopes(thread: &mut Thread, reqs: &[Req], merges: &mut VecDeque<usize>) {
    while let Some(&r) = thread.scopes.last() {
        if reqs[r].left > 0 {
            break;
        }
        thread.scopes.pop();
        merges.push_back(r);
    }
}

/// What idle thread `t` runs next. First its innermost scopes whose units are all done
/// return, their merges joining the queue of merges; then, a waiting merge (the query's
/// own thread takes the core), else in rayon's order its newest unit, else the oldest
/// unit of another thread (tried in turn from a random one), else a new scope from the
/// injector.
fn find_work(
    t: usize,
    threads: &mut [Thread],
    (injector, merges): (&mut VecDeque<usize>, &mut VecDeque<usize>),
    reqs: &[Req],
    cfg: &PoolSimConfig,
    victim_rng: &mut u64,
) -> Option<(Work, f64)> {
    loop {
        return_scopes(&mut threads[t], reqs, merges);
        if let Some(r) = merges.pop_front() {
            return Some((Work::Merge(r), cfg.requests[reqs[r].kind].serial_ms));
        }
        let me = &mut threads[t];
        if let Some((r, ms)) = me.deque.pop_back() {
            return Some((Work::Unit(r), ms));
        }
        let n = threads.len();
        let first = tailor_core::splitmix_below(victim_rng, n);
        for k in 0..n {
            let v = (first + k) % n;
            if v != t {
                if let Some((r, ms)) = threads[v].deque.pop_front() {
                    return Some((Work::Unit(r), ms));
                }
            }
        }
        let r = injector.pop_front()?;
        let me = &mut threads[t];
        me.scopes.push(r);
        me.deque.extend(
            cfg.requests[reqs[r].kind]
                .units_ms
                .iter()
                .map(|&ms| (r, ms)),
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::pool::{test_config, PoolModel, UnitRequest};
    use tailor_core::Arrivals;

    fn config(cores: usize, rps: f64, requests: Vec<UnitRequest>, count: usize) -> PoolSimConfig {
        test_config(cores, rps, requests, count, PoolModel::Rayon)
    }

    /// Where A (arriving at 0) and B (at 0.5) end on two threads, for a seed that draws A
    /// then B (kinds are drawn at random).
    fn ends_of_a_then_b(a: UnitRequest, b: UnitRequest) -> (f64, f64) {
        let works = [a.work_ms(), b.work_ms()];
        let mut cfg = config(2, 1.0, vec![a, b], 2);
        cfg.base.arrivals = Arrivals::Trace(vec![0.0, 0.5]);
        (0..200)
            .find_map(|seed| {
                cfg.base.seed = seed;
                let out = crate::simulate_pool(&cfg).unwrap();
                let drawn: Vec<f64> = out.records.iter().map(|r| r.work_ms).collect();
                (drawn == works).then(|| (out.records[0].finish_ms, out.records[1].finish_ms))
            })
            .expect("some seed draws A then B")
    }

    #[test]
    fn a_request_alone_runs_newest_first_on_its_thread_and_oldest_first_on_thieves() {
        // Two threads: the owner pops 3, then 1 (at 3), then 1 (at 4); the thief takes 4
        // at 0 and then 1 at 4: the units end at 5, the merge runs 5 to 5.5.
        let kind = UnitRequest {
            units_ms: vec![4.0, 1.0, 1.0, 1.0, 3.0],
            serial_ms: 0.5,
        };
        let out = crate::simulate_pool(&config(2, 0.01, vec![kind], 20)).unwrap();
        for r in &out.records {
            assert!((r.finish_ms - r.arrival_ms - 5.5).abs() < 1e-9, "{r:?}");
        }
    }

    #[test]
    fn a_scope_nested_inside_another_holds_the_outer_request_back() {
        // One request thread would serialize the two; two let both in. Two pool threads:
        // A (one 10 ms unit and one 1 ms unit) starts alone; its owner runs the 1 ms unit
        // and, with nothing left to steal (the thief has the 10 ms one), takes B's scope
        // at 1 ms and runs B's 20 ms unit inside A's scope. A's units end at 10 but its
        // scope returns only when B's does, at 21. Then both merges wait for a core: B's
        // 5 ms merge takes the owner's (21 to 26) and A's empty one the thief's, idle
        // since 10: A ends at 21, not behind B's merge.
        let a = UnitRequest {
            units_ms: vec![10.0, 1.0],
            serial_ms: 0.0,
        };
        let b = UnitRequest {
            units_ms: vec![20.0],
            serial_ms: 5.0,
        };
        let (a_end, b_end) = ends_of_a_then_b(a, b);
        assert!((b_end - 26.0).abs() < 1e-9, "B ends at {b_end}");
        assert!(
            (a_end - 21.0).abs() < 1e-9,
            "A ends at {a_end}, behind B's scope"
        );
    }

    #[test]
    fn an_outer_scope_returns_while_a_nested_querys_merge_has_the_core() {
        // A (a 10 ms and a 1 ms unit) starts; its owner runs the 1 ms unit, the thief the
        // 10 ms one. At 1 ms the owner takes B's scope (one 2 ms unit, a 20 ms merge) and
        // runs it nested; at 3 B's scope returns and B's merge takes the owner's core
        // (3 to 23). A's last unit ends on the thief at 10: the owner, waiting in A's
        // scope, returns it then, and A's empty merge runs on the idle thief: A ends at
        // 10, not when B's merge lets the core go at 23.
        let a = UnitRequest {
            units_ms: vec![10.0, 1.0],
            serial_ms: 0.0,
        };
        let b = UnitRequest {
            units_ms: vec![2.0],
            serial_ms: 20.0,
        };
        let (a_end, b_end) = ends_of_a_then_b(a, b);
        assert!((a_end - 10.0).abs() < 1e-9, "A ends at {a_end}");
        assert!((b_end - 23.0).abs() < 1e-9, "B ends at {b_end}");
    }

    #[test]
    fn every_request_completes_and_the_work_is_conserved() {
        let kinds = vec![
            UnitRequest {
                units_ms: vec![1.0; 16],
                serial_ms: 0.2,
            },
            UnitRequest {
                units_ms: vec![],
                serial_ms: 0.3,
            },
            UnitRequest {
                units_ms: vec![5.0, 0.0, 2.0],
                serial_ms: 0.0,
            },
        ];
        let out = crate::simulate_pool(&config(4, 300.0, kinds.clone(), 3000)).unwrap();
        assert_eq!(out.summary.completed, 3000);
        assert_eq!(out.records.len(), 3000);
        let work: f64 = out.records.iter().map(|r| r.work_ms).sum();
        let span = out.records.iter().map(|r| r.finish_ms).fold(0.0, f64::max);
        assert!(work <= 4.0 * span + 1e-6);
        for r in &out.records {
            assert!(
                r.start_ms >= r.arrival_ms && r.finish_ms >= r.start_ms,
                "{r:?}"
            );
        }
        // The same requests on the first-in, first-out model.
        let mut fifo = config(4, 300.0, kinds, 3000);
        fifo.model = PoolModel::Fifo;
        let fifo = crate::simulate_pool(&fifo).unwrap();
        let works = |o: &SimOutput| -> Vec<f64> { o.records.iter().map(|r| r.work_ms).collect() };
        assert_eq!(works(&out), works(&fifo));
    }
}
