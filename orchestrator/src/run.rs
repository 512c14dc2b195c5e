//! `benchrig run`: check everything, then run every host's cells in
//! parallel (bounded by --forks), storing as results arrive, and end with the
//! summary table and an exit code that says what happened.

use crate::deploy::AgentBuilds;
use crate::executor::{CellOutcome, CellRunner};
use crate::exit_code;
use crate::host::{HostError, HostSession};
use crate::inventory::{Inventory, Vars};
use crate::planner::{self, Cell, HostInput};
use crate::playbook::{self, CellOrder, Playbook, TagFilter};
use crate::reporter::Reporter;
use crate::schedule;
use crate::selection;
use crate::status::{CellStatus, HostStatus, RunStatus};
use crate::store::{NewRun, Store};
use crate::template::Templates;
use crate::transport::ConnectionSpec;
use indexmap::IndexMap;
use std::path::PathBuf;
use std::sync::Arc;
use tokio::sync::{watch, Mutex, Semaphore};
use tracing_indicatif::span_ext::IndicatifSpanExt;

/// The run's status word (as stored) and exit code; the most serious wins.
pub fn outcome(interrupted: bool, unreachable: bool, failed: bool) -> (RunStatus, i32) {
    let code = exit_code::most_serious([
        if interrupted { exit_code::INTERRUPTED } else { exit_code::OK },
        if unreachable { exit_code::UNREACHABLE } else { exit_code::OK },
        if failed { exit_code::CELL_FAILED } else { exit_code::OK },
    ]);
    let status = match code {
        exit_code::INTERRUPTED => RunStatus::Interrupted,
        exit_code::UNREACHABLE => RunStatus::Unreachable,
        exit_code::CELL_FAILED => RunStatus::Failed,
        _ => RunStatus::Ok,
    };
    (status, code)
}

pub struct RunOptions {
    pub playbook: PathBuf,
    pub inventory: Vec<PathBuf>,
    pub limit: Option<String>,
    pub tags: TagFilter,
    pub extra_vars: Vars,
    pub forks: usize,
    pub db: crate::store::DbLocation,
    pub name: Option<String>,
    pub reporter: Reporter,
}

pub struct Checked {
    pub playbook: Playbook,
    pub inventory: Inventory,
    /// Host → indexes of the plays it takes part in, in inventory order.
    pub hosts: IndexMap<String, Vec<usize>>,
}

impl Checked {
    /// The hosts of one play, in inventory order.
    pub fn hosts_of_play(&self, play: usize) -> Vec<String> {
        self.hosts.iter().filter(|(_, p)| p.contains(&play)).map(|(h, _)| h.clone()).collect()
    }

    /// The variables a host's connection is made with: its inventory
    /// variables, plus `become` when one of its plays asks for it (the
    /// agent serves every play on the host, so it starts as that user).
    pub fn connection_vars(&self, host: &str) -> Vars {
        let mut vars = self.inventory.host_vars(host);
        let plays = self.hosts.get(host).map(Vec::as_slice).unwrap_or_default();
        if let Some(user) = plays.iter().find_map(|&pi| self.playbook.plays[pi].become_user.as_deref()) {
            // As in Ansible, a host's own `ansible_become` wins over the play keyword.
            vars.entry("ansible_become").or_insert(true.into());
            vars.entry("ansible_become_user").or_insert_with(|| user.into());
        }
        vars
    }
}

