//! The MILP reformulation of §A.4.4 for one job: place its VMs in the slots other jobs leave free, minimizing penalty + opportunity cost + migration cost, solved with good_lp's pure-Rust microlp back end.
//!
//! The model, for a job of V VMs that still needs G green slots over epochs 0..T:
//!
//! - x_rt ∈ {0..free_rt}, integer: its VMs on rack r in epoch t (Table A.1's x_jrt with
//!   every other job's schedule fixed, so constraint A.10 is the bound);
//! - Σ_r x_rt = V in every epoch (A.9);
//! - m_rt ≥ x_rt − x_r(t−1), m_rt ≥ 0: VMs migrating into rack r (Eq. A.6); in the
//!   first epoch against the racks the job ran on just before, if it was running;
//! - p ≥ G − Σ_t Σ_{r ≥ b_t} x_rt, p ≥ 0: green slots missed (Eqs. A.3-A.4), where the
//!   green racks r ≥ b_t are set beforehand by taking them to be full
//!   ([`super::datacenter::assumed_full_boundary`]), the LP's assumption in §A.4.4;
//! - minimize L·p + Σ OP_r·x_rt (Eq. A.7) + EM·PB·Σ m_rt.
//!
//! Brown energy's cost (Eq. A.8) is left out, as §A.4.4's reformulation leaves it out;
//! the callers add it when they decide whether a job pays.
//!
//! **Size.** [`Model::Exact`] is this model as written, one x per rack and epoch. It is
//! what the property test checks against exhaustive search, but microlp is far too
//! slow with it at §A.5.1's size: 42 racks × 16 epochs for a 10-VM job took 0.07-0.5 s
//! and a 48-hour job's LP relaxation alone 2.5-8 s (measured on the 2-core build
//! machine; see the crate's BENCHMARKS entry). [`Model::Reduced`], which the
//! schedulers use, departs from the appendix in two ways:
//! - **time segments**: epochs are grouped into runs of at most [`SEGMENT_EPOCHS`]
//!   with the same boundary, and a job keeps its placement within a run, bounded by
//!   the run's least free capacity; it cannot take green slots for only part of a run;
//! - **candidate racks**: in each run only the leftmost racks with free servers on
//!   each bus, as many as hold V VMs there, and likewise among the racks green in every
//!   epoch of the job; plus those of the previous run (so a job can stay put) and, in
//!   the first two runs, the racks the job is on now. Opportunity cost rises to the right, so these are the
//!   cheapest slots of each kind; a job can be made to migrate where staying on a
//!   rack no longer a candidate would have been cheaper.
//!
//! If the segmented model is infeasible (a run's least capacity is short of V), it is
//! solved again with one epoch per run, which is feasible whenever every epoch has V
//! free servers.

use std::time::Instant;

use good_lp::{
    constraint, microlp, variable, Constraint, Expression, ProblemVariables, Solution,
    SolutionStatus, SolverModel, Variable, WithMipGap, WithTimeLimit,
};

use super::datacenter::{count, Placement};

/// Longest run of epochs the reduced model gives one placement: 4 hours. Picked by
/// hand; the boundary moves about hourly in daylight, so runs are mostly shorter.
pub(crate) const SEGMENT_EPOCHS: usize = 16;
/// Relative MIP gap at which the reduced model stops (the exact one solves to 0).
/// Picked by hand: a tenth of a percent of the job's cost; at 10^-4 a 263-VM job of the
/// Grid5k-shaped workload ran into the time limit on every solve.
const REDUCED_MIP_GAP: f32 = 1e-3;
/// A constant added to the reduced model's objective, dollars, so that its gap is at
/// least [`REDUCED_MIP_GAP`] × this in absolute terms: a job that meets its SLA has an
/// objective of opportunity and migration costs alone, fractions of a cent, which a
/// purely relative gap makes microlp resolve to the last tie. With $0.50 the search
/// stops within $0.0005, under one migration's cost. It changes no decision.
const REDUCED_OBJECTIVE_OFFSET: f64 = 0.5;
/// Seconds microlp may spend on one reduced model before its best schedule is taken
/// (or the job is treated as unplaceable if it has none): a safety valve, picked by
/// hand. No solve of the Grid5k-shaped workloads comes near it (the slowest took
/// about 0.1 s); a solve that reaches it makes the run depend on the machine's speed,
/// and [`MilpStats::time_limited`] counts them. (good_lp does not pass on microlp's
/// deterministic node limit.)
const REDUCED_TIME_LIMIT_S: f64 = 2.0;
/// Slack for reading integer variables back from the solver.
const INTEGER_SLACK: f64 = 1e-6;

