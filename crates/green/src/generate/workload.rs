//! Synthetic job traces shaped like the Grid5k and Intrepid windows of §A.5.1 (Green SLAs) and §B.4 (GreenPar).
//!
//! Facts used (Haque's dissertation):
//!
//! - §A.5.1, 48 hours: Grid5k 675 jobs, a peak demand of 1,654 nodes (one VM per node),
//!   7 jobs longer than 48 hours; Intrepid 446 jobs, a peak of 1,620 nodes, 1 job longer
//!   than 48 hours, node demands ÷ 24 and runtimes × 8 (we draw Intrepid-like raw jobs and
//!   scale them so, with [`Sizing::Divide`]); Green SLAs uniform over {0, 25, 50, 75,
//!   100}%, 0% past 48 hours; we give 0% also to jobs that end after the window, where
//!   the generated solar ends ([`assign_green_slas`]).
//! - §B.4, 24 hours: Grid5k 26 jobs, a peak of 96 cores, 12 FT, 6 LU, 3 MG, 2 CG and one
//!   each of SP, EP and IS; Intrepid 113 jobs, a peak of 86 cores, 73 IS, 24 MG, 14 CG,
//!   1 FT and 1 SP, cores mapped by Table B.2 ([`Sizing::IntrepidTableB2`]); a power of 2
//!   of VMs, two per dual-core server, so `servers` (N_j) is cores / 2.
//!
//! One fact cannot be met: Table B.2's core counts (4, 8, 16, 32) are all multiples of 4,
//! so no set of them sums to 86. The Intrepid GreenPar peak is 88 cores (44 servers),
//! 2.3% above.
//!
//! Invented, by hand: arrivals on the [`EPOCH_H`] grid with a daily rhythm
//! ([`arrival_rate`]: for Green SLAs ∝ 1 + 0.5 sin, highest at 15:00; for GreenPar a
//! working day, five in six jobs between 07:00 and 19:00); sizes and runtimes from the mixes and log-normals in
//! `draft` (Grid5k: a third one-node jobs and a long tail, runtimes of median 1 h;
//! Intrepid: 512- to 16,384-node partitions, raw runtimes of median 15 min); which job
//! runs which application (the appendix's counts, shuffled). The peak is then met exactly by adjusting sizes at the peak epoch
//! (scaling first, then shrinking or growing single jobs; GreenPar sizes stay powers of
//! 2 by halving and doubling), so a few Intrepid sizes leave the ÷ 24 partition sizes.

use rand::RngExt;

use super::solar::normal;
use super::{round4, System, Workload};
use crate::archive::{assign_green_slas, Sizing};
use crate::input::{Job, EPOCH_H};

/// The shape of one workload on one system.
struct Shape {
    /// Window, hours.
    window_h: f64,
    /// Jobs in the window.
    jobs: usize,
    /// Of them, jobs longer than 48 hours (Green SLAs).
    long_jobs: usize,
    /// Peak concurrent servers (VMs for Green SLAs).
    peak: u32,
    /// How sizes may change when fitting the peak.
    sizes: Sizes,
    /// Applications and their counts (GreenPar).
    apps: &'static [(&'static str, usize)],
}

/// How a size may be adjusted.
#[derive(Clone, Copy)]
enum Sizes {
    /// Any whole number in min..=max.
    Free { min: u32, max: u32 },
    /// Powers of 2 in min..=max.
    PowerOfTwo { min: u32, max: u32 },
}

impl Sizes {
    fn min(self) -> u32 {
        match self {
            Sizes::Free { min, .. } | Sizes::PowerOfTwo { min, .. } => min,
        }
    }
}

