//! The executor's mechanics in the work-stealing model: held joins, and lazy binary splitting's steal size.
//!
//! **Held joins.** In a fork-join executor without continuation stealing (tailor's, rayon's), a worker
//! that forked a half which a thief took cannot return from that join until the thief
//! has finished the half: its stack holds the join. Meanwhile it may only help with the
//! same request (tailor's executor never nests another request's work under a join, so
//! that the join is not delayed by it), and when nothing of the request is left to take,
//! or the request is marked, it waits. The work-stealing model's default (`Joins::Free`,
//! TBB's behaviour in the PPoPP paper's set-up) lets a core leave as soon as its own
//! piece ends; `Joins::Held` charges the wait.
//!
//! Each core holds a stack of frames, one per piece it runs: the frame of the piece it
//! admitted or stole, and above it the frame of each piece it stole while helping. A
//! frame counts the pieces stolen from it that have not finished; a piece finishes when
//! its own units are done and its frame's count is zero, which then counts down its
//! parent frame (the victim's frame it was stolen from).
//!
//! **Steal size** ([`StealSize`]): how much of its victim's piece a thief takes, half of
//! what is left at the steal (the default), or the half the victim offered at its last
//! split (the executor's lazy binary splitting; `steal.rs` applies it).

/// How much of a victim's piece a thief takes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum StealSize {
    /// Half of its unstarted units at the moment of the steal, rounded down (the
    /// model's default: the oldest task on a TBB deque is about half of what its owner
    /// has left).
    #[default]
    HalfNow,
    /// The half the victim offered when it last split, as lazy binary splitting does
    /// (tailor's executor, `Worker::parallel_for`): a core with an empty deque splits its
    /// remaining n units at its next unit boundary, keeps the first n/2 rounded down and
    /// offers the rest; the offer waits until a thief takes it or the victim, having run
    /// its own part, takes it back (and splits again). The victim has run on meanwhile,
    /// so a thief takes more than half of what is left, and its victim ends first.
    LastSplit,
}

/// Whether a core whose piece ends may leave the request at once.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Joins {
    /// It leaves at once (the model's default; TBB's blocked workers steal anything).
    #[default]
    Free,
    /// It stays, helping only its own request, until every piece stolen from it has
    /// finished (tailor's executor; `--joins held`).
    Held,
}

/// One piece a core runs: where it was stolen from, and its unfinished stolen pieces.
#[derive(Debug, Clone, Copy)]
struct Frame {
    /// The victim core and the index of its frame; None for the request's root.
    parent: Option<(usize, usize)>,
    children: usize,
}

/// The frames of every core.
#[derive(Debug, Clone)]
pub(crate) struct JoinTree {
    frames: Vec<Vec<Frame>>,
}

impl JoinTree {
    pub(crate) fn new(cores: usize) -> JoinTree {
        JoinTree {
            frames: vec![Vec::new(); cores],
        }
    }

    /// Core `c` admits a request: its root frame.
    pub(crate) fn admit(&mut self, c: usize) {
        self.frames[c] = vec![Frame {
            parent: None,
            children: 0,
        }];
    }

    /// `thief` took part of `victim`'s current piece.
    pub(crate) fn stolen(&mut self, thief: usize, victim: usize) {
        let top = self.frames[victim].len() - 1;
        self.frames[victim][top].children += 1;
        self.frames[thief].push(Frame {
            parent: Some((victim, top)),
            children: 0,
        });
    }

    /// Core `c` keeps the whole request (prompt dissolving gathered it there).
    pub(crate) fn gathered(&mut self, c: usize) {
        self.admit(c);
    }

    /// Core `c` left its request with its frames dropped (its work handed back).
    pub(crate) fn clear(&mut self, c: usize) {
        self.frames[c].clear();
    }

    /// Whether core `c` is the root of its request's tree.
    pub(crate) fn is_root(&self, c: usize) -> bool {
        self.frames[c].first().is_some_and(|f| f.parent.is_none())
    }

    /// Core `c`'s current piece has run its units. Finishes every frame that is now
    /// complete, on `c` and up its ancestors (`waiting(p)`: whether core `p` has run its
    /// current piece's units and waits), and returns the cores whose last frame
    /// finished, each with whether it was the request's root: those leave the request
    /// (the root after the merge).
    pub(crate) fn piece_ended(
        &mut self,
        c: usize,
        waiting: impl Fn(usize) -> bool,
    ) -> Vec<(usize, bool)> {
        let mut released = Vec::new();
        let mut pending = vec![c];
        while let Some(c) = pending.pop() {
            while let Some(&top) = self.frames[c].last() {
                if top.children > 0 {
                    break;
                }
                self.frames[c].pop();
                if let Some((p, index)) = top.parent {
                    let at_top = index + 1 == self.frames[p].len();
                    let frame = &mut self.frames[p][index];
                    frame.children -= 1;
                    if frame.children == 0 && at_top && waiting(p) {
                        pending.push(p);
                    }
                }
                if self.frames[c].is_empty() {
                    released.push((c, top.parent.is_none()));
                }
            }
        }
        released
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_victim_waits_for_its_thief_and_the_root_goes_last() {
        let mut tree = JoinTree::new(3);
        tree.admit(0);
        tree.stolen(1, 0);
        tree.stolen(2, 1);
        // The root's own units end first: it waits.
        assert!(tree.piece_ended(0, |_| true).is_empty());
        // Core 1's units end: it waits for core 2.
        assert!(tree.piece_ended(1, |p| p == 0).is_empty());
        // Core 2 ends: it, then core 1, then the root are released.
        let released = tree.piece_ended(2, |p| p <= 1);
        assert_eq!(released, vec![(2, false), (1, false), (0, true)]);
    }

    #[test]
    fn a_helping_core_finishes_its_nested_piece_before_its_own_frame() {
        let mut tree = JoinTree::new(3);
        tree.admit(0);
        tree.stolen(1, 0);
        // Core 0 waits for core 1 and helps: it steals from core 1.
        assert!(tree.piece_ended(0, |_| false).is_empty());
        tree.stolen(0, 1);
        assert!(tree.is_root(0));
        // Core 1's units end: it waits for core 0's nested piece.
        assert!(tree.piece_ended(1, |p| p == 1).is_empty());
        // Core 0's nested piece ends: core 1 is released, which completes core 0's root
        // frame, so the root is released too.
        let released = tree.piece_ended(0, |p| p == 1 || p == 0);
        assert_eq!(released, vec![(1, false), (0, true)]);
    }

    #[test]
    fn a_thief_alone_leaves_when_its_piece_ends() {
        let mut tree = JoinTree::new(2);
        tree.admit(0);
        tree.stolen(1, 0);
        // The root is still running its piece (not waiting): only the thief leaves.
        assert_eq!(tree.piece_ended(1, |_| false), vec![(1, false)]);
        assert_eq!(tree.piece_ended(0, |_| false), vec![(0, true)]);
    }
}
