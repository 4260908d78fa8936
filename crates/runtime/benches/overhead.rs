//! The runtime's overhead against a plain crossbeam-channel thread pool running the same
//! tiny units (issue #4: scheduling cost per request at most 5 us median; SEQ's
//! throughput at least 97% of the plain pool's), and the cost of the runtime's profile of
//! served requests (issue 41: at most 1% of throughput at saturation).
//!
//! Run with `cargo bench -p tailor-runtime --bench overhead`.

use std::hint::black_box;
use std::sync::Arc;
use std::time::Instant;

use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use crossbeam_channel::{bounded, unbounded, Sender};
use tailor_core::{Job, Policy};
use tailor_runtime::{BoostMode, Runtime, RuntimeConfig, Shutdown};

/// Spins for about `us` microseconds.
fn busy(us: f64) {
    let end = Instant::now() + std::time::Duration::from_secs_f64(us / 1e6);
    while Instant::now() < end {
        std::hint::spin_loop();
    }
}

/// A request of one tiny unit.
struct Tiny(f64);

impl Job for Tiny {
    type Part = ();
    type Output = ();
    fn units(&self) -> usize {
        1
    }
    fn run(&self, _: usize) {
        busy(self.0);
    }
    fn merge(&self, _: Vec<()>) {}
}

/// The plain pool: `threads` threads taking closures from one channel.
struct PlainPool {
    tx: Sender<Box<dyn FnOnce() + Send>>,
    threads: Vec<std::thread::JoinHandle<()>>,
}

impl PlainPool {
    fn new(threads: usize) -> PlainPool {
        let (tx, rx) = unbounded::<Box<dyn FnOnce() + Send>>();
        let threads = (0..threads)
            .map(|_| {
                let rx = rx.clone();
                std::thread::spawn(move || {
                    while let Ok(f) = rx.recv() {
                        f();
                    }
                })
            })
            .collect();
        PlainPool { tx, threads }
    }

    /// Runs a unit of `us` and returns a receiver for its completion.
    fn submit(&self, us: f64) -> crossbeam_channel::Receiver<()> {
        let (done_tx, done_rx) = bounded(1);
        self.tx
            .send(Box::new(move || {
                busy(us);
                let _ = done_tx.send(());
            }))
            .unwrap();
        done_rx
    }
}

impl Drop for PlainPool {
    fn drop(&mut self) {
        let (tx, _) = unbounded();
        drop(std::mem::replace(&mut self.tx, tx));
        for t in self.threads.drain(..) {
            let _ = t.join();
        }
    }
}

fn seq_runtime(cores: usize) -> Runtime {
    seq_runtime_keeping(cores, tailor_runtime::DEFAULT_PROFILE_WINDOW)
}

/// SEQ on `cores` threads, keeping the last `window` served requests' parts.
fn seq_runtime_keeping(cores: usize, window: usize) -> Runtime {
    let mut c = RuntimeConfig::new(cores, Policy::Seq);
    c.boost_mode = Some(BoostMode::Unavailable);
    c.profile_window = window;
    Runtime::start(c).unwrap()
}

/// A request of `.0` units of `.1` us each, like a search over its segments.
struct Units(usize, f64);

impl Job for Units {
    type Part = ();
    type Output = ();
    fn units(&self) -> usize {
        self.0
    }
    fn run(&self, _: usize) {
        busy(self.1);
    }
    fn merge(&self, _: Vec<()>) {}
}

fn profile_overhead(c: &mut Criterion) {
    // Saturation: batches of 200 requests of 16 units of 20 us (0.32 ms each, a short
    // search) on 2 threads, with the profile kept (the default) and without.
    const BATCH: u64 = 200;
    let mut g = c.benchmark_group("profile window, 200 x 16 x 20 us");
    g.throughput(Throughput::Elements(BATCH));
    g.sample_size(30);
    for (label, window) in [
        ("kept (4096)", tailor_runtime::DEFAULT_PROFILE_WINDOW),
        ("off (0)", 0),
    ] {
        let rt = seq_runtime_keeping(2, window);
        g.bench_function(label, |b| {
            b.iter(|| {
                let handles: Vec<_> = (0..BATCH)
                    .map(|_| rt.submit(Units(16, 20.0)).unwrap())
                    .collect();
                for h in handles {
                    black_box(h.wait().unwrap());
                }
            })
        });
        rt.shutdown(Shutdown::Drain);
    }
    g.finish();
}

fn scheduling_cost(c: &mut Criterion) {
    // One request of an empty unit, submitted and waited for: the round trip is the
    // scheduling cost (admission, hand-off, claim, merge, completion, wake-up).
    let mut g = c.benchmark_group("round trip, empty unit");
    let rt = seq_runtime(2);
    g.bench_function("tailor SEQ", |b| {
        b.iter(|| rt.submit(Tiny(0.0)).unwrap().wait().unwrap())
    });
    let pool = PlainPool::new(2);
    g.bench_function("plain pool", |b| {
        b.iter(|| pool.submit(0.0).recv().unwrap())
    });
    g.finish();
    rt.shutdown(Shutdown::Drain);
}

fn throughput(c: &mut Criterion) {
    // Batches of 1,000 requests of one 20 us unit on 2 threads, the same units in both.
    const BATCH: u64 = 1000;
    let mut g = c.benchmark_group("throughput, 1000 x 20 us units");
    g.throughput(Throughput::Elements(BATCH));
    g.sample_size(20);
    let rt = Arc::new(seq_runtime(2));
    g.bench_function("tailor SEQ", |b| {
        b.iter(|| {
            let handles: Vec<_> = (0..BATCH).map(|_| rt.submit(Tiny(20.0)).unwrap()).collect();
            for h in handles {
                black_box(h.wait().unwrap());
            }
        })
    });
    let pool = PlainPool::new(2);
    g.bench_function("plain pool", |b| {
        b.iter(|| {
            let done: Vec<_> = (0..BATCH).map(|_| pool.submit(20.0)).collect();
            for d in done {
                d.recv().unwrap();
            }
        })
    });
    g.finish();
}

criterion_group!(benches, scheduling_cost, throughput, profile_overhead);
criterion_main!(benches);
