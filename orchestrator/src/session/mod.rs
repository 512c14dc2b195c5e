//! What opens a host: the transport that reaches it (`transport`), the agent
//! pushed to it (`deploy`, the build its CPU and kernel get: `platform`), the orchestrator's end of the agent's session
//! (`agent_client`), and the whole host session built from them (`host`),
//! with where its start-up time went (`timeline`).
//! `benchrig run`, `facts`, `ping` and `cleanup` all open hosts through here.

pub mod agent_client;
pub mod deploy;
pub mod host;
pub mod platform;
pub mod timeline;
pub mod transport;

use crate::inventory::Inventory;
use crate::progress::Progress;
use deploy::AgentBuilds;
use host::{HostError, HostSession};
use std::sync::Arc;

/// Open a session on every host, at most `forks` at a time; results in host order.
pub async fn open_sessions(
    inv: &Inventory,
    hosts: &[String],
    forks: usize,
    connection: &transport::ConnectionDefaults,
    progress: Progress,
) -> Vec<(String, Result<HostSession, HostError>)> {
    let builds = Arc::new(AgentBuilds::discover());
    let sem = Arc::new(tokio::sync::Semaphore::new(forks.max(1)));
    let tasks: Vec<_> = hosts
        .iter()
        .map(|h| {
            let mut vars = inv.host_vars(h);
            connection.apply(&mut vars);
            let (builds, sem, h) = (builds.clone(), sem.clone(), h.clone());
            tokio::spawn(async move {
                let _permit = sem.acquire().await;
                let r = HostSession::open(&h, &vars, &builds, None).await;
                if let Err(e) = &r {
                    progress.line(&h, e.to_string());
                }
                (h, r)
            })
        })
        .collect();
    in_order(tasks).await
}

/// Run `work` on every open session at once and close each after it,
/// results in the given order: a hundred hosts close in the time of one.
pub async fn finish_all<T, F, Fut>(sessions: Vec<(String, HostSession)>, work: F) -> Vec<(String, Result<T, HostError>)>
where
    T: Send + 'static,
    F: Fn(Arc<HostSession>) -> Fut,
    Fut: std::future::Future<Output = Result<T, HostError>> + Send + 'static,
{
    let tasks: Vec<_> = sessions
        .into_iter()
        .map(|(h, s)| {
            let s = Arc::new(s);
            let done = work(s.clone());
            tokio::spawn(async move {
                let r = done.await;
                let closed = match Arc::try_unwrap(s) {
                    Ok(s) => s.close().await.map(|_| ()),
                    Err(_) => Err(HostError::Failed("the session was still in use at its close".into())),
                };
                (h, r.and_then(|t| closed.map(|_| t)))
            })
        })
        .collect();
    in_order(tasks).await
}

/// The tasks' results in the order given (a task that panicked is left out).
async fn in_order<T>(tasks: Vec<tokio::task::JoinHandle<T>>) -> Vec<T> {
    let mut out = Vec::new();
    for t in tasks {
        if let Ok(r) = t.await {
            out.push(r);
        }
    }
    out
}
