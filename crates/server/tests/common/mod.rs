//! A `tailor serve` on a loopback port for the integration tests, its shutdown, and a
//! client to ask it.

use tokio::sync::oneshot;
use tokio::task::JoinHandle;

use tailor_runtime::{Runtime, RuntimeConfig};
use tailor_server::{ServeConfig, ServeReport, ServedWorkload};

/// A running server: its address, the trigger of its shutdown, and its end.
pub(crate) struct Running {
    pub(crate) addr: String,
    stop: oneshot::Sender<()>,
    done: JoinHandle<std::io::Result<ServeReport>>,
}

impl Running {
    /// Its base URL, `http://ADDR`.
    #[allow(dead_code)]
    pub(crate) fn base(&self) -> String {
        format!("http://{}", self.addr)
    }

    /// Triggers the shutdown and waits for the server's report.
    pub(crate) async fn stop(self) -> ServeReport {
        let _ = self.stop.send(());
        self.done.await.unwrap().unwrap()
    }
}

/// Serves `workload` on a fresh loopback port with a runtime built from `rc`.
pub(crate) async fn start(
    workload: ServedWorkload,
    rc: RuntimeConfig,
    config: ServeConfig,
) -> Running {
    let (listener, addr) = tailor_server::bind("127.0.0.1:0").await.unwrap();
    let runtime = Runtime::start(rc).unwrap();
    let (stop, stopped) = oneshot::channel::<()>();
    let done = tokio::spawn(tailor_server::serve(
        listener,
        runtime,
        2,
        workload,
        config,
        async move {
            let _ = stopped.await;
        },
    ));
    Running {
        addr: addr.to_string(),
        stop,
        done,
    }
}

/// The tests' HTTP client.
#[allow(dead_code)]
pub(crate) type HttpClient = hyper_util::client::legacy::Client<
    hyper_util::client::legacy::connect::HttpConnector,
    http_body_util::Full<bytes::Bytes>,
>;

/// One request; its status, Retry-After header and body.
#[allow(dead_code)]
pub(crate) async fn send(
    client: &HttpClient,
    method: hyper::Method,
    url: &str,
    body: &str,
) -> (hyper::StatusCode, Option<String>, String) {
    use http_body_util::BodyExt;
    let request = hyper::Request::builder()
        .method(method)
        .uri(url)
        .body(http_body_util::Full::new(bytes::Bytes::from(
            body.to_string(),
        )))
        .unwrap();
    let response = client.request(request).await.expect("an answer");
    let status = response.status();
    let retry = response
        .headers()
        .get("retry-after")
        .map(|v| v.to_str().unwrap().to_string());
    let body = response.into_body().collect().await.unwrap().to_bytes();
    (status, retry, String::from_utf8_lossy(&body).into_owned())
}
