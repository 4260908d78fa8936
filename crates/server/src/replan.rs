//! Re-planning the FM table from the requests a server serves, while it serves (issue 41).
//!
//! This goes beyond the FM paper, whose interval table is planned offline once from a
//! profile (Haque et al., ASPLOS 2015, §4). McKinley's loop is: profile online, optimize
//! online. Here every period the served window (`Runtime::served`, the profile of
//! `GET /profile`) becomes a profile; the table is planned again with the old table's n,
//! target parallelism, percentile and loads, and the grid and y that
//! `tailor_plan::FmDefaults` derives from the new profile. A guard then simulates the old
//! and the new table on the new profile at the rate served since the last period; the new
//! one swaps in (`Runtime::set_policy`) only if its simulated p99 is no worse.
//!
//! The wait and thread models are the planner's defaults: the table's JSON does not
//! record the ones it was planned with. Planning runs on one thread of its own, off the
//! request path, so that it takes at most one core from the requests for as long as the
//! search lasts.

use std::sync::Arc;
use std::time::{Duration, Instant};

use tailor_core::{Arrivals, Calibration, Demand, DemandModel, IntervalTable, Policy, Units};
use tailor_plan::{ladder, plan_fm, FmDefaults, FmParams, FmProblem};
use tailor_runtime::{Runtime, ServedRequest};
use tailor_sim::{simulate, SimConfig};

use crate::profile::served_profile;

/// The fewest served requests a plan is made from by default: a p99 over them rests on
/// at least five requests.
pub const DEFAULT_MIN_REQUESTS: usize = 500;
/// Simulated requests per table in the guard (the first 5% warm the model up).
const GUARD_REQUESTS: usize = 10_000;
/// The guard's simulated rate is kept within these fractions of capacity: an idle period
/// says nothing about the load to come, and past capacity every table's p99 grows
/// without bound.
const GUARD_LOADS: (f64, f64) = (0.05, 0.9);

/// How a server re-plans (`tailor serve --replan-every`).
#[derive(Debug, Clone, PartialEq)]
pub struct ReplanConfig {
    /// The period between plans.
    pub every: Duration,
    /// No plan is made from fewer served requests than this.
    pub min_requests: usize,
}

impl ReplanConfig {
    /// Every `every`, from at least [`DEFAULT_MIN_REQUESTS`] served requests.
    pub fn every(every: Duration) -> ReplanConfig {
        ReplanConfig {
            every,
            min_requests: DEFAULT_MIN_REQUESTS,
        }
    }
}

/// What one period's re-planning did.
#[derive(Debug, Clone, PartialEq)]
pub enum ReplanOutcome {
    /// The new table is in use.
    Swapped(Replanned),
    /// The guard kept the old table: the new one's simulated p99 was worse.
    Kept(Replanned),
    /// The new table has the old one's schedules and admissions at every load: nothing
    /// to swap.
    Unchanged(Replanned),
    /// No plan was made, and why.
    Skipped(String),
}

impl ReplanOutcome {
    /// The label of `tailor_replans_total{outcome}`.
    pub fn label(&self) -> &'static str {
        match self {
            ReplanOutcome::Swapped(_) => "swapped",
            ReplanOutcome::Kept(_) => "kept",
            ReplanOutcome::Unchanged(_) => "unchanged",
            ReplanOutcome::Skipped(_) => "skipped",
        }
    }
}

/// A plan and the guard's verdict on it.
#[derive(Debug, Clone, PartialEq)]
pub struct Replanned {
    /// The table planned.
    pub table: Arc<IntervalTable>,
    /// Served requests it was planned from.
    pub requests: usize,
    /// Their mean work, in ms.
    pub mean_work_ms: f64,
    /// The longest one's work, in ms.
    pub longest_ms: f64,
    /// The rate the guard simulated, in requests per second.
    pub guard_rps: f64,
    /// The old table's simulated p99 on the new profile, in ms.
    pub old_p99_ms: f64,
    /// The new table's, in ms.
    pub new_p99_ms: f64,
    /// How long the search and the guard took.
    pub took: Duration,
}

