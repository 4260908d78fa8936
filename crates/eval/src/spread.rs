//! What each query costs in the running service: SEQ's service times over the profiled t1.
//!
//! Drawn by query length: issue #22's model at this machine's cores.
//!
//! A query measured alone costs less than the same query in a running service (wake-ups,
//! two cores sharing caches and memory bandwidth), and not always the same: a few of its
//! executions take much longer than its mean when the VM preempts a worker for the
//! harness's threads or the hypervisor (docs/demo.md, "Where SEQ's 2-core model falls
//! short"). SEQ runs each query start to finish on one thread, so its live records give
//! each execution's cost directly: service time (start to finish) over the query's
//! profiled t1. The simulator at this machine's cores then runs every query at a cost
//! drawn from those ratios, taken from queries of about its length (the profile's t1
//! split into `BINS` bins of equal counts), rather than at its mean times one scale.

use rand::{RngExt, SeedableRng};
use rand_chacha::ChaCha8Rng;
use tailor_core::{DemandProfile, RequestProfile};
use tailor_sim::UnitRequest;

/// Bins of the profile's queries by t1, of equal counts.
const BINS: usize = 20;

/// Cost factors per profiled query: `factors[i]` are query i's copies, as many for every
/// query, so that drawing a copy uniformly draws each query as often as before.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Spread {
    factors: Vec<Vec<f64>>,
    /// The measured service time over the profiled t1, summed over the executions.
    mean: f64,
}

impl Spread {
    /// Every query at its profiled time times `scale`.
    pub(crate) fn constant(queries: usize, scale: f64) -> Spread {
        Spread {
            factors: vec![vec![scale]; queries],
            mean: scale,
        }
    }

    /// From measured `executions` (profiled t1, service time) of `profile`'s queries:
    /// `copies` factors per query, each drawn (seeded) from the ratios of its bin. `None`
    /// when nothing usable was measured.
    pub(crate) fn measure(
        profile: &DemandProfile,
        executions: &[(f64, f64)],
        copies: usize,
        seed: u64,
    ) -> Option<Spread> {
        let usable: Vec<(f64, f64)> = executions
            .iter()
            .copied()
            .filter(|&(t1, service)| t1 > 0.0 && service.is_finite() && service > 0.0)
            .collect();
        let work: f64 = usable.iter().map(|e| e.0).sum();
        if usable.is_empty() || work <= 0.0 {
            return None;
        }
        let mean = usable.iter().map(|e| e.1).sum::<f64>() / work;
        let mut t1: Vec<f64> = profile.requests().iter().map(|r| r.seq_ms()).collect();
        t1.sort_by(f64::total_cmp);
        // The upper t1 of each bin but the last.
        let edges: Vec<f64> = (1..BINS)
            .map(|b| t1[(b * t1.len() / BINS).min(t1.len() - 1)])
            .collect();
        let bin = |ms: f64| edges.partition_point(|&e| e < ms);
        let mut ratios = vec![Vec::new(); BINS];
        for &(ms, service) in &usable {
            ratios[bin(ms)].push(service / ms);
        }
        let mut rng = ChaCha8Rng::seed_from_u64(seed);
        let factors = profile
            .requests()
            .iter()
            .map(|r| {
                let own = &ratios[bin(r.seq_ms())];
                (0..copies.max(1))
                    .map(|_| {
                        if own.is_empty() {
                            mean
                        } else {
                            own[rng.random_range(0..own.len())]
                        }
                    })
                    .collect()
            })
            .collect();
        Some(Spread { factors, mean })
    }

    /// The measured service time over the profiled t1, over all executions measured.
    pub(crate) fn mean(&self) -> f64 {
        self.mean
    }

