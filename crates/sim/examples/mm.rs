//! M/M/m and M/D/1 runs of SEQ by seed, for checking the simulator against theory by hand.
use tailor_core::{Arrivals, Demand, DemandModel, Policy};
use tailor_sim::{simulate, SimConfig};
fn main() {
    let args: Vec<String> = std::env::args().collect();
    let m: usize = args[1].parse().unwrap();
    let rho: f64 = args[2].parse().unwrap();
    let n: usize = args[3].parse().unwrap();
    let demand = if args.len() > 4 {
        Demand::Const { ms: 10.0 }
    } else {
        Demand::Exp { mean_ms: 10.0 }
    };
    let rps = rho * m as f64 * 100.0;
    for seed in 1..=8 {
        let cfg = SimConfig::new(
            m,
            Policy::Seq,
            DemandModel::new(demand.clone(), None).unwrap(),
            Arrivals::Poisson,
            rps,
            n,
            seed,
        );
        let t = std::time::Instant::now();
        let out = simulate(&cfg).unwrap();
        println!(
            "seed {seed}: mean {:.3} p99 {:.3} util {:.3} in {:?}",
            out.summary.latency_ms.mean,
            out.summary.latency_ms.p99,
            out.summary.cpu_utilization,
            t.elapsed()
        );
    }
}
