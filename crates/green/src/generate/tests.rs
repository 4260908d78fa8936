use super::*;
use crate::archive::GREEN_SLA_LEVELS;
use crate::predict::hourly_kwh;

/// Seeds every shape test runs over.
const SEEDS: std::ops::Range<u64> = 0..6;

/// Prediction error over hours `hours`: actual energy, and the energy over- and
/// under-predicted, kWh, where hour h is predicted by the issue at `issued(h)`.
fn errors(
    g: &Generated,
    hours: std::ops::Range<usize>,
    issued: impl Fn(usize) -> usize,
) -> (f64, f64, f64) {
    let actual = hourly_kwh(&g.solar);
    let (mut total, mut over, mut under) = (0.0, 0.0, 0.0);
    for h in hours {
        let p = (4 * h..4 * h + 4)
            .map(|k| {
                g.prediction
                    .kw(4 * issued(h), k)
                    .expect("every epoch predicted")
            })
            .sum::<f64>()
            * EPOCH_H;
        total += actual[h];
        over += (p - actual[h]).max(0.0);
        under += (actual[h] - p).max(0.0);
    }
    (total, over, under)
}

#[test]
fn sla_workloads_have_the_jobs_peaks_and_green_slas_of_a_5_1() {
    for seed in SEEDS {
        for (workload, jobs, peak, long) in [
            (Workload::Grid5k, 675, 1654, 7),
            (Workload::Intrepid, 446, 1620, 1),
        ] {
            let g = generate(workload, Day::Medium, System::Sla, seed);
            let what = format!("{workload} seed {seed}");
            assert_eq!(g.jobs.len(), jobs, "{what}");
            assert_eq!(workload::peak_demand(&g.jobs), peak, "{what}");
            assert_eq!(
                g.jobs.iter().filter(|j| j.runtime_h > 48.0).count(),
                long,
                "{what}"
            );
            // Busy, not flat: the mean demand over the window is a third to three quarters
            // of the peak (invented; Fig. A.4 is a plot).
            let mean = workload::mean_demand(&g.jobs, 48.0) / f64::from(peak);
            assert!((0.3..0.75).contains(&mean), "{what}: mean/peak {mean}");
            let mut levels = [0usize; 5];
            for j in &g.jobs {
                assert!(
                    j.servers >= 1 && j.servers <= 1680 && j.app.is_empty(),
                    "{what}"
                );
                assert!(j.arrival_h < 48.0 && j.arrival_h % EPOCH_H == 0.0, "{what}");
                let level = GREEN_SLA_LEVELS.iter().position(|&l| l == j.green_sla);
                // 0% past 48 hours (§A.5.1), and for jobs that end after the solar.
                if j.runtime_h > 48.0 || j.arrival_h + j.runtime_h > 48.0 {
                    assert_eq!(j.green_sla, 0.0, "{what}: job {}", j.id);
                } else {
                    levels[level.expect("a §A.5.1 level")] += 1;
                }
            }
            // Uniform: each level near a fifth of the jobs that end inside the window.
            let fifth = levels.iter().sum::<usize>() as f64 / 5.0;
            assert!(
                fifth >= 0.8 * (jobs - long) as f64 / 5.0,
                "{what}: {levels:?}"
            );
            assert!(
                levels
                    .iter()
                    .all(|&n| (n as f64 - fifth).abs() < 0.3 * fifth),
                "{what}: {levels:?}"
            );
        }
    }
}

#[test]
fn par_workloads_have_the_jobs_peaks_and_applications_of_b_4() {
    for seed in SEEDS {
        for (workload, jobs, peak, apps) in [
            (
                Workload::Grid5k,
                26,
                48,
                &[
                    ("cg", 2),
                    ("ep", 1),
                    ("ft", 12),
                    ("is", 1),
                    ("lu", 6),
                    ("mg", 3),
                    ("sp", 1),
                ][..],
            ),
            (
                Workload::Intrepid,
                113,
                44,
                &[("cg", 14), ("ft", 1), ("is", 73), ("mg", 24), ("sp", 1)][..],
            ),
        ] {
            let g = generate(workload, Day::High, System::Par, seed);
            let what = format!("{workload} seed {seed}");
            assert_eq!(g.jobs.len(), jobs, "{what}");
            assert_eq!(workload::peak_demand(&g.jobs), peak, "{what}");
            let mut counts = std::collections::BTreeMap::new();
            for j in &g.jobs {
                *counts.entry(j.app.as_str()).or_insert(0) += 1;
                assert!(j.servers.is_power_of_two() && j.servers <= 16, "{what}");
                assert!(j.arrival_h < 24.0 && j.green_sla == 0.0, "{what}");
                if workload == Workload::Intrepid {
                    // Table B.2: 4, 8, 16 or 32 cores.
                    assert!(j.servers >= 2, "{what}");
                }
            }
            assert_eq!(counts.into_iter().collect::<Vec<_>>(), apps, "{what}");
            // A working day (invented, module docs): most jobs arrive in daylight.
            let by_day = g
                .jobs
                .iter()
                .filter(|j| (7.0..19.0).contains(&j.arrival_h))
                .count();
            assert!(by_day * 3 >= jobs * 2, "{what}: {by_day} of {jobs} by day");
        }
    }
}

