//! `benchrig run`, the run stage: check everything (`check`), open every
//! host's slot (`slots::connect`, bounded by --forks), run the plays in
//! order (`plays`), each cell's visits through the `executor` in the order
//! `schedule` gives (a round's visits on one identical setup through
//! `shared`), with the cells' bookkeeping in `cells` and every
//! decision about what runs and what a run ends as in `policy`; store as
//! results arrive, close every slot, and end with the table and an exit code.

mod cells;
pub mod check;
mod context;
pub mod ctrl_c;
pub mod executor;
pub mod kernel;
pub mod leases;
mod plays;
pub mod policy;
pub mod recipe;
mod recovery;
pub mod resume;
pub mod schedule;
mod shared;
mod slots;

pub use check::{check, Checked};
pub use recipe::Recipe;

use crate::exit_code;
use crate::progress::Progress;
use crate::session::deploy::AgentBuilds;
use crate::session::transport::ConnectionSpec;
use crate::status::{CellStatus, HostStatus, RunStatus};
use crate::store::{NewRun, Store};
use benchrig_wire::facts::Facts;
use context::RunContext;
use context::Slot;
use std::collections::{HashMap, HashSet};
use std::path::PathBuf;
use std::sync::Arc;
use tokio::sync::{watch, Mutex, Semaphore};

/// What a run runs.
pub enum RunPlan {
    /// A new run of a playbook.
    Playbook(Recipe),
    /// What a stored run lacks, in place (`--resume RUN [--retry-failed]`),
    /// with today's `inventory` instead of the stored one when given.
    Resume { run: String, retry_failed: bool, inventory: Vec<PathBuf> },
}

/// A run: what it runs, and what this invocation gives afresh.
pub struct RunOptions {
    pub plan: RunPlan,
    pub forks: usize,
    pub db: crate::store::DbLocation,
    pub progress: Progress,
    /// How long to wait for hosts another run holds (0: not at all).
    pub wait_for_hosts: std::time::Duration,
    /// How long a lease holds without a heartbeat (`--lease-term`).
    pub lease_term: std::time::Duration,
    /// `-u`, `--private-key`, `-b`, `-K`: defaults under each host's variables.
    pub connection: crate::session::transport::ConnectionDefaults,
    /// A run inside a longer command (a bisect's step), or none.
    pub within: Option<Within>,
}

/// What a longer command that runs runs keeps for its whole length, so
/// that no run takes and gives back either: its hosts' leases (used,
/// neither taken nor released; the run's hosts must all be among them) and
/// Ctrl-C (the run installs no handler of its own: one left behind by an
/// earlier run would catch the signal meant for this one).
pub struct Within {
    pub held: Arc<leases::Held>,
    /// True once the caller is interrupted: the run stops as at a Ctrl-C.
    pub interrupted: watch::Receiver<bool>,
}

pub struct RunResult {
    pub run: i64,
    pub status: RunStatus,
    pub exit_code: i32,
    pub table: String,
}

/// A run checked and ready to take its hosts: new, or planned again from
/// the store.
struct Begun {
    store: Store,
    checked: Checked,
    recipe: Recipe,
    /// The run being resumed.
    resumed: Option<i64>,
    /// Hosts with nothing left (resuming).
    idle: HashSet<String>,
    /// Facts the run stored for its hosts (resuming).
    facts: Vec<(String, Facts)>,
    retry_failed: bool,
}

fn begin(opts: &RunOptions) -> anyhow::Result<Begun> {
    match &opts.plan {
        RunPlan::Playbook(recipe) => {
            let r = recipe;
            let checked = check(&r.playbook, &r.inventory, r.limit.as_deref(), &r.extra_vars, &r.tags)?;
            if checked.hosts.is_empty() {
                anyhow::bail!("no hosts matched (check `hosts:` in the playbook and --limit)");
            }
            let store = Store::open(&opts.db)?;
            let recipe = recipe.clone();
            Ok(Begun {
                store,
                checked,
                recipe,
                resumed: None,
                idle: HashSet::new(),
                facts: vec![],
                retry_failed: false,
            })
        }
        RunPlan::Resume { run, retry_failed, inventory } => {
            let store = Store::open(&opts.db)?;
            let p = resume::prepare(&store, run, inventory, *retry_failed)?;
            let (checked, recipe, idle, facts) = (p.checked, p.recipe, p.idle, p.facts);
            let resumed = Some(p.record.id);
            Ok(Begun { store, checked, recipe, resumed, idle, facts, retry_failed: *retry_failed })
        }
    }
}

