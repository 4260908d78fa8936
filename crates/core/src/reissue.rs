//! Reissue policies for fanned-out shard requests, and the replica stalls they are
//! meant to escape: the decision rules shared by the fan-out simulator and the live
//! front end.
//!
//! A shard request that has not answered after a delay may be sent again to another
//! replica of its shard: never (`none`), always at delay d (`single-d:D`, SingleD), with
//! probability q at delay d (`single-r:D:Q`, SingleR: Kaler, He and Elnikety, "Optimal
//! Reissue Policies for Reducing Tail Latency", SPAA 2017, prove a single randomized
//! reissue optimal within their model), or after the P-th percentile of recent latencies
//! (`hedge:P`, the hedged requests of Dean and Barroso, "The Tail at Scale", CACM 2013).

use std::path::Path;

use crate::csvfile::{read_text, CsvFile};
use crate::error::{ReadError, ReadErrorKind, SpecError};

/// The most a reissue delay or a stall may last, in ms: a day.
const MAX_MS: f64 = 86_400_000.0;

/// When a shard request is sent a second time.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Reissue {
    /// Never.
    None,
    /// SingleD: always, after `d_ms` without an answer.
    SingleD {
        /// The delay.
        d_ms: f64,
    },
    /// SingleR: with probability `q`, after `d_ms` without an answer.
    SingleR {
        /// The delay.
        d_ms: f64,
        /// The probability, drawn once per shard request when it is sent.
        q: f64,
    },
    /// Dean's hedged request, as tower's hedge keeps it: after the `percentile`-th
    /// percentile of the shard's answered latencies over the previous period, once that
    /// period has [`HEDGE_MIN_SAMPLES`] of them.
    Hedge {
        /// In (0, 100).
        percentile: f64,
    },
}

/// The latencies a hedging front end needs before it hedges.
pub const HEDGE_MIN_SAMPLES: usize = 100;

impl Reissue {
    /// Parses `none`, `single-d:D_MS`, `single-r:D_MS:Q` or `hedge:PERCENTILE`.
    pub fn parse(text: &str) -> Result<Reissue, SpecError> {
        let bad = |reason: &str| SpecError::syntax("reissue", text, reason);
        let forms = "expected none, single-d:D_MS, single-r:D_MS:Q or hedge:PERCENTILE";
        let ms = |t: &str| match t.parse::<f64>() {
            Ok(v) if v.is_finite() && (0.0..=MAX_MS).contains(&v) => Ok(v),
            _ => Err(bad(
                "the delay D_MS must be a number of ms from 0 to 86400000",
            )),
        };
        let parts: Vec<&str> = text.split(':').collect();
        match parts.as_slice() {
            ["none"] => Ok(Reissue::None),
            ["single-d", d] => Ok(Reissue::SingleD { d_ms: ms(d)? }),
            ["single-r", d, q] => match q.parse::<f64>() {
                Ok(q) if (0.0..=1.0).contains(&q) => Ok(Reissue::SingleR { d_ms: ms(d)?, q }),
                _ => Err(bad("the probability Q must be a number from 0 to 1")),
            },
            // In percent, as every percentile tailor reads; a fraction (0.95) is read as
            // one, so `hedge:0.95` is p95.
            ["hedge", p] => match p.parse::<f64>().map(|p| if p <= 1.0 { 100.0 * p } else { p }) {
                Ok(p) if p > 0.0 && p < 100.0 => Ok(Reissue::Hedge { percentile: p }),
                _ => Err(bad(
                    "the PERCENTILE must be in percent, above 0 and below 100 (95), or a fraction (0.95)",
                )),
            },
            _ => Err(bad(forms)),
        }
    }

    /// The policy's name in the syntax `parse` reads.
    pub fn name(&self) -> String {
        match self {
            Reissue::None => "none".into(),
            Reissue::SingleD { d_ms } => format!("single-d:{d_ms}"),
            Reissue::SingleR { d_ms, q } => format!("single-r:{d_ms}:{q}"),
            Reissue::Hedge { percentile } => format!("hedge:{percentile}"),
        }
    }
}

