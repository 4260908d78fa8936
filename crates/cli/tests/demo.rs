//! `tailor demo` end to end on a small generated corpus: the JSON contract of
//! shared/spec/cli.md (live cells with intervals, projected runs, the verdict), the kept
//! profile's companions, and the chart.

mod common;

use std::path::PathBuf;
use std::process::Command;

fn scratch(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("tailor-demo-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// A corpus of `docs` short documents over a small vocabulary, one per line.
fn corpus(dir: &std::path::Path, docs: usize) -> PathBuf {
    let words = [
        "horse", "river", "stone", "light", "music", "garden", "winter", "paper", "silver",
        "forest", "ocean", "market", "letter", "candle", "bridge", "harbor",
    ];
    let mut text = String::new();
    for i in 0..docs {
        let line: Vec<&str> = (0..12)
            .map(|k| words[(i * 7 + k * k + i / 3) % words.len()])
            .collect();
        text.push_str(&line.join(" "));
        text.push('\n');
    }
    let path = dir.join("corpus.txt");
    std::fs::write(&path, text).unwrap();
    path
}

#[test]
fn the_demo_prints_cells_with_intervals_projections_and_a_verdict() {
    let dir = scratch("json");
    let corpus = corpus(&dir, 3000);
    let loads = ["0.3", "0.6"];
    let out = Command::new(env!("CARGO_BIN_EXE_tailor"))
        .args(["demo", "--format", "json", "--corpus"])
        .arg(&corpus)
        .arg("--data-dir")
        .arg(dir.join("data"))
        .arg("--out-dir")
        .arg(dir.join("chart"))
        .args([
            "--segments",
            "4",
            "--query-count",
            "60",
            "--profiled",
            "30",
            "--repeat",
            "1",
            "--rounds",
            "2",
            "--seconds",
            "0.3",
            "--loads",
            &loads.join(","),
            "--projected-requests",
            "400",
            "--accept-noisy-profile",
        ])
        .output()
        .expect("tailor runs");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    let lines: Vec<serde_json::Value> = String::from_utf8(out.stdout)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).expect("every line is JSON"))
        .collect();
    let live: Vec<_> = lines.iter().filter(|v| v["engine"] == "live").collect();
    let sim: Vec<_> = lines.iter().filter(|v| v["engine"] == "sim").collect();
    // Five policies at two loads, pooled over the rounds.
    assert_eq!(live.len(), 10);
    for cell in &live {
        let ci = cell["p99_ci_ms"].as_array().expect("p99_ci_ms");
        let (low, high) = (ci[0].as_f64().unwrap(), ci[1].as_f64().unwrap());
        let p99 = cell["latency_ms"]["p99"].as_f64().unwrap();
        assert!(low <= high && low > 0.0, "{cell}");
        // The point estimate is the histogram's (3 significant digits), the interval exact.
        assert!(p99 >= low * 0.99 && p99 <= high * 1.01, "{cell}");
        assert_eq!(cell["rounds"], 2);
        assert!(cell["rps"].as_f64().unwrap() > 0.0);
        // The simulator's p99 at the same cores and rate, for the model check; null where
        // the model, fed the service times this (possibly busy) machine measured, is
        // overloaded at that rate.
        let sim = &cell["sim_p99_ms"];
        assert!(sim.is_null() || sim.as_f64().unwrap() > 0.0, "{cell}");
    }
    assert!(
        live.iter().any(|c| c["sim_p99_ms"].as_f64().is_some()),
        "no live cell has the simulator's p99 beside it"
    );
    // The projection: every policy at every load, at 16 and 64 cores.
    for cores in [16, 64] {
        let at: Vec<_> = sim.iter().filter(|v| v["cores"] == cores).collect();
        assert!(at.len() >= 2 * 5, "{cores} cores: {} runs", at.len());
        for policy in ["fm", "executor", "seq"] {
            assert!(
                at.iter().any(|v| v["policy"] == policy),
                "{cores} cores: no {policy}"
            );
        }
    }
    let verdict = lines.last().unwrap();
    assert_eq!(verdict["kind"], "verdict");
    let by_load = verdict["loads"].as_array().unwrap();
    assert_eq!(by_load.len(), loads.len());
    for v in by_load {
        let ratio = v["fm_vs_best"].as_f64().unwrap();
        let ci = v["ci"].as_array().unwrap();
        let (low, high) = (ci[0].as_f64().unwrap(), ci[1].as_f64().unwrap());
        assert!(low <= high && ratio > 0.0, "{v}");
        let word = v["verdict"].as_str().unwrap();
        let expected = if high < 1.0 {
            "better"
        } else if low > 1.0 {
            "worse"
        } else {
            "same"
        };
        assert_eq!(word, expected, "{v}");
    }
    // The kept profile has its conditions and unit times beside it.
    let kept: Vec<String> = walk(&dir.join("data"));
    assert!(
        kept.iter().any(|p| p.ends_with(".conditions.json")),
        "{kept:?}"
    );
    assert!(kept.iter().any(|p| p.ends_with(".units.csv")), "{kept:?}");
    assert!(stderr.contains("median error"), "{stderr}");
    let png = dir.join("chart").join("latency.png");
    if std::path::Path::new("/usr/share/fonts/truetype/dejavu/DejaVuSans.ttf").exists() {
        assert!(std::fs::metadata(&png)
            .map(|m| m.len() > 1000)
            .unwrap_or(false));
    }
    kept_plans_serve_as_printed(&dir.join("chart"), &stderr);
    let _ = std::fs::remove_dir_all(&dir);
}

