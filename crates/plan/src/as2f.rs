//! EETL's offline design: the low-load thresholds of Fig. 5.3, first-order plant identification, and PI tuning by pole placement.
//!
//! Haque's dissertation, Chapter 5. §5.1.4 splits the N-type problem in two: t*, the
//! thresholds that minimize mean energy subject to the tail target when no request
//! waits (Fig. 5.3, Eqs. 5.1-5.4), then one scale z for every load, set by a SISO
//! controller. §5.1.2 tunes one PID per load interval from the open-loop step response
//! with MATLAB's PID Tuner; tailor identifies a first-order ARX model instead and places
//! the closed loop's pole (docs/as2f.md).
//!
//! # The low-load problem (Fig. 5.3)
//!
//! A request of work x (its run time on a speed-1 core, slow_r) starts on type 0 and
//! moves to type k at age t_k (t_1 <= ... <= t_{N-1}); on type k it does s_k work per ms
//! and draws power P_k. Its latency L(x; t) and energy e(x; t) follow (Eq. 5.2). L is
//! increasing in x, so the β-tail of the profile (Eq. 5.4) is L(x_q; t) with x_q the
//! ceil(β n)-th smallest work: the constraint (Eq. 5.3) involves one request. Raising
//! any t_k moves work to a slower type; when energy per unit of work P_k / s_k rises with
//! k (as it does for Table 5.3's cores), that lowers every request's energy and raises
//! L(x_q). So for fixed t_1..t_{N-2}, the best t_{N-1} is the largest feasible one,
//! found by bisection; the others are searched on a grid, then on a finer grid around the
//! best point. [`low_load_exhaustive`] searches every threshold on a grid, as the test
//! oracle.

use thiserror::Error;

/// Why a low-load problem has no answer.
#[derive(Debug, Error, PartialEq)]
pub enum As2fError {
    /// Not enough work samples, or a bad one.
    #[error("{0}")]
    Input(String),
}

/// The low-load problem of Fig. 5.3.
#[derive(Debug, Clone)]
pub struct LowLoad<'a> {
    /// Work samples (ms on a speed-1 core), in any order.
    pub work: &'a [f64],
    /// Each core type's speed, slowest first.
    pub speeds: &'a [f64],
    /// Each core type's busy power.
    pub powers: &'a [f64],
    /// The tail-latency target, ms.
    pub target_ms: f64,
    /// The tail percentile β (0.99).
    pub percentile: f64,
}

/// A solution: the thresholds, the mean energy per request and the β-tail latency.
#[derive(Debug, Clone, PartialEq)]
pub struct LowLoadSolution {
    /// t_1..t_{N-1}, ms.
    pub thresholds: Vec<f64>,
    /// Mean energy per request (Eq. 5.1).
    pub energy: f64,
    /// The β-tail latency at these thresholds.
    pub tail_ms: f64,
    /// Whether the target is met (false: all thresholds 0, the best the cores can do).
    pub feasible: bool,
}

