//! `tailor demo`: the search service end to end. Index GCIDE with tantivy, generate and
//! profile queries, plan FM and Adaptive, run SEQ, FIX-2, tantivy's own executor,
//! Adaptive and FM live at five loads, and print and chart the tail latencies.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Instant;

use anyhow::Context;
use clap::{Args, ValueEnum};
use tailor_bench::{measure_profile, run_live, LiveConfig, ProfileConfig, SearchSource};
use tailor_core::{Arrivals, DemandProfile, Dissolve, Policy, RunSummary, Tables};
use tailor_plan::{plan_adaptive, plan_fm, AdaptiveParams, FmParams, FmProblem, WaitModel};
use tailor_workloads::search::{PreparedSearch, GCIDE_DICT};

use crate::chart::{write_charts, Series};
use crate::plan::Waits;
use crate::progress::Bar;
use crate::search::SearchArgs;

/// How the demo prints its results.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub(crate) enum DemoFormat {
    /// A table for people.
    Table,
    /// One run summary JSON per line.
    Json,
}

#[derive(Debug, Args)]
pub(crate) struct DemoArgs {
    /// table (for people) or json (one run summary per line).
    #[arg(long, value_enum, default_value_t = DemoFormat::Table)]
    format: DemoFormat,
    #[command(flatten)]
    search: SearchArgs,
    /// Queries to profile; the live runs draw from these.
    #[arg(long, default_value_t = 400)]
    profiled: usize,
    /// Runs per query and degree in the profile (the FM paper used at least 10).
    #[arg(long, default_value_t = 10)]
    repeat: usize,
    /// Loads, as fractions of SEQ's capacity (cores / mean query time).
    #[arg(long, value_delimiter = ',', default_values_t = [0.3, 0.45, 0.6, 0.75, 0.9])]
    loads: Vec<f64>,
    /// Seconds of arrivals in each live run.
    #[arg(long, default_value_t = 8.0)]
    seconds: f64,
    /// Cores to plan for and measure against (default: the machine's).
    #[arg(long)]
    cores: Option<usize>,
    /// FM's target parallelism (default: the cores; in simulation of the demo's profile
    /// on 2 cores, 2 gave a lower p99 than 3 or 4 at every load).
    #[arg(long)]
    target_parallelism: Option<f64>,
    /// How FM's planner counts waits (see `tailor plan fm --help`).
    #[arg(long, value_enum, default_value_t = Waits::Running)]
    wait_model: Waits,
    /// Seed of the arrivals and of the queries each request runs.
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// Where the chart goes.
    #[arg(long, default_value = "tailor-demo")]
    out_dir: PathBuf,
}

/// The policies compared, in table order: (label, POLICY, tantivy executor threads).
const POLICIES: [(&str, &str, Option<usize>); 5] = [
    ("SEQ", "seq", None),
    ("FIX-2", "fix:2", None),
    ("tantivy-executor-2", "seq", Some(2)),
    ("Adaptive", "adaptive", None),
    ("FM", "fm", None),
];

/// FM's grid step and self-scheduling quantum, in ms: queries take 0.1 to 20 ms, so the
/// paper's 5 ms would be longer than most of them.
const STEP_MS: f64 = 0.25;

