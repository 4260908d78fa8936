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

const LOAD_EXAMPLES: &str = "\
Examples:
  tailor load -R 200 -d 10s -c 8 http://127.0.0.1:8000/
  tailor load -R 500 -n 20000 --format json --hgrm latency.hgrm http://127.0.0.1:8080/search?q=tail
  tailor load -R 50 -d 30s -m POST -H 'Content-Type: application/json' --body query.json http://127.0.0.1:9200/idx/_search
  tailor load -R 100 -d 1m --targets targets.txt
  tailor load --url http://127.0.0.1:8080 --queries queries.jsonl -R 300 -n 5000";

#[derive(Debug, Args)]
#[command(after_help = LOAD_EXAMPLES)]
pub(crate) struct LoadArgs {
    /// Any HTTP service: send every request to this URL (http://HOST:PORT/PATH?QUERY). Only
    /// the run's requests reach it: no health check, no metrics scrape.
    #[arg(value_name = "URL", conflicts_with_all = ["url", "queries", "raw", "work", "targets"])]
    target: Option<String>,
    /// A tailor server's base URL, such as http://127.0.0.1:8080 (its /healthz is checked,
    /// and its /metrics read before and after); or any server's with --raw.
    #[arg(long)]
    url: Option<String>,
    /// Offered load, requests per second (as wrk2's -R).
    #[arg(short = 'R', long = "rate", visible_alias = "rps", value_parser = bounds::RPS)]
    rps: Option<f64>,
    /// Send for this long (10s, 500ms, 2m): every arrival drawn before it.
    #[arg(short = 'd', long, value_parser = bounds::duration, conflicts_with = "requests")]
    duration: Option<Duration>,
    /// Send this many requests (phased arrivals fix their own count).
    #[arg(short = 'n', long, value_parser = bounds::REQUESTS)]
    requests: Option<usize>,
    /// With URL: the method.
    #[arg(short = 'm', long, default_value = "GET")]
    method: String,
    /// With URL: a header to send, `Name: value`; repeat it for more.
    #[arg(short = 'H', long = "header", value_name = "HEADER")]
    headers: Vec<String>,
    /// With URL: send this file's bytes as each request's body (content-type
    /// application/json unless a header says otherwise).
    #[arg(long, value_name = "FILE")]
    body: Option<PathArg>,
    /// Any HTTP service: the requests in vegeta's HTTP format (`METHOD URL`, header lines,
    /// an optional `@FILE` body, a blank line between targets), drawn uniformly per
    /// request; every URL on one host.
    #[arg(long, value_name = "FILE", conflicts_with_all = ["url", "queries", "raw", "work"])]
    targets: Option<PathArg>,
    /// Any HTTP service: replay these requests, each at its own time: JSON lines as --raw
    /// takes them, each with "at_ms" (its send time from the start) and optionally
    /// "headers". The arrivals and the rate are the replay's; give the server's URL.
    #[arg(long, value_name = "FILE", conflicts_with_all = ["queries", "raw", "work", "targets", "rps", "duration", "requests", "arrivals"])]
    replay: Option<PathArg>,
    /// Print the requests that --raw or --opensearch would send, as --raw's JSON lines (one
    /// per line of the file, in order), and exit without sending any: to see the DSL, or to
    /// replay the same searches with another tool.
    #[arg(long, conflicts_with_all = ["target", "url", "rps", "requests", "duration"])]
    print_requests: bool,
    /// ARRIVALS: poisson, lognormal:SD_MS, trace:PATH, phases:RPS*COUNT,...
    #[arg(long, default_value = "poisson")]
    arrivals: String,
    /// For a search server: the queries, either a file `tailor` generated (JSON lines,
    /// such as ~/.cache/tailor/queries-*.jsonl) or one query text per line.
    #[arg(long, value_name = "FILE")]
    queries: Option<PathArg>,
    /// With --url, any HTTP service: JSON lines of requests, each {"method": "POST",
    /// "path": "/index/_search", "body": {...}} ("body" optional, sent as JSON; a string is
    /// sent as its text), drawn uniformly per request. No /healthz check; the server's CPU
    /// is not measured.
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
    /// Seed of the arrivals and of the requests drawn.
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// Keep-alive connections open at most.
    #[arg(short = 'c', long, default_value_t = 64, value_parser = bounds::CONNECTIONS)]
    connections: usize,
    /// A request unanswered this long after its intended send time counts as a timeout
    /// (30s, 500ms).
    #[arg(long, value_name = "DURATION", default_value = "30s", value_parser = bounds::duration)]
    timeout: Duration,
    /// Warm-up requests left out of the statistics (default: 5%).
    #[arg(long, value_parser = bounds::COUNT0)]
    warmup: Option<usize>,
    /// The summary's format: human (a few lines for people) or json (one JSON object, the
    /// run summary `tailor run` prints, with the load's own fields).
    #[arg(long, value_enum, default_value_t = LoadFormat::Human)]
    format: LoadFormat,
    /// Write the measured latencies' percentile spectrum here, in HdrHistogram's text
    /// format (.hgrm, values in ms), for HdrHistogram's plotter or wrk2-style tooling.
    #[arg(long, value_name = "FILE")]
    hgrm: Option<PathArg>,
    /// Write each measured request's latency here (ms, one per line, in the order of the
    /// requests' intended send times): the values the summary's percentiles come from, to
    /// merge runs or compute any other statistic.
    #[arg(long, value_name = "FILE")]
    latencies: Option<PathArg>,
}

