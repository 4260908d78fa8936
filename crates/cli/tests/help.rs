//! The binary's help, completions and man page as a shell and `man` see them.

use std::process::Command;

fn tailor(args: &[&str], columns: &str) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_tailor"))
        .args(args)
        .env("COLUMNS", columns)
        .output()
        .expect("the tailor binary runs")
}

#[test]
fn help_wraps_at_the_terminal_width_and_lists_the_demo_first() {
    for args in [
        &["--help"][..],
        &["simulate", "--help"],
        &["load", "--help"],
        &["green", "simulate", "--help"],
    ] {
        let out = tailor(args, "80");
        assert!(out.status.success());
        let text = String::from_utf8(out.stdout).unwrap();
        for line in text.lines() {
            assert!(line.chars().count() <= 80, "{args:?}: {line}");
        }
    }
    let top = String::from_utf8(tailor(&["--help"], "100").stdout).unwrap();
    let first = top.lines().find(|l| l.starts_with("  ")).unwrap();
    assert!(first.trim_start().starts_with("demo"), "{top}");
}

#[test]
fn bash_loads_the_completions_and_man_renders_the_page() {
    let dir = std::env::temp_dir().join(format!("tailor-help-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let script = dir.join("tailor.bash");
    let out = tailor(&["completions", "bash"], "80");
    assert!(out.status.success());
    std::fs::write(&script, &out.stdout).unwrap();
    let check = Command::new("bash")
        .arg("-c")
        .arg(format!(
            "source '{}' && complete -p tailor",
            script.display()
        ))
        .output()
        .expect("bash runs");
    let said = String::from_utf8_lossy(&check.stdout);
    assert!(check.status.success() && said.contains("_tailor"), "{said}");
    let page = dir.join("tailor.1");
    let out = tailor(&["man"], "80");
    assert!(out.status.success());
    std::fs::write(&page, &out.stdout).unwrap();
    match Command::new("man")
        .arg("-l")
        .arg(&page)
        .env("MANWIDTH", "80")
        .output()
    {
        Ok(man) => {
            let text = String::from_utf8_lossy(&man.stdout);
            assert!(man.status.success() && text.contains("SYNOPSIS"), "{text}");
        }
        // No man on this machine: the page must at least be roff with a title.
        Err(_) => assert!(String::from_utf8_lossy(&out.stdout).contains(".TH")),
    }
    let pages = dir.join("pages");
    assert!(tailor(&["man", "--out-dir", pages.to_str().unwrap()], "80")
        .status
        .success());
    for page in ["tailor.1", "tailor-load.1", "tailor-green-simulate.1"] {
        assert!(pages.join(page).exists(), "{page}");
    }
    for shell in ["zsh", "fish", "powershell", "elvish"] {
        assert!(
            tailor(&["completions", shell], "80").status.success(),
            "{shell}"
        );
    }
    std::fs::remove_dir_all(&dir).ok();
}

/// One simulation, spelled `older` or `today`, its JSON summary.
fn simulated(spelling: &[&str]) -> String {
    let mut args = vec![
        "simulate",
        "--cores",
        "2",
        "--policy",
        "steal-first",
        "--demand",
        "lognormal:8:8",
        "--rps",
        "100",
        "--requests",
        "400",
    ];
    args.extend(spelling);
    let out = tailor(&args, "100");
    let err = String::from_utf8_lossy(&out.stderr).into_owned();
    assert!(out.status.success(), "{args:?}: {err}");
    String::from_utf8(out.stdout).unwrap()
}

#[test]
fn older_unit_named_spellings_run_as_todays() {
    let today = simulated(&[
        "--target",
        "20ms",
        "--unit-time",
        "500us",
        "--wake",
        "0.1ms",
        "--spin",
        "0.02ms",
    ]);
    let older = simulated(&[
        "--target-ms",
        "20",
        "--unit-ms=0.5",
        "--wake-ms",
        "0.1",
        "--spin-ms",
        "0.02",
    ]);
    assert_eq!(today, older);
    // The values reach the run: another grain and target give another summary.
    let other = simulated(&["--target", "5ms", "--unit-time", "1ms"]);
    assert_ne!(today, other);
    // Today's flags want the unit.
    let out = tailor(&["simulate", "--target", "20"], "100");
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        !out.status.success() && err.contains("--target 20") && err.contains("with its unit"),
        "{err}"
    );
}
