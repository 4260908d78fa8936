//! GreenPar's end-to-end tests: the simulator under every policy on seeded synthetic days, checked against §B.3-B.5's rules and claims, and the planner against exhaustive search.

use std::collections::BTreeMap;

use rand::{RngExt, SeedableRng};
use rand_chacha::ChaCha8Rng;

use super::plan::{Instance, Load, Task};
use super::speedup::{allowed_servers, vm_choices, AppProfile};
use super::*;
use crate::EPOCH_H;

/// A job at `arrival_h` asking for `servers` servers for `runtime_h` hours.
fn job(id: usize, arrival_h: f64, servers: u32, runtime_h: f64, app: &str) -> Job {
    Job {
        id: format!("j{id}"),
        arrival_h,
        servers,
        runtime_h,
        green_sla: 0.0,
        app: app.to_string(),
        line: id as u64 + 2,
    }
}

/// A Grid5k-shaped day (§B.4): 26 jobs over 24 hours, 12 FT, 6 LU, 3 MG, 2 CG and one
/// each of SP, EP and IS, 1-8 requested servers, 1-8 hour runtimes; two jobs in three
/// arrive in working hours (7-17 h), as submissions to grids and HPC centers cluster
/// (the appendix does not give the trace's arrival times); seeded.
fn grid5k_like(seed: u64) -> Vec<Job> {
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let mut apps: Vec<&str> = Vec::new();
    for (app, count) in [
        ("ft", 12),
        ("lu", 6),
        ("mg", 3),
        ("cg", 2),
        ("sp", 1),
        ("ep", 1),
        ("is", 1),
    ] {
        apps.extend(std::iter::repeat_n(app, count));
    }
    let mut arrivals: Vec<f64> = (0..apps.len())
        .map(|_| {
            let h = if rng.random_range(0.0..1.0f64) < 2.0 / 3.0 {
                rng.random_range(7.0..17.0f64)
            } else {
                rng.random_range(0.0..22.0f64)
            };
            (h * 4.0).round() / 4.0
        })
        .collect();
    arrivals.sort_by(f64::total_cmp);
    // Shuffle the applications over the arrivals.
    for i in (1..apps.len()).rev() {
        apps.swap(i, rng.random_range(0..=i));
    }
    arrivals
        .iter()
        .zip(&apps)
        .enumerate()
        .map(|(i, (&a, app))| {
            let servers = [1, 2, 4, 8][rng.random_range(0..4usize)];
            let runtime = rng.random_range(1.0..8.0f64);
            job(i, a, servers, runtime, app)
        })
        .collect()
}

/// A sunny day: production a sine from 6 h to 19 h peaking at 1.5 kW (the datacenter's
/// peak, §B.4), 12.4 kWh in all (the High day's 12 kWh); 36 hours of epochs.
fn sunny() -> Solar {
    let kw = (0..144)
        .map(|e| {
            let t = e as f64 * EPOCH_H + EPOCH_H / 2.0;
            if (6.0..19.0).contains(&t) {
                1.5 * (std::f64::consts::PI * (t - 6.0) / 13.0).sin()
            } else {
                0.0
            }
        })
        .collect();
    Solar { kw }
}

/// Predictions issued every hour for the next 48 hours: the production times a seeded
/// error of up to `error` either way (0: perfect).
fn predicted(solar: &Solar, error: f64, seed: u64) -> Prediction {
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let mut issues = BTreeMap::new();
    for issue in (0..solar.kw.len()).step_by(4) {
        let list = (issue..issue + 192)
            .map(|e| {
                let f = 1.0 + error * rng.random_range(-1.0..1.0f64);
                (e, solar.kw_at(e) * f)
            })
            .collect();
        issues.insert(issue, list);
    }
    Prediction::from_issues(issues)
}

fn dark() -> Solar {
    Solar { kw: vec![0.0; 96] }
}

fn run(jobs: &[Job], solar: &Solar, cfg: &ParConfig, policy: ParPolicy) -> ParSummary {
    let prediction = predicted(solar, 0.0, 1);
    simulate_par(jobs, solar, &prediction, cfg, policy).unwrap()
}

#[test]
fn policies_parse_and_refuse_unknown_names() {
    for p in ParPolicy::ALL {
        assert_eq!(ParPolicy::parse(p.name()), Ok(p));
        assert_eq!(p.name().parse::<ParPolicy>(), Ok(p));
    }
    let e = ParPolicy::parse("greedy").unwrap_err().to_string();
    assert!(e.contains("`greedy`") && e.contains("nebulous"), "{e}");
}

