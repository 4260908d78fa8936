//! The profit model of §A.4.3 (Eqs. A.1-A.8): a job's contract in slots, its revenue, its penalty, and the price of brown energy.
//!
//! A slot is one VM for one epoch of [`EPOCH_H`] hours (§A.4.2). Prices are per
//! VM-hour (§A.5.1), so each slot earns or costs a quarter of them.
//!
//! Departures, each small:
//! - G_j is a whole number of slots: the fewest that give the job its Green SLA's
//!   share of T_j·V_j, rounded up, since an SLA is a minimum (§A.4.1). The client pays
//!   R_g for those G_j slots (Eq. A.2).
//! - The opportunity cost (Eq. A.7) steers the schedulers but is not money paid; the
//!   profit reported is revenue − penalty − brown energy cost, and the opportunity
//!   cost is reported beside it.

use crate::{Job, EPOCH_H};

use super::SlaConfig;

/// Slack for floating-point rounding when turning hours and shares into slots.
const ROUND_SLACK: f64 = 1e-9;

/// One job's contract in slots (Table A.1): V_j, T_j and G_j.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct JobTerms {
    /// V_j: the job's VMs.
    pub(crate) vms: u32,
    /// T_j: epochs it runs, ⌈runtime / epoch⌉ (§A.5.1).
    pub(crate) epochs: u32,
    /// G_j: green slots its Green SLA requires.
    pub(crate) green_slots: u32,
}

impl JobTerms {
    /// The terms of `job`: its servers are its VMs (§A.5.1, one VM per node).
    pub(crate) fn of(job: &Job) -> JobTerms {
        let epochs = (job.runtime_h / EPOCH_H - ROUND_SLACK).ceil().max(1.0) as u32;
        let slots = epochs as f64 * job.servers as f64;
        let green_slots = (job.green_sla / 100.0 * slots - ROUND_SLACK)
            .ceil()
            .max(0.0) as u32;
        JobTerms {
            vms: job.servers,
            epochs,
            green_slots,
        }
    }

    /// T_j·V_j: every slot of the job.
    pub(crate) fn slots(&self) -> u64 {
        self.epochs as u64 * self.vms as u64
    }

    /// Eq. A.2: R_g for each contracted green slot, R_b for each other slot, dollars.
    pub(crate) fn revenue(&self, cfg: &SlaConfig) -> f64 {
        let green = self.green_slots as f64;
        let other = self.slots() as f64 - green;
        (green * cfg.green_price + other * cfg.brown_price) * EPOCH_H
    }

    /// Green slots still missing when the job has had `green` of them.
    pub(crate) fn missed(&self, green: u64) -> u64 {
        (self.green_slots as u64).saturating_sub(green)
    }

    /// Eq. A.3: L for each contracted green slot not run on green energy, dollars.
    pub(crate) fn penalty(&self, green: u64, cfg: &SlaConfig) -> f64 {
        self.missed(green) as f64 * cfg.penalty_slot()
    }
}

/// Eq. A.8: the price of `kwh` of brown energy, dollars.
pub(crate) fn brown_cost(kwh: f64, cfg: &SlaConfig) -> f64 {
    kwh * cfg.energy_price
}

#[cfg(test)]
mod tests {
    use super::*;

    fn job(servers: u32, runtime_h: f64, green_sla: f64) -> Job {
        Job {
            id: "j".into(),
            arrival_h: 0.0,
            servers,
            runtime_h,
            green_sla,
            app: String::new(),
            line: 2,
        }
    }

    fn close(a: f64, b: f64) -> bool {
        (a - b).abs() < 1e-12
    }

    #[test]
    fn the_appendix_example_one_vm_one_hour_all_green() {
        // §A.5.1: a 1-VM, 1-hour job with a 100% Green SLA earns $0.29 if met, $0.04
        // if missed by half, and costs $0.21 with no green energy at all.
        let cfg = SlaConfig::default();
        let t = JobTerms::of(&job(1, 1.0, 100.0));
        assert_eq!((t.vms, t.epochs, t.green_slots), (1, 4, 4));
        let revenue = t.revenue(&cfg);
        assert!(close(revenue, 0.29));
        assert!(close(revenue - t.penalty(4, &cfg), 0.29));
        assert!(close(revenue - t.penalty(2, &cfg), 0.04));
        assert!(close(revenue - t.penalty(0, &cfg), -0.21));
        // The brown energy behind the misses: 140 W for half an hour, then an hour.
        assert!(close(brown_cost(2.0 * cfg.slot_kwh(), &cfg), 0.07 * 0.1055));
        assert!(close(brown_cost(4.0 * cfg.slot_kwh(), &cfg), 0.14 * 0.1055));
    }

    #[test]
    fn revenue_splits_green_and_other_slots_and_rounds_the_sla_up() {
        let cfg = SlaConfig::default();
        // 3 VMs for 2 h at 50%: 24 slots, 12 green: 12·0.29/4 + 12·0.24/4 = 1.59.
        let t = JobTerms::of(&job(3, 2.0, 50.0));
        assert_eq!((t.epochs, t.green_slots), (8, 12));
        assert!(close(t.revenue(&cfg), 1.59));
        // 1 VM for 40 min: 3 slots (⌈40/15⌉); 25% of 3 is 0.75, so 1 green slot.
        let t = JobTerms::of(&job(1, 40.0 / 60.0, 25.0));
        assert_eq!((t.epochs, t.green_slots), (3, 1));
        assert!(close(t.revenue(&cfg), (0.29 + 2.0 * 0.24) / 4.0));
        // No SLA: no green slots, no penalty whatever happens.
        let t = JobTerms::of(&job(5, 0.25, 0.0));
        assert_eq!((t.epochs, t.green_slots), (1, 0));
        assert!(close(t.penalty(0, &cfg), 0.0));
        assert!(close(t.revenue(&cfg), 5.0 * 0.06));
        // Green beyond the SLA earns nothing extra and costs nothing.
        let t = JobTerms::of(&job(1, 1.0, 50.0));
        assert_eq!(t.missed(4), 0);
        assert_eq!(t.missed(1), 1);
    }
}
