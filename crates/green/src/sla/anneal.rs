//! Simulated annealing (SA, §A.4.4): improve the schedule by taking a few jobs out and placing them again with the MILP, keeping what the non-linear profit model prefers.
//!
//! As §A.4.4 describes it:
//! - SA starts from the current schedule, with a new arrival first placed by the MILP
//!   around the fixed schedule of the rest;
//! - it draws on three job sets, recomputed after every accepted move: *unmet* (jobs
//!   expected to miss their Green SLA), *extra* (expected to get more green slots than
//!   they need) and *migration* (planning more than [`MIGRATION_THRESHOLD`] VM
//!   migrations per VM from now on);
//! - a move takes one random job from each non-empty set out of the schedule and
//!   places them again, one at a time in random order, as if they were new arrivals,
//!   with the MILP ([`Model::Reduced`]); a running job's move counts the migrations
//!   from where it runs now;
//! - a move is kept if it lowers the predicted cost ([`outlook`]) or, with the
//!   Metropolis probability exp(−Δ/T), if it raises it; T starts at
//!   [`SlaConfig::sa_temperature`] and cools geometrically to [`FINAL_TEMPERATURE`] of
//!   it over the run;
//! - a run makes ⌈[`SlaConfig::sa_moves_per_job`] × pool⌉ moves, so a larger pool is
//!   searched longer (the appendix gives no budget);
//! - only jobs in a pool of at most [`SlaConfig::sa_job_limit`] (30 in §A.5.2) are
//!   moved; the pool is drawn at random from the three sets, the new job always in it.
//!   With no limit every active job may be moved (the appendix's SA-All, which
//!   "reschedules all active jobs", §A.5.2): the jobs in no set then form a fourth set,
//!   and each move takes one of them too. Without it SA-All would draw from the same
//!   three sets as SA and differ only in its number of moves (our reading; the appendix
//!   says no more).
//!
//! The best schedule seen is the result. The caller decides what to do with it: for an
//! arrival, keep it only if it raises the predicted profit, else reject the job and
//! [`Annealed::undo`]; on predicted violations, keep it whatever it is.

use std::collections::BTreeMap;

use rand::seq::SliceRandom;
use rand::{RngExt, SeedableRng};
use rand_chacha::ChaCha8Rng;

use super::datacenter::{count, Plan, Schedule};
use super::forecast::{outlook, Forecast, Outlook, ToPlace};
use super::milp::{solve, MilpStats, Model};
use super::SlaConfig;

/// A job plans too many migrations when they exceed this many per VM. Picked by hand.
pub(crate) const MIGRATION_THRESHOLD: u64 = 1;
/// The last move's temperature as a fraction of the first. Picked by hand so that the
/// last moves are taken only when nearly free.
pub(crate) const FINAL_TEMPERATURE: f64 = 0.02;

/// SA's state between runs: its random stream.
#[derive(Debug, Clone)]
pub(crate) struct Annealer {
    rng: ChaCha8Rng,
}

/// What one run did.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Annealed {
    /// The predicted cost of the schedule it left ([`Outlook::cost`]).
    pub(crate) cost: f64,
    /// The plans it replaced, to put back if the caller rejects its result.
    pub(crate) undo: Vec<(usize, Plan)>,
}

impl Annealed {
    /// Puts back the plans the run replaced.
    pub(crate) fn undo(self, schedule: &mut Schedule, now: usize) {
        restore(schedule, &self.undo, now);
    }
}

impl Annealer {
    /// An annealer whose choices follow `seed`.
    pub(crate) fn new(seed: u64) -> Annealer {
        Annealer {
            rng: ChaCha8Rng::seed_from_u64(seed),
        }
    }

