//! The two greedy baselines of §A.4.4: First-Fit (FF), blind to energy, and Static Green-aware Placement (SGP), which never migrates.
//!
//! Both place a new job in the servers the schedule leaves free and never revisit it.
//!
//! - FF admits a job whenever every epoch of its run has V free servers. Within an
//!   epoch it keeps each VM on the rack it ran on the epoch before where that rack
//!   still has room, and puts the rest on the lowest-numbered racks with room. The
//!   appendix says only "first fit"; keeping VMs in place is our reading, so that FF
//!   migrates only when capacity forces it and never rejects a job that fits.
//! - SGP gives each rack an expected green share over the job's run: the fraction of
//!   its epochs in which the rack is on the Green Bus by the LP's prediction (green
//!   racks taken to be full, §A.4.4). It puts as many VMs as fit for the whole run on
//!   the rack whose share is closest to, but not below, the share the job still needs,
//!   recomputes that share for the VMs left, and repeats; it rejects the job when no
//!   rack has a high enough share or the racks run out.

use super::datacenter::{Datacenter, Placement};
use super::forecast::Forecast;
use super::SlaConfig;

/// Slack when comparing green shares.
const SHARE_SLACK: f64 = 1e-9;

/// FF's placement of `vms` VMs over `epochs` epochs from `start`, or `None` if some
/// epoch has fewer than `vms` free servers.
pub(crate) fn first_fit(
    dc: &Datacenter,
    start: usize,
    epochs: usize,
    vms: u32,
) -> Option<Vec<Placement>> {
    let racks = dc.racks();
    let mut out: Vec<Placement> = Vec::with_capacity(epochs);
    let mut x = vec![0u32; racks];
    for t in start..start + epochs {
        let free: u64 = (0..racks).map(|r| dc.free(t, r) as u64).sum();
        if free < vms as u64 {
            return None;
        }
        let mut placed = 0;
        for (r, xr) in x.iter_mut().enumerate() {
            *xr = (*xr).min(dc.free(t, r));
            placed += *xr;
        }
        for (r, xr) in x.iter_mut().enumerate() {
            if placed == vms {
                break;
            }
            let more = (dc.free(t, r) - *xr).min(vms - placed);
            *xr += more;
            placed += more;
        }
        out.push(
            x.iter()
                .enumerate()
                .filter(|(_, &v)| v > 0)
                .map(|(r, &v)| (r as u16, v))
                .collect(),
        );
    }
    Some(out)
}

