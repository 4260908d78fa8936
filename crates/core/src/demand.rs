//! Demand models: where each request's sequential work and speedup curve come from.

use std::path::Path;
use std::sync::Arc;

use rand::RngExt;
use rand_distr::{Distribution, Exp1, LogNormal};

use crate::distribution::BinnedDistribution;
use crate::error::{clip, SpecError};
use crate::profile::DemandProfile;
use crate::shapes::Shape;
use crate::speedup::{Speedup, SpeedupSpec};
use crate::Rng;

/// A distribution of sequential work, as named by the `DEMAND` syntax.
#[derive(Debug, Clone, PartialEq)]
pub enum Demand {
    /// Exponential with the given mean.
    Exp {
        /// Mean work in ms.
        mean_ms: f64,
    },
    /// Every request has the same work.
    Const {
        /// The work in ms.
        ms: f64,
    },
    /// Log-normal with the given mean and standard deviation of the work itself.
    LogNormal {
        /// Mean work in ms.
        mean_ms: f64,
        /// Standard deviation of the work in ms.
        sd_ms: f64,
    },
    /// Requests drawn uniformly, with replacement, from a profile.
    Profile(Arc<DemandProfile>),
    /// Work drawn from a binned distribution: a bin by its probability, then uniformly
    /// within the bin, between the previous bin's `work_ms` (0 for the first) and its own.
    Distribution(BinnedDistribution),
    /// A preset shaped after a paper's workload.
    Shape(Shape),
    /// Another demand with every request's work multiplied by `factor` (`scale:F:DEMAND`,
    /// e.g. `scale:0.075:shape:lucene` for Lucene's shape at a mean near 20 ms).
    Scaled {
        /// The multiplier, positive.
        factor: f64,
        /// The demand scaled.
        inner: Box<Demand>,
    },
}

/// The most work, in ms, a `DEMAND` string may give a request's mean, sd or constant
/// work: a day.
pub(crate) const MAX_WORK_MS: f64 = 86_400_000.0;

/// The largest `scale:FACTOR:DEMAND` factor.
const MAX_SCALE: f64 = 1e6;

impl Demand {
    /// Parses the `DEMAND` syntax of shared/spec/cli.md, reading any file it names.
    pub fn parse(spec: &str) -> Result<Demand, SpecError> {
        let bad = |reason: &str| SpecError::syntax("demand", spec, reason);
        let forms = "expected exp:MEAN, const:MS, lognormal:MEAN:SD, profile:PATH, \
                     distribution:PATH, shape:bing, shape:lucene, shape:lucene-flat, shape:finance or \
                     scale:FACTOR:DEMAND";
        let (head, rest) = spec.split_once(':').ok_or_else(|| bad(forms))?;
        let bounded = |text: &str, what: &str, max: f64| -> Result<f64, SpecError> {
            match text.parse::<f64>() {
                Ok(v) if v.is_finite() && v > 0.0 && v <= max => Ok(v),
                _ => Err(bad(&format!(
                    "{what} {:?} must be a number above 0 and at most {max}",
                    clip(text)
                ))),
            }
        };
        let positive = |text: &str, what: &str| bounded(text, what, MAX_WORK_MS);
        match head {
            "exp" => Ok(Demand::Exp {
                mean_ms: positive(rest, "mean")?,
            }),
            "const" => Ok(Demand::Const {
                ms: positive(rest, "work")?,
            }),
            "lognormal" => {
                let (mean, sd) = rest
                    .split_once(':')
                    .ok_or_else(|| bad("expected lognormal:MEAN:SD"))?;
                Ok(Demand::LogNormal {
                    mean_ms: positive(mean, "mean")?,
                    sd_ms: positive(sd, "standard deviation")?,
                })
            }
            "profile" => Ok(Demand::Profile(Arc::new(DemandProfile::read(Path::new(
                rest,
            ))?))),
            "distribution" => Ok(Demand::Distribution(BinnedDistribution::read(Path::new(
                rest,
            ))?)),
            "shape" => Shape::from_name(rest).map(Demand::Shape).ok_or_else(|| {
                bad("expected shape:bing, shape:lucene, shape:lucene-flat or shape:finance")
            }),
            "scale" => {
                let (factor, inner) = rest
                    .split_once(':')
                    .ok_or_else(|| bad("expected scale:FACTOR:DEMAND"))?;
                Ok(Demand::Scaled {
                    factor: bounded(factor, "scale factor", MAX_SCALE)?,
                    inner: Box::new(Demand::parse(inner)?),
                })
            }
            _ => Err(bad(forms)),
        }
        .and_then(|d| match d.validate() {
            Ok(()) => Ok(d),
            Err(reason) => Err(bad(&reason)),
        })
    }

