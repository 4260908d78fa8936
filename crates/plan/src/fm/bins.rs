//! Binned planning: the paper's faster approximation that groups requests by demand.
//!
//! Haque et al. (ASPLOS 2015, §4.1) note that grouping requests into demand bins with
//! their frequencies cuts the search from hours to minutes. Here K bins of equal width
//! span the profile's sequential times; each non-empty bin becomes one weighted request
//! whose time at each degree is the mean of its members' times at that degree, and whose
//! weight is its member count. The same exact search then runs on the bins.

use tailor_core::DemandProfile;

use super::{FmParams, FmProblem, PlanError};

/// The planning problem for `profile` grouped into `bins` equal-width demand bins.
pub fn binned_problem(
    profile: &DemandProfile,
    params: FmParams,
    bins: usize,
) -> Result<FmProblem, PlanError> {
    if bins == 0 {
        return Err(PlanError::BadParameter {
            name: "--bins",
            reason: "must be at least 1".into(),
        });
    }
    let n = params.max_degree.min(profile.max_degree()).max(1);
    let requests = profile.requests();
    // More bins than requests cannot separate them any further.
    let bins = bins.min(requests.len());
    let (lo, hi) = requests
        .iter()
        .fold((f64::INFINITY, 0.0f64), |(lo, hi), r| {
            (lo.min(r.seq_ms()), hi.max(r.seq_ms()))
        });
    let width = (hi - lo) / bins as f64;
    // Per bin: member count and the sum of times at each degree.
    let mut count = vec![0u32; bins];
    let mut sums = vec![0.0; bins * n];
    for r in requests {
        let b = if width > 0.0 {
            (((r.seq_ms() - lo) / width) as usize).min(bins - 1)
        } else {
            0
        };
        count[b] += 1;
        for d in 0..n {
            sums[b * n + d] += r.times_ms[d];
        }
    }
    let (mut seq, mut speedups, mut weight) = (Vec::new(), Vec::new(), Vec::new());
    for b in (0..bins).filter(|b| count[*b] > 0) {
        let t1 = sums[b * n] / f64::from(count[b]);
        seq.push(t1);
        speedups.extend((0..n).map(|d| sums[b * n] / sums[b * n + d]));
        weight.push(count[b]);
    }
    let degrees = (1..=n).collect();
    FmProblem::from_parts(params, profile.max_degree(), seq, speedups, weight, degrees)
}