/// Replicas that stall at random: per replica, exponential gaps of rate `rate_per_s`
/// from the end of one stall to the start of the next, each stall `length_ms` long (so
/// stalls start 1 / (1 / rate + length) times a second).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Noise {
    /// Stalls per second per replica.
    pub rate_per_s: f64,
    /// How long each lasts.
    pub length_ms: f64,
}

impl Noise {
    /// Parses `RATE_PER_S:LENGTH_MS`.
    pub fn parse(text: &str) -> Result<Noise, SpecError> {
        let bad = |reason: &str| SpecError::syntax("noise", text, reason);
        let (rate, length) = text
            .split_once(':')
            .ok_or_else(|| bad("expected RATE_PER_S:LENGTH_MS"))?;
        let rate_per_s = rate
            .parse::<f64>()
            .ok()
            .filter(|r| r.is_finite() && (0.0..=1e6).contains(r))
            .ok_or_else(|| bad("the RATE_PER_S must be a number from 0 to 1000000"))?;
        let length_ms = length
            .parse::<f64>()
            .ok()
            .filter(|l| l.is_finite() && *l > 0.0 && *l <= MAX_MS)
            .ok_or_else(|| bad("the LENGTH_MS must be a number above 0 and at most 86400000"))?;
        Ok(Noise {
            rate_per_s,
            length_ms,
        })
    }
}

/// A log of shard response times, as `tailor simulate --shards ... --records` writes it
/// (or any CSV with `shard` and `latency_ms`, and optionally `primary_ms`).
#[derive(Debug, Clone, PartialEq)]
pub struct ShardLog {
    /// The first copies' own response times in ms, where they answered: `primary_ms`
    /// where the file has it, else `latency_ms`.
    pub answered_ms: Vec<f64>,
    /// First copies cancelled before they answered (an empty `primary_ms`): each is
    /// known only to exceed its request's `latency_ms`, when its reissue answered.
    pub censored_ms: Vec<f64>,
    /// The shards, one more than the largest `shard`.
    pub shards: usize,
}

impl ShardLog {
    /// Reads a shard log.
    pub fn read(path: &Path) -> Result<ShardLog, ReadError> {
        let text = read_text(path)?;
        ShardLog::parse(&text, &path.display().to_string())
    }

    /// Parses shard-log CSV text; `file` names it in errors.
    pub fn parse(text: &str, file: &str) -> Result<ShardLog, ReadError> {
        let csv = CsvFile::parse(text, file)?;
        let columns = csv.columns(|_| true)?;
        let shard = csv.require(&columns, "shard")?;
        let latency = csv.require(&columns, "latency_ms")?;
        let primary = columns.get("primary_ms").copied();
        let mut log = ShardLog {
            answered_ms: Vec::with_capacity(csv.rows.len()),
            censored_ms: Vec::new(),
            shards: 0,
        };
        for (line, fields) in &csv.rows {
            let s = csv.number(*line, "shard", &fields[shard])?;
            if !(s >= 0.0 && s.fract() == 0.0 && s < 1e6) {
                return Err(ReadError::new(
                    csv.at(*line, "shard"),
                    ReadErrorKind::Invalid(format!("a shard is a whole number from 0, found {s}")),
                ));
            }
            log.shards = log.shards.max(s as usize + 1);
            let latency = csv.positive_time(*line, "latency_ms", &fields[latency])?;
            match primary.map(|p| fields[p].trim()) {
                Some("") => log.censored_ms.push(latency),
                Some(text) => log
                    .answered_ms
                    .push(csv.positive_time(*line, "primary_ms", text)?),
                None => log.answered_ms.push(latency),
            }
        }
        Ok(log)
    }
}