    /// Checks that the parameters describe a distribution that can be sampled: means
    /// and times positive and finite, and log-normal moments that do not overflow.
    pub fn validate(&self) -> Result<(), String> {
        let positive = |x: f64, what: &str| {
            if x.is_finite() && x > 0.0 {
                Ok(())
            } else {
                Err(format!(
                    "{what} must be a positive finite number, found {x}"
                ))
            }
        };
        match self {
            Demand::Exp { mean_ms } => {
                positive(*mean_ms, "the mean")?;
                positive(1.0 / mean_ms, "the rate 1/mean")
            }
            Demand::Const { ms } => positive(*ms, "the work"),
            Demand::LogNormal { mean_ms, sd_ms } => {
                positive(*mean_ms, "the mean")?;
                positive(*sd_ms, "the standard deviation")?;
                lognormal_params(*mean_ms, *sd_ms)
                    .map(|_| ())
                    .ok_or_else(|| {
                        format!("a log-normal with mean {mean_ms} and sd {sd_ms} overflows")
                    })
            }
            Demand::Profile(_) | Demand::Distribution(_) | Demand::Shape(_) => Ok(()),
            Demand::Scaled { factor, inner } => {
                positive(*factor, "the scale factor")?;
                inner.validate()
            }
        }
    }

    /// Whether each request brings its own speedup curve (profiles and shapes do).
    pub fn has_own_speedups(&self) -> bool {
        match self {
            Demand::Profile(_) | Demand::Shape(_) => true,
            Demand::Scaled { inner, .. } => inner.has_own_speedups(),
            _ => false,
        }
    }
}

/// One request's demand: its sequential work and its speedup curve.
#[derive(Debug, Clone, PartialEq)]
pub struct RequestDemand {
    /// Sequential work in ms: its execution time alone at degree 1.
    pub work_ms: f64,
    /// How much faster it runs at each degree.
    pub speedup: Speedup,
}

/// A demand and the speedup every request gets: the model that draws requests.
#[derive(Debug, Clone, PartialEq)]
pub struct DemandModel {
    demand: Demand,
    /// Every drawn work is multiplied by this (from `scale:`; 1 otherwise).
    scale: f64,
    /// `None`: each request's own curve (profiles and shapes).
    speedup: Option<Speedup>,
    /// The log-normal, built once for `Demand::LogNormal`.
    lognormal: Option<LogNormal<f64>>,
    /// Each profiled request's speedup curve, built once for `Demand::Profile`.
    profile_speedups: Vec<Speedup>,
}

impl DemandModel {
    /// Combines a demand with an optional `SPEEDUP`. Without one, profiles and shapes use
    /// each request's own speedups and the other demands are linear. `profile` is only
    /// accepted for demands whose requests carry their own speedups.
    pub fn new(demand: Demand, speedup: Option<SpeedupSpec>) -> Result<Self, SpecError> {
        demand
            .validate()
            .map_err(|reason| SpecError::syntax("demand", &format!("{demand:?}"), reason))?;
        let mut demand = demand;
        let mut scale = 1.0;
        while let Demand::Scaled { factor, inner } = demand {
            scale *= factor;
            demand = *inner;
        }
        let speedup = match speedup {
            Some(SpeedupSpec::Curve(curve)) => Some(curve),
            Some(SpeedupSpec::Profile) | None if demand.has_own_speedups() => None,
            None => Some(Speedup::Linear),
            Some(SpeedupSpec::Profile) => {
                return Err(SpecError::syntax(
                    "speedup",
                    "profile",
                    "only profile: and shape: demands carry their own speedups",
                ))
            }
        };
        let lognormal = match &demand {
            Demand::LogNormal { mean_ms, sd_ms } => {
                let (mu, sigma) =
                    lognormal_params(*mean_ms, *sd_ms).expect("checked by Demand::validate");
                Some(LogNormal::new(mu, sigma).expect("checked by Demand::validate"))
            }
            _ => None,
        };
        let profile_speedups = match &demand {
            Demand::Profile(p) => p
                .requests()
                .iter()
                .map(|r| Speedup::Table(r.speedups().into()))
                .collect(),
            _ => Vec::new(),
        };
        Ok(DemandModel {
            demand,
            scale,
            speedup,
            lognormal,
            profile_speedups,
        })
    }

    /// The highest degree whose speedup is known, or `None` when every degree's is: a
    /// `table:` curve knows its length, a profile its profiled degrees. Linear and Amdahl
    /// curves, and the shapes (flat past their last degree by definition), know all.
    pub fn known_degrees(&self) -> Option<usize> {
        match (&self.speedup, &self.demand) {
            (Some(Speedup::Table(values)), _) => Some(values.len()),
            (Some(_), _) => None,
            (None, Demand::Profile(p)) => Some(p.max_degree()),
            (None, _) => None,
        }
    }