/// One job's placement problem, every other job's schedule fixed.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct MilpInstance {
    /// V: the job's VMs.
    pub(crate) vms: u32,
    /// G: green slots it still needs.
    pub(crate) green_slots: u32,
    /// Free servers on each rack in each epoch, `[t][r]`.
    pub(crate) free: Vec<Vec<u32>>,
    /// b_t: racks at or right of this are green in epoch t.
    pub(crate) boundary: Vec<usize>,
    /// The job's VMs per rack just before epoch 0, if it was running then.
    pub(crate) previous: Option<Vec<u32>>,
    /// OP_r, dollars per slot, per rack.
    pub(crate) opportunity: Vec<f64>,
    /// L, dollars per missed green slot.
    pub(crate) penalty_slot: f64,
    /// EM·PB, dollars per VM migration.
    pub(crate) migration_cost: f64,
}

/// Which formulation to solve; see the module's docs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Model {
    /// One variable per rack and epoch, solved to optimality: the tests' model, too
    /// slow for the simulator.
    #[cfg_attr(not(test), allow(dead_code))]
    Exact,
    /// Time segments and candidate racks.
    Reduced,
}

/// The three terms of the objective, dollars.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub(crate) struct MilpCost {
    /// L × missed green slots.
    pub(crate) penalty: f64,
    /// Σ OP_r over the slots used.
    pub(crate) opportunity: f64,
    /// EM·PB × migrations.
    pub(crate) migration: f64,
}

impl MilpCost {
    /// The objective's value.
    pub(crate) fn total(&self) -> f64 {
        self.penalty + self.opportunity + self.migration
    }
}

/// A solved placement.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct MilpSchedule {
    /// The job's placement in each epoch.
    pub(crate) epochs: Vec<Placement>,
    /// Its objective, recomputed from `epochs`.
    pub(crate) cost: MilpCost,
    /// Slots on green racks (by the instance's boundaries).
    pub(crate) green: u64,
}

/// How the solver has fared over a run, for the report.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub(crate) struct MilpStats {
    /// Models solved (including failures).
    pub(crate) solves: u64,
    /// Models with no schedule: infeasible, or no solution in the time limit.
    pub(crate) failures: u64,
    /// Models stopped by the time limit, with or without a schedule.
    pub(crate) time_limited: u64,
    /// Seconds in the solver, all models.
    pub(crate) seconds: f64,
    /// Seconds of the slowest model.
    pub(crate) max_seconds: f64,
    /// Integer variables of the largest model.
    pub(crate) max_variables: usize,
}

/// Epochs grouped for the model, with the racks offered in them.
#[derive(Debug, Clone)]
struct Segment {
    start: usize,
    len: usize,
    boundary: usize,
    /// (rack, servers free in every epoch of the segment).
    racks: Vec<(usize, u32)>,
    /// The racks offered for being cheapest, which the next segment offers too.
    cover: Vec<usize>,
}

/// The objective (penalty, opportunity, migration) of `epochs` for `inst`, and its
/// green slots: Eqs. A.3, A.4, A.6 and A.7 with the instance's boundaries.
pub(crate) fn cost_of(inst: &MilpInstance, epochs: &[Placement]) -> (MilpCost, u64) {
    let mut green = 0u64;
    let mut opportunity = 0.0;
    let mut migrations = 0u64;
    for (t, placement) in epochs.iter().enumerate() {
        for &(r, x) in placement {
            if r as usize >= inst.boundary[t] {
                green += x as u64;
            }
            opportunity += x as f64 * inst.opportunity[r as usize];
            let before = match (t, &inst.previous) {
                (0, None) => x,
                (0, Some(prev)) => prev[r as usize],
                _ => count(&epochs[t - 1], r),
            };
            migrations += x.saturating_sub(before) as u64;
        }
    }
    let missed = (inst.green_slots as u64).saturating_sub(green);
    let cost = MilpCost {
        penalty: missed as f64 * inst.penalty_slot,
        opportunity,
        migration: migrations as f64 * inst.migration_cost,
    };
    (cost, green)
}

