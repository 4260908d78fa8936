//! The accept loop `serve` and `fanout` share: a bound on connections, timeouts for request
//! heads and bodies answered 408, and, at the bound, shedding the slowest client.
//!
//! Every connection is in one of four phases: its request head is arriving (`Head`, read
//! here before hyper takes the connection, so that a head that stalls can be answered
//! 408), its body is arriving (`Body`, read by a layer in front of the routes, which
//! answers 408 when a body sends nothing for the body timeout), the server is working on
//! it (`Busy`), or it waits for its next request (`Idle`, closed by hyper after the head
//! timeout). New connections are always accepted. When that puts the count over the bound,
//! one connection is shed: the one that has waited longest for its client's bytes (a head
//! or a body), answered 408 at once; failing that the longest idle one, closed; failing
//! that (every connection busy) the new one, answered 503 with `Retry-After`. So at the
//! bound a client that sends its request promptly still gets in, whatever the slow
//! clients do, and memory stays bounded by the bound plus one.

use std::collections::HashMap;
use std::pin::Pin;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};
use std::time::{Duration, Instant};

use axum::body::Body;
use axum::http::{header, HeaderValue, Request, StatusCode};
use axum::response::{IntoResponse, Response};
use bytes::{Bytes, BytesMut};
use http_body_util::BodyExt;
use hyper::body::Incoming;
use hyper_util::rt::TokioIo;
use hyper_util::server::graceful::GracefulShutdown;
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt, ReadBuf};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::Notify;

/// Why a connection shed at the bound is answered 408.
const SHED_REASON: &str =
    "request timeout: the server is at its connection bound and this was the slowest client";

/// The longest request head read, in bytes (beyond it, 431).
const MAX_HEAD_BYTES: usize = 64 * 1024;

/// What the accept loop bounds.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Limits {
    /// Connections open at once; at the bound the slowest is shed.
    pub(crate) max_connections: usize,
    /// A request head not complete this long after its connection opened (or, on a
    /// kept-alive connection, after the last answer) is answered 408 (the first) or the
    /// connection closed (the later ones).
    pub(crate) header_timeout: Duration,
    /// A request body that sends nothing for this long is answered 408.
    pub(crate) body_timeout: Duration,
    /// The largest request body, in bytes (beyond it, 413).
    pub(crate) max_body_bytes: usize,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Phase {
    Head,
    Body,
    Busy,
    Idle,
    /// Picked to be shed: told so, no longer counted against the bound nor picked again.
    Shedding,
}

#[derive(Debug)]
struct Entry {
    phase: Phase,
    since: Instant,
    /// Tells the connection's head reader or body reader to answer 408 now.
    shed: Arc<Notify>,
    /// Tells the connection's task to drop the connection (idle ones).
    close: Arc<Notify>,
}

/// The open connections and their phases.
#[derive(Debug, Default)]
struct Registry {
    entries: Mutex<HashMap<u64, Entry>>,
    next: AtomicU64,
}

impl Registry {
    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<u64, Entry>> {
        self.entries.lock().unwrap_or_else(|p| p.into_inner())
    }

    fn open(&self) -> (u64, Arc<Notify>, Arc<Notify>) {
        let id = self.next.fetch_add(1, Ordering::Relaxed);
        let (shed, close) = (Arc::new(Notify::new()), Arc::new(Notify::new()));
        self.lock().insert(
            id,
            Entry {
                phase: Phase::Head,
                since: Instant::now(),
                shed: shed.clone(),
                close: close.clone(),
            },
        );
        (id, shed, close)
    }

    /// Moves a connection to `phase`; returns false, changing nothing, if it is being
    /// shed (its reader has been told, or will be, to answer 408).
    fn set(&self, id: u64, phase: Phase) -> bool {
        match self.lock().get_mut(&id) {
            Some(e) if e.phase == Phase::Shedding => false,
            Some(e) => {
                e.phase = phase;
                e.since = Instant::now();
                true
            }
            None => true,
        }
    }

    fn remove(&self, id: u64) {
        self.lock().remove(&id);
    }

