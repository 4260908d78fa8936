//! Tail-control's shared bookkeeping (Li et al., PPoPP 2016, §4.2 and Fig. 5), read without locks.
//!
//! Fig. 5 keeps, per worker, the request it is on (`curr_request`) and when it began
//! (`start_time`); per request, the processed time flushed by workers that left it, and
//! a stealable flag; globally, the active-request counter. A thief about to steal runs
//! `check_pileup_phase`: it estimates each running request's processed time as the
//! flushed time plus the in-flight time of every worker on it, and marks the requests
//! past the threshold for the current load as not stealable.
//!
//! Here every field is an atomic, and the thief's reads take no lock, as §4.2's last
//! paragraph asks: a stale value costs a little accuracy, never a stalled worker. A
//! started request lives in the *slot* of the worker that runs its root task (a root
//! worker stays on its request until the request ends, so slots never outnumber
//! workers). A slot's state word holds the request's generation and its stealable bit,
//! so marking is one compare-and-swap that fails if the request has ended or the slot
//! holds a newer one: a thief with stale reads can never mark the wrong request. A
//! worker flushes its time into the slot before it publishes its task's result, and the
//! root ends the request only after every result is published, so no flush can land on
//! the slot's next request.

#[cfg(loom)]
use loom::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
#[cfg(not(loom))]
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};

use tailor_core::StealPolicy;

/// Who a worker is on: 0 for no request, else the slot plus one in the low byte and the
/// request's generation above it.
pub(crate) type Key = u64;

const SLOT_BITS: u32 = 8;
/// The most workers a board can track (slots fit in the key's low byte).
pub(crate) const MAX_WORKERS: usize = (1 << SLOT_BITS) - 1;
/// `work_ns` of a request whose work is not known.
const UNKNOWN: u64 = u64::MAX;

fn key(slot: usize, generation: u64) -> Key {
    (generation << SLOT_BITS) | (slot as u64 + 1)
}

fn unkey(key: Key) -> Option<(usize, u64)> {
    let slot = (key & ((1 << SLOT_BITS) - 1)) as usize;
    (slot != 0).then(|| (slot - 1, key >> SLOT_BITS))
}

/// A slot's state word: the generation shifted left once, and the stealable bit.
fn state(generation: u64, stealable: bool) -> u64 {
    (generation << 1) | stealable as u64
}

#[derive(Debug, Default)]
struct WorkerCell {
    /// `curr_request` of Fig. 5: a [`Key`], or 0.
    current: AtomicU64,
    /// `start_time` of Fig. 5, ns since the board's epoch.
    start_ns: AtomicU64,
}

#[derive(Debug)]
struct RequestSlot {
    /// Generation and stealable bit; 0 when the slot holds no request (generations start
    /// at 1).
    state: AtomicU64,
    /// Processed time flushed by workers that left the request, ns.
    processed_ns: AtomicU64,
    /// The request's true work for the clairvoyant variant, ns, or [`UNKNOWN`].
    work_ns: AtomicU64,
    /// One bit per worker that has run some of the request (its degree).
    members: AtomicU64,
}

/// What a request's slot says when it ends.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Ended {
    /// Total processed time: the thread-time all its workers spent on it, ns.
    pub(crate) processed_ns: u64,
    /// How many workers ran some of it (counting at most 64 distinct ones).
    pub(crate) workers: u32,
}

/// The shared bookkeeping of one executor.
#[derive(Debug)]
pub(crate) struct Board {
    workers: Box<[WorkerCell]>,
    slots: Box<[RequestSlot]>,
    /// Active requests: arrived and not yet finished, waiting ones included (the load q
    /// of §4.1; docs/tail-control.md, open question 1).
    active: AtomicUsize,
}

impl Board {
    pub(crate) fn new(workers: usize) -> Board {
        assert!((1..=MAX_WORKERS).contains(&workers));
        Board {
            workers: (0..workers).map(|_| WorkerCell::default()).collect(),
            slots: (0..workers)
                .map(|_| RequestSlot {
                    state: AtomicU64::new(0),
                    processed_ns: AtomicU64::new(0),
                    work_ns: AtomicU64::new(UNKNOWN),
                    members: AtomicU64::new(0),
                })
                .collect(),
            active: AtomicUsize::new(0),
        }
    }

