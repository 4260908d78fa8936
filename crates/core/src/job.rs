//! The trait a request implements to be run in parallel by the runtime: units and a merge.

/// A request's work, split into units that threads claim one at a time.
///
/// The runtime gives a request one thread to start and adds threads as its policy says;
/// every thread claims the next unclaimed unit until none are left (a thread added
/// mid-request takes the next unclaimed one). When all units are done, the request's first
/// thread merges the parts, in unit order, into the result. Units should be short
/// compared with the self-scheduling quantum (a few ms), since a request's degree is
/// re-examined between units.
pub trait Job: Send + Sync + 'static {
    /// What one unit produces.
    type Part: Send + 'static;
    /// What the request returns.
    type Output: Send + 'static;

    /// The number of units; zero means the request is only its merge.
    fn units(&self) -> usize;

    /// Runs unit `unit` (in `0..units()`).
    fn run(&self, unit: usize) -> Self::Part;

    /// Combines the parts, in unit order, into the result. Runs on one thread after every
    /// unit is done, so it is also where a request's sequential work belongs.
    fn merge(&self, parts: Vec<Self::Part>) -> Self::Output;

    /// [`Job::merge`] for a request that may be cancelled meanwhile: a job whose merge is
    /// long checks `stop` every so often and returns `None` once it is true, so that a
    /// cancelled request stops within its sequential part too. By default the merge runs
    /// to its end.
    fn merge_or_stop(
        &self,
        parts: Vec<Self::Part>,
        stop: &dyn Fn() -> bool,
    ) -> Option<Self::Output> {
        let _ = stop;
        Some(self.merge(parts))
    }

    /// Called once by each thread when it starts working on this request, before its
    /// first unit: the place for per-thread set-up cost.
    fn on_join(&self) {}

    /// The request's sequential work in ms, if known in advance. Only clairvoyant policies
    /// (RC) read it.
    fn demand_hint_ms(&self) -> Option<f64> {
        None
    }
}
