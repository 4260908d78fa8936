//! One syntax for each kind of value that several commands take: durations with their
//! unit (and the older unit-named spellings, kept as hidden aliases), percentiles, and
//! lists of degrees. Each is a clap value parser; `bounds` re-exports them.

use crate::bounds::clip;

/// A duration with its unit, as humantime reads it (`10s`, `250ms`, `2m`), above zero and
/// at most a day: the value parser of every duration flag.
pub(crate) fn duration(text: &str) -> Result<std::time::Duration, String> {
    let d = humantime::parse_duration(text.trim()).map_err(|e| {
        format!(
            "expected a duration with its unit, such as 10s, 250ms or 2m; found `{}` ({e})",
            clip(text)
        )
    })?;
    if d.is_zero() || d > std::time::Duration::from_secs(86_400) {
        return Err(format!(
            "expected a duration above zero and at most a day (24h); found `{}`",
            clip(text)
        ));
    }
    Ok(d)
}

/// A duration with its unit, zero allowed (`0s`), at most a day.
pub(crate) fn duration0(text: &str) -> Result<std::time::Duration, String> {
    match humantime::parse_duration(text.trim()) {
        Ok(d) if d.is_zero() => Ok(d),
        _ => duration(text),
    }
}

/// An older spelling's bare seconds (`--drain-s 10`), as a duration: above zero (or zero
/// where `zero` allows it), at most a day.
fn seconds(text: &str, zero: bool) -> Result<std::time::Duration, String> {
    match text.trim().parse::<f64>() {
        Ok(s) if s.is_finite() && (s > 0.0 || (zero && s == 0.0)) && s <= 86_400.0 => {
            Ok(std::time::Duration::from_secs_f64(s))
        }
        _ => Err(format!(
            "expected seconds up to a day (86400); found `{}`",
            clip(text)
        )),
    }
}

/// The value parser of an older `--NAME-s SECONDS` spelling, above zero.
pub(crate) fn old_seconds(text: &str) -> Result<std::time::Duration, String> {
    seconds(text, false)
}

/// The value parser of an older `--NAME-s SECONDS` spelling, zero allowed.
pub(crate) fn old_seconds0(text: &str) -> Result<std::time::Duration, String> {
    seconds(text, true)
}

/// The value parser of an older `--NAME-ms MS` spelling, above zero, at most an hour.
pub(crate) fn old_ms(text: &str) -> Result<std::time::Duration, String> {
    match text.trim().parse::<f64>() {
        Ok(ms) if ms.is_finite() && ms > 0.0 && ms <= 3_600_000.0 => {
            Ok(std::time::Duration::from_secs_f64(ms / 1000.0))
        }
        _ => Err(format!(
            "expected milliseconds up to an hour; found `{}`",
            clip(text)
        )),
    }
}

/// The duration a flag gives in its new spelling or its older one, else `default`.
pub(crate) fn either(
    new: Option<std::time::Duration>,
    old: Option<std::time::Duration>,
    default: std::time::Duration,
) -> std::time::Duration {
    new.or(old).unwrap_or(default)
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
