//! Heterogeneous cores, their energy model, and Adaptive Slow-to-Fast placement as pure decision code.
//!
//! Haque, "Managing Tail Latency in Interactive Services for Multicore Servers" (PhD
//! dissertation, Rutgers 2016), Chapter 5:
//! - core types differ in speed s and peak dynamic power p, with p cubic in s (§5.2.5,
//!   Table 5.3: slow (1, 1), medium (1.44, 3), medium+ (1.59, 4), medium++ (1.71, 5),
//!   fast (2, 8), each within 1% of s³);
//! - static power is 20% of the chip's peak power (§5.2.5);
//! - requests run sequentially; Algorithm 2 (§5.1.3), generalized to N core types with
//!   N - 1 age thresholds, moves the oldest requests to faster cores first.
//!
//! The simulator (`tailor_sim::hetero`) asks [`as2f_moves`] at every scheduling point.

use crate::error::SpecError;

/// The most cores a set may have.
pub const MAX_CORES: usize = 1 << 16;

/// Static power as a fraction of the chip's peak power (§5.2.5).
pub const STATIC_SHARE: f64 = 0.2;

/// Peak dynamic power of a core of relative speed `speed`, in units of a speed-1 core's:
/// cubic in speed, since voltage scales with frequency and dynamic power with V²f
/// (§5.2.5; Table 5.3's values are s³ rounded).
pub fn dynamic_power(speed: f64) -> f64 {
    speed * speed * speed
}

/// Energy from busy core-ms per kind (core type or P-state) and each kind's busy power.
pub(crate) fn energy_of(busy_ms: &[f64], busy_power: impl Fn(usize) -> f64) -> f64 {
    busy_ms
        .iter()
        .enumerate()
        .map(|(k, b)| busy_power(k) * b)
        .sum()
}

/// One kind of core: its speed (work-ms done per ms; the slowest type of Table 5.3 is 1)
/// and peak dynamic power (a speed-1 core's is 1 per ms).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct CoreType {
    /// Relative performance s_i.
    pub speed: f64,
    /// Peak dynamic power p_i.
    pub power: f64,
}

/// The cores of a machine, grouped by type, slowest type first.
#[derive(Debug, Clone, PartialEq)]
pub struct CoreSet {
    types: Vec<CoreType>,
    counts: Vec<usize>,
}

impl CoreSet {
    /// `m` identical speed-1 cores.
    pub fn homogeneous(m: usize) -> CoreSet {
        CoreSet {
            types: vec![CoreType {
                speed: 1.0,
                power: 1.0,
            }],
            counts: vec![m],
        }
    }

    /// Parses `--cores`: `M`, or `COUNT@SPEED,...` (shared/spec/cli.md). Groups of one
    /// speed are merged; types are ordered by speed.
    pub fn parse(text: &str) -> Result<CoreSet, SpecError> {
        let bad = |reason: String| SpecError::syntax("--cores", text, reason);
        if let Ok(m) = text.trim().parse::<usize>() {
            if m == 0 || m > MAX_CORES {
                return Err(bad(format!("must be from 1 to {MAX_CORES}")));
            }
            return Ok(CoreSet::homogeneous(m));
        }
        let mut groups: Vec<(f64, usize)> = Vec::new();
        for group in text.split(',') {
            let (count, speed) = group
                .trim()
                .split_once('@')
                .ok_or_else(|| bad(format!("{group:?} is neither M nor COUNT@SPEED")))?;
            let count: usize = count
                .parse()
                .ok()
                .filter(|c| *c >= 1)
                .ok_or_else(|| bad(format!("count {count:?} must be a whole number >= 1")))?;
            let speed: f64 = speed
                .parse()
                .ok()
                .filter(|s: &f64| s.is_finite() && *s > 0.0)
                .ok_or_else(|| bad(format!("speed {speed:?} must be a positive number")))?;
            match groups.iter_mut().find(|(s, _)| *s == speed) {
                Some((_, c)) => *c += count,
                None => groups.push((speed, count)),
            }
            let total: usize = groups
                .iter()
                .map(|g| g.1)
                .fold(0usize, usize::saturating_add);
            if total > MAX_CORES {
                return Err(bad(format!("more than {MAX_CORES} cores")));
            }
        }
        groups.sort_by(|a, b| a.0.total_cmp(&b.0));
        Ok(CoreSet {
            types: groups
                .iter()
                .map(|&(speed, _)| CoreType {
                    speed,
                    power: dynamic_power(speed),
                })
                .collect(),
            counts: groups.iter().map(|&(_, c)| c).collect(),
        })
    }

