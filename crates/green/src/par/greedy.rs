//! GreenPar's two greedy policies, Reactive (Fig. B.2) and Nebulous (§B.3.2): each job's SLA-bound minimum allocation, then predicted green power handed out a step at a time.
//!
//! **Reactive** (Fig. B.2) keeps no plan and knows no runtimes. At every decision point
//! it computes each job's minimum allocation n_j, the fewest servers that keep
//! AverageSpeedup_j ≥ SP_j(N)/F if the job runs on them for one more period t (lines
//! 14-19; the figure's `as_j ≥ F·S_j(N_j)` is a typo for the text's SP_j(N)/F). It then
//! predicts the epoch's green energy, the G servers it can power (line 5), and while
//! G > Σ n_j grows the job whose next allowed step (the next power of two) buys the most
//! runtime reduction per added server (lines 7-13). Reactive always starts 2N VMs.
//! Departures: t is one hour, while allocations are revisited every epoch; a step is
//! taken only if it fits wholly under G (the
//! figure may overshoot G by part of a step); "the decrease in efficiency" is read as the
//! text's relative runtime reduction per added server, 1 − SP(n)/SP(n'), over n' − n.
//!
//! **Nebulous** has no speedup profile, only the user's hint (excellent, good, fair,
//! poor) and the average runtime of the application's previous runs. Its SLA is on
//! allocation: a job's time-averaged servers stay at least N/F. A job starts with 4N VMs
//! if the prediction shows enough green power beyond the running jobs' requested servers
//! to run 4N VMs (2N servers) for its whole estimated runtime, and its hint is better
//! than poor; with no previous run of its application, 2N. Green power beyond the
//! minimums goes one step at a time, round robin, to the jobs with the best hints and
//! then the smallest average allocation relative to N; poor jobs get none.

use crate::input::EPOCH_H;

use super::policy::{epoch_of, requested, Allocator, JobInfo, Running, View};
use super::power::servers_powered;
use super::speedup::{allowed_servers, Hint};

/// Reactive's and Nebulous's look-ahead t (Fig. B.2, line 16): one hour, the shortest
/// interval between migrations in §B.4's experiments (our choice of value; with one
/// epoch the jobs spent their slack as soon as they had it, shrinking at every chance).
const PERIOD_H: f64 = 4.0 * EPOCH_H;

/// The fewest allowed servers that keep a job's AverageSpeedup at least SP(N)/F after
/// it runs on them for one more period (Fig. B.2, lines 14-19); the most allowed
/// servers if none do.
pub(crate) fn reactive_minimum(r: &Running, info: &JobInfo, now_h: f64, slowdown: f64) -> u32 {
    let age = r.age(now_h);
    // Speeds are relative to the requested allocation, so SP_j(N) is 1.
    let target = 1.0 / slowdown;
    let options = allowed_servers(r.vms);
    options
        .iter()
        .copied()
        .find(|&n| {
            let s = info.profile.speed(info.requested, r.vms, n);
            (r.speed_h + s * PERIOD_H) / (age + PERIOD_H) >= target * (1.0 - 1e-12)
        })
        .unwrap_or(*options.last().expect("a job has an allocation"))
}

/// The fewest allowed servers that keep a job's time-averaged allocation at least N/F
/// after one more period (Nebulous's SLA); the most allowed if none do.
pub(crate) fn nebulous_minimum(r: &Running, info: &JobInfo, now_h: f64, slowdown: f64) -> u32 {
    let age = r.age(now_h);
    let target = info.requested as f64 / slowdown;
    let options = allowed_servers(r.vms);
    options
        .iter()
        .copied()
        .find(|&n| (r.servers_h + n as f64 * PERIOD_H) / (age + PERIOD_H) >= target * (1.0 - 1e-12))
        .unwrap_or(*options.last().expect("a job has an allocation"))
}

/// The next allowed allocation above `n`, if any.
fn next_up(vms: u32, n: u32) -> Option<u32> {
    allowed_servers(vms).into_iter().find(|&m| m > n)
}

/// The servers the current epoch's predicted green power can keep busy.
fn green_servers(view: &View<'_>) -> u32 {
    let kw = view.predicted_kw(view.epoch).unwrap_or(0.0);
    servers_powered(view.cfg, view.capacity, kw)
}

/// §B.3.2's Reactive (Fig. B.2).
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct Reactive;

