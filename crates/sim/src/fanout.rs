//! Partition-aggregate fan-out over replicated shards, with reissue: S shards x R
//! replicas, each replica a simulated server (the general engine, any policy), and a
//! front end that sends each query to one replica per shard and answers when every shard
//! has (Dean and Barroso, "The Tail at Scale", CACM 2013).
//!
//! A shard request that has not answered after a delay may be sent again to another
//! replica of its shard: never (`none`), always at delay d (`single-d:D`, SingleD), with
//! probability q at delay d (`single-r:D:Q`, SingleR, which Kaler, He and Elnikety, SPAA
//! 2017, show optimal among reissue policies at a given budget), or at the P-th
//! percentile of the shard's latencies over the previous period (`hedge:P`, Dean and
//! Barroso's hedged requests as tower's hedge keeps them, `hedge.rs`).
//! The first answer wins; the other copy is cancelled unless told otherwise. The copy
//! does the same work as the first: it is the same query on the same shard's data, so a
//! reissue escapes queueing and stalls, not the request's own size. Replicas stall at
//! random (`--noise RATE:LENGTH`: Poisson stall starts per replica, each of a fixed
//! length), as real servers do for garbage collection, compaction or a noisy neighbour.

use std::cmp::Reverse;
use std::collections::{BinaryHeap, HashMap};

use rand::RngExt;
use rand_distr::Exp1;
use tailor_core::{
    seeded_rng, workload_rngs, Noise, Reissue, RequestDemand, Rng, RunSummary, ShardRecord,
    HEDGE_MIN_SAMPLES,
};

use crate::config::{SimConfig, SimError};
use crate::engine::{Replica, Ticket, TIE_MS};
use crate::hedge::RotatingLatencies;
use crate::measure::{finish, Measurements};
use crate::queue::EventQueue;
use crate::report::RequestRecord;
use crate::time::SimTime;

/// How the front end picks a shard's replica.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Select {
    /// Uniformly at random.
    Random,
    /// The one with the fewest requests outstanding from this front end (ties at random).
    LeastLoaded,
}

/// A fan-out simulation's settings.
#[derive(Debug, Clone)]
pub struct FanoutConfig {
    /// Each replica's cores, policy and thread model; its demand is each shard request's,
    /// and its arrivals, rate, count, seed, warm-up and target are the queries'.
    pub server: SimConfig,
    /// S, the shards a query fans out to.
    pub shards: usize,
    /// R, the replicas of each shard.
    pub replicas: usize,
    /// How a shard's replica is picked.
    pub select: Select,
    /// When a shard request is sent again.
    pub reissue: Reissue,
    /// Whether the losing copy is cancelled when the first answers.
    pub cancel: bool,
    /// Replica stalls, if any.
    pub noise: Option<Noise>,
    /// Whether to keep a record of every shard request.
    pub records: bool,
    /// Hedging: the period of each shard's latency histogram, in ms (`hedge.rs`).
    pub hedge_period_ms: f64,
}

/// Hedging's histogram period by default, as the live front end's `--hedge-period`.
pub const DEFAULT_HEDGE_PERIOD_MS: f64 = 5000.0;

/// The most shards, and replicas per shard.
const MAX_SHARDS: usize = 10_000;
const MAX_REPLICAS: usize = 100;
/// The most shard requests a run may have.
const MAX_SHARD_REQUESTS: usize = 200_000_000;

impl FanoutConfig {
    /// S shards of R replicas serving `server`'s queries, randomly picked replicas, no
    /// reissue, losers cancelled, no noise, no records.
    pub fn new(server: SimConfig, shards: usize, replicas: usize) -> Self {
        FanoutConfig {
            server,
            shards,
            replicas,
            select: Select::Random,
            reissue: Reissue::None,
            cancel: true,
            noise: None,
            records: false,
            hedge_period_ms: DEFAULT_HEDGE_PERIOD_MS,
        }
    }