pub async fn run(opts: RunOptions) -> anyhow::Result<RunResult> {
    // A second Ctrl-C (alone, not within a longer command) makes the run
    // stop waiting and return, so every destructor runs on the way out:
    // the agents release their mounts as their channels close, and the
    // hosts' leases are released as `Held` drops.
    let (quit_tx, quit) = tokio::sync::oneshot::channel();
    tokio::select! {
        result = run_to_end(opts, quit_tx) => result,
        Ok(()) = quit => Err(exit_code::QuitAtOnce.into()),
    }
}

async fn run_to_end(opts: RunOptions, quit: tokio::sync::oneshot::Sender<()>) -> anyhow::Result<RunResult> {
    let mut begun = begin(&opts)?;
    let store = begun.store.clone();
    begun.checked.connection = opts.connection.clone();
    let checked = begun.checked;
    let builds = AgentBuilds::discover();
    let needs_agent = checked.hosts.keys().any(|h| ConnectionSpec::from_vars(h, &checked.connection_vars(h)).is_ok());
    if needs_agent && builds.all().is_empty() {
        anyhow::bail!(
            "no benchrig-agent builds found (looked for {}); build them with `{}`",
            builds.searched("<triple>"),
            crate::session::deploy::BUILD_COMMAND
        );
    }
    let needed: Vec<String> = checked.hosts.keys().filter(|h| !begun.idle.contains(*h)).cloned().collect();
    if let (Some(run), true) = (begun.resumed, needed.is_empty()) {
        opts.progress.note(format!("run {run}: nothing left to run"));
        return finished_already(&store, run);
    }
    // Before any host is touched: no other run may be measuring on them.
    let held = match opts.within.as_ref().map(|w| &w.held) {
        Some(held) => {
            if let Some(h) = needed.iter().find(|h| !held.hosts.contains(h)) {
                anyhow::bail!("host {h} is not among the hosts this run's caller holds ({})", held.hosts.join(", "));
            }
            held.clone()
        }
        None => {
            let what = begun.resumed.map(|r| format!("run {r}")).unwrap_or_default();
            let runs: Vec<i64> = begun.resumed.into_iter().collect();
            let resuming = begun.resumed.map(|_| leases::Resumed { what: &what, runs: &runs });
            let ask = leases::Ask { hosts: &needed, wait: opts.wait_for_hosts, term: opts.lease_term, resuming };
            Arc::new(leases::hold(&store, &ask, opts.progress).await?)
        }
    };
    let run = match begun.resumed {
        Some(run) => run,
        None => {
            let recipe = &begun.recipe;
            let run = store.create_run(&NewRun {
                name: recipe.name.as_deref(),
                playbook: &recipe.playbook_name(),
                playbook_text: &checked.playbook.text,
                inventory: &checked.inventory.sources.join(", "),
                limit: recipe.limit.as_deref(),
                extra_vars: &serde_json::Value::Object(crate::session::transport::redact(&recipe.extra_vars)),
                options: &recipe.stored_options(),
            })?;
            for h in checked.hosts.keys() {
                store.set_host(run, h, HostStatus::Pending, None)?;
            }
            run
        }
    };
    held.for_run(run)?;
    let who = format!("{} pid {}", held.holder.who, held.holder.pid);
    let attempt = store.begin_attempt(run, &who, &needed)?;
    for (h, why) in &held.quarantined {
        opts.progress.line(h, format!("left out: quarantined: {why}"));
    }
    let playbook = &checked.playbook.path;
    if begun.resumed.is_some() {
        opts.progress.note(format!(
            "run {run}, attempt {attempt}: resuming {playbook} on {} host(s) ({} with nothing left)",
            needed.len(),
            begun.idle.len()
        ));
    } else {
        opts.progress.note(format!("run {run}: {playbook} on {} host(s)", checked.hosts.len()));
    }

    let (cancel_tx, cancel_rx) = watch::channel(false);
    // Inside a longer command, the caller's interrupt, forwarded until the
    // run ends (on every path out of it); alone, the process's Ctrl-C, for
    // as long as the process lasts (a second one quits at once).
    let interrupts = match &opts.within {
        Some(w) => {
            let mut caller = w.interrupted.clone();
            Some(AbortOnDrop(tokio::spawn(async move {
                let interrupted = caller.wait_for(|i| *i).await.is_ok();
                if interrupted {
                    let _ = cancel_tx.send(true);
                } else {
                    // The caller went without a word: the run goes on (a
                    // closed cancel channel would read as cancelled).
                    std::future::pending::<()>().await;
                }
            })))
        }
        None => {
            ctrl_c::listen("the running steps", cancel_tx, quit);
            None
        }
    };
    let progress = opts.progress;

    // Looked up per host: indexes, not a scan of every host for each (the
    // first of each, as a scan finds it).
    let mut aside: HashMap<&str, &String> = HashMap::new();
    for (q, why) in &held.quarantined {
        aside.entry(q.as_str()).or_insert(why);
    }
    let mut stored_facts: HashMap<&str, &Facts> = HashMap::new();
    for (h, f) in &begun.facts {
        stored_facts.entry(h.as_str()).or_insert(f);
    }
    let slots = checked
        .hosts
        .keys()
        .map(|h| {
            let slot = Slot {
                down: aside.get(h.as_str()).map(|why| policy::Down::Quarantined((*why).clone())),
                idle: begun.idle.contains(h),
                stored_facts: stored_facts.get(h.as_str()).map(|f| (*f).clone()),
                ..Slot::default()
            };
            (h.clone(), Mutex::new(slot))
        })
        .collect();
    let ctx = Arc::new(RunContext {
        extra: begun.recipe.extra_vars,
        store: store.clone(),
        run,
        builds,
        progress,
        cancel: cancel_rx.clone(),
        forks: Semaphore::new(opts.forks.max(1)),
        slots,
        halt: Default::default(),
        checked,
        attempt: attempt as u32,
        retry_failed: begun.retry_failed,
        lost_leases: held.lost.clone(),
        closers: Default::default(),
        // Only for the progress line's ETA: a store that cannot say gives none.
        estimates: crate::estimate::Estimates::from_rows(&store.newest_cell_times().unwrap_or_default()),
    });
    // A host whose lease is gone (released by hand, taken over after it
    // lapsed) is not touched again: its session ends now, its step with it.
    let watcher = {
        let (ctx, mut lost) = (ctx.clone(), held.lost.clone());
        AbortOnDrop(tokio::spawn(async move {
            let mut closed = std::collections::BTreeSet::new();
            while lost.changed().await.is_ok() {
                let now = lost.borrow_and_update().clone();
                ctx.close_lost(&now, &mut closed);
            }
        }))
    };

    // Plays run in order, as in Ansible; within a play, hosts in parallel
    // (a role play's cells one after another, each across its hosts).
    let hosts: Vec<String> = ctx.checked.hosts.keys().cloned().collect();
    // Every host connects at once; a plain first play starts on each host as
    // soon as that host is up (`run_plain_play` connects it if it gets there
    // first), so the fast hosts' cells run while the slow ones handshake.
    // Later plays, and role plays, which span hosts, wait for all.
    let mut connecting: Vec<_> = hosts.iter().map(|h| tokio::spawn(slots::connect(ctx.clone(), h.clone()))).collect();
    for (pi, play) in ctx.checked.playbook.plays.iter().enumerate() {
        if pi > 0 || !play.roles.is_empty() {
            for t in connecting.drain(..) {
                let _ = t.await;
            }
        }
        let play_hosts = ctx.checked.hosts_of_play(pi);
        if play.roles.is_empty() {
            plays::run_plain_play_in_batches(&ctx, pi, &play_hosts).await;
        } else {
            plays::run_role_play(&ctx, pi, &play_hosts).await;
        }
    }
    for t in connecting {
        let _ = t.await;
    }
    recovery::recover_lost_hosts(&ctx).await;
    join_all(hosts.iter().map(|h| slots::close(ctx.clone(), h.clone()))).await;

    let (unreachable, failed, not_booted) = slots::tally(&ctx).await?;
    let trouble = policy::Trouble { interrupted: ctx.interrupted(), unreachable, failed, not_booted };
    let (status, code) = policy::run_outcome(trouble);
    store.finish_attempt(run, attempt, status)?;
    store.finish_run(run, status)?;
    drop((watcher, interrupts));
    drop(held);
    Ok(RunResult { run, status, exit_code: code, table: crate::terminal_table::render(&store, run)? })
}

