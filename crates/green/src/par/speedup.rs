//! Speedup profiles SP(n, v) of the NAS Parallel Benchmarks, the allocations GreenPar may give a job, and Nebulous's speedup hints (§B.3.1, §B.4, Fig. B.4).
//!
//! A job asks for N servers and runs v VMs, one MPI process each (§B.3.1). Baseline and
//! Reactive always start v = 2N (two VMs per dual-core server); Aggressive, Offline and
//! Nebulous choose v = 2N or v = 4N when the job starts (§B.3.1). The job may then run on
//! n servers where n ≤ v, at most four VMs share a server, and every server holds the same
//! number of VMs (§B.4's powers of two): n ∈ {v/4, v/2, v}, whichever are whole numbers.
//! For N a power of two these are the appendix's power-of-two allocations; for any other N
//! they are N times a power of two (a departure: the appendix's traces only ask for
//! powers of two).
//!
//! **The profiles are ours.** Fig. B.4 plots measured speedups of FT, LU, MG, CG, SP, EP
//! and IS with 16 VMs on 4, 8 and 16 servers (BT's equals SP's), but the text gives none
//! of the numbers. We define each application's speed on every allowed (n, v) relative to
//! its requested allocation (N servers, 2N VMs), shaped by what the text does say:
//!
//! - IS is communication-bound: one VM per server runs it 66% faster than two (§B.4);
//! - EP is embarrassingly parallel and near linear in its VMs (§B.5, "impact of
//!   application speedup"), but gains nothing from an idle second core;
//! - FT (all-to-all transposes), CG and MG (memory-bound) sit between, and LU, SP and BT
//!   are mostly compute-bound; consolidating four VMs on a server costs the
//!   compute-bound ones about half their speed, the communication-bound ones less
//!   (messages between VMs of one server skip the 1 Gbps network), which is what makes
//!   consolidation save energy at night (§B.5, Figs. B.8-B.12);
//! - twice the VMs on the same servers oversubscribes the cores and is a little slower.
//!
//! The appendix's SP_j(n) = RT_j(1)/RT_j(n) enters every rule only through ratios such
//! as SP_j(n, v)/SP_j(N) (Reactive's AverageSpeedup_j ≥ SP_j(N)/F, §B.3.2), so a speed
//! relative to the requested allocation is all the policies need; we take the ratios to
//! depend on n/N and v/N only, the same for every N (a simplification: the real curves
//! flatten for larger N).

/// The most VMs one server holds (§B.4).
pub(crate) const MAX_VMS_PER_SERVER: u32 = 4;

/// Nebulous's user-given hint of how well a job speeds up with more resources (§B.3.2).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) enum Hint {
    /// It will not speed up: Nebulous never grows it.
    Poor,
    /// A little.
    Fair,
    /// Well.
    Good,
    /// Near linearly.
    Excellent,
}

/// One application's speed on each allowed allocation, relative to N servers with 2N VMs.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct AppProfile {
    /// The application, lower case (`generic` for a job that names none).
    pub(crate) name: &'static str,
    /// `speed[w][k]`: v = 2N (w = 0) or 4N (w = 1) VMs, k = 1, 2 or 4 VMs per server
    /// (index 0, 1, 2). `speed[0][1]` is the requested allocation, 1.
    speed: [[f64; 3]; 2],
}

/// Builds a profile from its six speeds (ours; see the module's docs).
const fn app(name: &'static str, two: [f64; 3], four: [f64; 3]) -> AppProfile {
    AppProfile {
        name,
        speed: [two, four],
    }
}

/// The profiles: `[k = 1, k = 2, k = 4]` VMs per server for 2N VMs, then for 4N VMs.
/// Ours, shaped by §B.4-B.5's descriptions; picked by hand.
const PROFILES: [AppProfile; 9] = [
    // Embarrassingly parallel: no gain from an idle core, linear in cores.
    app("ep", [1.02, 1.0, 0.48], [1.97, 1.95, 0.96]),
    // Communication-bound: +66% with one VM per server (§B.4).
    app("is", [1.66, 1.0, 0.70], [1.90, 1.35, 0.90]),
    // All-to-all transposes.
    app("ft", [1.30, 1.0, 0.62], [1.85, 1.55, 0.92]),
    // Irregular, memory-bound.
    app("cg", [1.35, 1.0, 0.60], [1.80, 1.50, 0.90]),
    // Memory-bound multigrid.
    app("mg", [1.25, 1.0, 0.58], [1.80, 1.60, 0.93]),
    // Mostly compute-bound wavefront.
    app("lu", [1.12, 1.0, 0.55], [1.85, 1.70, 0.95]),
    // SP and BT share a profile (Fig. B.4's caption).
    app("sp", [1.15, 1.0, 0.56], [1.90, 1.70, 0.95]),
    app("bt", [1.15, 1.0, 0.56], [1.90, 1.70, 0.95]),
    // A job that names no application: a middle profile (ours).
    app("generic", [1.15, 1.0, 0.55], [1.80, 1.60, 0.94]),
];