#[test]
fn bad_inputs_are_refused_naming_the_job() {
    let solar = sunny();
    let p = predicted(&solar, 0.0, 1);
    let cfg = ParConfig::default();
    let e = simulate_par(
        &[job(0, 0.0, 2, 1.0, "hpl")],
        &solar,
        &p,
        &cfg,
        ParPolicy::Reactive,
    )
    .unwrap_err();
    assert!(
        matches!(&e, ParError::UnknownApp { job, line: 2, .. } if job == "j0"),
        "{e}"
    );
    assert!(e.to_string().contains("`hpl`") && e.to_string().contains("ft"));
    let small = ParConfig {
        servers: Some(4),
        ..ParConfig::default()
    };
    let e = simulate_par(
        &[job(0, 0.0, 8, 1.0, "ft")],
        &solar,
        &p,
        &small,
        ParPolicy::Baseline,
    )
    .unwrap_err();
    assert!(
        matches!(
            e,
            ParError::TooLarge {
                servers: 8,
                capacity: 4,
                ..
            }
        ),
        "{e}"
    );
    for bad in [
        ParConfig {
            slowdown: 0.9,
            ..ParConfig::default()
        },
        ParConfig {
            runtime_error: -1.0,
            ..ParConfig::default()
        },
        ParConfig {
            sleep_w: 40.0,
            ..ParConfig::default()
        },
        ParConfig {
            beta: f64::NAN,
            ..ParConfig::default()
        },
    ] {
        let e = simulate_par(
            &[job(0, 0.0, 2, 1.0, "ft")],
            &solar,
            &p,
            &bad,
            ParPolicy::Baseline,
        );
        assert!(matches!(e, Err(ParError::Config { .. })), "{bad:?}");
    }
    assert_eq!(
        simulate_par(&[], &solar, &p, &cfg, ParPolicy::Baseline),
        Err(ParError::NoJobs)
    );
}

#[test]
fn baseline_runs_two_vms_per_requested_server_on_n_servers() {
    let jobs = grid5k_like(7);
    let s = run(&jobs, &sunny(), &ParConfig::default(), ParPolicy::Baseline);
    assert_eq!(s.servers, 50);
    for (j, r) in jobs.iter().zip(&s.job_results) {
        assert_eq!(r.vms, 2 * j.servers, "{}", j.id);
        assert_eq!(
            (r.min_servers, r.max_servers),
            (j.servers, j.servers),
            "{}",
            j.id
        );
        assert!((r.runtime_h - j.runtime_h).abs() < 1e-6, "{}", j.id);
        assert_eq!(r.wait_h, 0.0);
    }
    assert_eq!(
        s.total_vms,
        jobs.iter().map(|j| 2 * j.servers as u64).sum::<u64>()
    );
    assert!(s.runtime_reduction.abs() < 1e-9);
    assert_eq!(s.migration_kwh, 0.0);
    assert_eq!(s.sla_violations, 0);
}

#[test]
fn every_job_completes_within_capacity_under_every_policy() {
    let solar = sunny();
    let crowded = ParConfig {
        servers: Some(12),
        ..ParConfig::default()
    };
    for (jobs, cfg) in [
        (grid5k_like(3), ParConfig::default()),
        (grid5k_like(11), crowded),
    ] {
        for policy in ParPolicy::ALL {
            let s = run(&jobs, &solar, &cfg, policy);
            assert_eq!(s.job_results.len(), jobs.len());
            for r in &s.job_results {
                assert!(
                    r.runtime_h.is_finite() && r.runtime_h > 0.0,
                    "{policy}: {r:?}"
                );
                assert!(r.max_servers <= s.servers && r.min_servers >= 1);
                assert!(allowed_servers(r.vms).contains(&r.min_servers));
                assert!(vm_choices(r.requested).contains(&r.vms));
            }
            assert!(s.peak_servers <= s.servers, "{policy}: {}", s.peak_servers);
            assert!(s.epochs.iter().all(|e| e.servers <= s.servers));
            let total: f64 = s
                .epochs
                .iter()
                .map(|e| (e.brown_kw + e.green_other_kw) * EPOCH_H)
                .sum();
            assert!((total - s.energy_kwh).abs() < 1e-6);
            assert!(s.green_kwh <= s.produced_kwh + 1e-9);
        }
    }
}