/// A resumed run with nothing left: what its stored cells make it (stored
/// too, for a run killed after its last host closed but before it ended).
fn finished_already(store: &Store, run: i64) -> anyhow::Result<RunResult> {
    let cells = store.cells(run)?;
    let unreachable = cells.iter().any(|c| c.status == CellStatus::Unreachable);
    let failed = cells.iter().any(|c| c.status == CellStatus::Failed);
    let not_booted = cells.iter().any(|c| c.status == CellStatus::NotBooted);
    let (status, exit_code) =
        policy::run_outcome(policy::Trouble { interrupted: false, unreachable, failed, not_booted });
    if store.run_record(run)?.status != status {
        store.finish_run(run, status)?;
    }
    Ok(RunResult { run, status, exit_code, table: crate::terminal_table::render(store, run)? })
}

/// A task that ends when this is dropped.
struct AbortOnDrop(tokio::task::JoinHandle<()>);

impl Drop for AbortOnDrop {
    fn drop(&mut self) {
        self.0.abort();
    }
}

pub(crate) async fn join_all<F: std::future::Future<Output = ()> + Send + 'static>(futures: impl Iterator<Item = F>) {
    let tasks: Vec<_> = futures.map(tokio::spawn).collect();
    for t in tasks {
        let _ = t.await;
    }
}
