//! Latency statistics and the run summary that the simulator and the live runtime print.
//!
//! Latencies are recorded in an HdrHistogram with 3 significant digits, in microseconds
//! (shared/DESIGN.md, "Measurement methodology"); the mean is kept exactly beside it.

use hdrhistogram::Histogram;
use serde::{Deserialize, Serialize};

use crate::arrivals::Phase;

/// The largest latency the histogram holds exactly: one hour, in microseconds. Larger
/// values are clamped to it and counted in [`LatencyRecorder::clamped`].
const MAX_LATENCY_US: u64 = 3_600_000_000;

/// Records latencies and answers percentiles.
#[derive(Debug, Clone)]
pub struct LatencyRecorder {
    histogram: Histogram<u64>,
    sum_ms: f64,
    max_ms: f64,
    clamped: u64,
}

impl Default for LatencyRecorder {
    fn default() -> Self {
        LatencyRecorder {
            histogram: Histogram::new_with_bounds(1, MAX_LATENCY_US, 3)
                .expect("constant histogram bounds are valid"),
            sum_ms: 0.0,
            max_ms: 0.0,
            clamped: 0,
        }
    }
}

impl LatencyRecorder {
    /// Records one latency in ms. Values below 1 us count as 1 us; values above an hour
    /// are clamped to an hour (and counted).
    pub fn record(&mut self, latency_ms: f64) {
        // Rounded to the nearest microsecond; `+ 0.5` then truncation avoids a libm call
        // on this hot path (the value is clamped to be positive first). NaN counts as
        // the largest value.
        let us = if latency_ms.is_nan() {
            f64::MAX
        } else {
            (latency_ms * 1000.0).max(1.0) + 0.5
        };
        if us > MAX_LATENCY_US as f64 + 0.5 {
            self.clamped += 1;
        }
        self.histogram
            .saturating_record((us as u64).min(MAX_LATENCY_US));
        self.sum_ms += latency_ms;
        self.max_ms = self.max_ms.max(latency_ms);
    }

    /// How many latencies were recorded.
    pub fn count(&self) -> u64 {
        self.histogram.len()
    }

    /// How many latencies exceeded the histogram's hour and were clamped.
    pub fn clamped(&self) -> u64 {
        self.clamped
    }

    /// The latency at quantile `q` in [0, 1], in ms (3 significant digits).
    pub fn quantile_ms(&self, q: f64) -> f64 {
        if self.count() == 0 {
            return 0.0;
        }
        self.histogram.value_at_quantile(q) as f64 / 1000.0
    }

    /// The fraction of latencies above `target_ms`.
    pub fn miss_ratio(&self, target_ms: f64) -> f64 {
        if self.count() == 0 {
            return 0.0;
        }
        let target_us = (target_ms * 1000.0).round().max(0.0) as u64;
        let within = self
            .histogram
            .iter_recorded()
            .filter(|v| v.value_iterated_to() <= target_us)
            .map(|v| v.count_at_value())
            .sum::<u64>();
        1.0 - within as f64 / self.count() as f64
    }

    /// Writes the percentile distribution in HdrHistogram's text format (`.hgrm`, as the
    /// Java library's `outputPercentileDistribution` with 5 ticks per half distance and
    /// values in ms prints it, and as wrk2 and HdrHistogram's plotter read it): a header,
    /// one `Value Percentile TotalCount 1/(1-Percentile)` line per step, and the
    /// `#[Mean ...]`, `#[Max ...]`, `#[Buckets ...]` footer.
    pub fn write_hgrm(&self, w: &mut dyn std::io::Write) -> std::io::Result<()> {
        writeln!(
            w,
            "{:>12} {:>14} {:>10} {:>14}\n",
            "Value", "Percentile", "TotalCount", "1/(1-Percentile)"
        )?;
        let mut total = 0u64;
        for v in self.histogram.iter_quantiles(5) {
            total += v.count_since_last_iteration();
            let value_ms = self.histogram.highest_equivalent(v.value_iterated_to()) as f64 / 1000.0;
            let q = v.quantile_iterated_to();
            if q < 1.0 {
                writeln!(
                    w,
                    "{value_ms:>12.3} {q:>2.12} {total:>10} {:>14.2}",
                    1.0 / (1.0 - q)
                )?;
            } else {
                writeln!(w, "{value_ms:>12.3} {q:>2.12} {total:>10}")?;
            }
        }
        let n = self.count();
        let (mean, sd) = if n == 0 {
            (0.0, 0.0)
        } else {
            (
                self.histogram.mean() / 1000.0,
                self.histogram.stdev() / 1000.0,
            )
        };
        let max = self.histogram.max() as f64 / 1000.0;
        let sub_buckets = (2 * 10u64.pow(u32::from(self.histogram.sigfig()))).next_power_of_two();
        writeln!(w, "#[Mean    = {mean:>12.3}, StdDeviation   = {sd:>12.3}]")?;
        writeln!(w, "#[Max     = {max:>12.3}, Total count    = {n:>12}]")?;
        writeln!(
            w,
            "#[Buckets = {:>12}, SubBuckets     = {sub_buckets:>12}]",
            self.histogram.buckets()
        )
    }

