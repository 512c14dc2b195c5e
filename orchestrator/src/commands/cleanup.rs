//! `benchrig cleanup`: on every host, undo what an interrupted or crashed
//! run left (mounts under the work dir, loop devices of benchrig images).

use super::exit_code_for;
use crate::cli::HostsArgs;
use crate::progress::Progress;
use crate::session::{finish_all, open_sessions};

pub async fn run(args: HostsArgs, progress: Progress) -> anyhow::Result<i32> {
    let (inv, hosts, password) = super::selected_hosts(&args)?;
    let mut results = Vec::new();
    let mut open = Vec::new();
    for (h, r) in open_sessions(&inv, &hosts, args.forks, password.as_ref(), progress).await {
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