impl Allocator for Reactive {
    fn allocate(&mut self, view: &View<'_>) -> Vec<u32> {
        let slowdown = view.cfg.slowdown;
        let mut alloc: Vec<u32> = view
            .running
            .iter()
            .map(|r| reactive_minimum(r, &view.jobs[r.job], view.now_h, slowdown))
            .collect();
        let mut used: u32 = alloc.iter().sum();
        if used > view.capacity {
            return requested(view);
        }
        let limit = green_servers(view).min(view.capacity);
        loop {
            // The step with the largest relative runtime reduction per added server.
            let mut best: Option<(f64, usize, u32)> = None;
            for (i, r) in view.running.iter().enumerate() {
                let Some(up) = next_up(r.vms, alloc[i]) else {
                    continue;
                };
                if used + (up - alloc[i]) > limit {
                    continue;
                }
                let info = &view.jobs[r.job];
                let now = info.profile.speed(info.requested, r.vms, alloc[i]);
                let then = info.profile.speed(info.requested, r.vms, up);
                let gain = (1.0 - now / then) / (up - alloc[i]) as f64;
                if gain > 1e-12 && best.is_none_or(|(g, _, _)| gain > g) {
                    best = Some((gain, i, up));
                }
            }
            let Some((_, i, up)) = best else { break };
            used += up - alloc[i];
            alloc[i] = up;
        }
        alloc
    }
}

/// §B.3.2's Nebulous.
#[derive(Debug, Clone)]
pub(crate) struct Nebulous {
    /// What Nebulous learns of each job's runtime once it has run: its runtime on the
    /// requested allocation, with the configured estimate error.
    history_h: Vec<f64>,
}

impl Nebulous {
    /// Nebulous learning `history_h[j]` once job j has finished.
    pub(crate) fn new(history_h: Vec<f64>) -> Nebulous {
        Nebulous { history_h }
    }

    /// The average runtime of the finished runs of `job`'s application, if any.
    fn estimate(&self, view: &View<'_>, job: usize) -> Option<f64> {
        let app = view.jobs[job].profile.name;
        let runs: Vec<f64> = view
            .finished
            .iter()
            .filter(|&&f| view.jobs[f].profile.name == app)
            .map(|&f| self.history_h[f])
            .collect();
        (!runs.is_empty()).then(|| runs.iter().sum::<f64>() / runs.len() as f64)
    }
}

impl Allocator for Nebulous {
    fn vms(&mut self, view: &View<'_>, job: usize) -> u32 {
        let info = &view.jobs[job];
        let small = 2 * info.requested;
        if info.profile.hint() == Hint::Poor {
            return small;
        }
        let Some(estimate_h) = self.estimate(view, job) else {
            return small;
        };
        let committed: u32 = view
            .running
            .iter()
            .map(|r| view.jobs[r.job].requested)
            .sum();
        let need = committed + 2 * info.requested;
        let last = epoch_of(view.now_h + estimate_h - 1e-6).max(view.epoch);
        for e in view.epoch..=last {
            match view.predicted_kw(e) {
                Some(kw) if servers_powered(view.cfg, view.capacity, kw) >= need => {}
                _ => return small,
            }
        }
        4 * info.requested
    }

