//! The `tailor` binary: parses arguments into plain values and calls the library crates.

mod bounds;
mod calibrate;
mod concepts;
mod demo;
mod emulate;
mod fanout;
mod green;
mod help;
mod load;
mod load_report;
mod plan;
mod plan_eetl;
mod plan_fm;
mod plan_reissue;
mod profile;
mod progress;
mod run;
mod scheduler;
mod search;
mod serve;
mod simulate;
mod simulate_dvfs;
mod simulate_fanout;
mod spellings;
mod vectors;

use std::fs::File;
use std::io::{self, BufWriter, IsTerminal, Write};
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::Context;
use clap::{FromArgMatches, Parser, Subcommand};

/// tailor: cut the tail latency of CPU-bound interactive services.
#[derive(Debug, Parser)]
#[command(name = "tailor", version, about, long_about = None)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Compare five policies on real search, live and projected.
    ///
    /// Indexes a real corpus with tantivy, profiles and plans its queries, and compares
    /// SEQ, FIX-2, tantivy's executor, Adaptive and FM live at five loads on this machine,
    /// then projects them to 16 and 64 cores with the simulator (the main job).
    Demo(demo::DemoArgs),
    /// Measure a workload's demand profile, or generate or describe one.
    ///
    /// `profile measure` (or the bare `profile` with --workload) measures each request's
    /// time at each degree; `generate` writes a synthetic profile; `describe` summarizes
    /// one.
    Profile(profile::ProfileArgs),
    /// Plan a policy offline from a workload profile.
    #[command(subcommand)]
    Plan(plan::PlanCommand),
    /// Simulate policies on modelled cores: one run or a sweep.
    Simulate(simulate::SimulateArgs),
    /// Calibrate the simulator's cost model to this machine.
    ///
    /// From a profile and live SEQ runs: the hand-off delay, helper cost and slowdown a
    /// request thread really costs here.
    Calibrate(calibrate::CalibrateArgs),
    /// Measure slow-core emulation: planned against measured slowdown.
    ///
    /// Duty-cycle emulation of a slower core (Haque's dissertation, §5.2.3, Fig. 5.5).
    Emulate(emulate::EmulateArgs),
    /// Run a workload live on the runtime under open-loop load.
    Run(run::RunArgs),
    /// Serve a workload over HTTP on the runtime.
    ///
    /// The endpoints are /search, /work, /healthz, /metrics and /profile (docs/cli.md).
    Serve(serve::ServeArgs),
    /// Load any HTTP service open loop and report its latency.
    ///
    /// wrk2-style: a fixed offered rate, each latency from the request's intended send
    /// time. A URL loads any service; --url loads a `tailor serve` or `tailor fanout`.
    Load(load::LoadArgs),
    /// Fan queries out to sharded replicas, with reissue policies.
    ///
    /// A front end over sharded, replicated `tailor serve`s: each query goes to one
    /// replica per shard, with SingleR, SingleD or hedged reissue.
    Fanout(fanout::FanoutArgs),
    /// Simulate green datacenter schedulers: Green SLAs and GreenPar.
    ///
    /// Haque's dissertation, appendices A and B: generate or import inputs, and simulate
    /// a provider selling Green SLAs, or parallel jobs that grow on solar energy.
    #[command(subcommand)]
    Green(green::GreenCommand),
    /// Write test vectors of a policy's decisions.
    ///
    /// Generated cases for another implementation of the policy to replay (the JVM's FM
    /// in jvm/).
    #[command(subcommand)]
    Vectors(vectors::VectorsCommand),
    /// Print a shell's completion script (bash, zsh, fish, ...).
    ///
    /// For bash: `tailor completions bash > ~/.local/share/bash-completion/completions/tailor`.
    Completions {
        /// The shell.
        shell: clap_complete::Shell,
    },
    /// Print the man page (roff), or write one per command.
    ///
    /// `tailor man > tailor.1 && man -l tailor.1` shows it; `tailor man --out-dir DIR`
    /// writes tailor.1 and a page for every command (tailor-load.1, ...).
    Man {
        /// Write a page per command into this folder instead.
        #[arg(long)]
        out_dir: Option<PathArg>,
    },
}