    /// Refuses settings that are malformed or cannot make sense.
    pub fn validate(&self) -> Result<(), SimError> {
        let bad = |name, reason: String| Err(SimError::BadArgument { name, reason });
        if !(1..=MAX_SHARDS).contains(&self.shards) {
            return bad("--shards", format!("must be from 1 to {MAX_SHARDS}"));
        }
        if !(1..=MAX_REPLICAS).contains(&self.replicas) {
            return bad("--replicas", format!("must be from 1 to {MAX_REPLICAS}"));
        }
        if self.replicas < 2 && self.reissue != Reissue::None {
            return bad(
                "--reissue",
                "needs at least 2 replicas to send a shard request to another".into(),
            );
        }
        let shard_requests = self.server.request_count().saturating_mul(self.shards);
        if shard_requests > MAX_SHARD_REQUESTS {
            return bad(
                "--requests",
                format!(
                    "{} queries x {} shards is more than the {MAX_SHARD_REQUESTS} shard \
                     requests a run may have",
                    self.server.request_count(),
                    self.shards
                ),
            );
        }
        if !(self.hedge_period_ms.is_finite() && self.hedge_period_ms > 0.0) {
            return bad(
                "--hedge-period",
                format!("must be above 0, found {} ms", self.hedge_period_ms),
            );
        }
        // Each replica serves 1/R of its shard's requests.
        let mut replica = self.server.clone();
        replica.rps = self.server.rps / self.replicas as f64;
        replica.validate()
    }
}

/// What a fan-out simulation produces.
#[derive(Debug, Clone)]
pub struct FanoutOutput {
    /// The summary over queries, with `reissue_rate`.
    pub summary: RunSummary,
    /// One record per shard request, by query then shard, when asked for.
    pub records: Vec<ShardRecord>,
}

#[derive(Debug, Clone, Copy)]
enum FrontEvent {
    /// Shard request (slot, id) has waited its reissue delay.
    Reissue(usize, u64),
    /// A replica stalls.
    Stall(usize),
}

/// A copy of a shard request on a replica.
#[derive(Debug, Clone, Copy)]
struct Copy {
    replica: usize,
    ticket: Ticket,
    live: bool,
    /// When it was sent.
    sent: SimTime,
}

/// A shard request in flight (its slot lives until every copy has finished or been
/// cancelled).
#[derive(Debug, Clone)]
struct ShardReq {
    id: u64,
    query: usize,
    shard: usize,
    demand: RequestDemand,
    copies: [Option<Copy>; 2],
    answered: bool,
    primary_ms: Option<f64>,
    /// Its record's index, once answered (records only).
    record: Option<usize>,
}

#[derive(Debug, Clone, Copy)]
struct Query {
    arrival: SimTime,
    left: usize,
}

/// The front end and its replicas.
struct Fanout<'c> {
    cfg: &'c FanoutConfig,
    now: SimTime,
    replicas: Vec<Replica<'c>>,
    /// (next time, replica, version): the replicas' own next steps.
    due: BinaryHeap<Reverse<(SimTime, usize, u64)>>,
    versions: Vec<u64>,
    /// Copies outstanding per replica, as the front end counts them.
    outstanding: Vec<usize>,
    events: EventQueue<FrontEvent>,
    shard_reqs: Vec<ShardReq>,
    free: Vec<usize>,
    /// Shard requests in flight by id. Copies carry 2 x id (+1 for the second) as their
    /// replica tag, which grows with arrival time as the engine's boosting order needs.
    slots: HashMap<u64, usize>,
    next_id: u64,
    queries: Vec<Query>,
    /// Replica picks; SingleR's draws (a stream of their own, so that `single-r:D:1`
    /// runs exactly as `single-d:D` and `single-r:D:0` as `none`); stalls.
    choice_rng: Rng,
    reissue_rng: Rng,
    noise_rng: Rng,
    /// Each shard's hedging memory (`hedge:P`).
    hedges: Vec<RotatingLatencies>,
    shard_requests: usize,
    reissued: usize,
    measured: Measurements,
    records: Vec<ShardRecord>,
    done: Vec<(usize, SimTime)>,
}

