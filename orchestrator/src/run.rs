//! `benchrig run`: check everything, then run every host's cells in
//! parallel (bounded by --forks), storing as results arrive, and end with the
//! summary table and an exit code that says what happened.

use crate::deploy::AgentBuilds;
use crate::executor::{CellOutcome, CellRunner};
use crate::host::{HostError, HostSession};
use crate::inventory::{Inventory, Vars};
use crate::planner::{self, Cell, HostInput};
use crate::playbook::{self, Playbook};
use crate::reporter::Reporter;
use crate::selection;
use crate::store::{NewRun, Store};
use crate::template::Templates;
use crate::transport::ConnectionSpec;
use indexmap::IndexMap;
use std::path::PathBuf;
use std::sync::Arc;
use tokio::sync::{watch, Semaphore};

pub mod exit {
    pub const OK: i32 = 0;
    pub const USAGE: i32 = 1;
    pub const CELL_FAILED: i32 = 2;
    pub const UNREACHABLE: i32 = 4;
    pub const INTERRUPTED: i32 = 130;

    /// The run's status word and exit code; the more serious wins.
    pub fn outcome(interrupted: bool, unreachable: bool, failed: bool) -> (&'static str, i32) {
        if interrupted {
            ("interrupted", INTERRUPTED)
        } else if unreachable {
            ("unreachable", UNREACHABLE)
        } else if failed {
            ("failed", CELL_FAILED)
        } else {
            ("ok", OK)
        }
    }
}

pub struct RunOptions {
    pub playbook: PathBuf,
    pub inventory: Vec<PathBuf>,
    pub limit: Option<String>,
    pub extra_vars: Vars,
    pub forks: usize,
    pub db: PathBuf,
    pub name: Option<String>,
    pub reporter: Reporter,
}

pub struct Checked {
    pub playbook: Playbook,
    pub inventory: Inventory,
    /// Host → indexes of the plays it takes part in, in inventory order.
    pub hosts: IndexMap<String, Vec<usize>>,
}

/// Everything that can be checked without a host: playbook grammar, host
/// selection, connection variables, scratch devices, and a plan of every
/// host without facts. A template that needs facts waits for them.
pub fn check(
    playbook: &std::path::Path,
    inventory: &[PathBuf],
    limit: Option<&str>,
    extra: &Vars,
) -> anyhow::Result<Checked> {
    let pb = playbook::load(playbook)?;
    let inv = selection::load_inventory(inventory)?;
    let mut hosts: IndexMap<String, Vec<usize>> = IndexMap::new();
    for (i, play) in pb.plays.iter().enumerate() {
        let chosen = selection::select(&inv, &play.hosts, limit)?;
        if chosen.is_empty() {
            tracing::warn!("play `{}`: no hosts match `{}`", play.name, play.hosts);
        }
        for h in chosen {
            hosts.entry(h).or_default().push(i);
        }
    }
    // Hosts run in inventory order whatever the play order.
    hosts.sort_by_cached_key(|h, _| inv.hosts.get_index_of(h));
    let t = Templates::new();
    for (h, plays) in &hosts {
        let vars = inv.host_vars(h);
        ConnectionSpec::from_vars(h, &vars).map_err(anyhow::Error::msg)?;
        planner::scratch_devices(h, &vars).map_err(anyhow::Error::msg)?;
        for &pi in plays {
            let input = HostInput { inventory: &inv, host: h, extra_vars: extra, facts: None };
            if let Err(e) = planner::plan_play(&pb.plays[pi], pi, &input, &t) {
                if !needs_facts(&e.message) {
                    return Err(e.into());
                }
            }
        }
    }
    Ok(Checked { playbook: pb, inventory: inv, hosts })
}

/// A template error that only says "facts are not known yet": the variable
/// it names is `facts` or under it (`facts_size` is a typo, not that).
pub fn needs_facts(message: &str) -> bool {
    message.contains("`facts`") || message.contains("`facts.")
}

struct Shared {
    checked: Checked,
    extra: Vars,
    store: Store,
    run: i64,
    builds: AgentBuilds,
    reporter: Reporter,
    cancel: watch::Receiver<bool>,
    forks: Semaphore,
}

#[derive(Clone, Copy, Debug, PartialEq)]
enum HostOutcome {
    Ok,
    Failed,
    Unreachable,
    Interrupted,
}

pub struct RunResult {
    pub run: i64,
    pub status: &'static str,
    pub exit_code: i32,
    pub table: String,
}