impl std::fmt::Display for ReplanOutcome {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let (verb, r) = match self {
            ReplanOutcome::Skipped(why) => return write!(f, "re-planning skipped: {why}"),
            ReplanOutcome::Swapped(r) => ("swapped in", r),
            ReplanOutcome::Kept(r) => ("kept the old table over", r),
            ReplanOutcome::Unchanged(r) => ("kept the old table, with the same schedules as", r),
        };
        write!(
            f,
            "re-planned from {} served requests (mean work {:.2} ms) in {:.2} s; {verb} the \
             new table: simulated p99 at {:.0}/s {:.2} ms new, {:.2} ms old (step {} ms, y {} ms)",
            r.requests,
            r.mean_work_ms,
            r.took.as_secs_f64(),
            r.guard_rps,
            r.new_p99_ms,
            r.old_p99_ms,
            r.table.step_ms,
            r.table.max_interval_ms,
        )
    }
}

/// Plans a table for `served` in place of `old` on `cores` cores, and simulates both at
/// `rps` (clamped to [`GUARD_LOADS`] of capacity; half of capacity when `None`) with the
/// runtime's self-scheduling quantum `quantum_ms`. The grid step is the profile's default
/// rounded up to a multiple of the quantum, which does not change while the runtime runs.
pub fn plan_from_served(
    served: &[ServedRequest],
    old: &Arc<IntervalTable>,
    cores: usize,
    quantum_ms: f64,
    rps: Option<f64>,
) -> Result<Replanned, String> {
    let started = Instant::now();
    let n = old.max_degree.max(1);
    let profile = served_profile(served, n)?.ok_or("nothing served yet")?;
    let defaults = FmDefaults::for_profile(&profile, cores, n);
    let quantum = quantum_ms.max(1e-3);
    let step_ms = quantum * (defaults.step_ms / quantum - 1e-9).ceil().max(1.0);
    let longest = profile
        .requests()
        .iter()
        .map(|r| r.seq_ms())
        .fold(0.0, f64::max);
    let params = FmParams {
        max_degree: n,
        target_parallelism: old.target_parallelism,
        step_ms,
        max_interval_ms: ((longest / step_ms).ceil() * step_ms).max(step_ms),
        percentile: old.percentile,
        max_load: old.rows.len().max(1),
        wait_model: Default::default(),
        thread_model: Default::default(),
    };
    let problem =
        FmProblem::with_degrees(&profile, params, &ladder(n)).map_err(|e| e.to_string())?;
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(1)
        .thread_name(|_| "tailor-replan".into())
        .build()
        .map_err(|e| format!("cannot start the planning thread: {e}"))?;
    let table = Arc::new(
        pool.install(|| plan_fm(&problem, None))
            .map_err(|e| e.to_string())?,
    );
    let demand = DemandModel::new(Demand::Profile(Arc::new(profile.clone())), None)
        .map_err(|e| e.to_string())?;
    let capacity = cores as f64 * 1000.0 / demand.mean_work_ms().max(1e-9);
    let guard_rps = rps
        .unwrap_or(0.5 * capacity)
        .clamp(GUARD_LOADS.0 * capacity, GUARD_LOADS.1 * capacity);
    // The guard cuts each simulated request into the served requests' median unit count.
    let mut counts: Vec<usize> = served.iter().map(|r| r.units_ms.len().max(1)).collect();
    counts.sort_unstable();
    let units = Units::Count(counts[counts.len() / 2]);
    let p99 = |table: &Arc<IntervalTable>| {
        simulated_p99(&demand, table, cores, (quantum, units), guard_rps)
    };
    let (old_p99_ms, new_p99_ms) = (p99(old)?, p99(&table)?);
    Ok(Replanned {
        table,
        requests: served.len(),
        mean_work_ms: demand.mean_work_ms(),
        longest_ms: longest,
        guard_rps,
        old_p99_ms,
        new_p99_ms,
        took: started.elapsed(),
    })
}