/// Everything that can be checked without a host: playbook grammar, host
/// selection, connection variables, scratch devices, and a plan of every
/// host without facts. A template that needs facts waits for them.
pub fn check(
    playbook: &std::path::Path,
    inventory: &[PathBuf],
    limit: Option<&str>,
    extra: &Vars,
    tags: &TagFilter,
) -> anyhow::Result<Checked> {
    let mut pb = playbook::load(playbook)?;
    tags.apply(&mut pb);
    let inv = selection::load_inventory(inventory)?;
    let mut hosts: IndexMap<String, Vec<usize>> = IndexMap::new();
    for (i, play) in pb.plays.iter().enumerate() {
        // A bad pattern is the play's mistake: say where the play is.
        crate::inventory::pattern::select(&inv, &play.hosts).map_err(|e| {
            // The play keeps no location for `hosts`; read it again to point there.
            let root = crate::yaml::parse_str(&pb.path, &pb.text).ok();
            let hosts = root.as_ref().and_then(|r| r.as_seq()?.get(i)?.get("hosts"));
            crate::yaml::ConfigError::at(hosts.map_or(&play.loc, |n| &n.loc), format!("play `{}`: {e}", play.name))
        })?;
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
        planner::scratch_devices(h, &vars).map_err(anyhow::Error::msg)?;
        for &pi in plays.iter().filter(|&&pi| pb.plays[pi].roles.is_empty()) {
            let input = HostInput { inventory: &inv, host: h, extra_vars: extra, facts: None };
            if let Err(e) = planner::plan_play(&pb.plays[pi], pi, &input, &t) {
                if !needs_facts(&e.message) {
                    return Err(e.into());
                }
            }
        }
    }
    let checked = Checked { playbook: pb, inventory: inv, hosts };
    for h in checked.hosts.keys() {
        ConnectionSpec::from_vars(h, &checked.connection_vars(h)).map_err(anyhow::Error::msg)?;
    }
    for (pi, play) in checked.playbook.plays.iter().enumerate().filter(|(_, p)| !p.roles.is_empty()) {
        let hosts = checked.hosts_of_play(pi);
        if let Err(e) = planner::plan_role_play(play, pi, &checked.inventory, &hosts, extra, &[], &t) {
            if !needs_facts(&e.message) {
                return Err(e.into());
            }
        }
    }
    Ok(checked)
}

/// A template error that only says "facts are not known yet": the template
/// uses `facts` (as a word: `facts_size` is a typo, not that).
pub fn needs_facts(message: &str) -> bool {
    message.contains("undefined") && regex::Regex::new(r"\bfacts\b").expect("static regex").is_match(message)
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
    /// Every host's session, in inventory order (the order role plays lock them).
    slots: IndexMap<String, Mutex<Slot>>,
    /// Why the playbook stopped early (`any_errors_fatal`, `max_fail_percentage`).
    halt: std::sync::Mutex<Option<String>>,
}

/// One host across the whole run.
#[derive(Default)]
struct Slot {
    session: Option<HostSession>,
    /// Why the host is out of the run, once it is; `unreachable` says which kind.
    down: Option<String>,
    unreachable: bool,
    /// Some cell or play failed on it.
    failed: bool,
}

impl Shared {
    fn interrupted(&self) -> bool {
        *self.cancel.borrow()
    }

    fn halted(&self) -> Option<String> {
        self.halt.lock().unwrap_or_else(|e| e.into_inner()).clone()
    }

    /// Stop the playbook after the cells running now; the first reason stays.
    fn halt(&self, why: String) {
        let mut h = self.halt.lock().unwrap_or_else(|e| e.into_inner());
        if h.is_none() {
            self.reporter.note(format!("stopping: {why}"));
            *h = Some(why);
        }
    }
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
        store.set_host(run, h, HostStatus::Pending, None)?;
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
                std::process::exit(exit_code::INTERRUPTED);
            }
        }
    });

    let slots = checked.hosts.keys().map(|h| (h.clone(), Mutex::new(Slot::default()))).collect();
    let sh = Arc::new(Shared {
        extra: opts.extra_vars.clone(),
        store: store.clone(),
        run,
        builds,
        reporter,
        cancel: cancel_rx.clone(),
        forks: Semaphore::new(opts.forks.max(1)),
        slots,
        halt: Default::default(),
        checked,
    });

    // Plays run in order, as in Ansible; within a play, hosts in parallel
    // (a role play's cells one after another, each across its hosts).
    let hosts: Vec<String> = sh.checked.hosts.keys().cloned().collect();
    join_all(hosts.iter().map(|h| connect(h.clone(), sh.clone()))).await;
    for (pi, play) in sh.checked.playbook.plays.iter().enumerate() {
        let play_hosts = sh.checked.hosts_of_play(pi);
        if play.roles.is_empty() {
            run_plain_play_in_batches(pi, &play_hosts, &sh).await;
        } else {
            run_role_play(pi, &play_hosts, &sh).await;
        }
    }
    join_all(hosts.iter().map(|h| close(h.clone(), sh.clone()))).await;

    let interrupted = sh.interrupted();
    let mut unreachable = false;
    let mut failed = false;
    for slot in sh.slots.values() {
        let slot = slot.lock().await;
        unreachable |= slot.down.is_some() && slot.unreachable;
        failed |= slot.failed || slot.down.is_some();
    }
    failed |= store.cells(run)?.iter().any(|c| c.status == CellStatus::Failed);
    let (status, code) = outcome(interrupted, unreachable, failed);
    store.finish_run(run, status)?;
    Ok(RunResult { run, status, exit_code: code, table: crate::summary::render(&store, run)? })
}