    /// One SA run at epoch `now`; `arrival` is the job just admitted tentatively, if
    /// any, which the pool always holds.
    pub(crate) fn run(
        &mut self,
        schedule: &mut Schedule,
        forecast: &Forecast,
        cfg: &SlaConfig,
        now: usize,
        arrival: Option<usize>,
        stats: &mut MilpStats,
    ) -> Annealed {
        let mut view = outlook(schedule, forecast, cfg, now);
        let pool = self.pool(schedule, &view, cfg, now, arrival);
        let mut current = view.cost;
        let mut best = current;
        let mut original: BTreeMap<usize, Plan> = BTreeMap::new();
        let mut best_plans: BTreeMap<usize, Plan> = BTreeMap::new();
        let moves = (cfg.sa_moves_per_job * pool.len() as f64).ceil() as usize;
        let cooling = FINAL_TEMPERATURE.powf(1.0 / moves.saturating_sub(1).max(1) as f64);
        let mut temperature = cfg.sa_temperature;
        for _ in 0..moves {
            let chosen = self.pick(schedule, &view, &pool, now, cfg.sa_job_limit.is_none());
            let before: Vec<(usize, Plan)> = chosen
                .iter()
                .map(|&j| (j, schedule.jobs[j].plan.clone()))
                .collect();
            if !self.replace(schedule, forecast, cfg, now, &chosen, stats) {
                restore(schedule, &before, now);
                continue;
            }
            let next = outlook(schedule, forecast, cfg, now);
            let delta = next.cost - current;
            let take = delta <= 0.0
                || (temperature > 0.0 && self.rng.random::<f64>() < (-delta / temperature).exp());
            if take {
                for (j, plan) in before {
                    original.entry(j).or_insert(plan);
                }
                current = next.cost;
                view = next;
                if current < best - 1e-12 {
                    best = current;
                    for &j in original.keys() {
                        best_plans.insert(j, schedule.jobs[j].plan.clone());
                    }
                }
            } else {
                restore(schedule, &before, now);
            }
            temperature *= cooling;
        }
        // Leave the best schedule seen: the best plans of the jobs moved before it,
        // and the original plans of jobs moved only after it.
        let targets: Vec<(usize, Plan)> = original
            .iter()
            .map(|(&j, plan)| (j, best_plans.get(&j).unwrap_or(plan).clone()))
            .collect();
        set_plans(schedule, targets.iter().map(|(j, p)| (*j, p)), now);
        let undo = original
            .into_iter()
            .filter(|(j, plan)| schedule.jobs[*j].plan != *plan)
            .collect();
        Annealed { cost: best, undo }
    }

    /// The jobs this run may move.
    fn pool(
        &mut self,
        schedule: &Schedule,
        view: &Outlook,
        cfg: &SlaConfig,
        now: usize,
        arrival: Option<usize>,
    ) -> Vec<usize> {
        let mut candidates: Vec<usize> = (0..view.active.len())
            .filter(|&i| cfg.sa_job_limit.is_none() || in_a_set(schedule, view, i, now))
            .map(|i| view.active[i])
            .filter(|&j| Some(j) != arrival)
            .collect();
        candidates.shuffle(&mut self.rng);
        if let Some(limit) = cfg.sa_job_limit {
            candidates.truncate(limit - usize::from(arrival.is_some()));
        }
        candidates.extend(arrival);
        candidates.sort_unstable();
        candidates
    }

    /// One random job from each non-empty set, within the pool, and with `rest` one of
    /// the pool's jobs in no set (SA-All); a random pool job if every set is empty.
    fn pick(
        &mut self,
        schedule: &Schedule,
        view: &Outlook,
        pool: &[usize],
        now: usize,
        rest: bool,
    ) -> Vec<usize> {
        let members = view
            .active
            .iter()
            .enumerate()
            .map(|(i, &j)| (j, membership(schedule, view, i, now)));
        let sets = job_sets(members, pool, rest);
        let mut chosen: Vec<usize> = sets
            .iter()
            .filter(|s| !s.is_empty())
            .map(|s| s[self.rng.random_range(0..s.len())])
            .collect();
        if chosen.is_empty() {
            chosen.push(pool[self.rng.random_range(0..pool.len())]);
        }
        chosen.sort_unstable();
        chosen.dedup();
        chosen.shuffle(&mut self.rng);
        chosen
    }

