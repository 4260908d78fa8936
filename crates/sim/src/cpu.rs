//! The CPU model: threads share cores by weight, like Linux's fair scheduler.
//!
//! Linux's CFS gives each runnable thread CPU time in proportion to its weight, which
//! comes from its nice value (`sched_prio_to_weight` in kernel/sched/core.c: nice 0 is
//! 1024 and each step is about 1.25x). On m cores no thread can use more than one core,
//! so the shares are found by water-filling: with T <= m threads each gets a whole core;
//! otherwise each thread i gets min(1, c * w_i) with c chosen so the shares sum to m.
//! This is weighted processor sharing, the fluid limit of CFS (the idealisation CFS
//! itself is designed after, see Documentation/scheduler/sched-design-CFS.rst).
//!
//! tailor has two weight classes: ordinary threads (nice 0) and boosted ones (FM's
//! selective priority boosting).

/// CFS weights for nice -20 ..= 19 (`sched_prio_to_weight`, Linux kernel).
const NICE_WEIGHTS: [f64; 40] = [
    88761.0, 71755.0, 56483.0, 46273.0, 36291.0, 29154.0, 23254.0, 18705.0, 14949.0, 11916.0,
    9548.0, 7620.0, 6100.0, 4904.0, 3906.0, 3121.0, 2501.0, 1991.0, 1586.0, 1277.0, 1024.0, 820.0,
    655.0, 526.0, 423.0, 335.0, 272.0, 215.0, 172.0, 137.0, 110.0, 87.0, 70.0, 56.0, 45.0, 36.0,
    29.0, 23.0, 18.0, 15.0,
];

/// The CFS weight of a nice value, clamped to -20 ..= 19.
pub(crate) fn nice_weight(nice: i32) -> f64 {
    NICE_WEIGHTS[(nice.clamp(-20, 19) + 20) as usize]
}

/// The share of a core each thread gets, (ordinary, boosted), when `normal` ordinary
/// threads of weight `w_normal` and `boosted` threads of weight `w_boosted` share `cores`
/// identical cores. A class with no threads gets share 0. Thread counts may be
/// fractional: the average number of busy threads of requests whose threads leave when
/// out of units (`tailor_core::ThreadModel::Busy`).
pub(crate) fn shares(
    cores: f64,
    normal: f64,
    boosted: f64,
    w_normal: f64,
    w_boosted: f64,
) -> (f64, f64) {
    let (n, b) = (normal, boosted);
    let some = |count: f64, share: f64| if count > 0.0 { share } else { 0.0 };
    if n + b <= cores {
        return (some(normal, 1.0), some(boosted, 1.0));
    }
    // Water-filling over the two classes: fill the heavier first up to one core each.
    let (heavy_w, light_w, heavy, light) = if w_boosted >= w_normal {
        (w_boosted, w_normal, b, n)
    } else {
        (w_normal, w_boosted, n, b)
    };
    let c = cores / (heavy * heavy_w + light * light_w);
    let (heavy_share, light_share) = if heavy > 0.0 && c * heavy_w > 1.0 {
        (1.0, (cores - heavy) / light)
    } else {
        (c * heavy_w, c * light_w)
    };
    if w_boosted >= w_normal {
        (some(normal, light_share), some(boosted, heavy_share))
    } else {
        (some(normal, heavy_share), some(boosted, light_share))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn weights_match_the_kernel_table() {
        assert_eq!(nice_weight(0), 1024.0);
        assert_eq!(nice_weight(-20), 88761.0);
        assert_eq!(nice_weight(19), 15.0);
        assert_eq!(nice_weight(-99), 88761.0);
        // About 1.25x per step.
        for nice in -20..19 {
            let ratio = nice_weight(nice) / nice_weight(nice + 1);
            assert!((1.15..1.35).contains(&ratio), "nice {nice}: {ratio}");
        }
    }

    #[test]
    fn undersubscribed_threads_get_whole_cores() {
        assert_eq!(shares(4.0, 3.0, 0.0, 1024.0, 1024.0), (1.0, 0.0));
        assert_eq!(shares(4.0, 2.0, 2.0, 1024.0, 9548.0), (1.0, 1.0));
    }

    #[test]
    fn equal_weights_share_equally() {
        let (x, _) = shares(4.0, 8.0, 0.0, 1024.0, 1024.0);
        assert_eq!(x, 0.5);
    }

    #[test]
    fn boosted_threads_are_capped_at_a_core_and_the_rest_share() {
        // 3 boosted threads at high weight on 4 cores with 10 ordinary threads: the
        // boosted ones get a whole core each, the 10 others share the last core.
        let (n, b) = shares(4.0, 10.0, 3.0, 1024.0, 88761.0);
        assert_eq!(b, 1.0);
        assert!((n - 0.1).abs() < 1e-12);
        // Mild boosting: shares in proportion to weight, summing to the cores.
        let (n, b) = shares(4.0, 10.0, 3.0, 1024.0, 1277.0);
        assert!((10.0 * n + 3.0 * b - 4.0).abs() < 1e-12);
        assert!((b / n - 1277.0 / 1024.0).abs() < 1e-12);
    }
}