    /// Sheds one connection other than `newest` when more than `max` are not already
    /// being shed; returns whether the newest itself must go (every other connection is
    /// busy).
    fn shed_over(&self, max: usize, newest: u64) -> bool {
        let mut entries = self.lock();
        let counted = entries
            .values()
            .filter(|e| e.phase != Phase::Shedding)
            .count();
        if counted <= max {
            return false;
        }
        let oldest = |entries: &HashMap<u64, Entry>, phases: &[Phase]| {
            entries
                .iter()
                .filter(|(id, e)| **id != newest && phases.contains(&e.phase))
                .min_by_key(|(id, e)| (e.since, **id))
                .map(|(id, _)| *id)
        };
        let victim = oldest(&entries, &[Phase::Head, Phase::Body])
            .map(|id| (id, true))
            .or_else(|| oldest(&entries, &[Phase::Idle]).map(|id| (id, false)));
        let Some((id, waiting)) = victim else {
            return true;
        };
        let e = entries.get_mut(&id).expect("picked from the map");
        e.phase = Phase::Shedding;
        if waiting {
            e.shed.notify_one();
        } else {
            e.close.notify_one();
        }
        false
    }

    /// Answers every connection whose head is still arriving (at shutdown).
    fn shed_heads(&self) {
        for e in self.lock().values().filter(|e| e.phase == Phase::Head) {
            e.shed.notify_one();
        }
    }
}

/// A plain-text answer that closes its connection.
fn closing(status: StatusCode, reason: &str) -> Response {
    let mut response = (status, format!("{reason}\n")).into_response();
    response
        .headers_mut()
        .insert(header::CONNECTION, HeaderValue::from_static("close"));
    if status == StatusCode::SERVICE_UNAVAILABLE {
        response
            .headers_mut()
            .insert(header::RETRY_AFTER, HeaderValue::from_static("1"));
    }
    response
}

/// The same answer written straight to a socket hyper never saw.
async fn write_closing(stream: &mut TcpStream, status: StatusCode, reason: &str) {
    let body = format!("{reason}\n");
    let retry = if status == StatusCode::SERVICE_UNAVAILABLE {
        "retry-after: 1\r\n"
    } else {
        ""
    };
    let head = format!(
        "HTTP/1.1 {} {}\r\ncontent-type: text/plain; charset=utf-8\r\nconnection: close\r\n\
         {retry}content-length: {}\r\n\r\n",
        status.as_u16(),
        status.canonical_reason().unwrap_or(""),
        body.len()
    );
    let _ = tokio::time::timeout(Duration::from_secs(1), async {
        stream.write_all(head.as_bytes()).await?;
        stream.write_all(body.as_bytes()).await?;
        stream.shutdown().await
    })
    .await;
}

/// How reading a request head ended.
enum Head {
    /// The bytes read, the head and perhaps more.
    Read(Bytes),
    /// The client closed the connection first.
    Closed,
    /// Answered and closed here.
    Answered,
}

/// Reads until the end of a request head (a blank line), at most `MAX_HEAD_BYTES`, within
/// the head timeout; answers 408 on the timeout or when shed, 431 past the size.
async fn read_head(stream: &mut TcpStream, limits: Limits, shed: &Notify) -> Head {
    let mut buf = BytesMut::with_capacity(1024);
    let deadline = tokio::time::sleep(limits.header_timeout);
    tokio::pin!(deadline);
    // Bytes already searched for the head's end; each read searches only what it added
    // (and the three bytes before it).
    let mut searched: usize = 0;
    loop {
        // Empty lines before the request line are ignored (RFC 9112, section 2.2): they
        // neither end the head nor make the connection look busy.
        let blank = buf
            .iter()
            .take_while(|b| matches!(b, b'\r' | b'\n'))
            .count();
        if blank > 0 {
            let _ = buf.split_to(blank);
            searched = 0;
        }
        let from = searched.saturating_sub(3);
        if buf[from..].windows(4).any(|w| w == b"\r\n\r\n") {
            return Head::Read(buf.freeze());
        }
        searched = buf.len();
        if buf.len() >= MAX_HEAD_BYTES {
            write_closing(
                stream,
                StatusCode::REQUEST_HEADER_FIELDS_TOO_LARGE,
                &format!("the request head is over {MAX_HEAD_BYTES} bytes"),
            )
            .await;
            return Head::Answered;
        }
        tokio::select! {
            read = stream.read_buf(&mut buf) => match read {
                Ok(0) | Err(_) => return Head::Closed,
                Ok(_) => {}
            },
            () = &mut deadline => {
                let reason = format!(
                    "request timeout: the request head was not complete within {} s",
                    limits.header_timeout.as_secs_f64()
                );
                write_closing(stream, StatusCode::REQUEST_TIMEOUT, &reason).await;
                return Head::Answered;
            }
            () = shed.notified() => {
                write_closing(stream, StatusCode::REQUEST_TIMEOUT, SHED_REASON).await;
                return Head::Answered;
            }
        }
    }
}

