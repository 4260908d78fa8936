//! SingleR as a public tower `Layer`: at most one reissue, drawn with probability q, at d.
//!
//! Kaler, He and Elnikety, "Optimal Reissue Policies for Reducing Tail Latency", SPAA
//! 2017, §3, show that within their model SingleR is an optimal reissue policy: when a
//! request is sent, decide once, with probability q, whether it may be reissued; if it
//! may, and no answer has come d after it was sent, send a second copy and take the
//! first answer. SingleD is q = 1.
//!
//! [`SingleRLayer`] is that policy for any tower [`Service`], beside tower's
//! [`Hedge`](tower::hedge::Hedge) (Dean and Barroso's hedged requests); its
//! [`ReissuePolicy`] is modelled on [`tower::hedge::Policy`]. Unlike the hedge, which
//! returns whichever copy ends first, a copy whose answer the policy does not find good
//! ([`ReissuePolicy::is_good`]: an error, or say a 5xx) does not win while the other copy
//! may still answer well:
//!
//! - a first copy that ends badly before d has its reissue (if one was drawn) sent at
//!   once, and the reissue's answer is taken if good, else the first copy's;
//! - once both copies are out, the first good answer wins; a bad one waits for the
//!   other copy and is the answer only if that one is bad too;
//! - d counts from the call that sends the first copy; at d = 0 both copies go at once;
//! - the second copy waits for the inner service to be ready, while a good first answer
//!   still wins; if the inner service fails to become ready, no second copy is sent;
//! - no second copy is sent where [`ReissuePolicy::clone_request`] gives none or
//!   [`ReissuePolicy::can_reissue`] says no when the reissue is due (the fan-out's
//!   policy: no live replica other than the first copy's).
//!
//! The losing copy's future is dropped, which cancels it as far as the inner service
//! lets a dropped future cancel.

use std::fmt;
use std::future::Future;
use std::pin::{pin, Pin};
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};
use std::time::Duration;

use rand::RngExt;
use tower::{Layer, Service, ServiceExt};

use tailor_core::Rng;

/// Which requests [`SingleR`] may reissue, how it copies them, and which answers are good.
///
/// Modelled on [`tower::hedge::Policy`], with [`is_good`](ReissuePolicy::is_good) added:
/// SingleR does not let a bad answer win while the other copy may still answer well.
pub trait ReissuePolicy<Req, Res, E>: Clone + Send + Sync + 'static {
    /// The second copy of `request`, made when the request is sent (if a reissue was
    /// drawn); `None` means this request is never reissued.
    fn clone_request(&self, request: &Req) -> Option<Req>;

    /// Whether the second copy may be sent now, asked when the reissue is due (d after
    /// the first copy, or when the first copy ended badly before d) with the copy
    /// [`clone_request`](ReissuePolicy::clone_request) made. Without it, the first copy's
    /// answer is the answer. Every reissue is allowed by default.
    fn can_reissue(&self, request: &Req) -> bool {
        let _ = request;
        true
    }

    /// Whether `answer` may win; a bad one is the answer only if the other copy's is bad
    /// too (or no other copy was sent). Every `Ok` is good by default.
    fn is_good(&self, answer: &Result<Res, E>) -> bool {
        answer.is_ok()
    }
}

/// A [`ReissuePolicy`] for requests that are [`Clone`]: every request may be reissued as a
/// clone of itself, and every `Ok` is good.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct CloneRequest;

impl<Req: Clone, Res, E> ReissuePolicy<Req, Res, E> for CloneRequest {
    fn clone_request(&self, request: &Req) -> Option<Req> {
        Some(request.clone())
    }
}

/// A reissue probability outside [0, 1] (or not a number), given to
/// [`SingleRLayer::new`] or [`SingleR::new`].
#[derive(Debug, Clone, Copy, PartialEq, thiserror::Error)]
#[error("the reissue probability q must be a number from 0 to 1, not {0}")]
pub struct InvalidProbability(pub f64);

/// The settings every [`SingleR`] shares: d, q and the seed of the draws.
#[derive(Debug, Clone, Copy, PartialEq)]
struct Settings {
    delay: Duration,
    q: f64,
    seed: u64,
}