async fn join_all<F: std::future::Future<Output = ()> + Send + 'static>(futures: impl Iterator<Item = F>) {
    let tasks: Vec<_> = futures.map(tokio::spawn).collect();
    for t in tasks {
        let _ = t.await;
    }
}

/// Open a host's session (at most --forks at once); a host that cannot be
/// reached is recorded and left out of every play.
async fn connect(host: String, sh: Arc<Shared>) {
    let _permit = sh.forks.acquire().await;
    let mut slot = sh.slots[&host].lock().await;
    if sh.interrupted() {
        slot.down = Some("interrupted".into());
        let _ = sh.store.set_host(sh.run, &host, HostStatus::Skipped, Some("interrupted"));
        return;
    }
    let _ = sh.store.set_host(sh.run, &host, HostStatus::Running, None);
    let vars = sh.checked.connection_vars(&host);
    match HostSession::open(&host, &vars, &sh.builds).await {
        Ok(s) => {
            sh.reporter.line(
                &host,
                format!(
                    "{} · {} · kernel {} · agent {} ({:.1} s)",
                    s.describe(),
                    s.facts.arch,
                    s.facts.kernel.release,
                    if s.deployed.uploaded { "uploaded" } else { "already there" },
                    s.startup.as_secs_f64()
                ),
            );
            let _ = sh.store.set_host_facts(Some(sh.run), &host, &s.facts);
            slot.session = Some(s);
        }
        Err(e) => {
            sh.reporter.line(&host, e.to_string());
            slot.unreachable = matches!(e, HostError::Unreachable(_));
            slot.down = Some(e.to_string());
        }
    }
}

/// A play without roles: its hosts in `serial` batches (all at once by
/// default), each batch in parallel; after a batch, `max_fail_percentage`
/// may stop the playbook. Hosts left out by a stop have their cells
/// recorded as skipped, with the reason.
async fn run_plain_play_in_batches(pi: usize, hosts: &[String], sh: &Arc<Shared>) {
    let play = &sh.checked.playbook.plays[pi];
    let seed = play_seed(play, sh);
    for batch in schedule::batches(hosts, &play.serial) {
        if let Some(why) = sh.halted() {
            for h in &batch {
                record_cells(h, pi, &*sh.slots[h].lock().await, sh, CellStatus::Skipped, &why);
            }
            continue;
        }
        let tasks: Vec<_> =
            batch.iter().map(|h| tokio::spawn(run_plain_play(pi, h.clone(), sh.clone(), seed))).collect();
        let mut failed = 0;
        for t in tasks {
            failed += usize::from(t.await.unwrap_or(true));
        }
        if let Some(max) = play.max_fail_percentage {
            let pct = failed as f64 * 100.0 / batch.len() as f64;
            if pct > max {
                sh.halt(format!(
                    "play `{}`: {failed} of {} host(s) in the batch failed ({pct:.0}%), over max_fail_percentage {max}%",
                    play.name,
                    batch.len()
                ));
            }
        }
    }
}