fn shape(workload: Workload, system: System) -> Shape {
    match (system, workload) {
        (System::Sla, Workload::Grid5k) => Shape {
            window_h: 48.0,
            jobs: 675,
            long_jobs: 7,
            peak: 1654,
            sizes: Sizes::Free { min: 1, max: 1680 },
            apps: &[],
        },
        (System::Sla, Workload::Intrepid) => Shape {
            window_h: 48.0,
            jobs: 446,
            long_jobs: 1,
            peak: 1620,
            sizes: Sizes::Free { min: 1, max: 1680 },
            apps: &[],
        },
        (System::Par, Workload::Grid5k) => Shape {
            window_h: 24.0,
            jobs: 26,
            long_jobs: 0,
            peak: 48,
            sizes: Sizes::PowerOfTwo { min: 1, max: 16 },
            apps: &[
                ("ft", 12),
                ("lu", 6),
                ("mg", 3),
                ("cg", 2),
                ("sp", 1),
                ("ep", 1),
                ("is", 1),
            ],
        },
        (System::Par, Workload::Intrepid) => Shape {
            window_h: 24.0,
            jobs: 113,
            long_jobs: 0,
            // 86 cores is out of reach of Table B.2 (module docs): 88 cores.
            peak: 44,
            sizes: Sizes::PowerOfTwo { min: 2, max: 16 },
            apps: &[("is", 73), ("mg", 24), ("cg", 14), ("ft", 1), ("sp", 1)],
        },
    }
}

/// A job before it has an id: start epoch, servers, runtime.
#[derive(Clone, Copy)]
struct Draft {
    epoch: usize,
    servers: u32,
    runtime_h: f64,
}

impl Draft {
    fn epochs(&self) -> std::ops::Range<usize> {
        self.epoch..self.epoch + (self.runtime_h / EPOCH_H - 1e-9).ceil().max(1.0) as usize
    }
}

/// One of `weights`' indices, in proportion to the weights.
fn pick(rng: &mut tailor_core::Rng, weights: &[f64]) -> usize {
    let mut x = rng.random::<f64>() * weights.iter().sum::<f64>();
    for (i, w) in weights.iter().enumerate() {
        if x < *w {
            return i;
        }
        x -= w;
    }
    weights.len() - 1
}

/// A log-uniform whole number in lo..=hi.
fn log_uniform(rng: &mut tailor_core::Rng, lo: f64, hi: f64) -> u32 {
    (lo.ln() + rng.random::<f64>() * (hi.ln() - lo.ln()))
        .exp()
        .round() as u32
}

/// A log-normal draw with this median, clipped to lo..=hi.
fn log_normal(rng: &mut tailor_core::Rng, median: f64, sigma: f64, lo: f64, hi: f64) -> f64 {
    (median * (sigma * normal(rng)).exp()).clamp(lo, hi)
}

/// The relative arrival rate at hour `t` of the window; at most 1.5.
fn arrival_rate(system: System, t: f64) -> f64 {
    let hour = t % 24.0;
    match system {
        // Green SLAs: a gentle daily rhythm, highest at 15:00 and a third of it at 03:00.
        System::Sla => 1.0 + 0.5 * (std::f64::consts::TAU * (hour - 9.0) / 24.0).sin(),
        // GreenPar: a working day, submissions rising from 07:00 to a peak at 13:00 and
        // gone by 19:00, over a small night floor, so about five in six jobs arrive in
        // daylight. Fig. B.5 shows the demand but is not in our copy's text; §B.5 says
        // only that jobs run in the sunless first six hours and at night.
        System::Par => {
            let day = if (7.0..19.0).contains(&hour) {
                (std::f64::consts::PI * (hour - 7.0) / 12.0).sin()
            } else {
                0.0
            };
            0.15 + day
        }
    }
}

/// An arrival epoch in the window, with `system`'s rhythm (rejection sampling).
fn arrival_epoch(rng: &mut tailor_core::Rng, window_h: f64, system: System) -> usize {
    loop {
        let t = rng.random::<f64>() * window_h;
        if rng.random::<f64>() * 1.5 < arrival_rate(system, t) {
            return (t / EPOCH_H).floor() as usize;
        }
    }
}

