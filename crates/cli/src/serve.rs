//! `tailor serve`: the runtime behind an HTTP server (shared/spec/http.md).
//!
//! Also the one-thread I/O runtime that `serve`, `fanout` and `load` share.

use std::sync::Arc;
use std::time::Duration;

use anyhow::Context;
use clap::Args;

use tailor_core::{Policy, Tables};
use tailor_runtime::{Runtime, RuntimeConfig};
use tailor_server::{ServeConfig, ServedWorkload};
use tailor_workloads::Workload;

use crate::bounds;
use crate::search::SearchArgs;
use crate::PathArg;

#[derive(Debug, Args)]
#[command(after_help = "Examples:
  tailor serve --workload search --policy fm --table fm-table.json
  tailor serve --workload synthetic:exp:5 --policy seq --listen 127.0.0.1:0")]
pub(crate) struct ServeArgs {
    /// WORKLOAD: search (GET /search), or synthetic:DEMAND[:SPEEDUP] (GET|POST /work).
    #[arg(long)]
    workload: String,
    /// POLICY, as for `tailor run`.
    #[arg(long)]
    policy: String,
    /// Table files for fm and adaptive; repeat to give both.
    #[arg(long = "table")]
    tables: Vec<PathArg>,
    /// Address to listen on; port 0 picks a free one (the address is printed).
    #[arg(long, default_value = "127.0.0.1:8080")]
    listen: String,
    /// Cores the policy plans for (default: the machine's).
    #[arg(long, value_parser = bounds::THREADS)]
    cores: Option<usize>,
    /// Self-scheduling quantum, e.g. 5ms (default: the FM table's step when one is given,
    /// else 5ms).
    #[arg(long, value_name = "DURATION", value_parser = bounds::QUANTUM)]
    quantum: Option<f64>,
    /// Worker threads for policies with a pool, all but FM (default: one per core).
    #[arg(long, value_parser = bounds::THREADS)]
    workers: Option<usize>,
    /// Requests that may wait for admission; beyond it the server answers 503 at once.
    /// Keep it well below --max-connections: each connection carries at most one request
    /// at a time, so a bound at or above it is never reached.
    #[arg(long, default_value_t = 128, value_parser = bounds::COUNT)]
    queue_bound: usize,
    /// Connections open at once; more wait in the listen backlog.
    #[arg(long, default_value_t = 1024, value_parser = bounds::CONNECTIONS)]
    max_connections: usize,
    /// Request bodies over this many bytes get 413.
    #[arg(long, default_value_t = 65536, value_parser = bounds::BODY_BYTES)]
    max_body_bytes: usize,
    /// How long accepted requests may run after SIGINT or SIGTERM before the rest are
    /// cancelled (each still gets an answer, 503).
    #[arg(long, value_name = "DURATION", default_value = "10s", value_parser = bounds::duration0)]
    drain: Duration,
    /// How long a request may take from its head's arrival to its answer (body, wait and
    /// work); past it the request is cancelled and answered 504.
    #[arg(long, value_name = "DURATION", default_value = "60s", value_parser = bounds::duration)]
    request_timeout: Duration,
    /// How long a request body may send nothing before it is given up (408) and its
    /// connection closed.
    #[arg(long, value_name = "DURATION", default_value = "5s", value_parser = bounds::duration)]
    body_timeout: Duration,
    /// How long a request head may take to arrive, from the connection's opening, before
    /// it is answered 408 and the connection closed (a kept-alive connection idle this
    /// long is closed).
    #[arg(long, value_name = "DURATION", default_value = "10s", value_parser = bounds::duration)]
    header_timeout: Duration,
    /// Seed of the work drawn for /work requests without a body (the same seed gives
    /// `tailor run` the same works, in arrival order).
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// Synthetic workload: the spin loop's iterations per microsecond, as an earlier run
    /// printed it (default: calibrated now).
    #[arg(long, value_parser = bounds::SPIN_RATE)]
    spin_rate: Option<f64>,
    /// Stall at random, as a noisy replica does: exponential gaps of rate
    /// RATE_PER_S between stalls (seeded by --seed), each LENGTH_MS long, as the
    /// simulator's --noise; every request waits at its next unit boundary while one lasts.
    #[arg(long, value_name = "RATE_PER_S:LENGTH_MS", value_parser = crate::simulate_fanout::parse_noise)]
    noise: Option<tailor_core::Noise>,
    /// Served requests whose unit times GET /profile keeps (0 keeps none and times
    /// nothing).
    #[arg(long, default_value_t = tailor_runtime::DEFAULT_PROFILE_WINDOW, value_parser = bounds::COUNT0)]
    profile_window: usize,
    /// Upper bounds of /metrics' latency and queue-wait histogram buckets, increasing,
    /// e.g. 1ms,10ms,100ms,1s (default: 1, 2 and 5 per decade from 100us to 10s).
    #[arg(long, value_name = "DURATION,...", value_parser = parse_buckets)]
    latency_buckets: Option<Buckets>,
    /// FM only: re-plan the table from the served requests (the --profile-window last
    /// ones) this often, e.g. 10s or 1m, off the request path; a new table swaps in only
    /// if it simulates no worse than the one in use (docs/cli.md, "Re-planning").
    #[arg(long, value_name = "DURATION", value_parser = parse_period)]
    replan_every: Option<Duration>,
    /// The fewest served requests a re-plan is made from.
    #[arg(long, default_value_t = tailor_server::replan::DEFAULT_MIN_REQUESTS, value_parser = bounds::COUNT, requires = "replan_every")]
    replan_min_requests: usize,
    #[command(flatten)]
    search: SearchArgs,
}

