//! `tailor calibrate`: a machine's calibration from its profile and live SEQ runs
//! (docs/calibration.md).
//!
//! A live SEQ run at a load below overload says, through Little's law, how long a request
//! held a thread (its `mean_threads` over its rate), and so how much slower than profiled
//! its work ran with that many threads busy; what it waited beyond that, less the worker
//! pool's queueing, is the hand-off to a thread; and its CPU per request beyond the time
//! on a thread is what handing a request to a thread costs. Two or more loads give the
//! slowdown and the hand-off delay as lines in the busy threads per core:
//!
//! - slowdown(u) = 1 + a u, least squares through (0, 1): the profile is measured alone;
//! - the hand-off delay at each load is found by bisection so that the charged model's
//!   simulated SEQ matches the run's mean latency (the simulation supplies the queueing
//!   of the worker pool, which matters on few cores), then a least-squares line in u;
//! - the helper cost is the CPU a hand-off costs, the mean over the runs; live FIX-N runs,
//!   if given, measure it directly as their CPU per request beyond SEQ's over N - 1.
//!
//! The simulation is passed in as a function, as the RC planner's is: `plan` does not
//! depend on the simulator.

use tailor_core::{
    Calibration, CalibrationRun, CalibrationSource, Curve, DemandProfile, RunSummary, Units,
    CALIBRATION_KIND, MIN_SLOWDOWN,
};

/// A run counts as below overload when its mean latency is at most this many times its
/// time on a thread (chosen by hand: the 16-core runs of 2026-11-27 at 30-60% stay within
/// 1.8x, the overloaded ones at 75-90% pass 4x).
const STABLE_WAIT_RATIO: f64 = 3.0;

/// The longest hand-off delay the bisection considers, ms.
const MAX_DISPATCH_MS: f64 = 100.0;

/// Why a calibration could not be made.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum CalibrateError {
    /// No live SEQ run in the input.
    #[error("--runs holds no live SEQ run (`\"engine\": \"live\", \"policy\": \"seq\"`); a calibration needs SEQ at two loads or more")]
    NoSeq,
    /// The runs were made on machines with different core counts.
    #[error("--runs: the runs were made on {0} and {1} cores; calibrate one machine at a time")]
    MixedCores(usize, usize),
    /// Fewer than two loads below overload.
    #[error(
        "--runs: SEQ below overload at {found} load(s) ({loads}); a calibration needs two or \
         more (a run counts when its mean latency is at most {STABLE_WAIT_RATIO} times its \
         time on a thread)"
    )]
    TooFewLoads {
        /// Loads usable.
        found: usize,
        /// Every SEQ load seen, requests per second, with its verdict.
        loads: String,
    },
    /// A value in a run summary cannot be used.
    #[error("--runs: a SEQ run at {rps} requests/s has {what}")]
    BadRun {
        /// The run's rate.
        rps: f64,
        /// What is wrong.
        what: String,
    },
}

/// What a calibration is made from.
#[derive(Debug, Clone)]
pub struct CalibrateInput<'a> {
    /// The machine's profile.
    pub profile: &'a DemandProfile,
    /// How the profile is named in the calibration's source.
    pub profile_name: String,
    /// Live run summaries; SEQ's at two or more loads are needed, FIX-N's are used if
    /// present, the rest are ignored.
    pub runs: &'a [RunSummary],
    /// How requests are cut into units (default: as many as the profile's degrees).
    pub units: Option<Units>,
}

/// One load's SEQ runs, averaged.
#[derive(Debug, Clone)]
struct Load {
    rps: f64,
    busy: f64,
    on_thread_ms: f64,
    mean_ms: f64,
    p99_ms: f64,
    cpu_ms: f64,
    /// One of its runs, to simulate.
    run: RunSummary,
    count: usize,
}

/// CPU per request, ms: process CPU over the run's span, which is about its requests
/// over its rate when it is not overloaded.
fn cpu_per_request(r: &RunSummary) -> f64 {
    r.cpu_utilization * r.cores as f64 * 1000.0 / r.rps
}

