//! Tests of the whole simulator: hand-computed runs, the baselines' rules, energy balance, determinism, and (ignored, run in release) the acceptance comparison on the Grid5k-shaped workload.

use std::collections::BTreeMap;
use std::time::Instant;

use super::*;
use crate::generate::{generate, Day, System, Workload};
use crate::{Job, Prediction, Solar, EPOCH_H};

fn job(id: &str, arrival_h: f64, servers: u32, runtime_h: f64, green_sla: f64) -> Job {
    Job {
        id: id.into(),
        arrival_h,
        servers,
        runtime_h,
        green_sla,
        app: String::new(),
        line: 2,
    }
}

/// One prediction, issued at 0, for every epoch of `kw`.
fn issued_once(kw: &[f64]) -> Prediction {
    Prediction::from_issues(BTreeMap::from([(
        0,
        kw.iter().copied().enumerate().collect(),
    )]))
}

/// Two racks of one server: a rack's full power is 0.14 kW.
fn two_racks() -> SlaConfig {
    SlaConfig {
        racks: 2,
        rack_capacity: 1,
        ..SlaConfig::default()
    }
}

fn run(jobs: &[Job], solar: &[f64], predicted: &[f64], policy: SlaPolicy) -> SlaSummary {
    let solar = Solar { kw: solar.to_vec() };
    simulate_sla(jobs, &solar, &issued_once(predicted), &two_racks(), policy).unwrap()
}

fn close(a: f64, b: f64) -> bool {
    (a - b).abs() < 1e-9
}

/// Brown energy for `slots` slots, dollars: 140 W for 15 minutes at 10.55 c/kWh.
fn brown(slots: f64) -> f64 {
    slots * 0.035 * 0.1055
}

#[test]
fn the_appendix_example_under_each_policy() {
    // §A.5.1's example: one VM for one hour with a 100% Green SLA.
    let jobs = [job("a", 0.0, 1, 1.0, 100.0)];
    let sun = [0.14; 4];
    let half = [0.14, 0.14, 0.0, 0.0];
    let dark = [0.0; 4];
    for policy in SlaPolicy::ALL {
        // Enough sun for one full rack throughout: met, $0.29, no brown energy.
        let s = run(&jobs, &sun, &sun, policy);
        assert_eq!((s.admitted, s.violations), (1, 0), "{policy}");
        assert!(close(s.profit, 0.29), "{policy}: {}", s.profit);
        assert!(
            close(s.green_sla_kwh, 0.14) && close(s.brown_kwh, 0.0),
            "{policy}"
        );
        // Sun for the first half hour: missed by half. $0.29 − $0.25 and the brown half
        // hour; SGP, which will not miss, rejects it.
        let s = run(&jobs, &half, &half, policy);
        if policy == SlaPolicy::Sgp {
            assert_eq!((s.admitted, s.rejected, s.profit), (0, 1, 0.0));
        } else {
            assert_eq!((s.admitted, s.violations), (1, 1), "{policy}");
            assert!(close(s.profit, 0.04 - brown(2.0)), "{policy}: {}", s.profit);
            assert!(close(s.missed_green_vm_hours, 0.5));
        }
        // No sun: only FF, blind to energy, admits it, and pays $0.21 and an hour of
        // brown energy.
        let s = run(&jobs, &dark, &dark, policy);
        if policy == SlaPolicy::Ff {
            assert_eq!((s.admitted, s.violations), (1, 1));
            assert!(close(s.profit, -0.21 - brown(4.0)), "{}", s.profit);
            assert!(close(s.penalty, 0.5) && close(s.revenue, 0.29));
        } else {
            assert_eq!((s.admitted, s.rejected, s.profit), (0, 1, 0.0), "{policy}");
        }
        // Sun predicted but none comes: every policy that admits it pays.
        let s = run(&jobs, &dark, &sun, policy);
        if s.admitted == 1 {
            assert_eq!(s.violations, 1);
            assert!(
                close(s.profit, -0.21 - brown(4.0)),
                "{policy}: {}",
                s.profit
            );
        }
        assert_eq!(s.admitted, 1, "{policy} trusts the prediction");
    }
}