/// SGP's placement of a job of `vms` VMs needing `green_slots` green slots over
/// `epochs` epochs from `start`, or `None` when it is rejected.
pub(crate) fn static_green(
    dc: &Datacenter,
    forecast: &Forecast,
    cfg: &SlaConfig,
    start: usize,
    epochs: usize,
    vms: u32,
    green_slots: u32,
) -> Option<Vec<Placement>> {
    let racks = dc.racks();
    let room: Vec<u32> = (0..racks)
        .map(|r| {
            (start..start + epochs)
                .map(|t| dc.free(t, r))
                .min()
                .unwrap_or(0)
        })
        .collect();
    let mut green_epochs = vec![0u32; racks];
    for t in start..start + epochs {
        let b = forecast.assumed_full_boundary(t, cfg);
        for g in green_epochs.iter_mut().skip(b) {
            *g += 1;
        }
    }
    let share = |r: usize| green_epochs[r] as f64 / epochs as f64;
    let mut used = vec![false; racks];
    let mut left = vms;
    let mut need = green_slots as f64;
    let mut placement: Placement = Vec::new();
    while left > 0 {
        let wanted = (need / (left as f64 * epochs as f64)).max(0.0);
        let r = (0..racks)
            .filter(|&r| !used[r] && room[r] > 0 && share(r) >= wanted - SHARE_SLACK)
            .min_by(|&a, &b| share(a).total_cmp(&share(b)).then(a.cmp(&b)))?;
        let k = room[r].min(left);
        used[r] = true;
        left -= k;
        need -= k as f64 * green_epochs[r] as f64;
        placement.push((r as u16, k));
    }
    placement.sort_unstable();
    Some(vec![placement; epochs])
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use proptest::prelude::*;

    use super::*;
    use crate::sla::datacenter::Plan;
    use crate::Prediction;

    proptest! {
        /// FF never rejects a job while every epoch of its run has room for it, and
        /// what it returns fits.
        #[test]
        fn first_fit_admits_whenever_capacity_remains(
            racks in 1usize..6,
            capacity in 1u32..6,
            loads in prop::collection::vec(prop::collection::vec(0u32..6, 6), 8),
            start in 0usize..4,
            epochs in 1usize..5,
            vms in 1u32..12,
        ) {
            let mut dc = Datacenter::new(racks, capacity, 8);
            for (t, row) in loads.iter().enumerate() {
                let p: Placement = (0..racks)
                    .map(|r| (r as u16, row[r].min(capacity)))
                    .filter(|p| p.1 > 0)
                    .collect();
                dc.add(&Plan { start: t, epochs: vec![p] }, 0);
            }
            let room = (start..start + epochs)
                .all(|t| (0..racks).map(|r| dc.free(t, r)).sum::<u32>() >= vms);
            let placed = first_fit(&dc, start, epochs, vms);
            prop_assert_eq!(placed.is_some(), room);
            if let Some(p) = placed {
                for (i, e) in p.iter().enumerate() {
                    prop_assert_eq!(e.iter().map(|x| x.1).sum::<u32>(), vms);
                    for &(r, x) in e {
                        prop_assert!(x <= dc.free(start + i, r as usize));
                    }
                }
            }
        }
    }

    fn forecast(kw: &[f64]) -> Forecast {
        let issues = BTreeMap::from([(0, kw.iter().copied().enumerate().collect())]);
        Forecast::new(
            &Prediction::from_issues(issues),
            0,
            kw.len(),
            &SlaConfig::default(),
        )
    }

    #[test]
    fn sgp_picks_the_least_green_rack_that_is_green_enough() {
        let cfg = SlaConfig {
            racks: 4,
            rack_capacity: 2,
            ..SlaConfig::default()
        };
        let rack_kw = 2.0 * cfg.server_watts / 1000.0;
        // Four epochs with 1, 2, 3, 3 racks' worth of sun: green shares of the racks
        // over them are 0, 0.5, 0.75 and 1.
        let f = forecast(&[rack_kw, 2.0 * rack_kw, 3.0 * rack_kw, 3.0 * rack_kw]);
        let dc = Datacenter::new(4, 2, 4);
        // 50%: rack 2 (share 0.5).
        assert_eq!(
            static_green(&dc, &f, &cfg, 0, 4, 1, 2),
            Some(vec![vec![(1, 1)]; 4])
        );
        // 0%: the brownest rack.
        assert_eq!(
            static_green(&dc, &f, &cfg, 0, 4, 2, 0),
            Some(vec![vec![(0, 2)]; 4])
        );
        // 3 VMs at 100%: two on rack 3, then the third still needs 100%: rejected.
        assert_eq!(static_green(&dc, &f, &cfg, 0, 4, 3, 12), None);
        // 3 VMs needing 8 of 12 slots: rack 2 (0.75) takes two VMs and 6 green slots,
        // leaving 2 of 4 for the third: rack 1 (0.5).
        assert_eq!(
            static_green(&dc, &f, &cfg, 0, 4, 3, 8),
            Some(vec![vec![(1, 1), (2, 2)]; 4])
        );
        // A rack full at any epoch of the run has no room for it.
        let mut dc = Datacenter::new(4, 2, 4);
        dc.add(
            &Plan {
                start: 3,
                epochs: vec![vec![(1, 2)]],
            },
            0,
        );
        assert_eq!(
            static_green(&dc, &f, &cfg, 0, 4, 1, 2),
            Some(vec![vec![(2, 1)]; 4])
        );
    }
}