/// The seed of a play's shuffle: the playbook's, or one picked now and
/// reported so the order can be replayed.
fn play_seed(play: &playbook::Play, sh: &Shared) -> u64 {
    match play.cell_order {
        CellOrder::Shuffled(Some(seed)) => seed,
        CellOrder::Shuffled(None) => {
            let now = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap_or_default();
            let seed = now.as_nanos() as u64;
            sh.reporter
                .note(format!("play `{}`: cells shuffled with seed {seed} (`seed: {seed}` replays it)", play.name));
            seed
        }
        _ => 0,
    }
}

/// A play without roles on one host: plan with its facts, run its cells
/// in the play's `cell_order`. True when a cell failed here.
async fn run_plain_play(pi: usize, host: String, sh: Arc<Shared>, seed: u64) -> bool {
    let _permit = sh.forks.acquire().await;
    let mut guard = sh.slots[&host].lock().await;
    let slot = &mut *guard;
    let play = &sh.checked.playbook.plays[pi];
    let t = Templates::new();
    let facts = slot.session.as_ref().map(|s| &s.facts);
    let input = HostInput { inventory: &sh.checked.inventory, host: &host, extra_vars: &sh.extra, facts };
    let cells = match planner::plan_play(play, pi, &input, &t) {
        Ok(c) => c,
        Err(e) => {
            sh.reporter.line(&host, format!("play `{}` cannot be planned: {e}", play.name));
            slot.failed = true;
            return true;
        }
    };
    let total = cells.len();
    if total == 0 {
        sh.reporter.line(&host, format!("play `{}`: no cells on this host (an axis is empty here)", play.name));
    }
    let mut failed_here = false;
    let (mut book, visits) = CellBook::new(&cells, play.cell_order, seed);
    let bar = crate::reporter::host_bar(&host, &play.name, visits.len());
    for visit in visits {
        bar.pb_inc(1);
        let (n, cell) = (visit.cell, &cells[visit.cell]);
        bar.pb_set_message(&cell.describe());
        let Some((cell_id, first)) = book.open(&sh, n, cell) else { continue };
        let down = slot.down.as_ref().map(|d| format!("host {host} unreachable: {d}"));
        if let Some(why) = skip_reason(&sh, cell, down) {
            let _ = sh.store.set_cell_status(cell_id, why.0, Some(&why.1));
            if why.0 == CellStatus::Unsupported {
                sh.reporter.line(&host, format!("cell {}/{total} {}: unsupported: {}", n + 1, cell.describe(), why.1));
            }
            book.end(n);
            continue;
        }
        sh.reporter
            .line(&host, format!("cell {}/{total} {}{}", n + 1, cell.describe(), CellBook::visit_note(&visit, cell)));
        let (outcome, ended) = {
            let session = slot.session.as_ref().expect("checked by skip_reason");
            let runner = CellRunner {
                agents: vec![(host.as_str(), &session.agent)],
                store: &sh.store,
                reporter: sh.reporter,
                cancel: sh.cancel.clone(),
            };
            runner.run_visit(cell, cell_id, first, visit.reps.clone()).await
        };
        if ended {
            book.end(n);
        }
        failed_here |= outcome.is_failure();
        settle(&sh, outcome, &mut [(&host, slot)]).await;
        if failed_here && play.any_errors_fatal {
            sh.halt(format!("play `{}` has any_errors_fatal and a cell failed on {host}", play.name));
        }
    }
    book.skip_unended(&sh, &cells);
    if book.unstored {
        (slot.failed, failed_here) = (true, true);
    }
    failed_here
}

/// Where each cell of a play stands while its visits run: stored yet (and
/// its id), ended yet.
struct CellBook {
    /// Stored with every cell: its play's order (and the shuffle's seed).
    schedule: serde_json::Map<String, serde_json::Value>,
    ids: Vec<Option<i64>>,
    ended: Vec<bool>,
    /// A cell could not be stored (so did not run).
    unstored: bool,
}

