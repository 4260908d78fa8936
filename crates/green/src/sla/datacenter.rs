//! The datacenter's schedule: each job's VMs per rack and epoch, the racks' load, and the split of the racks between the Mixed Bus and the Green Bus (§A.3, §A.4.2).
//!
//! Racks are numbered 0 (the brownest, leftmost in Fig. A.1) to RA − 1 (the greenest).
//! In every epoch the racks on the Green Bus are a run ending at the rightmost rack
//! (constraints A.12 and A.13), so one number, the *boundary*, says which racks are
//! green: those at or right of it.
//!
//! Two rules set the boundary:
//! - [`assumed_full_boundary`], the LP reformulation's (§A.4.4): green racks are taken
//!   to be full, so the energy predicted for an epoch powers ⌊E / (RC·EV)⌋ racks;
//! - [`Datacenter::partition`], the one the simulator runs, and SA's non-linear model
//!   (Eq. A.5): from the right, each rack joins the Green Bus while the green energy
//!   covers its VMs and the migrations into it. Empty racks draw nothing. What green
//!   energy is left goes to the Mixed Bus (§A.3) and displaces brown energy there.
//!
//! The small smoothing battery of §A.3 is not modelled, as §A.4.3's framework leaves
//! it out too: an epoch's green energy is what the plant produces in it.

use super::profit::JobTerms;
use super::SlaConfig;

/// Where a job's VMs run in one epoch: (rack, VMs), by rack, without zeros.
pub(crate) type Placement = Vec<(u16, u32)>;

/// Slack when comparing energies, kWh.
const ENERGY_SLACK: f64 = 1e-9;

/// A job's schedule: its placement in each epoch of its run, x_jrt of Table A.1.
#[derive(Debug, Clone, PartialEq, Default)]
pub(crate) struct Plan {
    /// The epoch of `epochs[0]`: the job's first.
    pub(crate) start: usize,
    /// Its placement in each epoch, from `start`.
    pub(crate) epochs: Vec<Placement>,
}

impl Plan {
    /// The epoch after its last.
    pub(crate) fn end(&self) -> usize {
        self.start + self.epochs.len()
    }

    /// Its placement in epoch `t`; empty outside its run.
    pub(crate) fn at(&self, t: usize) -> &[(u16, u32)] {
        t.checked_sub(self.start)
            .and_then(|i| self.epochs.get(i))
            .map_or(&[], Vec::as_slice)
    }

    /// NumMigrates_jrt (Eq. A.6): VMs arriving on each rack in epoch `t` from another,
    /// as (rack, VMs). A job's first epoch places its VMs; that is not a migration.
    pub(crate) fn migrations_at(&self, t: usize) -> impl Iterator<Item = (u16, u32)> + '_ {
        let prev = if t > self.start { self.at(t - 1) } else { &[] };
        let first = t == self.start;
        self.at(t).iter().filter_map(move |&(r, x)| {
            if first {
                return None;
            }
            let before = count(prev, r);
            (x > before).then(|| (r, x - before))
        })
    }

    /// VM migrations in epochs `from` onwards.
    pub(crate) fn migrations_from(&self, from: usize) -> u64 {
        (from.max(self.start)..self.end())
            .map(|t| self.migrations_at(t).map(|(_, m)| m as u64).sum::<u64>())
            .sum()
    }

    /// Replaces the placements from epoch `from` (inside the run) with `tail`.
    pub(crate) fn splice(&mut self, from: usize, tail: Vec<Placement>) {
        let keep = from - self.start;
        self.epochs.truncate(keep);
        self.epochs.extend(tail);
    }
}

/// VMs on rack `r` in `placement`.
pub(crate) fn count(placement: &[(u16, u32)], r: u16) -> u32 {
    placement.iter().find(|p| p.0 == r).map_or(0, |p| p.1)
}

