//! The process's Ctrl-C for a command that tears down before it ends
//! (`run`, `bisect`): the first cancels what runs, so its steps stop and
//! its hosts are torn down; the second says to quit at once. Quitting is
//! the caller's: it stops waiting and returns `exit_code::QuitAtOnce`, so
//! every destructor still runs on the way out of `main` (the leases'
//! among them), which `process::exit` would skip.

use tokio::sync::{oneshot, watch};

/// Listen for as long as the process lasts; `stopping` is what the first
/// Ctrl-C is said to stop. `quit` hears the second.
pub fn listen(stopping: &'static str, cancel: watch::Sender<bool>, quit: oneshot::Sender<()>) {
    tokio::spawn(async move {
        if tokio::signal::ctrl_c().await.is_ok() {
            eprintln!("\ninterrupted: stopping {stopping} and tearing down (Ctrl-C again to quit at once)");
            let _ = cancel.send(true);
            if tokio::signal::ctrl_c().await.is_ok() {
                let _ = quit.send(());
            }
        }
    });
}
