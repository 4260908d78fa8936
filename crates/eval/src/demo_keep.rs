//! What `tailor demo` keeps: its profile and tables, and the commands that serve them.
//!
//! The profile and tables go into --out-dir; the `tailor serve` and `tailor load`
//! commands printed at the end put FM's table into a service.

use std::path::{Path, PathBuf};

use tailor_core::{DemandProfile, Tables};

use crate::error::EvalError;

/// The files the demo wrote.
pub(crate) struct Kept {
    pub(crate) profile: PathBuf,
    pub(crate) fm: PathBuf,
    pub(crate) adaptive: PathBuf,
}

/// Writes `profile.csv`, `fm-table.json` and `adaptive-table.json` into `dir`.
pub(crate) fn keep_plans(
    dir: &Path,
    profile: &DemandProfile,
    tables: &Tables,
) -> Result<Kept, EvalError> {
    std::fs::create_dir_all(dir).map_err(|e| EvalError::file("create", dir, e))?;
    let kept = Kept {
        profile: dir.join("profile.csv"),
        fm: dir.join("fm-table.json"),
        adaptive: dir.join("adaptive-table.json"),
    };
    let write = |path: &Path, f: &dyn Fn(std::fs::File) -> std::io::Result<()>| {
        std::fs::File::create(path)
            .and_then(f)
            .map_err(|e| EvalError::file("write", path, e))
    };
    write(&kept.profile, &|f| profile.write(f))?;
    if let Some(fm) = &tables.fm {
        write(&kept.fm, &|f| fm.write(f))?;
    }
    if let Some(adaptive) = &tables.adaptive {
        write(&kept.adaptive, &|f| adaptive.write(f))?;
    }
    Ok(kept)
}

/// The `tailor serve` command that serves the demo's search with FM and its table (the
/// quantum is then the table's step), as one shell line.
pub(crate) fn serve_command(kept: &Kept, cores: usize, search_flags: &[String]) -> String {
    let mut words = vec![
        tailor_exe(),
        "serve".into(),
        "--workload".into(),
        "search".into(),
        "--policy".into(),
        "fm".into(),
        "--table".into(),
        quoted(&kept.fm.display().to_string()),
        "--cores".into(),
        cores.to_string(),
    ];
    words.extend(search_flags.iter().map(|w| quoted(w)));
    words.join(" ")
}

/// The `tailor load` command that drives it open loop with the demo's queries.
pub(crate) fn load_command(queries: &Path, rps: f64, seconds: f64) -> String {
    [
        tailor_exe(),
        "load".into(),
        "--url".into(),
        "http://127.0.0.1:8080".into(),
        "--queries".into(),
        quoted(&queries.display().to_string()),
        "-R".into(),
        format!("{rps:.0}"),
        "-n".into(),
        format!("{:.0}", (rps * seconds).max(200.0)),
    ]
    .join(" ")
}

/// This binary's path, so that the printed commands run the same build.
fn tailor_exe() -> String {
    std::env::current_exe()
        .map(|p| quoted(&p.display().to_string()))
        .unwrap_or_else(|_| "tailor".into())
}

/// A word for a POSIX shell: as it is when safe, else in single quotes.
fn quoted(word: &str) -> String {
    let safe = !word.is_empty()
        && word
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"-_./:=,@%+".contains(&b));
    if safe {
        word.to_string()
    } else {
        format!("'{}'", word.replace('\'', r"'\''"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn words_with_spaces_or_quotes_are_quoted_for_the_shell() {
        assert_eq!(quoted("/tmp/d/fm-table.json"), "/tmp/d/fm-table.json");
        assert_eq!(quoted("my dir/x"), "'my dir/x'");
        assert_eq!(quoted("it's"), r"'it'\''s'");
        assert_eq!(quoted(""), "''");
    }
}