#[test]
fn jobs_wait_and_policies_revert_to_requested_allocations() {
    // Two jobs fill 8 servers; a third waits 2 h in full sun. While it waits, Reactive
    // may not grow the first two; once alone, it grows the third.
    let jobs = [
        job(0, 0.0, 4, 2.0, "is"),
        job(1, 0.0, 4, 2.0, "is"),
        job(2, 0.0, 4, 2.0, "is"),
    ];
    let solar = Solar { kw: vec![1.5; 48] };
    let cfg = ParConfig {
        servers: Some(8),
        ..ParConfig::default()
    };
    for policy in [
        ParPolicy::Reactive,
        ParPolicy::Aggressive,
        ParPolicy::Offline,
    ] {
        let s = run(&jobs, &solar, &cfg, policy);
        let r = &s.job_results;
        assert_eq!((r[0].max_servers, r[1].max_servers), (4, 4), "{policy}");
        assert!((r[0].runtime_h - 2.0).abs() < 1e-9, "{policy}");
        assert!((r[2].wait_h - 2.0).abs() < 1e-9, "{policy}");
        assert_eq!(
            r[2].vms, 8,
            "{policy}: a job that waited starts with 2N VMs"
        );
        assert!(
            r[2].max_servers == 8 && r[2].runtime_h < 2.0,
            "{policy}: {:?}",
            r[2]
        );
        assert_eq!(s.waited, 1);
    }
}

#[test]
fn green_aware_policies_use_less_brown_and_run_faster_on_a_sunny_day() {
    let solar = sunny();
    let cfg = ParConfig::default();
    for seed in [1, 2, 3] {
        let jobs = grid5k_like(seed);
        let base = run(&jobs, &solar, &cfg, ParPolicy::Baseline);
        let mut brown = BTreeMap::new();
        for policy in ParPolicy::ALL {
            let s = run(&jobs, &solar, &cfg, policy);
            eprintln!(
                "seed {seed} {policy:>10}: brown {:6.2} kWh, green {:6.2} kWh, mean runtime {:5.2} h ({:+5.1}%), VMs {}, violations {}",
                s.brown_kwh,
                s.green_kwh,
                s.mean_runtime_h,
                -100.0 * s.runtime_reduction,
                s.total_vms,
                s.sla_violations
            );
            brown.insert(policy.name(), s.brown_kwh);
            if policy == ParPolicy::Baseline {
                continue;
            }
            assert!(
                s.brown_kwh < base.brown_kwh,
                "{seed} {policy}: {} vs {}",
                s.brown_kwh,
                base.brown_kwh
            );
            assert!(s.mean_runtime_h < base.mean_runtime_h, "{seed} {policy}");
            assert!(s.green_kwh > base.green_kwh, "{seed} {policy}");
            if policy != ParPolicy::Nebulous {
                assert_eq!(s.sla_violations, 0, "{seed} {policy}");
            }
        }
        // §B.5: Aggressive uses about 1% more brown energy than Offline. Ours uses 0-7%
        // more (4% on average over ten such days): it cannot foresee arrivals, and its
        // SLA guard forbids slowing a job now to catch up later.
        let gap = brown["aggressive"] / brown["offline"] - 1.0;
        assert!(
            (0.0..0.08).contains(&gap),
            "seed {seed}: Aggressive {gap:+.3} against Offline"
        );
    }
}

/// Issue 43's acceptance on the generated High day (`crate::generate`, Grid5k-shaped):
/// every green-aware policy uses less brown energy than Baseline and shortens the mean
/// runtime (§B.5, Fig. B.7).
#[test]
fn green_aware_policies_beat_baseline_on_the_generated_high_day() {
    use crate::generate::{generate, Day, System, Workload};
    let cfg = ParConfig::default();
    for seed in 1..=5 {
        let g = generate(Workload::Grid5k, Day::High, System::Par, seed);
        let sim = |p| simulate_par(&g.jobs, &g.solar, &g.prediction, &cfg, p).unwrap();
        let base = sim(ParPolicy::Baseline);
        for policy in ParPolicy::ALL.into_iter().skip(1) {
            let s = sim(policy);
            assert!(
                s.brown_kwh < base.brown_kwh,
                "seed {seed} {policy}: {} vs {}",
                s.brown_kwh,
                base.brown_kwh
            );
            assert!(
                s.mean_runtime_h < base.mean_runtime_h,
                "seed {seed} {policy}"
            );
            if policy != ParPolicy::Nebulous {
                assert_eq!(s.sla_violations, 0, "seed {seed} {policy}");
            }
        }
    }
}

