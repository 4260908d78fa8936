//! The Monte Carlo finance workload: each request prices a path-dependent Asian option, with as many paths as its volatility and notional call for.
//!
//! Haque's dissertation (ch. 5, §5.2.1) evaluates Adaptive Slow-to-Fast on a Monte Carlo
//! server that prices path-dependent Asian options, where the request's parameters set
//! how much it samples (more for higher volatility or notional), so demand is
//! heavy-tailed. Here a request is an arithmetic-average Asian call on discretely fixed
//! prices, simulated under geometric Brownian motion with antithetic paths. Its path
//! count follows a desk's accuracy rule: the price's standard error is held to a fixed
//! amount of money, so paths grow with (volatility × notional)². Notionals are
//! log-normal, which makes the path counts, and the work, heavy-tailed.
//!
//! The geometric-average Asian call has a closed form (Kemna and Vorst), which the tests
//! use to check the simulation.

use rand::{RngExt, SeedableRng};
use rand_chacha::ChaCha8Rng;
use rand_distr::{Distribution, StandardNormal};
use tailor_core::Job;

use crate::black_scholes::normal_cdf;

/// Paths in one unit of a request.
pub const PATHS_PER_UNIT: usize = 500;

/// An Asian call on the average of `fixings` equally spaced prices up to expiry.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct AsianOption {
    /// Price of the underlying now.
    pub spot: f64,
    /// Strike price.
    pub strike: f64,
    /// Continuously compounded risk-free rate, per year.
    pub rate: f64,
    /// Continuous dividend yield, per year.
    pub dividend: f64,
    /// Volatility, per square-root year.
    pub volatility: f64,
    /// Time to expiry, years.
    pub expiry_years: f64,
    /// Price fixings averaged (the last at expiry).
    pub fixings: usize,
    /// The trade's notional, in money.
    pub notional: f64,
}

impl AsianOption {
    /// A request's option drawn from `rng`: moneyness S/K in [0.8, 1.2], rate in
    /// [0.01, 0.06], dividend yield in [0, 0.03], volatility in [0.1, 0.6], expiry in
    /// [0.25, 2] years, 12 to 52 fixings, and a log-normal notional (median 1 million,
    /// log-sd 0.7).
    pub fn draw(rng: &mut ChaCha8Rng) -> AsianOption {
        let z: f64 = StandardNormal.sample(rng);
        AsianOption {
            spot: 100.0 * rng.random_range(0.8..1.2),
            strike: 100.0,
            rate: rng.random_range(0.01..0.06),
            dividend: rng.random_range(0.0..0.03),
            volatility: rng.random_range(0.1..0.6),
            expiry_years: rng.random_range(0.25..2.0),
            fixings: rng.random_range(12..=52),
            notional: 1e6 * (0.7 * z).exp(),
        }
    }

    /// The paths the desk's rule asks for: `scale` × 400 × (volatility / 0.2 × notional
    /// / 1 million)², at least 200 and at most 2 million.
    pub fn paths(&self, scale: f64) -> usize {
        let x = self.volatility / 0.2 * self.notional / 1e6;
        (scale * 400.0 * x * x).clamp(200.0, 2e6).round() as usize
    }

    /// The closed-form price of the geometric-average Asian call with the same fixings.
    pub fn geometric_price(&self) -> f64 {
        let n = self.fixings as f64;
        let dt = self.expiry_years / n;
        let s2 = self.volatility * self.volatility;
        let mu = self.spot.ln() + (self.rate - self.dividend - 0.5 * s2) * dt * (n + 1.0) / 2.0;
        let var = s2 * dt * (n + 1.0) * (2.0 * n + 1.0) / (6.0 * n);
        let sd = var.sqrt();
        let d2 = (mu - self.strike.ln()) / sd;
        let d1 = d2 + sd;
        (-self.rate * self.expiry_years).exp()
            * ((mu + 0.5 * var).exp() * normal_cdf(d1) - self.strike * normal_cdf(d2))
    }
}

/// Sums of discounted payoffs over some paths: (arithmetic sum, its sum of squares,
/// geometric sum, paths).
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct PathSums {
    /// Σ of the arithmetic-average payoffs (each the mean of an antithetic pair).
    pub arithmetic: f64,
    /// Σ of their squares.
    pub arithmetic_sq: f64,
    /// Σ of the geometric-average payoffs.
    pub geometric: f64,
    /// Samples summed (antithetic pairs).
    pub samples: usize,
}

impl PathSums {
    /// The mean and standard error of the arithmetic price.
    pub fn arithmetic_price(&self) -> (f64, f64) {
        let n = self.samples.max(1) as f64;
        let mean = self.arithmetic / n;
        let var = (self.arithmetic_sq / n - mean * mean).max(0.0);
        (mean, (var / n).sqrt())
    }