/// How `tailor load` prints its summary.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub(crate) enum LoadFormat {
    /// Lines for people.
    Human,
    /// One JSON object.
    Json,
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
    let any_service = args.target.is_some() || args.targets.is_some();
    let default_method = args.method.eq_ignore_ascii_case("GET");
    anyhow::ensure!(
        args.replay.is_none() || (default_method && args.headers.is_empty() && args.body.is_none()),
        "--replay's lines carry their own method, headers and body: give no --method, \
         --header or --body with it"
    );
    anyhow::ensure!(
        args.targets.is_none() || default_method,
        "--targets gives each target's method: give no --method with it"
    );
    // Refuse an unwritable --hgrm or --latencies before the run, not after it.
    for (flag, path) in [("--hgrm", &args.hgrm), ("--latencies", &args.latencies)] {
        if let Some(path) = path {
            std::fs::File::create(path)
                .with_context(|| format!("{flag}: cannot create {}", path.display()))?;
        }
    }
    if let Some(path) = &args.replay {
        let text = std::fs::read_to_string(path)
            .with_context(|| format!("cannot read {}", path.display()))?;
        let replay = tailor_server::RawRequest::parse_replay(&text, &path.display().to_string())
            .map_err(anyhow::Error::msg)?;
        let url = args
            .target
            .clone()
            .or_else(|| args.url.clone())
            .with_context(|| {
                "--replay needs the server: give its URL (http://HOST:PORT) or --url"
            })?;
        let (base, path) = tailor_server::split_url(&url).map_err(anyhow::Error::msg)?;
        anyhow::ensure!(
            path == "/",
            "--replay's lines carry their own paths: give the server as http://HOST:PORT/, \
             not {}",
            bounds::clip(&url)
        );
        return send(&args, base, Target::Replay(replay), 0.0, 0, &url);
    }
    anyhow::ensure!(
        any_service || (args.method.eq_ignore_ascii_case("GET") && args.headers.is_empty()),
        "--method and --header go with a URL or --targets"
    );
    anyhow::ensure!(
        args.body.is_none() || args.target.is_some(),
        "--body goes with a URL"
    );
    let (base, target) = if let Some(url) = &args.target {
        let body = match &args.body {
            Some(path) => std::fs::read(path)
                .with_context(|| format!("--body: cannot read {}", path.display()))?,
            None => Vec::new(),
        };
        let (base, request) =
            tailor_server::RawRequest::to_url(url, &args.method, &args.headers, body)
                .map_err(anyhow::Error::msg)?;
        (Some(base), Target::Raw(vec![request]))
    } else if let Some(path) = &args.targets {
        let text = std::fs::read_to_string(path)
            .with_context(|| format!("cannot read {}", path.display()))?;
        let (base, mut requests) =
            tailor_server::RawRequest::parse_targets(&text, path).map_err(anyhow::Error::msg)?;
        let extra = args
            .headers
            .iter()
            .map(|h| tailor_server::parse_header(h, "--header"))
            .collect::<Result<Vec<_>, _>>()
            .map_err(anyhow::Error::msg)?;
        for r in &mut requests {
            r.headers.extend(extra.iter().cloned());
        }
        (Some(base), Target::Raw(requests))
    } else {
        (args.url.clone(), tailor_target(&args)?)
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
    let Some(url) = base else {
        anyhow::bail!("give the URL to load (any HTTP service), or --url for a tailor server");
    };
    let Some(rps) = args.rps else {
        anyhow::bail!("give the offered load: -R/--rate REQUESTS_PER_SECOND");
    };
    let arrivals = Arrivals::parse(&args.arrivals)?;
    let requests = match (args.requests, args.duration) {
        (Some(n), _) => n,
        (None, Some(_)) => 0,
        (None, None) if arrivals.fixed_count().is_some() => 0,
        (None, None) => {
            anyhow::bail!("give the run's length: -d/--duration (10s) or -n/--requests")
        }
    };
    if args.requests.is_some() {
        bounds::ensure_duration(requests, rps)?;
    }
    anyhow::ensure!(
        url.starts_with("http://"),
        "--url {}: expected http://HOST:PORT",
        bounds::clip(&url)
    );
    let shown = args.target.clone().unwrap_or_else(|| url.clone());
    send(&args, url, target, rps, requests, &shown)
}

