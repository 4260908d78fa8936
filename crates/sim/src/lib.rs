//! tailor's discrete-event simulator: a policy on m modelled cores, at any core count.
//!
//! # The model
//!
//! - **Cores and threads.** m identical cores. Threads share them like Linux's fair
//!   scheduler: weighted processor sharing by nice weight (nice 0 = 1024, about 1.25x per
//!   step; `cpu.rs` gives the source). No thread gets more than one core.
//! - **Requests.** A request has sequential work w and a speedup curve s. With d threads
//!   that each get a share x of a core it progresses at s(d) * x work-ms per ms and uses
//!   d * x of CPU, so parallelism with s(d) < d costs CPU, as on real hardware. This is
//!   the speedup model of the FM paper's Eq. 1 (Haque et al., ASPLOS 2015, §4.1) with the
//!   cores shared when threads outnumber them.
//! - **Admission.** First come, first served. Every policy but FM runs requests on a pool
//!   of worker threads, one per core unless told otherwise, as a server's request
//!   threads do; a request waits for a free worker. FM has no pool: it admits by its
//!   interval table (start now, after v0, or when another request leaves).
//! - **Self-scheduling.** Policies that change degrees (FM, fixed-interval) look at the
//!   load and the request's executed time every quantum (5 ms by default) from the
//!   request's start, and only ever raise the degree.
//! - **Boosting.** FM (and `fix:N:boost`) boosts requests at the maximum degree while the
//!   boosted threads stay fewer than the cores (FM paper §4.2), the oldest first: a
//!   request reaching the maximum degree, or a boosted one leaving, offers the free
//!   slots to the oldest unboosted request at the maximum degree (§4.1, "we boost the
//!   oldest threads"). Boosted threads run at nice -20 by default.
//! - **Time.** Simulated time has its own type, [`SimTime`]. Events that tie run in a
//!   fixed order (completions, then arrivals, then other events in insertion order;
//!   simultaneous completions by slot), and arrivals and demands come from separate
//!   seeded streams, so a seed repeats a run exactly and every policy sees the same
//!   workload.
//! - **Two loops, one model.** Runs in which no core is ever shared (a policy that never
//!   changes degrees, whose highest degree times the worker pool fits in the cores, such
//!   as SEQ) use a dedicated first-come, first-served loop (`fast.rs`); the rest use the
//!   general engine (`engine.rs`). Tests check that both give the same results.
//!
//! Work-stealing policies (steal-first, admit-first, random-admit, tail-control) run on a
//! separate fluid model of the work-stealing executor, [`simulate_steal`] (`steal.rs`).
//!
//! The executor-style peer (every request's units on one shared pool) runs on
//! [`simulate_pool`] (`pool.rs`), first in, first out, or on rayon's scheduling
//! (`rayon_pool.rs`).
//!
//! Fan-out over replicated shards with reissue (S shards x R replicas, each replica the
//! general engine running any thread-pool policy) runs on [`simulate_fanout`]
//! (`fanout.rs`).
//!
//! Sequential requests on heterogeneous cores (`--cores COUNT@SPEED,...`: Adaptive
//! Slow-to-Fast and its comparisons) run on [`simulate_hetero`] (`hetero.rs`); on DVFS
//! cores (`--pstates`: slow-to-fast by P-state, Pegasus, schedutil), on [`simulate_dvfs`]
//! (`dvfs.rs`).
//!
//! Latency runs from the intended arrival to completion, queueing included. The first 5%
//! of requests are warm-up and are left out of the run's statistics; per-phase
//! statistics of phased arrivals cover every request of each phase. A request admitted
//! on an exit (FM's e1) starts at degree 1 and follows its row from there. A request that
//! starts at the maximum degree has reached it, and may be boosted at once.

mod config;
mod cpu;
mod dvfs;
mod engine;
mod fanout;
mod fast;
mod hedge;
mod hetero;
mod joins;
mod measure;
mod pool;
mod queue;
mod rayon_pool;
mod report;
mod seq_run;
mod steal;
mod sweep;
mod threads;
mod time;

pub use config::{SimConfig, SimError};
pub use dvfs::{simulate_dvfs, DvfsSimConfig, DEFAULT_TRANSITION_MS, SCHEDUTIL_TICK_MS};
pub use engine::simulate;
pub use fanout::{simulate_fanout, FanoutConfig, FanoutOutput, Select, DEFAULT_HEDGE_PERIOD_MS};
pub use hetero::{simulate_hetero, HeteroSimConfig};
pub use joins::{Joins, StealSize};
pub use pool::{simulate_pool, PoolModel, PoolSimConfig, UnitRequest};
pub use report::{write_records, write_trace, RequestRecord, SimOutput, TracePoint};
pub use seq_run::seq_mean_latency;
pub use steal::{simulate_steal, Sleep, StealSimConfig};
pub use sweep::{normalize_to_ee, write_sweep, SimRun};
pub use tailor_core::{write_shard_records, ShardRecord};
pub use time::SimTime;