#[test]
fn solar_days_have_the_peaks_and_totals_of_the_appendices() {
    for seed in SEEDS {
        for (system, epochs, peak, totals) in [
            (System::Sla, 192, 176.4, [3230.0, 1940.0, 626.0]),
            (System::Par, 96, 1.5, [12.0, 8.0, 2.84]),
        ] {
            for (day, total) in Day::ALL.iter().zip(totals) {
                let g = generate(Workload::Grid5k, *day, system, seed);
                let what = format!("{system} {day} seed {seed}");
                assert_eq!(g.solar.kw.len(), epochs, "{what}");
                assert!(
                    (g.solar.total_kwh() - total).abs() < 1e-4 * total,
                    "{what}: {} kWh",
                    g.solar.total_kwh()
                );
                let max = g.solar.kw.iter().copied().fold(0.0, f64::max);
                assert!(max <= peak + 1e-9, "{what}: {max}");
                if *day == Day::High {
                    assert!((max - peak).abs() < 1e-9, "{what}: {max}");
                }
                // Dark at night.
                assert_eq!(g.solar.kw[0], 0.0, "{what}");
                assert_eq!(g.solar.kw[epochs - 1], 0.0, "{what}");
            }
        }
    }
}

#[test]
fn predictions_err_as_the_appendices_describe() {
    let ahead_1h = |h: usize| h;
    let from_midnight = |h: usize| h - h % 24;
    for seed in SEEDS {
        // §A.5.1, High days: an hour ahead mostly accurate; the first day, seen from
        // midnight, under-predicted.
        let g = generate(Workload::Grid5k, Day::High, System::Sla, seed);
        let (total, over, under) = errors(&g, 0..48, ahead_1h);
        assert!(
            over + under < 0.08 * total,
            "High seed {seed}: {over} + {under}"
        );
        let (total, over, under) = errors(&g, 0..24, from_midnight);
        assert!(
            under - over > 0.1 * total,
            "High seed {seed}: day 1 {over} {under}"
        );
        // Medium days: significant errors, mostly over-predictions, an hour ahead and
        // from midnight.
        let g = generate(Workload::Grid5k, Day::Medium, System::Sla, seed);
        let (total, over, under) = errors(&g, 0..48, ahead_1h);
        assert!(
            over > 0.12 * total && over > 1.2 * under,
            "Medium seed {seed}: {over} {under}"
        );
        let (total, over, under) = errors(&g, 0..48, from_midnight);
        assert!(
            over - under > 0.15 * total,
            "Medium seed {seed}: {over} {under}"
        );
        // Low days: mostly accurate.
        let g = generate(Workload::Grid5k, Day::Low, System::Sla, seed);
        let (total, over, under) = errors(&g, 0..48, ahead_1h);
        assert!(
            over + under < 0.15 * total,
            "Low seed {seed}: {over} + {under}"
        );
        // §B.4: the Medium day over- and under-predicts, each for a while.
        let g = generate(Workload::Grid5k, Day::Medium, System::Par, seed);
        let (total, over, under) = errors(&g, 0..24, ahead_1h);
        assert!(
            over > 0.07 * total && under > 0.07 * total,
            "Par Medium seed {seed}"
        );
        let g = generate(Workload::Grid5k, Day::High, System::Par, seed);
        let (total, over, under) = errors(&g, 0..24, ahead_1h);
        assert!(over + under < 0.08 * total, "Par High seed {seed}");
    }
    // High days: no hour over-predicted an hour ahead by more than 6% of a peak hour's
    // energy (the appendices' High days erred by under-predicting; before thin clouds
    // were made to thicken slowly, single hours were over-predicted by 11-25%).
    for seed in SEEDS {
        for (system, days) in [(System::Sla, 2), (System::Par, 1)] {
            let g = generate(Workload::Grid5k, Day::High, system, seed);
            let peak_kwh = solar::SolarFacts::of(system).peak_kw;
            let worst = (0..24 * days)
                .map(|h| errors(&g, h..h + 1, ahead_1h).1)
                .fold(0.0, f64::max);
            assert!(
                worst <= 0.06 * peak_kwh,
                "{system} High seed {seed}: {worst:.3} kWh over in an hour, peak {peak_kwh}"
            );
        }
    }
}

