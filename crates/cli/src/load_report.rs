//! `tailor load`'s summary for people: counts, rates, the latency percentiles and the
//! generator's lateness.

use tailor_server::LoadSummary;

/// The summary for people: counts, rates, the latency percentiles and the generator's
/// lateness.
pub(crate) fn human_summary(s: &LoadSummary, target: &str) -> String {
    let l = &s.run.latency_ms;
    let g = &s.generator_lateness_ms;
    let mut out = format!(
        "{} requests to {target} at {} requests/s offered over {:.2} s\n",
        s.run.requests,
        if (s.run.rps - s.run.rps.round()).abs() < 1e-9 {
            format!("{:.0}", s.run.rps)
        } else {
            format!("{:.1}", s.run.rps)
        },
        s.duration_s
    );
    out += &format!(
        "  answers    {} 2xx, {} 503, {} other statuses; {} without an answer ({} timeouts)\n",
        s.run.completed, s.unavailable, s.errors, s.failed, s.timeouts
    );
    out += &format!("  achieved   {:.1} requests/s\n", s.achieved_rps);
    out += &format!(
        "  latency    p50 {} ms  p90 {} ms  p99 {} ms  p99.9 {} ms  max {} ms  mean {} ms\n",
        ms(l.p50),
        ms(l.p90),
        ms(l.p99),
        ms(l.p999),
        ms(l.max),
        ms(l.mean)
    );
    out += &format!(
        "             over {} measured 2xx answers (the first {} requests left out as warm-up), \
         from each request's intended send time\n",
        s.latency_histogram.as_ref().map_or(0, |h| h.count()),
        s.run.warmup
    );
    out += &format!(
        "  generator  late by p50 {} ms  p99 {} ms  max {} ms\n",
        ms(g.p50),
        ms(g.p99),
        ms(g.max)
    );
    out
}

/// A latency in ms with three significant digits.
fn ms(x: f64) -> String {
    if x >= 100.0 {
        format!("{x:.0}")
    } else if x >= 10.0 {
        format!("{x:.1}")
    } else if x >= 1.0 {
        format!("{x:.2}")
    } else {
        format!("{x:.3}")
    }
}
