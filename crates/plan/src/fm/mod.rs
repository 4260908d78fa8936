//! The Few-to-Many interval table planner (Haque et al., ASPLOS 2015, §4.1).
//!
//! For each load q = 1..Q it picks the schedule S = (v0, v1, ..., v_{n-1}) on the grid
//! 0, step, ..., y with the smallest beta-tail latency (Eq. 5) among those whose total
//! average parallelism ap_R(S, q) (Eq. 3) does not exceed the target, breaking ties by
//! the smaller mean (Eq. 4), as in the pseudocode of Fig. 7. Exact ties left after that
//! go to the lexicographically smallest S, which is the one Fig. 7's loop order finds
//! first.
//!
//! Two searches give the same table: [`plan_fm`], the fast exact search of `search.rs`,
//! and [`plan_fm_exhaustive`], Fig. 7 as written (with the load loop moved inside, since
//! Eq. 1, 2, 4 and 5 do not depend on the load). Both can be limited to schedules whose
//! v1 keeps short requests sequential ([`FmProblem::with_min_v1_ms`], tailor's departure).

mod bins;
mod defaults;
mod exhaustive;
mod model;
mod search;

use tailor_core::{
    Calibration, DemandProfile, IntervalRow, IntervalTable, ThreadModel, INTERVAL_TABLE_KIND,
};

pub use bins::binned_problem;
pub use defaults::{ladder, planning_step_ms, FmDefaults, DEFAULT_PERCENTILE, FINEST_STEP_MS};
pub use exhaustive::plan_fm_exhaustive;
pub use model::{tail_rank, PARALLELISM_TOLERANCE};
pub use search::plan_fm;

/// Hears a search's progress as (units done, units in all); called from worker threads.
pub type Progress<'a> = &'a (dyn Fn(u64, u64) + Sync);

use model::{cmp_time, request_time, upper_order_statistic};

/// The planner's inputs besides the profile: the flags of `tailor plan fm`.
#[derive(Debug, Clone, PartialEq)]
pub struct FmParams {
    /// n: the maximum degree of parallelism per request.
    pub max_degree: usize,
    /// target_p: the total parallelism the table must not exceed at any load.
    pub target_parallelism: f64,
    /// The interval grid step in ms.
    pub step_ms: f64,
    /// y: the largest interval in ms, a multiple of the step.
    pub max_interval_ms: f64,
    /// beta: the percentile to minimize, in (0, 1].
    pub percentile: f64,
    /// Q: the highest load to plan for.
    pub max_load: usize,
    /// How Eq. 2 counts a request's wait v0.
    pub wait_model: WaitModel,
    /// How Eq. 1-2 charge a request's threads at degree d: d held threads (the paper),
    /// or the s(d) a request whose threads leave when out of units keeps busy.
    pub thread_model: ThreadModel,
}

/// How the parallelism model (Eq. 2-3) counts the time a request waits before it starts.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum WaitModel {
    /// The paper's Eq. 2: the wait v0 is time with zero threads, so a wait lowers the
    /// predicted parallelism ap_R(S, q) just as running sequentially longer does.
    Paper,
    /// tailor's departure (docs/fm-planner.md): ap_R averages threads over the time a
    /// request runs, v0 excluded. A wait adds latency but never thread-time, so by
    /// Little's law it cannot lower the threads in use; under this model it never makes
    /// a schedule fit the target, and v0 appears only in admit-on-exit rows, at loads
    /// where no schedule fits. The default.
    #[default]
    Running,
}

impl WaitModel {
    /// The weight of v0 in the denominator of Eq. 2-3: 1 for the paper's model, 0 when
    /// parallelism is averaged over running time only.
    pub(crate) fn credit(self) -> f64 {
        match self {
            WaitModel::Paper => 1.0,
            WaitModel::Running => 0.0,
        }
    }
}

