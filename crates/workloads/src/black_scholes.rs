//! The Black-Scholes workload: each request prices a batch of options by a PDE solver.
//!
//! Li et al. (PPoPP 2016, "Work Stealing for Interactive Services to Meet Target Latency",
//! §5) use requests that price European options by solving the Black-Scholes PDE with
//! finite differences, one parallel-for per request, the work per request drawn from a
//! distribution. Here a request of W ms holds about W / c options, c being the measured
//! cost of one solve, and one unit prices one option. The solver is Crank–Nicolson in
//! x = ln S on a uniform grid centred on the strike, its first two steps each taken as two
//! fully implicit half steps (Rannacher) to damp the payoff's kink, every step a
//! tridiagonal solve by the Thomas algorithm; the price at the spot is read off by
//! quadratic interpolation.

use std::hint::black_box;
use std::time::Instant;

use rand::{RngExt, SeedableRng};
use rand_chacha::ChaCha8Rng;
use tailor_core::Job;

/// A European call or put on a stock paying no dividend.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct EuropeanOption {
    /// Price of the underlying now.
    pub spot: f64,
    /// Strike price.
    pub strike: f64,
    /// Continuously compounded risk-free rate, per year.
    pub rate: f64,
    /// Volatility of the underlying, per square-root year.
    pub volatility: f64,
    /// Time to expiry, in years.
    pub expiry_years: f64,
    /// A call if true, a put if false.
    pub call: bool,
}

impl EuropeanOption {
    /// The option's value at expiry for an underlying price `s`.
    pub fn payoff(&self, s: f64) -> f64 {
        if self.call {
            (s - self.strike).max(0.0)
        } else {
            (self.strike - s).max(0.0)
        }
    }

    /// An option with parameters drawn from `rng`: moneyness S/K in [0.8, 1.2], rate in
    /// [0.01, 0.08], volatility in [0.1, 0.5], expiry in [0.25, 2] years, call or put.
    fn draw(rng: &mut ChaCha8Rng) -> EuropeanOption {
        EuropeanOption {
            spot: 100.0 * rng.random_range(0.8..1.2),
            strike: 100.0,
            rate: rng.random_range(0.01..0.08),
            volatility: rng.random_range(0.1..0.5),
            expiry_years: rng.random_range(0.25..2.0),
            call: rng.random_bool(0.5),
        }
    }
}

/// The finite-difference grid of one solve.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Grid {
    /// Intervals in x = ln S; raised to at least 4 and to an even number, so the strike
    /// falls on a node.
    pub space_steps: usize,
    /// Time steps from expiry to now; at least 1.
    pub time_steps: usize,
}

impl Default for Grid {
    /// 400 space by 50 time steps: on the options requests draw, prices within 5e-4 of
    /// the closed form relative to max(price, 1), and a solve of the order of 150 us. (At
    /// the same cost, 200 by 100 is about three times less accurate: the space error
    /// dominates.)
    fn default() -> Grid {
        Grid {
            space_steps: 400,
            time_steps: 50,
        }
    }
}

/// The standard normal CDF, by Hart's double-precision rational approximation (algorithm
/// 5666, as given by G. West, "Better approximations to cumulative normal functions",
/// 2005); absolute error below 1e-14.
pub fn normal_cdf(x: f64) -> f64 {
    #[rustfmt::skip]
    const NUM: [f64; 7] = [
        3.526_249_659_989_11e-2, 0.700_383_064_443_688, 6.373_962_203_531_65,
        33.912_866_078_383, 112.079_291_497_871, 221.213_596_169_931, 220.206_867_912_376,
    ];
    #[rustfmt::skip]
    const DEN: [f64; 8] = [
        8.838_834_764_831_84e-2, 1.755_667_163_182_64, 16.064_177_579_207,
        86.780_732_202_946_1, 296.564_248_779_674, 637.333_633_378_831,
        793.826_512_519_948, 440.413_735_824_752,
    ];
    let horner = |c: &[f64], z: f64| c.iter().fold(0.0, |acc, k| acc * z + k);
    let z = x.abs();
    let tail = if z > 37.0 {
        0.0
    } else if z < 7.071_067_811_865_47 {
        (-z * z / 2.0).exp() * horner(&NUM, z) / horner(&DEN, z)
    } else {
        let cf = z + 1.0 / (z + 2.0 / (z + 3.0 / (z + 4.0 / (z + 0.65))));
        (-z * z / 2.0).exp() / cf / 2.506_628_274_631
    };
    if x > 0.0 {
        1.0 - tail
    } else {
        tail
    }
}

