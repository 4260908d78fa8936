//! Arrival processes: open-loop intended arrival times, drawn ahead of time.

use std::path::Path;

use rand_distr::{Distribution, Exp, LogNormal};

use crate::csvfile::{read_text, CsvFile};
use crate::demand::lognormal_params;
use crate::error::{clip, ReadError, ReadErrorKind, SpecError};
use crate::Rng;

/// An arrival process, as named by the `ARRIVALS` syntax.
#[derive(Debug, Clone, PartialEq)]
pub enum Arrivals {
    /// Exponential inter-arrival times with mean 1000 / rps ms.
    Poisson,
    /// Log-normal inter-arrival times with mean 1000 / rps ms and this standard deviation.
    LogNormal {
        /// Standard deviation of the inter-arrival time, in ms.
        sd_ms: f64,
    },
    /// Replays recorded arrival times (ms, non-decreasing), ignoring the rate.
    Trace(Vec<f64>),
    /// Poisson phases, each at its own rate for its own number of requests, in order.
    /// The phases fix the number of requests and ignore the run's rate.
    Phases(Vec<Phase>),
}

/// One load phase: `count` Poisson arrivals at `rps`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Phase {
    /// Requests per second during the phase.
    pub rps: f64,
    /// Requests in the phase.
    pub count: usize,
}

/// Why arrivals could not be generated.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum ArrivalError {
    /// The rate is not a positive finite number.
    #[error("the arrival rate must be positive and finite, found {0}")]
    BadRate(f64),
    /// The inter-arrival distribution's parameters overflow at this rate.
    #[error("log-normal inter-arrivals with mean {mean_ms} ms and sd {sd_ms} ms overflow")]
    Overflow {
        /// The mean inter-arrival time, 1000 / rps.
        mean_ms: f64,
        /// The standard deviation asked for.
        sd_ms: f64,
    },
    /// A trace holds fewer arrivals than requested.
    #[error("the trace holds {available} arrivals, fewer than the {requested} requested")]
    TraceTooShort {
        /// Arrivals in the trace.
        available: usize,
        /// Requests asked for.
        requested: usize,
    },
}

/// The largest inter-arrival standard deviation `lognormal:SD_MS` takes: a day.
const MAX_GAP_MS: f64 = 86_400_000.0;
/// A phase's rate bounds: one request a day, and ten million a second.
const MIN_RPS: f64 = 1.0 / 86_400.0;
const MAX_RPS: f64 = 1e7;
/// The most requests a run, a simulation or a load may have: each keeps a few tens of
/// bytes of records and statistics, so this bounds them to about a gigabyte.
pub const MAX_REQUESTS: usize = 20_000_000;

impl Arrivals {
    /// Parses the `ARRIVALS` syntax of shared/spec/cli.md, reading a trace file if named.
    pub fn parse(spec: &str) -> Result<Arrivals, SpecError> {
        let bad = |reason: &str| SpecError::syntax("arrivals", spec, reason);
        let forms = "expected poisson, lognormal:SD_MS, trace:PATH or phases:RPS*COUNT,...";
        let (head, rest) = match spec.split_once(':') {
            Some((h, r)) => (h, Some(r)),
            None => (spec, None),
        };
        match (head, rest) {
            ("poisson", None) => Ok(Arrivals::Poisson),
            ("lognormal", Some(sd)) => match sd.parse::<f64>() {
                Ok(sd_ms) if sd_ms.is_finite() && sd_ms > 0.0 && sd_ms <= MAX_GAP_MS => {
                    Ok(Arrivals::LogNormal { sd_ms })
                }
                _ => Err(bad(&format!(
                    "SD_MS must be a number of ms above 0 and at most {MAX_GAP_MS}"
                ))),
            },
            ("trace", Some(path)) => Ok(Arrivals::Trace(read_trace(Path::new(path))?)),
            ("phases", Some(list)) => {
                let phases = list
                    .split(',')
                    .map(|p| {
                        let (rps, count) = p
                            .split_once('*')
                            .ok_or_else(|| bad(&format!("phase {p:?} is not RPS*COUNT")))?;
                        let rps: f64 = rps
                            .parse()
                            .ok()
                            .filter(|r: &f64| r.is_finite() && *r >= MIN_RPS && *r <= MAX_RPS)
                            .ok_or_else(|| {
                                bad(&format!(
                                    "phase rate {:?} must be at least one request a day and at most {MAX_RPS} requests/s",
                                    clip(rps)
                                ))
                            })?;
                        let count: usize = count
                            .parse()
                            .ok()
                            .filter(|c| (1..=MAX_REQUESTS).contains(c))
                            .ok_or_else(|| {
                                bad(&format!(
                                    "phase count {:?} must be a whole number from 1 to {MAX_REQUESTS}",
                                    clip(count)
                                ))
                            })?;
                        Ok(Phase { rps, count })
                    })
                    .collect::<Result<Vec<_>, SpecError>>()?;
                Ok(Arrivals::Phases(phases))
            }
            _ => Err(bad(forms)),
        }
    }

