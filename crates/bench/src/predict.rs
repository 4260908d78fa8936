//! Per-degree times predicted from per-unit times by list scheduling, for profiles
//! projected to more threads than were measured and for profiles built from served
//! requests (`tailor profile from-records`, `GET /profile`).

use tailor_core::{DemandProfile, RequestProfile};

use crate::UnitTimes;

/// A query's time at `degree` predicted from its degree-1 parts: its units scheduled on
/// `degree` threads by Graham's list scheduling in unit order (each unit to the thread
/// that is free first), then its merge, then the rest of its measured t1 (joining and
/// claiming, which the units' own times leave out) as serial time.
///
/// The order is the runtime's: a request's threads claim the next unclaimed unit
/// (`tailor_core::Job`), so unit k starts on whichever thread finished first. Longest-
/// first (LPT) would predict a shorter time than the runtime achieves, since the
/// runtime does not know the units' lengths in advance.
pub fn predicted_ms(units: &UnitTimes, t1_ms: f64, degree: usize) -> f64 {
    predicted_ms_with_helper_start(units, t1_ms, degree, 0.0)
}

/// [`predicted_ms`] with the helpers free only `helper_start_ms` after the request's own
/// thread: a calibration's hand-off delay and helper cost (issue 25), as the charged
/// simulator charges a helper before its first unit.
pub fn predicted_ms_with_helper_start(
    units: &UnitTimes,
    t1_ms: f64,
    degree: usize,
    helper_start_ms: f64,
) -> f64 {
    let threads = degree.clamp(1, units.units_ms.len().max(1));
    let mut free = vec![helper_start_ms.max(0.0); threads];
    free[0] = 0.0;
    // The units end when the last of them does; a helper that got none ends nothing.
    let mut end = 0.0f64;
    for &unit in &units.units_ms {
        let first = (0..threads)
            .min_by(|&a, &b| free[a].total_cmp(&free[b]))
            .expect("at least one thread");
        free[first] += unit;
        end = end.max(free[first]);
    }
    end + serial_ms(units, t1_ms)
}

/// What runs after a query's units: its merge, then the rest of its measured t1 that the
/// units' own times leave out (claiming and joining).
pub fn serial_ms(units: &UnitTimes, t1_ms: f64) -> f64 {
    let parts: f64 = units.units_ms.iter().sum::<f64>() + units.merge_ms;
    units.merge_ms + (t1_ms - parts).max(0.0)
}

/// The profile with degrees 1..=`max_degree`: each request's t1 as measured, the higher
/// degrees [`predicted_ms`] from its parts (`units[i]` belongs to the profile's request i).
pub fn projected_profile(
    profile: &DemandProfile,
    units: &[UnitTimes],
    max_degree: usize,
) -> Result<DemandProfile, String> {
    charged_profile(profile, units, max_degree, |_| 0.0)
}

/// [`projected_profile`] with each degree's helpers starting `helper_start_ms(degree)`
/// after the request's own thread ([`predicted_ms_with_helper_start`]).
pub fn charged_profile(
    profile: &DemandProfile,
    units: &[UnitTimes],
    max_degree: usize,
    helper_start_ms: impl Fn(usize) -> f64,
) -> Result<DemandProfile, String> {
    let requests = profile
        .requests()
        .iter()
        .zip(units)
        .map(|(r, u)| RequestProfile {
            id: r.id.clone(),
            times_ms: (1..=max_degree)
                .map(|d| {
                    if d == 1 {
                        r.seq_ms()
                    } else {
                        predicted_ms_with_helper_start(u, r.seq_ms(), d, helper_start_ms(d))
                    }
                })
                .collect(),
        })
        .collect();
    DemandProfile::new(requests)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn units(ms: &[f64], merge: f64) -> UnitTimes {
        UnitTimes {
            units_ms: ms.to_vec(),
            merge_ms: merge,
        }
    }

    #[test]
    fn list_scheduling_follows_the_claiming_order() {
        let u = units(&[4.0, 1.0, 1.0, 1.0, 3.0], 0.5);
        // Degree 1: the parts, plus the rest of t1 as serial time.
        assert_eq!(predicted_ms(&u, 11.0, 1), 11.0);
        // Degree 2, in order: A takes 4; B takes 1, 1, 1 (free at 3) then 3 (free at 6).
        assert_eq!(predicted_ms(&u, 10.5, 2), 6.5);
        // Five or more threads: the longest unit.
        assert_eq!(predicted_ms(&u, 10.5, 5), 4.5);
        assert_eq!(predicted_ms(&u, 10.5, 64), 4.5);
        // A request of only its merge.
        assert_eq!(predicted_ms(&units(&[], 2.0), 2.0, 4), 2.0);
        // A helper free only at 2 ms: A takes 4; B takes 1, 1 (free at 4); A then takes
        // 1 (5) and B 3 (7).
        assert_eq!(predicted_ms_with_helper_start(&u, 10.5, 2, 2.0), 7.5);
        // A helper that would start after the work is done changes nothing.
        assert_eq!(predicted_ms_with_helper_start(&u, 10.5, 2, 100.0), 10.5);
    }
}