    /// The core types, slowest first.
    pub fn types(&self) -> &[CoreType] {
        &self.types
    }

    /// Cores of each type, in the order of [`types`](Self::types).
    pub fn counts(&self) -> &[usize] {
        &self.counts
    }

    /// The type of each core, cores numbered slowest type first.
    pub fn core_types(&self) -> Vec<usize> {
        self.counts
            .iter()
            .enumerate()
            .flat_map(|(k, &c)| std::iter::repeat_n(k, c))
            .collect()
    }

    /// All cores.
    pub fn total(&self) -> usize {
        self.counts.iter().sum()
    }

    /// The cores' total speed, in speed-1 cores.
    pub fn capacity(&self) -> f64 {
        self.types
            .iter()
            .zip(&self.counts)
            .map(|(t, &c)| t.speed * c as f64)
            .sum()
    }

    /// Whether every core runs at speed 1 (the thread-pool and work-stealing models).
    pub fn is_uniform_unit(&self) -> bool {
        self.types.len() == 1 && self.types[0].speed == 1.0
    }

    /// The chip's static power: [`STATIC_SHARE`] of its peak power, whose other 80% is
    /// the cores' peak dynamic power.
    pub fn static_power(&self) -> f64 {
        let dynamic: f64 = self
            .types
            .iter()
            .zip(&self.counts)
            .map(|(t, &c)| t.power * c as f64)
            .sum();
        dynamic * STATIC_SHARE / (1.0 - STATIC_SHARE)
    }

    /// Power of a busy core of type `k`: its peak dynamic power plus an equal share of
    /// the chip's static power. Idle cores are taken to be power-gated, so static power
    /// is charged only while a core runs a request (docs/as2f.md says why: charging it
    /// over idle time too would hold RTL's energy near EE's at low load, while §5.3.1
    /// reports 2.8x).
    pub fn busy_power(&self, k: usize) -> f64 {
        self.types[k].power + self.static_power() / self.total() as f64
    }

    /// Energy of a run, in model units (a speed-1 core busy for 1 ms uses 1 of dynamic
    /// energy): each type's busy core-ms times its [`busy_power`](Self::busy_power).
    pub fn energy(&self, busy_ms: &[f64]) -> f64 {
        energy_of(busy_ms, |k| self.busy_power(k))
    }

    /// The dynamic part of [`energy`](Self::energy).
    pub fn dynamic_energy(&self, busy_ms: &[f64]) -> f64 {
        self.types
            .iter()
            .zip(busy_ms)
            .map(|(t, b)| t.power * b)
            .sum()
    }

    /// The `COUNT@SPEED,...` text of this set.
    pub fn spec(&self) -> String {
        self.types
            .iter()
            .zip(&self.counts)
            .map(|(t, c)| format!("{c}@{}", t.speed))
            .collect::<Vec<_>>()
            .join(",")
    }
}

/// Ages this close below a threshold count as past it, so that a crossing scheduled
/// for arrival + threshold is seen at that time despite rounding.
pub const AGE_TOLERANCE_MS: f64 = 1e-6;

/// A request as placement sees it.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Placed {
    /// Time since arrival, ms (Algorithm 2's age a).
    pub age_ms: f64,
    /// The type of the core it runs on; `None` while it waits (at low priority).
    pub core_type: Option<usize>,
}

/// One placement decision: request `request` (an index into the slice given) moves to,
/// or starts on, a free core of type `to`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Move {
    /// Index of the request.
    pub request: usize,
    /// The core type it goes to.
    pub to: usize,
}

