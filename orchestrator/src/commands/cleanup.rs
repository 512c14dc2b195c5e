//! `benchrig cleanup`: on every host, undo what an interrupted or crashed
//! run left (what its agent's journal says it changed, mounts under the
//! work dir, loop devices of benchrig images). It holds the hosts' leases
//! while it works, as a run does, and refuses a host another run holds:
//! that run's mounts are not leftovers.

use super::exit_code_for;
use crate::cli::HostsArgs;
use crate::progress::Progress;
use crate::run::leases::{self, Ask};
use crate::session::{finish_all, open_sessions};
use crate::store::{HostsBusy, Store};

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
    for (h, r) in open_sessions(&inv, &hosts, args.forks, &connection, progress).await {
        match r {
            Ok(s) => open.push((h, s)),
            Err(e) => results.push((h, Err(e))),
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
