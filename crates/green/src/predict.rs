//! Solar prediction from cloud cover (Haque's dissertation, §A.4.5; also §B.4): E_p(t) = B(t)(1 − CloudCover), with the cover re-estimated from the last hour's production whenever that predicted better.
//!
//! The method (§A.4.5, from the dissertation's refs. 57, 136 and 56):
//!
//! - **B(t)**, the energy expected under clear skies, is set for each hour of the day to the
//!   energy of that hour on the best (highest-production) day of the previous month:
//!   [`BestDay`].
//! - **Cloud cover** comes from two sources: the weather forecast, issued each hour for each
//!   of the next 48 hours ([`CloudForecast`]), and the cover implied by the last hour's
//!   production, 1 − E(t−1)/B(t−1).
//! - **Which one:** at the start of hour t, both sources predicted hour t−1 an hour ago,
//!   and E(t−1) is now known. The source whose prediction of hour t−1 was closer is used
//!   for every hour of the horizon issued at t. A tie, or a last-hour estimate that cannot
//!   be made (B(t−2) or B(t−1) is zero, or t < 2), goes to the forecast.
//!
//! Where we go past the text, by choice:
//!
//! - The paper's granularity is the hour. We issue at each hour and write a row per
//!   [`EPOCH_H`] epoch: within an hour the predicted energy is spread as the best day spread
//!   it, B_epoch(k)(1 − cover(hour)). Each hour's sum is the paper's E_p(t) exactly.
//! - The last-hour ratio E(t−1)/B(t−1) is capped at 1 (cover at least 0): a day sunnier
//!   than the best day of last month predicts that best day, no more.
//! - Predictions stop at the end of the production trace. `Solar::kw_at` is 0 past it, so
//!   a prediction there would promise energy the simulator never delivers.
//! - An hour that no forecast issue covers is predicted under clear skies (cover 0).

use std::collections::BTreeMap;

use crate::input::{Prediction, Solar, EPOCH_H};

/// Epochs per hour: the method's hourly granularity (§A.4.5) over [`EPOCH_H`] epochs.
const EPOCHS_PER_HOUR: usize = 4;
/// Epochs per day.
pub const EPOCHS_PER_DAY: usize = 24 * EPOCHS_PER_HOUR;
/// Below this, kWh, an hour of the best day counts as dark (B(t) = 0): no last-hour
/// estimate from it. Picked by hand: far below any daylight hour of a real plant.
const DARK_KWH: f64 = 1e-9;

/// A prediction input that cannot be used.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum PredictError {
    /// A best-day power is negative or not finite.
    #[error("best-day epoch {epoch}: power must be finite and at least 0, found {kw}")]
    BadBestDay {
        /// The epoch of the day, 0-95.
        epoch: usize,
        /// The value given.
        kw: f64,
    },
    /// A forecast cover lies outside [0, 1] or is not finite.
    #[error("forecast issued at hour {issued}, for hour {hour}: cloud cover must lie in [0, 1], found {cover}")]
    BadCover {
        /// The hour the forecast was issued.
        issued: usize,
        /// The hour it is for.
        hour: usize,
        /// The value given.
        cover: f64,
    },
}

/// B(t): the clear-sky production of each epoch of the day, taken from the best day of the
/// previous month (§A.4.5). Its hourly sums are the paper's B(t).
#[derive(Debug, Clone, PartialEq)]
pub struct BestDay {
    /// Mean kW of each [`EPOCH_H`] epoch of the day, from midnight.
    kw: [f64; EPOCHS_PER_DAY],
}

impl BestDay {
    /// The best day from its per-epoch mean power, kW, midnight first.
    pub fn from_epochs(kw: [f64; EPOCHS_PER_DAY]) -> Result<BestDay, PredictError> {
        if let Some((epoch, &kw)) = kw
            .iter()
            .enumerate()
            .find(|(_, v)| !v.is_finite() || **v < 0.0)
        {
            return Err(PredictError::BadBestDay { epoch, kw });
        }
        Ok(BestDay { kw })
    }

