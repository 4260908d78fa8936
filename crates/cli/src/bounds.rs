//! Range checks for numeric flags: one rule per kind of quantity, the same in every
//! subcommand, with errors that name the flag and quote at most 80 characters of the
//! value.
//!
//! Each constant below is a clap value parser: `#[arg(long, value_parser = bounds::RPS)]`.
//! Limits are what a run of this tool can sensibly be asked for on one machine; values
//! past them are refused up front rather than hanging a run (a rate of 1e-9 requests/s)
//! or exhausting memory (a billion requests).

use anyhow::Context;
use clap::builder::TypedValueParser;
use clap::error::ErrorKind;

pub(crate) use tailor_core::MAX_REQUESTS;

pub(crate) use tailor_core::clip;

pub(crate) use crate::concepts::{
    degrees, duration, duration0, percent, Degrees, Times, QUANTUM, SHORT0, TIME, TIME0, TIMES,
};

/// An integer flag in `lo..=hi`.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Count {
    lo: usize,
    hi: usize,
    what: &'static str,
}

/// A real flag in (lo, hi] (or [lo, hi] when `closed`), finite.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Real {
    lo: f64,
    hi: f64,
    closed: bool,
    what: &'static str,
}

/// Requests in a run, a simulation or a load.
pub(crate) const REQUESTS: Count = Count::new(1, MAX_REQUESTS, "requests");
/// Requests left out at the start, or retries: zero allowed.
pub(crate) const COUNT0: Count = Count::new(0, MAX_REQUESTS, "a count");
/// Threads, workers, cores, degrees.
pub(crate) const THREADS: Count = Count::new(1, 4096, "threads");
/// Open connections.
pub(crate) const CONNECTIONS: Count = Count::new(1, 65_536, "connections");
/// Bytes of a request body.
pub(crate) const BODY_BYTES: Count = Count::new(1, 16 << 20, "bytes");
/// Seeds of a sweep, each a full run.
pub(crate) const SEEDS: Count = Count::new(1, 10_000, "seeds");
/// Index segments.
pub(crate) const SEGMENTS: Count = Count::new(1, 1024, "segments");
/// Shards of a fan-out.
pub(crate) const SHARDS: Count = Count::new(1, 10_000, "shards");
/// Replicas of each shard.
pub(crate) const REPLICAS: Count = Count::new(1, 100, "replicas");
/// Other counts: repetitions, rounds, bins, samples, loads, queries, segments.
pub(crate) const COUNT: Count = Count::new(1, 10_000_000, "a count");

/// Requests per second.
pub(crate) const RPS: Real = Real::open(0.0, 10_000_000.0, "requests per second");

/// The self-scheduling quantum when `--quantum` is not given.
pub(crate) const DEFAULT_QUANTUM_MS: f64 = 5.0;

/// The quantum a run uses: `given`, else the FM table's grid step (its intervals are
/// multiples of it, so a coarser quantum would reach them late), else
/// [`DEFAULT_QUANTUM_MS`].
pub(crate) fn quantum_ms(given: Option<f64>, tables: &tailor_core::Tables) -> f64 {
    given
        .or_else(|| tables.fm.as_ref().map(|t| t.step_ms))
        .unwrap_or(DEFAULT_QUANTUM_MS)
}
/// The spin loop's iterations per microsecond (a few hundred on today's cores).
pub(crate) const SPIN_RATE: Real = Real::open(0.0, 100_000.0, "iterations per microsecond");
/// A fraction in (0, 1]: a percentile, a utilization.
pub(crate) const FRACTION: Real = Real::open(0.0, 1.0, "a fraction");
/// A percent in (0, 100], read as a percent only (`1` is 1%, unlike a percentile).
pub(crate) const PERCENT: Real = Real::open(0.0, 100.0, "a percent");
/// A fraction in [0, 1].
pub(crate) const FRACTION0: Real = Real::closed(0.0, 1.0, "a fraction");
/// A positive quantity such as a target parallelism or a capacity.
pub(crate) const POSITIVE: Real = Real::open(0.0, 1e9, "a positive number");