/// Draws the jobs of `workload` on `system` before the peak is fitted.
fn draft(workload: Workload, system: System, s: &Shape, rng: &mut tailor_core::Rng) -> Vec<Draft> {
    let mut drafts = Vec::with_capacity(s.jobs);
    for i in 0..s.jobs {
        let long = i < s.long_jobs;
        let epoch = arrival_epoch(rng, s.window_h, system);
        let (servers, runtime_h) = match (system, workload) {
            (System::Sla, Workload::Grid5k) => {
                // Grid'5000: many one-node jobs, a long tail of large ones.
                let servers = match pick(rng, &[0.35, 0.35, 0.22, 0.08]) {
                    0 => 1,
                    1 => log_uniform(rng, 2.0, 16.0),
                    2 => log_uniform(rng, 17.0, 128.0),
                    _ => log_uniform(rng, 129.0, 600.0),
                };
                let runtime_h = if long {
                    rng.random_range(50.0..150.0)
                } else {
                    log_normal(rng, 1.0, 1.4, 1.0 / 12.0, 47.5)
                };
                (if long { servers.min(64) } else { servers }, runtime_h)
            }
            (System::Sla, Workload::Intrepid) => {
                // Blue Gene/P partitions of 512 nodes and up, then §A.5.1's scaling.
                let nodes = 512u64 << pick(rng, &[0.45, 0.25, 0.15, 0.09, 0.045, 0.015]);
                let raw_h = if long {
                    rng.random_range(6.5..12.0)
                } else {
                    log_normal(rng, 0.25, 1.2, 1.0 / 30.0, 5.5)
                };
                (Sizing::Divide(24).servers(nodes), raw_h * 8.0)
            }
            (System::Par, Workload::Grid5k) => {
                // 2-32 cores (one-core jobs filtered, §B.4), two per server.
                let servers = 1 << pick(rng, &[0.15, 0.3, 0.3, 0.15, 0.1]);
                (servers, log_normal(rng, 2.0, 0.7, 0.25, 10.0))
            }
            (System::Par, Workload::Intrepid) => {
                let cores = 256u64 << pick(rng, &[0.3, 0.2, 0.15, 0.15, 0.12, 0.05, 0.03]);
                (
                    Sizing::IntrepidTableB2.servers(cores),
                    log_normal(rng, 0.67, 0.8, 0.25, 6.0),
                )
            }
        };
        drafts.push(Draft {
            epoch,
            servers,
            runtime_h: round4(runtime_h),
        });
    }
    drafts
}

/// Servers busy in each epoch if every job starts on arrival.
fn demand(drafts: &[Draft]) -> Vec<u32> {
    let end = drafts.iter().map(|d| d.epochs().end).max().unwrap_or(0);
    let mut diff = vec![0i64; end + 1];
    for d in drafts {
        let r = d.epochs();
        diff[r.start] += i64::from(d.servers);
        diff[r.end] -= i64::from(d.servers);
    }
    let mut level = 0i64;
    diff[..end]
        .iter()
        .map(|x| {
            level += x;
            level as u32
        })
        .collect()
}

/// The peak demand and its first epoch.
fn peak(drafts: &[Draft]) -> (u32, usize) {
    demand(drafts).iter().enumerate().fold(
        (0, 0),
        |best, (k, &v)| if v > best.0 { (v, k) } else { best },
    )
}