    /// The best day from the energy of each hour, kWh (the paper's B(t)), spread evenly
    /// over the hour's epochs.
    pub fn from_hourly(kwh: [f64; 24]) -> Result<BestDay, PredictError> {
        let mut kw = [0.0; EPOCHS_PER_DAY];
        for (k, v) in kw.iter_mut().enumerate() {
            *v = kwh[k / EPOCHS_PER_HOUR];
        }
        BestDay::from_epochs(kw)
    }

    /// The day of highest production among the whole days of `history` (a month, say,
    /// from midnight): B(t) as §A.4.5 sets it. `None` when `history` holds no whole day.
    pub fn from_history(history: &Solar) -> Option<BestDay> {
        let best = history
            .kw
            .chunks_exact(EPOCHS_PER_DAY)
            .map(|day| (day.iter().sum::<f64>(), day))
            // The first of equal days wins.
            .reduce(|a, b| if b.0 > a.0 { b } else { a })?
            .1;
        let mut kw = [0.0; EPOCHS_PER_DAY];
        kw.copy_from_slice(best);
        BestDay::from_epochs(kw).ok()
    }

    /// B for the `hour` (from the trace's start; taken modulo 24), kWh.
    pub fn hour_kwh(&self, hour: usize) -> f64 {
        let h = hour % 24;
        self.kw[h * EPOCHS_PER_HOUR..(h + 1) * EPOCHS_PER_HOUR]
            .iter()
            .sum::<f64>()
            * EPOCH_H
    }

    /// B for epoch `k` (from the trace's start; taken modulo a day), mean kW.
    pub fn epoch_kw(&self, k: usize) -> f64 {
        self.kw[k % EPOCHS_PER_DAY]
    }

    /// The clear-sky energy of one day, kWh.
    pub fn day_kwh(&self) -> f64 {
        self.kw.iter().sum::<f64>() * EPOCH_H
    }
}

/// Hourly cloud-cover forecasts, as a weather service issues them (§A.4.5: each hour, the
/// cover of each of the next 48 hours).
///
/// `issues[t][d]` is the cover, a fraction in [0, 1] (the paper's percentage / 100),
/// forecast at the start of hour t for hour t + d. An issue may be shorter than the
/// horizon, and issues may be missing (empty): an hour is then read from the latest
/// earlier issue that covers it.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct CloudForecast {
    issues: Vec<Vec<f64>>,
}

impl CloudForecast {
    /// Forecasts by issue hour; see the type's documentation for the layout.
    pub fn new(issues: Vec<Vec<f64>>) -> Result<CloudForecast, PredictError> {
        for (issued, list) in issues.iter().enumerate() {
            for (d, &cover) in list.iter().enumerate() {
                if !(0.0..=1.0).contains(&cover) {
                    return Err(PredictError::BadCover {
                        issued,
                        hour: issued + d,
                        cover,
                    });
                }
            }
        }
        Ok(CloudForecast { issues })
    }

    /// The cover forecast for `hour` by the latest issue at or before hour `issued` that
    /// covers it.
    pub fn cover(&self, issued: usize, hour: usize) -> Option<f64> {
        let last = issued.min(hour).min(self.issues.len().checked_sub(1)?);
        (0..=last)
            .rev()
            .find_map(|t| self.issues[t].get(hour - t).copied())
    }
}

/// Which cloud-cover source an issue used (§A.4.5).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Source {
    /// The weather forecast.
    Forecast,
    /// The cover implied by the last hour's production.
    LastHour,
}

/// The energy produced in each hour of `production`, kWh; a last partial hour counts the
/// epochs it has.
pub(crate) fn hourly_kwh(production: &Solar) -> Vec<f64> {
    production
        .kw
        .chunks(EPOCHS_PER_HOUR)
        .map(|c| c.iter().sum::<f64>() * EPOCH_H)
        .collect()
}

