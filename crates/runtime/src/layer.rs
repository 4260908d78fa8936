//! A tower layer that runs a service's work on the runtime: [`RuntimeLayer`] and [`RuntimeService`].
//!
//! The wrapped (inner) service turns a request into the work to do, a [`Job`]; the
//! [`RuntimeService`] awaits it, submits the job to the [`Runtime`], awaits the handle and
//! answers with the job's output. The handle is made to cancel on drop, so a caller that
//! drops the response future (a client gone, a timeout) stops the work at its next unit
//! boundary.
//!
//! Why the inner service returns a job rather than the layer taking a closure: parsing,
//! authentication, a cache lookup and the like stay ordinary async tower code, and only
//! the CPU-bound part, the units and the merge, goes to the runtime's threads, where the
//! policy decides its degree.
//!
//! `poll_ready` is queue-aware: while as many requests wait for admission as the
//! runtime's queue bound allows, it answers `Poll::Ready(Err(Overloaded))` at once, so a
//! server can answer 503 without queueing the request. The service is not broken by this:
//! it is an `Arc` and the inner service, cheap to clone, and a later `poll_ready` succeeds
//! once the queue has room (tower's contract says a service whose `poll_ready` failed
//! should be discarded; a caller that follows it clones a fresh one per request, as
//! `ServiceExt::oneshot` on a clone does).

use std::error::Error;
use std::fmt;
use std::future::Future;
use std::marker::PhantomData;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};

use tailor_core::Job;
use tower::{Layer, Service};

use crate::handle::{Handle, RequestError};
use crate::runtime::{Runtime, SubmitError};

/// An inner service's error, boxed.
pub type BoxError = Box<dyn Error + Send + Sync>;

/// Why a [`RuntimeService`] call produced no output.
#[derive(Debug, thiserror::Error)]
pub enum RuntimeServiceError {
    /// The inner service failed (in `poll_ready` or in its call).
    #[error("the inner service failed: {0}")]
    Inner(#[source] BoxError),
    /// The runtime's admission queue is at its bound: found by `poll_ready`, or by the
    /// submission itself. A server answers 503.
    #[error("overloaded: the runtime's admission queue is full")]
    Overloaded,
    /// The runtime is shutting down and refuses new requests.
    #[error("the runtime is shutting down")]
    ShuttingDown,
    /// The request was cancelled before it finished (a cancelling shutdown).
    #[error("the request was cancelled")]
    Cancelled,
    /// A unit or the merge panicked; the message is the panic's.
    #[error("the request panicked: {0}")]
    Panicked(String),
}

impl From<SubmitError> for RuntimeServiceError {
    fn from(e: SubmitError) -> Self {
        match e {
            SubmitError::QueueFull => RuntimeServiceError::Overloaded,
            SubmitError::ShuttingDown => RuntimeServiceError::ShuttingDown,
        }
    }
}

impl From<RequestError> for RuntimeServiceError {
    fn from(e: RequestError) -> Self {
        match e {
            RequestError::Cancelled => RuntimeServiceError::Cancelled,
            RequestError::Panicked(message) => RuntimeServiceError::Panicked(message),
        }
    }
}

/// A [`tower::Layer`] that runs the jobs its inner service makes on a [`Runtime`].
///
/// ```
/// use std::convert::Infallible;
/// use std::sync::Arc;
///
/// use tailor_runtime::{job_fn, Policy, Runtime, RuntimeConfig, RuntimeLayer};
/// use tower::{Layer, ServiceExt};
///
/// let runtime = Runtime::start(RuntimeConfig::new(2, Policy::Fix { degree: 2 })).unwrap();
/// // The inner service: a request (a number n) becomes its work, the sum of 0..4n in
/// // four units of n numbers each.
/// let service = RuntimeLayer::new(Arc::new(runtime)).layer(tower::service_fn(|n: u64| async move {
///     Ok::<_, Infallible>(job_fn(
///         4,
///         move |unit| (unit as u64 * n..(unit as u64 + 1) * n).sum::<u64>(),
///         |parts: Vec<u64>| parts.into_iter().sum::<u64>(),
///     ))
/// }));
/// let executor = tokio::runtime::Builder::new_current_thread().build().unwrap();
/// let sum = executor.block_on(service.oneshot(250)).unwrap();
/// assert_eq!(sum, (0..1000).sum::<u64>());
/// ```
#[derive(Clone)]
pub struct RuntimeLayer {
    runtime: Arc<Runtime>,
}

impl RuntimeLayer {
    /// A layer submitting to `runtime`.
    pub fn new(runtime: Arc<Runtime>) -> RuntimeLayer {
        RuntimeLayer { runtime }
    }
}

impl fmt::Debug for RuntimeLayer {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("RuntimeLayer")
            .field("policy", &self.runtime.policy())
            .finish()
    }
}