#[test]
fn green_aware_policies_give_the_green_rack_to_the_job_that_needs_it() {
    // Sun for one rack. A 100%-SLA job arrives first, then a 0% one. FF puts the
    // first on rack 0 (the brownest) and the second on rack 1, which the sun then
    // powers: the SLA is missed. The others put the SLA job on the green rack.
    let jobs = [
        job("green", 0.0, 1, 1.0, 100.0),
        job("any", 0.0, 1, 1.0, 0.0),
    ];
    let sun = [0.14; 4];
    for policy in SlaPolicy::ALL {
        let s = run(&jobs, &sun, &sun, policy);
        assert_eq!(s.admitted, 2, "{policy}");
        let want = usize::from(policy == SlaPolicy::Ff);
        assert_eq!(s.violations, want, "{policy}");
        // Revenue 0.29 + 0.24; the brown rack's hour of energy either way.
        let penalty = if want == 1 { 0.5 } else { 0.0 };
        assert!(
            close(s.profit, 0.53 - penalty - brown(4.0)),
            "{policy}: {}",
            s.profit
        );
        assert_eq!(s.migrations, 0);
    }
}

#[test]
fn energy_balances_and_the_profile_adds_up() {
    let g = generate(Workload::Grid5k, Day::Medium, System::Sla, 7);
    let cfg = SlaConfig::default();
    for policy in [SlaPolicy::Ff, SlaPolicy::Sgp, SlaPolicy::Lp] {
        let s = simulate_sla(&g.jobs, &g.solar, &g.prediction, &cfg, policy).unwrap();
        assert_eq!(s.admitted + s.rejected, g.jobs.len());
        assert!(close(s.profit, s.revenue - s.penalty - s.brown_cost));
        assert!(close(s.brown_cost, s.brown_kwh * cfg.energy_price));
        let (mut green, mut brown, mut demand) = (0.0, 0.0, 0.0);
        for e in &s.epochs {
            assert!(e.green_sla_kw + e.green_other_kw <= e.produced_kw + 1e-9);
            assert!(e.servers <= 42 * 40);
            green += (e.green_sla_kw + e.green_other_kw) * EPOCH_H;
            brown += e.brown_kw * EPOCH_H;
            demand += e.servers as f64 * cfg.slot_kwh();
        }
        demand += s.migrations as f64 * cfg.migration_kwh;
        assert!(
            close(green, s.green_kwh) && close(brown, s.brown_kwh),
            "{policy}"
        );
        assert!(
            (green + brown - demand).abs() < 1e-6,
            "{policy}: {green} + {brown} vs {demand}"
        );
        assert!(s.green_sla_kwh <= s.green_kwh);
        assert!((s.produced_kwh - g.solar.total_kwh()).abs() < 1e-6);
        match policy {
            // The workload's peak (1,654 VMs) fits in 1,680 servers: FF admits all.
            SlaPolicy::Ff => assert_eq!(s.rejected, 0),
            // SGP never migrates.
            SlaPolicy::Sgp => assert_eq!(s.migrations, 0),
            _ => assert!(s.scheduler.milp_solves > 0),
        }
    }
}

#[test]
fn ff_admits_everything_that_fits_and_sgp_never_migrates_in_a_crowded_datacenter() {
    // Jobs of 1-3 VMs on 3 racks of 2 servers, arriving every half hour for 2 hours:
    // more than fit at once, so some are rejected.
    let jobs: Vec<Job> = (0..24)
        .map(|i| {
            job(
                &i.to_string(),
                i as f64 * 0.5,
                1 + i % 3,
                1.0 + (i % 4) as f64,
                25.0 * (i % 5) as f64,
            )
        })
        .collect();
    let kw: Vec<f64> = (0..60)
        .map(|t| if (8..40).contains(&t) { 0.5 } else { 0.0 })
        .collect();
    let solar = Solar { kw: kw.clone() };
    let cfg = SlaConfig {
        racks: 3,
        rack_capacity: 2,
        ..SlaConfig::default()
    };
    let ff = simulate_sla(&jobs, &solar, &issued_once(&kw), &cfg, SlaPolicy::Ff).unwrap();
    // Rebuild FF's decisions: a job is admitted exactly when every epoch of its run
    // has room beside the jobs admitted before it.
    let mut used = vec![0u32; 80];
    let mut admitted = 0;
    for j in &jobs {
        let start = (j.arrival_h / EPOCH_H).round() as usize;
        let epochs = (j.runtime_h / EPOCH_H).round() as usize;
        if (start..start + epochs).all(|t| used[t] + j.servers <= 6) {
            (start..start + epochs).for_each(|t| used[t] += j.servers);
            admitted += 1;
        }
    }
    assert!(admitted < jobs.len());
    assert_eq!(ff.admitted, admitted);
    let sgp = simulate_sla(&jobs, &solar, &issued_once(&kw), &cfg, SlaPolicy::Sgp).unwrap();
    assert_eq!(sgp.migrations, 0);
    assert!(sgp.admitted > 0 && sgp.rejected > 0);
}