pub async fn run(opts: RunOptions) -> anyhow::Result<RunResult> {
    let checked = check(&opts.playbook, &opts.inventory, opts.limit.as_deref(), &opts.extra_vars)?;
    if checked.hosts.is_empty() {
        anyhow::bail!("no hosts matched (check `hosts:` in the playbook and --limit)");
    }
    let builds = AgentBuilds::discover();
    let needs_agent =
        checked.hosts.keys().any(|h| ConnectionSpec::from_vars(h, &checked.inventory.host_vars(h)).is_ok());
    if needs_agent && builds.all().is_empty() {
        anyhow::bail!("no benchrig-agent builds found; build them with `{}`", crate::deploy::BUILD_COMMAND);
    }
    let store = Store::open(&opts.db)?;
    let run = store.create_run(&NewRun {
        name: opts.name.as_deref(),
        playbook: &opts.playbook.display().to_string(),
        playbook_text: &checked.playbook.text,
        inventory: &checked.inventory.sources.join(", "),
        limit: opts.limit.as_deref(),
        extra_vars: &serde_json::Value::Object(opts.extra_vars.clone()),
    })?;
    for h in checked.hosts.keys() {
        store.set_host(run, h, "pending", None)?;
    }
    opts.reporter.note(format!("run {run}: {} on {} host(s)", opts.playbook.display(), checked.hosts.len()));

    let (cancel_tx, cancel_rx) = watch::channel(false);
    let reporter = opts.reporter;
    tokio::spawn(async move {
        if tokio::signal::ctrl_c().await.is_ok() {
            eprintln!("\ninterrupted: stopping the running steps and tearing down (Ctrl-C again to quit at once)");
            let _ = cancel_tx.send(true);
            if tokio::signal::ctrl_c().await.is_ok() {
                // The agents release their mounts when their channel closes.
                std::process::exit(exit::INTERRUPTED);
            }
        }
    });

    let shared = Arc::new(Shared {
        extra: opts.extra_vars.clone(),
        store: store.clone(),
        run,
        builds,
        reporter,
        cancel: cancel_rx.clone(),
        forks: Semaphore::new(opts.forks.max(1)),
        checked,
    });
    let tasks: Vec<_> = shared
        .checked
        .hosts
        .iter()
        .map(|(h, plays)| tokio::spawn(run_host(h.clone(), plays.clone(), shared.clone())))
        .collect();
    let mut outcomes = Vec::new();
    for t in tasks {
        outcomes.push(t.await.unwrap_or(HostOutcome::Failed));
    }

    let interrupted = *cancel_rx.borrow() || outcomes.contains(&HostOutcome::Interrupted);
    let cells = store.cells(run)?;
    let any_failed = outcomes.contains(&HostOutcome::Failed) || cells.iter().any(|c| c.status == "failed");
    let (status, exit_code) = exit::outcome(interrupted, outcomes.contains(&HostOutcome::Unreachable), any_failed);
    store.finish_run(run, status)?;
    Ok(RunResult { run, status, exit_code, table: crate::summary::render(&store, run)? })
}