/// Why a table could not be planned.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum PlanError {
    /// A parameter is out of its range.
    #[error("{name}: {reason}")]
    BadParameter {
        /// The flag's name, e.g. `--step`.
        name: &'static str,
        /// What is wrong and what is accepted.
        reason: String,
    },
    /// The profile lacks times for the requested maximum degree.
    #[error("--max-degree is {max_degree} but the profile has times only up to degree {profiled}")]
    ProfileTooShallow {
        /// The requested maximum degree.
        max_degree: usize,
        /// The highest degree in the profile.
        profiled: usize,
    },
    /// Not even load 1 has a schedule within the target parallelism.
    #[error(
        "no schedule keeps the parallelism within --target-parallelism {target} even at load 1; \
         raise the target or --max-interval"
    )]
    NothingFeasible {
        /// The target parallelism.
        target: f64,
    },
    /// The grid is too large to search.
    #[error(
        "the search space has {schedules:.3e} schedules, more than the {limit:.0e} allowed; \
         use a coarser --step, a smaller --max-interval or fewer degrees"
    )]
    TooLarge {
        /// Schedules in the grid.
        schedules: f64,
        /// The largest grid searched.
        limit: f64,
    },
}

/// The default maximum degree for a profile: the highest degree whose work-weighted
/// efficiency s(d) / d is at least `threshold`. Haque et al. stopped Lucene at degree 4
/// and Bing at 3 (ASPLOS 2015, §6-7), where their speedups flatten; see
/// [`EFFICIENCY_THRESHOLD`] for the value tailor uses.
pub fn default_max_degree(profile: &DemandProfile, threshold: f64) -> usize {
    let work: f64 = profile.requests().iter().map(|r| r.seq_ms()).sum();
    (1..=profile.max_degree())
        .take_while(|&d| {
            let time: f64 = profile
                .requests()
                .iter()
                .map(|r| r.seq_ms() / r.speedup(d))
                .sum();
            work / time / d as f64 >= threshold
        })
        .last()
        .unwrap_or(1)
}

/// The efficiency s(d) / d below which the default maximum degree stops: 0.5, where a
/// helper adds less than half a core's worth of progress. Under tailor's core guard a
/// helper holds a core that a waiting request would use at full efficiency, so a helper
/// worth less than half of it loses as soon as requests queue. On the 16-core search
/// profile of 2026-11-27 (s(4) = 2.14, s(5) = 2.37) it gives 4; the FM paper's Lucene
/// (degree 4) and Bing (3) choices sit at efficiencies of about 0.6-0.8.
pub const EFFICIENCY_THRESHOLD: f64 = 0.5;

/// The most schedules (grid points of S without v0) the planner accepts: 1000 times the
/// paper-scale search (101^3 schedules, about 2 s here).
const MAX_SCHEDULES: f64 = 1e9;

/// The most grid steps per interval (memory per worker grows with it).
const MAX_STEPS: f64 = 100_000.0;

/// The highest maximum degree: the search keeps a prefix of n - 2 intervals on the stack.
const MAX_DEGREE: usize = search::MAX_PREFIX;

/// The highest load a table may be planned for.
const MAX_LOAD: usize = 100_000;

/// A planning problem: validated parameters and requests, each with a weight (1 for a
/// profiled request, the request count for a bin).
#[derive(Debug, Clone)]
pub struct FmProblem {
    params: FmParams,
    /// Grid points per interval: J + 1 where y = J * step.
    grid_len: usize,
    /// The grid values j * step, rounded to 1e-9 ms so that a step such as 0.1 gives 0.3
    /// and not 0.30000000000000004.
    grid_values: Vec<f64>,
    seq: Vec<f64>,
    /// s_r(1..=n) for request r at `speedups[r * n .. (r + 1) * n]`.
    speedups: Vec<f64>,
    /// The threads request r keeps busy at degrees 1..=n (d, or s_r(d) under
    /// [`ThreadModel::Busy`]), laid out as `speedups`.
    charges: Vec<f64>,
    weight: Vec<u32>,
    total_weight: u64,
    /// The degrees a schedule's phases run at: 1, 2, ..., n by default (the paper's
    /// search), or a ladder that skips degrees ([`FmProblem::with_degrees`]).
    degrees: Vec<usize>,
    /// Theorem 1's form ([`FmProblem::with_latency_bound`]): the bound d on the
    /// beta-percentile, in ms, under which the least resource usage is sought.
    latency_bound_ms: Option<f64>,
    /// [`FmProblem::with_min_v1_ms`]: the smallest grid index v1 may take, with the
    /// executed time it stands for; 0 (no floor) by default.
    min_v1: (u32, f64),
}