    /// The mean of the geometric price.
    pub fn geometric_price(&self) -> f64 {
        self.geometric / self.samples.max(1) as f64
    }

    fn add(&mut self, other: &PathSums) {
        self.arithmetic += other.arithmetic;
        self.arithmetic_sq += other.arithmetic_sq;
        self.geometric += other.geometric;
        self.samples += other.samples;
    }
}

/// Simulates `pairs` antithetic pairs of paths of `opt` from a generator seeded with
/// `seed`.
pub fn simulate_paths(opt: &AsianOption, pairs: usize, seed: u64) -> PathSums {
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let n = opt.fixings.max(1);
    let dt = opt.expiry_years / n as f64;
    let drift = (opt.rate - opt.dividend - 0.5 * opt.volatility * opt.volatility) * dt;
    let vol = opt.volatility * dt.sqrt();
    let discount = (-opt.rate * opt.expiry_years).exp();
    let mut sums = PathSums::default();
    for _ in 0..pairs {
        let (mut up, mut down) = (opt.spot.ln(), opt.spot.ln());
        let (mut sum_up, mut sum_down, mut log_sum_up, mut log_sum_down) = (0.0, 0.0, 0.0, 0.0);
        for _ in 0..n {
            let z: f64 = StandardNormal.sample(&mut rng);
            up += drift + vol * z;
            down += drift - vol * z;
            sum_up += up.exp();
            sum_down += down.exp();
            log_sum_up += up;
            log_sum_down += down;
        }
        let nf = n as f64;
        let arith = 0.5
            * ((sum_up / nf - opt.strike).max(0.0) + (sum_down / nf - opt.strike).max(0.0))
            * discount;
        let geo = 0.5
            * (((log_sum_up / nf).exp() - opt.strike).max(0.0)
                + ((log_sum_down / nf).exp() - opt.strike).max(0.0))
            * discount;
        sums.arithmetic += arith;
        sums.arithmetic_sq += arith * arith;
        sums.geometric += geo;
        sums.samples += 1;
    }
    sums
}

/// What an antithetic pair of paths costs on this machine: a fixed part and a part per
/// fixing, in ms. [`AsianCost::measure`] times it, so clairvoyant policies (RC) can be
/// told a request's work before it runs.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct AsianCost {
    /// ms per pair, whatever the fixings.
    pub per_pair_ms: f64,
    /// ms per pair and fixing.
    pub per_fixing_ms: f64,
}

impl AsianCost {
    /// Times 2000 pairs at 12 and at 52 fixings (the best of 5 runs each) and fits the
    /// line through them.
    pub fn measure() -> AsianCost {
        let time = |fixings: usize| {
            let opt = AsianOption {
                spot: 100.0,
                strike: 100.0,
                rate: 0.03,
                dividend: 0.01,
                volatility: 0.3,
                expiry_years: 1.0,
                fixings,
                notional: 1e6,
            };
            (0..5)
                .map(|i| {
                    let t = std::time::Instant::now();
                    std::hint::black_box(simulate_paths(&opt, 2000, i));
                    t.elapsed().as_secs_f64() * 1000.0 / 2000.0
                })
                .fold(f64::INFINITY, f64::min)
        };
        let (lo, hi) = (time(12), time(52));
        let per_fixing_ms = ((hi - lo) / 40.0).max(0.0);
        AsianCost {
            per_pair_ms: (lo - 12.0 * per_fixing_ms).max(0.0),
            per_fixing_ms,
        }
    }

    /// The time `pairs` pairs of `fixings` fixings take, ms.
    pub fn ms(&self, pairs: usize, fixings: usize) -> f64 {
        pairs as f64 * (self.per_pair_ms + fixings as f64 * self.per_fixing_ms)
    }
}

/// One pricing request: its option, its path count, and the seed of its paths.
#[derive(Debug, Clone)]
pub struct AsianJob {
    option: AsianOption,
    paths: usize,
    seed: u64,
    demand_hint_ms: Option<f64>,
}

impl AsianJob {
    /// Request `index` of the run seeded `seed`: its option drawn from both, priced with
    /// `scale` times the desk's path count.
    pub fn new(seed: u64, index: u64, scale: f64) -> AsianJob {
        let stream = seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) ^ index;
        let mut rng = ChaCha8Rng::seed_from_u64(stream);
        let option = AsianOption::draw(&mut rng);
        AsianJob {
            paths: option.paths(scale),
            option,
            seed: stream,
            demand_hint_ms: None,
        }
    }

    /// The same request, telling clairvoyant policies its work as `cost` predicts it.
    pub fn with_demand_hint(mut self, cost: &AsianCost) -> AsianJob {
        let pairs = self.units() * (PATHS_PER_UNIT / 2);
        self.demand_hint_ms = Some(cost.ms(pairs, self.option.fixings));
        self
    }

    /// The option priced.
    pub fn option(&self) -> &AsianOption {
        &self.option
    }

    /// The paths simulated (rounded up to whole antithetic pairs per unit).
    pub fn paths(&self) -> usize {
        self.paths
    }
}