    fn allocate(&mut self, view: &View<'_>) -> Vec<u32> {
        let slowdown = view.cfg.slowdown;
        let mut alloc: Vec<u32> = view
            .running
            .iter()
            .map(|r| nebulous_minimum(r, &view.jobs[r.job], view.now_h, slowdown))
            .collect();
        let mut used: u32 = alloc.iter().sum();
        if used > view.capacity {
            return requested(view);
        }
        let limit = green_servers(view).min(view.capacity);
        // Best hint first, then the smallest average allocation against N.
        let mut order: Vec<usize> = (0..view.running.len())
            .filter(|&i| view.jobs[view.running[i].job].profile.hint() > Hint::Poor)
            .collect();
        let share = |i: usize| {
            let r = &view.running[i];
            let age = r.age(view.now_h);
            let mean = if age > 0.0 {
                r.servers_h / age
            } else {
                r.servers as f64
            };
            mean / view.jobs[r.job].requested as f64
        };
        order.sort_by(|&a, &b| {
            let ha = view.jobs[view.running[a].job].profile.hint();
            let hb = view.jobs[view.running[b].job].profile.hint();
            hb.cmp(&ha)
                .then(share(a).total_cmp(&share(b)))
                .then(a.cmp(&b))
        });
        loop {
            let mut grew = false;
            for &i in &order {
                let Some(up) = next_up(view.running[i].vms, alloc[i]) else {
                    continue;
                };
                if used + (up - alloc[i]) <= limit {
                    used += up - alloc[i];
                    alloc[i] = up;
                    grew = true;
                }
            }
            if !grew {
                break;
            }
        }
        alloc
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::par::speedup::AppProfile;

    fn job(app: &str, n: u32) -> JobInfo {
        JobInfo {
            arrival_h: 0.0,
            requested: n,
            profile: AppProfile::of(app).unwrap(),
        }
    }

    fn running(vms: u32, servers: u32, age_h: f64, speed_h: f64) -> Running {
        Running {
            job: 0,
            vms,
            servers,
            fresh: false,
            start_h: 0.0,
            done_h: speed_h,
            speed_h,
            servers_h: servers as f64 * age_h,
        }
    }

    /// Fig. B.2's minimum by hand, with t = 1 h: FT asks for 4 servers (8 VMs); on 2
    /// servers it runs at 0.62 of its requested speed, on 8 at 1.30.
    #[test]
    fn reactive_minimum_keeps_average_speedup_above_sp_n_over_f() {
        let ft = job("ft", 4);
        // A new job: only SP(n) ≥ SP(N)/F = 0.909 qualifies, so N itself.
        assert_eq!(reactive_minimum(&running(8, 4, 0.0, 0.0), &ft, 0.0, 1.1), 4);
        // After 1 h on 8 servers (1.3 h of requested work), 2 servers for another hour
        // average (1.3 + 0.62)/2 = 0.96 ≥ 0.909.
        assert_eq!(reactive_minimum(&running(8, 8, 1.0, 1.3), &ft, 1.0, 1.1), 2);
        // After 4 h on 4 servers: (4 + 0.62)/5 = 0.924 ≥ 0.909: 2 servers.
        assert_eq!(reactive_minimum(&running(8, 4, 4.0, 4.0), &ft, 4.0, 1.1), 2);
        // After 3 h: (3 + 0.62)/4 = 0.905 < 0.909: stay at 4.
        assert_eq!(reactive_minimum(&running(8, 4, 3.0, 3.0), &ft, 3.0, 1.1), 4);
        // F = 1 leaves no slack unless the job has run faster than requested.
        assert_eq!(
            reactive_minimum(&running(8, 4, 10.0, 10.0), &ft, 10.0, 1.0),
            4
        );
        // Behind (after a revert): the most servers, to catch up.
        assert_eq!(
            reactive_minimum(&running(8, 2, 2.0, 1.24), &ft, 2.0, 1.1),
            8
        );
        // Whatever the state, the chosen n meets the bound and the next smaller fails.
        for (age, speed_h) in [(0.3, 0.3), (2.0, 1.9), (4.0, 4.4), (1.0, 0.95), (6.0, 6.3)] {
            let r = running(8, 4, age, speed_h);
            let n = reactive_minimum(&r, &ft, age, 1.1);
            let avg = |n: u32| (speed_h + ft.profile.speed(4, 8, n) * PERIOD_H) / (age + PERIOD_H);
            assert!(avg(n) >= 1.0 / 1.1 - 1e-12 || n == 8, "{age} {speed_h}");
            if let Some(&lower) = allowed_servers(8).iter().rev().find(|&&m| m < n) {
                assert!(avg(lower) < 1.0 / 1.1, "{age} {speed_h}: {lower} also fits");
            }
        }
    }

    #[test]
    fn nebulous_minimum_keeps_average_allocation_above_n_over_f() {
        let lu = job("lu", 4);
        assert_eq!(nebulous_minimum(&running(8, 4, 0.0, 0.0), &lu, 0.0, 1.1), 4);
        // 5 h on 4 servers, then 2 for an hour: (20 + 2)/6 = 3.67 ≥ 4/1.1 = 3.64.
        assert_eq!(nebulous_minimum(&running(8, 4, 5.0, 5.0), &lu, 5.0, 1.1), 2);
        // 4 h: (16 + 2)/5 = 3.6 < 3.64.
        assert_eq!(nebulous_minimum(&running(8, 4, 4.0, 4.0), &lu, 4.0, 1.1), 4);
        assert_eq!(nebulous_minimum(&running(8, 4, 5.0, 5.0), &lu, 5.0, 1.0), 4);
    }
}