#[test]
fn nebulous_keeps_average_allocations_at_n_over_f() {
    let jobs = grid5k_like(5);
    let cfg = ParConfig::default();
    let s = run(&jobs, &sunny(), &cfg, ParPolicy::Nebulous);
    for r in &s.job_results {
        assert!(
            r.mean_servers >= r.requested as f64 / cfg.slowdown - 1e-9,
            "{r:?}"
        );
    }
}

#[test]
fn f_of_one_leaves_no_slack_to_shrink() {
    let jobs = grid5k_like(9);
    let cfg = ParConfig {
        slowdown: 1.0,
        ..ParConfig::default()
    };
    let base = run(&jobs, &dark(), &cfg, ParPolicy::Baseline);
    // Without green energy nothing grows, so nothing earns slack: Reactive and Nebulous
    // run exactly the Baseline.
    for policy in [ParPolicy::Reactive, ParPolicy::Nebulous] {
        let s = run(&jobs, &dark(), &cfg, policy);
        for r in &s.job_results {
            assert_eq!(
                (r.min_servers, r.max_servers),
                (r.requested, r.requested),
                "{policy}"
            );
        }
        assert!((s.brown_kwh - base.brown_kwh).abs() < 1e-9, "{policy}");
    }
    // No policy slows a job, in the dark or in the sun, save Nebulous, whose SLA is on
    // allocations (§B.3.2): it keeps each job's average servers at N.
    for solar in [dark(), sunny()] {
        for policy in ParPolicy::ALL {
            let s = run(&jobs, &solar, &cfg, policy);
            if policy == ParPolicy::Nebulous {
                assert!(s
                    .job_results
                    .iter()
                    .all(|r| r.mean_servers >= r.requested as f64 - 1e-9));
                continue;
            }
            assert_eq!(s.sla_violations, 0, "{policy}");
            assert!(s.max_slowdown <= 1.0 + 1e-6, "{policy}: {}", s.max_slowdown);
        }
    }
    // With slack, Reactive consolidates at night and saves brown energy.
    let loose = ParConfig {
        slowdown: 1.5,
        ..ParConfig::default()
    };
    let s = run(&jobs, &dark(), &loose, ParPolicy::Reactive);
    assert!(s.job_results.iter().any(|r| r.min_servers < r.requested));
    assert!(s.brown_kwh < base.brown_kwh);
    assert!(s.max_slowdown <= 1.5 + 1e-6);
}

#[test]
fn runtime_estimate_errors_and_prediction_errors_still_run() {
    let jobs = grid5k_like(4);
    let solar = sunny();
    let noisy = predicted(&solar, 0.3, 8);
    let base = simulate_par(
        &jobs,
        &solar,
        &noisy,
        &ParConfig::default(),
        ParPolicy::Baseline,
    )
    .unwrap();
    for error in [-0.25, 0.25] {
        let cfg = ParConfig {
            runtime_error: error,
            ..ParConfig::default()
        };
        for policy in [ParPolicy::Aggressive, ParPolicy::Nebulous] {
            let s = simulate_par(&jobs, &solar, &noisy, &cfg, policy).unwrap();
            eprintln!(
                "error {error:+} {policy}: brown {:.2} (baseline {:.2}), runtime {:.2} h, violations {}",
                s.brown_kwh, base.brown_kwh, s.mean_runtime_h, s.sla_violations
            );
            assert!(s.brown_kwh < base.brown_kwh, "{error} {policy}");
        }
    }
}

/// Every schedule of one task over a few epochs, by brute force: the cheapest cost.
fn exhaustive(inst: &Instance<'_>, task: &Task) -> f64 {
    let mut best = f64::INFINITY;
    for vms in vm_choices(task.requested) {
        let options = allowed_servers(vms);
        let len = 6;
        let mut seq = vec![0usize; len];
        loop {
            let servers: Vec<u32> = seq.iter().map(|&i| options[i]).collect();
            let plan = inst.replay(task, vms, &servers);
            if plan.servers.len() <= len {
                best = best.min(inst.cost(&Load::default(), task, &plan));
            }
            // Next sequence in odometer order.
            let mut i = 0;
            while i < len {
                seq[i] += 1;
                if seq[i] < options.len() {
                    break;
                }
                seq[i] = 0;
                i += 1;
            }
            if i == len {
                break;
            }
        }
    }
    best
}