impl CellBook {
    /// The book for a host's (or a role play's) cells, and the visits to run them in.
    fn new(cells: &[Cell], order: CellOrder, seed: u64) -> (Self, Vec<schedule::Visit>) {
        let repeats: Vec<u32> = cells.iter().map(|c| c.repeat).collect();
        let visits = schedule::visits(&repeats, order, seed);
        let n = cells.len();
        let schedule = match order {
            CellOrder::Sequential => serde_json::json!({"cell_order": "sequential"}),
            CellOrder::Interleaved => serde_json::json!({"cell_order": "interleaved"}),
            CellOrder::Shuffled(_) => serde_json::json!({"cell_order": "shuffled", "seed": seed}),
        };
        let schedule = schedule.as_object().cloned().unwrap_or_default();
        (CellBook { schedule, ids: vec![None; n], ended: vec![false; n], unstored: false }, visits)
    }

    /// Cell `n`'s id and whether this is its first visit; `None` when it
    /// has ended (or cannot be stored, which ends it).
    fn open(&mut self, sh: &Shared, n: usize, cell: &Cell) -> Option<(i64, bool)> {
        if self.ended[n] {
            return None;
        }
        if let Some(id) = self.ids[n] {
            return Some((id, false));
        }
        let Some(id) = store_cell(sh, cell) else {
            (self.ended[n], self.unstored) = (true, true);
            return None;
        };
        self.ids[n] = Some(id);
        let _ = sh.store.add_cell_info(id, "schedule", &self.schedule);
        Some((id, true))
    }

    fn end(&mut self, n: usize) {
        self.ended[n] = true;
    }

    /// " (rep 2/3)" when the cell's repetitions are spread over visits.
    fn visit_note(visit: &schedule::Visit, cell: &Cell) -> String {
        if visit.reps.clone().count() as u32 == cell.repeat {
            String::new()
        } else {
            format!(" (rep {}/{})", visit.reps.start(), cell.repeat)
        }
    }

    /// What a stop (or an interrupt) left unrun is recorded as skipped.
    fn skip_unended(&self, sh: &Shared, cells: &[Cell]) {
        let why = sh.halted().unwrap_or_else(|| "interrupted".into());
        for (n, cell) in cells.iter().enumerate().filter(|(n, _)| !self.ended[*n]) {
            if let Some(id) = self.ids[n].or_else(|| store_cell(sh, cell)) {
                let _ = sh.store.set_cell_status(id, CellStatus::Skipped, Some(&why));
            }
        }
    }
}

/// A play with roles: every cell spans the hosts of one assignment; each
/// step goes to its role's host. Cells run one after another.
async fn run_role_play(pi: usize, hosts: &[String], sh: &Arc<Shared>) {
    let play = &sh.checked.playbook.plays[pi];
    // Locked in inventory order (the only order anything locks several in).
    let mut guards = Vec::new();
    for h in hosts {
        guards.push((h.clone(), sh.slots[h].lock().await));
    }
    let facts: Vec<(&str, &benchrig_wire::facts::Facts)> =
        guards.iter().filter_map(|(h, g)| Some((h.as_str(), &g.session.as_ref()?.facts))).collect();
    let t = Templates::new();
    let planned = planner::plan_role_play(play, pi, &sh.checked.inventory, hosts, &sh.extra, &facts, &t);
    drop(facts);
    let cells = match planned {
        Ok(c) => c,
        Err(e) => {
            sh.reporter.note(format!("play `{}` cannot be planned: {e}", play.name));
            for (_, g) in guards.iter_mut() {
                g.failed = true;
            }
            return;
        }
    };
    let total = cells.len();
    let (mut book, visits) = CellBook::new(&cells, play.cell_order, play_seed(play, sh));
    for visit in visits {
        let (n, cell) = (visit.cell, &cells[visit.cell]);
        let Some((cell_id, first)) = book.open(sh, n, cell) else { continue };
        // This cell's hosts, in the order of their first step.
        let mut mine: Vec<&str> = Vec::new();
        for s in cell.setup.iter().chain(&cell.before_each).chain(&cell.benchmark).chain(&cell.teardown) {
            if !mine.contains(&s.host.as_str()) {
                mine.push(&s.host);
            }
        }
        let mut involved: Vec<(&String, &mut Slot)> =
            guards.iter_mut().filter(|(h, _)| mine.contains(&h.as_str())).map(|(h, g)| (&*h, &mut **g)).collect();
        let down = involved.iter().find_map(|(h, s)| s.down.as_ref().map(|d| format!("host {h} unreachable: {d}")));
        if let Some((status, why)) = skip_reason(sh, cell, down) {
            let _ = sh.store.set_cell_status(cell_id, status, Some(&why));
            book.end(n);
            continue;
        }
        sh.reporter.line(
            &cell.host,
            format!("cell {}/{total} {}{}", n + 1, cell.describe(), CellBook::visit_note(&visit, cell)),
        );
        let (outcome, ended) = {
            let agents: Vec<(&str, &crate::agent_client::AgentClient)> =
                involved.iter().map(|(h, s)| (h.as_str(), &s.session.as_ref().expect("not down").agent)).collect();
            let runner = CellRunner { agents, store: &sh.store, reporter: sh.reporter, cancel: sh.cancel.clone() };
            runner.run_visit(cell, cell_id, first, visit.reps.clone()).await
        };
        if ended {
            book.end(n);
        }
        if play.any_errors_fatal && outcome.is_failure() {
            sh.halt(format!("play `{}` has any_errors_fatal and cell {} failed", play.name, cell.describe()));
        }
        let mut pairs: Vec<(&str, &mut Slot)> = involved.iter_mut().map(|(h, s)| (h.as_str(), &mut **s)).collect();
        settle(sh, outcome, &mut pairs).await;
    }
    book.skip_unended(sh, &cells);
}