impl Job for AsianJob {
    type Part = PathSums;
    /// The arithmetic Asian price and its standard error.
    type Output = (f64, f64);

    fn units(&self) -> usize {
        self.paths.div_ceil(PATHS_PER_UNIT)
    }

    fn run(&self, unit: usize) -> PathSums {
        let pairs = PATHS_PER_UNIT / 2;
        simulate_paths(&self.option, pairs, self.seed.wrapping_add(unit as u64 + 1))
    }

    fn merge(&self, parts: Vec<PathSums>) -> (f64, f64) {
        let mut total = PathSums::default();
        for p in &parts {
            total.add(p);
        }
        total.arithmetic_price()
    }

    fn demand_hint_ms(&self) -> Option<f64> {
        self.demand_hint_ms
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn atm() -> AsianOption {
        AsianOption {
            spot: 100.0,
            strike: 100.0,
            rate: 0.05,
            dividend: 0.01,
            volatility: 0.3,
            expiry_years: 1.0,
            fixings: 12,
            notional: 1e6,
        }
    }

    #[test]
    fn simulated_geometric_price_matches_the_closed_form() {
        let opt = atm();
        let sums = simulate_paths(&opt, 100_000, 7);
        let exact = opt.geometric_price();
        let (_, se) = sums.arithmetic_price();
        // The geometric payoff's error is about the arithmetic one's.
        assert!(
            (sums.geometric_price() - exact).abs() < 4.0 * se,
            "{} vs {exact} (se {se})",
            sums.geometric_price()
        );
    }

    #[test]
    fn arithmetic_is_above_geometric_and_below_the_european() {
        // AM-GM: the arithmetic average dominates the geometric one path by path.
        let opt = atm();
        let sums = simulate_paths(&opt, 20_000, 3);
        let (arith, _) = sums.arithmetic_price();
        assert!(arith >= sums.geometric_price());
        // Averaging lowers the variance, so the Asian call is worth less than the
        // European call on the same underlying (Black-Scholes with a dividend yield).
        let (s, k, r, q, v, t) = (100.0f64, 100.0f64, 0.05f64, 0.01f64, 0.3f64, 1.0f64);
        let d1 = ((s / k).ln() + (r - q + 0.5 * v * v) * t) / (v * t.sqrt());
        let d2 = d1 - v * t.sqrt();
        let european = s * (-q * t).exp() * normal_cdf(d1) - k * (-r * t).exp() * normal_cdf(d2);
        assert!(arith < european, "{arith} vs {european}");
    }

    #[test]
    fn path_counts_grow_with_volatility_and_notional_and_are_heavy_tailed() {
        let mut opt = atm();
        let base = opt.paths(1.0);
        opt.volatility *= 2.0;
        assert!(opt.paths(1.0) > 3 * base);
        opt.notional *= 2.0;
        assert!(opt.paths(1.0) > 12 * base);
        let mut rng = ChaCha8Rng::seed_from_u64(1);
        let mut paths: Vec<usize> = (0..4000)
            .map(|_| AsianOption::draw(&mut rng).paths(1.0))
            .collect();
        paths.sort_unstable();
        let median = paths[2000] as f64;
        let p99 = paths[3960] as f64;
        let mean = paths.iter().sum::<usize>() as f64 / 4000.0;
        assert!(
            p99 > 8.0 * median && mean > median,
            "median {median} p99 {p99} mean {mean}"
        );
    }

    #[test]
    fn a_job_is_the_same_whatever_the_unit_order() {
        let job = AsianJob::new(5, 17, 1.0);
        let forward: Vec<PathSums> = (0..job.units()).map(|u| job.run(u)).collect();
        let mut backward: Vec<PathSums> = (0..job.units()).rev().map(|u| job.run(u)).collect();
        backward.reverse();
        assert_eq!(job.merge(forward), job.merge(backward));
        assert_eq!(AsianJob::new(5, 17, 1.0).paths(), job.paths());
    }

    #[test]
    fn the_demand_hint_follows_the_pairs_and_fixings_priced() {
        let job = AsianJob::new(5, 17, 1.0);
        assert_eq!(job.demand_hint_ms(), None);
        let cost = AsianCost {
            per_pair_ms: 0.001,
            per_fixing_ms: 0.0001,
        };
        let hinted = job.clone().with_demand_hint(&cost);
        let pairs = (job.units() * PATHS_PER_UNIT / 2) as f64;
        let expect = pairs * (0.001 + 0.0001 * job.option().fixings as f64);
        assert!((hinted.demand_hint_ms().unwrap() - expect).abs() < 1e-9);
        let measured = AsianCost::measure();
        assert!(measured.per_pair_ms >= 0.0 && measured.per_fixing_ms > 0.0);
    }
}
