//! GreenPar's discrete-time simulator: jobs arrive, start when their requested servers are free, run on the allocations a policy gives them, and finish; each epoch's energy is met by solar first and the grid for the rest (§B.4, Eq. B.3).
//!
//! Time advances from event to event: epoch starts (every [`EPOCH_H`]), arrivals and
//! completions. At each the policy is asked again, so it can respond to arrivals and
//! completions within an epoch (§B.3.2). A job's progress is measured in hours of work
//! at its requested allocation: on n servers with v VMs it does SP(n, v)/SP(N, 2N) of
//! them per hour, and ends when it has done its `runtime_h`.
//!
//! Jobs start first come, first served, when the servers they request are free beside
//! the running jobs' requested servers. While any job waits, every running job reverts to
//! its requested servers and jobs start with 2N VMs (§B.3.1's revert rule). An answer a
//! policy gives that is not an allowed allocation, or does not fit, also falls back to
//! the requested allocations.
//!
//! Energy: each epoch adds the running jobs' servers (power by VMs per server), the
//! sleeping servers, and migrations ME(|Δn|) when a running job's allocation changes;
//! green used = min(energy, production), brown = the rest (Eq. B.3, per epoch).

use std::collections::VecDeque;

use crate::input::{Job, Prediction, Solar, EPOCH_H};
use crate::profile::EpochPower;

use super::greedy::{Nebulous, Reactive};
use super::optimize::Optimizer;
use super::policy::{epoch_of, Allocator, Baseline, Events, JobInfo, Running, View, TIME_EPS};
use super::power::{job_extra_kw, migration_kwh, sleep_kw};
use super::speedup::{allowed_servers, AppProfile};
use super::{ParConfig, ParError, ParJobResult, ParPolicy, ParSummary};

/// §B.4's datacenter: 50 servers running jobs.
const PAPER_SERVERS: u32 = 50;

/// The most servers requested at once when every job runs its requested runtime from
/// its arrival (Baseline without a queue).
pub(crate) fn peak_requested(jobs: &[Job]) -> u32 {
    let mut edges: Vec<(f64, i64)> = Vec::with_capacity(2 * jobs.len());
    for j in jobs {
        edges.push((j.arrival_h, j.servers as i64));
        edges.push((j.arrival_h + j.runtime_h, -(j.servers as i64)));
    }
    // Ends before starts at the same instant.
    edges.sort_by(|a, b| a.0.total_cmp(&b.0).then(a.1.cmp(&b.1)));
    let (mut now, mut peak) = (0i64, 0i64);
    for (_, d) in edges {
        now += d;
        peak = peak.max(now);
    }
    peak.max(0) as u32
}

/// One job's record as it runs.
#[derive(Debug, Clone, Default)]
struct Record {
    vms: u32,
    start_h: f64,
    finish_h: f64,
    min_servers: u32,
    max_servers: u32,
    servers_h: f64,
}