impl Count {
    const fn new(lo: usize, hi: usize, what: &'static str) -> Count {
        Count { lo, hi, what }
    }
}

impl Real {
    const fn open(lo: f64, hi: f64, what: &'static str) -> Real {
        Real {
            lo,
            hi,
            closed: false,
            what,
        }
    }

    const fn closed(lo: f64, hi: f64, what: &'static str) -> Real {
        Real {
            lo,
            hi,
            closed: true,
            what,
        }
    }

    /// What the flag accepts, as the error states it.
    pub(crate) fn expected(&self) -> String {
        if self.closed {
            format!("{}: a number from {} to {}", self.what, self.lo, self.hi)
        } else {
            format!(
                "{}: a number above {} and at most {}",
                self.what, self.lo, self.hi
            )
        }
    }

    /// Whether `x` is in range.
    pub(crate) fn accepts(&self, x: f64) -> bool {
        x.is_finite() && x <= self.hi && (x > self.lo || (self.closed && x == self.lo))
    }
}

/// The error clap prints: the flag, the value (clipped) and what it accepts.
pub(crate) fn refuse(
    cmd: &clap::Command,
    arg: Option<&clap::Arg>,
    value: &str,
    expected: String,
) -> clap::Error {
    let flag = arg
        .and_then(|a| a.get_long())
        .map_or_else(|| "a value".to_string(), |l| format!("--{l}"));
    let mut error = clap::Error::raw(
        ErrorKind::ValueValidation,
        format!("{flag} {}: expected {expected}\n", clip(value)),
    );
    error = error.with_cmd(cmd);
    error
}

fn text(value: &std::ffi::OsStr) -> String {
    value.to_string_lossy().into_owned()
}

impl TypedValueParser for Count {
    type Value = usize;

    fn parse_ref(
        &self,
        cmd: &clap::Command,
        arg: Option<&clap::Arg>,
        value: &std::ffi::OsStr,
    ) -> Result<usize, clap::Error> {
        let value = text(value);
        match value.trim().replace('_', "").parse::<usize>() {
            Ok(n) if (self.lo..=self.hi).contains(&n) => Ok(n),
            _ => Err(refuse(
                cmd,
                arg,
                &value,
                format!("{}: an integer from {} to {}", self.what, self.lo, self.hi),
            )),
        }
    }
}

impl TypedValueParser for Real {
    type Value = f64;

    fn parse_ref(
        &self,
        cmd: &clap::Command,
        arg: Option<&clap::Arg>,
        value: &std::ffi::OsStr,
    ) -> Result<f64, clap::Error> {
        let value = text(value);
        match value.trim().parse::<f64>() {
            Ok(x) if self.accepts(x) => Ok(x),
            _ => Err(refuse(cmd, arg, &value, self.expected())),
        }
    }
}

/// Refuses a run of `requests` at `rps` that would last more than a day.
pub(crate) fn ensure_duration(requests: usize, rps: f64) -> anyhow::Result<()> {
    let seconds = requests as f64 / rps;
    anyhow::ensure!(
        seconds <= 86_400.0,
        "--requests {requests} at --rps {rps} would take {:.0} hours; a run may last at most a \
         day (raise --rps or lower --requests)",
        seconds / 3600.0
    );
    Ok(())
}

