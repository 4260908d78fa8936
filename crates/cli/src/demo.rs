//! `tailor demo`'s flags, parsed into a `tailor_eval::DemoConfig`; the demo itself is
//! `tailor_eval::run_demo`.

use std::path::{Path, PathBuf};
use std::time::Instant;

use anyhow::Context;
use clap::{Args, ValueEnum};
use tailor_eval::{DemoConfig, DemoFormat, TargetChoice, DEMO_PHASES};
use tailor_sim::PoolModel;
use tailor_workloads::search::GCIDE_DICT;

use crate::bounds;
use crate::plan::{Threads, Waits};
use crate::progress::Bar;
use crate::scheduler::SchedulerArg;
use crate::search::SearchArgs;

/// How the demo prints its results (`tailor_eval::DemoFormat`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
enum FormatArg {
    /// A table for people.
    Table,
    /// One run summary JSON per line.
    Json,
}

#[derive(Debug, Args)]
#[command(after_help = "Examples:
  tailor demo                      # the full comparison, about 6 minutes on 2 cores
  tailor demo --quick              # about 3 minutes
  tailor demo --corpus docs.jsonl  # your own documents")]
pub(crate) struct DemoArgs {
    /// table (for people) or json (one run summary per line).
    #[arg(long, value_enum, default_value_t = FormatArg::Table)]
    format: FormatArg,
    #[command(flatten)]
    search: SearchArgs,
    /// Queries to profile; the live runs draw from these.
    #[arg(long, default_value_t = 400, value_parser = bounds::COUNT)]
    profiled: usize,
    /// Runs per query and degree in the profile (the FM paper used at least 10).
    #[arg(long, default_value_t = 10, value_parser = bounds::COUNT)]
    repeat: usize,
    /// Loads, as fractions of SEQ's capacity (cores / mean query time).
    #[arg(long, value_delimiter = ',', default_values_t = [0.3, 0.45, 0.6, 0.75, 0.9])]
    loads: Vec<f64>,
    /// How long arrivals last in each live run.
    #[arg(long = "duration", value_name = "DURATION", default_value = "1.5s", value_parser = bounds::duration)]
    run_length: std::time::Duration,
    /// Rounds: each runs every policy at every load once, in a shuffled order, so that a
    /// slow minute of the machine falls on all policies alike. Eight rounds of 1.5 s
    /// rather than four of 3 s: the intervals rest on how much the runs differ, which
    /// four rounds estimate poorly; with alike policies and 10% drift between runs, four
    /// called FM "worse" in 17 of 300 simulated loads, eight in 1 (docs/demo.md,
    /// "Intervals and the verdict").
    #[arg(long, default_value_t = 8, value_parser = bounds::COUNT)]
    rounds: usize,
    /// Times a run that met noise (other programs or the hypervisor taking over 5% of
    /// the cores, or a stall over 10 ms) is repeated before it is kept and flagged.
    #[arg(long, default_value_t = 2, value_parser = bounds::COUNT0)]
    retries: usize,
    /// A shorter demo (within about 3 minutes once built and profiled): 2 rounds of
    /// 2-second runs at 30%, 60% and 90% load, and 5,000 requests per projected run.
    /// Overrides --rounds, --duration, --loads and --projected-requests.
    #[arg(long)]
    quick: bool,
    /// Requests in each projected (simulated) run.
    #[arg(long, default_value_t = 20_000, value_parser = bounds::REQUESTS)]
    projected_requests: usize,
    /// Cores to plan for and measure against (default: the machine's).
    #[arg(long, value_parser = bounds::THREADS)]
    cores: Option<usize>,
    /// SEQ's live capacity in queries per second, which the loads are fractions of
    /// (default: measured by a short SEQ run at half the profile's capacity). Set it to
    /// repeat an earlier run's rates exactly.
    #[arg(long, value_parser = bounds::RPS)]
    capacity: Option<f64>,
    /// FM's target parallelism (default: the cores; in simulation of the demo's profile
    /// on 2 cores, 2 gave a lower p99 than 3 or 4 at every load).
    #[arg(long, value_parser = bounds::POSITIVE)]
    target_parallelism: Option<f64>,
    /// How FM's planner counts waits (see `tailor plan fm --help`).
    #[arg(long, value_enum, default_value_t = Waits::Running)]
    wait_model: Waits,
    /// How FM's planner and the simulator charge a query's threads at degree d: `busy`
    /// (the default here: tailor's runtime lets a thread leave a query with no segment
    /// left, so s(d) threads are busy on average) or `held` (d threads, the FM paper's
    /// Eq. 2).
    #[arg(long, value_enum, default_value_t = Threads::Busy)]
    thread_model: Threads,
    /// How the executor-style peer's pool is modelled in the projection: `rayon` (the
    /// default: per-thread deques, steals, scopes that nest, as tantivy's executor gets
    /// them from rayon) or `fifo` (one first-in, first-out queue of every unit, an
    /// optimistic peer). The check at this machine's cores shows both.
    #[arg(long, value_enum, default_value_t = ExecutorModel::Rayon)]
    executor_model: ExecutorModel,
    /// The projection's machine: a calibration from `tailor calibrate` (say, of a real
    /// 16-core machine). Default: calibrated from this run's own live SEQ runs, its
    /// per-core prices carried to the projected cores; if that cannot be done, the fluid
    /// model with --thread-model.
    #[arg(long, value_name = "FILE")]
    calibration: Option<PathBuf>,
    /// FM's and Adaptive's target parallelism in the projection: `cores` (the planners'
    /// default) or `search` (as the FM paper chose it, by trying 1 to 1.75 times the
    /// cores in simulation, and up to 3 times when 1.75 wins; docs/demo.md, "Target parallelism in the projection").
    #[arg(long, value_enum, default_value_t = ProjectedTarget::Cores)]
    projected_target: ProjectedTarget,
    /// Use a query profile even when it was measured under bad conditions (other
    /// programs or the hypervisor taking over 5% of the cores, or a stall over 10 ms).
    #[arg(long)]
    accept_noisy_profile: bool,
    /// How the operating system schedules the live runs' request threads: `fair` (the
    /// default, SCHED_OTHER, what a service gets), `rr` (SCHED_RR below the harness's
    /// threads; needs root, CAP_SYS_NICE or RLIMIT_RTPRIO 4) or `auto` (rr where allowed).
    /// The fair scheduler can leave a core idle while a request thread waits, which the
    /// simulator does not model; under rr the kernel's real-time throttling can stall
    /// runs near full load (docs/demo.md has measurements).
    #[arg(long, value_enum, default_value_t = SchedulerArg::Fair)]
    scheduler: SchedulerArg,
    /// Seed of the arrivals and of the queries each request runs.
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// Where the chart (latency.png, latency.svg), the JSON lines (demo.jsonl), the
    /// profile (profile.csv) and the tables (fm-table.json, adaptive-table.json) go; the
    /// demo ends by printing the `tailor serve` command that runs FM with them.
    #[arg(long, default_value = "tailor-demo")]
    out_dir: PathBuf,
}