    /// The latency statistics of the spec's run summary.
    pub fn stats(&self) -> LatencyStats {
        let n = self.count();
        LatencyStats {
            mean: if n == 0 { 0.0 } else { self.sum_ms / n as f64 },
            p50: self.quantile_ms(0.5),
            p90: self.quantile_ms(0.9),
            p99: self.quantile_ms(0.99),
            p999: self.quantile_ms(0.999),
            max: self.max_ms,
        }
    }
}

/// Latency statistics in ms: the exact mean and maximum, and percentiles to 3
/// significant digits.
#[derive(Debug, Clone, Copy, PartialEq, Default, Serialize, Deserialize)]
pub struct LatencyStats {
    /// Mean latency.
    pub mean: f64,
    /// Median.
    pub p50: f64,
    /// 90th percentile.
    pub p90: f64,
    /// 99th percentile.
    pub p99: f64,
    /// 99.9th percentile.
    pub p999: f64,
    /// Largest latency.
    pub max: f64,
}

/// The run summary of shared/spec/formats.md, with tailor's added fields after the
/// spec's. One JSON object per run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RunSummary {
    /// `sim` or `live`.
    pub engine: String,
    /// The policy's name.
    pub policy: String,
    /// Cores (the sum of counts for `COUNT@SPEED` lists).
    pub cores: usize,
    /// The offered load in requests per second.
    pub rps: f64,
    /// Requests submitted.
    pub requests: usize,
    /// Requests that completed.
    pub completed: usize,
    /// Requests explicitly rejected.
    pub rejected: usize,
    /// Latency statistics over the measured (post-warm-up) requests.
    pub latency_ms: LatencyStats,
    /// The latency target, if one was given.
    pub target_ms: Option<f64>,
    /// The fraction of measured requests above the target, if one was given.
    pub miss_ratio: Option<f64>,
    /// Process CPU time / (wall time x cores) over the run.
    pub cpu_utilization: f64,
    /// Time-averaged number of threads serving requests.
    pub mean_threads: f64,
    /// Mean over measured requests of each request's time-averaged degree.
    pub mean_degree: f64,
    /// Requests excluded from the statistics as warm-up.
    pub warmup: usize,
    /// Mean degree of the shortest 5% of measured requests (by work).
    pub mean_degree_shortest_5pct: f64,
    /// Mean degree of the longest 5% of measured requests (by work).
    pub mean_degree_longest_5pct: f64,
    /// `degree_distribution[d - 1]`: the fraction of measured requests whose highest
    /// degree was d.
    pub degree_distribution: Vec<f64>,
    /// The random seed.
    pub seed: u64,
    /// For phased arrivals: each phase's latencies (warm-up included).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub phases: Vec<PhaseStats>,
    /// Work-stealing runs: requests serialized (marked not stealable by tail-control's
    /// pileup check, or at admission by its clairvoyant variant).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub serialized: Option<u64>,
    /// Runs with core speeds: energy per request (shared/spec/formats.md).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub energy: Option<EnergySummary>,
    /// Runs with core speeds: requests that moved to a faster core, per request.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub migrations_per_request: Option<f64>,
    /// Runs on DVFS cores: P-state changes of busy cores, per request.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub transitions_per_request: Option<f64>,
    /// Controlled runs (EETL, Reactive): each control epoch's measurement and output.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub epochs: Vec<EpochStats>,
    /// Live runs: steal time and hiccups over the whole run.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub host: Option<HostStats>,
    /// Fan-out runs: the shards a query goes to.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub shards: Option<usize>,
    /// Fan-out runs: the replicas of each shard.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub replicas: Option<usize>,
    /// Fan-out runs: the reissue policy.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reissue: Option<String>,
    /// Fan-out runs: reissued shard requests over shard requests.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reissue_rate: Option<f64>,
}