/// The racks' load over time: VMs and migrations per rack and epoch, from every plan.
#[derive(Debug, Clone)]
pub(crate) struct Datacenter {
    racks: usize,
    capacity: u32,
    /// VMs on rack r in epoch t, at `t * racks + r`.
    load: Vec<u32>,
    /// VMs migrating into rack r in epoch t.
    arriving: Vec<u32>,
}

/// One epoch's split of the racks between the buses, and its energy, kWh.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct Partition {
    /// Racks at or right of this are on the Green Bus.
    pub(crate) boundary: usize,
    /// Energy of the racks on the Green Bus.
    pub(crate) green_racks_kwh: f64,
    /// Green energy left over and routed to the Mixed Bus, up to what it can use.
    pub(crate) green_to_mixed_kwh: f64,
    /// Brown energy bought for the Mixed Bus.
    pub(crate) brown_kwh: f64,
}

impl Datacenter {
    /// An empty datacenter of `racks` racks of `capacity` servers, over `epochs` epochs.
    pub(crate) fn new(racks: usize, capacity: u32, epochs: usize) -> Datacenter {
        Datacenter {
            racks,
            capacity,
            load: vec![0; racks * epochs],
            arriving: vec![0; racks * epochs],
        }
    }

    /// RA.
    pub(crate) fn racks(&self) -> usize {
        self.racks
    }

    /// VMs on rack `r` in epoch `t`.
    pub(crate) fn load(&self, t: usize, r: usize) -> u32 {
        self.load[t * self.racks + r]
    }

    /// Servers free on rack `r` in epoch `t` (constraint A.10's slack).
    pub(crate) fn free(&self, t: usize, r: usize) -> u32 {
        self.capacity - self.load(t, r)
    }

    /// VMs migrating into rack `r` in epoch `t`.
    pub(crate) fn arriving(&self, t: usize, r: usize) -> u32 {
        self.arriving[t * self.racks + r]
    }

    /// Servers running VMs in epoch `t`.
    pub(crate) fn servers(&self, t: usize) -> u32 {
        self.load[t * self.racks..(t + 1) * self.racks].iter().sum()
    }

    /// Adds `plan`'s VMs and migrations from epoch `from` on.
    pub(crate) fn add(&mut self, plan: &Plan, from: usize) {
        self.apply(plan, from, true);
    }

    /// Takes `plan`'s VMs and migrations from epoch `from` on back out.
    pub(crate) fn remove(&mut self, plan: &Plan, from: usize) {
        self.apply(plan, from, false);
    }

    fn apply(&mut self, plan: &Plan, from: usize, add: bool) {
        for t in from.max(plan.start)..plan.end() {
            let base = t * self.racks;
            for &(r, x) in plan.at(t) {
                let cell = &mut self.load[base + r as usize];
                *cell = if add { *cell + x } else { *cell - x };
                debug_assert!(*cell <= self.capacity, "constraint A.10 broken");
            }
            for (r, m) in plan.migrations_at(t) {
                let cell = &mut self.arriving[base + r as usize];
                *cell = if add { *cell + m } else { *cell - m };
            }
        }
    }

    /// The energy rack `r` needs in epoch `t`: its VMs and the migrations into it
    /// (constraint A.11's left side), kWh.
    pub(crate) fn demand_kwh(&self, t: usize, r: usize, cfg: &SlaConfig) -> f64 {
        self.load(t, r) as f64 * cfg.slot_kwh() + self.arriving(t, r) as f64 * cfg.migration_kwh
    }