#[test]
fn a_run_repeats_exactly_with_its_seed() {
    let g = generate(Workload::Grid5k, Day::Medium, System::Sla, 3);
    // The first 12 hours, to keep the test short.
    let jobs: Vec<Job> = g.jobs.into_iter().filter(|j| j.arrival_h < 12.0).collect();
    let cfg = SlaConfig {
        sa_moves_per_job: 0.3,
        ..SlaConfig::default()
    };
    let strip = |mut s: SlaSummary| {
        s.scheduler = SchedulerStats {
            milp_mean_ms: 0.0,
            milp_max_ms: 0.0,
            run_mean_ms: 0.0,
            run_max_ms: 0.0,
            ..s.scheduler
        };
        s
    };
    let a = strip(simulate_sla(&jobs, &g.solar, &g.prediction, &cfg, SlaPolicy::Sa).unwrap());
    let b = strip(simulate_sla(&jobs, &g.solar, &g.prediction, &cfg, SlaPolicy::Sa).unwrap());
    assert_eq!(a.scheduler.milp_time_limited, 0);
    assert_eq!(a, b);
    assert!(a.migrations > 0, "SA moves VMs of admitted jobs");
}

#[test]
fn bad_settings_and_endless_jobs_are_refused() {
    let solar = Solar { kw: vec![0.0; 4] };
    let p = issued_once(&[0.0; 4]);
    let cfg = SlaConfig {
        penalty: f64::NAN,
        ..SlaConfig::default()
    };
    let e = simulate_sla(&[], &solar, &p, &cfg, SlaPolicy::Ff).unwrap_err();
    assert!(
        matches!(
            e,
            SlaError::Config {
                field: "penalty",
                ..
            }
        ),
        "{e}"
    );
    let jobs = [job("forever", 1.0, 1, 1e6, 0.0)];
    let e = simulate_sla(&jobs, &solar, &p, &SlaConfig::default(), SlaPolicy::Ff)
        .unwrap_err()
        .to_string();
    assert!(e.contains("`forever` (line 2)"), "{e}");
    // No jobs: nothing earned, the sun unused.
    let s = simulate_sla(
        &[],
        &Solar { kw: vec![1.0; 4] },
        &p,
        &SlaConfig::default(),
        SlaPolicy::Sa,
    )
    .unwrap();
    assert_eq!((s.admitted, s.profit, s.epochs.len()), (0, 0.0, 4));
    assert!(close(s.produced_kwh, 1.0) && close(s.green_kwh, 0.0));
}

/// The issue's acceptance on the generated Medium days and Grid5k-shaped workload
/// (§A.5.2, Fig. A.5's ordering), seed 1: about 25 s, so CI runs it.
#[test]
fn acceptance_grid5k_medium_seed_1() {
    acceptance_grid5k_medium(1..=1);
}

/// The same on seeds 2 and 3 (scripts/reproduce-green.py runs seeds 1-5). About 60 s in
/// release on 2 cores.
#[test]
#[ignore = "slow: cargo test --release -p tailor-green acceptance -- --ignored --nocapture"]
fn acceptance_grid5k_medium_seeds_2_3() {
    acceptance_grid5k_medium(2..=3);
}

