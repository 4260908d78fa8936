//! FM planning defaults derived from a profile: the grid, y, the loads and the degree ladder.
//!
//! `tailor demo` and `tailor plan fm --profile P --cores M` plan with these when no flag
//! says otherwise. The FM paper sets them by hand for its Lucene and Bing (ASPLOS 2015,
//! §4.1 and §6.1): y is the longest request, so that it can stay sequential, and the grid
//! is fine enough to place a helper inside a median request. Here the grid starts at
//! [`FINEST_STEP_MS`] and coarsens only to keep the search within its limit.

use tailor_core::DemandProfile;

/// The finest grid step tried, in ms: a quarter of the median search query on the
/// profiles of 2026-11 (about 1 ms), and the runtime's scheduling quantum at that step.
pub const FINEST_STEP_MS: f64 = 0.25;

/// The most grid points per interval: a ladder of five degrees searches the grid to the
/// power 4, and 150^4 is half the planner's limit of 1e9 schedules.
const MAX_GRID: f64 = 150.0;

/// beta: the percentile the paper minimizes (p99, §6).
pub const DEFAULT_PERCENTILE: f64 = 0.99;

/// The degrees a default plan steps through, doubling (docs/fm-planner.md, "A ladder of
/// degrees"): every degree up to 16 would cost the search its grid to the power 14.
const LADDER: [usize; 5] = [1, 2, 4, 8, 16];

/// The planning inputs a profile implies, for the flags not given.
#[derive(Debug, Clone, PartialEq)]
pub struct FmDefaults {
    /// The interval grid step in ms ([`planning_step_ms`]).
    pub step_ms: f64,
    /// y: the longest request's t1, rounded up to the grid.
    pub max_interval_ms: f64,
    /// beta ([`DEFAULT_PERCENTILE`]).
    pub percentile: f64,
    /// Q: twice the cores, where the demo's loads (up to 90% of capacity) keep well below.
    pub max_load: usize,
    /// The degrees the search steps through ([`ladder`]).
    pub degrees: Vec<usize>,
}

impl FmDefaults {
    /// The defaults for `profile` on `cores` cores with maximum degree `max_degree`.
    pub fn for_profile(profile: &DemandProfile, cores: usize, max_degree: usize) -> FmDefaults {
        let longest = profile
            .requests()
            .iter()
            .map(|r| r.seq_ms())
            .fold(0.0, f64::max);
        let step_ms = planning_step_ms(longest);
        FmDefaults {
            step_ms,
            max_interval_ms: ((longest / step_ms).ceil() * step_ms).max(step_ms),
            percentile: DEFAULT_PERCENTILE,
            max_load: 2 * cores.max(1),
            degrees: ladder(max_degree),
        }
    }
}

/// The grid step for a profile whose longest request takes `longest_ms`:
/// [`FINEST_STEP_MS`], or the coarsest multiple of it that keeps y within [`MAX_GRID`]
/// points.
pub fn planning_step_ms(longest_ms: f64) -> f64 {
    let step = FINEST_STEP_MS;
    step.max((longest_ms / MAX_GRID / step).ceil() * step)
}

/// The doubling degrees below `max_degree`, then `max_degree` itself.
pub fn ladder(max_degree: usize) -> Vec<usize> {
    let mut degrees: Vec<usize> = LADDER.iter().copied().filter(|&d| d < max_degree).collect();
    degrees.push(max_degree.max(1));
    degrees
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_ladder_doubles_up_to_the_highest_degree() {
        assert_eq!(ladder(1), vec![1]);
        assert_eq!(ladder(2), vec![1, 2]);
        assert_eq!(ladder(12), vec![1, 2, 4, 8, 12]);
        assert_eq!(ladder(16), vec![1, 2, 4, 8, 16]);
    }

    #[test]
    fn the_planning_grid_stays_small_for_long_requests() {
        assert_eq!(planning_step_ms(17.65), 0.25);
        for longest in [37.5, 44.0, 50.0, 400.0, 10_000.0] {
            let step = planning_step_ms(longest);
            let points = (longest / step).ceil() + 1.0;
            assert!(
                points <= MAX_GRID + 1.0,
                "{longest} ms: step {step}, {points} points"
            );
            assert_eq!((step / FINEST_STEP_MS).fract(), 0.0, "{step}");
        }
    }

    #[test]
    fn y_covers_the_longest_request_on_the_grid() {
        let profile =
            DemandProfile::parse("request,t1_ms,t2_ms\na,1.1,0.6\nb,40.1,21.0\n", "test").unwrap();
        let d = FmDefaults::for_profile(&profile, 4, 2);
        assert_eq!(d.step_ms, 0.5);
        assert_eq!(d.max_interval_ms, 40.5);
        assert_eq!(d.max_load, 8);
        assert_eq!(d.degrees, vec![1, 2]);
        assert_eq!(d.percentile, 0.99);
    }
}