impl Settings {
    fn new(delay: Duration, q: f64, seed: u64) -> Result<Settings, InvalidProbability> {
        if (0.0..=1.0).contains(&q) {
            Ok(Settings { delay, q, seed })
        } else {
            Err(InvalidProbability(q))
        }
    }
}

/// Wraps a service in [`SingleR`]: see the module's summary (Kaler, He and Elnikety,
/// SPAA 2017, §3).
///
/// Each service it wraps draws from its own generator, seeded with the layer's seed, so
/// a run with the same seed and the same requests draws the same reissues.
///
/// ```
/// use std::convert::Infallible;
/// use std::time::Duration;
///
/// use tailor_server::{CloneRequest, SingleRLayer};
/// use tower::{service_fn, Layer, ServiceExt};
///
/// // Reissue every request (q = 1: SingleD) still unanswered after 10 ms.
/// let layer = SingleRLayer::new(Duration::from_millis(10), 1.0, 7, CloneRequest).unwrap();
/// let service = layer.layer(service_fn(|x: u64| async move { Ok::<_, Infallible>(x * 2) }));
///
/// let runtime = tokio::runtime::Builder::new_current_thread()
///     .enable_time()
///     .build()
///     .unwrap();
/// let answer = runtime.block_on(service.oneshot(21)).unwrap();
/// assert_eq!(answer, 42);
///
/// // q outside [0, 1] is refused, not clamped.
/// assert!(SingleRLayer::new(Duration::ZERO, 1.5, 7, CloneRequest).is_err());
/// ```
#[derive(Debug, Clone)]
pub struct SingleRLayer<P> {
    settings: Settings,
    policy: P,
}

impl<P> SingleRLayer<P> {
    /// SingleR with delay `delay` (d) and reissue probability `q`, its draws seeded by
    /// `seed`; `policy` says what may be reissued and which answers are good. Fails if `q`
    /// is not in [0, 1].
    pub fn new(
        delay: Duration,
        q: f64,
        seed: u64,
        policy: P,
    ) -> Result<SingleRLayer<P>, InvalidProbability> {
        Ok(SingleRLayer {
            settings: Settings::new(delay, q, seed)?,
            policy,
        })
    }

    /// d: how long after the first copy the second goes, if one was drawn.
    pub fn delay(&self) -> Duration {
        self.settings.delay
    }

    /// q: the probability that a request may be reissued.
    pub fn q(&self) -> f64 {
        self.settings.q
    }
}

impl<S, P: Clone> Layer<S> for SingleRLayer<P> {
    type Service = SingleR<S, P>;

    fn layer(&self, inner: S) -> SingleR<S, P> {
        SingleR::with_settings(inner, self.settings, self.policy.clone())
    }
}

/// SingleR over the service `S` under the policy `P`: see the module's summary. Made by
/// [`SingleRLayer`] or [`SingleR::new`]; its clones share one generator of draws.
#[derive(Clone)]
pub struct SingleR<S, P> {
    inner: S,
    policy: P,
    settings: Settings,
    rng: Arc<Mutex<Rng>>,
}

impl<S: fmt::Debug, P: fmt::Debug> fmt::Debug for SingleR<S, P> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SingleR")
            .field("inner", &self.inner)
            .field("policy", &self.policy)
            .field("delay", &self.settings.delay)
            .field("q", &self.settings.q)
            .field("seed", &self.settings.seed)
            .finish()
    }
}

impl<S, P> SingleR<S, P> {
    /// SingleR over `inner`, as [`SingleRLayer::new`] with the same arguments would wrap
    /// it. Fails if `q` is not in [0, 1].
    pub fn new(
        inner: S,
        delay: Duration,
        q: f64,
        seed: u64,
        policy: P,
    ) -> Result<SingleR<S, P>, InvalidProbability> {
        Ok(SingleR::with_settings(
            inner,
            Settings::new(delay, q, seed)?,
            policy,
        ))
    }

    fn with_settings(inner: S, settings: Settings, policy: P) -> SingleR<S, P> {
        SingleR {
            inner,
            policy,
            rng: Arc::new(Mutex::new(tailor_core::seeded_rng(settings.seed))),
            settings,
        }
    }