/// A least-squares line y = a + b x.
fn line(points: &[(f64, f64)]) -> (f64, f64) {
    let n = points.len() as f64;
    let mx = points.iter().map(|p| p.0).sum::<f64>() / n;
    let my = points.iter().map(|p| p.1).sum::<f64>() / n;
    let sxx: f64 = points.iter().map(|p| (p.0 - mx).powi(2)).sum();
    let sxy: f64 = points.iter().map(|p| (p.0 - mx) * (p.1 - my)).sum();
    let b = if sxx > 0.0 { sxy / sxx } else { 0.0 };
    (my - b * mx, b)
}

/// Rounds of correcting the hand-off line against the simulated means.
const REFINE_ROUNDS: usize = 8;

/// The hand-off delay's curve through (busy, ms) points: a least-squares line, zero
/// below where it crosses zero; a line that falls with load is noise and is taken as its
/// mean (said in `notes`).
fn dispatch_line(points: &[(f64, f64)], notes: &mut Vec<String>) -> Curve {
    let (d0, d1) = line(points);
    if d1 <= 0.0 {
        // More load never hands off faster: a falling line (noise) is its mean.
        let mean = points.iter().map(|p| p.1).sum::<f64>() / points.len() as f64;
        notes.push(format!(
            "the hand-off delay fell with load in these runs (slope {d1:.3} ms); taken as \
             its mean, {mean:.3} ms"
        ));
        Curve::through(vec![[0.0, mean]], 0.0)
    } else if d0 >= 0.0 {
        Curve::through(vec![[0.0, d0], [1.0, d0 + d1]], 0.0)
    } else {
        // The line crosses zero at u0 > 0: zero below it.
        let u0 = -d0 / d1;
        Curve::through(vec![[u0, 0.0], [u0 + 1.0, d1]], 0.0)
    }
}