/// Runs a fan-out simulation.
pub fn simulate_fanout(cfg: &FanoutConfig) -> Result<FanoutOutput, SimError> {
    cfg.validate()?;
    let server = &cfg.server;
    let count = server.request_count();
    let (arrival_rng, mut demand_rng) = workload_rngs(server.seed);
    let mut arrivals = server.arrivals.stream(server.rps, count, arrival_rng)?;
    let n = cfg.shards * cfg.replicas;
    let mut f = Fanout {
        cfg,
        now: SimTime::ZERO,
        replicas: (0..n).map(|_| Replica::new(server)).collect(),
        due: BinaryHeap::new(),
        versions: vec![0; n],
        outstanding: vec![0; n],
        events: EventQueue::new(),
        shard_reqs: Vec::new(),
        free: Vec::new(),
        slots: HashMap::new(),
        next_id: 0,
        queries: Vec::with_capacity(count.min(1 << 20)),
        choice_rng: seeded_rng(server.seed ^ 0x5E1E_C7ED),
        reissue_rng: seeded_rng(server.seed ^ 0x2E15_5E0D),
        noise_rng: seeded_rng(server.seed ^ 0x0005_7A11),
        hedges: (0..cfg.shards)
            .map(|_| RotatingLatencies::new(cfg.hedge_period_ms, HEDGE_MIN_SAMPLES))
            .collect(),
        shard_requests: 0,
        reissued: 0,
        measured: Measurements::new(server),
        records: Vec::new(),
        done: Vec::new(),
    };
    if let Some(noise) = cfg.noise.filter(|n| n.rate_per_s > 0.0) {
        for r in 0..n {
            let first = f.stall_gap(noise);
            f.events.push(SimTime::ZERO + first, FrontEvent::Stall(r));
        }
    }
    let mut upcoming = arrivals.next();
    let mut answered = 0;
    while answered < count {
        let front = match (upcoming, f.events.peek_time()) {
            (Some(a), Some(e)) => Some(SimTime::from_ms(a).min(e)),
            (Some(a), None) => Some(SimTime::from_ms(a)),
            (None, e) => e,
        };
        let replica = f.next_replica();
        // A replica's own step goes first at a tie, as completions do in the engine.
        if let Some((t, r)) =
            replica.filter(|&(t, _)| front.is_none_or(|u| t.ms() <= u.ms() + TIE_MS))
        {
            answered += f.step_replica(t, r);
            continue;
        }
        match front {
            Some(t) if upcoming.is_some_and(|a| SimTime::from_ms(a) == t) => {
                upcoming = arrivals.next();
                f.arrive(t, &mut demand_rng);
            }
            Some(_) => {
                let (t, event) = f.events.pop().expect("peeked");
                f.now = t;
                f.handle(event);
            }
            None => break,
        }
    }
    Ok(f.output())
}

impl<'c> Fanout<'c> {
    /// The replica whose own next step is earliest, dropping superseded entries.
    fn next_replica(&mut self) -> Option<(SimTime, usize)> {
        while let Some(&Reverse((t, r, v))) = self.due.peek() {
            if v == self.versions[r] {
                return Some((t, r));
            }
            self.due.pop();
        }
        None
    }

    /// Re-reads replica `r`'s next step after the front end touched it.
    fn refresh(&mut self, r: usize) {
        self.versions[r] += 1;
        if let Some(t) = self.replicas[r].next_time() {
            self.due.push(Reverse((t, r, self.versions[r])));
        }
    }

    fn stall_gap(&mut self, noise: Noise) -> f64 {
        self.noise_rng.sample::<f64, _>(Exp1) * 1000.0 / noise.rate_per_s
    }