/// The planner's model predictions for one schedule at one load.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Prediction {
    /// The beta-tail latency, Eq. 5.
    pub tail_ms: f64,
    /// The mean latency, Eq. 4.
    pub mean_ms: f64,
    /// The total average parallelism ap_R(S, q), Eq. 3.
    pub parallelism: f64,
}

impl FmProblem {
    /// The exact problem: every profiled request, each with weight 1.
    pub fn new(profile: &DemandProfile, params: FmParams) -> Result<Self, PlanError> {
        let degrees: Vec<usize> = (1..=params.max_degree).collect();
        Self::with_degrees(profile, params, &degrees)
    }

    /// The exact problem searched over a ladder of degrees: a request runs at
    /// `degrees[0]` = 1, then `degrees[1]`, ..., and finishes at the last, which must be
    /// `max_degree`, skipping the degrees in between. The paper's schedules may already
    /// jump degrees (a zero interval, §4.1, Fig. 5's (t1 = 50, d3)); the ladder keeps
    /// only those whose jumps are its own, so that a high degree costs the search as many
    /// dimensions as the ladder has steps, not as many as the degree (tailor's departure,
    /// docs/fm-planner.md). The table still lists every degree, the skipped ones with
    /// zero intervals.
    pub fn with_degrees(
        profile: &DemandProfile,
        params: FmParams,
        degrees: &[usize],
    ) -> Result<Self, PlanError> {
        let requests = profile.requests();
        let profiled = profile.max_degree();
        Self::from_parts(
            params,
            profiled,
            requests.iter().map(|r| r.seq_ms()).collect(),
            requests
                .iter()
                .flat_map(|r| {
                    degrees
                        .iter()
                        .map(move |&d| if d <= profiled { r.speedup(d) } else { 1.0 })
                })
                .collect(),
            vec![1; requests.len()],
            degrees.to_vec(),
        )
    }