/// The closed-form Black-Scholes price. With no time value left (expiry or volatility
/// zero) it is the discounted intrinsic value max(±(S − K e^{−rT}), 0).
pub fn price_closed_form(opt: &EuropeanOption) -> f64 {
    let (s, k, r, v, call) = (opt.spot, opt.strike, opt.rate, opt.volatility, opt.call);
    let t = opt.expiry_years.max(0.0);
    let discounted = k * (-r * t).exp();
    let sd = v * t.sqrt();
    if sd <= 0.0 {
        return if call { s - discounted } else { discounted - s }.max(0.0);
    }
    let d1 = ((s / k).ln() + (r + v * v / 2.0) * t) / sd;
    let d2 = d1 - sd;
    if call {
        s * normal_cdf(d1) - discounted * normal_cdf(d2)
    } else {
        discounted * normal_cdf(-d2) - s * normal_cdf(-d1)
    }
}

/// Solves a tridiagonal system with constant diagonals in place by the Thomas algorithm:
/// on return `rhs` holds the solution. `scratch` is at least as long as `rhs`.
fn thomas(lower: f64, diag: f64, upper: f64, rhs: &mut [f64], scratch: &mut [f64]) {
    let n = rhs.len();
    if n == 0 {
        return;
    }
    let mut den = diag;
    scratch[0] = upper / den;
    rhs[0] /= den;
    for i in 1..n {
        den = diag - lower * scratch[i - 1];
        scratch[i] = upper / den;
        rhs[i] = (rhs[i] - lower * rhs[i - 1]) / den;
    }
    for i in (0..n - 1).rev() {
        rhs[i] -= scratch[i] * rhs[i + 1];
    }
}

/// Implicit steps at the start of the solve (Rannacher smoothing).
const IMPLICIT_STEPS: usize = 2;

/// The option's price by finite differences on `grid` (see the module's summary). The
/// domain in ln S is centred on ln K and reaches |ln(S/K)| + |r − σ²/2| T + 4 σ √T either
/// side; prices on the edges are the far-field values (0 and S − K e^{−rτ} for a call,
/// K e^{−rτ} − S and 0 for a put). An expired option is worth its payoff.
pub fn price_pde(opt: &EuropeanOption, grid: Grid) -> f64 {
    let (r, v, t) = (opt.rate, opt.volatility, opt.expiry_years);
    if t.is_nan() || t <= 0.0 {
        return opt.payoff(opt.spot);
    }
    let n = grid.space_steps.max(4).next_multiple_of(2);
    let steps = grid.time_steps.max(1);
    let mu = r - v * v / 2.0;
    let centre = opt.strike.ln();
    let xs = opt.spot.ln();
    let half = ((xs - centre).abs() + mu.abs() * t + 4.0 * v * t.sqrt()).max(0.05);
    let x0 = centre - half;
    let dx = 2.0 * half / n as f64;
    let dt = t / steps as f64;
    let (s_min, s_max) = (x0.exp(), (x0 + 2.0 * half).exp());
    // The operator L V_j = a V_{j-1} + b V_j + c V_{j+1} of V_tau = σ²/2 V_xx + μ V_x − r V.
    let diffusion = v * v / (2.0 * dx * dx);
    let a = diffusion - mu / (2.0 * dx);
    let b = -2.0 * diffusion - r;
    let c = diffusion + mu / (2.0 * dx);
    let edges = |tau: f64| {
        let discounted = opt.strike * (-r * tau).exp();
        if opt.call {
            (0.0, s_max - discounted)
        } else {
            (discounted - s_min, 0.0)
        }
    };
    let mut values: Vec<f64> = (0..=n)
        .map(|j| opt.payoff((x0 + j as f64 * dx).exp()))
        .collect();
    let mut rhs = vec![0.0; n - 1];
    let mut scratch = vec![0.0; n - 1];
    let mut tau = 0.0;
    for step in 0..steps {
        // Rannacher: the first steps are each two fully implicit half steps.
        let (theta, parts) = if step < IMPLICIT_STEPS {
            (1.0, 2)
        } else {
            (0.5, 1)
        };
        let h = dt / parts as f64;
        let (ex, im) = ((1.0 - theta) * h, theta * h);
        for _ in 0..parts {
            tau += h;
            let (lo, hi) = edges(tau);
            for (j, out) in rhs.iter_mut().enumerate() {
                let (l, m, u) = (values[j], values[j + 1], values[j + 2]);
                *out = m + ex * (a * l + b * m + c * u);
            }
            rhs[0] += im * a * lo;
            rhs[n - 2] += im * c * hi;
            thomas(-im * a, 1.0 - im * b, -im * c, &mut rhs, &mut scratch);
            values[1..n].copy_from_slice(&rhs);
            values[0] = lo;
            values[n] = hi;
        }
    }
    // Quadratic interpolation through the three nodes nearest the spot.
    let i = (((xs - x0) / dx).round() as usize).clamp(1, n - 1);
    let s = (xs - x0) / dx - i as f64;
    values[i - 1] * s * (s - 1.0) / 2.0
        + values[i] * (1.0 - s * s)
        + values[i + 1] * s * (s + 1.0) / 2.0
}

