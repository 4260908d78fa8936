//! What the harness submits: a [`RequestSource`] turns request i of a run into a job.

use std::sync::Arc;

use tailor_core::{workload_rngs, DemandModel, Job, SpeedTrace};
use tailor_workloads::search::{QuerySpec, SearchIndex, SearchJob};
use tailor_workloads::{
    AsianCost, AsianJob, BlackScholesJob, PdeCalibration, Spinner, SyntheticJob, SyntheticShape,
};

use rand::RngExt;

/// The requests of a live run or a profile, in order.
pub trait RequestSource: Send + Sync + 'static {
    /// The job type submitted.
    type Job: Job;
    /// How many requests there are.
    fn len(&self) -> usize;
    /// Whether there are none.
    fn is_empty(&self) -> bool {
        self.len() == 0
    }
    /// Request i's job (i < len).
    fn job(&self, i: usize) -> Self::Job;
    /// Request i's sequential work in ms, where known (the synthetic demand, or a search
    /// query's profiled time).
    fn work_ms(&self, i: usize) -> Option<f64>;
    /// For work of a known length: the time it took over the time asked, so far (the
    /// synthetic spin loop's [`Spinner::work_scale`]); None where not measured.
    fn work_scale(&self) -> Option<f64> {
        None
    }
    /// For work of a known length: the work scale window by window, with starts in ms
    /// from `since` (the synthetic spin loop's [`Spinner::speed_trace`]).
    fn speed_trace(&self, _since: std::time::Instant) -> Option<SpeedTrace> {
        None
    }
}

/// The works of `count` requests from `demand`, drawn from the workload stream of `seed`
/// as the simulator draws them.
fn draw_works(demand: &DemandModel, count: usize, seed: u64) -> Vec<f64> {
    let (_, mut demand_rng) = workload_rngs(seed);
    demand
        .sample_many(count, &mut demand_rng)
        .iter()
        .map(|d| d.work_ms)
        .collect()
}

/// Synthetic requests drawn from a demand model with the simulator's generators, so a
/// seed gives both engines the same requests.
#[derive(Debug, Clone)]
pub struct SyntheticSource {
    works: Vec<f64>,
    shape: SyntheticShape,
    spinner: Arc<Spinner>,
}

impl SyntheticSource {
    /// `count` requests from `demand`, drawn from the workload stream of `seed`.
    pub fn new(
        demand: &DemandModel,
        shape: SyntheticShape,
        spinner: Spinner,
        count: usize,
        seed: u64,
    ) -> SyntheticSource {
        SyntheticSource {
            works: draw_works(demand, count, seed),
            shape,
            spinner: Arc::new(spinner),
        }
    }
}

impl RequestSource for SyntheticSource {
    type Job = SyntheticJob;

    fn len(&self) -> usize {
        self.works.len()
    }

    fn job(&self, i: usize) -> SyntheticJob {
        SyntheticJob::new(self.works[i], self.shape, self.spinner.clone())
    }

    fn work_ms(&self, i: usize) -> Option<f64> {
        Some(self.works[i])
    }

    fn work_scale(&self) -> Option<f64> {
        self.spinner.work_scale()
    }

    fn speed_trace(&self, since: std::time::Instant) -> Option<SpeedTrace> {
        self.spinner.speed_trace(since)
    }
}

/// Black-Scholes PDE requests: request i prices a batch of options sized to work i,
/// drawn from a demand with the simulator's generators (so a seed gives both engines the
/// same works), its options drawn from the seed and i.
#[derive(Debug, Clone)]
pub struct BlackScholesSource {
    works: Vec<f64>,
    seed: u64,
    calibration: Arc<PdeCalibration>,
}

impl BlackScholesSource {
    /// `count` requests from `demand`, drawn from the workload stream of `seed`.
    pub fn new(
        demand: &DemandModel,
        calibration: PdeCalibration,
        count: usize,
        seed: u64,
    ) -> BlackScholesSource {
        BlackScholesSource {
            works: draw_works(demand, count, seed),
            seed,
            calibration: Arc::new(calibration),
        }
    }
}

impl RequestSource for BlackScholesSource {
    type Job = BlackScholesJob;

    fn len(&self) -> usize {
        self.works.len()
    }

    fn job(&self, i: usize) -> BlackScholesJob {
        BlackScholesJob::new(
            self.works[i],
            self.seed.wrapping_mul(1_000_003).wrapping_add(i as u64),
            &self.calibration,
        )
    }

    fn work_ms(&self, i: usize) -> Option<f64> {
        Some(self.works[i])
    }
}

