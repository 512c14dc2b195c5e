//! One module per subcommand; each returns the process exit code.

pub mod cleanup;
pub mod compare;
pub mod facts;
pub mod inventory;
pub mod ping;
pub mod plan;
pub mod runs;

use crate::deploy::AgentBuilds;
use crate::host::{HostError, HostSession};
use crate::inventory::Inventory;
use crate::reporter::Reporter;
use std::sync::Arc;

/// Open a session on every host, at most `forks` at a time; results in host order.
pub async fn open_sessions(
    inv: &Inventory,
    hosts: &[String],
    forks: usize,
    reporter: Reporter,
) -> Vec<(String, Result<HostSession, HostError>)> {
    let builds = Arc::new(AgentBuilds::discover());
    let sem = Arc::new(tokio::sync::Semaphore::new(forks.max(1)));
    let tasks: Vec<_> = hosts
        .iter()
        .map(|h| {
            let (vars, builds, sem, h) = (inv.host_vars(h), builds.clone(), sem.clone(), h.clone());
            tokio::spawn(async move {
                let _permit = sem.acquire().await;
                let r = HostSession::open(&h, &vars, &builds).await;
                if let Err(e) = &r {
                    reporter.line(&h, e.to_string());
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

/// UNREACHABLE when any host was unreachable, CELL_FAILED when any failed otherwise.
pub fn exit_code_for<T>(results: &[(String, Result<T, HostError>)]) -> i32 {
    let unreachable = results.iter().any(|(_, r)| matches!(r, Err(HostError::Unreachable(_))));
    crate::run::outcome(false, unreachable, results.iter().any(|(_, r)| r.is_err())).1
}