/// A socket with bytes already read from it put back in front.
struct Rewound {
    prefix: Bytes,
    stream: TcpStream,
}

impl AsyncRead for Rewound {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<std::io::Result<()>> {
        if !self.prefix.is_empty() {
            let n = self.prefix.len().min(buf.remaining());
            buf.put_slice(&self.prefix.split_to(n));
            return Poll::Ready(Ok(()));
        }
        Pin::new(&mut self.stream).poll_read(cx, buf)
    }
}

impl AsyncWrite for Rewound {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        data: &[u8],
    ) -> Poll<std::io::Result<usize>> {
        Pin::new(&mut self.stream).poll_write(cx, data)
    }
    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Pin::new(&mut self.stream).poll_flush(cx)
    }
    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Pin::new(&mut self.stream).poll_shutdown(cx)
    }
}

/// Reads a request's whole body, each chunk within the body timeout and all of it within
/// the size bound, then hands the request to `app`; answers 408 when the body stalls or
/// the connection is shed meanwhile, 413 past the size.
async fn serve_request(
    app: axum::Router,
    request: Request<Incoming>,
    (id, registry, limits, shed): (u64, Arc<Registry>, Limits, Arc<Notify>),
) -> Response {
    if !registry.set(id, Phase::Body) {
        return closing(StatusCode::REQUEST_TIMEOUT, SHED_REASON);
    }
    let (parts, mut incoming) = request.into_parts();
    let mut body = BytesMut::new();
    let read = async {
        loop {
            let frame = tokio::time::timeout(limits.body_timeout, incoming.frame()).await;
            match frame {
                Err(_) => {
                    return Err(closing(
                        StatusCode::REQUEST_TIMEOUT,
                        &format!(
                            "request timeout: the body sent nothing for {} s; the connection \
                             closes",
                            limits.body_timeout.as_secs_f64()
                        ),
                    ))
                }
                Ok(None) => return Ok(()),
                Ok(Some(Err(e))) => {
                    return Err(closing(
                        StatusCode::BAD_REQUEST,
                        &format!("the body broke off: {e}"),
                    ))
                }
                Ok(Some(Ok(frame))) => {
                    if let Ok(data) = frame.into_data() {
                        if body.len() + data.len() > limits.max_body_bytes {
                            return Err(closing(
                                StatusCode::PAYLOAD_TOO_LARGE,
                                &format!(
                                    "the body is over {} bytes; the connection closes",
                                    limits.max_body_bytes
                                ),
                            ));
                        }
                        body.extend_from_slice(&data);
                    }
                }
            }
        }
    };
    let read = tokio::select! {
        read = read => read,
        () = shed.notified() => Err(closing(StatusCode::REQUEST_TIMEOUT, SHED_REASON)),
    };
    if let Err(answer) = read {
        return answer;
    }
    if !registry.set(id, Phase::Busy) {
        return closing(StatusCode::REQUEST_TIMEOUT, SHED_REASON);
    }
    let request = Request::from_parts(parts, Body::from(body.freeze()));
    let response = match tower::ServiceExt::oneshot(app, request).await {
        Ok(r) => r,
        Err(never) => match never {},
    };
    // Idle once hyper has taken the whole answer (its body dropped), not before: an idle
    // connection may be closed at the bound, which must not cut an answer off.
    response.map(|body| {
        Body::new(IdleWhenSent {
            body,
            mark: Some((registry, id)),
        })
    })
}

