//! A model of an executor-style peer: requests fan all their units out to one shared pool.
//!
//! This is how a search library's own executor runs a query (tantivy's
//! `search_with_executor` on a `multi_thread` executor): each request's units (index
//! segments) go to a thread pool shared by every request, and the request's serial part
//! (the merge) runs after its last unit. It is the "executor" peer of `tailor demo`'s
//! projection, and no paper's algorithm.
//!
//! # The model
//!
//! - **Admission.** At most `workers` requests are in service at once (the server's
//!   request threads, one per core in the demo's live runs); the rest wait, first come,
//!   first served.
//! - **Units.** An admitted request appends its units to one first-in, first-out queue.
//!   `cores` pool threads, one per core, each take the queue's head when free and run it
//!   to completion. Rayon's pool serves its queues close to this order: a thread drains
//!   the units it already holds before it takes a newer request.
//! - **Serial part.** When a request's last unit ends, its serial part (merge and
//!   anything its units leave out) goes to the queue's front and runs on one core.
//! - **Start.** With a calibrated machine (`handoff_ms`), a request reaches the pool after
//!   a hand-off delay, as the charged model starts every request (`threads.rs`). The
//!   pool threads' own wake-ups and steals are free, so the model is an optimistic peer.
//!
//! [`PoolModel::Rayon`] runs the same requests on rayon's own scheduling instead
//! (`rayon_pool.rs`: per-thread deques, steals, nested scopes).

use std::cmp::Reverse;
use std::collections::{BinaryHeap, VecDeque};
use std::sync::Arc;

use rand::RngExt;
use tailor_core::workload_rngs;

use crate::config::{SimConfig, SimError};
use crate::measure::{finish, Measurements};
use crate::report::{RequestRecord, SimOutput};
use crate::time::SimTime;

/// One kind of request: the times of its units and of its serial part, ms.
#[derive(Debug, Clone, PartialEq)]
pub struct UnitRequest {
    /// Each unit's time on one core.
    pub units_ms: Vec<f64>,
    /// The time that runs after the last unit, on one core.
    pub serial_ms: f64,
}

impl UnitRequest {
    /// The request's time on one core.
    pub fn work_ms(&self) -> f64 {
        self.units_ms.iter().sum::<f64>() + self.serial_ms
    }
}

/// A run of the executor-style peer: the shared settings (arrivals, rps, requests, seed,
/// cores, workers, warm-up; `demand` and `policy` are not used) and the request kinds,
/// each drawn with equal chance.
#[derive(Debug, Clone)]
pub struct PoolSimConfig {
    /// Cores (the pool's threads), workers (requests in service), arrivals, seed.
    pub base: SimConfig,
    /// The requests to draw from.
    pub requests: Arc<Vec<UnitRequest>>,
    /// How the pool orders its units.
    pub model: PoolModel,
    /// The mean hand-off delay before a request reaches the pool, ms (0: none): the
    /// delay a calibrated machine charges every request's start (`tailor_core::
    /// Calibration`), drawn exponential per request. The pool threads' own wake-ups
    /// are still free, so the peer stays optimistic.
    pub handoff_ms: f64,
}

/// Salt separating the pool's hand-off delays from the workload's streams of a seed.
const HANDOFF_SALT: u64 = 0x706f_6f6c_6861_6e64;

/// The requests of a run in the order they reach the pool: (ready, arrival, kind), with
/// ready = arrival + the hand-off delay. Kinds are drawn in arrival order from the demand
/// stream exactly as the engine draws a profiled request (`DemandModel::sample`), so that
/// with the kinds in the profile's order every engine serves the same queries.
pub(crate) fn pool_arrivals(cfg: &PoolSimConfig) -> Result<Vec<(f64, f64, usize)>, SimError> {
    let base = &cfg.base;
    let (arrival_rng, mut demand_rng) = workload_rngs(base.seed);
    let mut delay_rng = tailor_core::seeded_rng(base.seed ^ HANDOFF_SALT);
    let mut out: Vec<(f64, f64, usize)> = base
        .arrivals
        .stream(base.rps, base.request_count(), arrival_rng)?
        .map(|a| {
            let kind = demand_rng.random_range(0..cfg.requests.len());
            let delay = if cfg.handoff_ms > 0.0 {
                let u: f64 = delay_rng.random();
                -cfg.handoff_ms * (1.0 - u).ln()
            } else {
                0.0
            };
            (a + delay, a, kind)
        })
        .collect();
    out.sort_by(|x, y| x.0.total_cmp(&y.0));
    Ok(out)
}