/// Energy of a run on heterogeneous cores, in the dissertation's model (ch. 5, §5.2.5;
/// docs/as2f.md): dynamic energy is each core type's busy time times its peak dynamic
/// power (a speed-1 core uses 1 per ms), static power is 20% of the chip's peak.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct EnergySummary {
    /// Energy of the whole run divided by the requests completed.
    pub per_request: f64,
    /// `per_request` over the baseline's.
    pub normalized: f64,
    /// What `normalized` divides by.
    pub baseline: String,
    /// The dynamic part of `per_request`.
    pub dynamic_per_request: f64,
    /// Of all busy core time, the share on each core type, slowest first.
    pub busy_share: Vec<f64>,
}

/// Live runs: what the machine did over a span of the run apart from the policy, from
/// the harness's hiccup meter (crates/bench/src/host.rs).
#[derive(Debug, Clone, Copy, PartialEq, Default, Serialize, Deserialize)]
pub struct HostStats {
    /// CPU time, summed over all CPUs, that the hypervisor ran others while this
    /// machine's CPUs had work (`steal` in /proc/stat), ms; `None` where not reported.
    pub steal_ms: Option<f64>,
    /// CPU time, summed over all CPUs, that other processes on this machine used (busy
    /// time in /proc/stat less this process's own), ms; `None` where not reported.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub other_cpu_ms: Option<f64>,
    /// The longest hiccup: how much later than asked the real-time meter woke, ms.
    pub max_hiccup_ms: f64,
    /// Time lost in hiccups over the meter's hiccup threshold (2 ms), summed, ms.
    pub hiccup_ms: f64,
    /// Synthetic live runs: the wall time the calibrated spin loop took over the time
    /// asked of it, over the whole run: the machine's speed on the work against the
    /// calibration (1.02: the work took 2% longer than nominal).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub work_scale: Option<f64>,
}

/// A span counts as noisy when other programs and the hypervisor together took more than
/// this share of its core time (steal plus other processes' CPU, over cores x wall).
pub const NOISE_CPU_SHARE: f64 = 0.05;
/// ... or when the hiccup meter's real-time thread stalled longer than this, ms.
pub const NOISE_STALL_MS: f64 = 10.0;

impl HostStats {
    /// Why a span of `wall_ms` on `cores` cores with these figures counts as noisy (see
    /// [`NOISE_CPU_SHARE`] and [`NOISE_STALL_MS`]), or `None` when it was quiet.
    pub fn noise(&self, wall_ms: f64, cores: usize) -> Option<String> {
        let core_ms = wall_ms.max(1.0) * cores.max(1) as f64;
        let steal = self.steal_ms.unwrap_or(0.0);
        let others = self.other_cpu_ms.unwrap_or(0.0);
        let share = (steal + others) / core_ms;
        if share > NOISE_CPU_SHARE {
            return Some(format!(
                "other programs and the hypervisor took {:.0}% of the cores (steal {steal:.0} \
                 ms, other processes {others:.0} ms, over {:.1} s)",
                100.0 * share,
                wall_ms / 1000.0
            ));
        }
        (self.max_hiccup_ms > NOISE_STALL_MS)
            .then(|| format!("the machine stalled for {:.0} ms", self.max_hiccup_ms))
    }
}

/// One control epoch of a controlled run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct EpochStats {
    /// When the epoch ended, ms.
    pub time_ms: f64,
    /// The p99 over the epoch's window of completed requests, ms.
    pub p99_ms: f64,
    /// The load estimate, requests per second.
    pub rps_estimate: f64,
    /// The thresholds set for the next epoch, ms, one per faster core type.
    pub thresholds_ms: Vec<f64>,
}

