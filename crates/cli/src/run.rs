//! `tailor run`: a live, open-loop run of a workload on the runtime.

use anyhow::Context;
use clap::Args;
use tailor_bench::{run_live, LiveConfig};
use tailor_core::{exact_quantile, Arrivals, Policy, Tables};
use tailor_sim::write_records;
use tailor_workloads::Workload;

use crate::{write_output, PathArg};

#[derive(Debug, Args)]
pub(crate) struct RunArgs {
    /// WORKLOAD: synthetic:DEMAND[:SPEEDUP], with SPEEDUP linear (default) or amdahl:F.
    #[arg(long)]
    workload: String,
    /// POLICY, as for `tailor simulate`.
    #[arg(long)]
    policy: String,
    /// Requests per second.
    #[arg(long)]
    rps: f64,
    /// Requests in the run (phases fix their own count).
    #[arg(long)]
    requests: usize,
    /// Seed of the workload: the same seed gives `tailor simulate` the same requests.
    #[arg(long)]
    seed: u64,
    /// Table files for fm and adaptive; repeat to give both.
    #[arg(long = "table")]
    tables: Vec<PathArg>,
    /// Latency target in ms: the summary adds the fraction of requests above it.
    #[arg(long)]
    target_ms: Option<f64>,
    /// ARRIVALS: poisson, lognormal:SD_MS, trace:PATH, phases:RPS*COUNT,...
    #[arg(long, default_value = "poisson")]
    arrivals: String,
    /// Cores the policy plans for (default: the machine's).
    #[arg(long)]
    cores: Option<usize>,
    /// Self-scheduling quantum in ms.
    #[arg(long, default_value_t = 5.0)]
    quantum_ms: f64,
    /// Warm-up requests left out of the statistics (default: 5%).
    #[arg(long)]
    warmup: Option<usize>,
    /// Worker threads for policies with a pool, all but FM (default: one per core).
    #[arg(long)]
    workers: Option<usize>,
    /// Write per-request records (CSV) here.
    #[arg(long)]
    records: Option<PathArg>,
}

pub(crate) fn run(args: RunArgs) -> anyhow::Result<()> {
    let tables = Tables::read(&args.tables)?;
    let policy = Policy::parse(&args.policy, &tables)?;
    let Workload::Synthetic { demand, shape } = Workload::parse(&args.workload)?;
    let cores = match args.cores {
        Some(c) => c,
        None => std::thread::available_parallelism()
            .map(|n| n.get())
            .unwrap_or(1),
    };
    let cfg = LiveConfig {
        cores,
        policy,
        demand,
        shape,
        arrivals: Arrivals::parse(&args.arrivals)?,
        rps: args.rps,
        requests: args.requests,
        seed: args.seed,
        quantum_ms: args.quantum_ms,
        target_ms: args.target_ms,
        warmup: args.warmup,
        workers: args.workers,
        spinner: None,
    };
    let out = run_live(&cfg)?;
    eprintln!("tailor: {}", out.boost_mode);
    eprintln!(
        "tailor: generator at {:?} priority; release error p50 {:.0} us, p99 {:.0} us",
        out.generator_priority,
        exact_quantile(&out.release_error_us, 0.5),
        exact_quantile(&out.release_error_us, 0.99)
    );
    if let Some(path) = &args.records {
        write_output(Some(path.as_path()), |w| write_records(&out.records, w))?;
    }
    write_output(None, |w| {
        serde_json::to_writer(&mut *w, &out.summary)?;
        writeln!(w)
    })
    .context("cannot print the summary")
}
