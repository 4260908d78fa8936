//! Tests of the MILP: against an exhaustive search on tiny instances, and the constraints A.9-A.13 on what it returns.

use proptest::prelude::*;

use super::*;
use crate::sla::datacenter::assumed_full_boundary;
use crate::sla::SlaConfig;

/// A tiny datacenter with other jobs' load fixed, and one job to place.
#[derive(Debug, Clone)]
struct Case {
    cfg: SlaConfig,
    /// Other jobs' VMs on each rack in each epoch, `[t][r]`.
    existing: Vec<Vec<u32>>,
    /// Green energy predicted for each epoch, kWh.
    green_kwh: Vec<f64>,
    inst: MilpInstance,
}

fn case() -> impl Strategy<Value = Case> {
    (1usize..=3, 1u32..=3, 1usize..=3, 1u32..=3)
        .prop_flat_map(|(racks, capacity, epochs, vms)| {
            (
                Just((racks, capacity, epochs, vms)),
                prop::collection::vec(prop::collection::vec(0..=capacity, racks), epochs),
                prop::collection::vec(0.0f64..=1.2, epochs),
                0..=vms * epochs as u32,
                prop::option::of(prop::collection::vec(0..=vms, racks)),
                (0.01f64..0.3, 0.0001f64..0.01, 0.0f64..0.02),
            )
        })
        .prop_map(
            |((racks, capacity, _epochs, vms), mut existing, share, green, previous, costs)| {
                let cfg = SlaConfig {
                    racks,
                    rack_capacity: capacity,
                    ..SlaConfig::default()
                };
                // Leave room for the job in every epoch: free the rightmost loaded racks.
                for row in &mut existing {
                    let mut r = racks;
                    while row.iter().map(|&l| capacity - l).sum::<u32>() < vms && r > 0 {
                        r -= 1;
                        row[r] = 0;
                    }
                }
                let full_kwh = racks as f64 * capacity as f64 * cfg.slot_kwh();
                let green_kwh: Vec<f64> = share.iter().map(|s| s * full_kwh).collect();
                let (penalty, step, migration) = costs;
                let inst = MilpInstance {
                    vms,
                    green_slots: green,
                    free: existing
                        .iter()
                        .map(|row| row.iter().map(|&l| capacity - l).collect())
                        .collect(),
                    boundary: green_kwh
                        .iter()
                        .map(|&g| assumed_full_boundary(g, &cfg))
                        .collect(),
                    previous: previous.filter(|p| p.iter().sum::<u32>() == vms),
                    opportunity: (0..racks).map(|r| step * (r + 1) as f64).collect(),
                    penalty_slot: penalty,
                    migration_cost: migration,
                };
                Case {
                    cfg,
                    existing,
                    green_kwh,
                    inst,
                }
            },
        )
}

/// Every way to put `vms` VMs on racks with these free servers.
fn placements(free: &[u32], vms: u32) -> Vec<Vec<u32>> {
    if free.is_empty() {
        return if vms == 0 { vec![vec![]] } else { vec![] };
    }
    let mut out = Vec::new();
    for x in 0..=free[0].min(vms) {
        for mut rest in placements(&free[1..], vms - x) {
            rest.insert(0, x);
            out.push(rest);
        }
    }
    out
}

/// The least objective over every schedule, written from Eqs. A.3-A.7 directly.
fn exhaustive(inst: &MilpInstance) -> Option<f64> {
    let options: Vec<Vec<Vec<u32>>> = inst.free.iter().map(|f| placements(f, inst.vms)).collect();
    if options.iter().any(Vec::is_empty) {
        return None;
    }
    let mut best = f64::INFINITY;
    let mut pick = vec![0usize; options.len()];
    loop {
        let mut green = 0i64;
        let mut cost = 0.0;
        for (t, &i) in pick.iter().enumerate() {
            let x = &options[t][i];
            for (r, &v) in x.iter().enumerate() {
                if r >= inst.boundary[t] {
                    green += v as i64;
                }
                cost += v as f64 * inst.opportunity[r];
                let before = if t > 0 {
                    Some(options[t - 1][pick[t - 1]][r])
                } else {
                    inst.previous.as_ref().map(|p| p[r])
                };
                if let Some(b) = before {
                    cost += (v as i64 - b as i64).max(0) as f64 * inst.migration_cost;
                }
            }
        }
        cost += (inst.green_slots as i64 - green).max(0) as f64 * inst.penalty_slot;
        best = best.min(cost);
        // Next combination.
        let mut t = 0;
        loop {
            if t == pick.len() {
                return Some(best);
            }
            pick[t] += 1;
            if pick[t] < options[t].len() {
                break;
            }
            pick[t] = 0;
            t += 1;
        }
    }
}