/// One load phase's latencies, for `phases:` arrivals (the FM paper's load-variation
/// run, §6.2 and Fig. 11, reports the p99 of the last 100 requests of each phase).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PhaseStats {
    /// The phase's arrival rate.
    pub rps: f64,
    /// Requests in the phase.
    pub requests: usize,
    /// Mean latency of the phase's requests, in ms.
    pub mean_ms: f64,
    /// The ceil(0.99 n)-th smallest latency of the phase's n requests, in ms.
    pub p99_ms: f64,
    /// The same over the phase's last 100 requests (or all, if fewer).
    pub p99_last_100_ms: f64,
    /// Live runs: steal time and hiccups from the phase's first arrival to the next
    /// phase's (the last phase: to the run's end).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub host: Option<HostStats>,
}

/// Mean degrees over a run's requests: all of them, and the shortest and longest 5% by
/// work.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct DegreeStats {
    /// Mean of the requests' time-averaged degrees.
    pub mean: f64,
    /// The same over the shortest 5% by work.
    pub shortest_5pct: f64,
    /// The same over the longest 5% by work.
    pub longest_5pct: f64,
}

/// Degree statistics from (work, mean degree) pairs, which it reorders. The 5% groups
/// are found by selection, not a full sort; when every request had the same degree
/// (`uniform`), the groups have it too and no selection runs.
pub fn degree_stats(pairs: &mut [(f64, f64)], uniform: bool) -> DegreeStats {
    let mean_of = |rs: &[(f64, f64)]| {
        if rs.is_empty() {
            0.0
        } else {
            rs.iter().map(|r| r.1).sum::<f64>() / rs.len() as f64
        }
    };
    let mean = mean_of(pairs);
    if uniform || pairs.is_empty() {
        return DegreeStats {
            mean,
            shortest_5pct: mean,
            longest_5pct: mean,
        };
    }
    // Works are finite (validated inputs), so a plain comparison is a total order here.
    let by_work =
        |a: &(f64, f64), b: &(f64, f64)| a.0.partial_cmp(&b.0).unwrap_or(std::cmp::Ordering::Equal);
    let five = (pairs.len() / 20).max(1);
    pairs.select_nth_unstable_by(five - 1, by_work);
    let shortest_5pct = mean_of(&pairs[..five]);
    let at = pairs.len() - five;
    pairs.select_nth_unstable_by(at, by_work);
    DegreeStats {
        mean,
        shortest_5pct,
        longest_5pct: mean_of(&pairs[at..]),
    }
}

/// Per-phase latency statistics from every request's latency in arrival order.
pub fn phase_stats(phases: &[Phase], latencies: &[f64]) -> Vec<PhaseStats> {
    let mut start = 0;
    phases
        .iter()
        .map(|p| {
            let phase =
                &latencies[start.min(latencies.len())..(start + p.count).min(latencies.len())];
            start += p.count;
            let last = &phase[phase.len().saturating_sub(100)..];
            PhaseStats {
                rps: p.rps,
                requests: p.count,
                mean_ms: if phase.is_empty() {
                    0.0
                } else {
                    phase.iter().sum::<f64>() / phase.len() as f64
                },
                p99_ms: exact_quantile(phase, 0.99),
                p99_last_100_ms: exact_quantile(last, 0.99),
                host: None,
            }
        })
        .collect()
}

/// The ceil(q n)-th smallest of `values` (exact, no histogram); 0 for none.
pub fn exact_quantile(values: &[f64], q: f64) -> f64 {
    quantile_in_place(&mut values.to_vec(), q)
}

