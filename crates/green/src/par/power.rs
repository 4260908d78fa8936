//! GreenPar's power model: a server's power by the VMs it runs, sleeping servers, and migration energy ME(n) (§B.3.2's Pow_j(n) and ME_j(n), §B.4's Parasol servers).
//!
//! §B.4: each server is a dual-core Atom drawing 22 W to 30 W, and idle servers sleep in
//! ACPI S3. We take a server's power as linear in its busy cores: `idle_w` with none,
//! `peak_w` with both, so one VM (one busy core) draws their midpoint and two or four VMs
//! draw `peak_w`. A sleeping server draws `sleep_w` (5% of peak by default, ours; 0 for
//! off). §B.3.2 approximates Pow(n) and ME(n) by linear functions shared by all jobs; so
//! do we. ME(Δn) charges `migration_s` of one server at peak power for each server a job
//! gains or loses (the appendix uses its measured average migration time without giving
//! it; our 30 s is picked by hand for a 384 MB VM over 1 Gbps with a few pre-copy rounds).

use super::ParConfig;

/// Cores per server (§B.4's dual-core Atom).
pub(crate) const CORES: u32 = 2;

/// Power of one server running `vms_per_server` VMs, W.
pub(crate) fn server_w(cfg: &ParConfig, vms_per_server: u32) -> f64 {
    let busy = vms_per_server.min(CORES) as f64 / CORES as f64;
    cfg.idle_w + (cfg.peak_w - cfg.idle_w) * busy
}

/// Power a job adds over leaving its servers asleep, with `vms` VMs on `servers`
/// servers, kW: Pow_j(n) less n sleeping servers.
pub(crate) fn job_extra_kw(cfg: &ParConfig, vms: u32, servers: u32) -> f64 {
    if servers == 0 {
        return 0.0;
    }
    servers as f64 * (server_w(cfg, vms / servers) - cfg.sleep_w) / 1000.0
}

/// The power of `capacity` sleeping servers, kW: the floor every epoch pays.
pub(crate) fn sleep_kw(cfg: &ParConfig, capacity: u32) -> f64 {
    capacity as f64 * cfg.sleep_w / 1000.0
}

/// ME(Δn): the energy of changing a job's allocation by `delta` servers, kWh.
pub(crate) fn migration_kwh(cfg: &ParConfig, delta: u32) -> f64 {
    delta as f64 * cfg.migration_s / 3600.0 * cfg.peak_w / 1000.0
}

/// How many servers the power `kw` can keep busy at peak beside the rest asleep: the G
/// of Reactive's pseudocode (Fig. B.2, line 5).
pub(crate) fn servers_powered(cfg: &ParConfig, capacity: u32, kw: f64) -> u32 {
    let spare_w = kw * 1000.0 - capacity as f64 * cfg.sleep_w;
    let per = cfg.peak_w - cfg.sleep_w;
    if spare_w <= 0.0 || per <= 0.0 {
        return 0;
    }
    ((spare_w / per).floor() as u32).min(capacity)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn power_follows_busy_cores() {
        let cfg = ParConfig::default();
        assert_eq!(server_w(&cfg, 1), 26.0);
        assert_eq!(server_w(&cfg, 2), 30.0);
        assert_eq!(server_w(&cfg, 4), 30.0);
        assert!((job_extra_kw(&cfg, 16, 8) - 8.0 * 28.5 / 1000.0).abs() < 1e-12);
        assert!((migration_kwh(&cfg, 4) - 4.0 * 30.0 * 30.0 / 3.6e6).abs() < 1e-12);
        // 50 servers: 75 W asleep; 1.5 kW keeps 50 busy, 0.36 kW keeps 10.
        assert_eq!(servers_powered(&cfg, 50, 1.5), 50);
        assert_eq!(servers_powered(&cfg, 50, 0.36), 10);
        assert_eq!(servers_powered(&cfg, 50, 0.05), 0);
    }
}