pub(crate) fn run(args: DemoArgs) -> anyhow::Result<()> {
    let started = Instant::now();
    anyhow::ensure!(args.profiled >= 10, "--profiled must be at least 10");
    anyhow::ensure!(
        args.seconds.is_finite() && args.seconds > 0.0,
        "--seconds must be positive"
    );
    for &load in &args.loads {
        anyhow::ensure!(
            load > 0.0 && load < 1.0,
            "--loads: {load} is not a fraction of capacity in (0, 1)"
        );
    }
    let cores = args
        .cores
        .unwrap_or_else(|| std::thread::available_parallelism().map_or(1, |n| n.get()));
    let phases = 5;
    let phase = |i: usize, what: &str| eprintln!("[{i}/{phases}] {what}");

    phase(1, "corpus, index and queries");
    ensure_corpus(&args.search)?;
    let prepared = args.search.prepare()?;

    phase(
        2,
        "profiling the queries alone at degrees 1 and 2 (tailor profile)",
    );
    let profile = profile(&args, &prepared)?;
    let mean = profile.requests().iter().map(|r| r.seq_ms()).sum::<f64>()
        / profile.requests().len() as f64;
    eprintln!("    {}", Shape::of(&profile));

    phase(
        3,
        "planning FM (tailor plan fm) and Adaptive (tailor plan adaptive)",
    );
    let tables = plan(&args, &profile, cores)?;

    // Queries run together cost more than alone (caches, memory bandwidth), so the
    // capacity comes from a short SEQ run at half the profile's capacity: its CPU
    // utilization, measured from process CPU time, says how much each query really costs.
    let profiled_capacity = cores as f64 * 1000.0 / mean;
    let probe_rps = 0.5 * profiled_capacity;
    let probe = LiveConfig {
        cores,
        policy: Policy::Seq,
        arrivals: Arrivals::Poisson,
        rps: probe_rps,
        requests: ((probe_rps * 3.0) as usize).max(200),
        seed: args.seed,
        quantum_ms: STEP_MS,
        target_ms: None,
        warmup: None,
        workers: None,
        steal: None,
        dissolve: Dissolve::Prompt,
        rayon: false,
        hetero: None,
    };
    let probe_source = SearchSource::random(
        prepared.index.clone(),
        truncated(&prepared, profile.requests().len()),
        None,
        probe.requests,
        args.seed,
    )
    .map_err(anyhow::Error::msg)?;
    let utilization = run_live(&probe, &Arc::new(probe_source))?
        .summary
        .cpu_utilization;
    let capacity = profiled_capacity * (0.5 / utilization.clamp(0.05, 1.0)).min(1.0);
    eprintln!(
        "    capacity probe: SEQ at {probe_rps:.0} queries/s used {:.0}% of the cores, so \
         SEQ's live capacity is about {capacity:.0} queries/s (the profile alone says \
         {profiled_capacity:.0})",
        100.0 * utilization
    );
    let rates: Vec<f64> = args.loads.iter().map(|l| l * capacity).collect();
    phase(
        4,
        &format!(
            "live runs: {} policies x {} loads, {} s each (loads are fractions of SEQ's live \
             capacity, {capacity:.0} queries/s on {cores} cores)",
            POLICIES.len(),
            rates.len(),
            args.seconds
        ),
    );
    let seq_ms: Vec<f64> = profile.requests().iter().map(|r| r.seq_ms()).collect();
    let queries = truncated(&prepared, seq_ms.len());
    let bar = Bar::new("running", (POLICIES.len() * rates.len()) as u64);
    let mut results: Vec<Vec<RunSummary>> = vec![Vec::new(); POLICIES.len()];
    let mut done = 0;
    for &rps in &rates {
        for (p, (label, spec, executor)) in POLICIES.iter().enumerate() {
            let count = ((rps * args.seconds) as usize).max(200);
            let cfg = LiveConfig {
                cores,
                policy: Policy::parse(spec, &tables)?,
                arrivals: Arrivals::Poisson,
                rps,
                requests: count,
                seed: args.seed,
                quantum_ms: STEP_MS,
                target_ms: None,
                warmup: None,
                workers: None,
                steal: None,
                dissolve: Dissolve::Prompt,
                rayon: false,
                hetero: None,
            };
            let mut source = SearchSource::random(
                prepared.index.clone(),
                queries.clone(),
                Some(seq_ms.clone()),
                count,
                args.seed,
            )
            .map_err(anyhow::Error::msg)?;
            if let Some(threads) = executor {
                source = source
                    .on_tantivy_executor(*threads)
                    .map_err(anyhow::Error::msg)?;
            }
            let mut out = run_live(&cfg, &Arc::new(source))
                .with_context(|| format!("{label} at {rps:.0} queries/s"))?;
            out.summary.policy = label.to_lowercase();
            results[p].push(out.summary);
            done += 1;
            bar.set(done);
        }
    }
    bar.finish();

    phase(5, "results");
    match args.format {
        DemoFormat::Json => {
            for runs in &results {
                for s in runs {
                    println!("{}", serde_json::to_string(s)?);
                }
            }
        }
        DemoFormat::Table => print_table(&rates, &args.loads, &results),
    }
    let series: Vec<Series> = POLICIES
        .iter()
        .zip(&results)
        .map(|((label, _, _), runs)| Series {
            label: label.to_string(),
            points: runs
                .iter()
                .map(|s| (s.rps, s.latency_ms.p99, s.latency_ms.mean))
                .collect(),
        })
        .collect();
    match write_charts(&args.out_dir, &series) {
        Ok(paths) => {
            for p in paths {
                eprintln!("chart: {}", p.display());
            }
        }
        Err(e) => eprintln!("tailor: no chart: {e:#}"),
    }
    eprintln!("done in {:.0} s", started.elapsed().as_secs_f64());
    Ok(())
}