/// One shard request's history.
#[derive(Debug, Clone, PartialEq)]
pub struct ShardRecord {
    /// Its query, from 1 in arrival order.
    pub query: usize,
    /// Its shard, from 0.
    pub shard: usize,
    /// The replica the first copy went to, from 0 within the shard.
    pub replica: usize,
    /// When its query arrived.
    pub arrival_ms: f64,
    /// Until the first answer.
    pub latency_ms: f64,
    /// The first copy's own latency, if it finished (it may have been cancelled).
    pub primary_ms: Option<f64>,
    /// The replica the second copy went to, if it was reissued.
    pub reissued_to: Option<usize>,
    /// Whether the second copy answered first.
    pub reissue_won: bool,
    /// Its work, where known (a simulation knows it; a live front end does not).
    pub work_ms: Option<f64>,
}

/// Writes shard records as CSV: one line per shard request, by query then shard.
pub fn write_shard_records(
    records: &[ShardRecord],
    mut out: impl std::io::Write,
) -> std::io::Result<()> {
    writeln!(
        out,
        "query,shard,replica,arrival_ms,latency_ms,primary_ms,reissued,reissued_to,reissue_won,work_ms"
    )?;
    let opt = |v: Option<f64>| v.map_or(String::new(), |v| format!("{v:.6}"));
    for r in records {
        writeln!(
            out,
            "{},{},{},{:.6},{:.6},{},{},{},{},{}",
            r.query,
            r.shard,
            r.replica,
            r.arrival_ms,
            r.latency_ms,
            opt(r.primary_ms),
            r.reissued_to.is_some(),
            r.reissued_to.map_or(String::new(), |t| t.to_string()),
            r.reissue_won,
            opt(r.work_ms)
        )?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn policies_parse_and_print_back() {
        for text in ["none", "single-d:12.5", "single-r:3:0.25", "hedge:95"] {
            assert_eq!(Reissue::parse(text).unwrap().name(), text);
        }
        assert_eq!(
            Reissue::parse("single-r:3:0.25").unwrap(),
            Reissue::SingleR { d_ms: 3.0, q: 0.25 }
        );
        for bad in [
            "",
            "single-d",
            "single-d:-1",
            "single-r:3",
            "single-r:3:1.5",
            "hedge:100",
            "hedge:0",
            "sometimes",
        ] {
            let err = Reissue::parse(bad).unwrap_err().to_string();
            assert!(err.contains("reissue"), "{bad}: {err}");
        }
    }

    #[test]
    fn shard_logs_read_primaries_and_count_shards() {
        let log = ShardLog::parse(
            "query,shard,latency_ms,primary_ms\n1,0,2.5,2.5\n1,3,4,\n2,1,1,1\n",
            "f",
        )
        .unwrap();
        assert_eq!(log.shards, 4);
        assert_eq!(log.answered_ms, vec![2.5, 1.0]);
        assert_eq!(log.censored_ms, vec![4.0]);
        let plain = ShardLog::parse("shard,latency_ms\n0,3\n", "f").unwrap();
        assert_eq!(plain.answered_ms, vec![3.0]);
        for (bad, needle) in [
            ("latency_ms\n3\n", "shard"),
            ("shard,latency_ms\n-1,3\n", "f:2"),
            ("shard,latency_ms\n0,0\n", "latency_ms"),
            ("shard,latency_ms,primary_ms\n0,3,x\n", "primary_ms"),
        ] {
            let err = ShardLog::parse(bad, "f").unwrap_err().to_string();
            assert!(err.contains(needle), "{bad:?}: {err}");
        }
    }

    #[test]
    fn noise_parses_a_rate_and_a_length() {
        assert_eq!(
            Noise::parse("2:50").unwrap(),
            Noise {
                rate_per_s: 2.0,
                length_ms: 50.0
            }
        );
        for bad in ["2", "x:50", "2:0", "-1:5", "2:1e300"] {
            assert!(Noise::parse(bad).is_err(), "{bad}");
        }
    }
}
