//! `tailor emulate`: planned against measured slowdown of duty-cycle slow-core emulation (the dissertation's Fig. 5.5).

use crate::bounds;
use std::time::{Duration, Instant};

use anyhow::Context;
use clap::Args;
use tailor_runtime::emulate::{pin_current_thread, SlowCore};
use tailor_workloads::Spinner;

#[derive(Debug, Args)]
pub(crate) struct EmulateArgs {
    /// The CPU to slow down; the measuring thread is pinned to it too.
    #[arg(long, default_value_t = 1)]
    cpu: usize,
    /// Planned slowdowns (the core at 1/F of its speed), comma-separated.
    #[arg(long, default_value = "1.25,1.44,2,3")]
    slowdowns: String,
    /// Duty-cycle periods, comma-separated (§5.2.3 uses 100us to 500us).
    #[arg(long, value_name = "DURATION,...", default_value = "100us,250us,500us", value_parser = bounds::TIMES)]
    periods: bounds::Times,
    /// Request lengths at full speed, comma-separated.
    #[arg(long, value_name = "DURATION,...", default_value = "5ms,20ms,80ms", value_parser = bounds::TIMES)]
    lengths: bounds::Times,
    /// Repetitions of each measurement; the table shows the median.
    #[arg(long, default_value_t = 9, value_parser = bounds::COUNT)]
    reps: usize,
}

fn list(text: &str, flag: &str) -> anyhow::Result<Vec<f64>> {
    text.split(',')
        .map(|x| {
            x.trim()
                .parse::<f64>()
                .ok()
                .filter(|v| v.is_finite() && *v > 0.0)
                .with_context(|| format!("{flag}: {x:?} is not a positive number"))
        })
        .collect()
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

pub(crate) fn run(args: EmulateArgs) -> anyhow::Result<()> {
    let slowdowns = list(&args.slowdowns, "--slowdowns")?;
    anyhow::ensure!(
        slowdowns.iter().all(|&s| s >= 1.0),
        "--slowdowns: each must be at least 1"
    );
    // Periods in µs, lengths in ms, as the measurement below takes them.
    let periods: Vec<f64> = args.periods.0.iter().map(|ms| ms * 1000.0).collect();
    let lengths = args.lengths.0;
    anyhow::ensure!(args.reps >= 1, "--reps: must be at least 1");
    let cpus = std::thread::available_parallelism().map_or(1, |n| n.get());
    anyhow::ensure!(
        args.cpu < cpus,
        "--cpu {}: this machine has CPUs 0 to {}",
        args.cpu,
        cpus - 1
    );
    let cpu = args.cpu;
    let reps = args.reps;
    // Measure on a thread pinned to the slowed CPU.
    let table = std::thread::spawn(move || -> anyhow::Result<Vec<String>> {
        anyhow::ensure!(pin_current_thread(cpu), "cannot pin to CPU {cpu}");
        let spinner = Spinner::calibrate();
        let time = |ms: f64| {
            let start = Instant::now();
            spinner.spin_us(ms * 1000.0);
            start.elapsed().as_secs_f64() * 1000.0
        };
        let free: Vec<f64> = lengths
            .iter()
            .map(|&l| median((0..reps).map(|_| time(l)).collect()))
            .collect();
        let mut rows = Vec::new();
        let mut priority = None;
        let mut losses = Vec::new();
        for &period in &periods {
            let period_d = Duration::from_secs_f64(period * 1e-6);
            // The per-period loss: at a planned 2x the others should get half the time;
            // what they get less than that, per period, the emulator gives back.
            let loss = {
                let slow = SlowCore::start(cpu, 2.0, period_d)?;
                std::thread::sleep(Duration::from_millis(20));
                let l = lengths[lengths.len() / 2];
                let base = free[lengths.len() / 2];
                let measured = median((0..reps).map(|_| time(l) / base).collect());
                drop(slow);
                let share_lost = (0.5 - 1.0 / measured).max(0.0);
                Duration::from_secs_f64(share_lost * period * 1e-6)
            };
            losses.push(format!("{period:.0} us: {:.1} us", loss.as_secs_f64() * 1e6));
            for &f in &slowdowns {
                let slow = SlowCore::start_compensated(cpu, f, period_d, loss)?;
                priority.get_or_insert(slow.priority());
                std::thread::sleep(Duration::from_millis(20));
                let cells: Vec<String> = lengths
                    .iter()
                    .zip(&free)
                    .map(|(&l, &base)| {
                        let m = median((0..reps).map(|_| time(l) / base).collect());
                        format!("{m:.2}")
                    })
                    .collect();
                drop(slow);
                rows.push(format!("| {period:.0} | {f:.2} | {} |", cells.join(" | ")));
            }
        }
        rows.insert(
            0,
            format!(
                "Emulator priority: {:?}; CPU {cpu}; median of {reps} runs per cell; loss per period \
                 given back (measured at a planned 2x): {}.\n\n| period us | planned slowdown | {} |\n|---|---|{}",
                priority,
                losses.join(", "),
                lengths
                    .iter()
                    .map(|l| format!("measured, {l} ms"))
                    .collect::<Vec<_>>()
                    .join(" | "),
                "---|".repeat(lengths.len())
            ),
        );
        Ok(rows)
    })
    .join()
    .map_err(|_| anyhow::anyhow!("the measuring thread panicked"))??;
    for row in table {
        println!("{row}");
    }
    Ok(())
}