    /// `speedups` holds each request's speedups at `degrees`.
    pub(crate) fn from_parts(
        params: FmParams,
        profiled_degree: usize,
        seq: Vec<f64>,
        speedups: Vec<f64>,
        weight: Vec<u32>,
        degrees: Vec<usize>,
    ) -> Result<Self, PlanError> {
        let bad = |name, reason: String| Err(PlanError::BadParameter { name, reason });
        if params.max_degree == 0 {
            return bad("--max-degree", "must be at least 1".into());
        }
        if params.max_degree > MAX_DEGREE {
            return bad(
                "--max-degree",
                format!("must be at most {MAX_DEGREE}, found {}", params.max_degree),
            );
        }
        if params.max_degree > profiled_degree {
            return Err(PlanError::ProfileTooShallow {
                max_degree: params.max_degree,
                profiled: profiled_degree,
            });
        }
        if degrees.first() != Some(&1)
            || degrees.windows(2).any(|w| w[0] >= w[1])
            || degrees.last() != Some(&params.max_degree)
        {
            return bad(
                "--degrees",
                format!(
                    "must rise from 1 to --max-degree {} without repeating, found {degrees:?}",
                    params.max_degree
                ),
            );
        }
        if !(params.target_parallelism.is_finite() && params.target_parallelism > 0.0) {
            return bad(
                "--target-parallelism",
                format!("must be positive, found {}", params.target_parallelism),
            );
        }
        if !(params.step_ms.is_finite() && params.step_ms > 0.0) {
            return bad(
                "--step",
                format!("must be positive, found {}", params.step_ms),
            );
        }
        if !(params.max_interval_ms.is_finite() && params.max_interval_ms >= 0.0) {
            return bad(
                "--max-interval",
                format!("must be zero or positive, found {}", params.max_interval_ms),
            );
        }
        let steps = (params.max_interval_ms / params.step_ms).round();
        if (steps * params.step_ms - params.max_interval_ms).abs()
            > 1e-9 * params.max_interval_ms.max(1.0)
        {
            return bad(
                "--max-interval",
                format!(
                    "{} ms is not a multiple of --step {} ms",
                    params.max_interval_ms, params.step_ms
                ),
            );
        }
        if !(params.percentile > 0.0 && params.percentile <= 1.0) {
            return bad(
                "--percentile",
                format!("must lie in (0, 1], found {}", params.percentile),
            );
        }
        if params.max_load == 0 {
            return bad("--max-load", "must be at least 1".into());
        }
        if steps > MAX_STEPS {
            return bad(
                "--step",
                format!(
                    "--max-interval / --step is {steps}, more than {MAX_STEPS} grid steps; \
                     use a coarser step"
                ),
            );
        }
        if params.max_load > MAX_LOAD {
            return bad(
                "--max-load",
                format!("must be at most {MAX_LOAD}, found {}", params.max_load),
            );
        }
        let grid_len = steps as usize + 1;
        let schedules = (grid_len as f64).powi(degrees.len() as i32 - 1);
        if schedules > MAX_SCHEDULES {
            return Err(PlanError::TooLarge {
                schedules,
                limit: MAX_SCHEDULES,
            });
        }
        let n = degrees.len();
        for (r, &x) in seq.iter().enumerate() {
            let s = &speedups[r * n..(r + 1) * n];
            if !(x.is_finite() && x > 0.0) || s.iter().any(|v| !(v.is_finite() && *v > 0.0)) {
                return bad(
                    "--profile",
                    format!(
                        "request {} has a time or speedup that is not a positive finite \
                         number (sequential {x} ms, speedups {s:?})",
                        r + 1
                    ),
                );
            }
        }
        let total_weight = weight.iter().map(|w| u64::from(*w)).sum();
        let grid_values = (0..grid_len)
            .map(|j| (j as f64 * params.step_ms * 1e9).round() / 1e9)
            .collect();
        let charges = speedups
            .chunks(n)
            .flat_map(|s| {
                s.iter()
                    .enumerate()
                    .map(|(i, &x)| params.thread_model.charge(degrees[i], x))
            })
            .collect();
        Ok(FmProblem {
            params,
            grid_len,
            grid_values,
            seq,
            speedups,
            charges,
            weight,
            total_weight,
            degrees,
            latency_bound_ms: None,
            min_v1: (0, 0.0),
        })
    }

    /// The problem charged as a machine's calibration prices a thread (tailor's departure
    /// from Eq. 1-2, docs/calibration.md): work takes the calibrated slowdown at the
    /// target parallelism's busy cores longer, and a request at degree d is charged the
    /// threads it keeps busy, s(d) (its threads leave when out of units), plus the CPU
    /// of its d - 1 help tickets spread over its time at d; never more than d.
    pub fn charged(mut self, calibration: &Calibration, cores: usize) -> Self {
        let busy = (self.params.target_parallelism / cores.max(1) as f64).min(1.0);
        let slowdown = calibration.slowdown_at(busy);
        let h = calibration.helper_cost_ms;
        let n = self.n();
        for r in 0..self.seq.len() {
            self.seq[r] *= slowdown;
            let seq = self.seq[r];
            for i in 0..n {
                let d = self.degrees[i] as f64;
                let s = self.speedups[r * n + i];
                self.charges[r * n + i] = (s.min(d) + (d - 1.0) * h * s / seq).min(d);
            }
        }
        self
    }