    /// The arrival rate a run sustains: the phases' overall rate, the trace's, or `rps`.
    pub fn sustained_rps(&self, rps: f64) -> f64 {
        match self {
            Arrivals::Phases(phases) => {
                let count: usize = phases.iter().map(|p| p.count).sum();
                let seconds: f64 = phases.iter().map(|p| p.count as f64 / p.rps).sum();
                count as f64 / seconds
            }
            Arrivals::Trace(times) => {
                let span =
                    times.last().copied().unwrap_or(0.0) - times.first().copied().unwrap_or(0.0);
                if span > 0.0 {
                    1000.0 * (times.len() - 1) as f64 / span
                } else {
                    rps
                }
            }
            _ => rps,
        }
    }

    /// The number of requests this process fixes by itself, if any (phases do).
    pub fn fixed_count(&self) -> Option<usize> {
        match self {
            Arrivals::Phases(phases) => Some(phases.iter().map(|p| p.count).sum()),
            _ => None,
        }
    }

    /// Intended arrival times in ms from time 0, non-decreasing. `count` is ignored by
    /// phases, which fix their own; a trace must hold at least `count` arrivals.
    pub fn generate(
        &self,
        rps: f64,
        count: usize,
        rng: &mut Rng,
    ) -> Result<Vec<f64>, ArrivalError> {
        match self {
            Arrivals::Poisson => {
                check_rate(rps)?;
                Ok(accumulate(0.0, poisson_gaps(rps, count, rng)))
            }
            Arrivals::LogNormal { sd_ms } => {
                let dist = lognormal_gaps(rps, *sd_ms)?;
                let gaps: Vec<f64> = (0..count).map(|_| dist.sample(rng)).collect();
                Ok(accumulate(0.0, gaps))
            }
            Arrivals::Trace(times) => {
                if times.len() < count {
                    return Err(ArrivalError::TraceTooShort {
                        available: times.len(),
                        requested: count,
                    });
                }
                Ok(times[..count].to_vec())
            }
            Arrivals::Phases(phases) => {
                let mut out = Vec::with_capacity(self.fixed_count().unwrap_or(0));
                let mut now = 0.0;
                for p in phases {
                    check_rate(p.rps)?;
                    let times = accumulate(now, poisson_gaps(p.rps, p.count, rng));
                    now = times.last().copied().unwrap_or(now);
                    out.extend(times);
                }
                Ok(out)
            }
        }
    }
}

/// Arrival times drawn one at a time, in order: the same times as
/// [`Arrivals::generate`] for the same seed, without holding them all in memory.
#[derive(Debug, Clone)]
pub struct ArrivalStream {
    source: Source,
    left: usize,
    now: f64,
    rng: Rng,
}

#[derive(Debug, Clone)]
enum Source {
    Poisson(Exp<f64>),
    LogNormal(LogNormal<f64>),
    Replay(std::vec::IntoIter<f64>),
}

impl Iterator for ArrivalStream {
    type Item = f64;