async fn run_host(host: String, plays: Vec<usize>, sh: Arc<Shared>) -> HostOutcome {
    let _permit = sh.forks.acquire().await;
    let r = sh.reporter;
    if *sh.cancel.borrow() {
        let _ = sh.store.set_host(sh.run, &host, "skipped", Some("interrupted"));
        return HostOutcome::Interrupted;
    }
    let vars = sh.checked.inventory.host_vars(&host);
    let _ = sh.store.set_host(sh.run, &host, "running", None);
    let mut session = match HostSession::open(&host, &vars, &sh.builds).await {
        Ok(s) => s,
        Err(e) => return host_failed_early(&host, &plays, &sh, e),
    };
    r.line(
        &host,
        format!(
            "{} · {} · kernel {} · agent {} ({:.1} s)",
            session.describe(),
            session.facts.arch,
            session.facts.kernel.release,
            if session.deployed.uploaded { "uploaded" } else { "already there" },
            session.startup.as_secs_f64()
        ),
    );
    let _ = sh.store.set_host_facts(Some(sh.run), &host, &session.facts);

    let t = Templates::new();
    let mut failed = false;
    let mut lost: Option<String> = None;
    for &pi in &plays {
        let play = &sh.checked.playbook.plays[pi];
        let input = HostInput {
            inventory: &sh.checked.inventory,
            host: &host,
            extra_vars: &sh.extra,
            facts: Some(&session.facts),
        };
        let cells: Vec<Cell> = match planner::plan_play(play, pi, &input, &t) {
            Ok(c) => c,
            Err(e) => {
                r.line(&host, format!("play `{}` cannot be planned: {e}", play.name));
                failed = true;
                continue;
            }
        };
        let total = cells.len();
        for (n, cell) in cells.iter().enumerate() {
            let cell_id = match sh.store.add_cell(sh.run, cell) {
                Ok(id) => id,
                Err(e) => {
                    r.line(&host, format!("cannot store cell: {e}"));
                    failed = true;
                    continue;
                }
            };
            let skip = |status: &str, reason: &str| {
                let _ = sh.store.set_cell_status(cell_id, status, Some(reason));
            };
            if let Some(why) = &lost {
                skip("failed", &format!("host unreachable: {why}"));
                continue;
            }
            if *sh.cancel.borrow() {
                skip("skipped", "interrupted");
                continue;
            }
            if let Some(why) = &cell.unsupported {
                r.line(&host, format!("cell {}/{total} {}: unsupported: {why}", n + 1, cell.describe()));
                skip("unsupported", why);
                continue;
            }
            r.line(&host, format!("cell {}/{total} {}", n + 1, cell.describe()));
            let runner = CellRunner {
                agent: &session.agent,
                store: &sh.store,
                reporter: r,
                host: &host,
                cancel: sh.cancel.clone(),
            };
            let outcome = runner.run(cell, cell_id).await;
            match &outcome {
                CellOutcome::Ok | CellOutcome::Skipped(_) => {}
                CellOutcome::Unsupported(why) => r.line(&host, format!("  unsupported: {why}")),
                CellOutcome::Failed(why) => {
                    failed = true;
                    r.line(&host, format!("  failed: {why}"));
                }
                CellOutcome::HostLost(why) => {
                    failed = true;
                    if *sh.cancel.borrow() {
                        lost = Some(why.clone());
                        continue;
                    }
                    r.line(&host, format!("  lost the host: {why}; reconnecting once"));
                    match HostSession::open(&host, &vars, &sh.builds).await {
                        Ok(fresh) => {
                            std::mem::replace(&mut session, fresh).abandon().await;
                            // The old agent may have died holding mounts and loop
                            // devices; the new one does not know them: clean up.
                            match session.cleanup().await {
                                Ok(done) => r.line(&host, format!("  reconnected; cleaned up {done}")),
                                Err(e) => r.line(&host, format!("  reconnected; cleanup failed: {e}")),
                            }
                        }
                        Err(e) => {
                            r.line(&host, format!("  unreachable: {e}"));
                            lost = Some(why.clone());
                        }
                    }
                }
            }
        }
    }
    let outcome = if lost.is_some() {
        session.abandon().await;
        HostOutcome::Unreachable
    } else {
        if let Err(e) = session.close().await {
            r.line(&host, format!("closing the session: {e}"));
        }
        if *sh.cancel.borrow() {
            HostOutcome::Interrupted
        } else if failed {
            HostOutcome::Failed
        } else {
            HostOutcome::Ok
        }
    };
    let (status, reason) = match (&outcome, &lost) {
        (HostOutcome::Unreachable, Some(why)) => ("unreachable", Some(why.as_str())),
        (HostOutcome::Failed, _) => ("failed", None),
        (HostOutcome::Interrupted, _) => ("interrupted", None),
        _ => ("ok", None),
    };
    let _ = sh.store.set_host(sh.run, &host, status, reason);
    outcome
}

/// The host never got going: record why, and its cells (planned without
/// facts) as failed so `--resume` and reports know they are missing.
fn host_failed_early(host: &str, plays: &[usize], sh: &Shared, e: HostError) -> HostOutcome {
    let (status, outcome) = match &e {
        HostError::Unreachable(_) => ("unreachable", HostOutcome::Unreachable),
        HostError::Failed(_) => ("failed", HostOutcome::Failed),
    };
    let reason = e.to_string();
    sh.reporter.line(host, &reason);
    let _ = sh.store.set_host(sh.run, host, status, Some(&reason));
    let t = Templates::new();
    for &pi in plays {
        let input = HostInput { inventory: &sh.checked.inventory, host, extra_vars: &sh.extra, facts: None };
        for cell in planner::plan_play(&sh.checked.playbook.plays[pi], pi, &input, &t).unwrap_or_default() {
            if let Ok(id) = sh.store.add_cell(sh.run, &cell) {
                let _ = sh.store.set_cell_status(id, "failed", Some(&reason));
            }
        }
    }
    outcome
}