/// Runs the load and prints its summary (and `--hgrm`, `--latencies`).
fn send(
    args: &LoadArgs,
    url: String,
    target: Target,
    rps: f64,
    requests: usize,
    shown: &str,
) -> anyhow::Result<()> {
    let timeout = args.timeout;
    let cfg = LoadConfig {
        url,
        target,
        arrivals: Arrivals::parse(&args.arrivals)?,
        rps,
        requests,
        duration: args.duration,
        seed: args.seed,
        connections: args.connections,
        timeout,
        warmup: args.warmup,
        keep_latencies: args.latencies.is_some(),
    };
    let summary = io_runtime(true)?.block_on(tailor_server::run_load(&cfg))?;
    crate::report_host(summary.run.host.as_ref());
    if let Some(path) = &args.hgrm {
        let histogram = summary
            .latency_histogram
            .as_ref()
            .expect("run_load keeps it");
        write_output(Some(path), |w| histogram.write_hgrm(w))?;
    }
    if let Some(path) = &args.latencies {
        write_output(Some(path), |w| {
            for ms in &summary.measured_latencies_ms {
                writeln!(w, "{ms:.3}")?;
            }
            Ok(())
        })?;
    }
    write_output(None, |w| match args.format {
        LoadFormat::Json => {
            serde_json::to_writer(&mut *w, &summary)?;
            writeln!(w)
        }
        LoadFormat::Human => write!(w, "{}", crate::load_report::human_summary(&summary, shown)),
    })
    .context("cannot print the summary")
}

/// The requests for a tailor server (`--queries`, `--work`, or none) or `--raw`'s.
fn tailor_target(args: &LoadArgs) -> anyhow::Result<Target> {
    Ok(match (&args.queries, &args.raw) {
        (Some(path), _) if args.opensearch.is_some() => {
            let index = args.opensearch.as_deref().unwrap_or_default();
            anyhow::ensure!(
                !index.is_empty() && index.bytes().all(|b| b.is_ascii_graphic() && b != b'/'),
                "--opensearch {:?}: expected an index name",
                bounds::clip(index)
            );
            let specs = read_queries(path)
                .map_err(anyhow::Error::msg)
                .with_context(|| {
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
    })
}
