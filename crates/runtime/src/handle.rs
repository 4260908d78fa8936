//! The handle a submitter holds: a one-shot result that can be awaited or waited for.
//!
//! Why a handle that is both a `Future` and has a blocking `wait`: Rust services are
//! written both ways. An async server (axum, hyper on tokio) awaits the handle in its
//! handler without blocking an executor thread; a thread-per-connection server or a load
//! generator calls `wait`. A callback would force every caller to build its own channel
//! back, and a bare channel would tie the API to one channel crate. The handle depends on
//! no async runtime: it is a mutex, a condition variable and a stored waker.

use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Condvar, Mutex};
use std::task::{Context, Poll, Waker};
use std::time::Instant;

/// Why a request produced no result.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum RequestError {
    /// A unit or the merge panicked; the message is the panic's. Other requests are not
    /// affected.
    #[error("the request panicked: {0}")]
    Panicked(String),
    /// The request was cancelled before it finished: the runtime shut down with
    /// `Shutdown::Cancel`, or its handle was cancelled ([`Handle::cancel`], or dropped
    /// after [`Handle::cancel_on_drop`]).
    #[error("the request was cancelled")]
    Cancelled,
}

/// When a request arrived, started and finished, and how parallel it ran.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Timing {
    /// The arrival the latency counts from (the intended arrival, if one was given).
    pub arrival: Instant,
    /// When its first thread began.
    pub start: Instant,
    /// When its result was ready.
    pub finish: Instant,
    /// The highest degree it reached.
    pub max_degree: usize,
    /// Its degree averaged over its run.
    pub mean_degree: f64,
    /// Whether its threads were boosted.
    pub boosted: bool,
}

impl Timing {
    /// The timing of a request that ran on one thread throughout.
    pub fn sequential(arrival: Instant, start: Instant, finish: Instant) -> Timing {
        Timing {
            arrival,
            start,
            finish,
            max_degree: 1,
            mean_degree: 1.0,
            boosted: false,
        }
    }

    /// Latency in ms: finish minus arrival, queueing included.
    pub fn latency_ms(&self) -> f64 {
        self.finish.duration_since(self.arrival).as_secs_f64() * 1000.0
    }
}

/// The message of a caught panic.
pub(crate) fn panic_text(payload: &(dyn std::any::Any + Send)) -> String {
    if let Some(s) = payload.downcast_ref::<&str>() {
        (*s).to_string()
    } else if let Some(s) = payload.downcast_ref::<String>() {
        s.clone()
    } else {
        "a panic with a non-string payload".to_string()
    }
}

/// A finished request: its output and its timing.
#[derive(Debug)]
pub struct Done<T> {
    /// What the request's merge returned.
    pub output: T,
    /// When it ran, and how.
    pub timing: Timing,
}

type Outcome<T> = (Result<T, RequestError>, Option<Timing>);

struct Slot<T> {
    outcome: Option<Outcome<T>>,
    waker: Option<Waker>,
}

struct Shared<T> {
    slot: Mutex<Slot<T>>,
    ready: Condvar,
    /// Set when the submitter no longer wants the result: the executor stops the work at
    /// its next unit boundary.
    cancelled: AtomicBool,
}

/// The submitter's side: resolves once, with the output or the reason there is none.
pub struct Handle<T> {
    shared: Arc<Shared<T>>,
    /// Whether dropping it before it resolves cancels the request.
    cancel_on_drop: bool,
}

/// The executor's side: fills the handle exactly once. Public so that other executors
/// (a peer under comparison) can hand out the same handles.
pub struct Completer<T> {
    shared: Arc<Shared<T>>,
}

/// A connected handle and completer.
pub fn oneshot<T>() -> (Handle<T>, Completer<T>) {
    let shared = Arc::new(Shared {
        slot: Mutex::new(Slot {
            outcome: None,
            waker: None,
        }),
        ready: Condvar::new(),
        cancelled: AtomicBool::new(false),
    });
    (
        Handle {
            shared: shared.clone(),
            cancel_on_drop: false,
        },
        Completer { shared },
    )
}

impl<T> Completer<T> {
    /// Whether the submitter has cancelled the request: the work should stop at its next
    /// unit boundary and resolve as [`RequestError::Cancelled`].
    pub fn is_cancelled(&self) -> bool {
        self.shared.cancelled.load(Ordering::Acquire)
    }

    /// Resolves the handle. A second call is ignored.
    pub fn complete(&self, result: Result<T, RequestError>, timing: Option<Timing>) {
        let mut slot = self.shared.slot.lock().unwrap_or_else(|e| e.into_inner());
        if slot.outcome.is_some() {
            return;
        }
        slot.outcome = Some((result, timing));
        if let Some(waker) = slot.waker.take() {
            waker.wake();
        }
        drop(slot);
        self.shared.ready.notify_all();
    }
}