    /// Replica `r` takes its step at `t`; returns the queries this answered.
    fn step_replica(&mut self, t: SimTime, r: usize) -> usize {
        self.now = t;
        let mut done = std::mem::take(&mut self.done);
        self.replicas[r].step(&mut done);
        self.refresh(r);
        let mut answered = 0;
        for &(tag, finish) in &done {
            answered += self.copy_done(tag, finish, r);
        }
        done.clear();
        self.done = done;
        answered
    }

    /// A query arrives: one shard request per shard, each to one replica.
    fn arrive(&mut self, t: SimTime, demand_rng: &mut Rng) {
        self.now = t;
        let query = self.queries.len();
        self.queries.push(Query {
            arrival: t,
            left: self.cfg.shards,
        });
        for shard in 0..self.cfg.shards {
            let demand = self.cfg.server.demand.sample(demand_rng);
            self.next_id += 1;
            let req = ShardReq {
                id: self.next_id,
                query,
                shard,
                demand,
                copies: [None, None],
                answered: false,
                primary_ms: None,
                record: None,
            };
            let slot = match self.free.pop() {
                Some(slot) => {
                    self.shard_reqs[slot] = req;
                    slot
                }
                None => {
                    self.shard_reqs.push(req);
                    self.shard_reqs.len() - 1
                }
            };
            self.slots.insert(self.next_id, slot);
            self.shard_requests += 1;
            let replica = self.pick(shard, None);
            self.send(slot, 0, replica);
            let delay = match self.cfg.reissue {
                Reissue::None => None,
                Reissue::SingleD { d_ms } => Some(d_ms),
                Reissue::SingleR { d_ms, q } => {
                    (self.reissue_rng.random::<f64>() < q).then_some(d_ms)
                }
                Reissue::Hedge { percentile } => self.hedges[shard].delay_ms(t, percentile),
            };
            if let Some(d) = delay {
                self.events
                    .push(t + d, FrontEvent::Reissue(slot, self.next_id));
            }
        }
    }

    /// A replica of `shard` other than `except`: at random, or the least loaded.
    fn pick(&mut self, shard: usize, except: Option<usize>) -> usize {
        let r = self.cfg.replicas;
        let base = shard * r;
        let choices = r - usize::from(except.is_some());
        let skip = |i: usize| match except {
            Some(e) if i >= e - base => i + 1,
            _ => i,
        };
        let start = self.choice_rng.random_range(0..choices);
        match self.cfg.select {
            Select::Random => base + skip(start),
            Select::LeastLoaded => (0..choices)
                .map(|k| base + skip((start + k) % choices))
                .min_by_key(|&id| self.outstanding[id])
                .expect("a replica"),
        }
    }

    /// Sends copy `copy` of shard request `slot` to replica `replica` now.
    fn send(&mut self, slot: usize, copy: usize, replica: usize) {
        let s = &self.shard_reqs[slot];
        let (tag, demand) = (s.id as usize * 2 + copy, s.demand.clone());
        let ticket = self.replicas[replica].inject(self.now, tag, demand);
        self.shard_reqs[slot].copies[copy] = Some(Copy {
            replica,
            ticket,
            live: true,
            sent: self.now,
        });
        self.outstanding[replica] += 1;
        self.refresh(replica);
    }

    fn handle(&mut self, event: FrontEvent) {
        match event {
            FrontEvent::Reissue(slot, id) => {
                let s = &self.shard_reqs[slot];
                if s.id != id || s.answered {
                    return;
                }
                let (shard, first) = (s.shard, s.copies[0].expect("sent").replica);
                let replica = self.pick(shard, Some(first));
                self.reissued += 1;
                self.send(slot, 1, replica);
            }
            FrontEvent::Stall(r) => {
                let noise = self.cfg.noise.expect("stalls come with noise");
                let until = self.now + noise.length_ms;
                self.replicas[r].stall(self.now, until);
                self.refresh(r);
                let gap = self.stall_gap(noise);
                self.events.push(until + gap, FrontEvent::Stall(r));
            }
        }
    }