/// FM's p99 with `table` under the charged model without a calibration (units and
/// merges only, as `tailor plan fm`'s check), seeded alike for every table, at the
/// runtime's quantum with requests cut into `units`.
fn simulated_p99(
    demand: &DemandModel,
    table: &Arc<IntervalTable>,
    cores: usize,
    (quantum_ms, units): (f64, Units),
    rps: f64,
) -> Result<f64, String> {
    let mut cfg = SimConfig::new(
        cores,
        Policy::Fm {
            table: table.clone(),
            boost: true,
        },
        demand.clone(),
        Arrivals::Poisson,
        rps,
        GUARD_REQUESTS,
        1,
    );
    cfg.quantum_ms = quantum_ms;
    cfg.calibration = Some(Arc::new(Calibration::ideal(cores, units)));
    Ok(simulate(&cfg)
        .map_err(|e| e.to_string())?
        .summary
        .latency_ms
        .p99)
}

/// One period: plans from `runtime`'s served window and swaps the table in if the guard
/// allows. `rps` is the rate served since the last period.
pub fn replan_once(
    runtime: &Runtime,
    cores: usize,
    min_requests: usize,
    rps: Option<f64>,
) -> ReplanOutcome {
    let policy = runtime.policy();
    let Policy::Fm { table: old, boost } = &*policy else {
        return ReplanOutcome::Skipped(format!("the policy is {}, not fm", policy.name()));
    };
    let served = runtime.served();
    if served.len() < min_requests.max(1) {
        return ReplanOutcome::Skipped(format!(
            "{} served requests in the window, fewer than {}",
            served.len(),
            min_requests.max(1)
        ));
    }
    let planned = match plan_from_served(&served, old, cores, runtime.quantum_ms(), rps) {
        Ok(p) => p,
        Err(e) => return ReplanOutcome::Skipped(format!("planning failed: {e}")),
    };
    if same_schedules(old, &planned.table, planned.longest_ms) {
        return ReplanOutcome::Unchanged(planned);
    }
    if planned.new_p99_ms > planned.old_p99_ms {
        return ReplanOutcome::Kept(planned);
    }
    let new = Policy::Fm {
        table: planned.table.clone(),
        boost: *boost,
    };
    match runtime.set_policy(new) {
        Ok(()) => ReplanOutcome::Swapped(planned),
        Err(e) => ReplanOutcome::Skipped(format!("the runtime refused the table: {e}")),
    }
}

/// Whether two tables decide alike for requests of at most `longest_ms` of work: the same
/// admissions at every load; the same wait v0 (clipped at `longest_ms`) where a row
/// admits at once, since on an admit-on-exit row v0 is only the grid's y standing in for
/// "wait for an exit"; and the same times of each degree change up to `longest_ms` (a
/// change no request reaches is no change).
fn same_schedules(a: &IntervalTable, b: &IntervalTable, longest_ms: f64) -> bool {
    let changes = |v: &[f64]| -> Vec<f64> {
        v.iter()
            .skip(1)
            .scan(0.0, |at, x| {
                *at += x;
                Some(f64::min(*at, longest_ms))
            })
            .collect()
    };
    let wait = |v: &[f64]| v.first().copied().unwrap_or(0.0).min(longest_ms);
    a.max_degree == b.max_degree
        && a.rows.len() == b.rows.len()
        && a.rows.iter().zip(&b.rows).all(|(x, y)| {
            let (cx, cy) = (changes(&x.intervals_ms), changes(&y.intervals_ms));
            x.admit_on_exit == y.admit_on_exit
                && (x.admit_on_exit || (wait(&x.intervals_ms) - wait(&y.intervals_ms)).abs() < 1e-9)
                && cx.len() == cy.len()
                && cx.iter().zip(&cy).all(|(u, v)| (u - v).abs() < 1e-9)
        })
}