    fn next(&mut self) -> Option<f64> {
        if self.left == 0 {
            return None;
        }
        self.left -= 1;
        match &mut self.source {
            Source::Poisson(exp) => {
                self.now += exp.sample(&mut self.rng);
                Some(self.now)
            }
            Source::LogNormal(dist) => {
                self.now += dist.sample(&mut self.rng);
                Some(self.now)
            }
            Source::Replay(times) => times.next(),
        }
    }
}

impl Arrivals {
    /// Like [`Arrivals::generate`], but drawing the times as they are consumed. Poisson
    /// and log-normal arrivals are streamed; traces and phases are replayed.
    pub fn stream(
        &self,
        rps: f64,
        count: usize,
        mut rng: Rng,
    ) -> Result<ArrivalStream, ArrivalError> {
        let source = match self {
            Arrivals::Poisson => {
                check_rate(rps)?;
                Source::Poisson(Exp::new(rps / 1000.0).expect("a positive rate is valid"))
            }
            Arrivals::LogNormal { sd_ms } => Source::LogNormal(lognormal_gaps(rps, *sd_ms)?),
            _ => {
                let times = self.generate(rps, count, &mut rng)?;
                let left = times.len();
                return Ok(ArrivalStream {
                    source: Source::Replay(times.into_iter()),
                    left,
                    now: 0.0,
                    rng,
                });
            }
        };
        Ok(ArrivalStream {
            source,
            left: count,
            now: 0.0,
            rng,
        })
    }
}

fn check_rate(r: f64) -> Result<(), ArrivalError> {
    if r.is_finite() && (r / 1000.0).is_normal() && r > 0.0 {
        Ok(())
    } else {
        Err(ArrivalError::BadRate(r))
    }
}

/// The inter-arrival distribution of `lognormal:SD_MS` at `rps`.
fn lognormal_gaps(rps: f64, sd_ms: f64) -> Result<LogNormal<f64>, ArrivalError> {
    check_rate(rps)?;
    let mean_ms = 1000.0 / rps;
    let overflow = ArrivalError::Overflow { mean_ms, sd_ms };
    let (mu, sigma) = lognormal_params(mean_ms, sd_ms).ok_or(overflow.clone())?;
    LogNormal::new(mu, sigma).map_err(|_| overflow)
}

fn poisson_gaps(rps: f64, count: usize, rng: &mut Rng) -> Vec<f64> {
    let exp = Exp::new(rps / 1000.0).expect("a positive rate is valid");
    (0..count).map(|_| exp.sample(rng)).collect()
}

fn accumulate(start: f64, gaps: Vec<f64>) -> Vec<f64> {
    let mut now = start;
    gaps.into_iter()
        .map(|g| {
            now += g;
            now
        })
        .collect()
}

/// Reads a trace: a CSV with an `arrival_ms` column (other columns are ignored, so a
/// per-request records file replays as is), times non-negative and non-decreasing.
pub fn read_trace(path: &Path) -> Result<Vec<f64>, ReadError> {
    let text = read_text(path)?;
    parse_trace(&text, &path.display().to_string())
}