fn store_cell(sh: &Shared, cell: &Cell) -> Option<i64> {
    match sh.store.add_cell(sh.run, cell) {
        Ok(id) => Some(id),
        Err(e) => {
            sh.reporter.line(&cell.host, format!("cannot store cell: {e}"));
            None
        }
    }
}

/// Why a cell is not run (on): one of its hosts is down, the run was
/// interrupted or stopped, or the host visibly cannot make it.
fn skip_reason(sh: &Shared, cell: &Cell, down: Option<String>) -> Option<(CellStatus, String)> {
    if let Some(d) = down {
        return Some((CellStatus::Failed, d));
    }
    if sh.interrupted() {
        return Some((CellStatus::Skipped, "interrupted".into()));
    }
    if let Some(why) = sh.halted() {
        return Some((CellStatus::Skipped, why));
    }
    cell.unsupported.clone().map(|u| (CellStatus::Unsupported, u))
}

/// After a cell: note a failure, and reconnect once to a host that was
/// lost (its new agent cleans up what the old one left).
async fn settle(sh: &Shared, outcome: CellOutcome, slots: &mut [(&str, &mut Slot)]) {
    match outcome {
        CellOutcome::Ok | CellOutcome::Skipped(_) => {}
        CellOutcome::Unsupported(why) => {
            if let Some((h, _)) = slots.first() {
                sh.reporter.line(h, format!("  unsupported: {why}"));
            }
        }
        CellOutcome::Failed(why) => {
            for (h, s) in slots.iter_mut() {
                s.failed = true;
                sh.reporter.line(h, format!("  failed: {why}"));
            }
        }
        CellOutcome::HostLost { host, reason } => {
            let Some((_, slot)) = slots.iter_mut().find(|(h, _)| *h == host) else { return };
            slot.failed = true;
            if sh.interrupted() {
                slot.down = Some(reason);
                slot.unreachable = true;
                return;
            }
            sh.reporter.line(&host, format!("  lost the host: {reason}; reconnecting once"));
            let vars = sh.checked.connection_vars(&host);
            match HostSession::open(&host, &vars, &sh.builds).await {
                Ok(fresh) => {
                    if let Some(old) = slot.session.replace(fresh) {
                        old.abandon().await;
                    }
                    let session = slot.session.as_ref().expect("just set");
                    match session.cleanup().await {
                        Ok(done) => sh.reporter.line(&host, format!("  reconnected; cleaned up {done}")),
                        Err(e) => sh.reporter.line(&host, format!("  reconnected; cleanup failed: {e}")),
                    }
                }
                Err(e) => {
                    sh.reporter.line(&host, format!("  unreachable: {e}"));
                    slot.down = Some(reason);
                    slot.unreachable = true;
                    if let Some(old) = slot.session.take() {
                        old.abandon().await;
                    }
                }
            }
        }
    }
}