impl AppProfile {
    /// The profile of `app` (lower case; empty means `generic`), or `None` for an
    /// application we have none for.
    pub(crate) fn of(app: &str) -> Option<AppProfile> {
        let name = if app.is_empty() { "generic" } else { app };
        PROFILES.iter().find(|p| p.name == name).copied()
    }

    /// The applications with profiles, for error messages.
    pub(crate) fn names() -> Vec<&'static str> {
        PROFILES.iter().map(|p| p.name).collect()
    }

    /// Speed with `vms` VMs on `servers` servers relative to `requested` servers with
    /// 2·`requested` VMs: SP(n, v)/SP(N, 2N). `(servers, vms)` must be allowed
    /// ([`allowed_servers`]).
    pub(crate) fn speed(&self, requested: u32, vms: u32, servers: u32) -> f64 {
        let w = usize::from(vms > 2 * requested);
        let k = match vms / servers.max(1) {
            0 | 1 => 0,
            2 | 3 => 1,
            _ => 2,
        };
        self.speed[w][k]
    }

    /// The user's hint for Nebulous (§B.3.2), which we derive from the profile ("correct
    /// speedup hints", §B.3.2): the best gain from twice the requested servers, with 2N
    /// or 4N VMs. Thresholds picked by hand.
    pub(crate) fn hint(&self) -> Hint {
        let gain = self.speed[0][0].max(self.speed[1][1]);
        if gain >= 1.9 {
            Hint::Excellent
        } else if gain >= 1.6 {
            Hint::Good
        } else if gain >= 1.3 {
            Hint::Fair
        } else {
            Hint::Poor
        }
    }
}

/// The server counts a job with `vms` VMs may run on, ascending: v/4, v/2 and v where
/// whole (§B.4: at most four VMs per server, no more servers than VMs, the same number
/// of VMs on each).
pub(crate) fn allowed_servers(vms: u32) -> Vec<u32> {
    [MAX_VMS_PER_SERVER, 2, 1]
        .iter()
        .filter(|&&k| vms.is_multiple_of(k) && vms / k >= 1)
        .map(|&k| vms / k)
        .collect()
}

/// The VM counts a job asking for `requested` servers may start with: 2N and 4N (§B.3.1).
pub(crate) fn vm_choices(requested: u32) -> [u32; 2] {
    [2 * requested, 4 * requested]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn allocations_are_whole_power_of_two_shares_of_the_vms() {
        assert_eq!(allowed_servers(16), vec![4, 8, 16]);
        assert_eq!(allowed_servers(2), vec![1, 2]);
        assert_eq!(allowed_servers(4), vec![1, 2, 4]);
        assert_eq!(allowed_servers(6), vec![3, 6]);
        for v in 1..200 {
            for n in allowed_servers(v) {
                assert!(n <= v && v / n <= MAX_VMS_PER_SERVER && v % n == 0);
            }
        }
    }

    #[test]
    fn profiles_have_the_shapes_the_appendix_describes() {
        let is = AppProfile::of("is").unwrap();
        let ep = AppProfile::of("ep").unwrap();
        // IS: one VM per server is 66% faster than two (§B.4).
        assert!((is.speed(8, 16, 16) / is.speed(8, 16, 8) - 1.66).abs() < 1e-9);
        // EP: near linear in VMs, nothing from an idle core.
        assert!(ep.speed(8, 32, 16) > 1.9 && ep.speed(8, 16, 16) < 1.05);
        for p in PROFILES {
            assert_eq!(p.speed(4, 8, 4), 1.0, "{}", p.name);
            // Consolidation slows, spreading never does.
            assert!(p.speed(4, 8, 2) < 1.0 && p.speed(4, 8, 8) >= 1.0);
            assert!(p.speed(4, 16, 4) < p.speed(4, 16, 8));
            assert!(p.speed(4, 16, 8) < p.speed(4, 16, 16));
        }
        // Consolidating saves energy per unit of work only for the non-EP codes:
        // half the servers at (about) the same power per server.
        assert!(0.5 / is.speed(4, 8, 2) < 0.8);
        assert!(0.5 / ep.speed(4, 8, 2) > 1.0);
        assert_eq!(AppProfile::of("").unwrap().name, "generic");
        assert!(AppProfile::of("xx").is_none());
        assert_eq!(
            AppProfile::of("bt"),
            Some(app("bt", sp().speed[0], sp().speed[1]))
        );
        assert_eq!(ep.hint(), Hint::Excellent);
        assert!(is.hint() >= Hint::Good);
    }

    fn sp() -> AppProfile {
        AppProfile::of("sp").unwrap()
    }
}
