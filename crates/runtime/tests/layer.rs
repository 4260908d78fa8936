//! The tower layer: jobs made by an inner service run on the runtime, a full queue makes
//! `poll_ready` report overload, and a dropped response future cancels its job.

use std::convert::Infallible;
use std::future::poll_fn;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use tailor_runtime::{
    job_fn, BoostMode, Policy, Runtime, RuntimeConfig, RuntimeLayer, RuntimeServiceError,
};
use tower::{service_fn, Layer, Service, ServiceExt};

/// A runtime of `workers` sequential workers and room for `queue_bound` waiting requests.
fn runtime(workers: usize, queue_bound: usize) -> Arc<Runtime> {
    let mut c = RuntimeConfig::new(2, Policy::Seq);
    c.boost_mode = Some(BoostMode::Unavailable);
    c.workers = Some(workers);
    c.queue_bound = queue_bound;
    Arc::new(Runtime::start(c).unwrap())
}

/// Waits (up to 5 s) until `done` holds.
async fn until(what: &str, done: impl Fn() -> bool) {
    let end = Instant::now() + Duration::from_secs(5);
    while !done() {
        assert!(Instant::now() < end, "timed out waiting until {what}");
        tokio::time::sleep(Duration::from_millis(2)).await;
    }
}

#[tokio::test]
async fn outputs_come_back_from_the_jobs_the_inner_service_makes() {
    let rt = Arc::new(Runtime::start(RuntimeConfig::new(2, Policy::Fix { degree: 2 })).unwrap());
    let words: Arc<Vec<String>> = Arc::new(
        (0..400)
            .map(|i| if i % 3 == 0 { "tail" } else { "head" }.to_string())
            .collect(),
    );
    // The inner service makes the work: count the word in four slices of the corpus.
    let inner = service_fn(move |word: String| {
        let words = words.clone();
        async move {
            Ok::<_, Infallible>(job_fn(
                4,
                move |unit| {
                    words[unit * 100..(unit + 1) * 100]
                        .iter()
                        .filter(|w| **w == word)
                        .count()
                },
                |parts: Vec<usize>| parts.into_iter().sum::<usize>(),
            ))
        }
    });
    let service = RuntimeLayer::new(rt.clone()).layer(inner);
    let tails = service.clone().oneshot("tail".to_string());
    let heads = service.clone().oneshot("head".to_string());
    let (tails, heads) = tokio::join!(tails, heads);
    assert_eq!(tails.unwrap(), 134);
    assert_eq!(heads.unwrap(), 266);
    // The counters follow the handles' resolution.
    until("both are counted", || rt.metrics().completed == 2).await;
}

#[tokio::test]
async fn inner_errors_and_panics_come_back_as_errors() {
    let rt = runtime(1, 10);
    let inner = service_fn(|n: u32| async move {
        if n == 0 {
            return Err("zero is not a request".to_string());
        }
        Ok(job_fn(
            1,
            move |_| {
                assert!(n != 1, "one panics");
                n
            },
            |parts: Vec<u32>| parts[0],
        ))
    });
    let mut service = RuntimeLayer::new(rt).layer(inner);
    assert_eq!(service.ready().await.unwrap().call(2).await.unwrap(), 2);
    match service.ready().await.unwrap().call(0).await {
        Err(RuntimeServiceError::Inner(e)) => assert_eq!(e.to_string(), "zero is not a request"),
        other => panic!("expected the inner error, got {other:?}"),
    }
    match service.ready().await.unwrap().call(1).await {
        Err(RuntimeServiceError::Panicked(message)) => assert!(message.contains("one panics")),
        other => panic!("expected a panic, got {other:?}"),
    }
}

#[tokio::test]
async fn a_full_queue_makes_poll_ready_report_overload() {
    // One worker, one place in the queue.
    let rt = runtime(1, 1);
    let inner = service_fn(|ms: u64| async move {
        Ok::<_, Infallible>(job_fn(
            1,
            move |_| std::thread::sleep(Duration::from_millis(ms)),
            move |_: Vec<()>| ms,
        ))
    });
    let mut service = RuntimeLayer::new(rt.clone()).layer(inner);
    // An idle runtime is ready.
    poll_fn(|cx| service.poll_ready(cx)).await.unwrap();
    // One slow request runs, a second waits: the queue is at its bound.
    let running = tokio::spawn(service.clone().oneshot(300));
    until("the first runs", || rt.metrics().load == 1).await;
    let waiting = tokio::spawn(service.clone().oneshot(300));
    until("the second waits", || rt.waiting() == 1).await;
    assert_eq!(rt.queue_bound(), 1);
    match poll_fn(|cx| service.poll_ready(cx)).await {
        Err(RuntimeServiceError::Overloaded) => {}
        other => panic!("expected Overloaded, got {other:?}"),
    }
    // A caller that skips poll_ready is refused at submission, with the same error.
    match service.call(1).await {
        Err(RuntimeServiceError::Overloaded) => {}
        other => panic!("expected Overloaded, got {other:?}"),
    }
    assert_eq!(rt.metrics().rejected, 1);
    // Both accepted requests finish, and the service is ready again.
    assert_eq!(running.await.unwrap().unwrap(), 300);
    assert_eq!(waiting.await.unwrap().unwrap(), 300);
    poll_fn(|cx| service.poll_ready(cx)).await.unwrap();
    assert_eq!(service.oneshot(1).await.unwrap(), 1);
}

#[tokio::test]
async fn dropping_the_response_future_cancels_the_job() {
    let rt = runtime(1, 10);
    let ran = Arc::new(AtomicUsize::new(0));
    let counter = ran.clone();
    // 2 s of work in 1 ms units.
    let inner = service_fn(move |units: usize| {
        let ran = counter.clone();
        async move {
            Ok::<_, Infallible>(job_fn(
                units,
                move |_| {
                    std::thread::sleep(Duration::from_millis(1));
                    ran.fetch_add(1, Ordering::Relaxed);
                },
                |_: Vec<()>| (),
            ))
        }
    });
    let service = RuntimeLayer::new(rt.clone()).layer(inner);
    let call = tokio::spawn(service.oneshot(2000));
    until("the job runs", || ran.load(Ordering::Relaxed) > 0).await;
    // Aborting the task drops the response future, and with it the handle.
    call.abort();
    assert!(call.await.unwrap_err().is_cancelled());
    until("the job is cancelled", || rt.metrics().cancelled == 1).await;
    until("the job has left", || rt.metrics().load == 0).await;
    let units = ran.load(Ordering::Relaxed);
    assert!(units < 2000, "all {units} units ran");
    assert_eq!(rt.metrics().completed, 0);
}