/// Monte Carlo Asian-option requests: request i's option is drawn from the seed and i.
/// Its work is predicted from its paths and fixings with the cost measured when the
/// source is made ([`AsianCost::measure`]), for clairvoyant policies and the records.
#[derive(Debug, Clone)]
pub struct AsianSource {
    count: usize,
    seed: u64,
    scale: f64,
    cost: AsianCost,
}

impl AsianSource {
    /// `count` requests of the run seeded `seed`, path counts times `scale`; times the
    /// pricing loop on this machine (a few ms).
    pub fn new(count: usize, seed: u64, scale: f64) -> AsianSource {
        AsianSource {
            count,
            seed,
            scale,
            cost: AsianCost::measure(),
        }
    }
}

impl RequestSource for AsianSource {
    type Job = AsianJob;

    fn len(&self) -> usize {
        self.count
    }

    fn job(&self, i: usize) -> AsianJob {
        AsianJob::new(self.seed, i as u64, self.scale).with_demand_hint(&self.cost)
    }

    fn work_ms(&self, i: usize) -> Option<f64> {
        self.job(i).demand_hint_ms()
    }
}

/// Search requests: request i runs one of the queries, chosen with the workload stream of
/// a seed, or each query in turn for profiling.
pub struct SearchSource {
    index: Arc<SearchIndex>,
    queries: Vec<QuerySpec>,
    picks: Vec<usize>,
    seq_ms: Option<Vec<f64>>,
    executor: Option<Arc<tantivy::Executor>>,
}

impl std::fmt::Debug for SearchSource {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SearchSource")
            .field("queries", &self.queries.len())
            .field("requests", &self.picks.len())
            .finish()
    }
}

impl SearchSource {
    /// `count` requests, each a query drawn uniformly with the workload stream of `seed`.
    /// `seq_ms`, one per query, are their profiled sequential times. Queries are checked
    /// here, so a bad one is reported before anything runs.
    pub fn random(
        index: Arc<SearchIndex>,
        queries: Vec<QuerySpec>,
        seq_ms: Option<Vec<f64>>,
        count: usize,
        seed: u64,
    ) -> Result<SearchSource, String> {
        let (_, mut rng) = workload_rngs(seed);
        let picks = (0..count)
            .map(|_| rng.random_range(0..queries.len().max(1)))
            .collect();
        SearchSource::with_picks(index, queries, seq_ms, picks)
    }

    /// Every query once, in order: what a profile measures.
    pub fn each_query(
        index: Arc<SearchIndex>,
        queries: Vec<QuerySpec>,
    ) -> Result<SearchSource, String> {
        let picks = (0..queries.len()).collect();
        SearchSource::with_picks(index, queries, None, picks)
    }

    fn with_picks(
        index: Arc<SearchIndex>,
        queries: Vec<QuerySpec>,
        seq_ms: Option<Vec<f64>>,
        picks: Vec<usize>,
    ) -> Result<SearchSource, String> {
        if queries.is_empty() {
            return Err("no queries".into());
        }
        if let Some(s) = &seq_ms {
            if s.len() != queries.len() {
                return Err(format!(
                    "{} profiled times for {} queries: the profile is not of these queries",
                    s.len(),
                    queries.len()
                ));
            }
        }
        for (i, q) in queries.iter().enumerate() {
            q.build(&index)
                .map_err(|e| format!("query {}: {e}", i + 1))?;
        }
        Ok(SearchSource {
            index,
            queries,
            picks,
            seq_ms,
            executor: None,
        })
    }

    /// Runs every request on tantivy's own executor with `threads` threads instead of
    /// splitting it into units (the `tantivy-executor-N` peer).
    pub fn on_tantivy_executor(mut self, threads: usize) -> Result<SearchSource, String> {
        let executor = tantivy::Executor::multi_thread(threads.max(1), "tantivy-search-")
            .map_err(|e| format!("tantivy's executor: {e}"))?;
        self.executor = Some(Arc::new(executor));
        Ok(self)
    }
}

impl RequestSource for SearchSource {
    type Job = SearchJob;

    fn len(&self) -> usize {
        self.picks.len()
    }

    fn job(&self, i: usize) -> SearchJob {
        let q = self.picks[i];
        let query = self.queries[q]
            .build(&self.index)
            .expect("queries were checked when the source was made");
        let job = SearchJob::new(self.index.clone(), query, self.work_ms(i))
            .with_limits(self.queries[q].limits());
        match &self.executor {
            Some(executor) => job.on_executor(executor.clone()),
            None => job,
        }
    }

    fn work_ms(&self, i: usize) -> Option<f64> {
        self.seq_ms.as_ref().map(|s| s[self.picks[i]])
    }
}