/// End a host's part: its agent releases what it set up; record how it went.
async fn close(host: String, sh: Arc<Shared>) {
    let mut slot = sh.slots[&host].lock().await;
    if let Some(session) = slot.session.take() {
        if let Err(e) = session.close().await {
            sh.reporter.line(&host, format!("closing the session: {e}"));
        }
    }
    let (status, reason) = match (&slot.down, slot.unreachable) {
        (Some(d), true) => (HostStatus::Unreachable, Some(d.clone())),
        (Some(d), false) => (HostStatus::Failed, Some(d.clone())),
        (None, _) if sh.interrupted() => (HostStatus::Interrupted, None),
        (None, _) if slot.failed => (HostStatus::Failed, None),
        _ => (HostStatus::Ok, None),
    };
    // A host interrupted before it connected keeps its "skipped".
    if slot.down.as_deref() != Some("interrupted") {
        let _ = sh.store.set_host(sh.run, &host, status, reason.as_deref());
    }
    // Cells it never ran (it was down from the start) are recorded as failed.
    if slot.down.is_some() && slot.session.is_none() {
        record_unrun_cells(&host, &slot, &sh);
    }
}

/// A host that never got going: its cells (planned without facts) are
/// recorded as failed, so reports and `--resume` know they are missing.
fn record_unrun_cells(host: &str, slot: &Slot, sh: &Shared) {
    let Some(reason) = &slot.down else { return };
    let existing = sh.store.cells(sh.run).unwrap_or_default();
    if existing.iter().any(|c| c.host == host) {
        return;
    }
    for &pi in &sh.checked.hosts[host] {
        record_cells(host, pi, slot, sh, CellStatus::Failed, &format!("host {host} unreachable: {reason}"));
    }
}

/// Store the cells a host would have run in a play, with a status and why
/// they did not run (planned with the host's facts when it has a session).
fn record_cells(host: &str, pi: usize, slot: &Slot, sh: &Shared, status: CellStatus, reason: &str) {
    let play = &sh.checked.playbook.plays[pi];
    if !play.roles.is_empty() {
        return; // a role cell is recorded on the host that measures it
    }
    let facts = slot.session.as_ref().map(|s| &s.facts);
    let input = HostInput { inventory: &sh.checked.inventory, host, extra_vars: &sh.extra, facts };
    for cell in planner::plan_play(play, pi, &input, &Templates::new()).unwrap_or_default() {
        if let Ok(id) = sh.store.add_cell(sh.run, &cell) {
            let _ = sh.store.set_cell_status(id, status, Some(reason));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_play_that_becomes_makes_its_hosts_agents_become_unless_the_host_says_otherwise() {
        let dir = tempfile::tempdir().unwrap();
        let inv = dir.path().join("inv.yml");
        std::fs::write(
            &inv,
            "all:\n  hosts:\n    a: {ansible_connection: local}\n    b: {ansible_connection: local, ansible_become: false}\n    c: {ansible_connection: local}\n",
        )
        .unwrap();
        let pb = dir.path().join("pb.yml");
        std::fs::write(
            &pb,
            "- hosts: a:b\n  become: true\n  benchmark: [{noop: }]\n- hosts: c\n  benchmark: [{noop: }]\n",
        )
        .unwrap();
        let checked = check(&pb, &[inv], None, &Vars::new(), &TagFilter::default()).unwrap();
        let a = checked.connection_vars("a");
        assert_eq!((a["ansible_become"].clone(), a["ansible_become_user"].clone()), (true.into(), "root".into()));
        assert_eq!(checked.connection_vars("b")["ansible_become"], false, "the host's own variable wins");
        assert!(!checked.connection_vars("c").contains_key("ansible_become"));
    }
}