    /// The problem in Theorem 1's own form (Haque et al., ASPLOS 2015, §3.2 and Appendix
    /// A, Eq. 6): at each load, the schedule with the least mean thread-time (Eq. 2's
    /// numerator per request: the resources a request uses) among those whose predicted
    /// beta-percentile is at most `bound_ms` and whose parallelism is within the target;
    /// ties go to the smaller tail, then Fig. 7's order. A load where no schedule meets
    /// the bound keeps Fig. 7's choice, the least tail. The paper plans the dual (least
    /// tail within the target, Fig. 7); this form keeps short requests sequential at low
    /// load, where Fig. 7 parallelizes every request at once. Only the exhaustive search
    /// ([`super::plan_fm_exhaustive`]) plans it; the fast search orders by tail alone.
    pub fn with_latency_bound(mut self, bound_ms: f64) -> Self {
        self.latency_bound_ms = Some(bound_ms);
        self
    }

    /// Keeps the shortest `share` (a fraction in (0, 1]) of the (weighted) requests
    /// sequential: only schedules whose first interval v1, the executed time at degree 1
    /// before a second thread, is at least the share's quantile of the requests'
    /// sequential times are searched, at every load ([`FmProblem::with_min_v1_ms`]). The
    /// paper has no such floor (its Table 2, §6, starts every request at full degree at
    /// low load); it is tailor's departure for engines whose short requests gain nothing
    /// from a thread and pay for it (OpenSearch RFC #14781; docs/fm-planner.md, "Keeping
    /// short requests sequential"). The quantile is of the times as they stand: call it
    /// after [`FmProblem::charged`], which rescales them. On a binned problem it is a
    /// quantile of the bins' means; plan the floor on the exact problem and pass it to
    /// the binned one with [`FmProblem::with_min_v1_ms`] to keep every request that short.
    pub fn with_keep_sequential(self, share: f64) -> Result<Self, PlanError> {
        if !(share > 0.0 && share <= 1.0) {
            return Err(PlanError::BadParameter {
                name: "--keep-sequential",
                reason: format!("must lie in (0, 1] as a fraction, found {share}"),
            });
        }
        let mut times: Vec<(f64, u32)> = self
            .seq
            .iter()
            .copied()
            .zip(self.weight.iter().copied())
            .collect();
        // The k-th smallest (weighted) time is the (W - k + 1)-th largest.
        let k = model::tail_rank(share, self.total_weight);
        let unit = self.all_unit();
        let quantile = upper_order_statistic(&mut times, self.total_weight - k + 1, unit);
        Ok(self.with_min_v1_ms(quantile))
    }

    /// Searches only schedules whose first interval v1 is at least `floor_ms`, rounded up
    /// to the grid and capped at y, the grid's end (a request longer than y still gets its
    /// helper). Both searches honour it, since it only removes candidates; the fallback
    /// rows at loads where nothing fits keep it too (v1 = y under
    /// [`WaitModel::Running`], the last feasible row's v1 under [`WaitModel::Paper`]).
    /// [`FmProblem::min_v1_ms`] gives the floor on the grid. A floor of 0 or less (or NaN)
    /// sets none.
    pub fn with_min_v1_ms(mut self, floor_ms: f64) -> Self {
        let y_index = self.grid_len - 1;
        let j = if floor_ms > 0.0 {
            self.grid_values
                .iter()
                .position(|v| model::cmp_time(*v, floor_ms).is_ge())
                .unwrap_or(y_index)
        } else {
            0
        };
        self.min_v1 = (j as u32, self.grid_values[j]);
        self
    }

    /// The floor on v1 of [`FmProblem::with_min_v1_ms`] in ms, on the grid (0 without one).
    pub fn min_v1_ms(&self) -> f64 {
        self.min_v1.1
    }

    /// Whether the schedule with grid indices `grid` (v0, v1, ...) may be chosen: its v1
    /// is not below [`FmProblem::with_min_v1_ms`]'s floor. A problem of degree 1
    /// has no v1 and every schedule may be.
    pub(crate) fn allows(&self, grid: &[u32]) -> bool {
        grid.get(1).is_none_or(|&v1| v1 >= self.min_v1.0)
    }

