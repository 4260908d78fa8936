//! The demo's query profile: measured once and kept, with the conditions it was measured
//! under and each query's unit (segment) and merge times, and re-measured when those
//! conditions were bad.

use std::path::{Path, PathBuf};

use anyhow::Context;
use tailor_bench::{measure_profile_in_detail, ProfileConfig, SearchSource, UnitTimes};
use tailor_core::{DemandProfile, ProfileConditions};
use tailor_workloads::search::PreparedSearch;

use crate::progress::Bar;

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
/// the second is bad too, the demo stops with the reason, unless `accept_noisy`.
pub(crate) fn query_profile(
    prepared: &PreparedSearch,
    count: usize,
    repeat: usize,
    cores: usize,
    accept_noisy: bool,
) -> anyhow::Result<QueryProfile> {
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
            eprintln!("    the kept profile is not used: {why:#}; measuring again")
        }
        Err(_) => {}
    }
    let mut queries = prepared.queries.clone();
    queries.truncate(count);
    let source =
        SearchSource::each_query(prepared.index.clone(), queries).map_err(anyhow::Error::msg)?;
    let cfg = ProfileConfig {
        requests: count,
        max_degree: 2,
        repeat,
    };
    for attempt in 1..=2 {
        let bar = Bar::new("profiling", count as u64);
        let measured =
            measure_profile_in_detail(&cfg, &source, |done, total| bar.set_of(done, total))?;
        bar.finish();
        let problem = measured.conditions.problem(cores);
        if let Some(why) = &problem {
            if attempt == 1 {
                eprintln!("    {why}: measuring the profile again");
                continue;
            }
            if !accept_noisy {
                anyhow::bail!(
                    "the query profile was measured twice under bad conditions ({why}); a \
                     profile taken on a busy machine misstates the queries' speedups, and FM \
                     planned from it would be wrong. Stop other programs and run again, or \
                     pass --accept-noisy-profile to use it anyway"
                );
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

/// Reads a kept profile and its companions; an error says why it cannot be reused.
fn read_kept(files: &Files, count: usize) -> anyhow::Result<(QueryProfile, ProfileConditions)> {
    let profile = DemandProfile::read(&files.profile)?;
    anyhow::ensure!(
        profile.requests().len() == count && profile.max_degree() >= 2,
        "it has {} queries at degrees up to {}, not {count} at 2",
        profile.requests().len(),
        profile.max_degree()
    );
    let conditions: ProfileConditions = serde_json::from_str(
        &std::fs::read_to_string(&files.conditions)
            .context("it has no record of the conditions it was measured under")?,
    )
    .with_context(|| format!("{} is not readable", files.conditions.display()))?;
    let units = read_units(&files.units, count)?;
    Ok((QueryProfile { profile, units }, conditions))
}

fn write_kept(
    files: &Files,
    profile: &DemandProfile,
    conditions: &ProfileConditions,
    units: &[UnitTimes],
) -> anyhow::Result<()> {
    let create = |path: &Path| {
        std::fs::File::create(path)
            .map(std::io::BufWriter::new)
            .with_context(|| format!("cannot write {}", path.display()))
    };
    profile.write(&mut create(&files.profile)?)?;
    std::fs::write(&files.conditions, serde_json::to_string_pretty(conditions)?)
        .with_context(|| format!("cannot write {}", files.conditions.display()))?;
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

/// Reads `request,part,ms` rows (part: a unit's index, or `merge`) for requests 1..=count.
fn read_units(path: &Path, count: usize) -> anyhow::Result<Vec<UnitTimes>> {
    let text = std::fs::read_to_string(path)
        .with_context(|| format!("its unit times ({}) are missing", path.display()))?;
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
        let mut fields = line.split(',');
        let (Some(request), Some(part), Some(ms), None) =
            (fields.next(), fields.next(), fields.next(), fields.next())
        else {
            anyhow::bail!(bad());
        };
        let request: usize = request.parse().with_context(bad)?;
        let ms: f64 = ms.parse().with_context(bad)?;
        anyhow::ensure!(
            (1..=count).contains(&request) && ms.is_finite() && ms >= 0.0,
            bad()
        );
        let u = &mut units[request - 1];
        if part == "merge" {
            u.merge_ms = ms;
        } else {
            let k: usize = part.parse().with_context(bad)?;
            anyhow::ensure!(k == u.units_ms.len(), bad());
            u.units_ms.push(ms);
        }
    }
    Ok(units)
}