#[cfg(test)]
mod tests {
    use super::*;
    use tailor_core::IntervalRow;

    /// Requests of `work_ms` each, split into `units` equal units.
    fn served(works: &[f64], units: usize) -> Vec<ServedRequest> {
        works
            .iter()
            .map(|&w| ServedRequest {
                arrival: Instant::now(),
                units_ms: vec![w / units as f64; units],
                merge_ms: 0.0,
                max_degree: 1,
                latency_ms: w,
            })
            .collect()
    }

    /// A two-degree table that adds the helper at `v1` ms at every load.
    fn table(v1: f64, step_ms: f64) -> Arc<IntervalTable> {
        let rows = (1..=4)
            .map(|load| IntervalRow {
                load,
                intervals_ms: vec![0.0, v1],
                admit_on_exit: false,
                tail_ms: 0.0,
                mean_ms: 0.0,
                parallelism: 0.0,
            })
            .collect();
        Arc::new(IntervalTable {
            kind: tailor_core::INTERVAL_TABLE_KIND.into(),
            max_degree: 2,
            target_parallelism: 2.0,
            percentile: 0.99,
            step_ms,
            max_interval_ms: v1.max(step_ms),
            rows,
        })
    }

    #[test]
    fn a_plan_keeps_the_old_tables_shape_and_a_multiple_of_its_step() {
        // Works of 1..=30 ms: the defaults' step is the finest, 0.25 ms; the old step
        // of 0.1 ms rounds it up to 0.3.
        let works: Vec<f64> = (1..=30).map(f64::from).collect();
        let old = table(2.0, 0.1);
        let p = plan_from_served(&served(&works, 4), &old, 2, old.step_ms, Some(30.0)).unwrap();
        assert_eq!(p.table.max_degree, 2);
        assert_eq!(p.table.rows.len(), 4);
        assert_eq!(p.table.percentile, 0.99);
        assert!((p.table.step_ms - 0.3).abs() < 1e-9, "{}", p.table.step_ms);
        assert!(p.table.max_interval_ms >= 30.0);
        assert_eq!(p.requests, 30);
        assert!((p.mean_work_ms - 15.5).abs() < 1e-9);
        // Longer work coarsens the grid to an exact multiple of the old step: 40 ms wants
        // 0.5 ms, five steps of 0.1.
        let longer: Vec<f64> = (1..=40).map(f64::from).collect();
        let p = plan_from_served(&served(&longer, 4), &old, 2, old.step_ms, Some(30.0)).unwrap();
        assert!((p.table.step_ms - 0.5).abs() < 1e-9, "{}", p.table.step_ms);
        assert!(p.old_p99_ms > 0.0 && p.new_p99_ms > 0.0);
    }

    #[test]
    fn the_guard_rate_stays_within_the_loads_it_can_judge() {
        let works = vec![10.0; 50];
        let old = table(5.0, 0.25);
        // Capacity: 2 cores at 10 ms, 200/s.
        let idle = plan_from_served(&served(&works, 2), &old, 2, 0.25, Some(0.0)).unwrap();
        assert!((idle.guard_rps - 10.0).abs() < 1e-9, "{}", idle.guard_rps);
        let over = plan_from_served(&served(&works, 2), &old, 2, 0.25, Some(1e6)).unwrap();
        assert!((over.guard_rps - 180.0).abs() < 1e-9, "{}", over.guard_rps);
        let unknown = plan_from_served(&served(&works, 2), &old, 2, 0.25, None).unwrap();
        assert!((unknown.guard_rps - 100.0).abs() < 1e-9);
    }