/// Parses trace CSV text; `file` names it in errors.
pub fn parse_trace(text: &str, file: &str) -> Result<Vec<f64>, ReadError> {
    let csv = CsvFile::parse(text, file)?;
    let columns = csv.columns(|_| true)?;
    let col = csv.require(&columns, "arrival_ms")?;
    let mut times: Vec<f64> = Vec::with_capacity(csv.rows.len());
    for (line, fields) in &csv.rows {
        let t = csv.number(*line, "arrival_ms", &fields[col])?;
        if t < 0.0 {
            return Err(ReadError::new(
                csv.at(*line, "arrival_ms"),
                ReadErrorKind::Invalid(format!("an arrival time must not be negative, found {t}")),
            ));
        }
        if let Some(&previous) = times.last() {
            if t < previous {
                return Err(ReadError::new(
                    csv.at(*line, "arrival_ms"),
                    ReadErrorKind::Decreasing { previous },
                ));
            }
        }
        times.push(t);
    }
    Ok(times)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::seeded_rng;

    fn mean_gap(times: &[f64]) -> f64 {
        (times[times.len() - 1] - times[0]) / (times.len() - 1) as f64
    }

    #[test]
    fn poisson_and_lognormal_have_the_requested_rate() {
        let mut rng = seeded_rng(5);
        let t = Arrivals::Poisson.generate(40.0, 100_000, &mut rng).unwrap();
        assert!((mean_gap(&t) - 25.0).abs() < 0.3);
        assert!(t.windows(2).all(|w| w[0] <= w[1]));
        let t = Arrivals::LogNormal { sd_ms: 5.0 }
            .generate(100.0, 100_000, &mut rng)
            .unwrap();
        assert!((mean_gap(&t) - 10.0).abs() < 0.1);
    }

    #[test]
    fn phases_run_in_order_at_their_rates() {
        let a = Arrivals::parse("phases:45*500,30*500").unwrap();
        assert_eq!(a.fixed_count(), Some(1000));
        let t = a.generate(1.0, 1, &mut seeded_rng(1)).unwrap();
        assert_eq!(t.len(), 1000);
        let first = mean_gap(&t[..500]);
        let second = mean_gap(&t[500..]);
        assert!(second > first * 1.2, "{first} then {second}");
    }

    #[test]
    fn traces_replay_and_reject_bad_rows() {
        let t = parse_trace("request,arrival_ms\na,0\nb,1.5\nc,1.5\n", "t.csv").unwrap();
        assert_eq!(t, vec![0.0, 1.5, 1.5]);
        let a = Arrivals::Trace(t);
        assert_eq!(
            a.generate(0.0, 2, &mut seeded_rng(1)).unwrap(),
            vec![0.0, 1.5]
        );
        assert!(matches!(
            a.generate(0.0, 9, &mut seeded_rng(1)),
            Err(ArrivalError::TraceTooShort { .. })
        ));
        let e = parse_trace("arrival_ms\n3\n2\n", "t.csv").unwrap_err();
        assert_eq!(e.kind, ReadErrorKind::Decreasing { previous: 3.0 });
        assert_eq!(e.location.line, Some(3));
        assert!(parse_trace("arrival_ms\n-1\n", "t.csv").is_err());
        assert!(parse_trace("when\n1\n", "t.csv").is_err());
    }

    #[test]
    fn streams_match_generated_arrivals() {
        for a in [
            Arrivals::Poisson,
            Arrivals::LogNormal { sd_ms: 3.0 },
            Arrivals::parse("phases:50*10,20*10").unwrap(),
            Arrivals::Trace(vec![0.0, 1.0, 1.0, 7.5]),
        ] {
            let all = a.generate(50.0, 4, &mut seeded_rng(3)).unwrap();
            let streamed: Vec<f64> = a.stream(50.0, 4, seeded_rng(3)).unwrap().collect();
            assert_eq!(all, streamed, "{a:?}");
        }
    }

    #[test]
    fn seeded_arrivals_repeat_exactly() {
        for a in [Arrivals::Poisson, Arrivals::LogNormal { sd_ms: 3.0 }] {
            let x = a.generate(50.0, 100, &mut seeded_rng(2)).unwrap();
            let y = a.generate(50.0, 100, &mut seeded_rng(2)).unwrap();
            assert_eq!(x, y);
        }
    }

    #[test]
    fn rejects_malformed_specs_and_rates() {
        for bad in [
            "",
            "uniform",
            "poisson:3",
            "lognormal",
            "lognormal:-2",
            "phases:",
            "phases:40",
            "phases:40*0",
            "phases:x*10",
        ] {
            assert!(Arrivals::parse(bad).is_err(), "{bad:?} was accepted");
        }
        assert_eq!(
            Arrivals::Poisson.generate(0.0, 1, &mut seeded_rng(1)),
            Err(ArrivalError::BadRate(0.0))
        );
        assert!(Arrivals::Poisson
            .generate(1e-310, 1, &mut seeded_rng(1))
            .is_err());
        assert!(matches!(
            Arrivals::LogNormal { sd_ms: 1e300 }.generate(1e300, 3, &mut seeded_rng(1)),
            Err(ArrivalError::Overflow { .. })
        ));
    }
}