/// Checks constraints A.9-A.13 on `schedule` with the energy the LP's routing
/// schedules: a rack on the Green Bus gets green energy for its whole demand, one on
/// the Mixed Bus brown energy. Returns the green slots by Eqs. A.4-A.5.
fn check_constraints(case: &Case, schedule: &MilpSchedule) -> Result<u64, String> {
    let (inst, cfg) = (&case.inst, &case.cfg);
    let racks = cfg.racks;
    let mut green_slots = 0;
    for (t, placement) in schedule.epochs.iter().enumerate() {
        let x: Vec<u32> = (0..racks).map(|r| count(placement, r as u16)).collect();
        if x.iter().sum::<u32>() != inst.vms {
            return Err(format!("A.9: epoch {t} runs {x:?}, not {} VMs", inst.vms));
        }
        let mut is_green = vec![false; racks];
        let mut green_budget = 0.0;
        for r in 0..racks {
            let load = case.existing[t][r] + x[r];
            if load > cfg.rack_capacity {
                return Err(format!("A.10: rack {r} holds {load} in epoch {t}"));
            }
            let before = match t {
                0 => inst.previous.as_ref().map_or(x[r], |p| p[r]),
                _ => count(&schedule.epochs[t - 1], r as u16),
            };
            let migrations = x[r].saturating_sub(before);
            let demand = load as f64 * cfg.slot_kwh() + migrations as f64 * cfg.migration_kwh;
            let on_green_bus = r >= inst.boundary[t];
            let (e_b, e_g) = if on_green_bus {
                (0.0, demand)
            } else {
                (demand, 0.0)
            };
            if e_b + e_g < demand - 1e-12 {
                return Err(format!("A.11: rack {r} epoch {t}"));
            }
            if on_green_bus {
                green_budget += cfg.rack_capacity as f64 * cfg.slot_kwh();
            }
            is_green[r] = on_green_bus && e_g >= demand; // A.5, on the Green Bus.
            if is_green[r] {
                green_slots += x[r] as u64;
            }
        }
        if green_budget > case.green_kwh[t] + 1e-9 {
            return Err(format!(
                "epoch {t}: full green racks need more than predicted"
            ));
        }
        for r in 1..racks {
            if is_green[r - 1] && !is_green[r] {
                return Err(format!("A.12/A.13: epoch {t} greens {is_green:?}"));
            }
        }
    }
    Ok(green_slots)
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 300, ..ProptestConfig::default() })]

    #[test]
    fn the_exact_model_finds_the_exhaustive_optimum_and_keeps_every_constraint(case in case()) {
        let mut stats = MilpStats::default();
        let solved = solve(&case.inst, Model::Exact, &mut stats);
        let best = exhaustive(&case.inst);
        prop_assert_eq!(solved.is_some(), best.is_some());
        if let (Some(s), Some(best)) = (solved, best) {
            prop_assert!((s.cost.total() - best).abs() < 1e-9, "solver {:?} vs exhaustive {best}", s.cost);
            let green = check_constraints(&case, &s).map_err(TestCaseError::fail)?;
            prop_assert_eq!(green, s.green);
            // The reduced model is a restriction: never better, always valid.
            let r = solve(&case.inst, Model::Reduced, &mut stats).expect("feasible");
            prop_assert!(r.cost.total() >= best - 1e-9);
            check_constraints(&case, &r).map_err(TestCaseError::fail)?;
        }
    }
}

#[test]
fn the_exhaustive_search_can_tell_a_worse_schedule() {
    // One rack of two brown, one green: a 1-VM job needing 2 green slots over 2
    // epochs must sit on the green rack, not pay the penalty.
    let inst = MilpInstance {
        vms: 1,
        green_slots: 2,
        free: vec![vec![1, 1], vec![1, 1]],
        boundary: vec![1, 1],
        previous: None,
        opportunity: vec![0.001, 0.002],
        penalty_slot: 0.125,
        migration_cost: 0.0007,
    };
    assert!((exhaustive(&inst).unwrap() - 0.004).abs() < 1e-12);
    let s = solve(&inst, Model::Exact, &mut MilpStats::default()).unwrap();
    assert_eq!(s.epochs, vec![vec![(1, 1)], vec![(1, 1)]]);
    // Moving to the brown rack in the second epoch costs a penalty, not a migration.
    let (worse, green) = cost_of(&inst, &[vec![(1, 1)], vec![(0, 1)]]);
    assert_eq!(green, 1);
    assert!(worse.total() > s.cost.total());
}

#[test]
fn the_reduced_model_places_a_large_job_at_the_appendix_scale() {
    // 42 racks, 48 hours, the green partition moving each hour, other jobs on half.
    let cfg = SlaConfig::default();
    let epochs = 192;
    let boundary: Vec<usize> = (0..epochs)
        .map(|t| {
            let h = (t / 4) % 24;
            if (7..19).contains(&h) {
                42 - (12 - (h as i64 - 13).unsigned_abs() as usize)
            } else {
                42
            }
        })
        .collect();
    let free = (0..epochs)
        .map(|t| {
            (0..42)
                .map(|r| if (r + t / 8) % 2 == 0 { 40 } else { 5 })
                .collect()
        })
        .collect();
    let inst = MilpInstance {
        vms: 100,
        green_slots: 100 * 192 / 4,
        free,
        boundary,
        previous: None,
        opportunity: (0..42).map(|r| cfg.opportunity(r)).collect(),
        penalty_slot: cfg.penalty_slot(),
        migration_cost: cfg.migration_cost(),
    };
    let mut stats = MilpStats::default();
    let s = solve(&inst, Model::Reduced, &mut stats).expect("placeable");
    assert_eq!(s.epochs.len(), 192);
    assert!(s
        .epochs
        .iter()
        .all(|p| p.iter().map(|x| x.1).sum::<u32>() == 100));
    // Daylight holds 96 epochs of up to 6 green racks: enough for 4800 green slots.
    assert!(s.green >= 4800, "green {}", s.green);
    assert_eq!(stats.failures, 0);
}