/// The demo's profile and tables are in --out-dir, and the `tailor serve` command it
/// printed serves the search with FM and that table, at the table's step, under
/// the `tailor load` command it printed.
fn kept_plans_serve_as_printed(out_dir: &std::path::Path, stderr: &str) {
    let table: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(out_dir.join("fm-table.json")).unwrap())
            .unwrap();
    assert_eq!(table["kind"], "fm-interval-table");
    assert_eq!(table["step_ms"], 0.25);
    let adaptive = std::fs::read_to_string(out_dir.join("adaptive-table.json")).unwrap();
    assert!(adaptive.contains("rows"), "{adaptive}");
    let profile = std::fs::read_to_string(out_dir.join("profile.csv")).unwrap();
    assert!(profile.starts_with("request,t1_ms,t2_ms"), "{profile}");
    assert_eq!(
        profile.lines().count(),
        31,
        "30 profiled queries and the header"
    );

    let command = |after: &str| -> Vec<String> {
        let mut lines = stderr.lines().skip_while(|l| !l.starts_with(after));
        lines
            .next()
            .unwrap_or_else(|| panic!("no {after:?} in {stderr}"));
        let line = lines.next().expect("the command follows");
        line.split_whitespace().map(String::from).collect()
    };
    let serve = command("serve the search with FM");
    assert_eq!(serve[0], env!("CARGO_BIN_EXE_tailor"));
    let table_path = out_dir.join("fm-table.json");
    assert!(
        serve
            .windows(2)
            .any(|w| w[0] == "--table" && w[1] == table_path.to_str().unwrap()),
        "{serve:?}"
    );
    let mut server = Command::new(&serve[0])
        .args(&serve[1..2])
        .args(["--listen", "127.0.0.1:0"])
        .args(&serve[2..])
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let common::Listening { addr, seen, .. } = common::listening(&mut server);
    assert!(
        seen.iter()
            .any(|l| l.contains("self-scheduling quantum 0.25 ms")),
        "{seen:?}"
    );
    assert!(seen.iter().any(|l| l.contains("with fm on")), "{seen:?}");

    let mut load = command("and drive it open loop");
    let set = |load: &mut Vec<String>, flag: &str, value: String| {
        let i = load
            .iter()
            .position(|w| w == flag)
            .unwrap_or_else(|| panic!("no {flag}"));
        load[i + 1] = value;
    };
    set(&mut load, "--url", format!("http://{addr}"));
    set(&mut load, "-R", "40".into());
    set(&mut load, "-n", "40".into());
    let out = Command::new(&load[0]).args(&load[1..]).output().unwrap();
    let _ = server.kill();
    let _ = server.wait();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    // The summary for people: every request answered.
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(
        text.starts_with("40 requests to") && text.contains("answers    40 2xx"),
        "{text}"
    );
}

fn walk(dir: &std::path::Path) -> Vec<String> {
    let mut found = Vec::new();
    if let Ok(entries) = std::fs::read_dir(dir) {
        for e in entries.flatten() {
            let p = e.path();
            if p.is_dir() {
                found.extend(walk(&p));
            } else {
                found.push(p.display().to_string());
            }
        }
    }
    found
}