    /// The bound of [`FmProblem::with_latency_bound`], if any.
    pub fn latency_bound_ms(&self) -> Option<f64> {
        self.latency_bound_ms
    }

    /// The parameters.
    pub fn params(&self) -> &FmParams {
        &self.params
    }

    /// The number of (weighted) requests: profiled requests, or bins.
    pub fn len(&self) -> usize {
        self.seq.len()
    }

    /// Whether there are no requests (never true for a problem built from a profile).
    pub fn is_empty(&self) -> bool {
        self.seq.is_empty()
    }

    /// The number of phases a schedule has (v0 included): n for the paper's search, the
    /// ladder's length with [`FmProblem::with_degrees`].
    fn n(&self) -> usize {
        self.degrees.len()
    }

    /// A schedule over the ladder's phases written over every degree 1..=max_degree, as
    /// the table lists it: a skipped degree runs for zero ms.
    fn expand(&self, phases_ms: &[f64]) -> Vec<f64> {
        let mut full = vec![0.0; self.params.max_degree];
        full[0] = phases_ms[0];
        for (i, &v) in phases_ms.iter().enumerate().skip(1) {
            full[self.degrees[i - 1]] = v;
        }
        full
    }

    fn s(&self, r: usize) -> &[f64] {
        &self.speedups[r * self.n()..(r + 1) * self.n()]
    }

    /// The threads request r keeps busy at degrees 1..=n.
    fn c(&self, r: usize) -> &[f64] {
        &self.charges[r * self.n()..(r + 1) * self.n()]
    }

    fn all_unit(&self) -> bool {
        self.weight.iter().all(|w| *w == 1)
    }

    /// The grid value of index j.
    #[inline]
    fn grid(&self, j: usize) -> f64 {
        self.grid_values[j]
    }

    /// Evaluates Eq. 1-5 for `schedule_ms` = (v0, ..., v_{n-1}) at `load`.
    pub fn evaluate(&self, schedule_ms: &[f64], load: usize) -> Prediction {
        assert_eq!(
            schedule_ms.len(),
            self.n(),
            "a schedule has an interval per phase"
        );
        let mut times = Vec::with_capacity(self.len());
        let (mut sum_time, mut sum_threads) = (0.0, 0.0);
        for r in 0..self.len() {
            let (t, th) = request_time(self.seq[r], self.s(r), self.c(r), schedule_ms);
            let w = f64::from(self.weight[r]);
            sum_time += w * t;
            sum_threads += w * th;
            times.push((t, self.weight[r]));
        }
        let need = self.total_weight - tail_rank(self.params.percentile, self.total_weight) + 1;
        // Eq. 3's denominator: every request's time, less the uncredited part of v0.
        let running = sum_time
            - (1.0 - self.params.wait_model.credit()) * schedule_ms[0] * self.total_weight as f64;
        Prediction {
            tail_ms: upper_order_statistic(&mut times, need, self.all_unit()),
            mean_ms: sum_time / self.total_weight as f64,
            parallelism: load as f64 * sum_threads / running,
        }
    }

    /// The weight that must lie at or above the tail: W - k + 1 for tail rank k.
    fn tail_need(&self) -> u64 {
        self.total_weight - tail_rank(self.params.percentile, self.total_weight) + 1
    }
}

/// The best schedule found for one load, as grid indices of (v0, ..., v_{n-1}).
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Choice {
    tail: f64,
    mean: f64,
    /// Mean thread-time per request (Eq. 2's numerator over the requests).
    resource: f64,
    /// Under a latency bound, whether the tail meets it; None without one.
    meets: Option<bool>,
    grid: Vec<u32>,
}

impl Choice {
    fn beats(&self, other: &Choice) -> bool {
        ranks_before(self, other)
    }
}