/// Builds a calibration. `mean_latency(calibration, run)` simulates SEQ as `run` was
/// made (its rate, requests and seed, on the profile) under the charged model and
/// returns the mean latency of its measured requests.
pub fn calibrate(
    input: &CalibrateInput<'_>,
    mean_latency: &(dyn Fn(&Calibration, &RunSummary) -> f64 + Sync),
) -> Result<Calibration, CalibrateError> {
    let profile = input.profile;
    let mean_t1 = profile.requests().iter().map(|r| r.seq_ms()).sum::<f64>()
        / profile.requests().len() as f64;
    // A SEQ run on tantivy's executor (`--tantivy-executor`) reports no threads in use:
    // its request threads are not the runtime's. It says nothing about a thread's cost.
    let seq: Vec<&RunSummary> = input
        .runs
        .iter()
        .filter(|r| r.engine == "live" && r.policy == "seq" && r.mean_threads > 0.0)
        .collect();
    let Some(first) = seq.first() else {
        return Err(CalibrateError::NoSeq);
    };
    let cores = first.cores;
    if let Some(other) = input
        .runs
        .iter()
        .find(|r| r.engine == "live" && r.cores != cores)
    {
        return Err(CalibrateError::MixedCores(cores, other.cores));
    }
    // Group SEQ's runs by rate.
    let mut loads: Vec<Load> = Vec::new();
    for r in &seq {
        let bad = |what: &str| CalibrateError::BadRun {
            rps: r.rps,
            what: what.into(),
        };
        if !(r.rps.is_finite() && r.rps > 0.0) {
            return Err(bad("no positive rate"));
        }
        if !r.mean_threads.is_finite() {
            return Err(bad("a `mean_threads` that is not a number"));
        }
        let on_thread_ms = r.mean_threads / r.rps * 1000.0;
        let entry = Load {
            rps: r.rps,
            busy: r.mean_threads / cores as f64,
            on_thread_ms,
            mean_ms: r.latency_ms.mean,
            p99_ms: r.latency_ms.p99,
            cpu_ms: cpu_per_request(r),
            run: (*r).clone(),
            count: 1,
        };
        match loads
            .iter_mut()
            .find(|l| (l.rps - r.rps).abs() <= 1e-6 * r.rps)
        {
            Some(l) => {
                let n = l.count as f64;
                let avg = |a: f64, b: f64| (a * n + b) / (n + 1.0);
                l.busy = avg(l.busy, entry.busy);
                l.on_thread_ms = avg(l.on_thread_ms, entry.on_thread_ms);
                l.mean_ms = avg(l.mean_ms, entry.mean_ms);
                l.p99_ms = avg(l.p99_ms, entry.p99_ms);
                l.cpu_ms = avg(l.cpu_ms, entry.cpu_ms);
                l.count += 1;
            }
            None => loads.push(entry),
        }
    }
    loads.sort_by(|a, b| a.rps.total_cmp(&b.rps));
    let mut notes = Vec::new();
    let (stable, overloaded): (Vec<Load>, Vec<Load>) = loads
        .into_iter()
        .partition(|l| l.mean_ms <= STABLE_WAIT_RATIO * l.on_thread_ms);
    for l in &overloaded {
        notes.push(format!(
            "SEQ at {:.0}/s left out: mean latency {:.2} ms is {:.1} times its {:.2} ms on a \
             thread (overloaded)",
            l.rps,
            l.mean_ms,
            l.mean_ms / l.on_thread_ms,
            l.on_thread_ms
        ));
    }
    if stable.len() < 2 {
        let verdict = |l: &Load, ok: bool| {
            format!("{:.0}/s {}", l.rps, if ok { "used" } else { "overloaded" })
        };
        let loads = stable
            .iter()
            .map(|l| verdict(l, true))
            .chain(overloaded.iter().map(|l| verdict(l, false)))
            .collect::<Vec<_>>()
            .join(", ");
        return Err(CalibrateError::TooFewLoads {
            found: stable.len(),
            loads,
        });
    }

    // Slowdown: 1 + a u through (0, 1), u as a request sees it. A running request is
    // itself one of the busy threads, so it sees more of them than the time average:
    // with the busy threads about Poisson, E[n^2] / E[n] = E[n] + 1 of them (capped at
    // the cores).
    let seen = |l: &Load| ((l.busy * cores as f64 + 1.0) / cores as f64).min(1.0);
    let (num, den) = stable.iter().fold((0.0, 0.0), |(n, d), l| {
        let u = seen(l);
        (n + u * (l.on_thread_ms / mean_t1 - 1.0), d + u * u)
    });
    // More load never speeds work up: a negative slope (noise between runs) is flat.
    let a = (num / den).max(0.0);
    if num < 0.0 {
        notes.push(format!(
            "the slowdown fell with load in these runs (slope {:.3}); taken as flat",
            num / den
        ));
    }
    let slowdown = Curve::through(vec![[0.0, 1.0], [1.0, 1.0 + a]], MIN_SLOWDOWN);

    // Helper cost: a hand-off's CPU, or FIX-N's CPU beyond SEQ's per helper. SEQ's CPU
    // beyond its time on threads is mostly the harness's own threads (the generator, the
    // hiccup meter, the sampler), about constant per second: on the 2-core VM it was
    // 62-91 ms/s at 193-483 requests/s. Only its growth with the rate is per request: the
    // slope of that CPU per second against the rate, never below zero.
    let overhead = |l: &Load| (l.cpu_ms - l.on_thread_ms).max(0.0);
    let per_second: Vec<(f64, f64)> = stable
        .iter()
        .map(|l| (l.rps, overhead(l) * l.rps))
        .collect();
    let (background, slope) = line(&per_second);
    let mut helper_cost = slope.max(0.0);
    let fix: Vec<(f64, f64)> = input
        .runs
        .iter()
        .filter(|r| r.engine == "live")
        .filter_map(|r| {
            let d: usize = r.policy.strip_prefix("fix:")?.parse().ok()?;
            let on_thread = r.mean_threads / r.rps * 1000.0;
            (d >= 2 && r.latency_ms.mean <= STABLE_WAIT_RATIO * on_thread).then_some((r, d))
        })
        .map(|(r, d)| {
            let nearest = stable
                .iter()
                .min_by(|a, b| (a.rps - r.rps).abs().total_cmp(&(b.rps - r.rps).abs()))
                .expect("two or more loads");
            (
                (cpu_per_request(r) - nearest.cpu_ms) / (d - 1) as f64,
                d as f64,
            )
        })
        .collect();
    if !fix.is_empty() {
        helper_cost = (fix.iter().map(|f| f.0).sum::<f64>() / fix.len() as f64).max(0.0);
        notes.push(format!(
            "helper cost from {} live FIX-N run(s): their CPU per request beyond SEQ's at the \
             nearest load, over N - 1",
            fix.len()
        ));
    } else {
        notes.push(format!(
            "helper cost taken as a hand-off's: the growth with the rate of SEQ's CPU beyond \
             its time on threads ({:.3} ms per request, over {:.0} ms/s of the harness's \
             own; no FIX-N runs given)",
            slope, background
        ));
    }

    let units = input
        .units
        .unwrap_or(Units::Count(profile.max_degree().max(1)));
    let mut cal = Calibration {
        kind: CALIBRATION_KIND.into(),
        cores,
        units,
        helper_cost_ms: helper_cost,
        dispatch_ms: Curve::through(vec![[0.0, 0.0]], 0.0),
        slowdown,
        capacity_rps: cores as f64 * 1000.0 / (mean_t1 * (1.0 + a).max(MIN_SLOWDOWN)),
        source: CalibrationSource::default(),
    };

    // The hand-off delay at each load, by bisection on the simulated mean latency.
    let mut fitted = Vec::new();
    let mut runs = Vec::new();
    for l in &stable {
        let at = |d: f64| {
            let mut c = cal.clone();
            c.dispatch_ms = Curve::through(vec![[0.0, d]], 0.0);
            mean_latency(&c, &l.run)
        };
        let d = if at(0.0) >= l.mean_ms {
            0.0
        } else {
            let (mut lo, mut hi) = (0.0, l.mean_ms.min(MAX_DISPATCH_MS));
            for _ in 0..30 {
                let mid = 0.5 * (lo + hi);
                if at(mid) < l.mean_ms {
                    lo = mid;
                } else {
                    hi = mid;
                }
            }
            0.5 * (lo + hi)
        };
        fitted.push((l.busy, d));
        runs.push(CalibrationRun {
            policy: "seq".into(),
            rps: l.rps,
            busy: l.busy,
            slowdown: l.on_thread_ms / mean_t1,
            mean_ms: l.mean_ms,
            p99_ms: l.p99_ms,
            dispatch_ms: d,
            overhead_ms: overhead(l),
        });
    }
    // The line, then a few rounds of correction: the simulator reads the line at the
    // busy threads of the moment, not at each run's average, so the line through the
    // constants does not quite give each run's mean; each round moves every load's point
    // by what its simulated mean still misses (at most `REFINE_ROUNDS`, until all are
    // within 2%).
    let mut targets = fitted.clone();
    cal.dispatch_ms = dispatch_line(&targets, &mut notes);
    // Per load, the last (point, miss) pair: a secant step from the second round on (a
    // delay's effect on the mean is more than 1:1 where the worker pool queues).
    let mut last: Vec<Option<(f64, f64)>> = vec![None; stable.len()];
    for _ in 0..REFINE_ROUNDS {
        let misses: Vec<f64> = stable
            .iter()
            .map(|l| l.mean_ms - mean_latency(&cal, &l.run))
            .collect();
        if stable
            .iter()
            .zip(&misses)
            .all(|(l, m)| m.abs() <= 0.02 * l.mean_ms)
        {
            break;
        }
        for ((t, &m), prev) in targets.iter_mut().zip(&misses).zip(last.iter_mut()) {
            if !m.is_finite() {
                continue;
            }
            let step = match *prev {
                Some((x0, m0)) if (m - m0).abs() > 1e-12 && (t.1 - x0).abs() > 1e-12 => {
                    -m * (t.1 - x0) / (m - m0)
                }
                _ => m,
            };
            *prev = Some((t.1, m));
            t.1 = (t.1 + step).max(0.0);
        }
        let mut quiet = Vec::new();
        cal.dispatch_ms = dispatch_line(&targets, &mut quiet);
    }
    let speedups = [2, 4, 8, 16]
        .into_iter()
        .filter(|&d| d <= profile.max_degree())
        .map(|d| {
            let work: f64 = profile.requests().iter().map(|r| r.seq_ms()).sum();
            let time: f64 = profile
                .requests()
                .iter()
                .map(|r| r.seq_ms() / r.speedup(d))
                .sum();
            [d as f64, work / time]
        })
        .collect();
    cal.source = CalibrationSource {
        profile: input.profile_name.clone(),
        mean_t1_ms: mean_t1,
        speedups,
        runs,
        notes,
    };
    Ok(cal)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines_fit_by_least_squares() {
        let (a, b) = line(&[(0.0, 1.0), (1.0, 3.0), (2.0, 5.0)]);
        assert!((a - 1.0).abs() < 1e-12 && (b - 2.0).abs() < 1e-12);
        let (a, b) = line(&[(0.5, 2.0)]);
        assert_eq!((a, b), (2.0, 0.0));
    }
}
