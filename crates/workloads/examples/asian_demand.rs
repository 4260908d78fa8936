//! Prints each Asian request's work (paths x fixings) for a seed: investigation only.
use tailor_workloads::AsianJob;
fn main() {
    let a: Vec<String> = std::env::args().collect();
    let seed: u64 = a[1].parse().unwrap();
    let n: u64 = a[2].parse().unwrap();
    let scale: f64 = a[3].parse().unwrap();
    for i in 0..n {
        let j = AsianJob::new(seed, i, scale);
        println!("{} {} {}", i, j.paths(), j.paths() * j.option().fixings);
    }
}
