//! The cost of the runtime's profile of served requests as a paired ratio (issue 41: at
//! most 1% of throughput at saturation): two SEQ runtimes, one keeping the profile (the
//! default window) and one not, run the same batches in alternation, so that the machine's
//! slow minutes fall on both alike.
//!
//! Run with `cargo bench -p tailor-runtime --bench profile_paired`; it prints the median
//! of the per-pair ratios kept / off with a seeded bootstrap 95% interval.

use std::hint::black_box;
use std::time::{Duration, Instant};

use tailor_core::{Job, Policy};
use tailor_runtime::{BoostMode, Runtime, RuntimeConfig, Shutdown};

/// Requests per batch, each of [`UNITS`] units of [`UNIT_US`] us: a short search at
/// saturation on two pool threads, as the criterion group "profile window" runs them.
const BATCH: usize = 200;
const UNITS: usize = 16;
const UNIT_US: f64 = 20.0;
/// Pairs of batches measured, after [`WARMUP`] pairs not measured.
const PAIRS: usize = 300;
const WARMUP: usize = 20;

/// Spins for about `us` microseconds.
fn busy(us: f64) {
    let end = Instant::now() + Duration::from_secs_f64(us / 1e6);
    while Instant::now() < end {
        std::hint::spin_loop();
    }
}

struct Units;

impl Job for Units {
    type Part = ();
    type Output = ();
    fn units(&self) -> usize {
        UNITS
    }
    fn run(&self, _: usize) {
        busy(UNIT_US);
    }
    fn merge(&self, _: Vec<()>) {}
}

fn runtime(window: usize) -> Runtime {
    let mut c = RuntimeConfig::new(2, Policy::Seq);
    c.boost_mode = Some(BoostMode::Unavailable);
    c.profile_window = window;
    Runtime::start(c).expect("the runtime starts")
}

/// One batch's wall time.
fn batch(rt: &Runtime) -> Duration {
    let started = Instant::now();
    let handles: Vec<_> = (0..BATCH).map(|_| rt.submit(Units).unwrap()).collect();
    for h in handles {
        black_box(h.wait().unwrap());
    }
    started.elapsed()
}

fn median(v: &mut [f64]) -> f64 {
    v.sort_by(f64::total_cmp);
    let n = v.len();
    if n % 2 == 1 {
        v[n / 2]
    } else {
        (v[n / 2 - 1] + v[n / 2]) / 2.0
    }
}

fn main() {
    // `cargo bench` passes --bench; a filter that names another benchmark skips this one.
    let filter: Vec<String> = std::env::args()
        .skip(1)
        .filter(|a| !a.starts_with("--"))
        .collect();
    if !filter.is_empty() && !filter.iter().any(|f| "profile_paired".contains(f.as_str())) {
        return;
    }
    let kept = runtime(tailor_runtime::DEFAULT_PROFILE_WINDOW);
    let off = runtime(0);
    let mut ratios = Vec::with_capacity(PAIRS);
    let (mut kept_ms, mut off_ms) = (Vec::new(), Vec::new());
    for pair in 0..WARMUP + PAIRS {
        // Alternate which goes first, so that neither always follows the other.
        let (k, o) = if pair % 2 == 0 {
            let k = batch(&kept);
            (k, batch(&off))
        } else {
            let o = batch(&off);
            (batch(&kept), o)
        };
        if pair >= WARMUP {
            ratios.push(k.as_secs_f64() / o.as_secs_f64());
            kept_ms.push(k.as_secs_f64() * 1e3);
            off_ms.push(o.as_secs_f64() * 1e3);
        }
    }
    kept.shutdown(Shutdown::Drain);
    off.shutdown(Shutdown::Drain);
    // A seeded bootstrap of the median ratio (splitmix64 draws).
    let mut state: u64 = 0x5eed;
    let mut next = || {
        state = state.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = state;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    };
    let mut medians: Vec<f64> = (0..2000)
        .map(|_| {
            let mut draw: Vec<f64> = (0..ratios.len())
                .map(|_| ratios[(next() % ratios.len() as u64) as usize])
                .collect();
            median(&mut draw)
        })
        .collect();
    medians.sort_by(f64::total_cmp);
    let ci = (medians[50], medians[1949]);
    println!(
        "profile_paired: {PAIRS} pairs of {BATCH} requests x {UNITS} x {UNIT_US} us on 2 threads; \
         median batch kept {:.3} ms, off {:.3} ms; kept / off per pair: median {:.4}, 95% CI \
         [{:.4}, {:.4}]",
        median(&mut kept_ms),
        median(&mut off_ms),
        median(&mut ratios),
        ci.0,
        ci.1
    );
}
