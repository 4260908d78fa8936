//! Synthetic solar days and weather forecasts: the High, Medium and Low days of §A.5.1 and §B.4, with the prediction errors the appendices describe.
//!
//! Facts used (Haque's dissertation): the peak is 75% of the datacenter's peak power for
//! Green SLAs (176.4 kW, §A.5.1) and equal to it for GreenPar (1.5 kW, §B.4); the two-day
//! totals of §A.5.1 (3.23, 1.94, 0.626 MWh) and the one-day totals of §B.4 (12, 8,
//! 2.84 kWh); the prediction method of §A.4.5 ([`crate::predict`]); and how accurate the
//! predictions were: §A.5.1's High days mostly accurate with some under-prediction on the
//! first day, Medium days with significant, mostly over-, predictions, Low days mostly
//! accurate; §B.4's Medium day with periods of over- and of under-prediction.
//!
//! Invented, by hand: daylight from 05:30 to 20:15 (about New Jersey's in May and June);
//! a clear-sky curve sin^p over it, p set so the clear day yields the High days' daily
//! energy / 0.975 (the best day of the previous month a little sunnier than the High
//! days); the cloud processes below; and the forecast errors below. A day's production is
//! clear(k) · min(1, α(1 − cover(k))), with α found by bisection so the total is the
//! appendix's to within rounding to 0.1 W.

use rand::RngExt;

use super::{round4, Day, System, PREDICTION_HORIZON_H as HORIZON_H};
use crate::input::{Solar, EPOCH_H};
use crate::predict::{self, BestDay, CloudForecast, EPOCHS_PER_DAY};

/// Sunrise and sunset, hours of the day: invented, about New Jersey's in May-June.
const SUNRISE_H: f64 = 5.5;
/// See [`SUNRISE_H`].
const SUNSET_H: f64 = 20.25;
/// The thickest cloud cover of a High day: invented, thin enough that a cloud's onset,
/// which the last hour's production cannot foresee, costs little.
const THIN_CLOUD: f64 = 0.12;
/// The High days' share of the best day's energy: invented.
const HIGH_SHARE_OF_CLEAR: f64 = 0.975;

/// The solar facts of one system.
pub(crate) struct SolarFacts {
    /// Peak production, kW.
    pub(crate) peak_kw: f64,
    /// Days in the trace.
    pub(crate) days: usize,
    /// Total production of the High, Medium and Low traces, kWh.
    pub(crate) totals_kwh: [f64; 3],
}

impl SolarFacts {
    /// §A.5.1 (Green SLAs) or §B.4 (GreenPar).
    pub(crate) fn of(system: System) -> SolarFacts {
        match system {
            // 42 racks × 40 servers × 140 W = 235.2 kW; 75% of it.
            System::Sla => SolarFacts {
                peak_kw: 0.75 * 42.0 * 40.0 * 0.140,
                days: 2,
                totals_kwh: [3230.0, 1940.0, 626.0],
            },
            System::Par => SolarFacts {
                peak_kw: 1.5,
                days: 1,
                totals_kwh: [12.0, 8.0, 2.84],
            },
        }
    }

    /// The total of `day`'s trace, kWh.
    pub(crate) fn total_kwh(&self, day: Day) -> f64 {
        self.totals_kwh[match day {
            Day::High => 0,
            Day::Medium => 1,
            Day::Low => 2,
        }]
    }
}

/// A solar trace, the best day it is predicted against, the forecasts, and the prediction.
pub(crate) struct SolarDays {
    pub(crate) solar: Solar,
    pub(crate) best: BestDay,
    pub(crate) forecast: CloudForecast,
}

/// A standard normal draw (Box-Muller).
pub(crate) fn normal(rng: &mut tailor_core::Rng) -> f64 {
    let u1: f64 = 1.0 - rng.random::<f64>();
    let u2: f64 = rng.random();
    (-2.0 * u1.ln()).sqrt() * (std::f64::consts::TAU * u2).cos()
}

/// The clear-sky curve of one day, kW per epoch: peak · sin^p over daylight.
fn clear_day(peak_kw: f64, p: f64) -> [f64; EPOCHS_PER_DAY] {
    let mut kw = [0.0; EPOCHS_PER_DAY];
    for (k, v) in kw.iter_mut().enumerate() {
        let mid = (k as f64 + 0.5) * EPOCH_H;
        if mid > SUNRISE_H && mid < SUNSET_H {
            let x = std::f64::consts::PI * (mid - SUNRISE_H) / (SUNSET_H - SUNRISE_H);
            *v = peak_kw * x.sin().powf(p);
        }
    }
    kw
}

/// The exponent p whose clear day yields `kwh`, by bisection (energy falls as p grows).
fn clear_exponent(peak_kw: f64, kwh: f64) -> f64 {
    let energy = |p: f64| clear_day(peak_kw, p).iter().sum::<f64>() * EPOCH_H;
    let (mut lo, mut hi) = (0.05, 20.0);
    for _ in 0..100 {
        let mid = 0.5 * (lo + hi);
        if energy(mid) > kwh {
            lo = mid;
        } else {
            hi = mid;
        }
    }
    0.5 * (lo + hi)
}