#[test]
fn files_round_trip_through_the_input_parsers() {
    for system in System::ALL {
        let g = generate(Workload::Intrepid, Day::Medium, *system, 3);
        let mut bytes = Vec::new();
        write_jobs(&mut bytes, &g.jobs).unwrap();
        let jobs = Job::parse_all(std::str::from_utf8(&bytes).unwrap(), "jobs.csv").unwrap();
        assert_eq!(jobs, g.jobs);
        let mut bytes = Vec::new();
        write_solar(&mut bytes, &g.solar).unwrap();
        assert_eq!(
            Solar::parse(std::str::from_utf8(&bytes).unwrap(), "s").unwrap(),
            g.solar
        );
        let mut bytes = Vec::new();
        write_prediction(&mut bytes, &g.prediction).unwrap();
        let text = String::from_utf8(bytes).unwrap();
        assert_eq!(Prediction::parse(&text, "p").unwrap(), g.prediction);
        assert!(
            text.starts_with("issued_h,time_h,kw\n0,0,0\n"),
            "{}",
            &text[..40]
        );
    }
    // A job id or app that needs quoting survives too.
    let job = Job {
        id: "a,\"b\"".into(),
        arrival_h: 0.25,
        servers: 3,
        runtime_h: 1.5,
        green_sla: 25.0,
        app: "ft".into(),
        line: 2,
    };
    let mut bytes = Vec::new();
    write_jobs(&mut bytes, std::slice::from_ref(&job)).unwrap();
    assert_eq!(
        Job::parse_all(std::str::from_utf8(&bytes).unwrap(), "j").unwrap(),
        vec![job]
    );
}

#[test]
fn the_same_seed_writes_the_same_bytes_and_another_seed_does_not() {
    let dir = std::env::temp_dir().join(format!("tailor-green-generate-{}", std::process::id()));
    let read = |sub: &str| -> Vec<Vec<u8>> {
        ["jobs.csv", "solar.csv", "prediction.csv"]
            .iter()
            .map(|f| std::fs::read(dir.join(sub).join(f)).unwrap())
            .collect()
    };
    generate(Workload::Grid5k, Day::Low, System::Sla, 9)
        .write_dir(&dir.join("a"))
        .unwrap();
    generate(Workload::Grid5k, Day::Low, System::Sla, 9)
        .write_dir(&dir.join("b"))
        .unwrap();
    generate(Workload::Grid5k, Day::Low, System::Sla, 10)
        .write_dir(&dir.join("c"))
        .unwrap();
    let (a, b, c) = (read("a"), read("b"), read("c"));
    std::fs::remove_dir_all(&dir).unwrap();
    assert_eq!(a, b);
    for (x, z) in a.iter().zip(&c) {
        assert_ne!(x, z);
    }
    // The files are what the readers expect, with the lines they name.
    let jobs = Job::parse_all(std::str::from_utf8(&a[0]).unwrap(), "jobs.csv").unwrap();
    assert_eq!((jobs.len(), jobs[0].line, jobs[674].line), (675, 2, 676));
}

#[test]
fn names_parse_in_any_case_and_unknown_ones_say_what_is_expected() {
    assert_eq!(Workload::parse("grid5k"), Ok(Workload::Grid5k));
    assert_eq!("Intrepid".parse::<Workload>(), Ok(Workload::Intrepid));
    assert_eq!(Day::parse("HIGH"), Ok(Day::High));
    assert_eq!(System::parse("par"), Ok(System::Par));
    for v in Day::ALL {
        assert_eq!(Day::parse(&v.to_string()), Ok(*v));
    }
    assert_eq!(
        Workload::parse("grid5000").unwrap_err().to_string(),
        "unknown workload `grid5000`: expected one of grid5k, intrepid"
    );
    assert_eq!(
        Day::parse("sunny").unwrap_err().to_string(),
        "unknown day `sunny`: expected one of high, medium, low"
    );
    assert_eq!(
        System::parse("").unwrap_err().to_string(),
        "unknown system ``: expected one of sla, par"
    );
}
