//! The FM latency and parallelism model: Eq. 1-5 of Haque et al., ASPLOS 2015, §4.1 (Fig. 6).

use std::cmp::Ordering;

/// Relative tolerance under which two predicted times count as equal. Floating-point sums
/// of the same quantities in different orders differ in their last bits; the paper's
/// exact ties (Fig. 7 compares tails with `=`) must survive that.
pub(crate) const TIME_TOLERANCE: f64 = 1e-9;

/// Relative slack on the target parallelism: ap_R(S, q) <= target_p * (1 + this) counts
/// as meeting it, so a schedule that meets the target exactly in real arithmetic is not
/// rejected for a rounding error.
pub const PARALLELISM_TOLERANCE: f64 = 1e-9;

/// Compares two times, treating those within [`TIME_TOLERANCE`] as equal.
pub(crate) fn cmp_time(a: f64, b: f64) -> Ordering {
    let scale = a.abs().max(b.abs()).max(1.0);
    if (a - b).abs() <= TIME_TOLERANCE * scale {
        Ordering::Equal
    } else if a < b {
        Ordering::Less
    } else {
        Ordering::Greater
    }
}

/// Whether a total parallelism meets the target (with [`PARALLELISM_TOLERANCE`]).
pub(crate) fn meets_target(parallelism: f64, target: f64) -> bool {
    parallelism <= target * (1.0 + PARALLELISM_TOLERANCE)
}

/// The rank k of the beta-tail: the ceil(beta * W)-th smallest of W weighted times
/// (Eq. 5). The product is nudged down by a relative 1e-12 before rounding up, so that
/// 0.99 * 100, which is 99.00000000000001 in floating point, gives 99 and not 100.
pub fn tail_rank(percentile: f64, total_weight: u64) -> u64 {
    let x = percentile * total_weight as f64;
    let k = (x - 1e-12 * x.max(1.0)).ceil();
    (k.max(1.0) as u64).min(total_weight.max(1))
}

/// Eq. 1 and the numerator of Eq. 2 for one request under schedule `v` (v0, v1, ...,
/// v_{n-1}) in ms: returns (time_r(S), the thread-time it uses). `s` holds s_r(1..=n)
/// and `c` the threads it keeps busy at each degree (d in the paper's Eq. 2; see
/// [`tailor_core::ThreadModel`]).
///
/// The request waits v0 with no thread, runs v1 at degree 1, v2 at degree 2, ..., and
/// finishes at degree n. During v_d at degree d it does s_r(d) * v_d of its work.
pub(crate) fn request_time(seq: f64, s: &[f64], c: &[f64], v: &[f64]) -> (f64, f64) {
    let n = s.len();
    let mut wall = v[0];
    let mut threads = 0.0;
    let mut done = 0.0;
    for d in 1..n {
        let cap = s[d - 1] * v[d];
        if seq - done <= cap {
            let t = (seq - done) / s[d - 1];
            return (wall + t, threads + c[d - 1] * t);
        }
        done += cap;
        wall += v[d];
        threads += c[d - 1] * v[d];
    }
    let t = (seq - done) / s[n - 1];
    (wall + t, threads + c[n - 1] * t)
}

/// Returns the largest time t such that the weight of times >= t is at least `need`
/// (need >= 1): the need-th largest time counting each by its weight. `unit` says all
/// weights are 1, which allows an O(len) selection. Reorders `items`.
pub(crate) fn upper_order_statistic(items: &mut [(f64, u32)], need: u64, unit: bool) -> f64 {
    debug_assert!(need >= 1);
    if unit {
        let k = (need as usize).min(items.len()) - 1;
        let (_, x, _) = items.select_nth_unstable_by(k, |a, b| b.0.total_cmp(&a.0));
        return x.0;
    }
    items.sort_unstable_by(|a, b| b.0.total_cmp(&a.0));
    let mut acc = 0u64;
    for &(t, w) in items.iter() {
        acc += u64::from(w);
        if acc >= need {
            return t;
        }
    }
    items.last().map_or(0.0, |x| x.0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn eq1_follows_the_papers_cases() {
        // Figure 5 of the paper: long 150 ms request, s(2) = 1.5, s(3) = 2.
        let s = [1.0, 1.5, 2.0];
        let request_time =
            |seq, s: &[f64], v: &[f64]| request_time(seq, s, &[1.0, 2.0, 3.0][..s.len()], v);
        // S = (0, 50, 0): 50 ms alone, then degree 3 for the remaining 100 ms of work.
        let (t, th) = request_time(150.0, &s, &[0.0, 50.0, 0.0]);
        assert_eq!(t, 100.0);
        assert_eq!(th, 50.0 + 3.0 * 50.0);
        // The short request finishes inside v1.
        assert_eq!(request_time(50.0, &s, &[0.0, 50.0, 0.0]), (50.0, 50.0));
        // A wait v0 adds latency but no thread-time.
        assert_eq!(request_time(50.0, &s, &[20.0, 50.0, 0.0]), (70.0, 50.0));
        // Degree 2 for 50 ms does 75 ms of work.
        let (t, th) = request_time(150.0, &s, &[0.0, 0.0, 50.0]);
        assert_eq!(t, 50.0 + 75.0 / 2.0);
        assert_eq!(th, 2.0 * 50.0 + 3.0 * 37.5);
        // A single degree.
        assert_eq!(request_time(8.0, &[1.0], &[2.0]), (10.0, 8.0));
    }

    #[test]
    fn busy_threads_charge_the_work_done() {
        // Threads that leave when out of units keep s(d) busy: the thread-time is the
        // work, whatever the schedule.
        let s = [1.0, 1.5, 2.0];
        let (t, th) = super::request_time(150.0, &s, &s, &[0.0, 50.0, 0.0]);
        assert_eq!(t, 100.0);
        assert_eq!(th, 150.0);
        let (t, th) = super::request_time(150.0, &s, &s, &[0.0, 0.0, 50.0]);
        assert_eq!(t, 87.5);
        assert_eq!(th, 150.0);
    }

    #[test]
    fn tail_rank_is_robust_to_rounding() {
        assert_eq!(tail_rank(0.99, 100), 99);
        assert_eq!(tail_rank(0.99, 10_000), 9_900);
        assert_eq!(tail_rank(0.99, 2), 2);
        assert_eq!(tail_rank(0.5, 3), 2);
        assert_eq!(tail_rank(1.0, 7), 7);
        assert_eq!(tail_rank(0.001, 7), 1);
    }

    #[test]
    fn order_statistics_count_weights() {
        let mut unit = vec![(3.0, 1), (1.0, 1), (2.0, 1), (5.0, 1)];
        assert_eq!(upper_order_statistic(&mut unit, 1, true), 5.0);
        assert_eq!(upper_order_statistic(&mut unit, 3, true), 2.0);
        let mut weighted = vec![(3.0, 2), (1.0, 5), (2.0, 1)];
        assert_eq!(upper_order_statistic(&mut weighted, 2, false), 3.0);
        assert_eq!(upper_order_statistic(&mut weighted, 3, false), 2.0);
        assert_eq!(upper_order_statistic(&mut weighted, 4, false), 1.0);
    }

    #[test]
    fn tolerant_comparisons() {
        assert_eq!(cmp_time(100.0, 100.0 + 1e-8), Ordering::Equal);
        assert_eq!(cmp_time(100.0, 100.001), Ordering::Less);
        assert!(meets_target(6.0 + 1e-12, 6.0));
        assert!(!meets_target(6.001, 6.0));
    }
}
