//! `benchrig ping`: how fast an established agent answers, per host — a bare
//! ping and a no-op step — next to what it cost to get there (connect,
//! deploy, handshake, facts).

use super::exit_code_for;
use crate::cli::PingArgs;
use crate::progress::Progress;
use crate::session::host::HostError;
use crate::session::open_sessions;
use crate::terminal_table::table;
use benchrig_wire::messages::{Request, StepRequest};
use benchrig_wire::steps::{Action, NoArgs};
use std::time::{Duration, Instant};

fn percentile(sorted: &[Duration], p: f64) -> Duration {
    if sorted.is_empty() {
        return Duration::ZERO;
    }
    let idx = ((sorted.len() as f64 - 1.0) * p).round() as usize;
    sorted[idx.min(sorted.len() - 1)]
}

fn ms(d: Duration) -> String {
    format!("{:.2}", d.as_secs_f64() * 1e3)
}

pub async fn run(args: PingArgs, progress: Progress) -> anyhow::Result<i32> {
    let (inv, hosts, connection) = super::selected_hosts(&args.hosts)?;
    let t0 = Instant::now();
    let sessions = open_sessions(&inv, &hosts, args.hosts.forks, &connection, progress).await;
    let all_up = t0.elapsed();
    let mut rows = Vec::new();
    let mut results = Vec::new();
    for (h, r) in sessions {
        let s = match r {
            Ok(s) => s,
            Err(e) => {
                results.push((h, Err::<(), HostError>(e)));
                continue;
            }
        };
        let mut pings = Vec::with_capacity(args.count);
        let mut noops = Vec::with_capacity(args.count);
        let mut failure = None;
        for _ in 0..args.count {
            match s.agent.ping().await {
                Ok(d) => pings.push(d),
                Err(e) => failure = Some(e),
            }
            let step = Request::Run(StepRequest {
                cell: "ping".into(),
                name: "noop".into(),
                action: Action::Noop(NoArgs {}),
                monitor: None,
            });
            let t = Instant::now();
            match s.agent.request(step, None, |_| {}).await {
                Ok(_) => noops.push(t.elapsed()),
                Err(e) => failure = Some(e),
            }
        }
        pings.sort();
        noops.sort();
        rows.push(vec![
            h.clone(),
            s.facts.arch.clone(),
            format!("{:.2}", s.startup.as_secs_f64()),
            ms(percentile(&pings, 0.5)),
            ms(percentile(&pings, 0.95)),
            ms(percentile(&noops, 0.5)),
            ms(percentile(&noops, 0.95)),
        ]);
        let closed = s.close().await.map(|_| ());
        results.push((
            h,
            match failure {
                Some(e) => Err(HostError::from(e)),
                None => closed,
            },
        ));
    }
    out!(
        "{}",
        table(&["HOST", "ARCH", "STARTUP_S", "PING_P50_MS", "PING_P95_MS", "NOOP_P50_MS", "NOOP_P95_MS"], &rows)
    )?;
    outln!("all hosts connected, deployed and facts gathered in {:.2} s", all_up.as_secs_f64())?;
    Ok(exit_code_for(&results))
}