/// Runs the simulation (inputs already checked).
pub(crate) fn run(
    jobs: &[Job],
    solar: &Solar,
    prediction: &Prediction,
    cfg: &ParConfig,
    policy: ParPolicy,
) -> Result<ParSummary, ParError> {
    if jobs.is_empty() {
        return Err(ParError::NoJobs);
    }
    let capacity = cfg
        .servers
        .unwrap_or_else(|| peak_requested(jobs).max(PAPER_SERVERS));
    let mut infos = Vec::with_capacity(jobs.len());
    for j in jobs {
        let profile = AppProfile::of(&j.app).ok_or_else(|| ParError::UnknownApp {
            job: j.id.clone(),
            line: j.line,
            app: j.app.clone(),
            known: AppProfile::names().join(", "),
        })?;
        if j.servers > capacity {
            return Err(ParError::TooLarge {
                job: j.id.clone(),
                line: j.line,
                servers: j.servers,
                capacity,
            });
        }
        infos.push(JobInfo {
            arrival_h: j.arrival_h,
            requested: j.servers,
            profile,
        });
    }
    let truth: Vec<f64> = jobs.iter().map(|j| j.runtime_h).collect();
    let estimates: Vec<f64> = truth
        .iter()
        .map(|r| r * (1.0 + cfg.runtime_error))
        .collect();
    let mut allocator: Box<dyn Allocator> = match policy {
        ParPolicy::Baseline => Box::new(Baseline),
        ParPolicy::Reactive => Box::new(Reactive),
        ParPolicy::Nebulous => Box::new(Nebulous::new(estimates)),
        ParPolicy::Aggressive => Box::new(Optimizer::aggressive(estimates)),
        ParPolicy::Offline => Box::new(Optimizer::offline(truth.clone())),
    };

    // Energy is counted to one end for every policy on these inputs, so that a policy
    // that finishes early is not credited with the sleeping servers' floor another pays
    // for: the later of the solar trace's end and the latest end any job may have within
    // F of its requested runtime, on the epoch grid. A run that ends later is counted to
    // its own end.
    let latest_end = jobs
        .iter()
        .map(|j| j.arrival_h + cfg.slowdown * j.runtime_h)
        .fold(0.0, f64::max);
    let solar_end = (solar.kw.len() as f64 * EPOCH_H).max((latest_end / EPOCH_H).ceil() * EPOCH_H);
    let mut t = 0.0;
    let mut next_arrival = 0;
    let mut queue: VecDeque<usize> = VecDeque::new();
    let mut running: Vec<Running> = Vec::new();
    let mut started = vec![false; jobs.len()];
    let mut finished: Vec<usize> = Vec::new();
    let mut records = vec![Record::default(); jobs.len()];
    let mut used_kwh: Vec<f64> = Vec::new();
    let mut busy_h: Vec<f64> = Vec::new();
    let mut migration_total = 0.0;
    let mut peak_servers = 0u32;
    let mut was_pressure = false;
    let mut events = Events {
        new_epoch: true,
        ..Events::default()
    };
    let grow = |v: &mut Vec<f64>, e: usize| {
        if v.len() <= e {
            v.resize(e + 1, 0.0);
        }
    };

    loop {
        while next_arrival < jobs.len() && jobs[next_arrival].arrival_h <= t + TIME_EPS {
            queue.push_back(next_arrival);
            next_arrival += 1;
        }
        // Admit first come, first served on requested servers.
        let mut committed: u32 = running.iter().map(|r| infos[r.job].requested).sum();
        let mut admitted = Vec::new();
        while let Some(&j) = queue.front() {
            if committed + infos[j].requested > capacity {
                break;
            }
            committed += infos[j].requested;
            admitted.push(queue.pop_front().expect("front"));
        }
        let pressure = !queue.is_empty();
        events.after_pressure = was_pressure && !pressure;
        events.arrived = !admitted.is_empty();
        for j in admitted {
            let waited = jobs[j].arrival_h < t - TIME_EPS;
            let vms = if pressure || waited {
                2 * infos[j].requested
            } else {
                let view = View {
                    now_h: t,
                    epoch: epoch_of(t),
                    capacity,
                    cfg,
                    jobs: &infos,
                    running: &running,
                    started: &started,
                    finished: &finished,
                    arrived: next_arrival,
                    prediction,
                    solar,
                    events,
                };
                let v = allocator.vms(&view, j);
                if v == 2 * infos[j].requested || v == 4 * infos[j].requested {
                    v
                } else {
                    2 * infos[j].requested
                }
            };
            started[j] = true;
            records[j] = Record {
                vms,
                start_h: t,
                finish_h: f64::NAN,
                min_servers: u32::MAX,
                max_servers: 0,
                servers_h: 0.0,
            };
            running.push(Running {
                job: j,
                vms,
                servers: infos[j].requested,
                fresh: true,
                start_h: t,
                done_h: 0.0,
                speed_h: 0.0,
                servers_h: 0.0,
            });
        }

        // Allocate.
        let epoch = epoch_of(t);
        let requested: Vec<u32> = running.iter().map(|r| infos[r.job].requested).collect();
        let alloc = if pressure {
            requested.clone()
        } else {
            let view = View {
                now_h: t,
                epoch,
                capacity,
                cfg,
                jobs: &infos,
                running: &running,
                started: &started,
                finished: &finished,
                arrived: next_arrival,
                prediction,
                solar,
                events,
            };
            let a = allocator.allocate(&view);
            let fits = a.len() == running.len()
                && a.iter().sum::<u32>() <= capacity
                && a.iter()
                    .zip(&running)
                    .all(|(&n, r)| allowed_servers(r.vms).contains(&n));
            if fits {
                a
            } else {
                requested.clone()
            }
        };
        was_pressure = pressure;
        grow(&mut used_kwh, epoch);
        grow(&mut busy_h, epoch);
        for (r, &n) in running.iter_mut().zip(&alloc) {
            if !r.fresh && r.servers != n {
                let kwh = migration_kwh(cfg, r.servers.abs_diff(n));
                used_kwh[epoch] += kwh;
                migration_total += kwh;
            }
            r.servers = n;
            r.fresh = false;
            let rec = &mut records[r.job];
            rec.min_servers = rec.min_servers.min(n);
            rec.max_servers = rec.max_servers.max(n);
        }

        let all_done = running.is_empty() && queue.is_empty() && next_arrival == jobs.len();
        if all_done && t >= solar_end - TIME_EPS && events.new_epoch {
            break;
        }

        // The next event.
        let boundary = (epoch + 1) as f64 * EPOCH_H;
        let mut next = boundary;
        if next_arrival < jobs.len() {
            next = next.min(jobs[next_arrival].arrival_h);
        }
        let speed = |r: &Running| {
            let info = &infos[r.job];
            info.profile.speed(info.requested, r.vms, r.servers)
        };
        for r in &running {
            next = next.min(t + (truth[r.job] - r.done_h).max(0.0) / speed(r));
        }
        let next = next.max(t);
        let dt = next - t;
        let busy: u32 = running.iter().map(|r| r.servers).sum();
        peak_servers = peak_servers.max(busy);
        let kw = sleep_kw(cfg, capacity)
            + running
                .iter()
                .map(|r| job_extra_kw(cfg, r.vms, r.servers))
                .sum::<f64>();
        used_kwh[epoch] += kw * dt;
        busy_h[epoch] += busy as f64 * dt;
        for r in &mut running {
            let s = speed(r);
            r.done_h += s * dt;
            r.speed_h += s * dt;
            r.servers_h += r.servers as f64 * dt;
            records[r.job].servers_h += r.servers as f64 * dt;
        }
        t = if (next - boundary).abs() <= TIME_EPS {
            boundary
        } else {
            next
        };
        events = Events {
            new_epoch: t == boundary,
            ..Events::default()
        };
        running.retain(|r| {
            let total = truth[r.job];
            if r.done_h >= total - TIME_EPS * total.max(1.0) {
                records[r.job].finish_h = t;
                finished.push(r.job);
                events.finished = true;
                false
            } else {
                true
            }
        });
    }

    Ok(summarize(
        jobs,
        solar,
        prediction,
        cfg,
        policy,
        capacity,
        &records,
        &used_kwh,
        &busy_h,
        migration_total,
        peak_servers,
    ))
}