    /// The demand part of the model.
    pub fn demand(&self) -> &Demand {
        &self.demand
    }

    /// Draws one request.
    pub fn sample(&self, rng: &mut Rng) -> RequestDemand {
        let (work_ms, own) = match &self.demand {
            Demand::Exp { mean_ms } => (rng.sample::<f64, _>(Exp1) * mean_ms, None),
            Demand::Const { ms } => (*ms, None),
            Demand::LogNormal { .. } => {
                let dist = self.lognormal.as_ref().expect("built by DemandModel::new");
                (dist.sample(rng), None)
            }
            Demand::Profile(profile) => {
                let i = rng.random_range(0..profile.requests().len());
                let own = self.profile_speedups[i].clone();
                (profile.requests()[i].seq_ms(), Some(own))
            }
            Demand::Distribution(dist) => (sample_binned(dist, rng), None),
            Demand::Shape(shape) => {
                let (w, s) = shape.sample(rng);
                (w, Some(s))
            }
            Demand::Scaled { .. } => unreachable!("DemandModel::new unwraps scaling"),
        };
        let work_ms = work_ms * self.scale;
        let speedup = match (&self.speedup, own) {
            (Some(curve), _) => curve.clone(),
            (None, Some(own)) => own,
            (None, None) => Speedup::Linear,
        };
        RequestDemand { work_ms, speedup }
    }

    /// The mean sequential work in ms: exact for the parametric demands, profiles and
    /// distributions (taking each bin's work as its midpoint), and estimated from
    /// 200,000 seeded draws for the shapes.
    pub fn mean_work_ms(&self) -> f64 {
        self.scale * self.unscaled_mean_ms()
    }

    fn unscaled_mean_ms(&self) -> f64 {
        match &self.demand {
            Demand::Exp { mean_ms } | Demand::LogNormal { mean_ms, .. } => *mean_ms,
            Demand::Const { ms } => *ms,
            Demand::Profile(p) => {
                p.requests().iter().map(|r| r.seq_ms()).sum::<f64>() / p.requests().len() as f64
            }
            Demand::Distribution(d) => {
                let mut lower = 0.0;
                let mut mean = 0.0;
                for b in d.bins() {
                    mean += b.probability * (lower + b.work_ms) / 2.0;
                    lower = b.work_ms;
                }
                mean
            }
            Demand::Shape(shape) => {
                let mut rng = crate::seeded_rng(0x7a11);
                (0..200_000).map(|_| shape.sample(&mut rng).0).sum::<f64>() / 200_000.0
            }
            Demand::Scaled { .. } => unreachable!("DemandModel::new unwraps scaling"),
        }
    }

    /// Draws `count` requests.
    pub fn sample_many(&self, count: usize, rng: &mut Rng) -> Vec<RequestDemand> {
        (0..count).map(|_| self.sample(rng)).collect()
    }
}

/// The (mu, sigma) of a log-normal with the given mean and standard deviation, or `None`
/// when they are not finite (an extreme ratio sd / mean overflows).
pub fn lognormal_params(mean: f64, sd: f64) -> Option<(f64, f64)> {
    let sigma2 = (1.0 + (sd / mean).powi(2)).ln();
    let (mu, sigma) = (mean.ln() - sigma2 / 2.0, sigma2.sqrt());
    (mu.is_finite() && sigma.is_finite() && mean > 0.0 && sd >= 0.0).then_some((mu, sigma))
}

