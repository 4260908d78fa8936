//! Shutdown signals: the first SIGINT or SIGTERM starts a graceful stop, a second ends the
//! process at once.

// `_exit` is the one call here that needs it.
#![allow(unsafe_code)]

/// Resolves on SIGINT or SIGTERM. From then on a second SIGINT or SIGTERM ends the
/// process at once (exit status 130), whatever the drain is waiting for.
pub async fn shutdown_signal() {
    any_signal().await;
    tracing::info!("stopping; a second SIGINT or SIGTERM exits at once");
    tokio::spawn(async {
        any_signal().await;
        tracing::warn!("second signal: exiting now");
        exit_now(130);
    });
}

/// Ends the process at once with `status`. `std::process::exit` runs the C library's exit
/// handlers, which wait on locks other threads may hold: with a shard's replicas stopped
/// it took 2 s (issue #39); `_exit` does not wait.
fn exit_now(status: i32) -> ! {
    // SAFETY: `_exit` only ends the process; it touches no Rust state. The log line above
    // was written to stderr, which is unbuffered, so nothing is lost.
    unsafe { libc::_exit(status) }
}

/// Resolves on the next SIGINT or SIGTERM.
async fn any_signal() {
    #[cfg(unix)]
    {
        use tokio::signal::unix::{signal, SignalKind};
        let mut term = signal(SignalKind::terminate()).expect("SIGTERM can be watched");
        tokio::select! {
            _ = tokio::signal::ctrl_c() => {}
            _ = term.recv() => {}
        }
    }
    #[cfg(not(unix))]
    {
        let _ = tokio::signal::ctrl_c().await;
    }
}