/// Fig. A.5's ordering on each seed: SA and LP above FF and SGP, FF the most violations,
/// SGP the fewest, SA and LP within 5%.
fn acceptance_grid5k_medium(seeds: std::ops::RangeInclusive<u64>) {
    let cfg = SlaConfig::default();
    for seed in seeds {
        let g = generate(Workload::Grid5k, Day::Medium, System::Sla, seed);
        let mut by = BTreeMap::new();
        for policy in SlaPolicy::ALL {
            let started = Instant::now();
            let s = simulate_sla(&g.jobs, &g.solar, &g.prediction, &cfg, policy).unwrap();
            println!(
                "seed {seed} {policy:>3}: profit {:8.2} ({:5.1}% of SA) revenue {:8.2} penalty {:7.2} brown ${:6.2} \
                 admitted {} violations {} green {:.0} kWh (SLA {:.0}) brown {:.0} kWh migrations {} \
                 in {:.1} s; scheduler runs {} reruns {}, MILPs {} mean {:.2} ms max {:.1} ms, runs mean {:.1} ms max {:.0} ms",
                s.profit,
                by.get(&SlaPolicy::Sa).map_or(100.0, |sa: &SlaSummary| 100.0 * s.profit / sa.profit),
                s.revenue, s.penalty, s.brown_cost, s.admitted, s.violations, s.green_kwh,
                s.green_sla_kwh, s.brown_kwh, s.migrations, started.elapsed().as_secs_f64(),
                s.scheduler.runs, s.scheduler.reruns, s.scheduler.milp_solves, s.scheduler.milp_mean_ms,
                s.scheduler.milp_max_ms, s.scheduler.run_mean_ms, s.scheduler.run_max_ms,
            );
            by.insert(policy, s);
        }
        let [sa, lp, ff, sgp] = SlaPolicy::ALL.map(|p| &by[&p]);
        for opt in [sa, lp] {
            for greedy in [ff, sgp] {
                assert!(
                    opt.profit > greedy.profit,
                    "seed {seed}: {} vs {}",
                    opt.policy,
                    greedy.policy
                );
            }
        }
        assert!(
            ff.violations > sa.violations.max(lp.violations).max(sgp.violations),
            "seed {seed}"
        );
        assert!(
            sgp.violations < sa.violations.min(lp.violations).min(ff.violations),
            "seed {seed}"
        );
        assert!(
            (sa.profit - lp.profit).abs() <= 0.05 * sa.profit.max(lp.profit),
            "seed {seed}"
        );
    }
}

/// The solver's justification (issue 43): on the arrivals of the first day of the
/// Grid5k-shaped workload, placed as LP places them, the exact model of §A.4.4 against
/// the reduced one, in solve time and objective. Prints; asserts only that the reduced
/// model is never better than the exact optimum and is faster overall.
#[test]
#[ignore = "slow: cargo test --release -p tailor-green solve_times -- --ignored --nocapture"]
fn solve_times_exact_vs_reduced() {
    use super::datacenter::{Datacenter, Plan, Schedule};
    use super::forecast::{Forecast, ToPlace};
    use super::milp::{solve, MilpStats, Model};
    use super::profit::JobTerms;

    let g = generate(Workload::Grid5k, Day::Medium, System::Sla, 1);
    let cfg = SlaConfig::default();
    let mut schedule = Schedule::new(Datacenter::new(cfg.racks, cfg.rack_capacity, 2000));
    let (mut exact, mut reduced) = (MilpStats::default(), MilpStats::default());
    let (mut compared, mut worse, mut excess) = (0, 0, 0.0f64);
    let (mut small_exact_s, mut small_reduced_s) = (0.0, 0.0);
    for (i, job) in g
        .jobs
        .iter()
        .enumerate()
        .filter(|(_, j)| j.arrival_h < 24.0)
    {
        let start = (job.arrival_h / EPOCH_H - 1e-9).ceil() as usize;
        let terms = JobTerms::of(job);
        let f = Forecast::new(&g.prediction, start, start + terms.epochs as usize, &cfg);
        let inst = f.milp_instance(&schedule.dc, &cfg, ToPlace::new_job(start, terms));
        let before = reduced.seconds;
        let Some(r) = solve(&inst, Model::Reduced, &mut reduced) else {
            continue;
        };
        // The exact model only where it finishes in reasonable time.
        if terms.epochs <= 16 && terms.vms <= 40 {
            let e0 = exact.seconds;
            let e = solve(&inst, Model::Exact, &mut exact).expect("feasible");
            small_exact_s += exact.seconds - e0;
            small_reduced_s += reduced.seconds - before;
            compared += 1;
            let gap = r.cost.total() - e.cost.total();
            assert!(gap >= -1e-9, "reduced beat the exact optimum: {gap}");
            if gap > 1e-9 {
                worse += 1;
                excess += gap;
            }
        }
        schedule.admit(
            i,
            terms,
            Plan {
                start,
                epochs: r.epochs,
            },
        );
    }
    println!(
        "reduced: {} solves, mean {:.2} ms, max {:.1} ms, largest {} integer variables",
        reduced.solves,
        reduced.seconds / reduced.solves as f64 * 1e3,
        reduced.max_seconds * 1e3,
        reduced.max_variables
    );
    println!(
        "exact (jobs of ≤ 16 epochs, ≤ 40 VMs): {} solves, mean {:.2} ms, max {:.1} ms, largest {} integer variables",
        exact.solves,
        exact.seconds / exact.solves.max(1) as f64 * 1e3,
        exact.max_seconds * 1e3,
        exact.max_variables
    );
    println!(
        "on those {compared} jobs: exact {:.2} s in all, reduced {:.2} s; reduced costlier on {worse}, by ${excess:.4} in all",
        small_exact_s, small_reduced_s
    );
    assert!(small_reduced_s < small_exact_s);
}