fn main() -> ExitCode {
    let matches = help::command().get_matches_from(spellings::modernize(std::env::args_os()));
    let cli = match Cli::from_arg_matches(&matches) {
        Ok(cli) => cli,
        Err(e) => e.exit(),
    };
    let result = match cli.command {
        Command::Plan(cmd) => plan::run(cmd),
        Command::Profile(args) => profile::run(args),
        Command::Simulate(args) => simulate::run(args),
        Command::Calibrate(args) => calibrate::run(args),
        Command::Run(args) => run::run(args),
        Command::Demo(args) => demo::run(args),
        Command::Serve(args) => {
            init_logs();
            serve::serve(args)
        }
        Command::Fanout(args) => {
            init_logs();
            fanout::fanout(args)
        }
        Command::Load(args) => load::load(args),
        Command::Emulate(args) => emulate::run(args),
        Command::Vectors(cmd) => vectors::run(cmd),
        Command::Green(cmd) => green::run(cmd),
        Command::Completions { shell } => help::completions(shell),
        Command::Man { out_dir } => help::man(out_dir.as_deref()),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(err) => {
            eprintln!("error: {err:#}");
            ExitCode::FAILURE
        }
    }
}

/// The services' logs (`serve`, `fanout`) go through `tracing` to stderr; `TAILOR_LOG`
/// filters them as `RUST_LOG` does (default `info`), and `TAILOR_LOG_FORMAT=json` writes
/// one JSON object per line (with the request's span and its `x-request-id`) instead of
/// text.
fn init_logs() {
    let filter = tracing_subscriber::EnvFilter::try_from_env("TAILOR_LOG")
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("info"));
    let builder = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(io::stderr)
        .with_target(false)
        // A service whose stderr has gone away keeps serving (the default reports the
        // failed write with eprintln!, which panics on a closed stderr).
        .log_internal_errors(false);
    let json = std::env::var("TAILOR_LOG_FORMAT").is_ok_and(|f| f.eq_ignore_ascii_case("json"));
    let _ = if json {
        builder.json().with_current_span(true).try_init()
    } else {
        builder.with_ansi(interactive()).try_init()
    };
}

/// Runs `write` against FILE, or stdout when `out` is `None`.
pub(crate) fn write_output(
    out: Option<&Path>,
    write: impl FnOnce(&mut dyn Write) -> io::Result<()>,
) -> anyhow::Result<()> {
    match out {
        Some(path) => {
            let file =
                File::create(path).with_context(|| format!("cannot create {}", path.display()))?;
            let mut w = BufWriter::new(file);
            write(&mut w).with_context(|| format!("cannot write {}", path.display()))?;
            w.flush()
                .with_context(|| format!("cannot write {}", path.display()))?;
        }
        None => {
            let stdout = io::stdout();
            let mut w = stdout.lock();
            match write(&mut w).and_then(|()| w.flush()) {
                // A closed pipe (`| head`) is not an error worth reporting.
                Err(e) if e.kind() == io::ErrorKind::BrokenPipe => {}
                other => other.context("cannot write to stdout")?,
            }
        }
    }
    Ok(())
}

/// Tells on stderr what the machine did to a live run apart from the policy (steal time
/// and the hiccup meter, crates/bench/src/host.rs), and warns when a stall was long
/// enough to reach the tail.
pub(crate) fn report_host(host: Option<&tailor_core::HostStats>) {
    let Some(h) = host else { return };
    let steal = h
        .steal_ms
        .map_or("not reported".to_string(), |s| format!("{s:.0} ms"));
    eprintln!(
        "tailor: host: steal {steal}, longest hiccup {:.1} ms, {:.0} ms lost in hiccups over {} ms",
        h.max_hiccup_ms,
        h.hiccup_ms,
        tailor_bench::HICCUP_MS
    );
    if h.max_hiccup_ms >= 10.0 {
        eprintln!(
            "tailor: warning: the machine stalled a real-time thread for {:.0} ms; \
             latencies in that stretch include the stall",
            h.max_hiccup_ms
        );
    }
}

