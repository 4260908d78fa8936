//! One syntax for each kind of value that several commands take: durations with their
//! unit, percentiles, and lists of degrees. Each is a clap value parser; `bounds`
//! re-exports them. The older unit-named spellings (`--target-ms 5`) are rewritten to
//! these before parsing, in `spellings`.

use std::time::Duration;

use clap::builder::TypedValueParser;

use crate::bounds::{clip, refuse};

/// What every duration flag's error says it takes.
const WITH_UNIT: &str = "a duration with its unit, such as 250us, 5ms, 1.5s or 2m";

/// Reads a duration with its unit: a decimal and one unit (`0.25ms`, `250us`, `1.5s`,
/// `2h`; `µs` for `us` too), or humantime's compound forms (`1m 30s`). A bare number has
/// no unit and is refused.
pub(crate) fn parse_time(text: &str) -> Result<Duration, String> {
    parse_ms(text).map(|ms| Duration::from_secs_f64(ms / 1000.0))
}

/// [`parse_time`] in milliseconds, read straight from the decimal (`33.3ms` is 33.3, not
/// the nearest whole nanosecond), so that a value reaches the summaries as it was given.
pub(crate) fn parse_ms(text: &str) -> Result<f64, String> {
    let text = text.trim();
    let split = text
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(text.len());
    let (number, unit) = text.split_at(split);
    let ms_per = match unit.trim() {
        "ns" => Some(1e-6),
        "us" | "µs" => Some(1e-3),
        "ms" => Some(1.0),
        "s" => Some(1e3),
        "m" | "min" => Some(6e4),
        "h" => Some(3.6e6),
        _ => None,
    };
    if let (Some(per), Ok(x)) = (ms_per, number.parse::<f64>()) {
        let ms = x * per;
        if ms.is_finite() && ms <= 1e12 {
            return Ok(ms);
        }
    }
    humantime::parse_duration(text)
        .map(|d| d.as_secs_f64() * 1000.0)
        .map_err(|_| format!("expected {WITH_UNIT}"))
}

/// A duration with its unit, above zero (or zero when `zero`) and at most `max`, named
/// `max_text` in the error.
fn within(text: &str, zero: bool, max: Duration, max_text: &str) -> Result<Duration, String> {
    let found = || format!("found `{}`", clip(text));
    let d = parse_time(text).map_err(|e| format!("{e}; {}", found()))?;
    if (d.is_zero() && !zero) || d > max {
        let lo = if zero { "from zero" } else { "above zero" };
        return Err(format!(
            "expected a duration {lo} and at most {max_text}; {}",
            found()
        ));
    }
    Ok(d)
}

const DAY: Duration = Duration::from_secs(86_400);
const TEN_YEARS: Duration = Duration::from_secs(10 * 365 * 86_400);

/// A duration with its unit, above zero and at most a day: the value parser of the
/// duration flags that want a `Duration` (timeouts, periods).
pub(crate) fn duration(text: &str) -> Result<Duration, String> {
    within(text, false, DAY, "a day (24h)")
}

/// A duration with its unit, zero allowed (`0s`), at most a day.
pub(crate) fn duration0(text: &str) -> Result<Duration, String> {
    within(text, true, DAY, "a day (24h)")
}

/// A span of a trace (`48h`, `720h`), above zero, at most ten years.
pub(crate) fn trace_span(text: &str) -> Result<Duration, String> {
    within(text, false, TEN_YEARS, "ten years")
}

/// An offset into a trace, zero allowed, at most ten years.
pub(crate) fn trace_offset(text: &str) -> Result<Duration, String> {
    within(text, true, TEN_YEARS, "ten years")
}

/// A duration flag read into milliseconds, in a range: `#[arg(long, value_parser =
/// bounds::TIME)]` gives an `f64` of ms.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Time {
    lo_ms: f64,
    hi_ms: f64,
    closed: bool,
}