/// Solves `inst` with `model`; `None` when no placement exists (some epoch has fewer
/// than V free servers) or the solver found none in its time limit.
pub(crate) fn solve(
    inst: &MilpInstance,
    model: Model,
    stats: &mut MilpStats,
) -> Option<MilpSchedule> {
    let epochs = inst.free.len();
    let feasible = inst
        .free
        .iter()
        .all(|f| f.iter().map(|&x| x as u64).sum::<u64>() >= inst.vms as u64);
    if !feasible || epochs == 0 {
        return None;
    }
    let attempts: &[usize] = match model {
        Model::Exact => &[1],
        Model::Reduced => &[SEGMENT_EPOCHS, 1],
    };
    for &max_len in attempts {
        let segments = segment(inst, model, max_len);
        if segments
            .iter()
            .any(|s| s.racks.iter().map(|r| r.1 as u64).sum::<u64>() < inst.vms as u64)
        {
            continue;
        }
        let started = Instant::now();
        let solved = solve_segments(inst, &segments, model);
        let seconds = started.elapsed().as_secs_f64();
        stats.solves += 1;
        stats.seconds += seconds;
        stats.max_seconds = stats.max_seconds.max(seconds);
        let vars = segments.iter().map(|s| s.racks.len()).sum();
        stats.max_variables = stats.max_variables.max(vars);
        let solved = solved.map(|(x, limited)| {
            stats.time_limited += u64::from(limited);
            x
        });
        match solved {
            Some(x) => {
                let placements = expand(&segments, &x, epochs);
                let (cost, green) = cost_of(inst, &placements);
                return Some(MilpSchedule {
                    epochs: placements,
                    cost,
                    green,
                });
            }
            None => stats.failures += 1,
        }
    }
    None
}

/// Groups epochs into segments and picks each one's racks.
fn segment(inst: &MilpInstance, model: Model, max_len: usize) -> Vec<Segment> {
    let racks = inst.opportunity.len();
    let epochs = inst.free.len();
    let mut segments: Vec<Segment> = Vec::new();
    // Racks green in every epoch: a job that needs green can stay on them.
    let always_green = inst
        .boundary
        .iter()
        .copied()
        .max()
        .unwrap_or(racks)
        .min(racks);
    let mut t = 0;
    while t < epochs {
        let boundary = inst.boundary[t];
        let mut len = 1;
        while model == Model::Reduced
            && len < max_len
            && t + len < epochs
            && inst.boundary[t + len] == boundary
        {
            len += 1;
        }
        let cap: Vec<u32> = (0..racks)
            .map(|r| (t..t + len).map(|e| inst.free[e][r]).min().unwrap_or(0))
            .collect();
        let mut own = Vec::new();
        let chosen: Vec<usize> = match model {
            Model::Exact => (0..racks).filter(|&r| cap[r] > 0).collect(),
            Model::Reduced => {
                let mut chosen = cover(&cap, 0..boundary.min(racks), inst.vms);
                chosen.extend(cover(&cap, boundary.min(racks)..racks, inst.vms));
                chosen.extend(cover(&cap, always_green..racks, inst.vms));
                own = chosen.clone();
                if let Some(prev) = segments.last() {
                    chosen.extend(prev.cover.iter().copied().filter(|&r| cap[r] > 0));
                }
                if segments.len() <= 1 {
                    if let Some(prev) = &inst.previous {
                        chosen.extend((0..racks).filter(|&r| prev[r] > 0 && cap[r] > 0));
                    }
                }
                chosen.sort_unstable();
                chosen.dedup();
                chosen
            }
        };
        segments.push(Segment {
            start: t,
            len,
            boundary,
            racks: chosen.into_iter().map(|r| (r, cap[r])).collect(),
            cover: own,
        });
        t += len;
    }
    segments
}