/// The cloud cover each hour of `production` implies against `best`: 1 − E(h)/B(h), in
/// [0, 1]; 0 where B(h) is dark.
pub(crate) fn implied_cover(best: &BestDay, production: &Solar) -> Vec<f64> {
    hourly_kwh(production)
        .iter()
        .enumerate()
        .map(|(h, &e)| {
            let b = best.hour_kwh(h);
            if b > DARK_KWH {
                1.0 - (e / b).clamp(0.0, 1.0)
            } else {
                0.0
            }
        })
        .collect()
}

/// The solar prediction of §A.4.5, issued at each hour of `production` for the next
/// `horizon_h` hours (clipped at the trace's end), one row per [`EPOCH_H`] epoch.
///
/// `best` is B(t), `production` the actual production (an issue at hour t reads only its
/// hours before t), `forecast` the weather service's cloud cover. See the module
/// documentation for the rule that picks the cover source.
pub fn predict(
    best: &BestDay,
    production: &Solar,
    forecast: &CloudForecast,
    horizon_h: usize,
) -> Prediction {
    predict_with_sources(best, production, forecast, horizon_h).0
}

/// [`predict`], with the source each issue used.
pub(crate) fn predict_with_sources(
    best: &BestDay,
    production: &Solar,
    forecast: &CloudForecast,
    horizon_h: usize,
) -> (Prediction, Vec<Source>) {
    let epochs = production.kw.len();
    let energy = hourly_kwh(production);
    let hours = energy.len();
    // Each source's cover for hour h as issued at the start of hour h: what the comparison
    // at h + 1 judges.
    let forecast_cover = |issued: usize, h: usize| forecast.cover(issued, h).unwrap_or(0.0);
    // The last-hour ratio E(t−1)/B(t−1) available at the start of hour t.
    let ratio_at = |t: usize| -> Option<f64> {
        let b = best.hour_kwh(t.checked_sub(1)?);
        (b > DARK_KWH).then(|| (energy[t - 1] / b).clamp(0.0, 1.0))
    };
    let mut issues = BTreeMap::new();
    let mut sources = Vec::with_capacity(hours);
    for t in 0..hours {
        let source = match (t.checked_sub(1), ratio_at(t), ratio_at(t.saturating_sub(1))) {
            (Some(last), Some(_), Some(old_ratio)) => {
                let b = best.hour_kwh(last);
                let by_forecast = b * (1.0 - forecast_cover(last, last));
                let by_last_hour = b * old_ratio;
                let actual = energy[last];
                if (by_last_hour - actual).abs() < (by_forecast - actual).abs() {
                    Source::LastHour
                } else {
                    Source::Forecast
                }
            }
            _ => Source::Forecast,
        };
        sources.push(source);
        let ratio = ratio_at(t);
        let end_epoch = ((t + horizon_h) * EPOCHS_PER_HOUR).min(epochs);
        let rows: Vec<(usize, f64)> = (t * EPOCHS_PER_HOUR..end_epoch)
            .map(|k| {
                let clear = match (source, ratio) {
                    (Source::LastHour, Some(r)) => r,
                    _ => 1.0 - forecast_cover(t, k / EPOCHS_PER_HOUR),
                };
                (k, best.epoch_kw(k) * clear)
            })
            .collect();
        if !rows.is_empty() {
            issues.insert(t * EPOCHS_PER_HOUR, rows);
        }
    }
    (Prediction::from_issues(issues), sources)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A best day: a clear-sky hump from 06:00 to 18:00, peaking at 100 kW.
    fn hump() -> BestDay {
        let mut kw = [0.0; EPOCHS_PER_DAY];
        for (k, v) in kw.iter_mut().enumerate() {
            let h = (k as f64 + 0.5) * EPOCH_H;
            if (6.0..18.0).contains(&h) {
                *v = 100.0 * (std::f64::consts::PI * (h - 6.0) / 12.0).sin();
            }
        }
        BestDay::from_epochs(kw).unwrap()
    }

    /// Production under the hourly `cover`, epoch by epoch.
    fn produce(best: &BestDay, cover: &[f64]) -> Solar {
        Solar {
            kw: (0..cover.len() * EPOCHS_PER_HOUR)
                .map(|k| best.epoch_kw(k) * (1.0 - cover[k / EPOCHS_PER_HOUR]))
                .collect(),
        }
    }

    /// The forecast issued each hour for the next 48 hours, from `cover_at(issued, hour)`.
    fn forecast(hours: usize, cover_at: impl Fn(usize, usize) -> f64) -> CloudForecast {
        CloudForecast::new(
            (0..hours)
                .map(|t| (t..t + 48).map(|h| cover_at(t, h)).collect())
                .collect(),
        )
        .unwrap()
    }

    #[test]
    fn a_perfect_forecast_predicts_production_exactly() {
        let best = hump();
        let cover: Vec<f64> = (0..48).map(|h| ((h * 7) % 10) as f64 / 10.0).collect();
        let solar = produce(&best, &cover);
        let c = cover.clone();
        let p = predict(
            &best,
            &solar,
            &forecast(48, move |_, h| c.get(h).copied().unwrap_or(0.0)),
            48,
        );
        // Every issue covers the rest of the trace, every epoch of it, exactly.
        assert_eq!(p.issues().len(), 48);
        for (&issued, rows) in p.issues() {
            assert_eq!(rows.len(), 192 - issued);
            for &(k, kw) in rows {
                assert!((kw - solar.kw[k]).abs() < 1e-9, "issue {issued} epoch {k}");
            }
        }
    }

    #[test]
    fn a_wrong_forecast_gives_way_to_the_last_hour() {
        let best = hump();
        // Steady half cover all day, forecast as clear sky.
        let cover = vec![0.5; 48];
        let solar = produce(&best, &cover);
        let fc = forecast(48, |_, _| 0.0);
        let (p, sources) = predict_with_sources(&best, &solar, &fc, 48);
        // From 08:00 on day 1 (hours 6 and 7 are lit, so hour 7's two predictions can be
        // judged at hour 8) the last hour wins, until dark hours stop the estimate.
        assert_eq!(sources[7], Source::Forecast);
        assert!(sources[8..18].iter().all(|&s| s == Source::LastHour));
        assert_eq!(sources[20], Source::Forecast);
        // At 10:00 the last-hour cover predicts the day, and tomorrow, exactly ...
        let issue = &p.issues()[&(10 * EPOCHS_PER_HOUR)];
        for &(k, kw) in issue {
            assert!((kw - solar.kw[k]).abs() < 1e-9, "epoch {k}");
        }
        // ... where the 04:00 issue, on the forecast alone, doubled it.
        let forecast_only = predict(&best, &solar, &fc, 48).issues()[&(4 * EPOCHS_PER_HOUR)]
            .iter()
            .find(|r| r.0 == 12 * EPOCHS_PER_HOUR)
            .unwrap()
            .1;
        assert!((forecast_only - 2.0 * solar.kw[12 * EPOCHS_PER_HOUR]).abs() < 1e-9);
    }

    #[test]
    fn a_right_forecast_keeps_the_lead_when_the_sky_changes() {
        let best = hump();
        // Clear morning, heavy cover from noon: the last hour errs once the sky changes,
        // the forecast never does.
        let cover: Vec<f64> = (0..24).map(|h| if h < 12 { 0.0 } else { 0.8 }).collect();
        let solar = produce(&best, &cover);
        let c = cover.clone();
        let (p, sources) = predict_with_sources(
            &best,
            &solar,
            &forecast(24, move |_, h| c.get(h).copied().unwrap_or(0.0)),
            24,
        );
        // Ties (both exact) go to the forecast; at 13:00 the last hour was wrong about noon.
        assert!(sources.iter().all(|&s| s == Source::Forecast));
        let at_noon = &p.issues()[&(12 * EPOCHS_PER_HOUR)];
        assert!((at_noon[0].1 - solar.kw[12 * EPOCHS_PER_HOUR]).abs() < 1e-9);
    }

    #[test]
    fn best_day_is_the_highest_day_of_the_history_and_inputs_are_checked() {
        let best = hump();
        let mut kw: Vec<f64> = (0..EPOCHS_PER_DAY)
            .map(|k| best.epoch_kw(k) * 0.5)
            .collect();
        kw.extend((0..EPOCHS_PER_DAY).map(|k| best.epoch_kw(k)));
        kw.extend((0..EPOCHS_PER_DAY).map(|k| best.epoch_kw(k) * 0.9));
        kw.extend([5.0; 10]); // a partial day is not a candidate
        let found = BestDay::from_history(&Solar { kw }).unwrap();
        assert_eq!(found, best);
        assert!((found.day_kwh() - 12.0 * 100.0 * 2.0 / std::f64::consts::PI).abs() < 1.0);
        assert!(BestDay::from_history(&Solar { kw: vec![1.0; 95] }).is_none());
        let mut hourly = [0.0; 24];
        hourly[12] = 40.0;
        let b = BestDay::from_hourly(hourly).unwrap();
        assert_eq!((b.hour_kwh(36), b.epoch_kw(48)), (40.0, 40.0));
        assert!(matches!(
            BestDay::from_hourly([-1.0; 24]),
            Err(PredictError::BadBestDay { epoch: 0, .. })
        ));
        let e = CloudForecast::new(vec![vec![0.2], vec![0.1, 1.5]]).unwrap_err();
        assert_eq!(
            e,
            PredictError::BadCover {
                issued: 1,
                hour: 2,
                cover: 1.5
            }
        );
    }

    #[test]
    fn a_missing_issue_reads_the_latest_earlier_one_and_the_trace_end_clips() {
        let fc = CloudForecast::new(vec![vec![0.1, 0.2, 0.3], vec![], vec![0.7]]).unwrap();
        assert_eq!(fc.cover(1, 2), Some(0.3));
        assert_eq!(fc.cover(2, 2), Some(0.7));
        assert_eq!(fc.cover(2, 3), None);
        assert_eq!(fc.cover(0, 5), None);
        let best = hump();
        let solar = produce(&best, &[0.0; 30]);
        let p = predict(&best, &solar, &fc, 4);
        // Issue 28 of a 30-hour trace covers its last 2 hours only.
        assert_eq!(
            p.issues()[&(28 * EPOCHS_PER_HOUR)].len(),
            2 * EPOCHS_PER_HOUR
        );
        assert_eq!(p.issues()[&0].len(), 4 * EPOCHS_PER_HOUR);
        // Uncovered hours are clear sky.
        assert_eq!(p.kw(0, 13 * 4), None);
        assert_eq!(p.kw(13 * 4, 13 * 4), Some(best.epoch_kw(13 * 4)));
    }

    proptest::proptest! {
        #[test]
        fn predictions_lie_between_zero_and_the_best_day(
            cover in proptest::collection::vec(0.0f64..=1.0, 1..60),
            noise in proptest::collection::vec(-0.5f64..0.5, 60),
            horizon in 1usize..50,
        ) {
            let best = hump();
            let solar = produce(&best, &cover);
            let hours = cover.len();
            let fc = forecast(hours, |t, h| {
                (cover.get(h).copied().unwrap_or(0.0) + noise[(t + h) % 60]).clamp(0.0, 1.0)
            });
            let p = predict(&best, &solar, &fc, horizon);
            proptest::prop_assert_eq!(p.issues().len(), hours);
            for (&issued, rows) in p.issues() {
                proptest::prop_assert_eq!(rows[0].0, issued);
                let want = (horizon * EPOCHS_PER_HOUR).min(solar.kw.len() - issued);
                proptest::prop_assert_eq!(rows.len(), want);
                for &(k, kw) in rows {
                    proptest::prop_assert!((0.0..=best.epoch_kw(k) + 1e-12).contains(&kw));
                }
            }
        }
    }
}