/// A time above zero, at most an hour.
pub(crate) const TIME: Time = Time::new(0.0, 3_600_000.0, false);
/// A time from zero to an hour.
pub(crate) const TIME0: Time = Time::new(0.0, 3_600_000.0, true);
/// A short time, from zero to a second: a speed change's cost, a rate limit.
pub(crate) const SHORT0: Time = Time::new(0.0, 1000.0, true);
/// The self-scheduling quantum: from a microsecond to an hour.
pub(crate) const QUANTUM: Time = Time::new(0.001, 3_600_000.0, true);

impl Time {
    const fn new(lo_ms: f64, hi_ms: f64, closed: bool) -> Time {
        Time {
            lo_ms,
            hi_ms,
            closed,
        }
    }

    fn accepts(&self, ms: f64) -> bool {
        ms <= self.hi_ms && (ms > self.lo_ms || (self.closed && ms == self.lo_ms))
    }

    /// What the flag takes, as its error says it.
    fn expected(&self) -> String {
        let show = |ms: f64| humantime::format_duration(Duration::from_secs_f64(ms / 1000.0));
        let lo = if self.closed { "from" } else { "above" };
        format!(
            "{WITH_UNIT}, {lo} {} and at most {}",
            show(self.lo_ms),
            show(self.hi_ms)
        )
    }

    /// Reads one value into ms.
    fn read(&self, text: &str) -> Option<f64> {
        let ms = parse_ms(text).ok()?;
        self.accepts(ms).then_some(ms)
    }
}

impl TypedValueParser for Time {
    type Value = f64;

    fn parse_ref(
        &self,
        cmd: &clap::Command,
        arg: Option<&clap::Arg>,
        value: &std::ffi::OsStr,
    ) -> Result<f64, clap::Error> {
        let value = value.to_string_lossy();
        self.read(&value)
            .ok_or_else(|| refuse(cmd, arg, &value, self.expected()))
    }
}

/// A comma-separated list of durations with their units, each in [`TIME`]'s range, in ms:
/// `#[arg(long, value_parser = bounds::TIMES)]` gives a [`Times`].
#[derive(Debug, Clone, Copy)]
pub(crate) struct TimeList(Time);

/// A list of times above zero, at most an hour each.
pub(crate) const TIMES: TimeList = TimeList(TIME);

/// A list of durations, in ms, in the order given.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Times(pub(crate) Vec<f64>);

impl TypedValueParser for TimeList {
    type Value = Times;

    fn parse_ref(
        &self,
        cmd: &clap::Command,
        arg: Option<&clap::Arg>,
        value: &std::ffi::OsStr,
    ) -> Result<Times, clap::Error> {
        let value = value.to_string_lossy();
        value
            .split(',')
            .map(|x| self.0.read(x))
            .collect::<Option<Vec<f64>>>()
            .map(Times)
            .ok_or_else(|| {
                let expected = format!("a comma-separated list, each {}", self.0.expected());
                refuse(cmd, arg, &value, expected)
            })
    }
}

/// A percentile, one syntax for every command: in percent (`99`, `99.9`), or as a
/// fraction (`0.99`: any value up to 1 is read as one). Returns percent, in (0, 100].
pub(crate) fn percent(text: &str) -> Result<f64, String> {
    let bad = || {
        format!(
            "expected a percentile in percent, such as 99 or 99.9 (or a fraction such as \
             0.99), above 0 and at most 100; found `{}`",
            clip(text)
        )
    };
    let x: f64 = text.trim().parse().map_err(|_| bad())?;
    let pct = if x <= 1.0 { 100.0 * x } else { x };
    if !(pct.is_finite() && pct > 0.0 && pct <= 100.0) {
        return Err(bad());
    }
    Ok(pct)
}

/// The highest degree any command takes.
pub(crate) const MAX_DEGREE: usize = 64;

