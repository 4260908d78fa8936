//! `tailor serve` and `tailor load`: the runtime behind an HTTP server, and an open-loop
//! HTTP load client (shared/spec/http.md).

use std::sync::Arc;
use std::time::Duration;

use anyhow::Context;
use clap::Args;

use tailor_core::{Arrivals, Demand, DemandModel, Policy, Tables};
use tailor_runtime::{Runtime, RuntimeConfig};
use tailor_server::{LoadConfig, ServeConfig, ServedWorkload, Target};
use tailor_workloads::search::{read_queries, QuerySpec};
use tailor_workloads::Workload;

use crate::bounds;
use crate::search::SearchArgs;
use crate::{write_output, PathArg};

#[derive(Debug, Args)]
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
    /// Self-scheduling quantum in ms (default: the FM table's step when one is given, else 5).
    #[arg(long, value_parser = bounds::QUANTUM_MS)]
    quantum_ms: Option<f64>,
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
    /// Seconds accepted requests may run after SIGINT or SIGTERM before the rest are
    /// cancelled (each still gets an answer, 503).
    #[arg(long, default_value_t = 10.0, value_parser = bounds::SECONDS0)]
    drain_s: f64,
    /// Seconds a request may take from its head's arrival to its answer (body, wait
    /// and work); past it the request is cancelled and answered 504.
    #[arg(long, default_value_t = 60.0, value_parser = bounds::SECONDS)]
    request_timeout_s: f64,
    /// Seconds a request body may send nothing before it is given up (408) and its
    /// connection closed.
    #[arg(long, default_value_t = 5.0, value_parser = bounds::SECONDS)]
    body_timeout_s: f64,
    /// Seconds a request head may take to arrive, from the connection's opening, before it
    /// is answered 408 and the connection closed (a kept-alive connection idle this long
    /// is closed).
    #[arg(long, default_value_t = 10.0, value_parser = bounds::SECONDS)]
    header_timeout_s: f64,
    /// Seed of the work drawn for /work requests without a body (the same seed gives
    /// `tailor run` the same works, in arrival order).
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// Synthetic workload: the spin loop's iterations per microsecond, as an earlier run
    /// printed it (default: calibrated now).
    #[arg(long, value_parser = bounds::SPIN_RATE)]
    spin_rate: Option<f64>,
    /// Stall at random, as a noisy replica does (issue #24): exponential gaps of rate
    /// RATE_PER_S between stalls (seeded by --seed), each LENGTH_MS long, as the
    /// simulator's --noise; every request waits at its next unit boundary while one lasts.
    #[arg(long, value_name = "RATE_PER_S:LENGTH_MS", value_parser = crate::simulate_fanout::parse_noise)]
    noise: Option<tailor_core::Noise>,
    /// Served requests whose unit times GET /profile keeps (0 keeps none and times
    /// nothing).
    #[arg(long, default_value_t = tailor_runtime::DEFAULT_PROFILE_WINDOW, value_parser = bounds::COUNT0)]
    profile_window: usize,
    /// Upper bounds of /metrics' latency and queue-wait histogram buckets, in ms,
    /// increasing (default: 1, 2 and 5 per decade from 0.1 ms to 10 s).
    #[arg(long, value_name = "MS,MS,...", value_parser = parse_buckets_ms)]
    latency_buckets_ms: Option<Buckets>,
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

/// Histogram bucket bounds in seconds, from `--latency-buckets-ms`.
#[derive(Debug, Clone)]
pub(crate) struct Buckets(Vec<f64>);

fn parse_buckets_ms(text: &str) -> Result<Buckets, String> {
    let bounds = text
        .split(',')
        .map(|b| {
            b.trim()
                .parse::<f64>()
                .map(|ms| ms / 1000.0)
                .map_err(|_| format!("{:?} is not a number of ms", bounds::clip(b)))
        })
        .collect::<Result<Vec<f64>, String>>()?;
    tailor_server::check_buckets(&bounds)?;
    Ok(Buckets(bounds))
}