/// The run's summary from its records.
#[allow(clippy::too_many_arguments)]
fn summarize(
    jobs: &[Job],
    solar: &Solar,
    prediction: &Prediction,
    cfg: &ParConfig,
    policy: ParPolicy,
    capacity: u32,
    records: &[Record],
    used_kwh: &[f64],
    busy_h: &[f64],
    migration_kwh: f64,
    peak_servers: u32,
) -> ParSummary {
    let mut epochs = Vec::with_capacity(used_kwh.len());
    let (mut green, mut brown, mut produced) = (0.0, 0.0, 0.0);
    for (e, &used) in used_kwh.iter().enumerate() {
        let supply = solar.kw_at(e) * EPOCH_H;
        let g = used.min(supply);
        green += g;
        brown += used - g;
        produced += supply;
        epochs.push(EpochPower {
            time_h: e as f64 * EPOCH_H,
            produced_kw: solar.kw_at(e),
            predicted_kw: prediction.kw(e.saturating_sub(1), e).unwrap_or(0.0),
            green_sla_kw: 0.0,
            green_other_kw: g / EPOCH_H,
            brown_kw: (used - g) / EPOCH_H,
            servers: (busy_h.get(e).copied().unwrap_or(0.0) / EPOCH_H).round() as u32,
        });
    }
    let n = jobs.len() as f64;
    let mut job_results = Vec::with_capacity(jobs.len());
    let (mut runtime, mut wait, mut req) = (0.0, 0.0, 0.0);
    let (mut violations, mut waited, mut max_slowdown, mut vms) = (0, 0, 0.0f64, 0u64);
    for (j, rec) in jobs.iter().zip(records) {
        let run_h = rec.finish_h - rec.start_h;
        let wait_h = rec.start_h - j.arrival_h;
        let slowdown = run_h / j.runtime_h;
        runtime += run_h;
        wait += wait_h;
        req += j.runtime_h;
        vms += rec.vms as u64;
        max_slowdown = max_slowdown.max(slowdown);
        if slowdown > cfg.slowdown * (1.0 + 1e-6) {
            violations += 1;
        }
        if wait_h > TIME_EPS {
            waited += 1;
        }
        job_results.push(ParJobResult {
            id: j.id.clone(),
            vms: rec.vms,
            requested: j.servers,
            requested_runtime_h: j.runtime_h,
            runtime_h: run_h,
            wait_h,
            min_servers: rec.min_servers,
            max_servers: rec.max_servers,
            mean_servers: if run_h > 0.0 {
                rec.servers_h / run_h
            } else {
                j.servers as f64
            },
        });
    }
    let makespan = records.iter().map(|r| r.finish_h).fold(0.0, f64::max);
    ParSummary {
        policy: policy.name().to_string(),
        servers: capacity,
        slowdown: cfg.slowdown,
        jobs: jobs.len(),
        brown_kwh: brown,
        green_kwh: green,
        energy_kwh: green + brown,
        migration_kwh,
        produced_kwh: produced,
        brown_cost: brown * cfg.price_per_kwh,
        mean_runtime_h: runtime / n,
        mean_requested_runtime_h: req / n,
        runtime_reduction: 1.0 - runtime / req,
        mean_wait_h: wait / n,
        waited,
        total_vms: vms,
        sla_violations: violations,
        max_slowdown,
        peak_servers,
        makespan_h: makespan,
        job_results,
        epochs,
    }
}