#[test]
fn a_jobs_best_response_matches_exhaustive_search() {
    let cfg = ParConfig::default();
    let mut rng = ChaCha8Rng::seed_from_u64(42);
    for case in 0..40 {
        let app = ["ft", "is", "ep", "lu", "cg"][case % 5];
        let requested = [1, 2, 4, 8][rng.random_range(0..4usize)];
        let runtime = rng.random_range(0.3..1.0f64);
        let now = rng.random_range(0.0..0.25f64);
        let green: Vec<f64> = (0..8).map(|_| rng.random_range(0.0..0.6f64)).collect();
        let inst = Instance::new(&cfg, 50, now, 7, 1 + case % 3, |e| green[e]);
        let task = Task {
            job: 0,
            requested,
            profile: AppProfile::of(app).unwrap(),
            vms: None,
            servers_now: None,
            start_h: now,
            from_h: now,
            remaining_h: runtime,
            deadline_h: now + 1.1 * runtime,
            guarded: false,
        };
        let oracle = exhaustive(&inst, &task);
        let (plan, cost) = inst.best_response(&Load::default(), &task).unwrap();
        assert!((inst.cost(&Load::default(), &task, &plan) - cost).abs() < 1e-12);
        // The progress grid may lose a little, never gain.
        assert!(
            cost >= oracle - 1e-12 || plan.servers.len() > 6,
            "case {case}"
        );
        assert!(
            cost <= oracle + 1e-4 * oracle.abs().max(1.0),
            "case {case}: {cost} vs {oracle}"
        );
        assert!(plan.finish_h <= task.deadline_h + 1e-9, "case {case}");
    }
}

#[test]
fn coordinate_descent_never_loses_to_the_requested_allocations() {
    let cfg = ParConfig::default();
    let mut rng = ChaCha8Rng::seed_from_u64(17);
    for case in 0..10 {
        let green: Vec<f64> = (0..200).map(|_| rng.random_range(0.0..1.5f64)).collect();
        let tasks: Vec<Task> = (0..6)
            .map(|j| {
                let requested = [1, 2, 4, 8][rng.random_range(0..4usize)];
                let start = rng.random_range(0.0..4.0f64);
                let runtime = rng.random_range(0.5..4.0f64);
                Task {
                    job: j,
                    requested,
                    profile: AppProfile::of(["ft", "is", "ep", "mg"][j % 4]).unwrap(),
                    vms: None,
                    servers_now: None,
                    start_h: start,
                    from_h: start,
                    remaining_h: runtime,
                    deadline_h: start + 1.1 * runtime,
                    guarded: j % 2 == 0,
                }
            })
            .collect();
        let last = tasks.iter().map(Instance::last_epoch_for).max().unwrap();
        // Enough servers for every job's request at once, but not for all to grow.
        let capacity = tasks.iter().map(|t| t.requested).sum::<u32>();
        let inst = Instance::new(&cfg, capacity, 0.0, last, tasks.len(), |e| {
            green[e.min(199)]
        });
        let start: Vec<_> = tasks.iter().map(|t| inst.start(t)).collect();
        let order: Vec<usize> = (0..tasks.len()).collect();
        let plans = inst.solve(&tasks, start.clone(), &order);
        let (before, after) = (
            inst.objective(&tasks, &start),
            inst.objective(&tasks, &plans),
        );
        assert!(after <= before + 1e-9, "case {case}: {after} > {before}");
        for (t, p) in tasks.iter().zip(&plans) {
            assert!(p.finish_h <= t.deadline_h + 1e-9, "case {case}");
        }
        // Capacity holds epoch by epoch.
        let mut load = Load::default();
        for p in &plans {
            load.add(&inst, p, 1.0);
        }
        for e in 0..=last {
            let busy: u32 = plans.iter().filter_map(|p| p.servers_at(e)).sum();
            assert!(busy <= capacity, "case {case} epoch {e}: {busy}");
        }
    }
}