    /// Epoch `t`'s buses when `green_kwh` of green energy is available: from the right,
    /// each rack joins the Green Bus while the energy left covers its demand (Eq. A.5,
    /// A.12, A.13); the rest of the green energy goes to the Mixed Bus.
    pub(crate) fn partition(&self, t: usize, green_kwh: f64, cfg: &SlaConfig) -> Partition {
        let mut left = green_kwh;
        let mut boundary = self.racks;
        let mut green_racks = 0.0;
        while boundary > 0 {
            let d = self.demand_kwh(t, boundary - 1, cfg);
            if d > left + ENERGY_SLACK {
                break;
            }
            left -= d;
            green_racks += d;
            boundary -= 1;
        }
        let mixed: f64 = (0..boundary).map(|r| self.demand_kwh(t, r, cfg)).sum();
        let to_mixed = left.max(0.0).min(mixed);
        Partition {
            boundary,
            green_racks_kwh: green_racks,
            green_to_mixed_kwh: to_mixed,
            brown_kwh: mixed - to_mixed,
        }
    }
}

/// A job the datacenter has admitted: its contract, its plan, and the green slots it
/// has had so far.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Admitted {
    /// Its index in the trace.
    pub(crate) job: usize,
    /// V_j, T_j, G_j.
    pub(crate) terms: JobTerms,
    /// Where its VMs run, its whole run (past epochs too).
    pub(crate) plan: Plan,
    /// Slots it has run on green racks, in epochs already run.
    pub(crate) green: u64,
}

impl Admitted {
    /// Green slots it still needs.
    pub(crate) fn green_needed(&self) -> u32 {
        self.terms.missed(self.green) as u32
    }
}

/// Every admitted job and the load they put on the racks.
#[derive(Debug, Clone)]
pub(crate) struct Schedule {
    /// The racks' load.
    pub(crate) dc: Datacenter,
    /// Admitted jobs, in the order admitted.
    pub(crate) jobs: Vec<Admitted>,
}

impl Schedule {
    /// An empty schedule.
    pub(crate) fn new(dc: Datacenter) -> Schedule {
        Schedule {
            dc,
            jobs: Vec::new(),
        }
    }

    /// Admits a job with its plan; its index in `jobs`.
    pub(crate) fn admit(&mut self, job: usize, terms: JobTerms, plan: Plan) -> usize {
        self.dc.add(&plan, 0);
        self.jobs.push(Admitted {
            job,
            terms,
            plan,
            green: 0,
        });
        self.jobs.len() - 1
    }

    /// Withdraws the last admitted job.
    pub(crate) fn withdraw_last(&mut self) {
        if let Some(a) = self.jobs.pop() {
            self.dc.remove(&a.plan, 0);
        }
    }

    /// Takes job `j`'s placements from epoch `from` on out of the load (the plan keeps
    /// them until [`Schedule::put_tail`]).
    pub(crate) fn take_tail(&mut self, j: usize, from: usize) {
        self.dc.remove(&self.jobs[j].plan, from);
    }

    /// Gives job `j` `tail` from epoch `from` on and adds it to the load; its old tail
    /// must have been taken out.
    pub(crate) fn put_tail(&mut self, j: usize, from: usize, tail: Vec<Placement>) {
        self.jobs[j].plan.splice(from, tail);
        self.dc.add(&self.jobs[j].plan, from);
    }

    /// Jobs with epochs at or after `now`.
    pub(crate) fn active(&self, now: usize) -> Vec<usize> {
        (0..self.jobs.len())
            .filter(|&j| self.jobs[j].plan.end() > now)
            .collect()
    }
}