impl<S> Layer<S> for RuntimeLayer {
    type Service = RuntimeService<S>;

    fn layer(&self, inner: S) -> RuntimeService<S> {
        RuntimeService::new(inner, self.runtime.clone())
    }
}

/// A service whose inner service makes a [`Job`] from each request; it runs the job on
/// the runtime and answers with its output (see [`RuntimeLayer`]).
#[derive(Clone)]
pub struct RuntimeService<S> {
    inner: S,
    runtime: Arc<Runtime>,
}

impl<S> RuntimeService<S> {
    /// `inner`'s jobs, run on `runtime`.
    pub fn new(inner: S, runtime: Arc<Runtime>) -> RuntimeService<S> {
        RuntimeService { inner, runtime }
    }

    /// The runtime the jobs run on.
    pub fn runtime(&self) -> &Arc<Runtime> {
        &self.runtime
    }

    /// The inner service.
    pub fn get_ref(&self) -> &S {
        &self.inner
    }

    /// The inner service, unwrapped.
    pub fn into_inner(self) -> S {
        self.inner
    }

    /// Whether the runtime's admission queue is at its bound, so that a request now
    /// would be refused unless it could start at once. A bound of 0 never counts as
    /// full here (a request that starts at once is still admitted; the submission
    /// decides).
    fn overloaded(&self) -> bool {
        self.runtime.waiting() >= self.runtime.queue_bound().max(1)
    }
}

impl<S: fmt::Debug> fmt::Debug for RuntimeService<S> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("RuntimeService")
            .field("inner", &self.inner)
            .field("policy", &self.runtime.policy())
            .finish()
    }
}

impl<S, Req> Service<Req> for RuntimeService<S>
where
    S: Service<Req>,
    S::Response: Job,
    S::Error: Into<BoxError>,
{
    type Response = <S::Response as Job>::Output;
    type Error = RuntimeServiceError;
    type Future = RuntimeFuture<S::Future, S::Response>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        if self.overloaded() {
            return Poll::Ready(Err(RuntimeServiceError::Overloaded));
        }
        self.inner
            .poll_ready(cx)
            .map_err(|e| RuntimeServiceError::Inner(e.into()))
    }

    fn call(&mut self, request: Req) -> Self::Future {
        RuntimeFuture {
            state: State::Inner {
                future: Box::pin(self.inner.call(request)),
                runtime: self.runtime.clone(),
            },
            _job: PhantomData,
        }
    }
}

/// A [`RuntimeService`]'s response: the inner service's future, then the job's handle.
/// Dropping it cancels the job.
pub struct RuntimeFuture<F, J: Job> {
    state: State<F, J::Output>,
    _job: PhantomData<fn() -> J>,
}

enum State<F, O> {
    /// The inner service is making the job.
    Inner {
        future: Pin<Box<F>>,
        runtime: Arc<Runtime>,
    },
    /// The job is submitted; its handle cancels it when dropped.
    Running(Handle<O>),
    /// The output was returned.
    Done,
}

impl<F, J: Job> fmt::Debug for RuntimeFuture<F, J> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let state = match self.state {
            State::Inner { .. } => "inner",
            State::Running(_) => "running",
            State::Done => "done",
        };
        f.debug_struct("RuntimeFuture")
            .field("state", &state)
            .finish()
    }
}

impl<F, J, E> Future for RuntimeFuture<F, J>
where
    F: Future<Output = Result<J, E>>,
    J: Job,
    E: Into<BoxError>,
{
    type Output = Result<J::Output, RuntimeServiceError>;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        // Every field is Unpin (the inner future is boxed), so no projection is needed.
        let this = &mut *self;
        loop {
            match &mut this.state {
                State::Inner { future, runtime } => {
                    let made = match future.as_mut().poll(cx) {
                        Poll::Pending => return Poll::Pending,
                        Poll::Ready(made) => made,
                    };
                    let submitted = made
                        .map_err(|e| RuntimeServiceError::Inner(e.into()))
                        .and_then(|job| runtime.submit(job).map_err(Into::into));
                    match submitted {
                        Ok(handle) => this.state = State::Running(handle.cancel_on_drop()),
                        Err(e) => {
                            this.state = State::Done;
                            return Poll::Ready(Err(e));
                        }
                    }
                }
                State::Running(handle) => {
                    let result = match Pin::new(handle).poll(cx) {
                        Poll::Pending => return Poll::Pending,
                        Poll::Ready(result) => result,
                    };
                    this.state = State::Done;
                    return Poll::Ready(result.map(|done| done.output).map_err(Into::into));
                }
                State::Done => panic!("a RuntimeFuture polled after it completed"),
            }
        }
    }
}
