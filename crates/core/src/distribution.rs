//! Binned work distributions (`distribution.csv`): each bin's largest work and its probability.

use std::io::{self, Write};
use std::path::Path;

use crate::csvfile::{fmt_number, read_text, CsvFile};
use crate::error::{Location, ReadError, ReadErrorKind};

/// How far the probabilities may sum from 1 (shared/spec/formats.md).
pub const PROBABILITY_TOLERANCE: f64 = 1e-6;

/// One bin: requests whose work is above the previous bin's `work_ms` and at most this one's.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Bin {
    /// The bin's largest work, in ms.
    pub work_ms: f64,
    /// The probability that a request falls in this bin.
    pub probability: f64,
}

/// A binned distribution of request work, bins in strictly increasing `work_ms`.
#[derive(Debug, Clone, PartialEq)]
pub struct BinnedDistribution {
    bins: Vec<Bin>,
}

impl BinnedDistribution {
    /// A distribution from bins with strictly increasing positive work and probabilities
    /// in [0, 1] that sum to 1 within [`PROBABILITY_TOLERANCE`].
    pub fn new(bins: Vec<Bin>) -> Result<Self, String> {
        if bins.is_empty() {
            return Err("a distribution needs at least one bin".into());
        }
        let mut previous = 0.0;
        for b in &bins {
            if !(b.work_ms.is_finite() && b.work_ms > previous) {
                return Err(format!(
                    "bin work {} must be positive and above the previous bin's {previous}",
                    b.work_ms
                ));
            }
            if !(0.0..=1.0).contains(&b.probability) {
                return Err(format!("probability {} is not in [0, 1]", b.probability));
            }
            previous = b.work_ms;
        }
        let sum: f64 = bins.iter().map(|b| b.probability).sum();
        if (sum - 1.0).abs() > PROBABILITY_TOLERANCE {
            return Err(format!("probabilities sum to {sum}, not 1"));
        }
        Ok(BinnedDistribution { bins })
    }

    /// Bins sampled works into `bins` equal-width bins from 0 to the largest, each bin
    /// represented by the largest work that fell in it (tail-control's planner reads a
    /// bin as "work up to w_i", §4.1) and the fraction of samples in it; empty bins are
    /// left out, and a bin whose works are all 0 gets its upper edge. Non-finite or
    /// negative works are refused.
    pub fn from_samples(works: &[f64], bins: usize) -> Result<Self, String> {
        if bins == 0 {
            return Err("at least one bin is needed".into());
        }
        if let Some(w) = works.iter().find(|w| !(w.is_finite() && **w >= 0.0)) {
            return Err(format!("work {w} is not a finite non-negative number"));
        }
        let max = works.iter().copied().fold(0.0, f64::max);
        if max <= 0.0 {
            return Err("no positive work to bin".into());
        }
        let width = max / bins as f64;
        let mut counts = vec![0usize; bins];
        let mut largest = vec![0.0f64; bins];
        for &w in works {
            let i = ((w / width).ceil() as usize).clamp(1, bins) - 1;
            counts[i] += 1;
            largest[i] = largest[i].max(w);
        }
        let total = works.len() as f64;
        BinnedDistribution::new(
            counts
                .iter()
                .enumerate()
                .filter(|(_, c)| **c > 0)
                .map(|(i, c)| Bin {
                    work_ms: if largest[i] > 0.0 {
                        largest[i]
                    } else {
                        width * (i + 1) as f64
                    },
                    probability: *c as f64 / total,
                })
                .collect(),
        )
    }

    /// The bins, in increasing work.
    pub fn bins(&self) -> &[Bin] {
        &self.bins
    }

    /// The mean work, taking each bin's work as its `work_ms`.
    pub fn mean_work_ms(&self) -> f64 {
        self.bins.iter().map(|b| b.work_ms * b.probability).sum()
    }

    /// Reads a distribution file.
    pub fn read(path: &Path) -> Result<Self, ReadError> {
        let text = read_text(path)?;
        Self::parse(&text, &path.display().to_string())
    }

