//! The demo's query profile: measured once and kept, re-measured when measured badly.
//!
//! The profile is kept with the conditions it was measured under and each query's unit
//! (segment) and merge times, and measured again when those conditions were bad.

use std::path::{Path, PathBuf};

use tailor_bench::{measure_profile_in_detail, ProfileConfig, SearchSource, UnitTimes};
use tailor_core::{DemandProfile, ProfileConditions};
use tailor_workloads::search::PreparedSearch;

use crate::error::{chain, EvalError};
use crate::Bars;

/// A profile with its unit times, ready to plan and project from.
pub(crate) struct QueryProfile {
    pub(crate) profile: DemandProfile,
    pub(crate) units: Vec<UnitTimes>,
}

/// Where a kept profile and its two companions live.
struct Files {
    profile: PathBuf,
    conditions: PathBuf,
    units: PathBuf,
}

impl Files {
    fn at(profile: PathBuf) -> Files {
        let with = |ext: &str| profile.with_extension(ext);
        Files {
            conditions: with("conditions.json"),
            units: with("units.csv"),
            profile,
        }
    }
}

/// Measures the profile of the first `count` queries at degrees 1 and 2, or reuses the
/// one kept from the same settings when its conditions were good on a machine of
/// `cores` cores. A profile measured under bad conditions is measured again once; if
/// the second is bad too, the demo stops with the reason, unless `accept_noisy`. `bars`
/// shows the measurement's progress.
pub(crate) fn query_profile(
    prepared: &PreparedSearch,
    count: usize,
    repeat: usize,
    cores: usize,
    accept_noisy: bool,
    bars: Bars<'_>,
) -> Result<QueryProfile, EvalError> {
    let count = count.min(prepared.queries.len());
    let stem = prepared
        .queries_path
        .file_stem()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_default();
    let files = Files::at(prepared.queries_path.with_file_name(format!(
        "profile-{stem}-{count}p-r{repeat}-m{}.csv",
        tailor_bench::PROFILE_METHOD
    )));
    match read_kept(&files, count) {
        Ok((kept, conditions)) => match conditions.problem(cores) {
            None => {
                eprintln!("    reused {}", files.profile.display());
                return Ok(kept);
            }
            Some(why) => eprintln!("    the kept profile is not used: {why}; measuring again"),
        },
        Err(why) if files.profile.exists() => {
            eprintln!("    the kept profile is not used: {why}; measuring again")
        }
        Err(_) => {}
    }
    let mut queries = prepared.queries.clone();
    queries.truncate(count);
    let source =
        SearchSource::each_query(prepared.index.clone(), queries).map_err(EvalError::Search)?;
    let cfg = ProfileConfig {
        requests: count,
        max_degree: 2,
        repeat,
    };
    for attempt in 1..=2 {
        let bar = bars("profiling", count as u64);
        let measured = measure_profile_in_detail(&cfg, &source, |done, total| {
            bar.set(done as u64, total as u64)
        })?;
        bar.finish();
        let problem = measured.conditions.problem(cores);
        if let Some(why) = &problem {
            if attempt == 1 {
                eprintln!("    {why}: measuring the profile again");
                continue;
            }
            if !accept_noisy {
                return Err(EvalError::NoisyProfile { why: why.clone() });
            }
            eprintln!("    {why}: kept anyway (--accept-noisy-profile)");
        }
        write_kept(
            &files,
            &measured.profile,
            &measured.conditions,
            &measured.units,
        )?;
        eprintln!("    wrote {}", files.profile.display());
        return Ok(QueryProfile {
            profile: measured.profile,
            units: measured.units,
        });
    }
    unreachable!("the second attempt returns or fails")
}

/// Reads a kept profile and its companions; an error says why it cannot be reused, its
/// causes after colons.
fn read_kept(files: &Files, count: usize) -> Result<(QueryProfile, ProfileConditions), String> {
    let profile = DemandProfile::read(&files.profile).map_err(|e| chain(&e))?;
    if profile.requests().len() != count || profile.max_degree() < 2 {
        return Err(format!(
            "it has {} queries at degrees up to {}, not {count} at 2",
            profile.requests().len(),
            profile.max_degree()
        ));
    }
    let text = std::fs::read_to_string(&files.conditions).map_err(|e| {
        format!(
            "it has no record of the conditions it was measured under: {}",
            chain(&e)
        )
    })?;
    let conditions: ProfileConditions = serde_json::from_str(&text).map_err(|e| {
        format!(
            "{} is not readable: {}",
            files.conditions.display(),
            chain(&e)
        )
    })?;
    let units = read_units(&files.units, count)?;
    Ok((QueryProfile { profile, units }, conditions))
}

fn write_kept(
    files: &Files,
    profile: &DemandProfile,
    conditions: &ProfileConditions,
    units: &[UnitTimes],
) -> Result<(), EvalError> {
    let create = |path: &Path| {
        std::fs::File::create(path)
            .map(std::io::BufWriter::new)
            .map_err(|e| EvalError::file("write", path, e))
    };
    profile.write(&mut create(&files.profile)?)?;
    std::fs::write(&files.conditions, serde_json::to_string_pretty(conditions)?)
        .map_err(|e| EvalError::file("write", &files.conditions, e))?;
    use std::io::Write;
    let mut out = create(&files.units)?;
    writeln!(out, "request,part,ms")?;
    for (i, u) in units.iter().enumerate() {
        for (k, ms) in u.units_ms.iter().enumerate() {
            writeln!(out, "{},{k},{ms}", i + 1)?;
        }
        writeln!(out, "{},merge,{}", i + 1, u.merge_ms)?;
    }
    out.flush()?;
    Ok(())
}

/// Reads `request,part,ms` rows (part: a unit's index, or `merge`) for requests 1..=count;
/// an error says what is wrong, its causes after colons.
fn read_units(path: &Path, count: usize) -> Result<Vec<UnitTimes>, String> {
    let text = std::fs::read_to_string(path).map_err(|e| {
        format!(
            "its unit times ({}) are missing: {}",
            path.display(),
            chain(&e)
        )
    })?;
    let mut units: Vec<UnitTimes> = (0..count)
        .map(|_| UnitTimes {
            units_ms: Vec::new(),
            merge_ms: 0.0,
        })
        .collect();
    for (n, line) in text.lines().enumerate().skip(1) {
        let bad = || {
            format!(
                "{}: line {} is not `request,part,ms`",
                path.display(),
                n + 1
            )
        };
        let because = |e: &dyn std::error::Error| format!("{}: {}", bad(), chain(e));
        let mut fields = line.split(',');
        let (Some(request), Some(part), Some(ms), None) =
            (fields.next(), fields.next(), fields.next(), fields.next())
        else {
            return Err(bad());
        };
        let request: usize = request.parse().map_err(|e| because(&e))?;
        let ms: f64 = ms.parse().map_err(|e| because(&e))?;
        if !((1..=count).contains(&request) && ms.is_finite() && ms >= 0.0) {
            return Err(bad());
        }
        let u = &mut units[request - 1];
        if part == "merge" {
            u.merge_ms = ms;
        } else {
            let k: usize = part.parse().map_err(|e| because(&e))?;
            if k != u.units_ms.len() {
                return Err(bad());
            }
            u.units_ms.push(ms);
        }
    }
    Ok(units)
}