fn sample_binned(dist: &BinnedDistribution, rng: &mut Rng) -> f64 {
    let bins = dist.bins();
    let u: f64 = rng.random::<f64>() * bins.iter().map(|b| b.probability).sum::<f64>();
    let mut acc = 0.0;
    let mut lower = 0.0;
    for b in bins {
        acc += b.probability;
        if u < acc {
            // Uniform in (lower, work_ms]: 1 - U lies in (0, 1].
            return lower + (1.0 - rng.random::<f64>()) * (b.work_ms - lower);
        }
        lower = b.work_ms;
    }
    bins.iter()
        .rev()
        .find(|b| b.probability > 0.0)
        .map_or(bins[bins.len() - 1].work_ms, |b| b.work_ms)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::distribution::Bin;
    use crate::seeded_rng;

    fn model(spec: &str) -> DemandModel {
        DemandModel::new(Demand::parse(spec).unwrap(), None).unwrap()
    }

    fn mean_sd(m: &DemandModel, n: usize) -> (f64, f64) {
        let mut rng = seeded_rng(7);
        let w: Vec<f64> = (0..n).map(|_| m.sample(&mut rng).work_ms).collect();
        let mean = w.iter().sum::<f64>() / n as f64;
        let var = w.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / n as f64;
        (mean, var.sqrt())
    }

    #[test]
    fn parametric_demands_have_their_moments() {
        let (m, sd) = mean_sd(&model("exp:10"), 200_000);
        assert!((m - 10.0).abs() < 0.1 && (sd - 10.0).abs() < 0.2);
        let (m, sd) = mean_sd(&model("const:7.5"), 10);
        assert_eq!((m, sd), (7.5, 0.0));
        let (m, sd) = mean_sd(&model("lognormal:10:13"), 400_000);
        assert!((m - 10.0).abs() < 0.15, "mean {m}");
        assert!((sd - 13.0).abs() < 0.6, "sd {sd}");
    }

    #[test]
    fn binned_draws_stay_in_their_bins_with_their_probabilities() {
        let dist = BinnedDistribution::new(vec![
            Bin {
                work_ms: 1.0,
                probability: 0.25,
            },
            Bin {
                work_ms: 10.0,
                probability: 0.75,
            },
        ])
        .unwrap();
        let m = DemandModel::new(Demand::Distribution(dist), None).unwrap();
        let mut rng = seeded_rng(3);
        let w: Vec<f64> = (0..100_000).map(|_| m.sample(&mut rng).work_ms).collect();
        assert!(w.iter().all(|x| *x > 0.0 && *x <= 10.0));
        let small = w.iter().filter(|x| **x <= 1.0).count() as f64 / w.len() as f64;
        assert!((small - 0.25).abs() < 0.01, "{small}");
    }

    #[test]
    fn profile_demands_carry_each_requests_speedups() {
        let p = DemandProfile::parse("request,t1_ms,t2_ms\na,100,50\nb,10,20\n", "p").unwrap();
        let m = DemandModel::new(Demand::Profile(Arc::new(p)), None).unwrap();
        let mut rng = seeded_rng(1);
        for _ in 0..50 {
            let r = m.sample(&mut rng);
            let expected = if r.work_ms == 100.0 { 2.0 } else { 0.5 };
            assert_eq!(r.speedup.at(2), expected);
        }
        // An explicit curve overrides the profile's own.
        let p = DemandProfile::parse("request,t1_ms\na,100\n", "p").unwrap();
        let m = DemandModel::new(
            Demand::Profile(Arc::new(p)),
            Some(SpeedupSpec::Curve(Speedup::Linear)),
        )
        .unwrap();
        assert_eq!(m.sample(&mut rng).speedup.at(3), 3.0);
    }

    #[test]
    fn speedup_profile_needs_a_demand_with_its_own() {
        let e = DemandModel::new(Demand::Const { ms: 1.0 }, Some(SpeedupSpec::Profile));
        assert!(e.is_err());
        assert_eq!(model("exp:1").speedup, Some(Speedup::Linear));
    }

    #[test]
    fn scaling_multiplies_every_draw() {
        let base = model("exp:10");
        let scaled = model("scale:0.5:exp:10");
        let a = base.sample_many(50, &mut seeded_rng(4));
        let b = scaled.sample_many(50, &mut seeded_rng(4));
        for (x, y) in a.iter().zip(&b) {
            assert!((y.work_ms - 0.5 * x.work_ms).abs() < 1e-12);
        }
        assert_eq!(scaled.mean_work_ms(), 5.0);
        let lucene = model("scale:0.075:shape:lucene");
        assert!(
            (lucene.mean_work_ms() - 20.0).abs() < 0.5,
            "{}",
            lucene.mean_work_ms()
        );
        assert!(lucene.demand().has_own_speedups());
        assert!(Demand::parse("scale:0:exp:1").is_err());
        assert!(Demand::parse("scale:2").is_err());
    }

    #[test]
    fn seeded_draws_repeat_exactly() {
        for spec in ["exp:10", "lognormal:10:13", "shape:bing", "shape:lucene"] {
            let m = model(spec);
            let a = m.sample_many(100, &mut seeded_rng(9));
            let b = m.sample_many(100, &mut seeded_rng(9));
            assert_eq!(a, b, "{spec}");
            let c = m.sample_many(100, &mut seeded_rng(10));
            assert_ne!(a, c, "{spec}");
        }
    }

    #[test]
    fn rejects_malformed_demands() {
        for bad in [
            "",
            "exp",
            "exp:",
            "exp:-1",
            "exp:0",
            "exp:nan",
            "const:x",
            "lognormal:10",
            "lognormal:10:-1",
            "lognormal:1:1e160",
            "lognormal:1e-300:1e300",
            "exp:1e-320",
            "shape:google",
            "weibull:1",
        ] {
            assert!(Demand::parse(bad).is_err(), "{bad:?} was accepted");
        }
        let e = Demand::parse("profile:/nonexistent.csv").unwrap_err();
        assert!(e.to_string().contains("/nonexistent.csv"), "{e}");
    }
}
