//! tailor's request kernels: the calibrated synthetic workload, Black-Scholes PDE pricing, Monte Carlo Asian options, and search on tantivy.

mod asian;
mod black_scholes;
pub mod search;
mod synthetic;

pub use asian::{simulate_paths, AsianCost, AsianJob, AsianOption, PathSums, PATHS_PER_UNIT};
pub use black_scholes::{
    normal_cdf, price_closed_form, price_pde, BlackScholesJob, EuropeanOption, Grid, PdeCalibration,
};
pub use synthetic::{Spinner, SyntheticJob, SyntheticShape};

use tailor_core::{Demand, DemandModel, SpecError, Speedup, SpeedupSpec};

/// A `WORKLOAD` of shared/spec/cli.md that this build can run.
#[derive(Debug, Clone)]
pub enum Workload {
    /// `synthetic:DEMAND[:SPEEDUP]`: calibrated CPU-bound requests. The speedup is
    /// `linear` (the default) or `amdahl:F`.
    Synthetic {
        /// Where each request's work comes from.
        demand: DemandModel,
        /// How each request parallelizes.
        shape: SyntheticShape,
    },
    /// `search`: queries on a tantivy index of GCIDE (or a corpus given by flag), each
    /// split across the index's segments.
    Search,
    /// `black-scholes:DEMAND`: each request prices a batch of European options by the
    /// Black-Scholes PDE, one option per unit, the batch sized to the request's work drawn
    /// from DEMAND (the tail-control paper's kernel, §5).
    BlackScholes {
        /// Where each request's work comes from.
        demand: DemandModel,
    },
    /// `asian[:SCALE]`: each request prices a path-dependent Asian option by Monte Carlo,
    /// its path count set by its volatility and notional (times SCALE, default 1), so
    /// its work is heavy-tailed (the dissertation's finance server, §5.2.1).
    Asian {
        /// Multiplies every request's path count.
        scale: f64,
    },
}

impl Workload {
    /// Parses the `WORKLOAD` syntax.
    pub fn parse(spec: &str) -> Result<Workload, SpecError> {
        let bad = |reason: &str| SpecError::Syntax {
            what: "workload",
            value: spec.to_string(),
            reason: reason.to_string(),
        };
        if spec == "search" {
            return Ok(Workload::Search);
        }
        if spec == "asian" {
            return Ok(Workload::Asian { scale: 1.0 });
        }
        if let Some(scale) = spec.strip_prefix("asian:") {
            let scale = scale
                .parse::<f64>()
                .ok()
                .filter(|s| s.is_finite() && *s > 0.0)
                .ok_or_else(|| bad("asian:SCALE takes a positive number"))?;
            return Ok(Workload::Asian { scale });
        }
        if let Some(demand) = spec.strip_prefix("black-scholes:") {
            let demand = DemandModel::new(
                Demand::parse(demand)?,
                Some(SpeedupSpec::Curve(Speedup::Linear)),
            )?;
            return Ok(Workload::BlackScholes { demand });
        }
        let rest = spec.strip_prefix("synthetic:").ok_or_else(|| {
            bad("expected search, synthetic:DEMAND[:SPEEDUP], black-scholes:DEMAND or asian[:SCALE]")
        })?;
        // The speedup, if any, is the last part: `:linear` or `:amdahl:F`.
        let (demand, speedup) = if let Some(d) = rest.strip_suffix(":linear") {
            (d, Some("linear"))
        } else if let Some(at) = rest.rfind(":amdahl:") {
            (&rest[..at], Some(&rest[at + 1..]))
        } else if rest.contains(":table:") {
            return Err(bad(
                "a synthetic workload's speedup is linear or amdahl:F (a serial fraction)",
            ));
        } else {
            (rest, None)
        };
        let speedup = match speedup {
            Some(s) => match Speedup::parse(s)? {
                SpeedupSpec::Curve(c) => c,
                SpeedupSpec::Profile => unreachable!("only linear and amdahl reach here"),
            },
            None => Speedup::Linear,
        };
        let shape = SyntheticShape::from_speedup(&speedup).map_err(|r| bad(&r))?;
        let demand = DemandModel::new(Demand::parse(demand)?, Some(SpeedupSpec::Curve(speedup)))?;
        Ok(Workload::Synthetic { demand, shape })
    }
}

/// Runs `measure(core)` on one thread per core at once, as a loaded server would, and
/// returns the median of all the values they return (calibrations use it).
fn median_on_every_core(measure: impl Fn(usize) -> Vec<f64> + Sync) -> Option<f64> {
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    let measure = &measure;
    let mut values: Vec<f64> = std::thread::scope(|scope| {
        let runs: Vec<_> = (0..cores)
            .map(|core| scope.spawn(move || measure(core)))
            .collect();
        runs.into_iter()
            .flat_map(|h| h.join().unwrap_or_default())
            .collect()
    });
    values.sort_by(f64::total_cmp);
    values.get(values.len() / 2).copied()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_demand_and_speedup() {
        let Ok(Workload::Synthetic { demand, shape }) =
            Workload::parse("synthetic:scale:0.075:shape:lucene:amdahl:0.05")
        else {
            panic!("a synthetic workload")
        };
        assert!((demand.mean_work_ms() - 20.0).abs() < 0.5);
        assert_eq!(shape.serial_fraction, 0.05);
        let Ok(Workload::Synthetic { shape, .. }) = Workload::parse("synthetic:exp:10") else {
            panic!("a synthetic workload")
        };
        assert_eq!(shape.serial_fraction, 0.0);
        let Ok(Workload::Synthetic { demand, .. }) =
            Workload::parse("synthetic:lognormal:10:13:linear")
        else {
            panic!("a synthetic workload")
        };
        assert_eq!(demand.mean_work_ms(), 10.0);
        for bad in [
            "synthetic:",
            "synthetic:exp:10:table:1,2",
            "search:gcide",
            "tantivy",
            "synthetic:exp:10:amdahl:2",
        ] {
            assert!(Workload::parse(bad).is_err(), "{bad:?}");
        }
        assert!(matches!(Workload::parse("search"), Ok(Workload::Search)));
    }
}
