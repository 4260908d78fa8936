//! The core guard: how many threads FM's runtime may give a request, so that request threads
//! never outnumber the cores and a backlog runs sequentially.
//!
//! Haque et al. (ASPLOS 2015, §4.2) let a request's degree follow the interval table
//! wherever it leads: with a target parallelism above the cores, FM's threads share the
//! cores, and boosting decides who runs. On a real 16-core machine a table planned with
//! parallelism priced at zero sent most requests to 16 threads half a millisecond in, far
//! more threads than cores were runnable, and FM's p99 collapsed to 5-17 times SEQ's at
//! 45% load (shared/data/live16-2026-11-27). tailor's runtime therefore departs from §4.2
//! (docs/guard.md):
//!
//! - every request thread holds one of the cores while it works, so threads in use never
//!   exceed the cores, whatever the table says;
//! - a raise sends a helper only while a core is free and the request has an unclaimed
//!   unit that no thread already on it will take;
//! - while any request waits for a core, no degree is raised, requests start at degree 1,
//!   and a helper gives its core to the oldest waiting request at its next unit boundary:
//!   a backlog runs sequentially until it drains.
//!
//! The table still decides *when* a request would like more threads; the guard only
//! decides whether the machine has them. These are the decisions; the runtime
//! (`tailor_runtime`) and the simulator (`tailor_sim`) both call them.

/// Helpers a raise may send now.
///
/// `wanted` is the degree the policy asks for, `threads` the threads on the request now
/// (its first thread included) and `pending` the helpers sent to it that have not joined
/// yet. `unclaimed` is its units no thread has claimed; each thread on it, and each
/// pending helper, will claim one of them next, so only the rest can use a new helper.
/// `free_cores` are the cores no request thread holds and `waiting` the requests waiting
/// for one.
///
/// The result never exceeds `free_cores`, is zero while anything waits, and keeps
/// `pending` + result <= `unclaimed` - `threads` (so help tickets <= units left - 1 for a
/// request with at least one thread).
pub fn helpers_granted(
    wanted: usize,
    threads: usize,
    pending: usize,
    unclaimed: usize,
    free_cores: usize,
    waiting: usize,
) -> usize {
    if waiting > 0 {
        return 0;
    }
    let shortfall = wanted.saturating_sub(threads + pending);
    let useful = unclaimed.saturating_sub(threads + pending);
    shortfall.min(useful).min(free_cores)
}

/// The degree a request starts at under the guard: the policy's `degree`, but 1 while
/// other requests wait for a core, and never more threads than its first thread plus
/// [`helpers_granted`] allows (`free_cores` are those left after its first thread took
/// one).
pub fn start_threads(degree: usize, units: usize, free_cores: usize, waiting: usize) -> usize {
    1 + helpers_granted(degree.max(1), 1, 0, units, free_cores, waiting)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_backlog_gets_no_helpers() {
        assert_eq!(helpers_granted(16, 1, 0, 16, 15, 1), 0);
        assert_eq!(start_threads(16, 16, 15, 3), 1);
    }

    #[test]
    fn helpers_are_capped_by_cores_units_and_the_shortfall() {
        // Free cores bind.
        assert_eq!(helpers_granted(16, 1, 0, 16, 3, 0), 3);
        // Units bind: 4 unclaimed, 1 thread on it and 1 pending take 2 of them.
        assert_eq!(helpers_granted(16, 1, 1, 4, 10, 0), 2);
        // The shortfall binds: degree 4 with 2 threads and 1 pending wants 1 more.
        assert_eq!(helpers_granted(4, 2, 1, 16, 10, 0), 1);
        // Nothing left to claim.
        assert_eq!(helpers_granted(8, 3, 0, 2, 10, 0), 0);
        assert_eq!(start_threads(4, 16, 10, 0), 4);
        assert_eq!(start_threads(4, 2, 10, 0), 2);
        assert_eq!(start_threads(1, 16, 10, 0), 1);
        assert_eq!(start_threads(8, 16, 0, 0), 1);
    }

    #[test]
    fn tickets_never_exceed_the_units_left_but_one() {
        for wanted in 1..=8 {
            for threads in 1..=4 {
                for pending in 0..=4 {
                    for unclaimed in 0..=10 {
                        for free in 0..=6 {
                            let n = helpers_granted(wanted, threads, pending, unclaimed, free, 0);
                            assert!(n <= free);
                            if n > 0 {
                                assert!(
                                    pending + n < unclaimed,
                                    "{wanted} {threads} {pending} {unclaimed} {free}"
                                );
                                assert!(threads + pending + n <= wanted);
                            }
                        }
                    }
                }
            }
        }
    }
}