/// Parses `--rps`: R, or A:B:STEP (inclusive of B, within rounding).
pub(crate) fn parse_rps(text: &str) -> anyhow::Result<Vec<f64>> {
    let number = |t: &str| -> anyhow::Result<f64> {
        t.trim()
            .parse::<f64>()
            .ok()
            .filter(|&v| RPS.accepts(v))
            .with_context(|| format!("--rps {}: expected {}", clip(t), RPS.expected()))
    };
    let parts: Vec<&str> = text.split(':').collect();
    match parts.as_slice() {
        [r] => Ok(vec![number(r)?]),
        [a, b, step] => {
            let (a, b, step) = (number(a)?, number(b)?, number(step)?);
            anyhow::ensure!(a <= b, "--rps: the sweep's start {a} is above its end {b}");
            let n = ((b - a) / step + 1e-9).floor() as usize + 1;
            anyhow::ensure!(n <= 10_000, "--rps: {n} loads is too many for one sweep");
            Ok((0..n).map(|i| a + i as f64 * step).collect())
        }
        _ => anyhow::bail!("--rps: expected R or A:B:STEP, found {:?}", clip(text)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::{Arg, Command};

    fn cmd<P>(parser: P) -> Command
    where
        P: TypedValueParser + Send + Sync + 'static,
        P::Value: Clone + Send + Sync + 'static,
    {
        Command::new("t").arg(Arg::new("rps").long("rps").value_parser(parser))
    }

    #[test]
    fn values_in_range_pass_and_others_are_refused_naming_the_flag() {
        let ok = cmd(RPS)
            .try_get_matches_from(["t", "--rps", "250"])
            .unwrap();
        assert_eq!(ok.get_one::<f64>("rps"), Some(&250.0));
        for bad in ["0", "-1", "1e300", "nan", "inf", "abc"] {
            let e = cmd(RPS)
                .try_get_matches_from(["t", &format!("--rps={bad}")])
                .unwrap_err()
                .to_string();
            assert!(
                e.contains("--rps") && e.contains("requests per second"),
                "{e}"
            );
        }
        let n = cmd(REQUESTS)
            .try_get_matches_from(["t", "--rps", "1_000"])
            .unwrap();
        assert_eq!(n.get_one::<usize>("rps"), Some(&1000));
        for bad in ["0", "1000000000", "-3", "2.5"] {
            assert!(
                cmd(REQUESTS)
                    .try_get_matches_from(["t", &format!("--rps={bad}")])
                    .is_err(),
                "{bad}"
            );
        }
        assert!(cmd(FRACTION0)
            .try_get_matches_from(["t", "--rps", "0"])
            .is_ok());
        assert!(cmd(FRACTION)
            .try_get_matches_from(["t", "--rps", "0"])
            .is_err());
        // Durations: the unit is required, and the range is checked in ms.
        let ms = |parser: crate::concepts::Time, v: &str| {
            cmd(parser)
                .try_get_matches_from(["t", "--rps", v])
                .map(|m| *m.get_one::<f64>("rps").unwrap())
                .map_err(|e| e.to_string())
        };
        assert_eq!(ms(TIME, "250us"), Ok(0.25));
        assert_eq!(ms(TIME0, "0s"), Ok(0.0));
        for bad in ["5", "0ms", "2h", "fast"] {
            let e = ms(TIME, bad).unwrap_err();
            assert!(e.contains("--rps") && e.contains("with its unit"), "{e}");
        }
    }

    #[test]
    fn the_quantum_defaults_to_the_fm_tables_step() {
        let mut table =
            tailor_core::IntervalTable::from_schedules(2, vec![(vec![0.0, 0.5], false)]);
        table.step_ms = 0.25;
        let with_fm = tailor_core::Tables {
            fm: Some(std::sync::Arc::new(table)),
            ..Default::default()
        };
        assert_eq!(quantum_ms(None, &with_fm), 0.25);
        assert_eq!(quantum_ms(Some(2.0), &with_fm), 2.0, "given wins");
        let none = tailor_core::Tables::default();
        assert_eq!(quantum_ms(None, &none), DEFAULT_QUANTUM_MS);
    }

    #[test]
    fn long_values_are_quoted_clipped() {
        let long = "9".repeat(100_000);
        let e = cmd(RPS)
            .try_get_matches_from(["t", "--rps", &long])
            .unwrap_err()
            .to_string();
        assert!(e.len() < 400, "{} bytes", e.len());
        assert!(e.contains("more bytes"), "{e}");
        assert_eq!(clip("short"), "short");
    }

    #[test]
    fn runs_longer_than_a_day_are_refused() {
        assert!(ensure_duration(1000, 1e-9).is_err());
        assert!(ensure_duration(1000, 100.0).is_ok());
    }
}