/// §A.5.2's other claims, on the generated inputs (seed 1), where they hold here:
/// SA-All is no better than SA by much; conservative predictions (B(t) 30% lower) cut
/// violations; FF falls further behind SA as the sun wanes; SGP comes closer to SA as
/// the penalty grows. Prints every run.
#[test]
#[ignore = "slow (minutes): cargo test --release -p tailor-green paper_claims -- --ignored --nocapture"]
fn paper_claims() {
    let run = |day: Day, cfg: &SlaConfig, policy: SlaPolicy| {
        let g = generate(Workload::Grid5k, day, System::Sla, 1);
        let started = Instant::now();
        let s = simulate_sla(&g.jobs, &g.solar, &g.prediction, cfg, policy).unwrap();
        println!(
            "{day:>6} {policy:>3} penalty ${:.2} scale {:.1} limit {:?}: profit {:.2} admitted {} \
             violations {} migrations {} in {:.1} s",
            cfg.penalty,
            cfg.prediction_scale,
            cfg.sa_job_limit,
            s.profit,
            s.admitted,
            s.violations,
            s.migrations,
            started.elapsed().as_secs_f64()
        );
        s
    };
    let base = SlaConfig::default();
    let sa = run(Day::Medium, &base, SlaPolicy::Sa);
    let lp = run(Day::Medium, &base, SlaPolicy::Lp);
    let all = SlaConfig {
        sa_job_limit: None,
        ..base.clone()
    };
    let sa_all = run(Day::Medium, &all, SlaPolicy::Sa);
    println!("SA-All / SA profit {:.3}", sa_all.profit / sa.profit);
    assert!(sa_all.profit <= sa.profit * 1.05);
    for scale in [0.9, 0.8, 0.7] {
        let c = SlaConfig {
            prediction_scale: scale,
            ..base.clone()
        };
        let (sa_c, lp_c) = (
            run(Day::Medium, &c, SlaPolicy::Sa),
            run(Day::Medium, &c, SlaPolicy::Lp),
        );
        if scale == 0.7 {
            assert!(sa_c.violations < sa.violations && lp_c.violations < lp.violations);
        }
    }
    let mut ff_share = Vec::new();
    for day in [Day::Low, Day::Medium, Day::High] {
        let runs = SlaPolicy::ALL.map(|p| run(day, &base, p));
        ff_share.push(runs[2].profit / runs[0].profit);
    }
    println!("FF / SA profit, Low, Medium, High days: {ff_share:.3?}");
    assert!(ff_share[0] < ff_share[1] && ff_share[1] < ff_share[2]);
    let mut sgp_share = Vec::new();
    for penalty in [0.2, 0.5, 0.8] {
        let c = SlaConfig {
            penalty,
            ..base.clone()
        };
        let (sa_p, sgp_p) = (
            run(Day::High, &c, SlaPolicy::Sa),
            run(Day::High, &c, SlaPolicy::Sgp),
        );
        sgp_share.push(sgp_p.profit / sa_p.profit);
    }
    println!("SGP / SA profit, High days, penalty $0.20, $0.50, $0.80: {sgp_share:.3?}");
    assert!(sgp_share[0] < sgp_share[1] && sgp_share[1] < sgp_share[2]);
}