    /// A request arrived; returns the active count with it.
    pub(crate) fn arrive(&self) -> usize {
        self.active.fetch_add(1, Ordering::SeqCst) + 1
    }

    /// A request left (finished, failed, cancelled or refused).
    pub(crate) fn depart(&self) {
        self.active.fetch_sub(1, Ordering::SeqCst);
    }

    pub(crate) fn active(&self) -> usize {
        self.active.load(Ordering::SeqCst)
    }

    /// Worker `slot` starts a request's root: the request takes generation `generation`
    /// of the worker's slot. Only the slot's worker calls this, between requests.
    pub(crate) fn begin(
        &self,
        slot: usize,
        generation: u64,
        work_ns: Option<u64>,
        stealable: bool,
    ) -> Key {
        let s = &self.slots[slot];
        s.processed_ns.store(0, Ordering::Relaxed);
        s.members.store(0, Ordering::Relaxed);
        s.work_ns
            .store(work_ns.unwrap_or(UNKNOWN), Ordering::Relaxed);
        // A swap, not a store: every write of the state word is a read-modify-write, so
        // its modification order is the order of the writes even under loom, which can
        // let a compare-and-swap read past a plain store (tokio-rs/loom#282).
        s.state.swap(state(generation, stealable), Ordering::AcqRel);
        key(slot, generation)
    }

    /// The request in `slot` ends: thieves can no longer mark it. Call it after every
    /// worker on it has left.
    pub(crate) fn end(&self, slot: usize) -> Ended {
        let s = &self.slots[slot];
        s.state.swap(0, Ordering::AcqRel);
        Ended {
            processed_ns: s.processed_ns.load(Ordering::Acquire),
            workers: s.members.load(Ordering::Relaxed).count_ones(),
        }
    }

    /// `worker` starts working on the request `key` at `now_ns` (Fig. 5a lines 27-30).
    /// The start time is written before the request, so a thief that sees the request
    /// sees this start time or a later one.
    pub(crate) fn enter(&self, worker: usize, key: Key, now_ns: u64) {
        let cell = &self.workers[worker];
        cell.start_ns.store(now_ns, Ordering::Relaxed);
        cell.current.store(key, Ordering::Release);
        if let Some((slot, _)) = unkey(key) {
            self.slots[slot]
                .members
                .fetch_or(1 << (worker % 64), Ordering::Relaxed);
        }
    }

    /// `worker` leaves its request at `now_ns` (Fig. 5a lines 18-21): its time since it
    /// entered is added to the request's processed time. Call it before publishing the
    /// result of the task that kept the worker on the request.
    pub(crate) fn leave(&self, worker: usize, now_ns: u64) {
        let cell = &self.workers[worker];
        let key = cell.current.swap(0, Ordering::AcqRel);
        if let Some((slot, _)) = unkey(key) {
            let spent = now_ns.saturating_sub(cell.start_ns.load(Ordering::Relaxed));
            self.slots[slot]
                .processed_ns
                .fetch_add(spent, Ordering::AcqRel);
        }
    }

    /// The request `worker` is on, or 0.
    pub(crate) fn current(&self, worker: usize) -> Key {
        self.workers[worker].current.load(Ordering::Acquire)
    }

    /// Whether a thief may steal from `victim`: it is on a request (the only one whose
    /// tasks are in its deque) that is running and not marked. A victim on no request has
    /// an empty deque, and one whose request just ended may be about to start another.
    pub(crate) fn stealable_from(&self, victim: usize) -> bool {
        self.is_stealable(self.current(victim))
    }

    /// Whether request `key` is still unmarked (and running).
    pub(crate) fn is_stealable(&self, key: Key) -> bool {
        let Some((slot, generation)) = unkey(key) else {
            return false;
        };
        self.slots[slot].state.load(Ordering::Acquire) == state(generation, true)
    }

    /// Marks request `key` as not stealable if it is still running and unmarked; returns
    /// whether this call marked it.
    pub(crate) fn mark(&self, key: Key) -> bool {
        let Some((slot, generation)) = unkey(key) else {
            return false;
        };
        self.slots[slot]
            .state
            .compare_exchange(
                state(generation, true),
                state(generation, false),
                Ordering::AcqRel,
                Ordering::Relaxed,
            )
            .is_ok()
    }

