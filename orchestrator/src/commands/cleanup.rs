//! `benchrig cleanup`: on every host, undo what an interrupted or crashed
//! run left (mounts under the work dir, loop devices of benchrig images).

use super::exit_code_for;
use crate::cli::HostsArgs;
use crate::progress::Progress;
use crate::selection;
use crate::session::open_sessions;

pub async fn run(args: HostsArgs, progress: Progress) -> anyhow::Result<i32> {
    let inv = selection::load_inventory(&args.inventory)?;
    let hosts = selection::select(&inv, "all", args.limit.as_deref())?;
    let mut results = Vec::new();
    for (h, r) in open_sessions(&inv, &hosts, args.forks, progress).await {
        let s = match r {
            Ok(s) => s,
            Err(e) => {
                results.push((h, Err(e)));
                continue;
            }
        };
        let done = s.cleanup().await;
        let closed = s.close().await;
        // Printed after the close, so that a closed stdout leaves no session open.
        match &done {
            Ok(what) => outln!("{h}: cleaned up {what}")?,
            Err(e) => outln!("{h}: cleanup failed: {e}")?,
        }
        results.push((h, done.and(closed).map(|_| ())));
    }
    Ok(exit_code_for(&results))
}