/// Not a check: prints each policy's mean brown energy, green energy and runtime over ten
/// sunny days, and the sensitivity to F and to runtime estimate errors (§B.5), for the
/// docs. `cargo test --release -p tailor-green par::tests::report -- --ignored --nocapture`.
#[test]
#[ignore = "prints the numbers for the docs"]
fn report() {
    let solar = sunny();
    let mut sums: BTreeMap<String, (f64, f64, f64, f64, f64, usize)> = BTreeMap::new();
    for seed in 1..=10 {
        let jobs = grid5k_like(seed);
        let base = run(&jobs, &solar, &ParConfig::default(), ParPolicy::Baseline);
        let mut cases: Vec<(String, ParPolicy, ParConfig)> = ParPolicy::ALL
            .iter()
            .map(|&p| (p.name().to_string(), p, ParConfig::default()))
            .collect();
        for f in [1.0, 1.5] {
            for p in [
                ParPolicy::Reactive,
                ParPolicy::Aggressive,
                ParPolicy::Offline,
            ] {
                cases.push((
                    format!("{p} F={f}"),
                    p,
                    ParConfig {
                        slowdown: f,
                        ..ParConfig::default()
                    },
                ));
            }
        }
        for err in [-0.25, 0.25] {
            cases.push((
                format!("aggressive err={err:+}"),
                ParPolicy::Aggressive,
                ParConfig {
                    runtime_error: err,
                    ..ParConfig::default()
                },
            ));
        }
        for (name, p, cfg) in cases {
            let t = std::time::Instant::now();
            let s = run(&jobs, &solar, &cfg, p);
            let el = t.elapsed().as_secs_f64();
            let e = sums.entry(name).or_default();
            e.0 += s.brown_kwh;
            e.1 += s.green_kwh;
            e.2 += s.mean_runtime_h;
            e.3 += 1.0 - s.brown_kwh / base.brown_kwh;
            e.4 += 1.0 - s.mean_runtime_h / base.mean_runtime_h;
            e.5 += s.sla_violations;
            if seed == 1 {
                eprintln!(
                    "seed1 {:>22}: brown {:.2} green {:.2} runtime {:.2} VMs {} viol {} {el:.2}s",
                    s.policy,
                    s.brown_kwh,
                    s.green_kwh,
                    s.mean_runtime_h,
                    s.total_vms,
                    s.sla_violations
                );
            }
        }
    }
    for (name, (b, g, r, db, dr, v)) in sums {
        eprintln!("{name:>22}: brown {:.2} kWh green {:.2} kWh runtime {:.2} h | brown -{:.1}% runtime -{:.1}% vs Baseline | violations {v}", b / 10.0, g / 10.0, r / 10.0, db * 10.0, dr * 10.0);
    }
}

/// Not a check: prints every policy's numbers on generated days (`crate::generate`), for
/// the docs.
#[test]
#[ignore = "prints the numbers for the docs"]
fn report_generated() {
    use crate::generate::{generate, Day, System, Workload};
    for (w, d) in [
        (Workload::Grid5k, Day::High),
        (Workload::Intrepid, Day::High),
        (Workload::Grid5k, Day::Medium),
        (Workload::Grid5k, Day::Low),
    ] {
        for seed in 1..=3 {
            let g = generate(w, d, System::Par, seed);
            let base = simulate_par(
                &g.jobs,
                &g.solar,
                &g.prediction,
                &ParConfig::default(),
                ParPolicy::Baseline,
            )
            .unwrap();
            for p in ParPolicy::ALL {
                let t = std::time::Instant::now();
                let s = simulate_par(&g.jobs, &g.solar, &g.prediction, &ParConfig::default(), p)
                    .unwrap();
                eprintln!("{} {} seed {seed} {:>10}: brown {:8.4} green {:6.2} runtime {:5.2} h | brown {:+6.2}% runtime {:+5.1}% | VMs {} viol {} waited {} servers {} | {:.2}s",
                    w.name(), d.name(), s.policy, s.brown_kwh, s.green_kwh, s.mean_runtime_h,
                    100.0 * (s.brown_kwh / base.brown_kwh - 1.0), 100.0 * (s.mean_runtime_h / base.mean_runtime_h - 1.0),
                    s.total_vms, s.sla_violations, s.waited, s.servers, t.elapsed().as_secs_f64());
            }
        }
    }
}
