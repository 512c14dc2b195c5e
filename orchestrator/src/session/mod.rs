//! What opens a host: the transport that reaches it (`transport`), the agent
//! pushed to it (`deploy`), the orchestrator's end of the agent's session
//! (`agent_client`), and the whole host session built from them (`host`),
//! with where its start-up time went (`timeline`).
//! `benchrig run`, `facts`, `ping` and `cleanup` all open hosts through here.

pub mod agent_client;
pub mod deploy;
pub mod host;
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
    progress: Progress,
) -> Vec<(String, Result<HostSession, HostError>)> {
    let builds = Arc::new(AgentBuilds::discover());
    let sem = Arc::new(tokio::sync::Semaphore::new(forks.max(1)));
    let tasks: Vec<_> = hosts
        .iter()
        .map(|h| {
            let (vars, builds, sem, h) = (inv.host_vars(h), builds.clone(), sem.clone(), h.clone());
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
    let mut out = Vec::new();
    for t in tasks {
        if let Ok(r) = t.await {
            out.push(r);
        }
    }
    out
}