    /// The profile with each query replaced by its copies at their costs (ids
    /// `query#k`), and the executor model's request kinds in the same order.
    pub(crate) fn apply(
        &self,
        profile: &DemandProfile,
        kinds: &[UnitRequest],
    ) -> Result<(DemandProfile, Vec<UnitRequest>), String> {
        if self.factors.len() != profile.requests().len() || kinds.len() != self.factors.len() {
            return Err(format!(
                "cost factors for {} queries, a profile of {} and {} request kinds",
                self.factors.len(),
                profile.requests().len(),
                kinds.len()
            ));
        }
        let mut rows = Vec::new();
        let mut scaled = Vec::new();
        for ((r, kind), factors) in profile.requests().iter().zip(kinds).zip(&self.factors) {
            for (k, &f) in factors.iter().enumerate() {
                rows.push(RequestProfile {
                    id: if factors.len() == 1 {
                        r.id.clone()
                    } else {
                        format!("{}#{k}", r.id)
                    },
                    times_ms: r.times_ms.iter().map(|t| t * f).collect(),
                });
                scaled.push(UnitRequest {
                    units_ms: kind.units_ms.iter().map(|t| t * f).collect(),
                    serial_ms: kind.serial_ms * f,
                });
            }
        }
        Ok((DemandProfile::new(rows)?, scaled))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn profile(t1: &[f64]) -> DemandProfile {
        DemandProfile::new(
            t1.iter()
                .enumerate()
                .map(|(i, &t)| RequestProfile {
                    id: format!("q{i}"),
                    times_ms: vec![t, t / 1.5],
                })
                .collect(),
        )
        .unwrap()
    }

    #[test]
    fn long_queries_draw_from_long_queries_ratios() {
        // 40 queries, 0.5 ms to 20 ms; short ones measured at 2x, long ones at 1.1x.
        let t1: Vec<f64> = (1..=40).map(|i| 0.5 * i as f64).collect();
        let p = profile(&t1);
        let executions: Vec<(f64, f64)> = t1
            .iter()
            .flat_map(|&t| {
                let r = if t < 10.0 { 2.0 } else { 1.1 };
                std::iter::repeat_n((t, t * r), 5)
            })
            .collect();
        let s = Spread::measure(&p, &executions, 8, 1).unwrap();
        for (i, f) in s.factors.iter().enumerate() {
            assert_eq!(f.len(), 8);
            let want = if t1[i] < 10.0 { 2.0 } else { 1.1 };
            assert!(f.iter().all(|&x| x == want), "query {i}: {f:?}");
        }
        let work: f64 = t1.iter().sum::<f64>() * 5.0;
        let service: f64 = executions.iter().map(|e| e.1).sum();
        assert!((s.mean() - service / work).abs() < 1e-12);
    }

    #[test]
    fn a_spread_in_one_bin_is_drawn_from_whole() {
        // One query length, executions at 1.0 (nine in ten) and 3.0: the copies draw both.
        let p = profile(&[4.0; 20]);
        let executions: Vec<(f64, f64)> = (0..100)
            .map(|i| (4.0, if i % 10 == 0 { 12.0 } else { 4.0 }))
            .collect();
        let s = Spread::measure(&p, &executions, 50, 7).unwrap();
        let all: Vec<f64> = s.factors.concat();
        let slow = all.iter().filter(|&&f| f == 3.0).count();
        assert!(all.iter().all(|&f| f == 1.0 || f == 3.0));
        assert!((50..=150).contains(&slow), "{slow} slow of {}", all.len());
        assert!(Spread::measure(&p, &[], 4, 1).is_none());
    }

    #[test]
    fn applying_keeps_the_queries_order_and_scales_every_part() {
        let p = profile(&[1.0, 8.0]);
        let kinds = vec![
            UnitRequest {
                units_ms: vec![0.4, 0.4],
                serial_ms: 0.2,
            },
            UnitRequest {
                units_ms: vec![4.0, 3.0],
                serial_ms: 1.0,
            },
        ];
        let s = Spread {
            factors: vec![vec![1.0, 2.0], vec![1.5, 1.5]],
            mean: 1.4,
        };
        let (q, k) = s.apply(&p, &kinds).unwrap();
        let ids: Vec<&str> = q.requests().iter().map(|r| r.id.as_str()).collect();
        assert_eq!(ids, ["q0#0", "q0#1", "q1#0", "q1#1"]);
        let t = &q.requests()[1].times_ms;
        assert!(
            (t[0] - 2.0).abs() < 1e-12 && (t[1] - 2.0 / 1.5).abs() < 1e-12,
            "{t:?}"
        );
        assert_eq!(k[1].units_ms, vec![0.8, 0.8]);
        assert_eq!(k[3].serial_ms, 1.5);
        let constant = Spread::constant(2, 1.2);
        let (q, _) = constant.apply(&p, &kinds).unwrap();
        assert_eq!(q.requests()[0].id, "q0");
        assert!((q.requests()[1].seq_ms() - 9.6).abs() < 1e-12);
        assert!(s.apply(&p, &kinds[..1]).is_err());
    }
}
