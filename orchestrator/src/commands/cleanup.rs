//! `benchrig cleanup`: on every host, undo what an interrupted or crashed
//! run left (mounts under the work dir, loop devices of benchrig images).

use super::{exit_code_for, open_sessions};
use crate::cli::HostsArgs;
use crate::host::HostError;
use crate::reporter::Reporter;
use crate::selection;
use benchrig_wire::messages::{Reply, Request, StepRequest};
use benchrig_wire::steps::{Action, NoArgs};

pub async fn run(args: HostsArgs, reporter: Reporter) -> anyhow::Result<i32> {
    let inv = selection::load_inventory(&args.inventory)?;
    let hosts = selection::select(&inv, "all", args.limit.as_deref())?;
    let mut results = Vec::new();
    for (h, r) in open_sessions(&inv, &hosts, args.forks, reporter).await {
        let s = match r {
            Ok(s) => s,
            Err(e) => {
                results.push((h, Err(e)));
                continue;
            }
        };
        let req = Request::Run(StepRequest {
            cell: "cleanup".into(),
            name: "cleanup".into(),
            action: Action::Cleanup(NoArgs {}),
        });
        let done = match s.agent.request(req, None, |_| {}).await {
            Ok(Reply::Step(out)) => {
                let list = |k: &str| out.info.get(k).and_then(|v| v.as_array()).map(|a| a.len()).unwrap_or(0);
                println!("{h}: unmounted {}, detached {}", list("unmounted"), list("detached"));
                for (k, v) in &out.info {
                    for item in v.as_array().into_iter().flatten() {
                        println!("  {k}: {}", item.as_str().unwrap_or_default());
                    }
                }
                Ok(())
            }
            Ok(other) => Err(HostError::Failed(format!("unexpected answer: {other:?}"))),
            Err(e) => Err(HostError::from(e)),
        };
        if let Err(e) = &done {
            println!("{h}: cleanup failed: {e}");
        }
        let closed = s.close().await;
        results.push((h, done.and(closed.map(|_| ()))));
    }
    Ok(exit_code_for(&results))
}