    /// The inner service.
    pub fn get_ref(&self) -> &S {
        &self.inner
    }

    /// The inner service, mutably.
    pub fn get_mut(&mut self) -> &mut S {
        &mut self.inner
    }

    /// The inner service, unwrapped.
    pub fn into_inner(self) -> S {
        self.inner
    }

    /// The policy.
    pub fn policy(&self) -> &P {
        &self.policy
    }

    /// Draws whether the next request may be reissued: q = 1 always (no draw), q = 0
    /// never (no draw), else with probability q.
    fn draw(&self) -> bool {
        let q = self.settings.q;
        if q >= 1.0 {
            return true;
        }
        if q <= 0.0 {
            return false;
        }
        let mut rng = self.rng.lock().unwrap_or_else(|p| p.into_inner());
        rng.random_bool(q)
    }
}

impl<S, P, Req> Service<Req> for SingleR<S, P>
where
    S: Service<Req> + Clone + Send + 'static,
    S::Future: Send + 'static,
    S::Response: Send + 'static,
    S::Error: Send + 'static,
    P: ReissuePolicy<Req, S::Response, S::Error>,
    Req: Send + 'static,
{
    type Response = S::Response;
    type Error = S::Error;
    type Future = Pin<Box<dyn Future<Output = Result<S::Response, S::Error>> + Send>>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), S::Error>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, request: Req) -> Self::Future {
        let second = if self.draw() {
            self.policy.clone_request(&request)
        } else {
            None
        };
        // The service driven to readiness takes the first copy.
        let first = self.inner.call(request);
        let Some(second) = second else {
            return Box::pin(first);
        };
        let due = tokio::time::Instant::now() + self.settings.delay;
        let inner = self.inner.clone();
        let policy = self.policy.clone();
        Box::pin(race(first, second, due, inner, policy))
    }
}