/// A response body that marks its connection idle when dropped, that is once hyper has
/// written it (or given up on it).
struct IdleWhenSent {
    body: Body,
    mark: Option<(Arc<Registry>, u64)>,
}

impl hyper::body::Body for IdleWhenSent {
    type Data = Bytes;
    type Error = axum::Error;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<hyper::body::Frame<Bytes>, axum::Error>>> {
        Pin::new(&mut self.body).poll_frame(cx)
    }

    fn is_end_stream(&self) -> bool {
        self.body.is_end_stream()
    }

    fn size_hint(&self) -> hyper::body::SizeHint {
        self.body.size_hint()
    }
}

impl Drop for IdleWhenSent {
    fn drop(&mut self) {
        if let Some((registry, id)) = self.mark.take() {
            registry.set(id, Phase::Idle);
        }
    }
}

/// A connection's place in the registry, given up however its task ends.
struct Registered(Arc<Registry>, u64);

impl Drop for Registered {
    fn drop(&mut self) {
        self.0.remove(self.1);
    }
}

/// Serves HTTP/1.1 connections from `listener` with `app` until `shutdown` resolves, within
/// `limits` (see the module's summary), each watched by the returned graceful shutdown.
pub(crate) async fn accept_until(
    listener: TcpListener,
    app: axum::Router,
    limits: Limits,
    shutdown: impl std::future::Future<Output = ()>,
) -> GracefulShutdown {
    let graceful = GracefulShutdown::new();
    let registry = Arc::new(Registry::default());
    tokio::pin!(shutdown);
    loop {
        let (mut stream, _peer) = tokio::select! {
            accepted = listener.accept() => match accepted {
                Ok(x) => x,
                // Out of file descriptors and the like: wait a little, keep serving.
                Err(e) => {
                    tracing::warn!(error = %e, "accept failed");
                    tokio::time::sleep(Duration::from_millis(10)).await;
                    continue;
                }
            },
            () = &mut shutdown => break,
        };
        let _ = stream.set_nodelay(true);
        let (id, shed, close) = registry.open();
        if registry.shed_over(limits.max_connections.max(1), id) {
            registry.remove(id);
            tokio::spawn(async move {
                write_closing(
                    &mut stream,
                    StatusCode::SERVICE_UNAVAILABLE,
                    "overloaded: every connection is busy; retry later",
                )
                .await;
            });
            continue;
        }
        let (app, registry, graceful) = (app.clone(), registry.clone(), graceful.watcher());
        tokio::spawn(async move {
            let _registered = Registered(registry.clone(), id);
            let prefix = match read_head(&mut stream, limits, &shed).await {
                Head::Read(bytes) => bytes,
                Head::Closed | Head::Answered => return,
            };
            if !registry.set(id, Phase::Busy) {
                // Shed just as its head arrived.
                write_closing(&mut stream, StatusCode::REQUEST_TIMEOUT, SHED_REASON).await;
                return;
            }
            let context = (id, registry.clone(), limits, shed);
            let service = hyper::service::service_fn(move |request: Request<Incoming>| {
                let (app, context) = (app.clone(), context.clone());
                async move {
                    Ok::<_, std::convert::Infallible>(serve_request(app, request, context).await)
                }
            });
            // Later request heads on a kept-alive connection get the same time; one that
            // does not come is an idle connection, closed without an answer.
            let connection = hyper::server::conn::http1::Builder::new()
                .keep_alive(true)
                .timer(hyper_util::rt::TokioTimer::new())
                .header_read_timeout(limits.header_timeout)
                .serve_connection(TokioIo::new(Rewound { prefix, stream }), service);
            let connection = graceful.watch(connection);
            tokio::select! {
                _ = connection => {}
                () = close.notified() => {}
            }
        });
    }
    registry.shed_heads();
    graceful
}