/// A re-planning period: a humantime duration (`10s`, `1m 30s`) of at least 100 ms.
fn parse_period(text: &str) -> Result<Duration, String> {
    let d = humantime::parse_duration(text).map_err(|e| {
        format!(
            "{:?}: {e} (expected a duration such as 10s or 1m)",
            bounds::clip(text)
        )
    })?;
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
    anyhow::ensure!(
        args.drain_s.is_finite() && (0.0..=86_400.0).contains(&args.drain_s),
        "--drain-s must be a number of seconds from 0 to 86400"
    );
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
    rc.quantum_ms = bounds::quantum_ms(args.quantum_ms, &tables);
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
        drain: Duration::from_secs_f64(args.drain_s),
        request_timeout: Duration::from_secs_f64(args.request_timeout_s),
        body_timeout: Duration::from_secs_f64(args.body_timeout_s),
        header_timeout: Duration::from_secs_f64(args.header_timeout_s),
        shard: args
            .search
            .shard()
            .map(|s| format!("{}/{}", s.index, s.count)),
        latency_buckets_s: args.latency_buckets_ms.map_or_else(
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
        tracing::info!(
            "serving {} with {} on http://{addr} (SIGINT or SIGTERM stops it)",
            args.workload,
            policy.name()
        );
        tailor_server::serve(
            listener,
            runtime,
            cores,
            workload,
            config,
            tailor_server::shutdown_signal(),
        )
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

#[derive(Debug, Args)]
pub(crate) struct LoadArgs {
    /// The server's base URL, such as http://127.0.0.1:8080.
    #[arg(long, required_unless_present = "print_requests")]
    url: Option<String>,
    /// Requests per second.
    #[arg(long, value_parser = bounds::RPS, required_unless_present = "print_requests")]
    rps: Option<f64>,
    /// Requests in the run (phases fix their own count).
    #[arg(long, value_parser = bounds::REQUESTS, required_unless_present = "print_requests")]
    requests: Option<usize>,
    /// Print the requests that --raw or --opensearch would send, as --raw's JSON lines (one
    /// per line of the file, in order), and exit without sending any: to see the DSL, or to
    /// replay the same searches with another tool.
    #[arg(long, conflicts_with_all = ["url", "rps", "requests"])]
    print_requests: bool,
    /// ARRIVALS: poisson, lognormal:SD_MS, trace:PATH, phases:RPS*COUNT,...
    #[arg(long, default_value = "poisson")]
    arrivals: String,
    /// For a search server: the queries, either a file `tailor` generated (JSON lines,
    /// such as ~/.cache/tailor/queries-*.jsonl) or one query text per line.
    #[arg(long, value_name = "FILE")]
    queries: Option<PathArg>,
    /// Any HTTP service, not only tailor's: JSON lines of requests, each
    /// {"method": "POST", "path": "/index/_search", "body": {...}} ("body" optional, sent
    /// as JSON; a string is sent as its text), drawn uniformly per request. No /healthz
    /// check; the server's CPU is not measured.
    #[arg(long, value_name = "FILE", conflicts_with = "queries")]
    raw: Option<PathArg>,
    /// For a synthetic server: send POST /work {"work_ms": X} with X drawn here from
    /// DEMAND (as in synthetic:DEMAND, e.g. exp:5), instead of an empty body the server
    /// draws for. Repeat it once per --arrivals phase to change the demand from phase to
    /// phase (a drift); each phase's latencies are reported under "phases".
    #[arg(long = "work", value_name = "DEMAND", conflicts_with_all = ["queries", "raw"])]
    work: Vec<String>,
    /// With --queries (a file `tailor` generated): send each query as an OpenSearch or
    /// Elasticsearch `_search` on this index instead (POST
    /// /INDEX/_search?request_cache=false, the body from the query's kind; docs/cli.md).
    #[arg(long, value_name = "INDEX", requires = "queries")]
    opensearch: Option<String>,
    /// Seed of the arrivals and of the queries drawn.
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// Keep-alive connections open at most.
    #[arg(long, default_value_t = 64, value_parser = bounds::CONNECTIONS)]
    connections: usize,
    /// Seconds before an unanswered request counts as a timeout.
    #[arg(long, default_value_t = 30.0, value_parser = bounds::SECONDS)]
    timeout_s: f64,
    /// Warm-up requests left out of the statistics (default: 5%).
    #[arg(long, value_parser = bounds::COUNT0)]
    warmup: Option<usize>,
}

/// Reads `--raw`: one request per JSON line (`tailor_server::RawRequest::parse_lines`).
fn read_raw_file(path: &std::path::Path) -> anyhow::Result<Vec<tailor_server::RawRequest>> {
    let text =
        std::fs::read_to_string(path).with_context(|| format!("cannot read {}", path.display()))?;
    tailor_server::RawRequest::parse_lines(&text, &path.display().to_string())
        .map_err(anyhow::Error::msg)
}

/// Reads `--queries`: tailor's generated JSON lines, or one query text per line.
fn read_query_file(path: &std::path::Path) -> anyhow::Result<Vec<(String, u8, usize)>> {
    let text =
        std::fs::read_to_string(path).with_context(|| format!("cannot read {}", path.display()))?;
    let first = text.lines().find(|l| !l.trim().is_empty()).unwrap_or("");
    let queries: Vec<(String, u8, usize)> = if first.trim_start().starts_with('{') {
        read_queries(path)
            .map_err(anyhow::Error::msg)?
            .iter()
            .map(QuerySpec::http_params)
            .collect()
    } else {
        text.lines()
            .map(str::trim)
            .filter(|l| !l.is_empty())
            .map(|l| (l.to_string(), 0, tailor_workloads::search::TOP_K))
            .collect()
    };
    anyhow::ensure!(!queries.is_empty(), "{}: no queries", path.display());
    Ok(queries)
}

pub(crate) fn load(args: LoadArgs) -> anyhow::Result<()> {
    let target =
        match (&args.queries, &args.raw) {
            (Some(path), _) if args.opensearch.is_some() => {
                let index = args.opensearch.as_deref().unwrap_or_default();
                anyhow::ensure!(
                    !index.is_empty() && index.bytes().all(|b| b.is_ascii_graphic() && b != b'/'),
                    "--opensearch {:?}: expected an index name",
                    bounds::clip(index)
                );
                let specs = read_queries(path).map_err(anyhow::Error::msg).with_context(|| {
                "--opensearch needs a query file tailor generated (JSON lines of query kinds)"
            })?;
                let path = format!("/{index}/_search?request_cache=false");
                Target::Raw(
                    specs
                        .iter()
                        .map(|q| {
                            tailor_server::RawRequest::json_post(path.clone(), &q.opensearch_body())
                        })
                        .collect(),
                )
            }
            (Some(path), _) => Target::Search(read_query_file(path)?),
            (None, Some(path)) => Target::Raw(read_raw_file(path)?),
            (None, None) if args.work.is_empty() => Target::Work,
            (None, None) => Target::DrawnWork(
                args.work
                    .iter()
                    .map(|spec| {
                        Demand::parse(spec)
                            .and_then(|d| DemandModel::new(d, None))
                            .with_context(|| format!("--work {}", bounds::clip(spec)))
                    })
                    .collect::<anyhow::Result<_>>()?,
            ),
        };
    if args.print_requests {
        let Target::Raw(requests) = &target else {
            anyhow::bail!(
                "--print-requests needs --raw FILE, or --opensearch INDEX with --queries FILE"
            );
        };
        return write_output(None, |w| {
            for r in requests {
                serde_json::to_writer(&mut *w, &r.to_json_line())?;
                writeln!(w)?;
            }
            Ok(())
        })
        .context("cannot print the requests");
    }
    // clap requires these unless --print-requests is given.
    let (Some(url), Some(rps), Some(requests)) = (args.url.clone(), args.rps, args.requests) else {
        anyhow::bail!("--url, --rps and --requests are required");
    };
    bounds::ensure_duration(requests, rps)?;
    anyhow::ensure!(
        url.starts_with("http://"),
        "--url {}: expected http://HOST:PORT",
        bounds::clip(&url)
    );
    let cfg = LoadConfig {
        url,
        target,
        arrivals: Arrivals::parse(&args.arrivals)?,
        rps,
        requests,
        seed: args.seed,
        connections: args.connections,
        timeout: Duration::from_secs_f64(args.timeout_s),
        warmup: args.warmup,
    };
    let summary = io_runtime(true)?.block_on(tailor_server::run_load(&cfg))?;
    eprintln!(
        "tailor: {} answered 2xx, {} 503, {} other errors, {} without an answer ({} timeouts); \
         client CPU {:.0}% of the server's cores",
        summary.run.completed,
        summary.unavailable,
        summary.errors,
        summary.failed,
        summary.timeouts,
        100.0 * summary.client_cpu_utilization
    );
    crate::report_host(summary.run.host.as_ref());
    write_output(None, |w| {
        serde_json::to_writer(&mut *w, &summary)?;
        writeln!(w)
    })
    .context("cannot print the summary")
}