    /// Fig. 5b's `check_pileup_phase`, run by `thief` (which has left its request) at
    /// `now_ns`: estimates each running request's processed time, counting its flushed
    /// time once and every worker's in-flight time, and marks those the policy
    /// serializes at the current load. `seen` is scratch space (request, estimate).
    /// Returns how many requests this call marked.
    pub(crate) fn check_pileup_phase(
        &self,
        thief: usize,
        now_ns: u64,
        policy: &StealPolicy,
        seen: &mut Vec<(Key, u64)>,
    ) -> usize {
        let active = self.active();
        if active == 0 {
            return 0;
        }
        seen.clear();
        let mut marked = 0;
        for (w, cell) in self.workers.iter().enumerate() {
            if w == thief {
                continue;
            }
            let key = cell.current.load(Ordering::Acquire);
            let Some((slot, _)) = unkey(key) else {
                continue;
            };
            let start = cell.start_ns.load(Ordering::Relaxed);
            let slot = &self.slots[slot];
            let in_flight = now_ns.saturating_sub(start);
            let estimate = match seen.iter_mut().find(|(k, _)| *k == key) {
                Some((_, total)) => {
                    *total += in_flight;
                    *total
                }
                None => {
                    let total = slot.processed_ns.load(Ordering::Relaxed) + in_flight;
                    seen.push((key, total));
                    total
                }
            };
            let work = slot.work_ns.load(Ordering::Relaxed);
            let work_ms = (work != UNKNOWN).then(|| work as f64 / 1e6);
            if policy.serializes(active, estimate as f64 / 1e6, work_ms) && self.mark(key) {
                marked += 1;
            }
        }
        marked
    }
}

/// A one-row tail-control policy for the tests.
#[cfg(test)]
fn test_policy(threshold_ms: f64) -> StealPolicy {
    use tailor_core::{TailControlRow, TailControlTable, TAIL_CONTROL_TABLE_KIND};
    StealPolicy::TailControl(std::sync::Arc::new(TailControlTable {
        kind: TAIL_CONTROL_TABLE_KIND.into(),
        target_ms: 10.0,
        rps: 100.0,
        cores: 2,
        rows: vec![TailControlRow {
            active: 1,
            threshold_ms,
            expected_misses: 1.0,
        }],
    }))
}

/// One millisecond in ns, for the tests.
#[cfg(test)]
const MS: u64 = 1_000_000;

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;

    #[test]
    fn a_request_on_two_workers_counts_its_flushed_time_once() {
        let board = Board::new(4);
        board.arrive();
        let k = board.begin(0, 1, None, true);
        board.enter(0, k, 0);
        board.enter(1, k, 0);
        board.leave(1, 3 * MS); // 3 ms flushed
        board.enter(2, k, 4 * MS);
        // At 5 ms: flushed 3 + worker 0's 5 + worker 2's 1 = 9 ms.
        let mut seen = Vec::new();
        assert_eq!(
            board.check_pileup_phase(3, 5 * MS, &test_policy(9.0), &mut seen),
            0
        );
        assert_eq!(seen, vec![(k, 9 * MS)]);
        assert!(board.is_stealable(k));
        assert_eq!(
            board.check_pileup_phase(3, 5 * MS, &test_policy(8.9), &mut seen),
            1
        );
        assert!(!board.is_stealable(k));
        assert!(!board.stealable_from(0) && !board.stealable_from(2));
        // Marking again changes nothing; a worker on no request has nothing to steal.
        assert_eq!(
            board.check_pileup_phase(3, 6 * MS, &test_policy(1.0), &mut seen),
            0
        );
        assert!(!board.stealable_from(3));
    }

    #[test]
    fn an_ended_request_cannot_be_marked_and_its_slot_starts_clean() {
        let board = Board::new(2);
        board.arrive();
        let old = board.begin(0, 1, None, true);
        board.enter(0, old, 0);
        board.leave(0, 2 * MS);
        let ended = board.end(0);
        assert_eq!(
            ended,
            Ended {
                processed_ns: 2 * MS,
                workers: 1
            }
        );
        let new = board.begin(0, 2, None, true);
        assert!(
            !board.mark(old),
            "a stale key must not mark the slot's next request"
        );
        assert!(board.is_stealable(new));
        assert!(board.mark(new));
    }

    #[test]
    fn the_clairvoyant_variant_marks_by_work_and_baselines_never_mark() {
        let board = Board::new(2);
        board.arrive();
        let k = board.begin(0, 1, Some(50 * MS), true);
        board.enter(0, k, 0);
        let mut seen = Vec::new();
        assert_eq!(
            board.check_pileup_phase(1, MS, &StealPolicy::StealFirst, &mut seen),
            0
        );
        let StealPolicy::TailControl(t) = test_policy(10.0) else {
            unreachable!()
        };
        let cv = StealPolicy::TailControlClairvoyant(t);
        assert_eq!(board.check_pileup_phase(1, MS, &cv, &mut seen), 1);
    }

    #[test]
    fn with_no_active_request_nothing_is_checked() {
        let board = Board::new(2);
        let k = board.begin(0, 1, None, true);
        board.enter(0, k, 0);
        let mut seen = Vec::new();
        assert_eq!(
            board.check_pileup_phase(1, 100 * MS, &test_policy(1.0), &mut seen),
            0
        );
    }
}

