//! Fine-grained fork-join overhead of the work-stealing executor against rayon (issue #7).
//!
//! Run with `cargo bench -p tailor-runtime --bench steal`. Both sides run one thread per
//! core; each measured iteration is one request (`submit` + `wait` here, `pool.install`
//! for rayon), with the executor and the pool kept alive across iterations.

use std::hint::black_box;
use std::ops::Range;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion};
use crossbeam_utils::CachePadded;
use rayon::prelude::*;
use tailor_core::StealPolicy;
use tailor_runtime::steal::{StealConfig, StealRuntime, Worker};
use tailor_runtime::Shutdown;

const SUM_LEN: usize = 1 << 20;
const SUM_GRAINS: [usize; 2] = [256, 4096];
const FIB_N: u64 = 30;
const FIB_CUTOFFS: [u64; 2] = [12, 20];

fn cores() -> usize {
    std::thread::available_parallelism().map_or(1, |n| n.get())
}

fn start_ours(cores: usize) -> StealRuntime {
    StealRuntime::start(StealConfig::new(cores, StealPolicy::StealFirst)).unwrap()
}

fn start_rayon(cores: usize) -> rayon::ThreadPool {
    rayon::ThreadPoolBuilder::new()
        .num_threads(cores)
        .build()
        .unwrap()
}

fn configure(g: &mut criterion::BenchmarkGroup<'_, criterion::measurement::WallTime>) {
    g.sample_size(40);
    g.warm_up_time(Duration::from_secs(1));
    g.measurement_time(Duration::from_secs(6));
}

// ---- Parallel sum ----

/// One accumulator per worker thread, each on its own cache line, so that the sum
/// measures scheduling rather than contention on one shared counter.
fn slots(n: usize) -> Arc<Vec<CachePadded<AtomicU64>>> {
    Arc::new(
        (0..n)
            .map(|_| CachePadded::new(AtomicU64::new(0)))
            .collect(),
    )
}

fn total(slots: &[CachePadded<AtomicU64>]) -> u64 {
    slots.iter().map(|s| s.load(Ordering::Relaxed)).sum()
}

fn sum_ours(rt: &StealRuntime, n: usize, data: &Arc<Vec<u64>>, grain: usize) -> u64 {
    let data = data.clone();
    rt.submit(move |w: &Worker| {
        let acc = slots(n);
        let body = {
            let (data, acc) = (data.clone(), acc.clone());
            Arc::new(move |r: Range<usize>, w: &Worker| {
                acc[w.index()].fetch_add(data[r].iter().sum::<u64>(), Ordering::Relaxed);
            })
        };
        w.parallel_for(0..data.len(), grain, &body);
        total(&acc)
    })
    .unwrap()
    .wait()
    .unwrap()
    .output
}

fn sum_rayon_chunks(pool: &rayon::ThreadPool, data: &[u64], grain: usize) -> u64 {
    pool.install(|| data.par_chunks(grain).map(|c| c.iter().sum::<u64>()).sum())
}

/// The same recursive halving as `Worker::parallel_for` without its lazy splitting,
/// accumulating the same way.
fn halve_rayon(data: &[u64], range: Range<usize>, grain: usize, acc: &[CachePadded<AtomicU64>]) {
    if range.len() <= grain.max(1) {
        if !range.is_empty() {
            let slot = rayon::current_thread_index().unwrap_or(0);
            acc[slot].fetch_add(data[range].iter().sum::<u64>(), Ordering::Relaxed);
        }
        return;
    }
    let mid = range.start + range.len() / 2;
    let end = range.end;
    rayon::join(
        || halve_rayon(data, range.start..mid, grain, acc),
        || halve_rayon(data, mid..end, grain, acc),
    );
}

fn sum_rayon_join(pool: &rayon::ThreadPool, data: &[u64], grain: usize) -> u64 {
    pool.install(|| {
        let acc = slots(pool.current_num_threads());
        halve_rayon(data, 0..data.len(), grain, &acc);
        total(&acc)
    })
}

