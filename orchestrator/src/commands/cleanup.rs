//! `benchrig cleanup`: on every host, undo what an interrupted or crashed
//! run left: a boot of a kernel under test (the host's boot record says
//! which; the host is booted back to its own kernel and verified first),
//! what its agent's journal says it changed, mounts under the work dir,
//! loop devices of benchrig images. It holds the hosts' leases while it
//! works, as a run does, and refuses a host another run holds: that run's
//! mounts are not leftovers.

use super::exit_code_for;
use crate::cli::HostsArgs;
use crate::progress::Progress;
use crate::run::kernel::Booter;
use crate::run::leases::{self, Ask};
use crate::session::deploy::AgentBuilds;
use crate::session::host::HostError;
use crate::session::{finish_all, open_sessions};
use crate::store::{HostsBusy, Store};
use std::sync::Arc;

pub async fn run(args: HostsArgs, progress: Progress) -> anyhow::Result<i32> {
    let (inv, hosts, connection) = super::selected_hosts(&args)?;
    let store = Store::open(&args.db.db)?;
    let ask = Ask { hosts: &hosts, wait: std::time::Duration::ZERO, term: leases::DEFAULT_TERM, resuming: None };
    let _held = leases::hold(&store, &ask, progress).await.map_err(|e| match e.downcast::<HostsBusy>() {
        Ok(busy) => anyhow::anyhow!(
            "cleanup: {}: what it set up there is in use, not left over; nothing was touched (a run that was killed: `benchrig lab release HOST` once it is surely gone)",
            busy.holders()
        ),
        Err(e) => e,
    })?;
    let mut results = Vec::new();
    let mut open = Vec::new();
    // A boot of a kernel under test a killed run left: back first, each
    // host in its own task (a boot takes minutes).
    let (builds, templates) = (Arc::new(AgentBuilds::discover()), Arc::new(crate::plan::templates(&inv)));
    let opened = open_sessions(&inv, &hosts, args.forks, &connection, progress).await;
    let back: Vec<_> = opened
        .into_iter()
        .map(|(h, r)| {
            let mut vars = inv.host_vars(&h);
            connection.apply(&mut vars);
            let (builds, templates) = (builds.clone(), templates.clone());
            tokio::spawn(async move {
                let back = async {
                    let mut session = Some(r?);
                    let mut booter =
                        Booter::alone(&h, vars, &templates, &builds, progress).map_err(HostError::Failed)?;
                    match booter.bring_back(&mut session).await {
                        Ok(Some(what)) => progress.line(&h, what),
                        Ok(None) => {}
                        Err(e) => return Err(HostError::Failed(format!("not back on its own kernel: {e}"))),
                    }
                    session.ok_or_else(|| HostError::Failed("lost on the way back to its own kernel".into()))
                };
                let r = back.await;
                (h, r)
            })
        })
        .collect();
    for task in back {
        match task.await {
            Ok((h, Ok(s))) => open.push((h, s)),
            Ok((h, Err(e))) => results.push((h, Err(e))),
            Err(e) => anyhow::bail!("cleanup: a host's task failed: {e}"),
        }
    }
    let done = finish_all(open, |s| async move { s.cleanup().await }).await;
    // Printed after the closes, so that a closed stdout leaves no session open.
    for (h, r) in done {
        match &r {
            Ok(what) => outln!("{h}: cleaned up {what}")?,
            Err(e) => outln!("{h}: cleanup failed: {e}")?,
        }
        results.push((h, r.map(|_| ())));
    }
    Ok(exit_code_for(&results))
}