/// The LP reformulation's boundary (§A.4.4): with green racks taken to be full,
/// `green_kwh` powers ⌊green_kwh / (RC·EV)⌋ racks from the right.
pub(crate) fn assumed_full_boundary(green_kwh: f64, cfg: &SlaConfig) -> usize {
    let rack_kwh = cfg.rack_capacity as f64 * cfg.slot_kwh();
    let racks = ((green_kwh + ENERGY_SLACK) / rack_kwh).floor().max(0.0) as usize;
    cfg.racks - racks.min(cfg.racks)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn plan(start: usize, epochs: Vec<Placement>) -> Plan {
        Plan { start, epochs }
    }

    #[test]
    fn migrations_count_vms_arriving_on_a_rack_after_the_first_epoch() {
        let p = plan(
            3,
            vec![
                vec![(0, 2)],
                vec![(0, 1), (2, 1)],
                vec![(1, 2)],
                vec![(1, 2)],
            ],
        );
        assert_eq!(p.migrations_at(3).count(), 0);
        assert_eq!(p.migrations_at(4).collect::<Vec<_>>(), vec![(2, 1)]);
        assert_eq!(p.migrations_at(5).collect::<Vec<_>>(), vec![(1, 2)]);
        assert_eq!(p.migrations_at(6).count(), 0);
        assert_eq!(p.migrations_from(0), 3);
        assert_eq!(p.migrations_from(5), 2);
        assert_eq!(p.at(2), &[]);
        assert_eq!(p.at(7), &[]);
    }

    #[test]
    fn adding_and_removing_a_plan_tail_keeps_the_load_exact() {
        let mut dc = Datacenter::new(3, 4, 8);
        let mut p = plan(1, vec![vec![(0, 2)], vec![(0, 2)], vec![(0, 2)]]);
        dc.add(&p, 0);
        assert_eq!((dc.load(1, 0), dc.servers(2), dc.free(3, 0)), (2, 2, 2));
        // Move the last two epochs to rack 2: two VMs migrate in epoch 2.
        dc.remove(&p, 2);
        p.splice(2, vec![vec![(2, 2)], vec![(2, 2)]]);
        dc.add(&p, 2);
        assert_eq!((dc.load(1, 0), dc.load(2, 0), dc.load(2, 2)), (2, 0, 2));
        assert_eq!((dc.arriving(2, 2), dc.arriving(3, 2)), (2, 0));
        dc.remove(&p, 0);
        assert!((0..8).all(|t| dc.servers(t) == 0));
        assert!((0..8).all(|t| (0..3).all(|r| dc.arriving(t, r) == 0)));
    }

    #[test]
    fn green_racks_run_from_the_right_and_the_rest_of_the_green_goes_to_the_mixed_bus() {
        let cfg = SlaConfig {
            racks: 4,
            rack_capacity: 4,
            ..SlaConfig::default()
        };
        let ev = cfg.slot_kwh();
        let mut dc = Datacenter::new(4, 4, 1);
        // Loads 4, 1, 3, 0 from the left.
        dc.add(&plan(0, vec![vec![(0, 4), (1, 1), (2, 3)]]), 0);
        // Enough for racks 3 (empty) and 2 (3 VMs) but not rack 1 too? 3.5 slots.
        let p = dc.partition(0, 3.5 * ev, &cfg);
        assert_eq!(p.boundary, 2);
        assert!((p.green_racks_kwh - 3.0 * ev).abs() < 1e-12);
        assert!((p.green_to_mixed_kwh - 0.5 * ev).abs() < 1e-12);
        assert!((p.brown_kwh - 4.5 * ev).abs() < 1e-12);
        // Rack 1 fits with 4 slots; rack 0 then does not, even though only it is left.
        let p = dc.partition(0, 4.0 * ev, &cfg);
        assert_eq!(p.boundary, 1);
        assert!((p.brown_kwh - 4.0 * ev).abs() < 1e-12);
        // Everything green, the surplus unused.
        let p = dc.partition(0, 20.0 * ev, &cfg);
        assert_eq!((p.boundary, p.brown_kwh), (0, 0.0));
        // Nothing: all racks on the Mixed Bus but the empty rightmost one.
        assert_eq!(dc.partition(0, 0.0, &cfg).boundary, 3);
        // Assumed full: 9 slots' energy powers 2 racks of 4.
        assert_eq!(assumed_full_boundary(9.0 * ev, &cfg), 2);
        assert_eq!(assumed_full_boundary(100.0 * ev, &cfg), 0);
        assert_eq!(assumed_full_boundary(0.0, &cfg), 4);
    }
}