    #[test]
    fn a_table_that_delays_every_request_is_replaced_and_a_seq_runtime_left_alone() {
        use tailor_runtime::{Runtime, RuntimeConfig};
        use tailor_workloads::{Spinner, SyntheticJob, SyntheticShape};
        // The old table makes every request wait 20 ms (v0) before it starts: any plan
        // from what was served beats it in the guard's simulation.
        let mut old = (*table(1.0, 0.25)).clone();
        for row in &mut old.rows {
            row.intervals_ms[0] = 20.0;
        }
        let old = Arc::new(old);
        let rt = Runtime::start(RuntimeConfig::new(
            2,
            Policy::Fm {
                table: old.clone(),
                boost: true,
            },
        ))
        .unwrap();
        let spinner = Arc::new(Spinner::calibrate());
        let handles: Vec<_> = (0..60)
            .map(|i| {
                let job = SyntheticJob::new(
                    1.0 + (i % 4) as f64,
                    SyntheticShape::amdahl(0.0),
                    spinner.clone(),
                );
                rt.submit(job).unwrap()
            })
            .collect();
        for h in handles {
            h.wait().unwrap();
        }
        // The last request is recorded just after its answer.
        let started = Instant::now();
        while rt.served().len() < 60 && started.elapsed() < Duration::from_secs(5) {
            std::thread::sleep(Duration::from_millis(5));
        }
        match replan_once(&rt, 2, 1000, None) {
            ReplanOutcome::Skipped(why) => assert!(why.contains("fewer than 1000"), "{why}"),
            other => panic!("{other}"),
        }
        assert_eq!(rt.policy_swaps().0, 0);
        let outcome = replan_once(&rt, 2, 50, Some(100.0));
        let ReplanOutcome::Swapped(planned) = &outcome else {
            panic!("{outcome}");
        };
        assert!(planned.new_p99_ms < planned.old_p99_ms, "{outcome}");
        assert_eq!(rt.policy_swaps().0, 1);
        let Policy::Fm { table: now, boost } = &*rt.policy() else {
            panic!("not fm");
        };
        assert!(*boost);
        assert!(now.rows.iter().all(|r| r.intervals_ms[0] < 20.0), "{now:?}");
        assert!(same_schedules(now, now, 1e9) && !same_schedules(now, &old, 1e9));
        // A degree change past the longest request is no change.
        assert!(same_schedules(&table(5.0, 0.25), &table(8.0, 0.25), 5.0));
        // On admit-on-exit rows v0 is y's stand-in: a new y is no change; where a row
        // admits at once, a longer wait is.
        let on_exit = |v0: f64| {
            let mut t = (*table(1.0, 0.25)).clone();
            for row in &mut t.rows {
                row.intervals_ms[0] = v0;
                row.admit_on_exit = true;
            }
            t
        };
        assert!(same_schedules(&on_exit(30.0), &on_exit(60.0), 100.0));
        let mut waits = on_exit(30.0);
        waits.rows.iter_mut().for_each(|r| r.admit_on_exit = false);
        let mut longer = waits.clone();
        longer
            .rows
            .iter_mut()
            .for_each(|r| r.intervals_ms[0] = 60.0);
        assert!(!same_schedules(&waits, &longer, 100.0));
        assert!(same_schedules(&waits, &longer, 20.0));
        assert!(!same_schedules(&table(5.0, 0.25), &table(8.0, 0.25), 10.0));
        // The same window planned again gives the same schedules: nothing to swap.
        let again = replan_once(&rt, 2, 50, Some(100.0));
        assert_eq!(again.label(), "unchanged", "{again}");
        assert_eq!(rt.policy_swaps().0, 1);
        rt.shutdown(tailor_runtime::Shutdown::Drain);

        let seq = Runtime::start(RuntimeConfig::new(2, Policy::Seq)).unwrap();
        match replan_once(&seq, 2, 1, None) {
            ReplanOutcome::Skipped(why) => assert!(why.contains("not fm"), "{why}"),
            other => panic!("{other}"),
        }
    }

    #[test]
    fn nothing_served_is_an_error_not_a_panic() {
        let e = plan_from_served(&[], &table(1.0, 0.25), 2, 0.25, None).unwrap_err();
        assert!(e.contains("nothing served"), "{e}");
    }
}