/// Whether `a` ranks before `b`. Fig. 7's order: smaller tail, then smaller mean, then
/// the lexicographically smaller schedule (the one Fig. 7 meets first). Under a latency
/// bound (Theorem 1's form), a schedule that meets it ranks first, and among those the
/// smaller resource usage, then Fig. 7's order.
fn ranks_before(a: &Choice, b: &Choice) -> bool {
    use std::cmp::Ordering::Equal;
    if let (Some(am), Some(bm)) = (a.meets, b.meets) {
        if am != bm {
            return am;
        }
        if am {
            match cmp_time(a.resource, b.resource) {
                Equal => {}
                o => return o.is_lt(),
            }
        }
    }
    match cmp_time(a.tail, b.tail) {
        Equal => match cmp_time(a.mean, b.mean) {
            Equal => a.grid < b.grid,
            o => o.is_lt(),
        },
        o => o.is_lt(),
    }
}

/// The best choice per load, index q - 1.
pub(crate) type Choices = Vec<Option<Choice>>;

/// Keeps the better of two choice lists, load by load.
pub(crate) fn merge_choices(mut a: Choices, b: Choices) -> Choices {
    for (x, y) in a.iter_mut().zip(b) {
        if let Some(y) = y {
            if x.as_ref().is_none_or(|x| y.beats(x)) {
                *x = Some(y);
            }
        }
    }
    a
}

/// A schedule's predictions at one load, offered to [`offer`].
#[derive(Debug, Clone, Copy)]
pub(crate) struct Candidate {
    pub tail: f64,
    pub mean: f64,
    /// Mean thread-time per request; only a latency bound reads it.
    pub resource: f64,
}

/// Offers a schedule (its grid indices and predictions) for load index `qi`; `bound` is
/// the problem's latency bound, if any.
pub(crate) fn offer(
    choices: &mut Choices,
    qi: usize,
    c: Candidate,
    grid: &[u32],
    bound: Option<f64>,
) {
    let candidate = Choice {
        tail: c.tail,
        mean: c.mean,
        resource: c.resource,
        meets: bound.map(|d| cmp_time(c.tail, d).is_le()),
        grid: grid.to_vec(),
    };
    let slot = &mut choices[qi];
    if slot.as_ref().is_none_or(|best| candidate.beats(best)) {
        *slot = Some(candidate);
    }
}

