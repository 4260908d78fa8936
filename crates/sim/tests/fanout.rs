//! The fan-out simulator: one shard of one replica is the plain engine, a query waits for
//! its slowest shard, SingleD reissues exactly the shard requests still out at d, SingleR
//! spans none to SingleD, hedging reissues about the share of requests past its
//! percentile, cancelling the loser saves work, reissue beats stalls, and bad settings
//! are refused.

use tailor_core::{Arrivals, Demand, DemandModel, Noise, Policy, Reissue};
use tailor_sim::{simulate, simulate_fanout, FanoutConfig, FanoutOutput, Select, SimConfig};

fn server(policy: Policy, cores: usize, rps: f64, queries: usize) -> SimConfig {
    let demand = DemandModel::new(Demand::Exp { mean_ms: 4.0 }, None).unwrap();
    SimConfig::new(cores, policy, demand, Arrivals::Poisson, rps, queries, 7)
}

fn run(cfg: &FanoutConfig) -> FanoutOutput {
    simulate_fanout(cfg).unwrap()
}

fn with(
    shards: usize,
    replicas: usize,
    rps: f64,
    reissue: Reissue,
    noise: Option<Noise>,
) -> FanoutConfig {
    let mut cfg = FanoutConfig::new(server(Policy::Seq, 4, rps, 20_000), shards, replicas);
    cfg.reissue = reissue;
    cfg.noise = noise;
    cfg.records = true;
    cfg
}

#[test]
fn one_shard_on_one_replica_is_the_plain_engine() {
    for policy in [
        Policy::Seq,
        Policy::Fix { degree: 2 },
        Policy::Interval {
            interval_ms: 2.0,
            max_degree: 4,
        },
    ] {
        let mut plain = server(policy.clone(), 4, 600.0, 20_000);
        plain.fast_path = false;
        let alone = simulate(&plain).unwrap().summary;
        let fanned = run(&FanoutConfig::new(plain, 1, 1)).summary;
        assert_eq!(fanned.completed, 20_000);
        for (a, b) in [
            (alone.latency_ms.mean, fanned.latency_ms.mean),
            (alone.latency_ms.p99, fanned.latency_ms.p99),
            (alone.latency_ms.max, fanned.latency_ms.max),
        ] {
            assert!((a - b).abs() < 1e-9, "{}: {a} vs {b}", policy.name());
        }
        assert_eq!(fanned.reissue_rate, Some(0.0));
    }
}

#[test]
fn a_query_waits_for_its_slowest_shard() {
    let out = run(&with(8, 2, 200.0, Reissue::None, None));
    assert_eq!(out.summary.completed, 20_000);
    assert_eq!(out.records.len(), 20_000 * 8);
    // The tail of one server becomes the median of the whole: the query median sits
    // above the shard median, and every query's latency is its slowest shard's.
    let mut shard: Vec<f64> = out.records.iter().map(|r| r.latency_ms).collect();
    shard.sort_by(f64::total_cmp);
    assert!(out.summary.latency_ms.p50 > 1.5 * shard[shard.len() / 2]);
    for q in out.records.chunks(8) {
        assert!(q.iter().all(|r| r.query == q[0].query));
        assert!(q.iter().all(|r| r.primary_ms == Some(r.latency_ms)));
    }
    let slowest = out
        .records
        .chunks(8)
        .map(|q| q.iter().map(|r| r.latency_ms).fold(0.0, f64::max));
    let max = slowest.fold(0.0, f64::max);
    assert!((max - out.summary.latency_ms.max).abs() < 1e-9);
}

#[test]
fn single_d_reissues_exactly_the_requests_still_out_at_d() {
    let d = 6.0;
    let out = run(&with(4, 3, 300.0, Reissue::SingleD { d_ms: d }, None));
    let reissued = out
        .records
        .iter()
        .filter(|r| r.reissued_to.is_some())
        .count();
    for r in &out.records {
        assert_eq!(r.reissued_to.is_some(), r.latency_ms > d + 1e-9, "{r:?}");
        if let Some(to) = r.reissued_to {
            assert_ne!(to, r.replica, "a reissue goes to another replica");
        }
        // A cancelled first copy has no latency of its own.
        assert_eq!(r.primary_ms.is_none(), r.reissue_won);
    }
    let rate = out.summary.reissue_rate.unwrap();
    assert!((rate - reissued as f64 / out.records.len() as f64).abs() < 1e-12);
    assert!(rate > 0.05 && rate < 0.6, "{rate}");
}