/// How the executor-style peer's pool orders the units of the requests in service.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum PoolModel {
    /// One first-in, first-out queue: the oldest request's units first (this module).
    #[default]
    Fifo,
    /// rayon's scheduling, as tantivy's executor gets it: each thread's newest unit
    /// first, steals of the oldest, new requests last, scopes nested
    /// (`rayon_pool.rs`).
    Rayon,
}

/// A task on the pool's queue: a unit of request `req`, or its serial part.
#[derive(Debug, Clone, Copy)]
struct Task {
    req: usize,
    ms: f64,
}

/// A request in the system.
struct Req {
    kind: usize,
    arrival: f64,
    start: f64,
    /// Units not finished yet.
    left: usize,
}

/// Simulates the executor-style peer.
pub fn simulate_pool(cfg: &PoolSimConfig) -> Result<SimOutput, SimError> {
    if cfg.model == PoolModel::Rayon {
        return crate::rayon_pool::simulate_rayon(cfg);
    }
    validate(cfg)?;
    simulate_fifo(cfg)
}

/// Refuses a run with no request kinds or with a time that is negative or not finite.
pub(crate) fn validate(cfg: &PoolSimConfig) -> Result<(), SimError> {
    cfg.base.validate()?;
    if cfg.requests.is_empty() {
        return Err(SimError::BadArgument {
            name: "requests",
            reason: "the executor model needs at least one request kind".into(),
        });
    }
    let bad = cfg.requests.iter().position(|r| {
        !(r.serial_ms.is_finite() && r.serial_ms >= 0.0)
            || r.units_ms.iter().any(|u| !(u.is_finite() && *u >= 0.0))
    });
    if let Some(i) = bad {
        return Err(SimError::BadArgument {
            name: "requests",
            reason: format!("request kind {} has a negative or non-finite time", i + 1),
        });
    }
    Ok(())
}

/// The first-in, first-out model.
fn simulate_fifo(cfg: &PoolSimConfig) -> Result<SimOutput, SimError> {
    let base = &cfg.base;
    let count = base.request_count();
    let mut arrivals = pool_arrivals(cfg)?.into_iter().peekable();
    let workers = base.worker_count();
    let mut m = Measurements::with_max_degree(base, base.cores);
    let mut reqs: Vec<Req> = Vec::with_capacity(count);
    let mut waiting: VecDeque<usize> = VecDeque::new();
    let mut queue: VecDeque<Task> = VecDeque::new();
    // Busy cores by the time their task ends (ties by request, then arrival).
    let mut busy: BinaryHeap<Reverse<(SimTime, usize, usize)>> = BinaryHeap::new();
    let mut in_service = 0;
    let mut seq = 0usize;
    loop {
        let next_end = busy.peek().map(|Reverse((t, _, _))| t.ms());
        let next_arrival = arrivals.peek().map(|a| a.0);
        let now = match (next_end, next_arrival) {
            (None, None) => break,
            // Completions first when they tie with an arrival.
            (Some(e), Some(a)) if e <= a => e,
            (Some(e), None) => e,
            (_, Some(a)) => a,
        };
        if next_end == Some(now) {
            let Reverse((_, _, task_req)) = busy.pop().expect("peeked");
            let r = &mut reqs[task_req];
            if r.left > 0 {
                r.left -= 1;
                if r.left == 0 {
                    let serial = cfg.requests[r.kind].serial_ms;
                    queue.push_front(Task {
                        req: task_req,
                        ms: serial,
                    });
                }
            } else {
                // Its serial part ended: the request is done.
                let kind = &cfg.requests[r.kind];
                m.file(
                    task_req,
                    done_record(task_req, kind, r.arrival, r.start, now, base.cores),
                );
                in_service -= 1;
                if let Some(next) = waiting.pop_front() {
                    admit(&mut reqs[next], next, now, cfg, &mut queue);
                    in_service += 1;
                }
            }
        } else {
            let (_, arrival, kind) = arrivals.next().expect("peeked");
            let id = reqs.len();
            reqs.push(Req {
                kind,
                arrival,
                start: now,
                left: 0,
            });
            if in_service < workers {
                admit(&mut reqs[id], id, now, cfg, &mut queue);
                in_service += 1;
            } else {
                waiting.push_back(id);
            }
        }
        while busy.len() < base.cores {
            let Some(task) = queue.pop_front() else { break };
            m.cpu_time += task.ms;
            m.thread_time += task.ms;
            seq += 1;
            busy.push(Reverse((SimTime::from_ms(now + task.ms), seq, task.req)));
        }
    }
    Ok(finish(base, m, Vec::new()))
}