/// What one option solve costs on this machine, and the grid it was measured on.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct PdeCalibration {
    us_per_option: f64,
    grid: Grid,
}

impl PdeCalibration {
    /// Times solves on the default grid as a loaded server sees them: one thread per core,
    /// each timing 24 solves (after 4 untimed) of options drawn from a fixed seed, and
    /// the median of all those times.
    pub fn measure() -> PdeCalibration {
        let grid = Grid::default();
        let median = crate::median_on_every_core(|core| {
            let mut rng = ChaCha8Rng::seed_from_u64(core as u64);
            let options: Vec<_> = (0..28).map(|_| EuropeanOption::draw(&mut rng)).collect();
            for opt in &options[..4] {
                black_box(price_pde(black_box(opt), grid));
            }
            options[4..]
                .iter()
                .map(|opt| {
                    let t = Instant::now();
                    black_box(price_pde(black_box(opt), grid));
                    t.elapsed().as_secs_f64() * 1e6
                })
                .collect()
        });
        PdeCalibration {
            us_per_option: median.unwrap_or(100.0),
            grid,
        }
    }

    /// A calibration with a given cost per option on the default grid (for tests and for
    /// reusing a measurement).
    pub fn with_cost(us_per_option: f64) -> PdeCalibration {
        PdeCalibration {
            us_per_option,
            grid: Grid::default(),
        }
    }

    /// Microseconds one option solve takes.
    pub fn us_per_option(&self) -> f64 {
        self.us_per_option
    }

    /// The grid the cost was measured on, and that jobs solve on.
    pub fn grid(&self) -> Grid {
        self.grid
    }
}

/// The most options one request holds, whatever its work and the calibration say.
const MAX_OPTIONS: usize = 1 << 20;

/// One request: a batch of options, each priced by [`price_pde`] as one unit. A part is
/// one option's price; the output is the sum of the prices, added in unit order.
#[derive(Debug, Clone)]
pub struct BlackScholesJob {
    work_ms: f64,
    grid: Grid,
    options: Vec<EuropeanOption>,
}

impl BlackScholesJob {
    /// A request of about `work_ms` of sequential work: max(1, round(work_ms · 1000 /
    /// us_per_option)) options (at most 2^20), drawn from `seed`. A `work_ms` that is
    /// negative or not finite is taken as 0, and so is a count that is not finite (a
    /// calibration cost of zero, negative or NaN): such a request prices one option.
    pub fn new(work_ms: f64, seed: u64, calibration: &PdeCalibration) -> BlackScholesJob {
        let work_ms = if work_ms.is_finite() {
            work_ms.max(0.0)
        } else {
            0.0
        };
        let count = work_ms * 1000.0 / calibration.us_per_option;
        let count = if count.is_finite() && count > 0.0 {
            (count.round() as usize).clamp(1, MAX_OPTIONS)
        } else {
            1
        };
        let mut rng = ChaCha8Rng::seed_from_u64(seed);
        BlackScholesJob {
            work_ms,
            grid: calibration.grid,
            options: (0..count).map(|_| EuropeanOption::draw(&mut rng)).collect(),
        }
    }

    /// The request's sequential work in ms (after the clamping of [`BlackScholesJob::new`]).
    pub fn work_ms(&self) -> f64 {
        self.work_ms
    }

    /// The options the request prices, one per unit.
    pub fn options(&self) -> &[EuropeanOption] {
        &self.options
    }

    /// The grid each option is solved on.
    pub fn grid(&self) -> Grid {
        self.grid
    }
}

impl Job for BlackScholesJob {
    type Part = f64;
    type Output = f64;

    fn units(&self) -> usize {
        self.options.len()
    }

    fn run(&self, unit: usize) -> f64 {
        price_pde(&self.options[unit], self.grid)
    }

    fn merge(&self, parts: Vec<f64>) -> f64 {
        parts.into_iter().sum()
    }

