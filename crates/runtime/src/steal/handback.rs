//! Prompt serialization of a marked request: the ranges its thieves hand back to the worker that started the parallel-for.
//!
//! Tail-control's §4.1 model runs a request on one core once it is caught (Li et al.,
//! PPoPP 2016, §4.1: E7's l/m + w_f, and E9's m_s). With `Dissolve::Prompt`, when a
//! request is marked, every worker other than the one that called `parallel_for` stops
//! at its next unit boundary: instead of running the rest of its range it hands it back
//! here and returns, so it leaves the request and serves others. The calling worker
//! (the *owner*) stops splitting and runs its own ranges in order; once all of its
//! joins are done, which happens only after every thief has returned, it runs the
//! handed-back ranges. Each unit therefore runs exactly once: either on the worker that
//! held it when the mark was seen, or on the owner after the hand-back.

use std::ops::Range;

#[cfg(loom)]
use loom::sync::Mutex;
#[cfg(not(loom))]
use std::sync::Mutex;

/// The ranges handed back to one `parallel_for`'s owner.
#[derive(Debug, Default)]
pub(crate) struct HandBack {
    ranges: Mutex<Vec<Range<usize>>>,
}

impl HandBack {
    pub(crate) fn new() -> HandBack {
        HandBack {
            ranges: Mutex::new(Vec::new()),
        }
    }

    /// A thief hands back the part of its range it will not run.
    pub(crate) fn give(&self, range: Range<usize>) {
        if !range.is_empty() {
            self.ranges
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .push(range);
        }
    }

    /// The owner takes the next handed-back range, lowest first.
    pub(crate) fn take(&self) -> Option<Range<usize>> {
        let mut ranges = self.ranges.lock().unwrap_or_else(|e| e.into_inner());
        let i = (0..ranges.len()).min_by_key(|&i| ranges[i].start)?;
        Some(ranges.swap_remove(i))
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;

    #[test]
    fn gives_back_every_nonempty_range_lowest_first() {
        let h = HandBack::new();
        h.give(8..10);
        h.give(3..3);
        h.give(2..5);
        assert_eq!(h.take(), Some(2..5));
        assert_eq!(h.take(), Some(8..10));
        assert_eq!(h.take(), None);
    }
}

#[cfg(all(test, loom))]
mod loom_tests {
    //! The hand-back protocol, explored exhaustively by loom: an owner, a thief holding
    //! part of the range, and a thief marking the request concurrently.

    use super::*;
    use loom::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
    use loom::sync::Arc;

    const UNITS: usize = 4;

    #[test]
    fn every_unit_runs_once_whenever_the_mark_lands() {
        loom::model(|| {
            let marked = Arc::new(AtomicBool::new(false));
            let runs: Arc<Vec<AtomicUsize>> =
                Arc::new((0..UNITS).map(|_| AtomicUsize::new(0)).collect());
            let handback = Arc::new(HandBack::new());
            let thief_done = Arc::new(AtomicBool::new(false));
            // The thief holds units 2..4: at each unit boundary it checks the mark and,
            // if it is set, hands the rest back and returns (publishing its result).
            let thief = {
                let (marked, runs, handback, done) = (
                    marked.clone(),
                    runs.clone(),
                    handback.clone(),
                    thief_done.clone(),
                );
                loom::thread::spawn(move || {
                    for u in 2..UNITS {
                        if marked.load(Ordering::Acquire) {
                            handback.give(u..UNITS);
                            break;
                        }
                        runs[u].fetch_add(1, Ordering::Relaxed);
                    }
                    done.store(true, Ordering::Release);
                })
            };
            // Another worker's pileup check marks the request.
            let marker = {
                let marked = marked.clone();
                loom::thread::spawn(move || marked.store(true, Ordering::Release))
            };
            // The owner runs its units 0..2, waits for its join (the thief's result),
            // then runs what was handed back.
            for u in 0..2 {
                runs[u].fetch_add(1, Ordering::Relaxed);
            }
            while !thief_done.load(Ordering::Acquire) {
                loom::thread::yield_now();
            }
            while let Some(r) = handback.take() {
                for u in r {
                    runs[u].fetch_add(1, Ordering::Relaxed);
                }
            }
            thief.join().unwrap();
            marker.join().unwrap();
            for u in 0..UNITS {
                assert_eq!(runs[u].load(Ordering::Relaxed), 1, "unit {u}");
            }
        });
    }
}