/// Algorithm 2 of the dissertation (§5.1.3), generalized to N core types.
///
/// `requests` are every request in the system, **oldest first**; `thresholds[k - 1]` is
/// the age at which a request may go to type k (so `thresholds` has N - 1 entries, and
/// type 0 needs none); `free[k]` counts free cores of type k. Returns the moves, in
/// order. Requests never move to a slower type, and nobody is preempted.
///
/// 1. **Promotion, fastest type first.** Each free core of type k goes to the oldest
///    request on a slower type (or waiting) that either has crossed `thresholds[k - 1]`
///    (lines 5-9) or must move because the requests no older than it outnumber the cores
///    slower than k (lines 10-14: with n requests, the i-th oldest may take type k when
///    i <= n - (cores slower than k)).
/// 2. **Arrival.** Waiting requests, oldest first, start on the slowest free cores
///    (lines 18-20). One that finds none keeps waiting at low priority (lines 16-17),
///    which the simulator models as waiting for a core.
///
/// RTL is all thresholds 0, EE all infinite.
pub fn as2f_moves(
    thresholds: &[f64],
    capacity: &[usize],
    free: &[usize],
    requests: &[Placed],
) -> Vec<Move> {
    let n_types = capacity.len();
    debug_assert_eq!(thresholds.len() + 1, n_types);
    let mut free = free.to_vec();
    let mut place: Vec<Option<usize>> = requests.iter().map(|r| r.core_type).collect();
    let mut moves = Vec::new();
    let n = requests.len();
    let mut slower = 0usize;
    let slower_than: Vec<usize> = capacity
        .iter()
        .map(|&c| {
            let s = slower;
            slower += c;
            s
        })
        .collect();
    for k in (1..n_types).rev() {
        while free[k] > 0 {
            let pick = (0..n).find(|&i| {
                let below = place[i].is_none_or(|t| t < k);
                let crossed = requests[i].age_ms + AGE_TOLERANCE_MS >= thresholds[k - 1];
                let forced = i < n.saturating_sub(slower_than[k]);
                below && (crossed || forced)
            });
            let Some(i) = pick else { break };
            if let Some(t) = place[i] {
                free[t] += 1;
            }
            free[k] -= 1;
            place[i] = Some(k);
            moves.push(Move { request: i, to: k });
        }
    }
    for (i, p) in place.iter_mut().enumerate() {
        if p.is_some() {
            continue;
        }
        let Some(k) = (0..n_types).find(|&k| free[k] > 0) else {
            break;
        };
        free[k] -= 1;
        *p = Some(k);
        moves.push(Move { request: i, to: k });
    }
    moves
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(age: f64, t: Option<usize>) -> Placed {
        Placed {
            age_ms: age,
            core_type: t,
        }
    }

    #[test]
    fn parses_core_lists_and_merges_speeds() {
        let c = CoreSet::parse("8@1,1@2").unwrap();
        assert_eq!(c.counts(), &[8, 1]);
        assert_eq!(c.types()[1].power, 8.0);
        assert_eq!(c.total(), 9);
        let c = CoreSet::parse("1@2,3@1,2@1").unwrap();
        assert_eq!(c.counts(), &[5, 1]);
        assert_eq!(c.spec(), "5@1,1@2");
        assert_eq!(c.core_types(), vec![0, 0, 0, 0, 0, 1]);
        assert!(CoreSet::parse("16").unwrap().is_uniform_unit());
        for bad in [
            "0",
            "8@",
            "x@1",
            "0@1",
            "2@0",
            "2@-1",
            "2@nan",
            "",
            "70000",
            "40000@1,40000@2",
        ] {
            assert!(CoreSet::parse(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn table_5_3_powers_are_cubic() {
        for (s, p) in [
            (1.0, 1.0),
            (1.44, 3.0),
            (1.59, 4.0),
            (1.71, 5.0),
            (2.0, 8.0),
        ] {
            assert!((dynamic_power(s) - p).abs() / p < 0.01, "{s}");
        }
    }

    #[test]
    fn static_power_is_a_fifth_of_peak() {
        // 8 slow + 1 fast: peak dynamic 16, so static 4 and chip peak 20.
        let c = CoreSet::parse("8@1,1@2").unwrap();
        assert!((c.static_power() - 4.0).abs() < 1e-12);
        // Static 4 over 9 cores: a busy core adds 4/9. 10 ms slow and 5 ms fast.
        let e = 10.0 * (1.0 + 4.0 / 9.0) + 5.0 * (8.0 + 4.0 / 9.0);
        assert!((c.energy(&[10.0, 5.0]) - e).abs() < 1e-9);
        assert!((c.dynamic_energy(&[10.0, 5.0]) - 50.0).abs() < 1e-9);
    }

    #[test]
    fn new_requests_start_on_slow_cores_and_cross_to_fast() {
        // Two types: 2 slow, 1 fast; threshold 50 ms.
        let cap = [2, 1];
        // A new request with everything free starts slow.
        let m = as2f_moves(&[50.0], &cap, &[2, 1], &[at(0.0, None)]);
        assert_eq!(m, vec![Move { request: 0, to: 0 }]);
        // Past the threshold it moves to the free fast core.
        let m = as2f_moves(&[50.0], &cap, &[1, 1], &[at(60.0, Some(0))]);
        assert_eq!(m, vec![Move { request: 0, to: 1 }]);
        // Below it, it stays.
        assert!(as2f_moves(&[50.0], &cap, &[1, 1], &[at(40.0, Some(0))]).is_empty());
    }

    #[test]
    fn the_oldest_moves_first_and_rtl_starts_fast() {
        let cap = [2, 1];
        let reqs = [at(70.0, Some(0)), at(60.0, Some(0))];
        let m = as2f_moves(&[50.0], &cap, &[0, 1], &reqs);
        assert_eq!(m, vec![Move { request: 0, to: 1 }]);
        // RTL: threshold 0, a new request takes the free fast core.
        let m = as2f_moves(&[0.0], &cap, &[2, 1], &[at(0.0, None)]);
        assert_eq!(m, vec![Move { request: 0, to: 1 }]);
    }

    #[test]
    fn ee_promotes_the_oldest_when_slow_cores_run_out() {
        // EE (infinite threshold): both slow cores busy and a new request waits, so the
        // oldest moves to the fast core and the new one takes its slow core.
        let cap = [2, 1];
        let reqs = [at(30.0, Some(0)), at(10.0, Some(0)), at(0.0, None)];
        let m = as2f_moves(&[f64::INFINITY], &cap, &[0, 1], &reqs);
        assert_eq!(
            m,
            vec![Move { request: 0, to: 1 }, Move { request: 2, to: 0 }]
        );
        // With a slow core free, nobody is promoted.
        let reqs = [at(30.0, Some(0)), at(0.0, None)];
        let m = as2f_moves(&[f64::INFINITY], &cap, &[1, 1], &reqs);
        assert_eq!(m, vec![Move { request: 1, to: 0 }]);
    }

    #[test]
    fn three_types_fill_from_the_fastest() {
        // 1 slow, 1 medium, 1 fast; thresholds 10 and 20 ms.
        let cap = [1, 1, 1];
        let reqs = [at(25.0, Some(0)), at(15.0, None), at(0.0, None)];
        let m = as2f_moves(&[10.0, 20.0], &cap, &[0, 1, 1], &reqs);
        // The 25 ms request goes to fast (its slow core frees), the 15 ms one to medium,
        // and the new one to the freed slow core.
        assert_eq!(
            m,
            vec![
                Move { request: 0, to: 2 },
                Move { request: 1, to: 1 },
                Move { request: 2, to: 0 }
            ]
        );
        // Nobody moves down, and a full machine leaves the newest waiting.
        let reqs = [
            at(5.0, Some(2)),
            at(4.0, Some(1)),
            at(3.0, Some(0)),
            at(0.0, None),
        ];
        assert!(as2f_moves(&[10.0, 20.0], &cap, &[0, 0, 0], &reqs).is_empty());
    }
}