/// Adjusts sizes until the peak demand is `target`; false when it cannot.
fn fit_peak(drafts: &mut [Draft], target: u32, sizes: Sizes) -> bool {
    if let Sizes::Free { min, max } = sizes {
        // Scale first, so the shape of the mix survives.
        for _ in 0..4 {
            let (p, _) = peak(drafts);
            let s = f64::from(target) / f64::from(p.max(1));
            for d in drafts.iter_mut() {
                d.servers = ((f64::from(d.servers) * s).round() as u32).clamp(min, max);
            }
        }
    }
    for _ in 0..10_000 {
        let load = demand(drafts);
        let (p, k) = peak(drafts);
        if p == target {
            return true;
        }
        let at_peak = |d: &Draft| d.epochs().contains(&k);
        if p > target {
            // Shrink the largest job running at the peak.
            let Some(j) = (0..drafts.len())
                .filter(|&j| at_peak(&drafts[j]) && drafts[j].servers > sizes.min())
                .max_by_key(|&j| (drafts[j].servers, std::cmp::Reverse(j)))
            else {
                return false;
            };
            let excess = p - target;
            drafts[j].servers = match sizes {
                Sizes::Free { min, .. } => drafts[j].servers.saturating_sub(excess).max(min),
                Sizes::PowerOfTwo { .. } => drafts[j].servers / 2,
            };
        } else {
            let deficit = target - p;
            match sizes {
                Sizes::Free { max, .. } => {
                    // Grow one job running at the peak by the deficit: nowhere can
                    // demand then pass the target.
                    let Some(j) = (0..drafts.len())
                        .filter(|&j| at_peak(&drafts[j]) && drafts[j].servers < max)
                        .max_by_key(|&j| (drafts[j].servers, std::cmp::Reverse(j)))
                    else {
                        return false;
                    };
                    drafts[j].servers = (drafts[j].servers + deficit).min(max);
                }
                Sizes::PowerOfTwo { max, .. } => {
                    // Double the job that brings its busiest epoch nearest the target
                    // without passing it.
                    let reach =
                        |d: &Draft| d.epochs().map(|e| load[e]).max().unwrap_or(0) + d.servers;
                    let Some(j) = (0..drafts.len())
                        .filter(|&j| drafts[j].servers * 2 <= max && reach(&drafts[j]) <= target)
                        .max_by_key(|&j| (reach(&drafts[j]), std::cmp::Reverse(j)))
                    else {
                        return false;
                    };
                    drafts[j].servers *= 2;
                }
            }
        }
    }
    false
}

/// The jobs of `workload` on `system`, in arrival order, ids from 1, `line` the line each
/// has in `jobs.csv`.
pub(crate) fn jobs(workload: Workload, system: System, rng: &mut tailor_core::Rng) -> Vec<Job> {
    let s = shape(workload, system);
    // A draw whose peak cannot be met exactly (rare, GreenPar's powers of 2) is drawn again.
    let drafts = loop {
        let mut drafts = draft(workload, system, &s, rng);
        if fit_peak(&mut drafts, s.peak, s.sizes) {
            break drafts;
        }
    };
    let mut order: Vec<usize> = (0..drafts.len()).collect();
    order.sort_by_key(|&i| (drafts[i].epoch, i));
    let mut apps: Vec<&str> = s
        .apps
        .iter()
        .flat_map(|&(name, n)| std::iter::repeat_n(name, n))
        .collect();
    // Fisher-Yates.
    for i in (1..apps.len()).rev() {
        apps.swap(i, rng.random_range(0..=i));
    }
    let mut jobs: Vec<Job> = order
        .iter()
        .enumerate()
        .map(|(n, &i)| Job {
            id: (n + 1).to_string(),
            arrival_h: drafts[i].epoch as f64 * EPOCH_H,
            servers: drafts[i].servers,
            runtime_h: drafts[i].runtime_h,
            green_sla: 0.0,
            app: apps.get(n).map_or_else(String::new, |a| a.to_string()),
            line: n as u64 + 2,
        })
        .collect();
    if system == System::Sla {
        assign_green_slas(&mut jobs, rng, s.window_h);
    }
    jobs
}

#[cfg(test)]
/// The peak concurrent servers of `jobs` if each starts on arrival, runtimes in whole
/// epochs (§A.5.1: ⌈runtime / epoch⌉ slots).
pub(crate) fn peak_demand(jobs: &[Job]) -> u32 {
    let drafts: Vec<Draft> = jobs
        .iter()
        .map(|j| Draft {
            epoch: (j.arrival_h / EPOCH_H).floor() as usize,
            servers: j.servers,
            runtime_h: j.runtime_h,
        })
        .collect();
    peak(&drafts).0
}

#[cfg(test)]
/// The mean concurrent servers of `jobs` over the first `window_h` hours.
pub(crate) fn mean_demand(jobs: &[Job], window_h: f64) -> f64 {
    let drafts: Vec<Draft> = jobs
        .iter()
        .map(|j| Draft {
            epoch: (j.arrival_h / EPOCH_H).floor() as usize,
            servers: j.servers,
            runtime_h: j.runtime_h,
        })
        .collect();
    let n = (window_h / EPOCH_H) as usize;
    let d = demand(&drafts);
    (0..n)
        .map(|k| f64::from(d.get(k).copied().unwrap_or(0)))
        .sum::<f64>()
        / n as f64
}
