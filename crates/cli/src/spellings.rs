//! Older spellings of duration flags, with the unit in the name (`--target-ms 5`), kept
//! for one release: rewritten to today's (`--target 5ms`) before clap reads the arguments.

use std::ffi::OsString;

/// Each older flag, the flag that replaces it, and the unit its bare numbers were in.
pub(crate) const OLDER: &[(&str, &str, &str)] = &[
    // Latency targets and the self-scheduling quantum (run, simulate, serve, plan).
    ("target-ms", "target", "ms"),
    ("quantum-ms", "quantum", "ms"),
    // plan fm and plan eetl.
    ("step-ms", "step", "ms"),
    ("max-interval-ms", "max-interval", "ms"),
    ("latency-bound-ms", "latency-bound", "ms"),
    // Work-stealing simulation and calibration.
    ("unit-ms", "unit-time", "ms"),
    ("wake-ms", "wake", "ms"),
    ("spin-ms", "spin", "ms"),
    // DVFS.
    ("transition-us", "transition", "us"),
    ("rate-limit-us", "rate-limit", "us"),
    // Slow-core emulation.
    ("emulation-period-us", "emulation-period", "us"),
    ("emulation-loss-us", "emulation-loss", "us"),
    ("periods-us", "periods", "us"),
    ("lengths-ms", "lengths", "ms"),
    // serve's histogram buckets, drain and timeouts.
    ("latency-buckets-ms", "latency-buckets", "ms"),
    ("drain-s", "drain", "s"),
    ("request-timeout-s", "request-timeout", "s"),
    ("body-timeout-s", "body-timeout", "s"),
    ("header-timeout-s", "header-timeout", "s"),
    // fanout, simulate and load.
    ("timeout-ms", "timeout", "ms"),
    ("timeout-s", "timeout", "s"),
    ("hedge-period-s", "hedge-period", "s"),
    // demo's run length and green import's window.
    ("seconds", "duration", "s"),
    ("start-h", "start", "h"),
    ("hours", "span", "h"),
];

/// The arguments with every older spelling rewritten: `--target-ms 5` (or `=5`) becomes
/// `--target 5ms`, and each bare number of a list gets the unit (`--periods-us 100,250`
/// becomes `--periods 100us,250us`). A value that is not a bare number passes unchanged,
/// for the new flag's own error. Nothing after `--` is touched.
pub(crate) fn modernize(args: impl IntoIterator<Item = OsString>) -> Vec<OsString> {
    let mut out = Vec::new();
    let mut args = args.into_iter();
    while let Some(arg) = args.next() {
        let Some(text) = arg.to_str() else {
            out.push(arg);
            continue;
        };
        if text == "--" {
            out.push(arg);
            out.extend(args);
            break;
        }
        let Some(flag) = text.strip_prefix("--") else {
            out.push(arg);
            continue;
        };
        let (name, inline) = match flag.split_once('=') {
            Some((name, value)) => (name, Some(value.to_string())),
            None => (flag, None),
        };
        let Some(&(_, new, unit)) = OLDER.iter().find(|(old, _, _)| *old == name) else {
            out.push(arg);
            continue;
        };
        match inline {
            // `--old=VALUE` stays one argument, so that a value such as -3 is not read
            // as a flag.
            Some(value) => {
                let mut joined = OsString::from(format!("--{new}="));
                joined.push(with_unit(value.into(), unit));
                out.push(joined);
            }
            None => {
                out.push(format!("--{new}").into());
                match args.next() {
                    // A missing value: leave `--` for what follows it.
                    Some(value) if value == "--" => {
                        out.push(value);
                        out.extend(args);
                        break;
                    }
                    Some(value) => out.push(with_unit(value, unit)),
                    None => {}
                }
            }
        }
    }
    out
}

/// `value` with `unit` after each bare number of its comma-separated parts.
fn with_unit(value: OsString, unit: &str) -> OsString {
    let Some(text) = value.to_str() else {
        return value;
    };
    // The older flags took any number Rust reads (`1e3`, `+5`); written plainly (`1000`,
    // `5`) it takes the unit.
    let numbers: Option<Vec<f64>> = text
        .split(',')
        .map(|part| part.trim().parse::<f64>().ok().filter(|x| x.is_finite()))
        .collect();
    let Some(numbers) = numbers else {
        return value;
    };
    numbers
        .iter()
        .map(|x| format!("{x}{unit}"))
        .collect::<Vec<_>>()
        .join(",")
        .into()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rewrite(args: &[&str]) -> Vec<String> {
        modernize(args.iter().map(OsString::from))
            .into_iter()
            .map(|a| a.into_string().unwrap())
            .collect()
    }

    #[test]
    fn older_spellings_become_todays_with_the_unit() {
        assert_eq!(
            rewrite(&[
                "tailor",
                "simulate",
                "--target-ms",
                "50",
                "--quantum-ms=0.5"
            ]),
            ["tailor", "simulate", "--target", "50ms", "--quantum=0.5ms"]
        );
        assert_eq!(
            rewrite(&["tailor", "emulate", "--periods-us", "100, 250"]),
            ["tailor", "emulate", "--periods", "100us,250us"]
        );
        assert_eq!(
            rewrite(&["tailor", "serve", "--drain-s", "0"]),
            ["tailor", "serve", "--drain", "0s"]
        );
        // Any number the older flag read, written plainly.
        assert_eq!(
            rewrite(&[
                "tailor",
                "run",
                "--target-ms",
                "1e3",
                "--quantum-ms",
                "+0.5"
            ]),
            ["tailor", "run", "--target", "1000ms", "--quantum", "0.5ms"]
        );
        assert_eq!(
            rewrite(&["tailor", "run", "--wake-ms", "1e-5"]),
            ["tailor", "run", "--wake", "0.00001ms"]
        );
    }

    #[test]
    fn todays_spellings_values_and_what_follows_a_double_dash_pass_unchanged() {
        let same = [
            "tailor",
            "run",
            "--target",
            "50ms",
            "--table",
            "x.json",
            "--",
            "--target-ms",
            "5",
        ];
        assert_eq!(rewrite(&same), same);
        // A value that is not a bare number is left for the new flag to refuse or read.
        assert_eq!(
            rewrite(&["tailor", "run", "--target-ms", "5ms"]),
            ["tailor", "run", "--target", "5ms"]
        );
        assert_eq!(
            rewrite(&["tailor", "run", "--target-ms"]),
            ["tailor", "run", "--target"]
        );
    }
}
