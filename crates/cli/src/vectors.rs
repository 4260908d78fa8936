//! `tailor vectors fm`: generated cases of FM's decisions, for other implementations of
//! the policy (the JVM's, jvm/tailor-lucene) to replay and agree with.
//!
//! Each case is a table, a load, the time a request has executed and the core guard's
//! state, with what tailor decides: the degree the row's schedule gives
//! (`IntervalRow::degree_at`), the admission (`Policy::admission`: now, after v0, or on an
//! exit; Haque et al., ASPLOS 2015, §4.2), and the guard's helpers and starting threads
//! (`helpers_granted`, `start_threads`; docs/guard.md). The format is in docs/cli.md.

use std::path::PathBuf;
use std::sync::Arc;

use clap::{Args, Subcommand};
use rand::{RngExt, SeedableRng};
use rand_chacha::ChaCha8Rng;
use serde_json::json;
use tailor_core::{
    helpers_granted, start_threads, Admission, IntervalTable, Policy, INTERVAL_TABLE_KIND,
};

use crate::{bounds, write_output};

#[derive(Debug, Subcommand)]
pub(crate) enum VectorsCommand {
    /// FM's decisions (degree, admission, the guard's helpers) on generated tables and
    /// states, as JSON Lines: a header with the tables, then one case per line.
    Fm(FmVectorsArgs),
}

#[derive(Debug, Args)]
pub(crate) struct FmVectorsArgs {
    /// Cases to write.
    #[arg(long, default_value_t = 10_000, value_parser = bounds::REQUESTS)]
    cases: usize,
    /// Seed of the generated tables and cases.
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// Tables to generate (each case uses one of them).
    #[arg(long, default_value_t = 40, value_parser = bounds::COUNT)]
    tables: usize,
    /// Output file (default: standard output).
    #[arg(long)]
    out: Option<PathBuf>,
}

pub(crate) fn run(cmd: VectorsCommand) -> anyhow::Result<()> {
    match cmd {
        VectorsCommand::Fm(args) => fm(args),
    }
}

/// The grid tables' intervals are drawn on (the planner's default step).
const STEP_MS: f64 = 0.5;

/// A table of 1-16 degrees and 1-8 rows: intervals of zero, a few steps, or many, and
/// now and then a row that admits on an exit or delays its start.
fn table(rng: &mut ChaCha8Rng) -> IntervalTable {
    let max_degree = rng.random_range(1..=16usize);
    let rows = rng.random_range(1..=8usize);
    let schedules = (0..rows)
        .map(|_| {
            let mut v: Vec<f64> = (0..max_degree)
                .map(|_| match rng.random_range(0..4) {
                    0 => 0.0,
                    1 => STEP_MS * f64::from(rng.random_range(1..=4u32)),
                    2 => STEP_MS * f64::from(rng.random_range(1..=200u32)),
                    _ => rng.random_range(0.0..30.0),
                })
                .collect();
            // Most rows start at once, as planned tables do at low load.
            if rng.random_bool(0.6) {
                v[0] = 0.0;
            }
            (v, rng.random_bool(0.1))
        })
        .collect();
    IntervalTable::from_schedules(max_degree, schedules)
}

/// An executed time near the schedule's boundaries: exactly on one (summed in the order
/// `degree_at` sums), a hair before or after it, or anywhere up to past the last.
fn executed_ms(rng: &mut ChaCha8Rng, intervals: &[f64]) -> f64 {
    let mut boundaries = vec![0.0];
    let mut b = 0.0;
    for v in &intervals[1..] {
        b += v;
        boundaries.push(b);
    }
    let at = boundaries[rng.random_range(0..boundaries.len())];
    match rng.random_range(0..4) {
        0 => at,
        1 => (at - 1e-9).max(0.0),
        2 => at + 1e-9,
        _ => rng.random_range(0.0..=b + 10.0),
    }
}

fn fm(args: FmVectorsArgs) -> anyhow::Result<()> {
    let mut rng = ChaCha8Rng::seed_from_u64(args.seed);
    let tables: Vec<IntervalTable> = (0..args.tables).map(|_| table(&mut rng)).collect();
    let policies: Vec<Policy> = tables
        .iter()
        .map(|t| Policy::Fm {
            table: Arc::new(t.clone()),
            boost: false,
        })
        .collect();
    let header = json!({
        "kind": "tailor-fm-vectors",
        "version": 1,
        "tables": tables,
    });
    write_output(args.out.as_deref(), |w| {
        writeln!(w, "{header}")?;
        for _ in 0..args.cases {
            let i = rng.random_range(0..tables.len());
            let t = &tables[i];
            debug_assert_eq!(t.kind, INTERVAL_TABLE_KIND);
            let load = rng.random_range(0..=t.rows.len() + 3);
            let row = t.row(load);
            let executed = executed_ms(&mut rng, &row.intervals_ms);
            let threads = rng.random_range(1..=t.max_degree.max(1) + 1);
            let pending = rng.random_range(0..=3usize);
            let unclaimed = rng.random_range(0..=20usize);
            let free_cores = rng.random_range(0..=16usize);
            let waiting = if rng.random_bool(0.5) {
                0
            } else {
                rng.random_range(1..=3usize)
            };
            let degree = row.degree_at(executed);
            let (admission, delay_ms) = match policies[i].admission(load) {
                Admission::Now => ("now", 0.0),
                Admission::Delay(ms) => ("delay", ms),
                Admission::OnExit => ("on_exit", 0.0),
            };
            let case = json!({
                "table": i,
                "load": load,
                "executed_ms": executed,
                "threads": threads,
                "pending": pending,
                "unclaimed": unclaimed,
                "free_cores": free_cores,
                "waiting": waiting,
                "decision": {
                    "degree": degree,
                    "admission": admission,
                    "delay_ms": delay_ms,
                    "helpers": helpers_granted(degree, threads, pending, unclaimed, free_cores, waiting),
                    "start_threads": start_threads(degree, unclaimed, free_cores, waiting),
                },
            });
            writeln!(w, "{case}")?;
        }
        Ok(())
    })?;
    if let Some(path) = &args.out {
        eprintln!(
            "tailor: {} FM cases on {} tables written to {}",
            args.cases,
            args.tables,
            path.display()
        );
    }
    Ok(())
}