impl LowLoad<'_> {
    fn check(&self) -> Result<(), As2fError> {
        let bad = |s: String| Err(As2fError::Input(s));
        if self.work.is_empty() {
            return bad("no work samples".into());
        }
        if let Some(w) = self.work.iter().find(|w| !(w.is_finite() && **w >= 0.0)) {
            return bad(format!("work sample {w} is not a finite number >= 0"));
        }
        if self.speeds.len() != self.powers.len() || self.speeds.is_empty() {
            return bad("one speed and one power per core type".into());
        }
        if self.speeds.windows(2).any(|w| w[1] <= w[0]) {
            return bad("core types must be ordered by increasing speed".into());
        }
        if !(self.percentile > 0.0 && self.percentile <= 1.0) {
            return bad(format!("percentile {} is not in (0, 1]", self.percentile));
        }
        Ok(())
    }

    /// Latency and energy of a request of work `x` with thresholds `t`.
    pub fn run(&self, x: f64, t: &[f64]) -> (f64, f64) {
        let mut left = x;
        let mut age = 0.0;
        let mut energy = 0.0;
        for k in 0..self.speeds.len() {
            let until = t.get(k).copied().unwrap_or(f64::INFINITY);
            let span = (until - age).max(0.0);
            let need = left / self.speeds[k];
            if need <= span {
                return (age + need, energy + need * self.powers[k]);
            }
            left -= span * self.speeds[k];
            energy += span * self.powers[k];
            age = until.max(age);
        }
        unreachable!("the fastest type has no end")
    }

    fn tail_work(&self) -> f64 {
        let mut sorted = self.work.to_vec();
        sorted.sort_by(f64::total_cmp);
        let k =
            ((self.percentile * sorted.len() as f64 - 1e-9).ceil() as usize).clamp(1, sorted.len());
        sorted[k - 1]
    }

    /// A threshold past which no request of the profile is still running on its type.
    fn never(&self) -> f64 {
        self.work.iter().copied().fold(0.0, f64::max) / self.speeds[0] + 1.0
    }

    fn mean_energy(&self, t: &[f64]) -> f64 {
        self.work.iter().map(|&x| self.run(x, t).1).sum::<f64>() / self.work.len() as f64
    }

    fn solution(&self, t: Vec<f64>, xq: f64) -> LowLoadSolution {
        let tail = self.run(xq, &t).0;
        LowLoadSolution {
            energy: self.mean_energy(&t),
            tail_ms: tail,
            feasible: tail <= self.target_ms * (1.0 + 1e-9),
            thresholds: t,
        }
    }

    /// The largest last threshold in [lo, never] that keeps L(x_q) within the target,
    /// with the others fixed at `head`; `None` if even `lo` misses it.
    fn last_threshold(&self, head: &[f64], lo: f64, xq: f64) -> Option<f64> {
        let never = self.never();
        let tail = |last: f64| {
            let mut t = head.to_vec();
            t.push(last);
            self.run(xq, &t).0
        };
        if tail(lo) > self.target_ms {
            return None;
        }
        if tail(never) <= self.target_ms {
            return Some(never);
        }
        let (mut a, mut b) = (lo, never);
        for _ in 0..100 {
            let mid = 0.5 * (a + b);
            if tail(mid) <= self.target_ms {
                a = mid;
            } else {
                b = mid;
            }
        }
        Some(a)
    }

    /// Solves the problem: thresholds before the last on a grid of `step` ms (then a
    /// grid 20 times finer around the best), the last by bisection.
    pub fn solve(&self, step: f64) -> Result<LowLoadSolution, As2fError> {
        self.check()?;
        let n = self.speeds.len() - 1;
        let xq = self.tail_work();
        if n == 0 {
            return Ok(self.solution(Vec::new(), xq));
        }
        let never = self.never();
        let points = (never / step).ceil() as usize + 1;
        if points.saturating_pow(n as u32 - 1) > 5_000_000 {
            return Err(As2fError::Input(format!(
                "{n} thresholds on a {step} ms grid up to {never:.0} ms is too large a search; \
                 use a coarser step"
            )));
        }
        let mut best: Option<LowLoadSolution> = None;
        let consider = |head: Vec<f64>, best: &mut Option<LowLoadSolution>| {
            let lo = head.last().copied().unwrap_or(0.0);
            if let Some(last) = self.last_threshold(&head, lo, xq) {
                let mut t = head;
                t.push(last);
                let s = self.solution(t, xq);
                if best.as_ref().is_none_or(|b| s.energy < b.energy) {
                    *best = Some(s);
                }
            }
        };
        let grid = |lo: f64, hi: f64, step: f64| -> Vec<f64> {
            let count = ((hi - lo) / step).floor() as usize;
            (0..=count).map(|i| lo + i as f64 * step).collect()
        };
        for head in product(&vec![grid(0.0, never, step); n - 1]) {
            consider(head, &mut best);
        }
        if let Some(coarse) = best.clone().filter(|_| n > 1) {
            let fine = step / 20.0;
            let around: Vec<Vec<f64>> = coarse.thresholds[..n - 1]
                .iter()
                .map(|&c| grid((c - step).max(0.0), c + step, fine))
                .collect();
            for head in product(&around) {
                consider(head, &mut best);
            }
        }
        Ok(best.unwrap_or_else(|| self.solution(vec![0.0; n], xq)))
    }
}

/// Every non-decreasing pick of one value from each list.
fn product(lists: &[Vec<f64>]) -> Vec<Vec<f64>> {
    let mut out = vec![Vec::new()];
    for list in lists {
        let mut next = Vec::new();
        for h in &out {
            let lo = h.last().copied().unwrap_or(f64::NEG_INFINITY);
            for &g in list.iter().filter(|&&g| g >= lo) {
                let mut v = h.clone();
                v.push(g);
                next.push(v);
            }
        }
        out = next;
    }
    out
}

