//! The fast exact search for the FM interval table, exploiting the structure of Eq. 1-5.
//!
//! Fig. 7 of Haque et al. (ASPLOS 2015) costs (y/step)^n x Q x |R|. This search returns
//! the same table (the tests check it against a plain nested loop) by using four facts:
//!
//! 1. **The wait v0 only shifts.** Every time_r grows by v0 (Eq. 1), so tail and mean
//!    grow by v0, while the thread-time in Eq. 2's numerator does not change. Eq. 3 thus
//!    reads ap_R = q * H / (T + |R| * v0), with H the total thread-time and T the total
//!    time at v0 = 0. For each rest-of-schedule S' = (v1, ..., v_{n-1}) and each load, the
//!    best v0 is the smallest grid value that meets the target, found in closed form. The
//!    load loop and the v0 loop collapse into O(Q) per S'.
//! 2. **The last interval is one-dimensional.** With the prefix (v1, ..., v_{n-2}) fixed,
//!    each request's time and thread-time are, as functions of v_{n-1}, linear up to the
//!    point where it finishes at degree n-1 and constant after (Eq. 1's cases). Bucketing
//!    requests by that point gives every sum T and H along v_{n-1} in O(|R| + y/step).
//! 3. **Only the top of the distribution sets the tail.** Along v_{n-1} each time_r moves
//!    monotonically between its values at the two ends of the grid. A request whose
//!    largest value lies below the (W-k+1)-th largest smallest value can never be the
//!    k-th smallest, so the tail along v_{n-1} is found among a few candidates per prefix.
//! 4. **Schedules past every request's end are duplicates.** If all requests finish
//!    before phase d, intervals from v_d on change nothing; only the lexicographically
//!    smallest such schedule (zeros there) is evaluated, which is the one Fig. 7's
//!    tie-break keeps.
//!
//! The cost is O(g^(n-2) x (|R| + g x (C + Q))) for g grid points and C candidates,
//! against O(g^n x |R|) for Fig. 7, and prefixes run in parallel. A floor on v1
//! ([`FmProblem::with_min_v1_ms`]) skips the prefixes below it, or for n = 2, where v1 is
//! the last interval, the offers below it; Fact 4 only zeroes intervals from v2 on, so
//! the floor keeps the same schedules in both searches.

use std::sync::atomic::{AtomicU64, Ordering};

use rayon::prelude::*;
use tailor_core::IntervalTable;

use super::model::{meets_target, upper_order_statistic};
use super::{
    build_table, merge_choices, offer, Candidate, Choices, FmProblem, PlanError, Progress,
};

/// Plans the FM interval table exactly; see the module docs for the method. `progress`,
/// if given, hears (prefixes done, prefixes in all).
pub fn plan_fm(
    problem: &FmProblem,
    progress: Option<Progress<'_>>,
) -> Result<IntervalTable, PlanError> {
    if problem.latency_bound_ms.is_some() {
        return Err(PlanError::BadParameter {
            name: "--latency-bound",
            reason: "Theorem 1's form needs the exhaustive search (--method exhaustive)".into(),
        });
    }
    let n = problem.n();
    let g = problem.grid_len;
    let max_load = problem.params.max_load;
    if n == 1 {
        let mut scratch = Scratch::new(problem);
        scratch.single_degree();
        return build_table(problem, &scratch.choices);
    }
    let prefixes = (g as u64).pow(n as u32 - 2);
    let done = AtomicU64::new(0);
    let choices = (0..prefixes)
        .into_par_iter()
        .fold(
            || Scratch::new(problem),
            |mut scratch, index| {
                scratch.prefix(index);
                if let Some(report) = progress {
                    report(done.fetch_add(1, Ordering::Relaxed) + 1, prefixes);
                }
                scratch
            },
        )
        .map(|s| s.choices)
        .reduce(|| vec![None; max_load], merge_choices);
    build_table(problem, &choices)
}

/// One worker's buffers and its best choice per load.
struct Scratch<'p> {
    p: &'p FmProblem,
    choices: Choices,
    unit: bool,
    need: u64,
    /// Grid indices (v0, v1, ..., v_{n-1}) of the schedule being offered.
    key: Vec<u32>,
    /// Per request after the prefix: work done, wall time, thread-time.
    done: Vec<f64>,
    wall: Vec<f64>,
    threads: Vec<f64>,
    /// Per request: its final time if it finished within the prefix, else NaN.
    finished: Vec<f64>,
    /// Scratch for order statistics.
    items: Vec<(f64, u32)>,
    /// Per request: its largest time along v_{n-1}.
    high: Vec<f64>,
    candidates: Vec<usize>,
    /// Per grid index j of v_{n-1}: the requests that finish at degree n-1 from j on
    /// (index g: never within the grid): their constant and linear parts.
    bucket: Vec<Bucket>,
    /// Per grid index j: the linear parts of the requests still linear at j.
    suffix: Vec<Bucket>,
}