/// The true cloud cover of each epoch of `days` days of kind `day`, and the forecast's
/// bias for each hour (positive: the forecast is cloudier than the sky).
fn sky(day: Day, system: System, days: usize, rng: &mut tailor_core::Rng) -> (Vec<f64>, Vec<f64>) {
    let hours = 24 * days;
    let mut hourly = vec![0.0f64; hours];
    let mut bias = vec![0.0; hours];
    let jitter = match day {
        Day::High => {
            // Sunny, with a few thin clouds on the first day, one on the second; the noon
            // hour of the first day stays clear (the peak). A cloud (cover up to
            // [`THIN_CLOUD`] at its thickest, for 1-2 hours) thickens and thins over an hour on each side
            // in thirds, so that no hour is over-predicted by much: the appendices' High
            // days were mostly accurate, with under-predictions only.
            for d in 0..days {
                let episodes = if d == 0 { 3 } else { 1 };
                for _ in 0..episodes {
                    let start = rng.random_range(7..15usize);
                    let len = rng.random_range(1..=2usize);
                    let cover: f64 = rng.random_range(0.5 * THIN_CLOUD..THIN_CLOUD);
                    let shape = std::iter::once(cover / 3.0)
                        .chain(std::iter::once(2.0 * cover / 3.0))
                        .chain(std::iter::repeat_n(cover, len))
                        .chain([2.0 * cover / 3.0, cover / 3.0]);
                    for (h, c) in (start..18).zip(shape) {
                        let slot = &mut hourly[24 * d + h];
                        *slot = slot.max(c);
                    }
                }
            }
            hourly[12] = 0.0;
            // A clear noon inside a cloud would make its next hour a sudden onset: no
            // hour's cover rises by more than a third of the thickest cloud's.
            for h in 1..hours {
                hourly[h] = hourly[h].min(hourly[h - 1] + THIN_CLOUD / 3.0);
            }
            // Under-prediction on the first day: clouds forecast from 09:00 to 16:00 that
            // did not come (§A.5.1, §B.4).
            for b in &mut bias[9..16] {
                *b = 0.25;
            }
            0.02
        }
        Day::Medium => {
            // Broken clouds: an hourly AR(1) around 0.45.
            let mut c: f64 = 0.45;
            for h in &mut hourly {
                c = (0.45 + 0.6 * (c - 0.45) + 0.2 * normal(rng)).clamp(0.05, 0.95);
                *h = c;
            }
            // §A.5.1: mostly over-predictions (the forecast sees too few clouds); §B.4:
            // over-predictions until 13:00, under-predictions after.
            for (h, b) in bias.iter_mut().enumerate() {
                *b = match system {
                    System::Sla => -0.25,
                    System::Par if h % 24 < 13 => -0.25,
                    System::Par => 0.2,
                };
            }
            0.08
        }
        Day::Low => {
            // Overcast: an hourly AR(1) around 0.8, small swings; forecast unbiased.
            let mut c: f64 = 0.8;
            for h in &mut hourly {
                c = (0.8 + 0.7 * (c - 0.8) + 0.025 * normal(rng)).clamp(0.5, 0.98);
                *h = c;
            }
            0.03
        }
    };
    let cover = (0..hours * 4)
        .map(|k| {
            let c = hourly[k / 4];
            if c == 0.0 {
                0.0
            } else {
                (c + jitter * normal(rng)).clamp(0.0, 1.0)
            }
        })
        .collect();
    (cover, bias)
}

/// The forecast's noise: standard deviation at lead 0, and its growth per hour of lead.
fn forecast_noise(day: Day) -> (f64, f64) {
    match day {
        Day::High => (0.02, 0.002),
        Day::Medium => (0.05, 0.003),
        Day::Low => (0.015, 0.001),
    }
}

/// The production of `day` for `system`, its best day, and the weather forecasts.
pub(crate) fn solar_days(day: Day, system: System, rng: &mut tailor_core::Rng) -> SolarDays {
    let facts = SolarFacts::of(system);
    let clear_kwh = facts.total_kwh(Day::High) / facts.days as f64 / HIGH_SHARE_OF_CLEAR;
    let clear = clear_day(facts.peak_kw, clear_exponent(facts.peak_kw, clear_kwh));
    let best = BestDay::from_epochs(clear).expect("the clear-sky curve is finite and >= 0");
    let (cover, bias) = sky(day, system, facts.days, rng);
    let target = facts.total_kwh(day);
    let produce = |alpha: f64| -> Vec<f64> {
        cover
            .iter()
            .enumerate()
            .map(|(k, c)| best.epoch_kw(k) * (alpha * (1.0 - c)).min(1.0))
            .collect()
    };
    let total = |alpha: f64| produce(alpha).iter().sum::<f64>() * EPOCH_H;
    let (mut lo, mut hi) = (0.0, 100.0);
    for _ in 0..200 {
        let mid = 0.5 * (lo + hi);
        if total(mid) < target {
            lo = mid;
        } else {
            hi = mid;
        }
    }
    let solar = Solar {
        kw: produce(0.5 * (lo + hi)).into_iter().map(round4).collect(),
    };
    // The forecasts: the cover the production implies, plus bias, plus noise growing with
    // the lead.
    let truth = predict::implied_cover(&best, &solar);
    let hours = truth.len();
    let (sd0, sd_per_h) = forecast_noise(day);
    let issues = (0..hours)
        .map(|t| {
            (t..(t + HORIZON_H).min(hours))
                .map(|h| {
                    let sd = sd0 + sd_per_h * (h - t) as f64;
                    (truth[h] + bias[h] + sd * normal(rng)).clamp(0.0, 1.0)
                })
                .collect()
        })
        .collect();
    let forecast = CloudForecast::new(issues).expect("covers are clamped to [0, 1]");
    SolarDays {
        solar,
        best,
        forecast,
    }
}