/// [`exact_quantile`] without the copy: it reorders `values`.
pub fn quantile_in_place(values: &mut [f64], q: f64) -> f64 {
    if values.is_empty() {
        return 0.0;
    }
    let k = ((q * values.len() as f64 - 1e-9).ceil() as usize).clamp(1, values.len());
    *values.select_nth_unstable_by(k - 1, f64::total_cmp).1
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hgrm_lists_rising_percentiles_to_the_total_and_a_footer() {
        let mut r = LatencyRecorder::default();
        for i in 1..=1000 {
            r.record(i as f64);
        }
        let mut out = Vec::new();
        r.write_hgrm(&mut out).unwrap();
        let text = String::from_utf8(out).unwrap();
        let mut lines = text.lines();
        let header: Vec<&str> = lines.next().unwrap().split_whitespace().collect();
        assert_eq!(
            header,
            ["Value", "Percentile", "TotalCount", "1/(1-Percentile)"]
        );
        assert_eq!(lines.next(), Some(""));
        let rows: Vec<Vec<f64>> = lines
            .clone()
            .take_while(|l| !l.starts_with('#'))
            .map(|l| l.split_whitespace().map(|x| x.parse().unwrap()).collect())
            .collect();
        assert!(rows.len() > 20);
        for pair in rows.windows(2) {
            assert!(
                pair[1][0] >= pair[0][0] && pair[1][1] >= pair[0][1] && pair[1][2] >= pair[0][2]
            );
        }
        let last = rows.last().unwrap();
        assert_eq!((last[1], last[2], last.len()), (1.0, 1000.0, 3));
        let p99 = rows.iter().find(|r| r[1] >= 0.99).unwrap();
        assert!((p99[0] - 990.0).abs() < 2.0, "{p99:?}");
        let footer: Vec<&str> = text.lines().filter(|l| l.starts_with("#[")).collect();
        assert_eq!(footer.len(), 3);
        assert!(
            footer[1].contains("Total count    =         1000"),
            "{}",
            footer[1]
        );
    }

    #[test]
    fn percentiles_have_three_significant_digits() {
        let mut r = LatencyRecorder::default();
        for i in 1..=10_000 {
            r.record(i as f64 / 10.0);
        }
        let s = r.stats();
        assert!((s.mean - 500.05).abs() < 1e-9, "the mean is exact");
        assert!((s.p50 - 500.0).abs() / 500.0 < 1e-3);
        assert!((s.p99 - 990.0).abs() / 990.0 < 1e-3);
        assert_eq!(s.max, 1000.0);
        assert!((r.miss_ratio(900.0) - 0.1).abs() < 2e-3);
        assert_eq!(r.miss_ratio(2000.0), 0.0);
    }

    #[test]
    fn degree_stats_split_by_work() {
        // Work i, degree i: the shortest 5% of 100 are works 1..=5, the longest 96..=100.
        let mut pairs: Vec<(f64, f64)> = (1..=100).rev().map(|i| (i as f64, i as f64)).collect();
        let d = degree_stats(&mut pairs, false);
        assert_eq!(d.mean, 50.5);
        assert_eq!(d.shortest_5pct, 3.0);
        assert_eq!(d.longest_5pct, 98.0);
        let mut same = vec![(1.0, 2.0), (5.0, 2.0)];
        assert_eq!(degree_stats(&mut same, true).longest_5pct, 2.0);
    }

    #[test]
    fn phases_split_latencies_in_order() {
        let phases = [
            Phase {
                rps: 10.0,
                count: 3,
            },
            Phase {
                rps: 20.0,
                count: 2,
            },
        ];
        let p = phase_stats(&phases, &[1.0, 2.0, 3.0, 10.0, 20.0]);
        assert_eq!(p[0].mean_ms, 2.0);
        assert_eq!(p[1].p99_ms, 20.0);
    }

    #[test]
    fn exact_quantiles_count_ranks() {
        let v: Vec<f64> = (1..=100).map(f64::from).collect();
        assert_eq!(exact_quantile(&v, 0.99), 99.0);
        assert_eq!(exact_quantile(&v, 1.0), 100.0);
        assert_eq!(exact_quantile(&v[..10], 0.99), 10.0);
        assert_eq!(exact_quantile(&[], 0.5), 0.0);
    }

    #[test]
    fn extreme_values_are_clamped_not_lost() {
        let mut r = LatencyRecorder::default();
        r.record(0.0);
        r.record(1e12);
        r.record(f64::INFINITY);
        assert_eq!(r.count(), 3);
        assert_eq!(r.clamped(), 2);
        let empty = LatencyRecorder::default();
        assert_eq!(empty.stats(), LatencyStats::default());
    }
}