/// The test oracle: every non-decreasing threshold vector on a grid of `step` ms; the
/// feasible one of least energy.
pub fn low_load_exhaustive(p: &LowLoad<'_>, step: f64) -> Result<LowLoadSolution, As2fError> {
    p.check()?;
    let n = p.speeds.len() - 1;
    let xq = p.tail_work();
    let never = p.never();
    let count = (never / step).ceil() as usize;
    let grid: Vec<f64> = (0..=count).map(|i| (i as f64 * step).min(never)).collect();
    let mut best: Option<LowLoadSolution> = None;
    for t in product(&vec![grid; n]) {
        let s = p.solution(t, xq);
        if s.feasible && best.as_ref().is_none_or(|b| s.energy < b.energy) {
            best = Some(s);
        }
    }
    Ok(best.unwrap_or_else(|| p.solution(vec![0.0; n], xq)))
}

/// A first-order ARX model y_k = a y_{k-1} + b u_{k-1} + c, and how firmly the data pin
/// down b, the input's effect.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ArxFit {
    /// The output's own pole.
    pub a: f64,
    /// The input's gain.
    pub b: f64,
    /// The offset.
    pub c: f64,
    /// The standard error of b: the residuals' standard deviation (n - 3 degrees of
    /// freedom) times the square root of b's diagonal entry of the inverse normal
    /// matrix; infinite with 3 or fewer points.
    pub b_se: f64,
    /// The mean input over the fitted points, where the model is best known.
    pub u_mean: f64,
}

impl ArxFit {
    /// Whether b is positive and clear of its noise: more than two standard errors
    /// above 0 (about 95% one-sided with the few epochs an identification has, close
    /// to it for more).
    pub fn b_is_clear(&self) -> bool {
        self.b > 1e-6 && self.b > 2.0 * self.b_se
    }
}

/// A first-order ARX model per control epoch, y_k = a y_{k-1} + b u_{k-1} + c, fitted
/// by least squares to an input sequence `u` and output sequence `y` of equal length.
/// Returns the fit, or `None` when the inputs do not vary enough to tell b apart.
pub fn identify_first_order(u: &[f64], y: &[f64]) -> Option<ArxFit> {
    if u.len() != y.len() || u.len() < 4 {
        return None;
    }
    // Normal equations for [a, b, c] over k = 1..n.
    let row = |k: usize| [y[k - 1], u[k - 1], 1.0];
    let mut m = [[0.0f64; 3]; 3];
    let mut v = [0.0f64; 3];
    for (k, &yk) in y.iter().enumerate().skip(1) {
        let row = row(k);
        for i in 0..3 {
            for j in 0..3 {
                m[i][j] += row[i] * row[j];
            }
            v[i] += row[i] * yk;
        }
    }
    let [a, b, c] = solve3(m, v)?;
    let rss: f64 = (1..y.len())
        .map(|k| {
            let r = row(k);
            (y[k] - a * r[0] - b * r[1] - c).powi(2)
        })
        .sum();
    let n = y.len() - 1;
    let b_se = match solve3(m, [0.0, 1.0, 0.0]) {
        Some(col) if n > 3 => (rss / (n - 3) as f64 * col[1].max(0.0)).sqrt(),
        _ => f64::INFINITY,
    };
    let u_mean = u[..n].iter().sum::<f64>() / n as f64;
    Some(ArxFit {
        a,
        b,
        c,
        b_se,
        u_mean,
    })
}

/// Fits [`identify_first_order`] to an open-loop experiment (§5.1.2): `y[j]` is epoch
/// j's relative tail error, (p99 - target) / target, and `z[j]` the input in force
/// during epoch j, which the controller would have set when epoch j - 1 closed (so
/// `z[j]` is u_{j-1}). `z` may run past `y`. Epoch 0, from an empty system, is left
/// out. Returns the fit with a clamped to [0, 0.9].
pub fn identify_open_loop(y: &[f64], z: &[f64]) -> Result<ArxFit, As2fError> {
    let m = y.len().min(z.len().saturating_sub(1));
    if m < 6 {
        return Err(As2fError::Input(format!(
            "{m} usable epochs; identifying the plant needs at least 6"
        )));
    }
    // y'[k] = y[k + 1] ran with z[k + 1], which is u'[k - 1] in controller time.
    let fit = identify_first_order(&z[2..=m], &y[1..m]).ok_or_else(|| {
        As2fError::Input("the experiment's inputs did not vary; run more epochs".into())
    })?;
    Ok(ArxFit {
        a: fit.a.clamp(0.0, 0.9),
        ..fit
    })
}

