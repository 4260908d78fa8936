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
//! against O(g^n x |R|) for Fig. 7, and prefixes run in parallel.

use std::sync::atomic::{AtomicU64, Ordering};

use rayon::prelude::*;
use tailor_core::IntervalTable;

use super::model::{meets_target, upper_order_statistic};
use super::{build_table, merge_choices, offer, Choices, FmProblem, PlanError, Progress};

/// Plans the FM interval table exactly; see the module docs for the method. `progress`,
/// if given, hears (prefixes done, prefixes in all).
pub fn plan_fm(
    problem: &FmProblem,
    progress: Option<Progress<'_>>,
) -> Result<IntervalTable, PlanError> {
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
    /// Per grid index j of v_{n-1}: changes to the running sums when requests stop
    /// being linear in v_{n-1} (they finish at degree n-1 from j on).
    bucket: Vec<Bucket>,
}

/// Running sums of time (t) and thread-time (h): constant parts, and the intercept (a)
/// and slope (b) of the parts still linear in v_{n-1}.
#[derive(Debug, Clone, Copy, Default)]
struct Bucket {
    const_t: f64,
    const_h: f64,
    a_t: f64,
    b_t: f64,
    a_h: f64,
    b_h: f64,
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

        // Walk each request through the prefix phases (Eq. 1's first cases).
        let mut last_phase = 0usize;
        let (mut base_t, mut base_h) = (0.0, 0.0);
        for r in 0..p.len() {
            let (seq, s) = (p.seq[r], p.s(r));
            let (mut done, mut wall, mut threads) = (0.0, 0.0, 0.0);
            let mut phase = n - 1;
            self.finished[r] = f64::NAN;
            for d in 1..=m {
                let v = p.grid(self.key[d] as usize);
                let cap = s[d - 1] * v;
                if seq - done <= cap {
                    let t = (seq - done) / s[d - 1];
                    self.finished[r] = wall + t;
                    let w = f64::from(p.weight[r]);
                    base_t += w * (wall + t);
                    base_h += w * (threads + d as f64 * t);
                    phase = d;
                    break;
                }
                done += cap;
                wall += v;
                threads += d as f64 * v;
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

    /// Time of an unfinished request r when the last interval is `v` (Eq. 1's last cases),
    /// given the work done and wall time it had after the prefix.
    #[inline]
    fn time_at(p: &FmProblem, r: usize, done: f64, wall: f64, v: f64) -> f64 {
        let n = p.n();
        let s = p.s(r);
        let seq = p.seq[r];
        let cap = s[n - 2] * v;
        if seq - done <= cap {
            wall + (seq - done) / s[n - 2]
        } else {
            (wall + v) + (seq - (done + cap)) / s[n - 1]
        }
    }

    /// Sweeps v_{n-1} over the grid for the current prefix (facts 2 and 3).
    fn last_interval(&mut self, base_t: f64, base_h: f64) {
        let p = self.p;
        let n = p.n();
        let g = p.grid_len;
        let dl = (n - 1) as f64;
        let y = p.grid(g - 1);
        self.bucket.iter_mut().for_each(|b| *b = Bucket::default());
        let mut run = Bucket {
            const_t: base_t,
            const_h: base_h,
            ..Bucket::default()
        };
        self.items.clear();
        self.high.clear();
        for r in 0..p.len() {
            let w = p.weight[r];
            if !self.finished[r].is_nan() {
                self.items.push((self.finished[r], w));
                self.high.push(self.finished[r]);
                continue;
            }
            let s = p.s(r);
            let (sl, sn) = (s[n - 2], s[n - 1]);
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
            let lin = Bucket {
                const_t: 0.0,
                const_h: 0.0,
                a_t: wf * (self.wall[r] + rem / sn),
                b_t: wf * (1.0 - sl / sn),
                a_h: wf * (self.threads[r] + n as f64 * rem / sn),
                b_h: wf * (dl - n as f64 * sl / sn),
            };
            run.a_t += lin.a_t;
            run.b_t += lin.b_t;
            run.a_h += lin.a_h;
            run.b_h += lin.b_h;
            let at = &mut self.bucket[jr];
            at.a_t += lin.a_t;
            at.b_t += lin.b_t;
            at.a_h += lin.a_h;
            at.b_h += lin.b_h;
            at.const_t += wf * (self.wall[r] + rem / sl);
            at.const_h += wf * (self.threads[r] + dl * rem / sl);
            let (done, wall) = (self.done[r], self.wall[r]);
            let (t0, ty) = (
                Self::time_at(p, r, done, wall, 0.0),
                Self::time_at(p, r, done, wall, y),
            );
            self.items.push((t0.min(ty), w));
            self.high.push(t0.max(ty));
        }
        // Fact 3: the need-th largest low end bounds the tail from below at every v_{n-1}.
        let floor = upper_order_statistic(&mut self.items, self.need, self.unit);
        let margin = 1e-9 * floor.abs().max(1.0);
        self.candidates.clear();
        self.candidates
            .extend((0..p.len()).filter(|r| self.high[*r] >= floor - margin));

        let total_w = p.total_weight as f64;
        let target = p.params.target_parallelism;
        for j in 0..g {
            let b = self.bucket[j];
            run.const_t += b.const_t;
            run.const_h += b.const_h;
            run.a_t -= b.a_t;
            run.b_t -= b.b_t;
            run.a_h -= b.a_h;
            run.b_h -= b.b_h;
            let v = p.grid(j);
            let sum_t = run.const_t + run.a_t + run.b_t * v;
            let sum_h = run.const_h + run.a_h + run.b_h * v;
            // Skip the tail when even load 1 cannot meet the target with the longest wait.
            if !meets_target(sum_h / (sum_t + total_w * y), target) {
                continue;
            }
            self.items.clear();
            for &r in &self.candidates {
                let t = if self.finished[r].is_nan() {
                    Self::time_at(p, r, self.done[r], self.wall[r], v)
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

    /// Fact 1: for each load, offers S' with the smallest wait v0 that meets the target.
    /// `tail` and `sum_t` are for v0 = 0; `sum_h` does not depend on v0.
    fn offer_all_loads(&mut self, tail: f64, sum_t: f64, sum_h: f64) {
        let p = self.p;
        let g = p.grid_len;
        let step = p.params.step_ms;
        let total_w = p.total_weight as f64;
        let target = p.params.target_parallelism;
        let feasible = |q: usize, j0: usize| {
            meets_target(q as f64 * sum_h / (sum_t + total_w * p.grid(j0)), target)
        };
        let mut j0 = 0usize;
        for q in 1..=p.params.max_load {
            // ap = q H / (T + W v0) <= target  <=>  v0 >= (q H / target - T) / W.
            let estimate = ((q as f64 * sum_h / target - sum_t) / total_w / step).ceil();
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
            offer(
                &mut self.choices,
                q - 1,
                tail + shift,
                sum_t / total_w + shift,
                &self.key,
            );
        }
    }
}