/// The first copy `first`, and the second copy `second` sent through `inner` at `due` or
/// when `first` ends badly before then; the first good answer (see the module's summary).
async fn race<S, P, Req>(
    first: S::Future,
    second: Req,
    due: tokio::time::Instant,
    mut inner: S,
    policy: P,
) -> Result<S::Response, S::Error>
where
    S: Service<Req>,
    P: ReissuePolicy<Req, S::Response, S::Error>,
{
    let mut first = pin!(first);
    // At d = 0 both copies go at once: no timer, which a quick first copy could beat.
    let mut early = None;
    if tokio::time::Instant::now() < due {
        tokio::select! {
            biased;
            answer = &mut first => {
                if policy.is_good(&answer) {
                    return answer;
                }
                early = Some(answer);
            }
            () = tokio::time::sleep_until(due) => {}
        }
    }
    if !policy.can_reissue(&second) {
        return match early {
            Some(bad) => bad,
            None => first.await,
        };
    }
    // The inner service's readiness for the second copy; a good first answer meanwhile
    // still wins. A service that fails to become ready sends no second copy.
    let ready = if early.is_some() {
        inner.ready().await.is_ok()
    } else {
        tokio::select! {
            biased;
            answer = &mut first => {
                if policy.is_good(&answer) {
                    return answer;
                }
                early = Some(answer);
                inner.ready().await.is_ok()
            }
            ready = inner.ready() => ready.is_ok(),
        }
    };
    if !ready {
        return match early {
            Some(bad) => bad,
            None => first.await,
        };
    }
    let second = inner.call(second);
    if let Some(bad) = early {
        let answer = second.await;
        return if policy.is_good(&answer) { answer } else { bad };
    }
    let mut second = pin!(second);
    // The first good answer wins; a bad one waits for the other copy's.
    tokio::select! {
        biased;
        answer = &mut first => {
            if policy.is_good(&answer) {
                return answer;
            }
            let other = second.await;
            if policy.is_good(&other) { other } else { answer }
        }
        answer = &mut second => {
            if policy.is_good(&answer) {
                return answer;
            }
            let other = first.await;
            if policy.is_good(&other) { other } else { answer }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicUsize, Ordering};
    use tokio::time::Instant;

    /// How the fake service answers one call: after this long, with this outcome.
    type Script = (Duration, Result<&'static str, &'static str>);

    /// A service that answers its n-th call as `script[n]` says (the last entry for any
    /// later call) and counts its calls and when each came.
    #[derive(Clone)]
    struct Fake {
        calls: Arc<AtomicUsize>,
        sent: Arc<Mutex<Vec<Instant>>>,
        script: Arc<Vec<Script>>,
    }

    impl Fake {
        fn new(script: Vec<Script>) -> Fake {
            Fake {
                calls: Arc::new(AtomicUsize::new(0)),
                sent: Arc::new(Mutex::new(Vec::new())),
                script: Arc::new(script),
            }
        }

        fn calls(&self) -> usize {
            self.calls.load(Ordering::SeqCst)
        }

        /// When each call came, from `start`.
        fn sent_after(&self, start: Instant) -> Vec<Duration> {
            let sent = self.sent.lock().unwrap();
            sent.iter().map(|t| *t - start).collect()
        }
    }

    impl Service<u32> for Fake {
        type Response = (u32, &'static str);
        type Error = (u32, &'static str);
        type Future = Pin<Box<dyn Future<Output = Result<Self::Response, Self::Error>> + Send>>;

        fn poll_ready(&mut self, _cx: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
            Poll::Ready(Ok(()))
        }

        fn call(&mut self, request: u32) -> Self::Future {
            let n = self.calls.fetch_add(1, Ordering::SeqCst);
            self.sent.lock().unwrap().push(Instant::now());
            let (wait, outcome) = self.script[n.min(self.script.len() - 1)];
            Box::pin(async move {
                tokio::time::sleep(wait).await;
                let copy = n as u32;
                match outcome {
                    Ok(text) => Ok((request * 10 + copy, text)),
                    Err(text) => Err((request * 10 + copy, text)),
                }
            })
        }
    }

    /// Reissues every request as itself, where `allowed`; an answer "bad" is not good.
    #[derive(Clone)]
    struct Policy {
        allowed: bool,
    }

    type Answer = Result<(u32, &'static str), (u32, &'static str)>;

    impl ReissuePolicy<u32, (u32, &'static str), (u32, &'static str)> for Policy {
        fn clone_request(&self, request: &u32) -> Option<u32> {
            Some(*request)
        }

        fn can_reissue(&self, _request: &u32) -> bool {
            self.allowed
        }

        fn is_good(&self, answer: &Answer) -> bool {
            matches!(answer, Ok((_, text)) if *text != "bad")
        }
    }

    const D: Duration = Duration::from_millis(10);

    fn ms(n: u64) -> Duration {
        Duration::from_millis(n)
    }

    fn single_r(fake: &Fake, delay: Duration, q: f64, allowed: bool) -> SingleR<Fake, Policy> {
        SingleRLayer::new(delay, q, 1, Policy { allowed })
            .unwrap()
            .layer(fake.clone())
    }

    #[tokio::test(start_paused = true)]
    async fn q_zero_never_reissues() {
        let fake = Fake::new(vec![(ms(100), Ok("slow"))]);
        let service = single_r(&fake, D, 0.0, true);
        for request in 0..20 {
            let answer = service.clone().oneshot(request).await;
            assert_eq!(answer, Ok((request * 10 + request, "slow")));
        }
        assert_eq!(fake.calls(), 20);
    }

    #[tokio::test(start_paused = true)]
    async fn a_slow_first_copy_is_reissued_at_d_and_the_second_answer_wins() {
        let fake = Fake::new(vec![(ms(100), Ok("slow")), (ms(5), Ok("fast"))]);
        let start = Instant::now();
        let answer = single_r(&fake, D, 1.0, true).oneshot(4).await;
        assert_eq!(answer, Ok((41, "fast")));
        assert_eq!(fake.calls(), 2);
        assert_eq!(fake.sent_after(start), vec![ms(0), D]);
        assert_eq!(start.elapsed(), D + ms(5));
    }

    #[tokio::test(start_paused = true)]
    async fn a_first_copy_that_answers_before_d_is_not_reissued() {
        let fake = Fake::new(vec![(ms(3), Ok("quick"))]);
        let start = Instant::now();
        let answer = single_r(&fake, D, 1.0, true).oneshot(4).await;
        assert_eq!(answer, Ok((40, "quick")));
        // Past d: the reissue's timer is gone with the answer.
        tokio::time::sleep(ms(50)).await;
        assert_eq!(fake.calls(), 1);
        assert_eq!(fake.sent_after(start), vec![ms(0)]);
    }

    #[tokio::test(start_paused = true)]
    async fn a_first_copy_that_fails_before_d_is_reissued_at_once() {
        for bad in [Err("refused"), Ok("bad")] {
            let fake = Fake::new(vec![(ms(2), bad), (ms(5), Ok("good"))]);
            let start = Instant::now();
            let answer = single_r(&fake, D, 1.0, true).oneshot(4).await;
            assert_eq!(answer, Ok((41, "good")));
            assert_eq!(fake.sent_after(start), vec![ms(0), ms(2)]);
            assert_eq!(start.elapsed(), ms(7));
        }
        // Both bad: the first copy's answer.
        let fake = Fake::new(vec![(ms(2), Err("refused")), (ms(5), Err("also"))]);
        let answer = single_r(&fake, D, 1.0, true).oneshot(4).await;
        assert_eq!(answer, Err((40, "refused")));
    }

    #[tokio::test(start_paused = true)]
    async fn at_d_zero_both_copies_go_at_once() {
        let fake = Fake::new(vec![(ms(1), Ok("first")), (ms(1), Ok("second"))]);
        let start = Instant::now();
        let answer = single_r(&fake, Duration::ZERO, 1.0, true).oneshot(4).await;
        // Both were sent before either answered; the first copy's answer ties and wins.
        assert_eq!(fake.sent_after(start), vec![ms(0), ms(0)]);
        assert_eq!(answer, Ok((40, "first")));
    }

    #[tokio::test(start_paused = true)]
    async fn a_bad_answer_waits_for_the_other_copy() {
        // Both out; the second ends first, badly; the first copy's good answer wins.
        let fake = Fake::new(vec![(ms(30), Ok("late")), (ms(1), Err("refused"))]);
        let answer = single_r(&fake, D, 1.0, true).oneshot(4).await;
        assert_eq!(answer, Ok((40, "late")));
        assert_eq!(fake.calls(), 2);
    }

    #[tokio::test(start_paused = true)]
    async fn no_reissue_where_the_policy_forbids_it() {
        let fake = Fake::new(vec![(ms(100), Ok("slow"))]);
        let answer = single_r(&fake, D, 1.0, false).oneshot(4).await;
        assert_eq!(answer, Ok((40, "slow")));
        assert_eq!(fake.calls(), 1);
        // Nor after a failure before d.
        let fake = Fake::new(vec![(ms(2), Err("refused"))]);
        let answer = single_r(&fake, D, 1.0, false).oneshot(4).await;
        assert_eq!(answer, Err((40, "refused")));
        assert_eq!(fake.calls(), 1);
    }

    #[tokio::test(start_paused = true)]
    async fn q_is_drawn_per_request_from_the_seed() {
        let reissued = |seed: u64| async move {
            let fake = Fake::new(vec![(ms(100), Ok("slow"))]);
            let service = SingleRLayer::new(D, 0.25, seed, Policy { allowed: true })
                .unwrap()
                .layer(fake.clone());
            for request in 0..400 {
                service.clone().oneshot(request).await.unwrap();
            }
            fake.calls() - 400
        };
        let n = reissued(9).await;
        assert!((60..=140).contains(&n), "{n} of 400 reissued at q = 0.25");
        assert_eq!(reissued(9).await, n);
    }

    #[test]
    fn a_probability_outside_zero_to_one_is_refused() {
        for q in [-0.1, 1.01, f64::NAN, f64::INFINITY] {
            let refused = SingleRLayer::new(D, q, 1, CloneRequest).unwrap_err();
            assert!(refused.to_string().contains("from 0 to 1"));
            assert!(SingleR::new(Fake::new(vec![]), D, q, 1, CloneRequest).is_err());
        }
        for q in [0.0, 0.5, 1.0] {
            assert_eq!(SingleRLayer::new(D, q, 1, CloneRequest).unwrap().q(), q);
        }
    }
}