/// Histogram bucket bounds in seconds, from `--latency-buckets`.
#[derive(Debug, Clone)]
pub(crate) struct Buckets(Vec<f64>);

fn parse_buckets(text: &str) -> Result<Buckets, String> {
    let bounds = text
        .split(',')
        .map(|b| {
            crate::concepts::parse_time(b)
                .map(|d| d.as_secs_f64())
                .map_err(|e| format!("{:?}: {e}", bounds::clip(b)))
        })
        .collect::<Result<Vec<f64>, String>>()?;
    tailor_server::check_buckets(&bounds)?;
    Ok(Buckets(bounds))
}

/// A re-planning period: a humantime duration (`10s`, `1m 30s`) of at least 100 ms.
fn parse_period(text: &str) -> Result<Duration, String> {
    let d =
        crate::concepts::parse_time(text).map_err(|e| format!("{:?}: {e}", bounds::clip(text)))?;
    if d < Duration::from_millis(100) || d > Duration::from_secs(86_400) {
        return Err(format!(
            "{:?}: expected a period from 100ms to 24h",
            bounds::clip(text)
        ));
    }
    Ok(d)
}

/// A tokio runtime for the I/O side: one worker thread, so the cores stay with the
/// compute. `realtime` makes it a real-time thread where allowed, as the load
/// generator's is (the load client's, so that a busy machine does not delay when it
/// notices an answer); otherwise it keeps the default priority.
pub(crate) fn io_runtime(realtime: bool) -> anyhow::Result<tokio::runtime::Runtime> {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .thread_name("tailor-io")
        .on_thread_start(move || {
            if realtime {
                tailor_bench::prepare_generator_thread();
            }
        })
        .enable_all()
        .build()
        .context("cannot start the I/O runtime")
}