fn parallel_sum(c: &mut Criterion) {
    let n = cores();
    let data: Arc<Vec<u64>> = Arc::new((0..SUM_LEN as u64).map(|i| i % 1000).collect());
    let expected: u64 = data.iter().sum();
    let rt = start_ours(n);
    let pool = start_rayon(n);
    for grain in SUM_GRAINS {
        assert_eq!(sum_ours(&rt, n, &data, grain), expected);
        assert_eq!(sum_rayon_chunks(&pool, &data, grain), expected);
        assert_eq!(sum_rayon_join(&pool, &data, grain), expected);
    }

    let mut g = c.benchmark_group("fork_join");
    configure(&mut g);
    for grain in SUM_GRAINS {
        let id = format!("parallel_sum/grain={grain}");
        g.bench_function(BenchmarkId::new(&id, "ours"), |b| {
            b.iter(|| black_box(sum_ours(&rt, n, &data, grain)))
        });
        g.bench_function(BenchmarkId::new(&id, "rayon_chunks"), |b| {
            b.iter(|| black_box(sum_rayon_chunks(&pool, &data, grain)))
        });
        g.bench_function(BenchmarkId::new(&id, "rayon_join"), |b| {
            b.iter(|| black_box(sum_rayon_join(&pool, &data, grain)))
        });
    }
    g.finish();
    rt.shutdown(Shutdown::Drain);
}

// ---- Recursive fib ----

fn fib_seq(n: u64) -> u64 {
    if n < 2 {
        n
    } else {
        fib_seq(n - 1) + fib_seq(n - 2)
    }
}

fn fib_ours(w: &Worker, n: u64, cutoff: u64) -> u64 {
    if n < cutoff.max(2) {
        return fib_seq(n);
    }
    let (a, b) = w.join(
        |w| fib_ours(w, n - 1, cutoff),
        move |w| fib_ours(w, n - 2, cutoff),
    );
    a + b
}

fn fib_rayon(n: u64, cutoff: u64) -> u64 {
    if n < cutoff.max(2) {
        return fib_seq(n);
    }
    let (a, b) = rayon::join(|| fib_rayon(n - 1, cutoff), || fib_rayon(n - 2, cutoff));
    a + b
}

fn run_fib_ours(rt: &StealRuntime, n: u64, cutoff: u64) -> u64 {
    rt.submit(move |w: &Worker| fib_ours(w, n, cutoff))
        .unwrap()
        .wait()
        .unwrap()
        .output
}

fn run_fib_rayon(pool: &rayon::ThreadPool, n: u64, cutoff: u64) -> u64 {
    pool.install(|| fib_rayon(n, cutoff))
}

fn fib(c: &mut Criterion) {
    let n = cores();
    let rt = start_ours(n);
    let pool = start_rayon(n);
    let expected = fib_seq(FIB_N);
    for cutoff in FIB_CUTOFFS {
        assert_eq!(run_fib_ours(&rt, FIB_N, cutoff), expected);
        assert_eq!(run_fib_rayon(&pool, FIB_N, cutoff), expected);
    }

    let mut g = c.benchmark_group("fork_join");
    configure(&mut g);
    for cutoff in FIB_CUTOFFS {
        let id = format!("fib/cutoff={cutoff}");
        g.bench_function(BenchmarkId::new(&id, "ours"), |b| {
            b.iter(|| black_box(run_fib_ours(&rt, black_box(FIB_N), cutoff)))
        });
        g.bench_function(BenchmarkId::new(&id, "rayon"), |b| {
            b.iter(|| black_box(run_fib_rayon(&pool, black_box(FIB_N), cutoff)))
        });
    }
    g.finish();
    rt.shutdown(Shutdown::Drain);
}

// ---- The cost of one request alone ----

fn empty_request(c: &mut Criterion) {
    let n = cores();
    let rt = start_ours(n);
    let pool = start_rayon(n);
    let mut g = c.benchmark_group("fork_join");
    configure(&mut g);
    g.bench_function(BenchmarkId::new("empty_request", "ours"), |b| {
        b.iter(|| black_box(rt.submit(|_: &Worker| 1u64).unwrap().wait().unwrap().output))
    });
    g.bench_function(BenchmarkId::new("empty_request", "rayon"), |b| {
        b.iter(|| black_box(pool.install(|| 1u64)))
    });
    g.finish();
    rt.shutdown(Shutdown::Drain);
}

criterion_group!(benches, parallel_sum, fib, empty_request);
criterion_main!(benches);
