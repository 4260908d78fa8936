//! `tailor vectors fm`: the shared cases other implementations of FM replay.

mod common;

use common::{scratch, stderr, tailor};

fn vectors(seed: &str, cases: &str, out: &std::path::Path) -> Vec<serde_json::Value> {
    let result = tailor(&[
        "vectors",
        "fm",
        "--cases",
        cases,
        "--seed",
        seed,
        "--out",
        out.to_str().unwrap(),
    ]);
    assert!(result.status.success(), "{}", stderr(&result));
    std::fs::read_to_string(out)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

/// A header with the tables, then the cases; the same seed writes the same file; the
/// decisions are the policy's (spot-checked here against the table itself).
#[test]
fn fm_vectors_are_seeded_and_consistent_with_their_tables() {
    let dir = scratch("vectors");
    let lines = vectors("7", "2000", &dir.join("a.jsonl"));
    assert_eq!(lines.len(), 2001);
    assert_eq!(lines[0]["kind"], "tailor-fm-vectors");
    let tables = lines[0]["tables"].as_array().unwrap();
    let again = vectors("7", "2000", &dir.join("b.jsonl"));
    assert_eq!(lines, again);
    let (mut delays, mut exits, mut guarded) = (0, 0, 0);
    for case in &lines[1..] {
        let t = &tables[case["table"].as_u64().unwrap() as usize];
        let rows = t["rows"].as_array().unwrap();
        let load = case["load"].as_u64().unwrap() as usize;
        let row = &rows[load.clamp(1, rows.len()) - 1];
        let v: Vec<f64> = row["intervals_ms"]
            .as_array()
            .unwrap()
            .iter()
            .map(|x| x.as_f64().unwrap())
            .collect();
        let d = &case["decision"];
        let degree = d["degree"].as_u64().unwrap() as usize;
        assert!((1..=v.len()).contains(&degree), "{case}");
        match d["admission"].as_str().unwrap() {
            "on_exit" => exits += 1,
            "delay" => {
                delays += 1;
                assert_eq!(d["delay_ms"].as_f64().unwrap(), v[0], "{case}");
            }
            other => assert_eq!(other, "now", "{case}"),
        }
        if case["waiting"].as_u64().unwrap() > 0 {
            assert_eq!(d["helpers"], 0, "{case}");
            assert_eq!(d["start_threads"], 1, "{case}");
            guarded += 1;
        }
        assert!(d["helpers"].as_u64().unwrap() <= case["free_cores"].as_u64().unwrap());
    }
    assert!(
        delays > 0 && exits > 0 && guarded > 0,
        "every kind of case drawn"
    );
}
