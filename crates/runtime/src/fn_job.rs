//! A job made of two closures, for a service that has no job type of its own.

use std::marker::PhantomData;

use tailor_core::Job;

/// A [`Job`] of `units` units, each run by `run(unit)`, merged by `merge(parts)`: what
/// [`job_fn`] makes.
pub struct FnJob<P, O, R, M> {
    units: usize,
    run: R,
    merge: M,
    _types: PhantomData<fn() -> (P, O)>,
}

/// A job from closures: `units` units, unit `i` computed by `run(i)` (on whichever of the
/// request's threads claims it), and the parts, in unit order, combined by `merge` on one
/// thread after the last unit. The units are where the policy's threads can help; the
/// merge is the request's sequential part.
///
/// ```
/// use tailor_runtime::{job_fn, Policy, Runtime, RuntimeConfig};
///
/// let runtime = Runtime::start(RuntimeConfig::new(2, Policy::Fix { degree: 2 })).unwrap();
/// let data: Vec<u64> = (1..=1000).collect();
/// let job = job_fn(
///     4,
///     move |unit| data[unit * 250..(unit + 1) * 250].iter().sum::<u64>(),
///     |parts: Vec<u64>| parts.into_iter().sum::<u64>(),
/// );
/// let done = runtime.submit(job).unwrap().wait().unwrap();
/// assert_eq!(done.output, 500_500);
/// ```
pub fn job_fn<P, O, R, M>(units: usize, run: R, merge: M) -> FnJob<P, O, R, M>
where
    P: Send + 'static,
    O: Send + 'static,
    R: Fn(usize) -> P + Send + Sync + 'static,
    M: Fn(Vec<P>) -> O + Send + Sync + 'static,
{
    FnJob {
        units,
        run,
        merge,
        _types: PhantomData,
    }
}

impl<P, O, R, M> Job for FnJob<P, O, R, M>
where
    P: Send + 'static,
    O: Send + 'static,
    R: Fn(usize) -> P + Send + Sync + 'static,
    M: Fn(Vec<P>) -> O + Send + Sync + 'static,
{
    type Part = P;
    type Output = O;

    fn units(&self) -> usize {
        self.units
    }

    fn run(&self, unit: usize) -> P {
        (self.run)(unit)
    }

    fn merge(&self, parts: Vec<P>) -> O {
        (self.merge)(parts)
    }
}