pub(crate) fn serve(args: ServeArgs) -> anyhow::Result<()> {
    if args.queue_bound >= args.max_connections {
        tracing::warn!(
            "--queue-bound {} is not below --max-connections {}: the queue \
             cannot fill, so overload waits in the listen backlog instead of getting 503s",
            args.queue_bound,
            args.max_connections
        );
    }
    anyhow::ensure!(args.queue_bound >= 1, "--queue-bound must be at least 1");
    let tables = Tables::read(&args.tables)?;
    let policy = Policy::parse(&args.policy, &tables)?;
    if args.replan_every.is_some() {
        anyhow::ensure!(
            matches!(policy, Policy::Fm { .. }),
            "--replan-every re-plans FM tables; the policy is {}",
            policy.name()
        );
        anyhow::ensure!(
            args.profile_window >= args.replan_min_requests,
            "--replan-every plans from the --profile-window last requests ({}), fewer than \
             --replan-min-requests ({}): no plan could ever be made",
            args.profile_window,
            args.replan_min_requests
        );
    }
    let cores = args
        .cores
        .unwrap_or_else(|| std::thread::available_parallelism().map_or(1, |n| n.get()));
    let workload = match Workload::parse(&args.workload)? {
        Workload::Search => ServedWorkload::Search(args.search.prepare()?.index),
        Workload::BlackScholes { .. } | Workload::Asian { .. } => anyhow::bail!(
            "--workload: `tailor serve` serves search and synthetic work; black-scholes and \
             asian run with `tailor run`"
        ),
        Workload::Synthetic { demand, shape } => ServedWorkload::Synthetic {
            demand,
            shape,
            spinner: Arc::new(crate::spinner(args.spin_rate)?),
            seed: args.seed,
        },
    };
    let mut rc = RuntimeConfig::new(cores, policy.clone());
    rc.quantum_ms = bounds::quantum_ms(args.quantum, &tables);
    rc.workers = args.workers;
    rc.queue_bound = args.queue_bound;
    rc.profile_window = args.profile_window;
    rc.noise = args.noise.map(|n| (n, args.seed));
    let quantum_ms = rc.quantum_ms;
    let runtime = Runtime::start(rc)?;
    tracing::info!("{}", runtime.boost_mode());
    tracing::info!("self-scheduling quantum {quantum_ms} ms");
    if let Some(every) = args.replan_every {
        tracing::info!(
            "re-planning the FM table every {} from the {} last served requests",
            humantime::format_duration(every),
            args.profile_window
        );
    }
    if let Some(n) = args.noise {
        tracing::info!(
            "noise: stalls of {} ms start {} times a second",
            n.length_ms,
            n.rate_per_s
        );
    }
    let config = ServeConfig {
        max_body_bytes: args.max_body_bytes,
        max_connections: args.max_connections,
        drain: args.drain,
        request_timeout: args.request_timeout,
        body_timeout: args.body_timeout,
        header_timeout: args.header_timeout,
        shard: args
            .search
            .shard()
            .map(|s| format!("{}/{}", s.index, s.count)),
        latency_buckets_s: args.latency_buckets.map_or_else(
            || tailor_server::DEFAULT_LATENCY_BUCKETS_S.to_vec(),
            |b| b.0,
        ),
        replan: args.replan_every.map(|every| tailor_server::ReplanConfig {
            every,
            min_requests: args.replan_min_requests,
        }),
    };
    let io = io_runtime(false)?;
    let report = io.block_on(async {
        let (listener, addr) = tailor_server::bind(&args.listen)
            .await
            .with_context(|| format!("cannot listen on {}", args.listen))?;
        // Watch for signals before saying where we listen: a caller that reads that line
        // and signals at once must find the handler in place, not the default action.
        let stop = tailor_server::shutdown_signal();
        tracing::info!(
            "serving {} with {} on http://{addr} (SIGINT or SIGTERM stops it)",
            args.workload,
            policy.name()
        );
        tailor_server::serve(listener, runtime, cores, workload, config, stop)
            .await
            .context("the server failed")
    })?;
    let m = &report.runtime;
    tracing::info!(
        "stopped{}; {} completed, {} failed, {} cancelled, {} refused; answers: {} 2xx, \
         {} 4xx, {} 5xx",
        if report.cancelled_at_deadline {
            " (the drain deadline passed, the rest were cancelled)"
        } else {
            ""
        },
        m.completed,
        m.failed,
        m.cancelled,
        m.rejected,
        report.answers[0],
        report.answers[1],
        report.answers[2]
    );
    Ok(())
}
