//! Fuzzing of `GET /search`'s parameters, driven by proptest: the query string's parsing
//! and checks (`search_params`), then the cost bound and tantivy's query parser on a
//! small index. Each must answer `Ok` or an error, never panic. `TAILOR_FUZZ_CASES` sets
//! the cases (2,000 by default; `scripts/fuzz.sh` runs a million).

use std::sync::{Arc, OnceLock};

use proptest::prelude::*;
use proptest::test_runner::Config;

use tailor_server::search_params;
use tailor_workloads::search::{generated_corpus, SearchIndex};

fn cases() -> u32 {
    std::env::var("TAILOR_FUZZ_CASES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(2_000)
}

fn index() -> &'static Arc<SearchIndex> {
    static INDEX: OnceLock<(tempfile::TempDir, Arc<SearchIndex>)> = OnceLock::new();
    &INDEX
        .get_or_init(|| {
            let dir = tempfile::tempdir().unwrap();
            let (index, _) = SearchIndex::open_or_build(
                dir.path(),
                "generated",
                2,
                || Ok(generated_corpus(100, 3)),
                &mut |_, _| {},
            )
            .unwrap();
            (dir, Arc::new(index))
        })
        .1
}

/// Query strings: `q=` with text built from the query language's pieces, percent
/// escapes and other parameters, or arbitrary text.
fn query_string() -> impl Strategy<Value = String> {
    let piece = prop_oneof![
        Just("horse".to_string()),
        Just("body:/.*a.*/".to_string()),
        Just("title:".to_string()),
        Just("\"a b\"~2".to_string()),
        Just("gall*".to_string()),
        Just("\"gall\"*".to_string()),
        Just("(".to_string()),
        Just(")".to_string()),
        Just("+".to_string()),
        Just("-".to_string()),
        Just("AND".to_string()),
        Just("OR".to_string()),
        Just("^2".to_string()),
        Just("%".to_string()),
        Just("%2F".to_string()),
        Just("%ZZ".to_string()),
        Just("[a TO z]".to_string()),
        Just("IN [a b]".to_string()),
        "[ -~]{0,6}",
    ];
    let extra = prop_oneof![
        Just(String::new()),
        (0u64..3000).prop_map(|k| format!("&k={k}")),
        "[ -~]{0,4}".prop_map(|f| format!("&fuzzy={f}")),
        Just("&q=".to_string()),
    ];
    prop_oneof![
        (proptest::collection::vec(piece, 0..12), extra)
            .prop_map(|(p, e)| format!("q={}{e}", p.join("+"))),
        any::<String>(),
    ]
}

proptest! {
    #![proptest_config(Config { cases: cases(), failure_persistence: None, ..Config::default() })]

    #[test]
    fn search_parameters(query in query_string()) {
        if let Ok(p) = search_params(Some(&query)) {
            let _ = index().parse_query(&p.text, p.fuzzy);
        }
    }
}