    /// Takes the `chosen` jobs out and places them again one by one with the MILP;
    /// false if one of them could not be placed (the caller restores them).
    fn replace(
        &mut self,
        schedule: &mut Schedule,
        forecast: &Forecast,
        cfg: &SlaConfig,
        now: usize,
        chosen: &[usize],
        stats: &mut MilpStats,
    ) -> bool {
        for &j in chosen {
            schedule.take_tail(j, now);
        }
        for (k, &j) in chosen.iter().enumerate() {
            let a = &schedule.jobs[j];
            let from = now.max(a.plan.start);
            let previous = (a.plan.start < now).then(|| {
                (0..schedule.dc.racks())
                    .map(|r| count(a.plan.at(now - 1), r as u16))
                    .collect()
            });
            let job = ToPlace {
                start: from,
                epochs: a.plan.end() - from,
                vms: a.terms.vms,
                green_slots: a.green_needed(),
                previous,
            };
            let inst = forecast.milp_instance(&schedule.dc, cfg, job);
            match solve(&inst, Model::Reduced, stats) {
                Some(s) => schedule.put_tail(j, from, s.epochs),
                None => {
                    // Put back the tails still out so that the caller's restore works
                    // on a consistent load.
                    for &rest in &chosen[k..] {
                        let plan = &schedule.jobs[rest].plan;
                        let from = now.max(plan.start);
                        let tail = plan.epochs[from - plan.start..].to_vec();
                        schedule.put_tail(rest, from, tail);
                    }
                    return false;
                }
            }
        }
        true
    }
}

/// Whether active job `i` of `view` is unmet, extra, or migrating too much.
fn membership(schedule: &Schedule, view: &Outlook, i: usize, now: usize) -> [bool; 3] {
    let a = &schedule.jobs[view.active[i]];
    let expected = view.expected_green[i];
    let needed = a.terms.green_slots as u64;
    [
        expected < needed,
        expected > needed,
        a.plan.migrations_from(now) > MIGRATION_THRESHOLD * a.terms.vms as u64,
    ]
}

/// The pool's jobs in each set, from each active job's membership: unmet, extra,
/// migration, and with `rest` the jobs in none of them (SA-All's fourth set).
fn job_sets(
    members: impl IntoIterator<Item = (usize, [bool; 3])>,
    pool: &[usize],
    rest: bool,
) -> [Vec<usize>; 4] {
    let mut sets: [Vec<usize>; 4] = Default::default();
    for (j, member) in members {
        if pool.binary_search(&j).is_err() {
            continue;
        }
        for (k, &m) in member.iter().enumerate() {
            if m {
                sets[k].push(j);
            }
        }
        if rest && !member.iter().any(|&m| m) {
            sets[3].push(j);
        }
    }
    sets
}

fn in_a_set(schedule: &Schedule, view: &Outlook, i: usize, now: usize) -> bool {
    membership(schedule, view, i, now).into_iter().any(|m| m)
}

/// Gives each job of `plans` its plan from `now` on. Every tail is taken out before
/// any is put in, since one job's new plan may use servers another's old one holds.
pub(crate) fn set_plans<'p>(
    schedule: &mut Schedule,
    plans: impl IntoIterator<Item = (usize, &'p Plan)> + Clone,
    now: usize,
) {
    for (j, _) in plans.clone() {
        schedule.take_tail(j, now);
    }
    for (j, plan) in plans {
        let from = now.max(plan.start);
        schedule.put_tail(j, from, plan.epochs[from - plan.start..].to_vec());
    }
}

/// Puts back the plans in `before`.
fn restore(schedule: &mut Schedule, before: &[(usize, Plan)], now: usize) {
    set_plans(schedule, before.iter().map(|(j, p)| (*j, p)), now);
}

#[cfg(test)]
mod tests {
    use super::job_sets;

    #[test]
    fn sa_all_also_draws_the_jobs_in_no_set() {
        // Job 0 unmet, 1 extra and migrating, 2 in no set, 3 in no set and out of the pool.
        let members = [
            (0, [true, false, false]),
            (1, [false, true, true]),
            (2, [false, false, false]),
            (3, [false, false, false]),
        ];
        let pool = [0, 1, 2];
        let sa = job_sets(members, &pool, false);
        assert_eq!(sa, [vec![0], vec![1], vec![1], vec![]]);
        let sa_all = job_sets(members, &pool, true);
        assert_eq!(sa_all, [vec![0], vec![1], vec![1], vec![2]]);
    }
}