/// How much larger than a sum the sum of its terms' magnitudes may be before the sum is
/// recomputed request by request. Summation error is below about len * 1.1e-16 times the
/// magnitudes, so with 10^4 requests this keeps it near 1e-10 of the sum, under the 1e-9
/// comparison tolerance. Ordinary speedups give ratios near 1.
const ILL_CONDITIONED: f64 = 100.0;

/// The most prefix intervals v1..v_{n-2} (so degrees up to 17) the search handles.
pub(crate) const MAX_PREFIX: usize = 16;

/// Sums of time (t) and thread-time (h) over a group of requests: constant parts, the
/// intercept (a) and slope (b) of parts linear in v_{n-1}, and the magnitudes of a and b.
#[derive(Debug, Clone, Copy, Default)]
struct Bucket {
    const_t: f64,
    const_h: f64,
    a_t: f64,
    b_t: f64,
    a_h: f64,
    b_h: f64,
    abs_a_t: f64,
    abs_b_t: f64,
    abs_a_h: f64,
    abs_b_h: f64,
}

impl Bucket {
    fn add_linear(&mut self, a_t: f64, b_t: f64, a_h: f64, b_h: f64) {
        self.a_t += a_t;
        self.b_t += b_t;
        self.a_h += a_h;
        self.b_h += b_h;
        self.abs_a_t += a_t.abs();
        self.abs_b_t += b_t.abs();
        self.abs_a_h += a_h.abs();
        self.abs_b_h += b_h.abs();
    }

    /// Adds another group's linear parts (not its constants).
    fn add(&mut self, o: &Bucket) {
        self.a_t += o.a_t;
        self.b_t += o.b_t;
        self.a_h += o.a_h;
        self.b_h += o.b_h;
        self.abs_a_t += o.abs_a_t;
        self.abs_b_t += o.abs_b_t;
        self.abs_a_h += o.abs_a_h;
        self.abs_b_h += o.abs_b_h;
    }
}

impl<'p> Scratch<'p> {
    fn new(p: &'p FmProblem) -> Self {
        let len = p.len();
        Scratch {
            p,
            choices: vec![None; p.params.max_load],
            unit: p.all_unit(),
            need: p.tail_need(),
            key: vec![0; p.n()],
            done: vec![0.0; len],
            wall: vec![0.0; len],
            threads: vec![0.0; len],
            finished: vec![f64::NAN; len],
            items: Vec::with_capacity(len),
            high: Vec::with_capacity(len),
            candidates: Vec::with_capacity(len),
            bucket: vec![Bucket::default(); p.grid_len + 1],
            suffix: vec![Bucket::default(); p.grid_len],
        }
    }

    /// Degree 1 only: S = (v0); every request takes seq_r and uses seq_r thread-time.
    fn single_degree(&mut self) {
        let p = self.p;
        self.items.clear();
        let mut sum = 0.0;
        for r in 0..p.len() {
            sum += f64::from(p.weight[r]) * p.seq[r];
            self.items.push((p.seq[r], p.weight[r]));
        }
        let tail = upper_order_statistic(&mut self.items, self.need, self.unit);
        self.offer_all_loads(tail, sum, sum);
    }

