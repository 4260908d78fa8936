//! Placement for the heterogeneous-core baselines that use no thresholds: Oblivious and RC (Haque's dissertation, §5.2.6).
//!
//! Pure decision code, shared by the simulator (`tailor_sim::simulate_hetero`) and the
//! live runtime (`tailor_runtime::s2f`), as [`crate::as2f_moves`] is for the threshold
//! policies.

use crate::hetero::Move;

/// Oblivious, the stand-in for the default Linux behaviour: each waiting request, oldest
/// first, takes a random core, or a random free one if that core is busy. Placed
/// requests never move. `busy[c]` says whether core `c` holds a request; `waiting` are
/// the indices of the requests without a core, oldest first; `random(n)` draws from
/// 0..n. Returns (request, core) pairs; it stops at the first request that finds every
/// core busy.
pub fn oblivious_moves(
    busy: &[bool],
    waiting: &[usize],
    random: &mut impl FnMut(usize) -> usize,
) -> Vec<(usize, usize)> {
    let mut busy = busy.to_vec();
    let n = busy.len();
    let mut moves = Vec::new();
    for &request in waiting {
        if n == 0 {
            break;
        }
        let pick = random(n);
        let core = if !busy[pick] {
            pick
        } else {
            let free: Vec<usize> = (0..n).filter(|&c| !busy[c]).collect();
            if free.is_empty() {
                break;
            }
            free[random(free.len())]
        };
        busy[core] = true;
        moves.push((request, core));
    }
    moves
}

/// A request as RC sees it: where it runs, and whether it is long (its work, known in
/// advance, is at least the policy's bound).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RcRequest {
    /// The type of the core it runs on; `None` while it waits.
    pub core_type: Option<usize>,
    /// Whether it is one of the long requests.
    pub long: bool,
}

/// RC, the clairvoyant comparison: long requests take the fastest cores, oldest first,
/// moving up from a slower core when one frees; short ones never use the fastest type
/// and start on the slowest free core. `requests` are every request in the system,
/// oldest first; `free[k]` counts free cores of type k (slowest first). Returns the
/// moves in order, as [`crate::as2f_moves`] does.
pub fn rc_moves(free: &[usize], requests: &[RcRequest]) -> Vec<Move> {
    let Some(fastest) = free.len().checked_sub(1) else {
        return Vec::new();
    };
    let mut free = free.to_vec();
    let mut moves = Vec::new();
    for (i, r) in requests.iter().enumerate() {
        let slower_free = |free: &[usize]| (0..fastest).find(|&k| free[k] > 0);
        let to = match (r.long, r.core_type) {
            (true, Some(on)) if on == fastest => None,
            (true, _) if free[fastest] > 0 => Some(fastest),
            (true, None) | (false, None) => slower_free(&free),
            _ => None,
        };
        if let Some(k) = to {
            free[k] -= 1;
            if let Some(old) = r.core_type {
                free[old] += 1;
            }
            moves.push(Move { request: i, to: k });
        }
    }
    moves
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cycle(values: Vec<usize>) -> impl FnMut(usize) -> usize {
        let mut it = values.into_iter().cycle();
        move |n| it.next().unwrap() % n
    }

    #[test]
    fn oblivious_takes_the_drawn_core_or_a_random_free_one() {
        // Core 1 busy: the first request draws it, so it takes a free one (draw 2 of the
        // free cores [0, 2], i.e. index 0); the second draws core 2, which is free...
        let moves = oblivious_moves(&[false, true, false], &[4, 7], &mut cycle(vec![1, 2, 2]));
        assert_eq!(moves, vec![(4, 0), (7, 2)]);
        // ...and with every core busy nobody is placed.
        let none = oblivious_moves(&[true, true], &[0], &mut cycle(vec![0]));
        assert!(none.is_empty());
    }

    #[test]
    fn rc_sends_long_requests_up_and_keeps_short_ones_off_the_fastest_type() {
        let s = |core_type, long| RcRequest { core_type, long };
        // Types: 2 slow, 1 fast; one slow core is busy with a long request, the fast is free.
        let moves = rc_moves(&[1, 1], &[s(Some(0), true), s(None, false), s(None, true)]);
        // The long one moves up, which frees its slow core; the short one starts there,
        // and the second long one takes the last slow core.
        assert_eq!(
            moves,
            vec![
                Move { request: 0, to: 1 },
                Move { request: 1, to: 0 },
                Move { request: 2, to: 0 },
            ]
        );
        // A short request waits rather than take a free fast core.
        assert!(rc_moves(&[0, 1], &[s(None, false)]).is_empty());
    }
}
