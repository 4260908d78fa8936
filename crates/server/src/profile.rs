//! `GET /profile`: the runtime's rolling record of served requests as tailor's profile CSV.
//!
//! Each served request becomes a profile row: t1 is its units' and merge's measured times,
//! and the higher degrees are predicted from its unit times by list scheduling
//! (`tailor_bench::predicted_ms`), as the demo projects a profile to more threads.
//! `tailor plan fm --profile` plans from it as from an offline profile.

use tailor_bench::{projected_profile, UnitTimes};
use tailor_core::{DemandProfile, RequestProfile};
use tailor_runtime::ServedRequest;

/// The profile of `served`, degrees 1..=`degrees`; rows are named `s1`, `s2`, ... oldest
/// first. `None` when nothing was served.
pub(crate) fn served_profile(
    served: &[ServedRequest],
    degrees: usize,
) -> Result<Option<DemandProfile>, String> {
    if served.is_empty() {
        return Ok(None);
    }
    let measured = DemandProfile::new(
        served
            .iter()
            .enumerate()
            .map(|(i, r)| RequestProfile {
                id: format!("s{}", i + 1),
                // A request of no measurable time still needs a positive t1.
                times_ms: vec![r.work_ms().max(1e-6)],
            })
            .collect(),
    )?;
    let units: Vec<UnitTimes> = served
        .iter()
        .map(|r| UnitTimes {
            units_ms: r.units_ms.clone(),
            merge_ms: r.merge_ms,
        })
        .collect();
    projected_profile(&measured, &units, degrees.max(1)).map(Some)
}

/// The profile as CSV text.
pub(crate) fn csv(profile: &DemandProfile) -> String {
    let mut out = Vec::new();
    profile
        .write(&mut out)
        .expect("writing to a Vec cannot fail");
    String::from_utf8(out).expect("the profile CSV is UTF-8")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn served_requests_become_rows_with_list_scheduled_degrees() {
        let served = vec![
            ServedRequest {
                arrival: std::time::Instant::now(),
                units_ms: vec![4.0, 1.0, 1.0, 1.0, 3.0],
                merge_ms: 0.5,
                max_degree: 2,
                latency_ms: 9.0,
            },
            ServedRequest {
                arrival: std::time::Instant::now(),
                units_ms: vec![],
                merge_ms: 2.0,
                max_degree: 1,
                latency_ms: 2.0,
            },
        ];
        let p = served_profile(&served, 2).unwrap().unwrap();
        assert_eq!(p.requests()[0].times_ms, vec![10.5, 6.5]);
        assert_eq!(p.requests()[1].times_ms, vec![2.0, 2.0]);
        let text = csv(&p);
        assert!(
            text.starts_with("request,t1_ms,t2_ms\ns1,10.5,6.5\n"),
            "{text}"
        );
        assert!(served_profile(&[], 2).unwrap().is_none());
    }
}
