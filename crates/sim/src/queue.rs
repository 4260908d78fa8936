//! The event queue: earliest time first, ties in insertion order, so runs repeat exactly.

use std::cmp::Ordering;
use std::collections::BinaryHeap;

use crate::time::SimTime;

/// A min-queue of events by (time, insertion number).
#[derive(Debug)]
pub(crate) struct EventQueue<E> {
    heap: BinaryHeap<Entry<E>>,
    inserted: u64,
}

#[derive(Debug)]
struct Entry<E> {
    time: SimTime,
    seq: u64,
    event: E,
}

impl<E> PartialEq for Entry<E> {
    fn eq(&self, other: &Self) -> bool {
        (self.time, self.seq) == (other.time, other.seq)
    }
}
impl<E> Eq for Entry<E> {}
impl<E> PartialOrd for Entry<E> {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}
impl<E> Ord for Entry<E> {
    /// Reversed, so that the max-heap pops the earliest (time, seq).
    fn cmp(&self, other: &Self) -> Ordering {
        (other.time, other.seq).cmp(&(self.time, self.seq))
    }
}

impl<E> EventQueue<E> {
    pub(crate) fn new() -> Self {
        EventQueue {
            heap: BinaryHeap::new(),
            inserted: 0,
        }
    }

    pub(crate) fn push(&mut self, time: SimTime, event: E) {
        self.heap.push(Entry {
            time,
            seq: self.inserted,
            event,
        });
        self.inserted += 1;
    }

    pub(crate) fn peek_time(&self) -> Option<SimTime> {
        self.heap.peek().map(|e| e.time)
    }

    pub(crate) fn pop(&mut self) -> Option<(SimTime, E)> {
        self.heap.pop().map(|e| (e.time, e.event))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn earliest_first_then_insertion_order() {
        let mut q = EventQueue::new();
        q.push(SimTime::from_ms(5.0), "c");
        q.push(SimTime::from_ms(1.0), "a");
        q.push(SimTime::from_ms(5.0), "d");
        q.push(SimTime::from_ms(1.0), "b");
        let order: Vec<&str> = std::iter::from_fn(|| q.pop().map(|e| e.1)).collect();
        assert_eq!(order, ["a", "b", "c", "d"]);
    }
}