#[test]
fn single_r_spans_none_to_single_d() {
    let d = 5.0;
    let none = run(&with(4, 3, 300.0, Reissue::None, None)).summary;
    let r0 = run(&with(
        4,
        3,
        300.0,
        Reissue::SingleR { d_ms: d, q: 0.0 },
        None,
    ))
    .summary;
    let r1 = run(&with(
        4,
        3,
        300.0,
        Reissue::SingleR { d_ms: d, q: 1.0 },
        None,
    ))
    .summary;
    let sd = run(&with(4, 3, 300.0, Reissue::SingleD { d_ms: d }, None)).summary;
    let half = run(&with(
        4,
        3,
        300.0,
        Reissue::SingleR { d_ms: d, q: 0.5 },
        None,
    ))
    .summary;
    assert_eq!(r0.latency_ms, none.latency_ms);
    assert_eq!(r1.latency_ms, sd.latency_ms);
    let (rate, full) = (half.reissue_rate.unwrap(), sd.reissue_rate.unwrap());
    assert!(rate > 0.3 * full && rate < 0.7 * full, "{rate} vs {full}");
}

#[test]
fn hedging_reissues_about_the_share_past_its_percentile() {
    let out = run(&with(
        4,
        3,
        150.0,
        Reissue::Hedge { percentile: 90.0 },
        None,
    ))
    .summary;
    let rate = out.reissue_rate.unwrap();
    assert!(rate > 0.05 && rate < 0.15, "{rate}");
}

#[test]
fn cancelling_the_loser_saves_work() {
    let mut cancel = with(4, 3, 300.0, Reissue::SingleD { d_ms: 3.0 }, None);
    let mut keep = cancel.clone();
    keep.cancel = false;
    cancel.records = false;
    keep.records = false;
    let (c, k) = (run(&cancel).summary, run(&keep).summary);
    assert_eq!(k.completed, 20_000);
    assert!(
        c.cpu_utilization < 0.95 * k.cpu_utilization,
        "{} vs {}",
        c.cpu_utilization,
        k.cpu_utilization
    );
}

#[test]
fn reissue_escapes_stalls() {
    // One stall every 5 s per replica, 100 ms long: a replica is stopped 2% of the time,
    // so one query of 8 shards in 7 meets a stall, and one in 300 meets two on a shard.
    let noise = Some(Noise {
        rate_per_s: 0.2,
        length_ms: 100.0,
    });
    let none = run(&with(8, 3, 150.0, Reissue::None, noise)).summary;
    let single = run(&with(8, 3, 150.0, Reissue::SingleD { d_ms: 15.0 }, noise)).summary;
    assert_eq!(none.completed, 20_000);
    assert!(
        none.latency_ms.p99 > 50.0,
        "stalls show in the tail: {}",
        none.latency_ms.p99
    );
    assert!(
        single.latency_ms.p99 < 0.5 * none.latency_ms.p99,
        "{} vs {}",
        single.latency_ms.p99,
        none.latency_ms.p99
    );
}

#[test]
fn least_loaded_picks_beat_random_ones() {
    let mut random = with(4, 3, 2_400.0, Reissue::None, None);
    random.records = false;
    let mut least = random.clone();
    least.select = Select::LeastLoaded;
    let (r, l) = (run(&random).summary, run(&least).summary);
    assert!(
        l.latency_ms.p99 < r.latency_ms.p99,
        "{} vs {}",
        l.latency_ms.p99,
        r.latency_ms.p99
    );
}

#[test]
fn bad_settings_are_refused_naming_them() {
    let base = with(4, 3, 300.0, Reissue::None, None);
    for (cfg, flag) in [
        (
            FanoutConfig {
                shards: 0,
                ..base.clone()
            },
            "--shards",
        ),
        (
            FanoutConfig {
                replicas: 0,
                ..base.clone()
            },
            "--replicas",
        ),
        (
            FanoutConfig {
                replicas: 1,
                reissue: Reissue::SingleD { d_ms: 1.0 },
                ..base.clone()
            },
            "--reissue",
        ),
        (
            FanoutConfig {
                server: server(Policy::Seq, 4, 3_500.0, 1_000),
                ..base.clone()
            },
            "overload",
        ),
    ] {
        let err = simulate_fanout(&cfg).unwrap_err().to_string();
        assert!(err.contains(flag), "{err} should name {flag}");
    }
}
