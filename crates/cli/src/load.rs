//! `tailor load`: an open-loop HTTP load client for `tailor serve`, `tailor fanout` or any
//! HTTP service (shared/spec/http.md).

use std::time::Duration;

use anyhow::Context;
use clap::Args;
use tailor_core::{Arrivals, Demand, DemandModel};
use tailor_server::{LoadConfig, Target};
use tailor_workloads::search::{read_queries, QuerySpec};

use crate::bounds;
use crate::serve::io_runtime;
use crate::{write_output, PathArg};

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