/// Whether progress lines should redraw in place (stderr is a terminal).
pub(crate) fn interactive() -> bool {
    io::stderr().is_terminal()
}

/// A path argument.
pub(crate) type PathArg = PathBuf;

/// The synthetic workload's spin loop: at `rate` iterations per microsecond if given,
/// else calibrated on this machine now. Says which on stderr, so that another process
/// can be given the same rate (calibrations vary by several percent from run to run on a
/// shared machine, which would make two processes' requests differ in length).
pub(crate) fn spinner(rate: Option<f64>) -> anyhow::Result<tailor_workloads::Spinner> {
    let spinner = match rate {
        Some(r) => {
            anyhow::ensure!(
                r.is_finite() && r > 0.0,
                "--spin-rate {r}: expected a positive number of iterations per microsecond"
            );
            tailor_workloads::Spinner::with_rate(r)
        }
        None => tailor_workloads::Spinner::calibrate(),
    };
    eprintln!(
        "tailor: spin loop at {:.3} iterations/us ({}; --spin-rate sets it)",
        spinner.iterations_per_us(),
        if rate.is_some() {
            "given"
        } else {
            "calibrated"
        }
    );
    Ok(spinner)
}

/// A `POLICY` of any family: the thread-pool policies of the FM paper, a work-stealing
/// one (tail-control paper), a heterogeneous-core one (dissertation ch. 5), or a DVFS one
/// (issue 42).
#[derive(Debug, Clone)]
pub(crate) enum AnyPolicy {
    Threads(tailor_core::Policy),
    Steal(tailor_core::StealPolicy),
    Hetero(tailor_core::HeteroPolicy),
    Dvfs(tailor_core::DvfsPolicy),
}

impl AnyPolicy {
    /// Parses any family; the DVFS, work-stealing and heterogeneous names are tried first.
    pub(crate) fn parse(spec: &str, tables: &tailor_core::Tables) -> anyhow::Result<AnyPolicy> {
        Ok(if tailor_core::DvfsPolicy::is_dvfs_policy(spec) {
            AnyPolicy::Dvfs(tailor_core::DvfsPolicy::parse(spec, tables.eetl.as_ref())?)
        } else if tailor_core::StealPolicy::is_steal_policy(spec) {
            AnyPolicy::Steal(tailor_core::StealPolicy::parse(
                spec,
                tables.tail_control.as_ref(),
            )?)
        } else if tailor_core::HeteroPolicy::is_hetero_policy(spec) {
            AnyPolicy::Hetero(tailor_core::HeteroPolicy::parse(
                spec,
                tables.eetl.as_ref(),
            )?)
        } else {
            AnyPolicy::Threads(tailor_core::Policy::parse(spec, tables)?)
        })
    }

    /// The thread-pool policy (SEQ as a placeholder for the other families, whose engines
    /// do not read it) and the work-stealing policy, if it is one.
    pub(crate) fn split(&self) -> (tailor_core::Policy, Option<tailor_core::StealPolicy>) {
        match self {
            AnyPolicy::Threads(p) => (p.clone(), None),
            AnyPolicy::Steal(p) => (tailor_core::Policy::Seq, Some(p.clone())),
            AnyPolicy::Hetero(_) | AnyPolicy::Dvfs(_) => (tailor_core::Policy::Seq, None),
        }
    }

    /// The policy's name, as summaries give it.
    pub(crate) fn name(&self) -> String {
        match self {
            AnyPolicy::Threads(p) => p.name(),
            AnyPolicy::Steal(p) => p.name().to_string(),
            AnyPolicy::Hetero(p) => p.name(),
            AnyPolicy::Dvfs(p) => p.name(),
        }
    }

    /// Like [`split`](Self::split), with the heterogeneous-core policy, if it is one.
    pub(crate) fn split_hetero(
        &self,
    ) -> (
        tailor_core::Policy,
        (
            Option<tailor_core::StealPolicy>,
            Option<tailor_core::HeteroPolicy>,
        ),
    ) {
        let (threads, steal) = self.split();
        let hetero = match self {
            AnyPolicy::Hetero(p) => Some(p.clone()),
            _ => None,
        };
        (threads, (steal, hetero))
    }
}