/// The leftmost racks of `range` with free servers, until they hold `vms`.
fn cover(cap: &[u32], range: std::ops::Range<usize>, vms: u32) -> Vec<usize> {
    let mut held = 0u64;
    let mut out = Vec::new();
    for r in range {
        if held >= vms as u64 {
            break;
        }
        if cap[r] > 0 {
            held += cap[r] as u64;
            out.push(r);
        }
    }
    out
}

/// Builds and solves the model over `segments`; the VMs of each offered rack in each
/// segment and whether the time limit stopped the search, or `None`.
fn solve_segments(
    inst: &MilpInstance,
    segments: &[Segment],
    model: Model,
) -> Option<(Vec<Vec<u32>>, bool)> {
    let mut vars = ProblemVariables::new();
    let mut objective = Expression::from(0.0);
    let mut green = Expression::from(0.0);
    let mut constraints: Vec<Constraint> = Vec::new();
    let mut xs: Vec<Vec<Variable>> = Vec::with_capacity(segments.len());
    for (s, seg) in segments.iter().enumerate() {
        let len = seg.len as f64;
        let mut row = Vec::with_capacity(seg.racks.len());
        let mut all = Expression::from(0.0);
        for &(r, cap) in &seg.racks {
            let x = vars.add(variable().integer().min(0).max(cap as f64));
            objective += (len * inst.opportunity[r]) * x;
            if r >= seg.boundary {
                green += len * x;
            }
            all += x;
            row.push(x);
        }
        constraints.push(constraint!(all == inst.vms as f64));
        // Migrations into each offered rack at the segment's first epoch (A.6).
        for (i, &(r, _)) in seg.racks.iter().enumerate() {
            let before: Option<Expression> = if s == 0 {
                inst.previous
                    .as_ref()
                    .map(|prev| Expression::from(prev[r] as f64))
            } else {
                let prev = &segments[s - 1];
                Some(
                    prev.racks
                        .iter()
                        .position(|p| p.0 == r)
                        .map_or(Expression::from(0.0), |j| Expression::from(xs[s - 1][j])),
                )
            };
            if let Some(before) = before {
                let m = vars.add(variable().min(0));
                objective += inst.migration_cost * m;
                constraints.push(constraint!(m >= row[i] - before));
            }
        }
        xs.push(row);
    }
    if inst.green_slots > 0 {
        let p = vars.add(variable().min(0));
        objective += inst.penalty_slot * p;
        constraints.push(constraint!(p + green >= inst.green_slots as f64));
    }
    if model == Model::Reduced {
        let offset = vars.add(variable().min(1.0).max(1.0));
        objective += REDUCED_OBJECTIVE_OFFSET * offset;
    }
    let mut problem = vars.minimise(objective).using(microlp);
    if model == Model::Reduced {
        problem = problem
            .with_mip_gap(REDUCED_MIP_GAP)
            .ok()?
            .with_time_limit(REDUCED_TIME_LIMIT_S);
    }
    let solution = problem.with_all(constraints).solve().ok()?;
    let limited = matches!(solution.status(), SolutionStatus::TimeLimit);
    let mut out = Vec::with_capacity(xs.len());
    for row in &xs {
        let mut vals = Vec::with_capacity(row.len());
        for &x in row {
            let v = solution.value(x);
            let rounded = v.round();
            if (v - rounded).abs() > INTEGER_SLACK || rounded < 0.0 {
                return None;
            }
            vals.push(rounded as u32);
        }
        if vals.iter().sum::<u32>() != inst.vms {
            return None;
        }
        out.push(vals);
    }
    Some((out, limited))
}

/// Per-epoch placements from per-segment values.
fn expand(segments: &[Segment], x: &[Vec<u32>], epochs: usize) -> Vec<Placement> {
    let mut out = Vec::with_capacity(epochs);
    for (seg, vals) in segments.iter().zip(x) {
        let placement: Placement = seg
            .racks
            .iter()
            .zip(vals)
            .filter(|(_, &v)| v > 0)
            .map(|(&(r, _), &v)| (r as u16, v))
            .collect();
        for _ in 0..seg.len {
            out.push(placement.clone());
        }
        debug_assert_eq!(out.len(), seg.start + seg.len);
    }
    out
}

#[cfg(test)]
#[path = "milp_tests.rs"]
mod tests;