    /// Copy `tag` finished at `t` on replica `r`; returns 1 if this answered its query.
    fn copy_done(&mut self, tag: usize, t: SimTime, r: usize) -> usize {
        let (id, copy) = ((tag / 2) as u64, tag % 2);
        let slot = self.slots[&id];
        self.outstanding[r] -= 1;
        let s = &mut self.shard_reqs[slot];
        let query = s.query;
        s.copies[copy].as_mut().expect("sent").live = false;
        let arrival = self.queries[query].arrival;
        if copy == 0 {
            s.primary_ms = Some(t - arrival);
        }
        let mut answered = 0;
        if !s.answered {
            s.answered = true;
            let latency = t - arrival;
            let sent = s.copies[copy].expect("sent").sent;
            let shard = s.shard;
            self.hedges[shard].record(t, t - sent);
            if self.cfg.cancel {
                if let Some(other) = s.copies[1 - copy].filter(|c| c.live) {
                    s.copies[1 - copy].as_mut().expect("sent").live = false;
                    if self.replicas[other.replica].cancel(t, other.ticket) {
                        self.outstanding[other.replica] -= 1;
                    }
                    self.refresh(other.replica);
                }
            }
            let q = &mut self.queries[query];
            q.left -= 1;
            if q.left == 0 {
                answered = 1;
                self.measured.file(
                    query,
                    RequestRecord {
                        request: query + 1,
                        arrival_ms: arrival.ms(),
                        start_ms: arrival.ms(),
                        finish_ms: t.ms(),
                        work_ms: latency,
                        max_degree: 1,
                        mean_degree: 1.0,
                        boosted: false,
                    },
                );
            }
            if self.cfg.records {
                let s = &mut self.shard_reqs[slot];
                s.record = Some(self.records.len());
                self.records.push(ShardRecord {
                    query: query + 1,
                    shard: s.shard,
                    replica: s.copies[0].expect("sent").replica - s.shard * self.cfg.replicas,
                    arrival_ms: arrival.ms(),
                    latency_ms: latency,
                    primary_ms: None,
                    reissued_to: s.copies[1].map(|c| c.replica - s.shard * self.cfg.replicas),
                    reissue_won: copy == 1,
                    work_ms: Some(s.demand.work_ms),
                });
            }
        }
        // Once every copy has finished or been cancelled, the slot is free, and the
        // record learns the first copy's own latency.
        let s = &self.shard_reqs[slot];
        if s.copies.iter().flatten().all(|c| !c.live) {
            if let Some(i) = s.record {
                self.records[i].primary_ms = s.primary_ms;
            }
            self.slots.remove(&s.id);
            self.free.push(slot);
        }
        answered
    }

    fn output(mut self) -> FanoutOutput {
        self.measured.cpu_time = self.replicas.iter().map(Replica::cpu_time).sum();
        self.measured.thread_time = self.replicas.iter().map(Replica::thread_time).sum();
        let mut summary = finish(&self.cfg.server, self.measured, Vec::new()).summary;
        let servers = (self.cfg.shards * self.cfg.replicas) as f64;
        // Per replica, as a single run reports them.
        summary.cpu_utilization /= servers;
        summary.mean_threads /= servers;
        summary.reissue_rate = Some(self.reissued as f64 / self.shard_requests.max(1) as f64);
        summary.shards = Some(self.cfg.shards);
        summary.replicas = Some(self.cfg.replicas);
        summary.reissue = Some(self.cfg.reissue.name());
        self.records.sort_by_key(|r| (r.query, r.shard));
        FanoutOutput {
            summary,
            records: self.records,
        }
    }
}