/// One load interval's controller: PI gains and the steady-state input at the setpoint.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct IntervalDesign {
    /// Proportional gain.
    pub kp: f64,
    /// Integral gain.
    pub ki: f64,
    /// The input z at which the model puts the tail at the setpoint, in [0, 1].
    pub z_steady: f64,
    /// Whether the fit's b was not clear of its noise, so the design took the safe end
    /// of b's interval (see [`design_interval`]).
    pub robust: bool,
}

/// The controller for one load interval from its fit, with the setpoint `margin` below
/// the target (y* = -margin) and closed-loop pole `rho` ([`pole_placement`]).
///
/// Where b is clear of its noise ([`ArxFit::b_is_clear`]), the point estimate: steady z
/// solves (1 - a) y* = b z + c. Where it is not, the design takes whichever end of b's
/// interval b ± 2 se is safe for the tail (tailor's addition; the dissertation tunes on
/// one step response, §5.1.2):
/// - gains from the steeper slope b + 2 se, so that a step in z moves the tail no more
///   than the closed loop was placed for;
/// - steady z from the model's steady tail at the mean input, y(u_mean), moved along
///   the slope that asks for the larger cut in z: if y(u_mean) is above the setpoint,
///   the shallower b - 2 se (z 0 when that is not positive: the data do not show that a
///   higher threshold is safe); if below, the steeper b + 2 se.
pub fn design_interval(fit: &ArxFit, margin: f64, rho: f64) -> IntervalDesign {
    let ArxFit { a, b, c, .. } = *fit;
    let y_star = -margin;
    if fit.b_is_clear() {
        let (kp, ki, _) = pole_placement(a, b, rho);
        return IntervalDesign {
            kp,
            ki,
            z_steady: (((1.0 - a) * y_star - c) / b).clamp(0.0, 1.0),
            robust: false,
        };
    }
    // An infinite standard error (too few points) makes the steep end infinite and the
    // shallow end negative: z stays at the mean input or goes to 0, and the gains fall
    // back to the slow integral controller below.
    let spread = 2.0 * fit.b_se;
    let steep = b.max(0.0) + spread;
    let shallow = b - spread;
    // The model's steady tail at the mean input, and the cut to the setpoint along the
    // slope that is safe for it.
    let y_mean = (b * fit.u_mean + c) / (1.0 - a);
    let z_steady = if y_mean > y_star {
        if shallow > 1e-6 {
            fit.u_mean - (y_mean - y_star) * (1.0 - a) / shallow
        } else {
            0.0
        }
    } else if steep > 1e-6 {
        fit.u_mean + (y_star - y_mean) * (1.0 - a) / steep
    } else {
        1.0
    };
    let (kp, ki) = if steep.is_finite() && steep > 1e-6 {
        let (kp, ki, _) = pole_placement(a, steep, rho);
        (kp, ki)
    } else {
        (0.0, 0.1)
    };
    IntervalDesign {
        kp,
        ki,
        z_steady: z_steady.clamp(0.0, 1.0),
        robust: true,
    }
}

/// Solves a 3x3 system by Gaussian elimination with partial pivoting.
fn solve3(mut m: [[f64; 3]; 3], mut v: [f64; 3]) -> Option<[f64; 3]> {
    let scale = m
        .iter()
        .flatten()
        .fold(0.0f64, |a, x| a.max(x.abs()))
        .max(1e-300);
    for col in 0..3 {
        let pivot = (col..3).max_by(|&i, &j| m[i][col].abs().total_cmp(&m[j][col].abs()))?;
        if m[pivot][col].abs() < 1e-12 * scale {
            return None;
        }
        m.swap(col, pivot);
        v.swap(col, pivot);
        let pivot_row = m[col];
        for r in 0..3 {
            if r != col {
                let f = m[r][col] / pivot_row[col];
                for (x, p) in m[r].iter_mut().zip(pivot_row).skip(col) {
                    *x -= f * p;
                }
                v[r] -= f * v[col];
            }
        }
    }
    Some([v[0] / m[0][0], v[1] / m[1][1], v[2] / m[2][2]])
}

