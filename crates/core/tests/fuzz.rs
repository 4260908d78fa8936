//! Fuzzing of every parser of user input, driven by proptest: profile, distribution,
//! trace and shard-log CSV, the three table JSON formats, the controller plan, and the
//! DEMAND, SPEEDUP, ARRIVALS, POLICY, cores, reissue and noise strings. Each must answer `Ok` or an error, never panic,
//! and an error must not quote more than about 80 characters of the input.
//!
//! Inputs are both arbitrary text and text built from the formats' own pieces (headers,
//! numbers at the edges of f64, separators), so that the parsers' deeper checks are
//! reached, not only their first rejection. `TAILOR_FUZZ_CASES` sets the cases per
//! target (2,000 by default, what CI runs); `scripts/fuzz.sh` runs a million each and
//! docs/hardening.md records the runs.

use proptest::prelude::*;
use proptest::test_runner::Config;

use tailor_core::{
    parse_trace, AdaptiveTable, Arrivals, BinnedDistribution, CoreSet, Demand, DemandProfile,
    EetlPlan, IntervalTable, Noise, Policy, Reissue, ShardLog, Speedup, Tables, TailControlTable,
    QUOTE_CHARS,
};

fn cases() -> u32 {
    std::env::var("TAILOR_FUZZ_CASES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(2_000)
}

fn config() -> Config {
    Config {
        cases: cases(),
        failure_persistence: None,
        ..Config::default()
    }
}

/// Numbers and words at the edges of what the formats accept.
fn token() -> impl Strategy<Value = String> {
    prop_oneof![
        Just(String::new()),
        Just("0".to_string()),
        Just("-1".to_string()),
        Just("1e308".to_string()),
        Just("1e-320".to_string()),
        Just("nan".to_string()),
        Just("inf".to_string()),
        Just("-0".to_string()),
        Just("  3.5 ".to_string()),
        Just("\"q,uoted\"".to_string()),
        Just("9".repeat(400)),
        (0.0f64..1e6).prop_map(|x| x.to_string()),
        (0u64..1000).prop_map(|x| x.to_string()),
        "[a-z_]{1,8}",
        ".{0,12}",
    ]
}

/// CSV-like text: a header from the formats' column names, rows of tokens.
fn csv_like() -> impl Strategy<Value = String> {
    let column = prop_oneof![
        Just("request"),
        Just("t1_ms"),
        Just("t2_ms"),
        Just("t3_ms"),
        Just("t9_ms"),
        Just("work_ms"),
        Just("probability"),
        Just("time_ms"),
        Just("arrival_ms"),
        Just("shard"),
        Just("latency_ms"),
        Just("primary_ms"),
        Just("x"),
    ];
    (
        proptest::collection::vec(column, 0..5),
        proptest::collection::vec(proptest::collection::vec(token(), 0..5), 0..8),
        prop_oneof![Just(","), Just(";"), Just(", ")],
        prop_oneof![Just("\n"), Just("\r\n")],
    )
        .prop_map(|(header, rows, sep, nl)| {
            let mut text = header.join(sep);
            for row in rows {
                text.push_str(nl);
                text.push_str(&row.join(sep));
            }
            text
        })
}

/// Text that is either arbitrary or built from the format's pieces.
fn csv_input() -> impl Strategy<Value = String> {
    prop_oneof![csv_like(), any::<String>()]
}

/// JSON-like text: a valid table with one field mangled, or arbitrary JSON values.
fn json_input() -> impl Strategy<Value = String> {
    let leaf = prop_oneof![
        Just(serde_json::Value::Null),
        any::<bool>().prop_map(serde_json::Value::from),
        any::<f64>().prop_map(|x| serde_json::json!(x)),
        any::<i64>().prop_map(serde_json::Value::from),
        "[a-z_-]{0,12}".prop_map(serde_json::Value::from),
    ];
    let value = leaf.prop_recursive(4, 48, 6, |inner| {
        prop_oneof![
            proptest::collection::vec(inner.clone(), 0..6).prop_map(serde_json::Value::from),
            proptest::collection::btree_map(
                prop_oneof![
                    Just("kind".to_string()),
                    Just("rows".to_string()),
                    Just("load".to_string()),
                    Just("max_degree".to_string()),
                    Just("intervals_ms".to_string()),
                    Just("admit_on_exit".to_string()),
                    Just("degree".to_string()),
                    Just("active".to_string()),
                    Just("threshold_ms".to_string()),
                    "[a-z_]{1,8}",
                ],
                inner,
                0..6
            )
            .prop_map(|m| serde_json::Value::Object(m.into_iter().collect())),
        ]
    });
    prop_oneof![
        value.prop_map(|v| v.to_string()),
        any::<String>(),
        (any::<usize>(), any::<char>()).prop_map(|(at, c)| {
            let mut valid = VALID_TABLE.to_string();
            let at = valid
                .char_indices()
                .map(|(i, _)| i)
                .nth(at % VALID_TABLE.len())
                .unwrap_or(0);
            valid.insert(at, c);
            valid
        }),
    ]
}

const VALID_TABLE: &str = r#"{"kind": "fm-interval-table", "max_degree": 2, "target_parallelism": 2, "percentile": 0.99, "step_ms": 1, "max_interval_ms": 10, "rows": [{"load": 1, "intervals_ms": [0, 0], "admit_on_exit": false}]}"#;

/// A command-line spec: a known prefix with an arbitrary tail, or arbitrary text.
fn spec_input() -> impl Strategy<Value = String> {
    let prefix = prop_oneof![
        Just("exp:"),
        Just("const:"),
        Just("lognormal:"),
        Just("shape:"),
        Just("scale:"),
        Just("poisson"),
        Just("uniform"),
        Just("phases:"),
        Just("fix:"),
        Just("fm"),
        Just("seq"),
        Just("interval:"),
        Just("adaptive"),
        Just("tail-control"),
        Just("steal-first"),
        Just("table:"),
        Just("amdahl:"),
        Just("linear"),
        Just("eetl:"),
        Just("oblivious"),
        Just("single-d:"),
        Just("single-r:"),
        Just("hedge:"),
        Just("none"),
        Just(""),
    ];
    prop_oneof![
        (prefix, "[0-9.:,@e+x_a-z-]{0,24}").prop_map(|(p, t)| format!("{p}{t}")),
        any::<String>(),
    ]
}

/// An error's text quotes at most [`QUOTE_CHARS`] characters of an input line.
fn quotes_little(error: &str, input: &str) {
    let longest = input.lines().map(|l| l.chars().count()).max().unwrap_or(0);
    if longest > 4 * QUOTE_CHARS {
        assert!(
            error.chars().count() < 4 * QUOTE_CHARS + 200,
            "an error of {} characters for an input line of {longest}",
            error.chars().count()
        );
    }
}

fn check<T, E: std::fmt::Display>(result: Result<T, E>, input: &str) {
    if let Err(e) = result {
        quotes_little(&e.to_string(), input);
    }
}

proptest! {
    #![proptest_config(config())]

    #[test]
    fn profile_csv(text in csv_input()) {
        check(DemandProfile::parse(&text, "fuzz.csv"), &text);
    }

    #[test]
    fn distribution_csv(text in csv_input()) {
        check(BinnedDistribution::parse(&text, "fuzz.csv"), &text);
    }

    #[test]
    fn trace_csv(text in csv_input()) {
        check(parse_trace(&text, "fuzz.csv"), &text);
    }

    #[test]
    fn shard_log_csv(text in csv_input()) {
        check(ShardLog::parse(&text, "fuzz.csv"), &text);
    }

    #[test]
    fn table_json(text in json_input()) {
        check(IntervalTable::parse(&text, "fuzz.json"), &text);
        check(AdaptiveTable::parse(&text, "fuzz.json"), &text);
        check(TailControlTable::parse(&text, "fuzz.json"), &text);
        check(EetlPlan::parse(&text, "fuzz.json"), &text);
    }

    #[test]
    fn spec_strings(text in spec_input()) {
        // File forms are left out: they read the disk, which their own tests cover.
        prop_assume!(!text.contains("profile:") && !text.contains("distribution:") && !text.contains("trace:"));
        check(Demand::parse(&text), &text);
        check(Speedup::parse(&text), &text);
        check(Arrivals::parse(&text), &text);
        check(Policy::parse(&text, &Tables::default()), &text);
        check(CoreSet::parse(&text), &text);
        check(Reissue::parse(&text), &text);
        check(Noise::parse(&text), &text);
    }
}