impl<T> Drop for Completer<T> {
    /// A completer dropped without completing (its executor lost the request) resolves
    /// the handle as failed, so no waiter hangs.
    fn drop(&mut self) {
        self.complete(
            Err(RequestError::Panicked(
                "the request was dropped without a result".into(),
            )),
            None,
        );
    }
}

fn finish<T>(outcome: Outcome<T>) -> Result<Done<T>, RequestError> {
    let (result, timing) = outcome;
    result.map(|output| Done {
        output,
        timing: timing.expect("a completed request has its timing"),
    })
}

impl<T> Handle<T> {
    /// Asks the executor to stop the request: a request still waiting never starts, and
    /// a running one stops at its next unit boundary (and within its merge, for jobs
    /// whose merge checks). It then resolves as [`RequestError::Cancelled`], unless it
    /// had already finished.
    pub fn cancel(&self) {
        self.shared.cancelled.store(true, Ordering::Release);
    }

    /// The same handle, made to cancel its request when it is dropped before it resolves:
    /// for a server whose client may go away, or whose deadline drops the wait.
    pub fn cancel_on_drop(mut self) -> Self {
        self.cancel_on_drop = true;
        self
    }

    /// Blocks until the request resolves. It first polls with a short exponential backoff
    /// (crossbeam's `Backoff`: a few spins, then a few yields of the core), so that short
    /// requests return without the cost of a sleep and a wake-up, then sleeps.
    pub fn wait(self) -> Result<Done<T>, RequestError> {
        let backoff = crossbeam_utils::Backoff::new();
        while !backoff.is_completed() {
            if let Some(outcome) = self
                .shared
                .slot
                .try_lock()
                .ok()
                .and_then(|mut slot| slot.outcome.take())
            {
                return finish(outcome);
            }
            backoff.snooze();
        }
        let mut slot = self.shared.slot.lock().unwrap_or_else(|e| e.into_inner());
        loop {
            if let Some(outcome) = slot.outcome.take() {
                return finish(outcome);
            }
            slot = self
                .shared
                .ready
                .wait(slot)
                .unwrap_or_else(|e| e.into_inner());
        }
    }

    /// Whether the request has resolved (without taking the result).
    pub fn is_done(&self) -> bool {
        self.shared
            .slot
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .outcome
            .is_some()
    }
}

impl<T> Drop for Handle<T> {
    fn drop(&mut self) {
        if self.cancel_on_drop {
            self.cancel();
        }
    }
}

impl<T> Future for Handle<T> {
    type Output = Result<Done<T>, RequestError>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let mut slot = self.shared.slot.lock().unwrap_or_else(|e| e.into_inner());
        match slot.outcome.take() {
            Some(outcome) => Poll::Ready(finish(outcome)),
            None => {
                slot.waker = Some(cx.waker().clone());
                Poll::Pending
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicBool, Ordering};
    use std::task::Wake;

    fn timing() -> Timing {
        let now = Instant::now();
        Timing {
            arrival: now,
            start: now,
            finish: now,
            max_degree: 1,
            mean_degree: 1.0,
            boosted: false,
        }
    }

    #[test]
    fn wait_returns_what_was_completed_once() {
        let (handle, completer) = oneshot();
        let t = std::thread::spawn(move || handle.wait());
        completer.complete(Ok(7), Some(timing()));
        completer.complete(Ok(8), Some(timing()));
        assert_eq!(t.join().unwrap().unwrap().output, 7);
    }

    #[test]
    fn errors_come_back_as_errors() {
        let (handle, completer) = oneshot::<u8>();
        completer.complete(Err(RequestError::Cancelled), None);
        assert_eq!(handle.wait().unwrap_err(), RequestError::Cancelled);
    }

    struct Flag(AtomicBool);
    impl Wake for Flag {
        fn wake(self: Arc<Self>) {
            self.0.store(true, Ordering::SeqCst);
        }
    }

    #[test]
    fn the_future_wakes_its_task() {
        let (mut handle, completer) = oneshot();
        let flag = Arc::new(Flag(AtomicBool::new(false)));
        let waker = Waker::from(flag.clone());
        let mut cx = Context::from_waker(&waker);
        assert!(Pin::new(&mut handle).poll(&mut cx).is_pending());
        completer.complete(Ok("x"), Some(timing()));
        assert!(flag.0.load(Ordering::SeqCst));
        match Pin::new(&mut handle).poll(&mut cx) {
            Poll::Ready(Ok(done)) => assert_eq!(done.output, "x"),
            _ => panic!("not ready"),
        }
    }
}