    /// Parses distribution CSV text; `file` names it in errors.
    pub fn parse(text: &str, file: &str) -> Result<Self, ReadError> {
        let csv = CsvFile::parse(text, file)?;
        let columns = csv.columns(|name| name == "work_ms" || name == "probability")?;
        let work_col = csv.require(&columns, "work_ms")?;
        let prob_col = csv.require(&columns, "probability")?;
        let mut bins: Vec<Bin> = Vec::with_capacity(csv.rows.len());
        for (line, fields) in &csv.rows {
            let work_ms = csv.positive_time(*line, "work_ms", &fields[work_col])?;
            if let Some(prev) = bins.last() {
                if work_ms <= prev.work_ms {
                    return Err(ReadError::new(
                        csv.at(*line, "work_ms"),
                        ReadErrorKind::NotIncreasing {
                            previous: prev.work_ms,
                        },
                    ));
                }
            }
            let probability = csv.number(*line, "probability", &fields[prob_col])?;
            if !(0.0..=1.0).contains(&probability) {
                return Err(ReadError::new(
                    csv.at(*line, "probability"),
                    ReadErrorKind::BadProbability(probability),
                ));
            }
            bins.push(Bin {
                work_ms,
                probability,
            });
        }
        let sum: f64 = bins.iter().map(|b| b.probability).sum();
        if (sum - 1.0).abs() > PROBABILITY_TOLERANCE {
            return Err(ReadError::new(
                Location::file(file).with_field("probability"),
                ReadErrorKind::ProbabilitySum(sum),
            ));
        }
        Ok(BinnedDistribution { bins })
    }

    /// Writes the distribution as CSV.
    pub fn write(&self, mut out: impl Write) -> io::Result<()> {
        writeln!(out, "work_ms,probability")?;
        for b in &self.bins {
            writeln!(
                out,
                "{},{}",
                fmt_number(b.work_ms),
                fmt_number(b.probability)
            )?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(text: &str) -> Result<BinnedDistribution, ReadError> {
        BinnedDistribution::parse(text, "d.csv")
    }

    #[test]
    fn reads_and_round_trips() {
        let d = parse("work_ms,probability\n1,0.25\n2,0.5\n10,0.25\n").unwrap();
        assert_eq!(d.bins().len(), 3);
        assert_eq!(d.mean_work_ms(), 0.25 + 1.0 + 2.5);
        let mut out = Vec::new();
        d.write(&mut out).unwrap();
        assert_eq!(parse(std::str::from_utf8(&out).unwrap()).unwrap(), d);
    }

    #[test]
    fn accepts_a_sum_within_tolerance() {
        assert!(parse("work_ms,probability\n1,0.3333333\n2,0.6666666\n").is_ok());
    }

    #[test]
    fn rejects_each_kind_of_bad_input() {
        let kind = |text: &str| parse(text).unwrap_err().kind;
        assert_eq!(kind(""), ReadErrorKind::Empty);
        assert_eq!(kind("work_ms,probability\n"), ReadErrorKind::NoRows);
        assert_eq!(
            kind("work_ms\n1\n"),
            ReadErrorKind::MissingColumn("probability".into())
        );
        assert_eq!(
            kind("work_ms,probability,x\n1,1,2\n"),
            ReadErrorKind::UnknownColumn("x".into())
        );
        assert_eq!(
            kind("work_ms,probability\n1,x\n"),
            ReadErrorKind::NotANumber("x".into())
        );
        assert!(matches!(
            kind("work_ms,probability\nnan,1\n"),
            ReadErrorKind::NotFinite(_)
        ));
        assert_eq!(
            kind("work_ms,probability\n0,1\n"),
            ReadErrorKind::NotPositive(0.0)
        );
        assert_eq!(
            kind("work_ms,probability\n1,-0.5\n2,1.5\n"),
            ReadErrorKind::BadProbability(-0.5)
        );
        assert_eq!(
            kind("work_ms,probability\n1,0.5\n2,0.4\n"),
            ReadErrorKind::ProbabilitySum(0.9)
        );
    }

    #[test]
    fn names_the_line_of_a_non_increasing_bin() {
        let e = parse("work_ms,probability\n1,0.5\n5,0.25\n5,0.25\n").unwrap_err();
        assert_eq!(e.kind, ReadErrorKind::NotIncreasing { previous: 5.0 });
        assert_eq!(e.location.line, Some(4));
        assert_eq!(e.location.field.as_deref(), Some("work_ms"));
    }

    #[test]
    fn samples_bin_by_their_upper_edges() {
        let d = BinnedDistribution::from_samples(&[0.5, 1.0, 2.5, 4.0, 0.0], 4).unwrap();
        let bins: Vec<(f64, f64)> = d
            .bins()
            .iter()
            .map(|b| (b.work_ms, b.probability))
            .collect();
        // Width 1: {0, 0.5, 1.0} -> 1, {} -> 2 (left out), {2.5} -> 3, {4.0} -> 4; each
        // bin holds its largest sample.
        assert_eq!(bins, vec![(1.0, 0.6), (2.5, 0.2), (4.0, 0.2)]);
        let zeros = BinnedDistribution::from_samples(&[0.0, 0.0, 4.0], 2).unwrap();
        assert_eq!(zeros.bins()[0].work_ms, 2.0);
        assert!(BinnedDistribution::from_samples(&[1.0, f64::NAN], 4).is_err());
        assert!(BinnedDistribution::from_samples(&[0.0], 4).is_err());
        assert!(BinnedDistribution::from_samples(&[1.0], 0).is_err());
    }
}