#[cfg(all(test, loom))]
mod loom_tests {
    //! The races of Fig. 5's unlocked reads, explored exhaustively by loom.
    use super::*;
    use loom::sync::Arc;

    /// A thief checking while the root worker ends its request and starts the next one
    /// in the same slot never marks the next one: the mark is a compare-and-swap on the
    /// generation the thief read.
    #[test]
    fn a_stale_check_never_marks_the_next_request() {
        loom::model(|| {
            let board = Arc::new(Board::new(2));
            board.arrive();
            let first = board.begin(0, 1, None, true);
            board.enter(0, first, 0);
            let root = {
                let board = board.clone();
                loom::thread::spawn(move || {
                    board.leave(0, 5 * MS);
                    board.end(0);
                    board.begin(0, 2, None, true)
                })
            };
            let mut seen = Vec::new();
            board.check_pileup_phase(1, 10 * MS, &test_policy(1.0), &mut seen);
            let second = root.join().unwrap();
            // Read back with a read-modify-write: loom can hand a plain load after a
            // join a value older than this thread's own compare-and-swap
            // (tokio-rs/loom#389).
            let last = board.slots[0].state.fetch_add(0, Ordering::SeqCst);
            assert_eq!(last, state(2, true), "request {second} was marked");
        });
    }

    /// Two workers leaving one request at once while a thief estimates it: every flush
    /// lands (the total is exact at the end), and the thief's estimate never exceeds
    /// the time really spent plus the in-flight time it may count twice.
    #[test]
    fn concurrent_flushes_are_never_lost() {
        loom::model(|| {
            let board = Arc::new(Board::new(3));
            board.arrive();
            let k = board.begin(0, 1, None, true);
            board.enter(0, k, 0);
            board.enter(1, k, 0);
            let leavers: Vec<_> = [(0usize, 2 * MS), (1, 3 * MS)]
                .into_iter()
                .map(|(w, at)| {
                    let board = board.clone();
                    loom::thread::spawn(move || board.leave(w, at))
                })
                .collect();
            let mut seen = Vec::new();
            board.check_pileup_phase(2, 4 * MS, &test_policy(100.0), &mut seen);
            let estimate = seen.first().map_or(0, |(_, t)| *t);
            for l in leavers {
                l.join().unwrap();
            }
            assert!(estimate <= 2 * (4 * MS + 4 * MS), "estimate {estimate}");
            assert_eq!(board.end(0).processed_ns, 5 * MS);
        });
    }

    /// Marking and ending race: the request is either marked while it ran or not at
    /// all, and the slot is free afterwards.
    #[test]
    fn marking_and_ending_race_cleanly() {
        loom::model(|| {
            let board = Arc::new(Board::new(2));
            board.arrive();
            let k = board.begin(0, 1, None, true);
            board.enter(0, k, 0);
            let thief = {
                let board = board.clone();
                loom::thread::spawn(move || board.mark(k))
            };
            board.leave(0, MS);
            board.end(0);
            thief.join().unwrap();
            assert!(!board.is_stealable(k));
            assert!(!board.mark(k));
        });
    }
}