/// A list of degrees, one syntax for every command's `--degrees`: `1..N` (every degree from
/// 1 to N), a bare `N` (the same), or a rising list `1,2,4,8` that starts at 1.
pub(crate) fn degrees(text: &str) -> Result<Degrees, String> {
    let bad = || {
        format!(
            "expected 1..N, N, or a rising list from 1 such as 1,2,4,8, with degrees up to \
             {MAX_DEGREE}; found `{}`",
            clip(text)
        )
    };
    let text = text.trim();
    let upto = |n: &str| -> Result<Vec<usize>, String> {
        match n.parse::<usize>() {
            Ok(n) if (1..=MAX_DEGREE).contains(&n) => Ok((1..=n).collect()),
            _ => Err(bad()),
        }
    };
    let list: Vec<usize> = if let Some(n) = text.strip_prefix("1..") {
        upto(n.trim_start_matches('='))?
    } else if text.contains(',') {
        text.split(',')
            .map(|d| d.trim().parse::<usize>().map_err(|_| bad()))
            .collect::<Result<_, _>>()?
    } else {
        upto(text)?
    };
    let rising = list.windows(2).all(|w| w[0] < w[1]);
    if list.first() != Some(&1) || !rising || list.last().is_some_and(|&d| d > MAX_DEGREE) {
        return Err(bad());
    }
    Ok(Degrees(list))
}

/// `--degrees`' value: rising degrees from 1.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Degrees(pub(crate) Vec<usize>);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn degrees_read_ranges_counts_and_lists_alike() {
        assert_eq!(degrees("1..4").unwrap().0, vec![1, 2, 3, 4]);
        assert_eq!(degrees("4").unwrap().0, vec![1, 2, 3, 4]);
        assert_eq!(degrees("1,2,4,8").unwrap().0, vec![1, 2, 4, 8]);
        for bad in [
            "0",
            "2,4",
            "1,4,2",
            "1..65",
            "a",
            "1..",
            "",
            "99999999999",
            "1..4000000000",
        ] {
            assert!(degrees(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn durations_read_decimals_units_and_compounds() {
        let ms = |t: &str| parse_time(t).map(|d| d.as_secs_f64() * 1000.0);
        assert_eq!(ms("0.25ms"), Ok(0.25));
        assert_eq!(ms("250us"), Ok(0.25));
        assert_eq!(ms("250µs"), Ok(0.25));
        assert_eq!(ms("1.5s"), Ok(1500.0));
        assert_eq!(ms(" 2m "), Ok(120_000.0));
        assert_eq!(ms("1m 30s"), Ok(90_000.0));
        assert_eq!(ms("48h"), Ok(172_800_000.0));
        for bad in [
            "5",
            "0.25",
            "ms",
            "5 parsecs",
            "",
            "-5ms",
            "1e3ms",
            "1..2ms",
        ] {
            assert!(parse_time(bad).is_err(), "{bad}");
        }
        assert!(TIME.read("0ms").is_none() && TIME0.read("0ms") == Some(0.0));
        assert!(TIME.read("2h").is_none() && TIME.read("1h") == Some(3_600_000.0));
        assert_eq!(SHORT0.read("20us"), Some(0.02));
        assert_eq!(
            TIME.read("33.3ms"),
            Some(33.3),
            "no detour through nanoseconds"
        );
        assert!(duration("0s").is_err() && duration0("0s").is_ok());
        assert!(duration("25h").is_err());
    }

    #[test]
    fn percentiles_read_percent_or_fraction_alike() {
        assert_eq!(percent("99").unwrap(), 99.0);
        assert_eq!(percent("99.9").unwrap(), 99.9);
        assert!((percent("0.99").unwrap() - 99.0).abs() < 1e-9);
        assert_eq!(percent("1").unwrap(), 100.0, "the largest, as a fraction");
        for bad in ["0", "100.5", "-5", "x", "NaN"] {
            assert!(percent(bad).is_err(), "{bad}");
        }
    }
}