/// PI gains (Kp, Ki, Kd = 0) that give the velocity-form loop around y_k = a y_{k-1} +
/// b u_{k-1} the closed-loop poles {a, ρ}: the plant's pole is cancelled and the error
/// decays by ρ per epoch (discrete lambda tuning). With controller
/// u_k = u_{k-1} - Kp (e_k - e_{k-1}) - Ki e_k the characteristic polynomial is
/// z² - (1 + a - b (Kp + Ki)) z + (a - b Kp); matching (z - a)(z - ρ) gives
/// Kp = a (1 - ρ) / b and Ki = (1 - a)(1 - ρ) / b.
pub fn pole_placement(a: f64, b: f64, rho: f64) -> (f64, f64, f64) {
    let kp = a * (1.0 - rho) / b;
    let ki = (1.0 - a) * (1.0 - rho) / b;
    (kp, ki, 0.0)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn two_types<'a>(work: &'a [f64], target: f64) -> LowLoad<'a> {
        LowLoad {
            work,
            speeds: &[1.0, 2.0],
            powers: &[1.0, 8.0],
            target_ms: target,
            percentile: 0.99,
        }
    }

    #[test]
    fn a_request_runs_through_the_types_in_order() {
        let p = two_types(&[1.0], 100.0);
        // 30 ms of work with threshold 10: 10 ms slow, then 20 ms of work at 2x = 10 ms.
        assert_eq!(p.run(30.0, &[10.0]), (20.0, 10.0 + 80.0));
        // Done before the threshold: all slow.
        assert_eq!(p.run(5.0, &[10.0]), (5.0, 5.0));
    }

    #[test]
    fn two_types_have_a_closed_form() {
        // 100 samples 1..100 ms; p99 work 99. Target 60: t + (99 - t)/2 = 60 -> t = 21.
        let work: Vec<f64> = (1..=100).map(f64::from).collect();
        let s = two_types(&work, 60.0).solve(1.0).unwrap();
        assert!(s.feasible);
        assert!((s.thresholds[0] - 21.0).abs() < 1e-6, "{:?}", s.thresholds);
        assert!((s.tail_ms - 60.0).abs() < 1e-6);
        // A target the slow core meets alone: never migrate.
        let s = two_types(&work, 120.0).solve(1.0).unwrap();
        assert!(s.thresholds[0] > 100.0);
        // One no core can meet: infeasible, thresholds 0.
        let s = two_types(&work, 40.0).solve(1.0).unwrap();
        assert!(!s.feasible);
        assert_eq!(s.thresholds, vec![0.0]);
    }

    #[test]
    fn open_loop_experiments_are_fitted_with_the_input_of_each_epoch() {
        // y_k = 0.4 y_{k-1} + 0.3 z_k - 0.2, z_k in force during epoch k.
        let z: Vec<f64> = (0..40)
            .map(|k| [0.0, 1.0, 0.5, 0.25][(k / 2) % 4])
            .collect();
        let mut y = vec![5.0]; // epoch 0 from an empty system: anything
        for k in 1..39 {
            let prev = if k == 1 { 0.0 } else { y[k - 1] };
            y.push(0.4 * prev + 0.3 * z[k] - 0.2);
        }
        let f = identify_open_loop(&y, &z).unwrap();
        assert!((f.a - 0.4).abs() < 1e-9 && (f.b - 0.3).abs() < 1e-9 && (f.c + 0.2).abs() < 1e-9);
        assert!(f.b_se < 1e-6 && f.b_is_clear());
        assert!(identify_open_loop(&y[..5], &z).is_err());
        assert!(identify_open_loop(&y, &[0.5; 40]).is_err());
    }

    #[test]
    fn first_order_models_are_recovered_and_tuned() {
        // y_k = 0.3 y_{k-1} + 0.8 u_{k-1} - 0.2 under a varied input.
        let u: Vec<f64> = (0..40).map(|k| ((k * 7) % 5) as f64 / 4.0).collect();
        let mut y = vec![0.0];
        for k in 1..u.len() {
            y.push(0.3 * y[k - 1] + 0.8 * u[k - 1] - 0.2);
        }
        let ArxFit { a, b, c, .. } = identify_first_order(&u, &y).unwrap();
        assert!((a - 0.3).abs() < 1e-9 && (b - 0.8).abs() < 1e-9 && (c + 0.2).abs() < 1e-9);
        // The tuned loop's error decays by rho each epoch once the plant pole is gone.
        let (kp, ki, _) = pole_placement(a, b, 0.5);
        let (mut y1, mut u1, mut e1) = (0.0, 0.0, 0.0);
        let target = 0.6;
        let mut errors = Vec::new();
        for _ in 0..30 {
            let yk = 0.3 * y1 + 0.8 * u1 - 0.2;
            let e = yk - target;
            let uk = u1 - kp * (e - e1) - ki * e;
            errors.push(e.abs());
            (y1, u1, e1) = (yk, uk, e);
        }
        assert!(errors[29] < 1e-6 * errors[0].max(1e-9) + 1e-9, "{errors:?}");
        // A constant input cannot identify b.
        assert!(identify_first_order(&[1.0; 10], &[2.0; 10]).is_none());
    }

    #[test]
    fn an_input_lost_in_the_noise_is_not_clear() {
        // y_k = 0.2 y_{k-1} + b z_k + noise, with seeded noise of sd about 0.3: b = 0.1 is
        // lost in it over 15 epochs, b = 1 is not.
        use rand::RngExt;
        let z: Vec<f64> = (0..16).map(|k| [1.0, 0.25, 0.75, 0.0][k % 4]).collect();
        let mut clear = 0;
        let mut lost = 0;
        for seed in 0..40u64 {
            let mut rng = tailor_core::seeded_rng(seed);
            let noise: Vec<f64> = (0..16).map(|_| rng.random_range(-0.5..0.5)).collect();
            for (b, count) in [(1.0, &mut clear), (0.1, &mut lost)] {
                let mut y = vec![0.0];
                for k in 1..15 {
                    y.push(0.2 * y[k - 1] + b * z[k] + noise[k]);
                }
                let f = identify_open_loop(&y, &z).unwrap();
                assert!(f.b_se.is_finite() && f.b_se > 0.0);
                *count += usize::from(f.b_is_clear());
            }
        }
        assert!(clear >= 36, "b = 1 clear on {clear} of 40 seeds");
        assert!(lost <= 12, "b = 0.1 clear on {lost} of 40 seeds");
    }

    #[test]
    fn an_unclear_slope_is_designed_at_its_safe_end() {
        let fit = |b: f64, b_se: f64, c: f64| ArxFit {
            a: 0.2,
            b,
            c,
            b_se,
            u_mean: 0.5,
        };
        // Clear: the point estimate.
        let d = design_interval(&fit(0.4, 0.05, -0.3), 0.03, 0.9);
        assert!(!d.robust);
        assert!((d.z_steady - (0.8 * -0.03 + 0.3) / 0.4).abs() < 1e-12);
        assert!((d.ki - pole_placement(0.2, 0.4, 0.9).1).abs() < 1e-12);
        // Unclear, tail above the setpoint at the mean input, shallow end not positive:
        // no evidence that any threshold is safe, so z 0; gains from b + 2 se.
        let d = design_interval(&fit(0.15, 0.2, 0.0), 0.03, 0.9);
        assert!(d.robust && d.z_steady == 0.0);
        assert!((d.ki - pole_placement(0.2, 0.55, 0.9).1).abs() < 1e-12);
        // Unclear, tail well under the setpoint: z rises from the mean input along the
        // steep end, less far than the point estimate would take it.
        let (b, se, c) = (0.1, 0.08, -0.1);
        let d = design_interval(&fit(b, se, c), 0.03, 0.9);
        let point = ((0.8 * -0.03 - c) / b).clamp(0.0, 1.0);
        let y_mean = (b * 0.5 + c) / 0.8;
        let steep = 0.5 + (-0.03 - y_mean) * 0.8 / (b + 2.0 * se);
        assert!(d.robust && (d.z_steady - steep).abs() < 1e-12);
        assert!(
            d.z_steady > 0.5 && d.z_steady < point - 0.1,
            "{} vs {point}",
            d.z_steady
        );
        // Nothing known of b: no cut below the mean input, no step above it, slow gains.
        let d = design_interval(&fit(0.3, f64::INFINITY, -0.3), 0.03, 0.9);
        assert!(d.robust && d.z_steady == 0.5 && d.kp == 0.0 && d.ki == 0.1);
        let d = design_interval(&fit(0.3, f64::INFINITY, 0.5), 0.03, 0.9);
        assert!(d.robust && d.z_steady == 0.0);
        // A negative slope with no clear sign: under the setpoint, z at most 1.
        let d = design_interval(&fit(-0.4, 0.3, -0.5), 0.03, 0.9);
        assert!(d.robust && d.z_steady == 1.0);
    }
}
