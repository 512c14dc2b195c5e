//! `benchrig run`, the run stage: check everything (`check`), open every
//! host's slot (`slots::connect`, bounded by --forks), run the plays in
//! order (`plays`), each cell's visits through the `executor` in the order
//! `schedule` gives, with the cells' bookkeeping in `cells` and every
//! decision about what runs and what a run ends as in `policy`; store as
//! results arrive, close every slot, and end with the table and an exit code.

mod cells;
pub mod check;
mod context;
pub mod executor;
mod leases;
mod plays;
pub mod policy;
pub mod schedule;
mod slots;

pub use check::{check, Checked};

use crate::exit_code;
use crate::inventory::Vars;
use crate::playbook::TagFilter;
use crate::progress::Progress;
use crate::session::deploy::AgentBuilds;
use crate::session::transport::ConnectionSpec;
use crate::status::{HostStatus, RunStatus};
use crate::store::{NewRun, Store};
use context::RunContext;
use context::Slot;
use std::path::PathBuf;
use std::sync::Arc;
use tokio::sync::{watch, Mutex, Semaphore};

pub struct RunOptions {
    pub playbook: PathBuf,
    pub inventory: Vec<PathBuf>,
    pub limit: Option<String>,
    pub tags: TagFilter,
    pub extra_vars: Vars,
    pub forks: usize,
    pub db: crate::store::DbLocation,
    pub name: Option<String>,
    pub progress: Progress,
    /// How long to wait for hosts another run holds (0: not at all).
    pub wait_for_hosts: std::time::Duration,
}

pub struct RunResult {
    pub run: i64,
    pub status: RunStatus,
    pub exit_code: i32,
    pub table: String,
}

pub async fn run(opts: RunOptions) -> anyhow::Result<RunResult> {
    let checked = check(&opts.playbook, &opts.inventory, opts.limit.as_deref(), &opts.extra_vars, &opts.tags)?;
    if checked.hosts.is_empty() {
        anyhow::bail!("no hosts matched (check `hosts:` in the playbook and --limit)");
    }
    let builds = AgentBuilds::discover();
    let needs_agent = checked.hosts.keys().any(|h| ConnectionSpec::from_vars(h, &checked.connection_vars(h)).is_ok());
    if needs_agent && builds.all().is_empty() {
        anyhow::bail!("no benchrig-agent builds found; build them with `{}`", crate::session::deploy::BUILD_COMMAND);
    }
    let store = Store::open(&opts.db)?;
    // Before any host is touched: no other run may be measuring on them.
    let all_hosts: Vec<String> = checked.hosts.keys().cloned().collect();
    let held = leases::hold(&store, &all_hosts, opts.wait_for_hosts, opts.progress).await?;
    let run = store.create_run(&NewRun {
        name: opts.name.as_deref(),
        playbook: &opts.playbook.display().to_string(),
        playbook_text: &checked.playbook.text,
        inventory: &checked.inventory.sources.join(", "),
        limit: opts.limit.as_deref(),
        extra_vars: &serde_json::Value::Object(opts.extra_vars.clone()),
    })?;
    held.for_run(run)?;
    for h in checked.hosts.keys() {
        store.set_host(run, h, HostStatus::Pending, None)?;
    }
    for (h, why) in &held.quarantined {
        opts.progress.line(h, format!("left out: quarantined: {why}"));
    }
    opts.progress.note(format!("run {run}: {} on {} host(s)", opts.playbook.display(), checked.hosts.len()));

    let (cancel_tx, cancel_rx) = watch::channel(false);
    let progress = opts.progress;
    let (leases_store, holder) = (store.clone(), held.holder.clone());
    tokio::spawn(async move {
        if tokio::signal::ctrl_c().await.is_ok() {
            eprintln!("\ninterrupted: stopping the running steps and tearing down (Ctrl-C again to quit at once)");
            let _ = cancel_tx.send(true);
            if tokio::signal::ctrl_c().await.is_ok() {
                // The agents release their mounts when their channel closes;
                // the hosts go back to the lab now rather than when the leases lapse.
                let _ = leases_store.release_leases(&holder);
                std::process::exit(exit_code::INTERRUPTED);
            }
        }
    });

    let slots = checked
        .hosts
        .keys()
        .map(|h| {
            let aside = held.quarantined.iter().find(|(q, _)| q == h);
            let down = aside.map(|(_, why)| policy::Down::Quarantined(why.clone()));
            (h.clone(), Mutex::new(Slot { down, ..Slot::default() }))
        })
        .collect();
    let ctx = Arc::new(RunContext {
        extra: opts.extra_vars.clone(),
        store: store.clone(),
        run,
        builds,
        progress,
        cancel: cancel_rx.clone(),
        forks: Semaphore::new(opts.forks.max(1)),
        slots,
        halt: Default::default(),
        checked,
    });

    // Plays run in order, as in Ansible; within a play, hosts in parallel
    // (a role play's cells one after another, each across its hosts).
    let hosts: Vec<String> = ctx.checked.hosts.keys().cloned().collect();
    join_all(hosts.iter().map(|h| slots::connect(ctx.clone(), h.clone()))).await;
    for (pi, play) in ctx.checked.playbook.plays.iter().enumerate() {
        let play_hosts = ctx.checked.hosts_of_play(pi);
        if play.roles.is_empty() {
            plays::run_plain_play_in_batches(&ctx, pi, &play_hosts).await;
        } else {
            plays::run_role_play(&ctx, pi, &play_hosts).await;
        }
    }
    join_all(hosts.iter().map(|h| slots::close(ctx.clone(), h.clone()))).await;

    let (unreachable, failed) = slots::tally(&ctx).await?;
    let (status, code) = policy::run_outcome(ctx.interrupted(), unreachable, failed);
    store.finish_run(run, status)?;
    drop(held);
    Ok(RunResult { run, status, exit_code: code, table: crate::terminal_table::render(&store, run)? })
}

async fn join_all<F: std::future::Future<Output = ()> + Send + 'static>(futures: impl Iterator<Item = F>) {
    let tasks: Vec<_> = futures.map(tokio::spawn).collect();
    for t in tasks {
        let _ = t.await;
    }
}