/// The record of request `id` of `kind`, done at `now` (shared by both pool models).
pub(crate) fn done_record(
    id: usize,
    kind: &UnitRequest,
    arrival: f64,
    start: f64,
    now: f64,
    cores: usize,
) -> RequestRecord {
    let work = kind.work_ms();
    let span = now - start;
    RequestRecord {
        request: id + 1,
        arrival_ms: arrival,
        start_ms: start,
        finish_ms: now,
        work_ms: work,
        max_degree: kind.units_ms.len().clamp(1, cores),
        mean_degree: if span > 0.0 {
            (work / span).max(1.0)
        } else {
            1.0
        },
        boosted: false,
    }
}

/// Starts request `id` at `now`: its units join the queue (its serial part at once if it
/// has none).
fn admit(r: &mut Req, id: usize, now: f64, cfg: &PoolSimConfig, queue: &mut VecDeque<Task>) {
    let kind = &cfg.requests[r.kind];
    r.start = now;
    r.left = kind.units_ms.len();
    if kind.units_ms.is_empty() {
        queue.push_back(Task {
            req: id,
            ms: kind.serial_ms,
        });
    }
    queue.extend(kind.units_ms.iter().map(|&ms| Task { req: id, ms }));
}

/// A run of `count` Poisson requests drawn from `requests`, with records (for tests).
#[cfg(test)]
pub(crate) fn test_config(
    cores: usize,
    rps: f64,
    requests: Vec<UnitRequest>,
    count: usize,
    model: PoolModel,
) -> PoolSimConfig {
    use tailor_core::{Arrivals, Demand, DemandModel, Policy};
    let demand = DemandModel::new(Demand::Const { ms: 1.0 }, None).unwrap();
    let mut base = SimConfig::new(cores, Policy::Seq, demand, Arrivals::Poisson, rps, count, 7);
    base.records = true;
    PoolSimConfig {
        base,
        requests: Arc::new(requests),
        model,
        handoff_ms: 0.0,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tailor_core::{Arrivals, Demand, DemandModel, Policy};

    fn config(cores: usize, rps: f64, requests: Vec<UnitRequest>, count: usize) -> PoolSimConfig {
        test_config(cores, rps, requests, count, PoolModel::Fifo)
    }

    #[test]
    fn a_request_alone_runs_its_units_on_every_core_then_its_merge() {
        // Very light load: every request finds the pool empty.
        let kind = UnitRequest {
            units_ms: vec![4.0, 1.0, 1.0, 1.0, 3.0],
            serial_ms: 0.5,
        };
        let out = simulate_pool(&config(2, 0.01, vec![kind], 20)).unwrap();
        for r in &out.records {
            // In order on two cores: A 4; B 1, 1, 1, then 3, ending at 6; then 0.5.
            assert!((r.finish_ms - r.arrival_ms - 6.5).abs() < 1e-9, "{r:?}");
        }
        let out = simulate_pool(&config(
            8,
            0.01,
            vec![UnitRequest {
                units_ms: vec![4.0, 1.0, 1.0, 1.0, 3.0],
                serial_ms: 0.5,
            }],
            20,
        ))
        .unwrap();
        assert!(out
            .records
            .iter()
            .all(|r| (r.finish_ms - r.arrival_ms - 4.5).abs() < 1e-9));
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
        let out = simulate_pool(&config(4, 300.0, kinds, 3000)).unwrap();
        assert_eq!(out.summary.completed, 3000);
        assert_eq!(out.records.len(), 3000);
        for r in &out.records {
            assert!(r.finish_ms - r.start_ms >= r.work_ms / 4.0 - 1e-9, "{r:?}");
            assert!(r.start_ms >= r.arrival_ms);
        }
        let work: f64 = out.records.iter().map(|r| r.work_ms).sum();
        let span = out.records.iter().map(|r| r.finish_ms).fold(0.0, f64::max);
        assert!(work <= 4.0 * span + 1e-6);
    }

    #[test]
    fn it_matches_fcfs_on_single_unit_requests() {
        // One unit each and one worker per core: an M/D/c queue, as the FCFS loop runs it.
        let kind = UnitRequest {
            units_ms: vec![2.0],
            serial_ms: 0.0,
        };
        let pool = simulate_pool(&config(2, 600.0, vec![kind], 4000)).unwrap();
        let demand = DemandModel::new(Demand::Const { ms: 2.0 }, None).unwrap();
        let fcfs = crate::simulate(&SimConfig::new(
            2,
            Policy::Seq,
            demand,
            Arrivals::Poisson,
            600.0,
            4000,
            7,
        ))
        .unwrap();
        let (a, b) = (pool.summary.latency_ms.p99, fcfs.summary.latency_ms.p99);
        assert!((a - b).abs() < 1e-6, "pool {a} against fcfs {b}");
    }

    #[test]
    fn it_serves_the_same_queries_as_the_engine_in_the_same_order() {
        // Five kinds with distinct sequential times, and a profile of the same five in
        // the same order: request i is the same kind in both engines.
        let t1 = [1.0, 2.0, 3.0, 4.0, 5.0];
        let kinds: Vec<UnitRequest> = t1
            .iter()
            .map(|&ms| UnitRequest {
                units_ms: vec![ms / 2.0, ms / 2.0],
                serial_ms: 0.0,
            })
            .collect();
        let profile = tailor_core::DemandProfile::new(
            t1.iter()
                .enumerate()
                .map(|(i, &ms)| tailor_core::RequestProfile {
                    id: format!("q{i}"),
                    times_ms: vec![ms],
                })
                .collect(),
        )
        .unwrap();
        let demand = DemandModel::new(Demand::Profile(Arc::new(profile)), None).unwrap();
        let mut base = SimConfig::new(2, Policy::Seq, demand, Arrivals::Poisson, 50.0, 500, 7);
        base.records = true;
        let engine = crate::simulate(&base).unwrap();
        let pool = simulate_pool(&PoolSimConfig {
            base,
            requests: Arc::new(kinds),
            model: PoolModel::Fifo,
            handoff_ms: 0.0,
        })
        .unwrap();
        let works = |o: &SimOutput| -> Vec<f64> { o.records.iter().map(|r| r.work_ms).collect() };
        assert_eq!(works(&engine), works(&pool));
        assert!(works(&pool).iter().any(|&w| w != works(&pool)[0]));
    }

    #[test]
    fn bad_times_are_refused() {
        let kind = UnitRequest {
            units_ms: vec![1.0, f64::NAN],
            serial_ms: 0.0,
        };
        let e = simulate_pool(&config(2, 10.0, vec![kind], 10)).unwrap_err();
        assert!(e.to_string().contains("request kind 1"), "{e}");
        assert!(simulate_pool(&config(2, 10.0, vec![], 10)).is_err());
    }

    #[test]
    fn a_hand_off_delays_every_request_by_its_mean() {
        let kinds = vec![UnitRequest {
            units_ms: vec![1.0; 4],
            serial_ms: 1.0,
        }];
        let mut cfg = test_config(4, 20.0, kinds, 4000, PoolModel::Fifo);
        let plain = simulate_pool(&cfg).unwrap().summary.latency_ms.mean;
        cfg.handoff_ms = 2.0;
        let late = simulate_pool(&cfg).unwrap().summary.latency_ms.mean;
        // At 2% load nothing queues: the mean grows by the hand-off's mean, 2 ms.
        assert!((late - plain - 2.0).abs() < 0.15, "{plain} then {late}");
        cfg.model = PoolModel::Rayon;
        let rayon = simulate_pool(&cfg).unwrap().summary.latency_ms.mean;
        assert!((rayon - plain - 2.0).abs() < 0.15, "{plain} then {rayon}");
    }
}
