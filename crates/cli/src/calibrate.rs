//! `tailor calibrate`: a machine's calibration from its profile and live SEQ runs
//! (shared/spec/cli.md; the method in `tailor_plan::calibrate` and docs/calibration.md).

use std::io::{BufRead, BufReader};
use std::path::Path;
use std::sync::Arc;

use anyhow::Context;
use clap::Args;
use tailor_core::{DemandProfile, RunSummary, Units};
use tailor_plan::{calibrate, CalibrateInput};
use tailor_sim::seq_mean_latency;

use crate::{bounds, write_output, PathArg};

/// `tailor calibrate`.
#[derive(Debug, Args)]
pub(crate) struct CalibrateArgs {
    /// The machine's profile (`tailor profile --workload ...`), of the same workload and
    /// queries the runs ran.
    #[arg(long)]
    profile: PathArg,
    /// Live run summaries from `tailor run` on that machine, one JSON object per line
    /// (unknown fields ignored): SEQ at two loads or more below overload; FIX-N runs, if
    /// present, measure the helper cost directly.
    #[arg(long)]
    runs: PathArg,
    /// Write the calibration here (default: stdout).
    #[arg(long)]
    out: Option<PathArg>,
    /// Units per request (default: the profile's highest degree, as for search, whose
    /// units are the index segments).
    #[arg(long, value_parser = bounds::SEGMENTS, conflicts_with = "unit_ms")]
    units: Option<usize>,
    /// Instead of a count: units of this much sequential work (the synthetic workload's
    /// are 0.25ms).
    #[arg(long = "unit-time", value_name = "DURATION", value_parser = bounds::TIME)]
    unit_ms: Option<f64>,
}

/// Reads run summaries, one JSON object per line; blank lines are skipped.
pub(crate) fn read_runs(path: &Path) -> anyhow::Result<Vec<RunSummary>> {
    let file =
        std::fs::File::open(path).with_context(|| format!("cannot read {}", path.display()))?;
    let mut runs = Vec::new();
    for (i, line) in BufReader::new(file).lines().enumerate() {
        let line = line.with_context(|| format!("cannot read {}", path.display()))?;
        if line.trim().is_empty() {
            continue;
        }
        let run: RunSummary = serde_json::from_str(&line).with_context(|| {
            format!(
                "{}:{}: not a run summary from `tailor run`",
                path.display(),
                i + 1
            )
        })?;
        runs.push(run);
    }
    Ok(runs)
}

pub(crate) fn run(args: CalibrateArgs) -> anyhow::Result<()> {
    let profile =
        Arc::new(DemandProfile::read(&args.profile).with_context(|| "--profile".to_string())?);
    let runs = read_runs(&args.runs)?;
    let units = match (args.units, args.unit_ms) {
        (Some(k), _) => Some(Units::Count(k)),
        (None, Some(ms)) => Some(Units::UnitMs(ms)),
        (None, None) => None,
    };
    if units.is_none() {
        eprintln!(
            "tailor: units: {} per request, the profile's highest degree (search's units are \
             its index segments: pass --units SEGMENTS, or --unit-time for synthetic work)",
            profile.max_degree()
        );
    }
    let input = CalibrateInput {
        profile: &profile,
        profile_name: args.profile.display().to_string(),
        runs: &runs,
        units,
    };
    let cal = calibrate(&input, &|c, r| seq_mean_latency(&profile, c, r))?;
    eprintln!("tailor: calibration: {}", cal.describe());
    for note in &cal.source.notes {
        eprintln!("tailor: {note}");
    }
    write_output(args.out.as_deref(), |w| cal.write(w))
}