/// The first `count` queries: the profiled ones.
fn truncated(prepared: &PreparedSearch, count: usize) -> Vec<tailor_workloads::search::QuerySpec> {
    prepared.queries.iter().take(count).cloned().collect()
}

/// Installs GCIDE when it is missing and no corpus was given, where apt-get can.
fn ensure_corpus(search: &SearchArgs) -> anyhow::Result<()> {
    if search.has_corpus() || Path::new(GCIDE_DICT).exists() {
        return Ok(());
    }
    let how = "install it with `sudo apt-get install dict-gcide` (Debian, Ubuntu), or pass \
               your own corpus with --corpus FILE";
    if !Path::new("/usr/bin/apt-get").exists() {
        anyhow::bail!("the GCIDE corpus ({GCIDE_DICT}) is missing and apt-get is not here: {how}");
    }
    eprintln!("    GCIDE is missing: running apt-get install dict-gcide");
    let status = std::process::Command::new("apt-get")
        .args(["install", "-y", "--no-install-recommends", "dict-gcide"])
        .env("DEBIAN_FRONTEND", "noninteractive")
        .stdout(std::process::Stdio::null())
        .status()
        .context("cannot run apt-get")?;
    anyhow::ensure!(
        status.success() && Path::new(GCIDE_DICT).exists(),
        "apt-get could not install dict-gcide ({status}): {how}"
    );
    Ok(())
}

/// Measures the profile of the first `--profiled` queries, or reuses the one kept from
/// the same settings.
fn profile(args: &DemoArgs, prepared: &PreparedSearch) -> anyhow::Result<DemandProfile> {
    let count = args.profiled.min(prepared.queries.len());
    let stem = prepared
        .queries_path
        .file_stem()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_default();
    let path = prepared.queries_path.with_file_name(format!(
        "profile-{stem}-{count}p-r{}-m{}.csv",
        args.repeat,
        tailor_bench::PROFILE_METHOD
    ));
    if let Ok(profile) = DemandProfile::read(&path) {
        if profile.requests().len() == count && profile.max_degree() >= 2 {
            eprintln!("    reused {}", path.display());
            return Ok(profile);
        }
    }
    let mut queries = prepared.queries.clone();
    queries.truncate(count);
    let source =
        SearchSource::each_query(prepared.index.clone(), queries).map_err(anyhow::Error::msg)?;
    let cfg = ProfileConfig {
        requests: count,
        max_degree: 2,
        repeat: args.repeat,
    };
    let bar = Bar::new("profiling", count as u64);
    let profile = measure_profile(&cfg, &source, |done, total| bar.set_of(done, total))?;
    bar.finish();
    let mut file = std::io::BufWriter::new(
        std::fs::File::create(&path).with_context(|| format!("cannot write {}", path.display()))?,
    );
    profile.write(&mut file)?;
    eprintln!("    wrote {}", path.display());
    Ok(profile)
}