/// How the executor-style peer's pool is modelled (`tailor_sim::PoolModel`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
enum ExecutorModel {
    /// rayon's scheduling.
    Rayon,
    /// One first-in, first-out queue.
    Fifo,
}

/// How the projection sets FM's and Adaptive's target parallelism
/// (`tailor_eval::TargetChoice`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
enum ProjectedTarget {
    /// The planners' default: the cores.
    Cores,
    /// As the FM paper set target_p, by trying several (§4.1, §6.1): 1, 1.25, 1.5 and
    /// 1.75 times the cores (and 2, 2.5 and 3 when 1.75 wins), each simulated at the loads on a seed apart from the reported
    /// runs' (the same for every candidate, FM's and Adaptive's).
    Search,
}

impl DemoArgs {
    /// The demo's settings as plain values: `--quick`'s overrides applied, the flags
    /// checked, the cores and the scheduler resolved.
    fn config(mut self) -> anyhow::Result<DemoConfig> {
        if self.quick {
            self.rounds = 2;
            self.run_length = std::time::Duration::from_secs(2);
            self.loads = vec![0.3, 0.6, 0.9];
            self.projected_requests = 5_000;
        }
        anyhow::ensure!(self.rounds >= 1, "--rounds must be at least 1");
        anyhow::ensure!(self.profiled >= 10, "--profiled must be at least 10");
        for &load in &self.loads {
            anyhow::ensure!(
                load > 0.0 && load < 1.0,
                "--loads: {load} is not a fraction of capacity in (0, 1)"
            );
        }
        if let Some(c) = self.capacity {
            anyhow::ensure!(
                c.is_finite() && c > 0.0,
                "--capacity must be a positive number of queries per second, found {c}"
            );
        }
        Ok(DemoConfig {
            format: match self.format {
                FormatArg::Table => DemoFormat::Table,
                FormatArg::Json => DemoFormat::Json,
            },
            profiled: self.profiled,
            repeat: self.repeat,
            loads: self.loads,
            seconds: self.run_length.as_secs_f64(),
            rounds: self.rounds,
            retries: self.retries,
            projected_requests: self.projected_requests,
            cores: self
                .cores
                .unwrap_or_else(|| std::thread::available_parallelism().map_or(1, |n| n.get())),
            capacity: self.capacity,
            target_parallelism: self.target_parallelism,
            wait_model: self.wait_model.into(),
            thread_model: self.thread_model.into(),
            executor_model: match self.executor_model {
                ExecutorModel::Rayon => PoolModel::Rayon,
                ExecutorModel::Fifo => PoolModel::Fifo,
            },
            calibration: self.calibration,
            projected_target: match self.projected_target {
                ProjectedTarget::Cores => TargetChoice::Cores,
                ProjectedTarget::Search => TargetChoice::Search,
            },
            accept_noisy_profile: self.accept_noisy_profile,
            scheduler: self.scheduler.resolve()?,
            seed: self.seed,
            out_dir: self.out_dir,
            search_flags: self.search.flags(),
        })
    }
}

/// `tailor demo`: the corpus, index and queries (phase 1), then the demo.
pub(crate) fn run(args: DemoArgs) -> anyhow::Result<()> {
    let started = Instant::now();
    let search = args.search.clone();
    let config = args.config()?;
    eprintln!("[1/{DEMO_PHASES}] corpus, index and queries");
    ensure_corpus(&search)?;
    let prepared = search.prepare()?;
    tailor_eval::run_demo(&config, &prepared, &|what, total| {
        Box::new(Bar::new(what, total))
    })?;
    eprintln!("done in {:.0} s", started.elapsed().as_secs_f64());
    Ok(())
}

impl tailor_eval::Bar for Bar {
    fn set(&self, done: u64, total: u64) {
        self.set_of(done as usize, total as usize);
    }

    fn println(&self, line: String) {
        Bar::println(self, line);
    }

    fn finish(self: Box<Self>) {
        Bar::finish(*self);
    }
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