    /// Evaluates every last interval v_{n-1} under the prefix with flat index `index`.
    fn prefix(&mut self, index: u64) {
        let p = self.p;
        let n = p.n();
        let g = p.grid_len;
        let m = n - 2; // prefix intervals v1..v_{n-2}
        let mut rest = index;
        for d in (1..=m).rev() {
            self.key[d] = (rest % g as u64) as u32;
            rest /= g as u64;
        }
        // A prefix whose v1 is below the floor offers nothing (offer_all_loads checks too,
        // for n = 2, where v1 is the last interval).
        if m >= 1 && !p.allows(&self.key) {
            return;
        }

        // Walk each request through the prefix phases (Eq. 1's first cases).
        let mut v = [0.0; MAX_PREFIX];
        for (slot, key) in v.iter_mut().zip(&self.key).take(m + 1).skip(1) {
            *slot = p.grid(*key as usize);
        }
        let mut last_phase = 0usize;
        let (mut base_t, mut base_h) = (0.0, 0.0);
        for r in 0..p.len() {
            let (seq, s, c) = (p.seq[r], p.s(r), p.c(r));
            let (mut done, mut wall, mut threads) = (0.0, 0.0, 0.0);
            let mut phase = n - 1;
            self.finished[r] = f64::NAN;
            for (d, &v) in v.iter().enumerate().take(m + 1).skip(1) {
                let cap = s[d - 1] * v;
                if seq - done <= cap {
                    let t = (seq - done) / s[d - 1];
                    self.finished[r] = wall + t;
                    let w = f64::from(p.weight[r]);
                    base_t += w * (wall + t);
                    base_h += w * (threads + c[d - 1] * t);
                    phase = d;
                    break;
                }
                done += cap;
                wall += v;
                threads += c[d - 1] * v;
            }
            last_phase = last_phase.max(phase);
            (self.done[r], self.wall[r], self.threads[r]) = (done, wall, threads);
        }
        // Fact 4: intervals after every request's last phase are duplicates of zeros.
        if (last_phase + 1..=m).any(|d| self.key[d] != 0) {
            return;
        }
        if last_phase <= m {
            self.key[n - 1] = 0;
            self.items.clear();
            self.items
                .extend((0..p.len()).map(|r| (self.finished[r], p.weight[r])));
            let tail = upper_order_statistic(&mut self.items, self.need, self.unit);
            self.offer_all_loads(tail, base_t, base_h);
            return;
        }
        self.last_interval(base_t, base_h);
    }

    /// Time and thread-time of an unfinished request r when the last interval is `v`
    /// (Eq. 1's last cases, in the same operations as `model::request_time`), given the
    /// work done, wall time and thread-time it had after the prefix.
    #[inline]
    fn at(p: &FmProblem, r: usize, after: (f64, f64, f64), v: f64) -> (f64, f64) {
        let (done, wall, threads) = after;
        let n = p.n();
        let (s, c) = (p.s(r), p.c(r));
        let seq = p.seq[r];
        let cap = s[n - 2] * v;
        if seq - done <= cap {
            let t = (seq - done) / s[n - 2];
            (wall + t, threads + c[n - 2] * t)
        } else {
            let t = (seq - (done + cap)) / s[n - 1];
            ((wall + v) + t, (threads + c[n - 2] * v) + c[n - 1] * t)
        }
    }

    fn after_prefix(&self, r: usize) -> (f64, f64, f64) {
        (self.done[r], self.wall[r], self.threads[r])
    }

    /// Sweeps v_{n-1} over the grid for the current prefix (facts 2 and 3).
    fn last_interval(&mut self, base_t: f64, base_h: f64) {
        let p = self.p;
        let n = p.n();
        let g = p.grid_len;
        let y = p.grid(g - 1);
        self.bucket.iter_mut().for_each(|b| *b = Bucket::default());
        self.items.clear();
        self.high.clear();
        for r in 0..p.len() {
            let w = p.weight[r];
            if !self.finished[r].is_nan() {
                self.items.push((self.finished[r], w));
                self.high.push(self.finished[r]);
                continue;
            }
            let (s, c) = (p.s(r), p.c(r));
            let (sl, sn) = (s[n - 2], s[n - 1]);
            let (cl, cn) = (c[n - 2], c[n - 1]);
            let rem = p.seq[r] - self.done[r];
            // The first grid index at which the request finishes at degree n-1.
            let mut jr = ((rem / (sl * p.params.step_ms)).ceil().max(0.0) as usize).min(g);
            while jr > 0 && rem <= sl * p.grid(jr - 1) {
                jr -= 1;
            }
            while jr < g && rem > sl * p.grid(jr) {
                jr += 1;
            }
            let wf = f64::from(w);
            let at = &mut self.bucket[jr];
            at.add_linear(
                wf * (self.wall[r] + rem / sn),
                wf * (1.0 - sl / sn),
                wf * (self.threads[r] + cn * rem / sn),
                wf * (cl - cn * sl / sn),
            );
            at.const_t += wf * (self.wall[r] + rem / sl);
            at.const_h += wf * (self.threads[r] + cl * rem / sl);
            let after = self.after_prefix(r);
            let (t0, ty) = (Self::at(p, r, after, 0.0).0, Self::at(p, r, after, y).0);
            self.items.push((t0.min(ty), w));
            self.high.push(t0.max(ty));
        }
        // Fact 2 without cancellation: the requests still linear at index j are those
        // with jr > j, summed from the top down (suffix sums), and the constant parts
        // are summed from the bottom up; nothing is ever subtracted.
        let mut linear = Bucket::default();
        for j in (0..g).rev() {
            linear.add(&self.bucket[j + 1]);
            self.suffix[j] = linear;
        }
        // Fact 3: the need-th largest low end bounds the tail from below at every v_{n-1}.
        let floor = upper_order_statistic(&mut self.items, self.need, self.unit);
        let margin = 1e-9 * floor.abs().max(1.0);
        self.candidates.clear();
        self.candidates
            .extend((0..p.len()).filter(|r| self.high[*r] >= floor - margin));

        let total_w = p.total_weight as f64;
        let credit = p.params.wait_model.credit();
        let target = p.params.target_parallelism;
        let (mut const_t, mut const_h) = (base_t, base_h);
        for j in 0..g {
            const_t += self.bucket[j].const_t;
            const_h += self.bucket[j].const_h;
            let v = p.grid(j);
            let lin = self.suffix[j];
            let (mut sum_t, mut sum_h) = (
                const_t + lin.a_t + lin.b_t * v,
                const_h + lin.a_h + lin.b_h * v,
            );
            // When the linear terms are far larger than their sum (a speedup that
            // collapses at degree n), rounding could exceed the comparison tolerances:
            // sum this index directly instead.
            let scale_t = const_t + lin.abs_a_t + lin.abs_b_t * v;
            let scale_h = const_h + lin.abs_a_h + lin.abs_b_h * v;
            if !(scale_t <= ILL_CONDITIONED * sum_t.abs()
                && scale_h <= ILL_CONDITIONED * sum_h.abs())
            {
                (sum_t, sum_h) = self.direct_sums(base_t, base_h, v);
            }
            // Skip the tail when even load 1 cannot meet the target with the longest wait.
            if !meets_target(sum_h / (sum_t + credit * total_w * y), target) {
                continue;
            }
            self.items.clear();
            for &r in &self.candidates {
                let t = if self.finished[r].is_nan() {
                    Self::at(p, r, self.after_prefix(r), v).0
                } else {
                    self.finished[r]
                };
                self.items.push((t, p.weight[r]));
            }
            let tail = upper_order_statistic(&mut self.items, self.need, self.unit);
            self.key[n - 1] = j as u32;
            self.offer_all_loads(tail, sum_t, sum_h);
        }
    }