/// Plans FM (n = 2) and Adaptive from the profile.
fn plan(args: &DemoArgs, profile: &DemandProfile, cores: usize) -> anyhow::Result<Tables> {
    let longest = profile
        .requests()
        .iter()
        .map(|r| r.seq_ms())
        .fold(0.0, f64::max);
    // y: long enough to keep the longest query sequential, on the grid.
    let y = ((longest / STEP_MS).ceil() * STEP_MS).max(STEP_MS);
    let params = FmParams {
        max_degree: 2,
        target_parallelism: args.target_parallelism.unwrap_or(cores as f64),
        step_ms: STEP_MS,
        max_interval_ms: y,
        percentile: 0.99,
        max_load: 60,
        wait_model: match args.wait_model {
            Waits::Paper => WaitModel::Paper,
            Waits::Running => WaitModel::Running,
        },
    };
    let fm = plan_fm(&FmProblem::new(profile, params)?, None)?;
    let adaptive = plan_adaptive(
        profile,
        &AdaptiveParams {
            max_degree: 2,
            target_parallelism: cores as f64,
            max_load: 60,
        },
    )?;
    Ok(Tables {
        fm: Some(Arc::new(fm)),
        adaptive: Some(Arc::new(adaptive)),
        tail_control: None,
        eetl: None,
    })
}

/// The comparison table: p99 and mean per policy and load, and FM against the best peer.
fn print_table(rates: &[f64], loads: &[f64], results: &[Vec<RunSummary>]) {
    let mut header = format!("{:>5} {:>7}", "load", "rps");
    for (label, _, _) in POLICIES {
        header.push_str(&format!(" | {label:>18}"));
    }
    header.push_str(" | FM p99 vs best peer");
    println!("p99 / mean latency in ms");
    println!("{header}");
    for (i, (&rps, &load)) in rates.iter().zip(loads).enumerate() {
        let mut line = format!("{:>4.0}% {rps:>7.0}", load * 100.0);
        for runs in results {
            let s = &runs[i];
            line.push_str(&format!(
                " | {:>18}",
                format!("{:.2} / {:.2}", s.latency_ms.p99, s.latency_ms.mean)
            ));
        }
        let fm = results[POLICIES.len() - 1][i].latency_ms.p99;
        let best = results[..POLICIES.len() - 1]
            .iter()
            .map(|runs| runs[i].latency_ms.p99)
            .fold(f64::INFINITY, f64::min);
        line.push_str(&format!(" | {:.2}x", fm / best));
        println!("{line}");
    }
}

/// What the issue asks of a search profile: a heavy tail and a good speedup for the
/// long queries.
pub(crate) struct Shape {
    queries: usize,
    median_ms: f64,
    p99_ms: f64,
    /// Sum of t1 over sum of t2 for the longest 10% of queries by t1.
    longest_speedup2: f64,
}

impl Shape {
    pub(crate) fn of(profile: &DemandProfile) -> Shape {
        let mut rows: Vec<(f64, f64)> = profile
            .requests()
            .iter()
            .map(|r| (r.seq_ms(), r.seq_ms() / r.speedup(2)))
            .collect();
        rows.sort_by(|a, b| a.0.total_cmp(&b.0));
        let t1: Vec<f64> = rows.iter().map(|r| r.0).collect();
        let long = &rows[rows.len() - (rows.len() / 10).max(1)..];
        Shape {
            queries: rows.len(),
            median_ms: tailor_core::exact_quantile(&t1, 0.5),
            p99_ms: tailor_core::exact_quantile(&t1, 0.99),
            longest_speedup2: long.iter().map(|r| r.0).sum::<f64>()
                / long.iter().map(|r| r.1).sum::<f64>(),
        }
    }
}

impl std::fmt::Display for Shape {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{} queries at degree 1: median {:.2} ms, p99 {:.2} ms (p99/median {:.1}); \
             speedup at degree 2 of the longest 10%: {:.2}",
            self.queries,
            self.median_ms,
            self.p99_ms,
            self.p99_ms / self.median_ms,
            self.longest_speedup2
        )
    }
}
