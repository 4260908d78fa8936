//! Shutdown signals: the first SIGINT or SIGTERM starts a graceful stop, a second ends the
//! process at once.

// `_exit` is the one call here that needs it.
#![allow(unsafe_code)]

use std::future::Future;

/// Watches SIGINT and SIGTERM from this call on, and resolves on the first. From then on
/// a second ends the process at once (exit status 130), whatever the drain is waiting for.
///
/// The watch starts here, not when the future is first polled: a signal that comes while
/// the server is still starting (a front end asking its replicas' `/healthz`) neither
/// kills the process by the default action nor waits for the start to end before a
/// second signal can act. Must be called within a Tokio runtime.
pub fn shutdown_signal() -> impl Future<Output = ()> + Send + 'static {
    let mut signals = Signals::watch();
    let (first, stop) = tokio::sync::oneshot::channel::<()>();
    tokio::spawn(async move {
        signals.next().await;
        tracing::info!("stopping; a second SIGINT or SIGTERM exits at once");
        let _ = first.send(());
        signals.next().await;
        tracing::warn!("second signal: exiting now");
        exit_now(130);
    });
    async move {
        // The watcher lives as long as the runtime; a runtime shutting down ends the wait.
        let _ = stop.await;
    }
}

/// Ends the process at once with `status`. `std::process::exit` runs the C library's exit
/// handlers, which wait on locks other threads may hold: with a shard's replicas stopped
/// it took 2 s (issue #39); `_exit` does not wait.
fn exit_now(status: i32) -> ! {
    // SAFETY: `_exit` only ends the process; it touches no Rust state. The log line above
    // was written to stderr, which is unbuffered, so nothing is lost.
    unsafe { libc::_exit(status) }
}

/// SIGINT and SIGTERM, watched from creation.
struct Signals {
    #[cfg(unix)]
    term: tokio::signal::unix::Signal,
    #[cfg(unix)]
    int: tokio::signal::unix::Signal,
}

impl Signals {
    fn watch() -> Signals {
        #[cfg(unix)]
        {
            use tokio::signal::unix::{signal, SignalKind};
            Signals {
                term: signal(SignalKind::terminate()).expect("SIGTERM can be watched"),
                int: signal(SignalKind::interrupt()).expect("SIGINT can be watched"),
            }
        }
        #[cfg(not(unix))]
        Signals {}
    }

    /// Resolves on the next SIGINT or SIGTERM.
    async fn next(&mut self) {
        #[cfg(unix)]
        tokio::select! {
            _ = self.term.recv() => {}
            _ = self.int.recv() => {}
        }
        #[cfg(not(unix))]
        {
            let _ = tokio::signal::ctrl_c().await;
        }
    }
}