    fn demand_hint_ms(&self) -> Option<f64> {
        Some(self.work_ms)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn opt(spot: f64, strike: f64, expiry_years: f64, call: bool) -> EuropeanOption {
        EuropeanOption {
            spot,
            strike,
            rate: 0.05,
            volatility: 0.25,
            expiry_years,
            call,
        }
    }

    #[test]
    fn the_normal_cdf_matches_reference_values() {
        for (x, want) in [
            (0.0, 0.5),
            (1.0, 0.841_344_746_068_542_9),
            (-1.96, 0.024_997_895_148_220_435),
            (3.0, 0.998_650_101_968_369_9),
            (-5.0, 2.866_515_718_791_946e-7),
            (-8.0, 6.220_960_574_271_819e-16),
        ] {
            let got = normal_cdf(x);
            assert!((got - want).abs() < 1e-13, "N({x}) = {got}, want {want}");
        }
    }

    #[test]
    fn the_pde_price_matches_the_closed_form() {
        for spot in [70.0, 90.0, 100.0, 110.0, 130.0] {
            for expiry in [0.1, 1.0, 2.0] {
                for call in [true, false] {
                    let o = opt(spot, 100.0, expiry, call);
                    let (pde, exact) = (price_pde(&o, Grid::default()), price_closed_form(&o));
                    let tolerance = (0.01 * exact).max(1e-2);
                    assert!((pde - exact).abs() < tolerance, "{o:?}: {pde} vs {exact}");
                }
            }
        }
        // The textbook value (Hull): S = 42, K = 40, r = 0.1, σ = 0.2, T = 0.5.
        let hull = EuropeanOption {
            rate: 0.1,
            volatility: 0.2,
            ..opt(42.0, 40.0, 0.5, true)
        };
        assert!((price_closed_form(&hull) - 4.76).abs() < 5e-3);
        assert_eq!(
            price_pde(&opt(90.0, 100.0, 0.0, false), Grid::default()),
            10.0
        );
    }

    #[test]
    fn pde_prices_satisfy_put_call_parity() {
        let mut rng = ChaCha8Rng::seed_from_u64(7);
        for _ in 0..10 {
            let call = EuropeanOption {
                call: true,
                ..EuropeanOption::draw(&mut rng)
            };
            let put = EuropeanOption {
                call: false,
                ..call
            };
            let forward = call.spot - call.strike * (-call.rate * call.expiry_years).exp();
            let gap = price_pde(&call, Grid::default()) - price_pde(&put, Grid::default());
            assert!((gap - forward).abs() < 2e-3, "{call:?}: {gap} vs {forward}");
        }
    }

    #[test]
    fn a_job_prices_a_deterministic_batch() {
        let calibration = PdeCalibration::with_cost(200.0);
        let job = BlackScholesJob::new(10.0, 42, &calibration);
        assert_eq!(job.units(), 50);
        assert_eq!(job.demand_hint_ms(), Some(10.0));
        assert_eq!(job.grid(), Grid::default());
        let again = BlackScholesJob::new(10.0, 42, &calibration);
        assert_eq!(job.options(), again.options());
        assert_ne!(
            job.options(),
            BlackScholesJob::new(10.0, 43, &calibration).options()
        );
        let parts: Vec<f64> = (0..job.units()).map(|u| job.run(u)).collect();
        let want: f64 = job.options().iter().map(|o| price_pde(o, job.grid())).sum();
        assert_eq!(job.merge(parts), want);
        assert!(want > 0.0);
        assert_eq!(BlackScholesJob::new(0.33, 1, &calibration).units(), 2);
    }

    #[test]
    fn bad_inputs_give_one_option() {
        let calibration = PdeCalibration::with_cost(200.0);
        for work in [f64::NAN, f64::INFINITY, f64::NEG_INFINITY, -5.0, 0.0, 0.01] {
            let job = BlackScholesJob::new(work, 1, &calibration);
            assert_eq!(job.units(), 1, "{work}");
            assert!(job.work_ms().is_finite() && job.work_ms() >= 0.0);
        }
        for cost in [0.0, -1.0, f64::NAN] {
            let job = BlackScholesJob::new(10.0, 1, &PdeCalibration::with_cost(cost));
            assert_eq!(job.units(), 1, "{cost}");
        }
        let tiny = BlackScholesJob::new(10.0, 1, &PdeCalibration::with_cost(1e-300));
        assert_eq!(tiny.units(), MAX_OPTIONS);
    }

    #[test]
    #[ignore = "prints this machine's cost per option"]
    fn measure_prints_the_cost() {
        let c = PdeCalibration::measure();
        println!("us per option: {:.1} on {:?}", c.us_per_option(), c.grid());
        assert!(c.us_per_option() > 0.0);
    }
}