    /// The total time and thread-time at last interval `v`, request by request.
    fn direct_sums(&self, base_t: f64, base_h: f64, v: f64) -> (f64, f64) {
        let p = self.p;
        let (mut sum_t, mut sum_h) = (base_t, base_h);
        for r in (0..p.len()).filter(|r| self.finished[*r].is_nan()) {
            let (t, h) = Self::at(p, r, self.after_prefix(r), v);
            let w = f64::from(p.weight[r]);
            sum_t += w * t;
            sum_h += w * h;
        }
        (sum_t, sum_h)
    }

    /// Fact 1: for each load, offers S' with the smallest wait v0 that meets the target.
    /// `tail` and `sum_t` are for v0 = 0; `sum_h` does not depend on v0.
    fn offer_all_loads(&mut self, tail: f64, sum_t: f64, sum_h: f64) {
        let p = self.p;
        if !p.allows(&self.key) {
            return;
        }
        let g = p.grid_len;
        let step = p.params.step_ms;
        let total_w = p.total_weight as f64;
        let target = p.params.target_parallelism;
        // Under WaitModel::Running a wait earns no credit: feasibility does not depend
        // on v0 and the smallest wait, 0, is the best.
        let credit = p.params.wait_model.credit() * total_w;
        let feasible = |q: usize, j0: usize| {
            meets_target(q as f64 * sum_h / (sum_t + credit * p.grid(j0)), target)
        };
        let mut j0 = 0usize;
        for q in 1..=p.params.max_load {
            // ap = q H / (T + W v0) <= target  <=>  v0 >= (q H / target - T) / W (with
            // no credit the estimate is infinite or NaN and the loops below decide).
            let estimate = ((q as f64 * sum_h / target - sum_t) / credit / step).ceil();
            if estimate.is_finite() && estimate > j0 as f64 {
                j0 = (estimate as usize).min(g);
            }
            while j0 > 0 && feasible(q, j0 - 1) {
                j0 -= 1;
            }
            while j0 < g && !feasible(q, j0) {
                j0 += 1;
            }
            if j0 >= g {
                break; // infeasible here, so at every higher load too
            }
            self.key[0] = j0 as u32;
            let shift = p.grid(j0);
            // The fast search orders by tail alone; plan_fm refuses a latency bound.
            let c = Candidate {
                tail: tail + shift,
                mean: sum_t / total_w + shift,
                resource: 0.0,
            };
            offer(&mut self.choices, q - 1, c, &self.key, None);
        }
    }
}