/// Turns the per-load choices into the table. Rows whose chosen v0 is y are
/// admit-on-exit (§4.1, "Admission control"). A load with no feasible schedule gets:
///
/// - under [`WaitModel::Paper`], v1.. of the highest feasible load, v0 = y and
///   admit-on-exit, as Table 2 of the paper does for its highest loads;
/// - under [`WaitModel::Running`], the most sequential schedule of the grid,
///   (0, y, ..., y), admitted at once while the load is at most the target parallelism
///   (every request could still have a thread of its own), and (y, y, ..., y) with
///   admit-on-exit above it, where even sequential requests would outnumber the target.
///   This is tailor's reading; the paper does not say what a table holds at loads where
///   nothing fits (docs/fm-planner.md, "Loads where nothing fits").
///
/// Predictions are Eq. 1-5 evaluated on the row's schedule.
pub(crate) fn build_table(
    problem: &FmProblem,
    choices: &Choices,
) -> Result<IntervalTable, PlanError> {
    let p = &problem.params;
    let y_index = (problem.grid_len - 1) as u32;
    let mut rows = Vec::with_capacity(p.max_load);
    let mut last_feasible: Option<&Choice> = None;
    for (qi, choice) in choices.iter().enumerate() {
        let load = qi + 1;
        let (grid, admit_on_exit): (Vec<u32>, bool) = match (choice, last_feasible) {
            (Some(c), _) => {
                last_feasible = Some(c);
                let exit = y_index > 0 && c.grid[0] == y_index;
                (c.grid.clone(), exit)
            }
            (None, Some(c)) => match p.wait_model {
                WaitModel::Paper => {
                    let mut g = c.grid.clone();
                    g[0] = y_index;
                    (g, true)
                }
                WaitModel::Running => {
                    let within =
                        load as f64 <= p.target_parallelism * (1.0 + PARALLELISM_TOLERANCE);
                    let mut g = vec![y_index; problem.n()];
                    if within {
                        g[0] = 0;
                    }
                    (g, !within)
                }
            },
            (None, None) => {
                return Err(PlanError::NothingFeasible {
                    target: p.target_parallelism,
                })
            }
        };
        let phases_ms: Vec<f64> = grid.iter().map(|j| problem.grid(*j as usize)).collect();
        let prediction = problem.evaluate(&phases_ms, load);
        rows.push(IntervalRow {
            load,
            admit_on_exit,
            intervals_ms: problem.expand(&phases_ms),
            tail_ms: prediction.tail_ms,
            mean_ms: prediction.mean_ms,
            parallelism: prediction.parallelism,
        });
    }
    Ok(IntervalTable {
        kind: INTERVAL_TABLE_KIND.to_string(),
        max_degree: p.max_degree,
        target_parallelism: p.target_parallelism,
        percentile: p.percentile,
        step_ms: p.step_ms,
        max_interval_ms: p.max_interval_ms,
        rows,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use tailor_core::{Curve, RequestProfile, Units};

    fn profile(times: &[&[f64]]) -> DemandProfile {
        DemandProfile::new(
            times
                .iter()
                .enumerate()
                .map(|(i, t)| RequestProfile {
                    id: format!("q{i}"),
                    times_ms: t.to_vec(),
                })
                .collect(),
        )
        .unwrap()
    }

    #[test]
    fn the_default_maximum_degree_stops_where_efficiency_falls_below_the_threshold() {
        // s(2) = 1.8 (0.9), s(3) = 2.4 (0.8), s(4) = 2.5 (0.625), s(5) = 2.5 (0.5),
        // s(6) = 2.5 (0.42).
        let p = profile(&[&[10.0, 10.0 / 1.8, 10.0 / 2.4, 4.0, 4.0, 4.0]]);
        assert_eq!(default_max_degree(&p, 0.5), 5);
        assert_eq!(default_max_degree(&p, 0.6), 4);
        assert_eq!(default_max_degree(&p, 0.95), 1);
    }

    #[test]
    fn a_calibration_charges_busy_threads_help_tickets_and_slowdown() {
        let p = profile(&[&[10.0, 6.0, 4.0]]);
        let params = FmParams {
            max_degree: 3,
            target_parallelism: 4.0,
            step_ms: 1.0,
            max_interval_ms: 2.0,
            percentile: 0.99,
            max_load: 2,
            wait_model: WaitModel::Running,
            thread_model: ThreadModel::Held,
        };
        let held = FmProblem::new(&p, params).unwrap();
        assert_eq!(held.c(0), &[1.0, 2.0, 3.0]);
        let mut cal = Calibration::ideal(8, Units::Count(16));
        cal.helper_cost_ms = 0.5;
        cal.slowdown = Curve::through(vec![[0.0, 1.0], [1.0, 3.0]], 0.5);
        let charged = held.clone().charged(&cal, 8);
        // Target 4 on 8 cores: half the cores busy, slowdown 2; 20 ms of work.
        assert_eq!(charged.seq[0], 20.0);
        // Degree 2: s = 5/3 busy, plus 1 ticket of 0.5 ms over 12 ms at degree 2.
        assert!((charged.c(0)[1] - (5.0 / 3.0 + 0.5 / 12.0)).abs() < 1e-12);
        // Degree 3: s = 2.5, plus 2 tickets over 8 ms.
        assert!((charged.c(0)[2] - (2.5 + 2.0 * 0.5 * 2.5 / 20.0)).abs() < 1e-12);
        assert_eq!(charged.c(0)[0], 1.0);
        // Never more than d: a linear speedup keeps its d threads busy already.
        let linear = FmProblem::new(&profile(&[&[10.0, 5.0, 10.0 / 3.0]]), held.params.clone())
            .unwrap()
            .charged(&cal, 8);
        assert_eq!(linear.c(0), &[1.0, 2.0, 3.0]);
    }
}
