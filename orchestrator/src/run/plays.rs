//! The play loops, as Ansible runs plays: a plain play on its hosts in
//! parallel (in `serial` batches when asked), each host's cells in the
//! play's `cell_order`; a role play cell by cell, each across the hosts of
//! one assignment of hosts to roles.

use super::cells::{any_to_run, note_these, record_cells, record_these, CellBook, Opened};
use super::context::RunContext;
use super::context::Slot;
use super::executor::CellRunner;
use super::kernel::{self, Booter, Entered};
use super::policy::{self, Down};
use super::schedule;
use super::shared::Member;
use super::slots::settle;
use crate::plan::{self, HostInput};
use crate::playbook::kernel::KernelSpec;
use crate::playbook::{self, CellOrder};
use crate::session::agent_client::AgentClient;
use crate::status::CellStatus;
use std::sync::Arc;
use tracing_indicatif::span_ext::IndicatifSpanExt;

/// A play without roles: its hosts in `serial` batches (all at once by
/// default), each batch in parallel; after a batch, `max_fail_percentage`
/// may stop the playbook. Hosts left out by a stop have their cells
/// recorded as skipped, with the reason.
pub async fn run_plain_play_in_batches(ctx: &Arc<RunContext>, pi: usize, hosts: &[String]) {
    let play = &ctx.checked.playbook.plays[pi];
    let seed = play_seed(ctx, play);
    for batch in schedule::batches(hosts, &play.serial) {
        if let Some(halted) = ctx.halted() {
            let (status, why) = policy::left_unrun(Some(halted));
            for h in &batch {
                record_cells(ctx, h, pi, &*ctx.slots[h].lock().await, status, &why);
            }
            continue;
        }
        let tasks: Vec<_> =
            batch.iter().map(|h| tokio::spawn(run_plain_play(ctx.clone(), pi, h.clone(), seed))).collect();
        let mut failed = 0;
        for t in tasks {
            failed += usize::from(t.await.unwrap_or(true));
        }
        if let Some(why) = policy::max_fail_stop(&play.name, failed, batch.len(), play.max_fail_percentage) {
            ctx.halt(why);
        }
    }
}

/// The seed of a play's shuffle: the playbook's, or one picked now and
/// reported so the order can be replayed.
pub(super) fn play_seed(ctx: &RunContext, play: &playbook::Play) -> u64 {
    match play.cell_order {
        CellOrder::Shuffled(Some(seed)) => seed,
        CellOrder::Shuffled(None) => {
            let now = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap_or_default();
            let seed = now.as_nanos() as u64;
            ctx.progress
                .note(format!("play `{}`: cells shuffled with seed {seed} (`seed: {seed}` replays it)", play.name));
            seed
        }
        _ => 0,
    }
}

/// A play without roles on one host: plan with its facts, run its cells
/// in the play's `cell_order`. True when a cell failed here.
pub(super) async fn run_plain_play(ctx: Arc<RunContext>, pi: usize, host: String, seed: u64) -> bool {
    let _permit = ctx.forks.acquire().await;
    let mut guard = ctx.slots[&host].lock().await;
    let slot = &mut *guard;
    super::slots::connect_slot(&ctx, &host, slot).await;
    if matches!(slot.down, Some(Down::Quarantined(_))) || slot.idle {
        return false; // quarantined: its cells are stored as skipped when it is closed
    }
    let play = &ctx.checked.playbook.plays[pi];
    let t = &ctx.checked.templates;
    let facts = slot.session.as_ref().map(|s| &s.facts);
    let input = HostInput { inventory: &ctx.checked.inventory, host: &host, extra_vars: &ctx.extra, facts };
    let cells = match plan::plan_play(play, pi, &input, t) {
        Ok(c) => c,
        Err(e) => {
            ctx.progress.line(&host, format!("play `{}` cannot be planned: {e}", play.name));
            slot.failed = true;
            return true;
        }
    };
    if cells.is_empty() {
        ctx.progress.line(&host, format!("play `{}`: no cells on this host (an axis is empty here)", play.name));
    }
    let mut failed_here = false;
    for (kernel, group) in by_kernel(cells) {
        failed_here |= match kernel {
            None => run_cells(&ctx, pi, &host, slot, &group, seed).await,
            Some(spec) => run_under_kernel(&ctx, pi, &host, slot, &group, seed, &spec).await,
        };
    }
    failed_here
}

/// A host's cells grouped by the kernel they run under, in the order each
/// kernel first comes: one boot per kernel.
fn by_kernel(cells: Vec<plan::Cell>) -> Vec<(Option<KernelSpec>, Vec<plan::Cell>)> {
    let mut groups: Vec<(Option<KernelSpec>, Vec<plan::Cell>)> = Vec::new();
    for cell in cells {
        match groups.iter_mut().find(|(k, _)| *k == cell.kernel) {
            Some((_, g)) => g.push(cell),
            None => groups.push((cell.kernel.clone(), vec![cell])),
        }
    }
    groups
}

/// Cells under a play's kernel: boot it (`Booter::enter`), run them, come
/// back (`Booter::leave`). What did not boot, or cannot, is stored so.
async fn run_under_kernel(
    ctx: &Arc<RunContext>,
    pi: usize,
    host: &str,
    slot: &mut Slot,
    cells: &[plan::Cell],
    seed: u64,
    spec: &KernelSpec,
) -> bool {
    if !any_to_run(ctx, cells) || slot.down.is_some() || slot.session.is_none() || ctx.interrupted() {
        // Nothing to boot for: what is left is stored as the loop stores it.
        return run_cells(ctx, pi, host, slot, cells, seed).await;
    }
    ctx.progress.line(host, format!("kernel {}", spec.describe()));
    let lost = |why: String| format!("its kernel {}: {why}", spec.name());
    let mut booter = match Booter::in_run(ctx, host) {
        Ok(b) => b,
        Err(why) => {
            record_these(ctx, cells, CellStatus::Failed, &why, None);
            slot.failed = true;
            return true;
        }
    };
    let entered = booter.enter(&mut slot.session, spec).await;
    let failed = match entered {
        Entered::Up(booted) => {
            // Interrupted meanwhile: the cells are skipped, and the host still comes back.
            let failed = run_cells(ctx, pi, host, slot, cells, seed).await;
            note_these(ctx, cells, "kernel", &booted.info());
            if let Err(why) = booter.leave(&mut slot.session, &booted).await {
                ctx.progress.line(host, format!("  not back on its own kernel: {why}"));
                set_aside(ctx, host, slot, lost(why));
            }
            failed
        }
        Entered::Unsupported(why) => {
            ctx.progress.line(host, format!("  unsupported: {why}"));
            record_these(ctx, cells, CellStatus::Unsupported, &why, None);
            false
        }
        Entered::NotBooted { why, console } => {
            let reason = match kernel::panic_line(&console) {
                Some(p) => format!("the kernel did not boot: {why} (console: {p})"),
                None => format!("the kernel did not boot: {why}"),
            };
            ctx.progress.line(host, format!("  {reason}"));
            let info = kernel::console_info(&why, &console);
            record_these(ctx, cells, CellStatus::NotBooted, &reason, Some(("kernel", &info)));
            false
        }
        Entered::Failed(why) => {
            ctx.progress.line(host, format!("  failed: {why}"));
            record_these(ctx, cells, CellStatus::Failed, &why, None);
            slot.failed = true;
            true
        }
        Entered::Lost(why) => {
            ctx.progress.line(host, format!("  lost: {why}"));
            set_aside(ctx, host, slot, lost(why));
            false
        }
    };
    if slot.session.is_none() {
        // Lost on the way: it is still planned with the facts it had.
        slot.stored_facts = booter.facts.take().or(slot.stored_facts.take());
    }
    failed
}

/// A host that is not back on its own kernel: down, and set aside so that
/// no run takes it until a person looks; but for an interrupted run, whose
/// host's record `--resume` or `cleanup` brings back.
fn set_aside(ctx: &RunContext, host: &str, slot: &mut Slot, why: String) {
    if !ctx.interrupted() {
        let aside = format!("not back on its own kernel after a kernel test: {why}");
        if let Err(e) = ctx.store.quarantine(host, Some(&aside)) {
            ctx.progress.line(host, format!("  could not quarantine it: {e}"));
        }
    }
    slot.down = Some(Down::Unreachable(why));
}

/// Run a host's cells of a play in the play's `cell_order`; true when one failed.
async fn run_cells(
    ctx: &Arc<RunContext>,
    pi: usize,
    host: &str,
    slot: &mut Slot,
    cells: &[plan::Cell],
    seed: u64,
) -> bool {
    let play = &ctx.checked.playbook.plays[pi];
    let host = host.to_string();
    let total = cells.len();
    let mut failed_here = false;
    let (mut book, groups) = CellBook::new(cells, play.cell_order, seed);
    if let Some(s) = &slot.session {
        // The last mark of the start-up timeline (`-vv`): from the start of
        // the host's connection to its play's first cell.
        tracing::debug!(host = %host, "play `{}`: first cell {:.0} ms after the connection began", play.name, s.timeline.elapsed().as_secs_f64() * 1e3);
    }
    let bar = crate::progress::host_bar(&host, &play.name, groups.iter().map(Vec::len).sum());
    let visits: Vec<_> = groups.iter().flatten().map(|v| (v.cell, v.reps.clone())).collect();
    let per_rep: Vec<_> = cells.iter().map(|c| ctx.estimates.cell(&host, &play.name, &c.key, 1)).collect();
    let left = crate::estimate::left_at(&visits, &per_rep);
    for group in groups {
        // The visits of this group that still run (one, or with `fresh:
        // round` every cell of a round with this setup).
        let mut members: Vec<(usize, Opened)> = Vec::new();
        for visit in &group {
            bar.pb_inc(1);
            let cell = &cells[visit.cell];
            bar.pb_set_message(&cell.describe());
            if let Some(opened) = book.open(ctx, visit, cell) {
                members.push((visit.cell, opened));
            }
        }
        // A shared setup may hand back the visits after a failure: they run
        // on a new setup (or are skipped, if the host is gone or a stop came).
        while !members.is_empty() {
            let mut runnable = skip_what_cannot_run(ctx, &host, slot, cells, &mut book, members);
            if runnable.is_empty() {
                break;
            }
            let line = |n: usize, o: &Opened| {
                let cell = &cells[n];
                let eta = left.get(&(n, *o.reps.start())).map(|l| l.suffix()).unwrap_or_default();
                format!("cell {}/{total} {}{}{eta}", n + 1, cell.describe(), CellBook::visit_note(&o.reps, cell))
            };
            let results = {
                let session = slot.session.as_ref().expect("checked by skip_reason");
                let runner = CellRunner {
                    agents: vec![(host.as_str(), &session.agent)],
                    store: &ctx.store,
                    progress: ctx.progress,
                    cancel: ctx.cancel.clone(),
                    attempt: ctx.attempt,
                };
                if let [(n, opened)] = runnable.as_slice() {
                    ctx.progress.line(&host, line(*n, opened));
                    vec![runner.run_visit(&cells[*n], opened.id, opened.first, opened.reps.clone()).await]
                } else {
                    let shared: Vec<Member> = runnable
                        .iter()
                        .map(|(n, o)| Member {
                            cell: &cells[*n],
                            id: o.id,
                            first: o.first,
                            reps: o.reps.clone(),
                            line: line(*n, o),
                        })
                        .collect();
                    runner.run_shared(&shared).await
                }
            };
            let ran = results.len();
            for ((n, _), (outcome, ended)) in runnable.iter().zip(results) {
                if ended {
                    book.end(*n);
                }
                failed_here |= outcome.is_failure();
                settle(ctx, outcome, &mut [(&host, slot)]).await;
                let failure = failed_here.then(|| format!("a cell failed on {host}"));
                if let Some(why) = policy::fatal_stop(&play.name, play.any_errors_fatal, failure) {
                    ctx.halt(why);
                }
            }
            // Handed back: not started, so their next run is still their first.
            members = runnable.split_off(ran);
        }
    }
    book.skip_unended(ctx, cells);
    if book.unstored || book.differs {
        (slot.failed, failed_here) = (true, true);
    }
    failed_here
}

/// The visits of `members` that can run now; the others (the host down, an
/// interrupt, a stop, a cell unsupported here) are stored with why and end.
fn skip_what_cannot_run(
    ctx: &RunContext,
    host: &str,
    slot: &Slot,
    cells: &[plan::Cell],
    book: &mut CellBook,
    members: Vec<(usize, Opened)>,
) -> Vec<(usize, Opened)> {
    let mut runnable = Vec::new();
    for (n, opened) in members {
        let cell = &cells[n];
        let down = slot.down.as_ref().map(|d| (host, d));
        match policy::skip_reason(down, ctx.interrupted(), ctx.halted(), cell.unsupported.as_deref()) {
            Some((status, why)) => {
                let _ = ctx.store.set_cell_status(opened.id, status, Some(&why));
                if status == CellStatus::Unsupported {
                    let total = cells.len();
                    ctx.progress.line(host, format!("cell {}/{total} {}: unsupported: {why}", n + 1, cell.describe()));
                }
                book.end(n);
            }
            None => runnable.push((n, opened)),
        }
    }
    runnable
}

/// A play with roles: every cell spans the hosts of one assignment; each
/// step goes to its role's host. Cells run one after another.
pub async fn run_role_play(ctx: &Arc<RunContext>, pi: usize, hosts: &[String]) {
    let play = &ctx.checked.playbook.plays[pi];
    // Locked in inventory order (the only order anything locks several in).
    let mut guards = Vec::new();
    for h in hosts {
        guards.push((h.clone(), ctx.slots[h].lock().await));
    }
    let facts: Vec<(&str, &benchrig_wire::facts::Facts)> =
        guards.iter().filter_map(|(h, g)| Some((h.as_str(), g.facts()?))).collect();
    let t = &ctx.checked.templates;
    let planned = plan::plan_role_play(play, pi, &ctx.checked.inventory, hosts, &ctx.extra, &facts, t);
    drop(facts);
    let cells = match planned {
        Ok(c) => c,
        Err(e) => {
            ctx.progress.note(format!("play `{}` cannot be planned: {e}", play.name));
            for (_, g) in guards.iter_mut() {
                g.failed = true;
            }
            return;
        }
    };
    let total = cells.len();
    // `fresh: round` is refused in role plays: every group is one visit.
    let (mut book, groups) = CellBook::new(&cells, play.cell_order, play_seed(ctx, play));
    for visit in groups.into_iter().flatten() {
        let (n, cell) = (visit.cell, &cells[visit.cell]);
        let Some(opened) = book.open(ctx, &visit, cell) else { continue };
        let cell_id = opened.id;
        // This cell's hosts, in the order of their first step.
        let mut mine: Vec<&str> = Vec::new();
        for s in cell.setup.iter().chain(&cell.before_each).chain(&cell.benchmark).chain(&cell.teardown) {
            if !mine.contains(&s.host.as_str()) {
                mine.push(&s.host);
            }
        }
        let mut involved: Vec<(&String, &mut Slot)> =
            guards.iter_mut().filter(|(h, _)| mine.contains(&h.as_str())).map(|(h, g)| (&*h, &mut **g)).collect();
        // A host left idle by a resume has no session: this cell cannot run now (a later resume runs it).
        let idle = Down::Unreachable("not connected in this attempt (it had nothing else left)".into());
        let down = involved.iter().find_map(|(h, s)| match (&s.down, &s.session) {
            (Some(d), _) => Some((h.as_str(), d)),
            (None, None) => Some((h.as_str(), &idle)),
            (None, Some(_)) => None,
        });
        if let Some((status, why)) =
            policy::skip_reason(down, ctx.interrupted(), ctx.halted(), cell.unsupported.as_deref())
        {
            let _ = ctx.store.set_cell_status(cell_id, status, Some(&why));
            book.end(n);
            continue;
        }
        ctx.progress.line(
            &cell.host,
            format!("cell {}/{total} {}{}", n + 1, cell.describe(), CellBook::visit_note(&opened.reps, cell)),
        );
        let (outcome, ended) = {
            let agents: Vec<(&str, &AgentClient)> =
                involved.iter().map(|(h, s)| (h.as_str(), &s.session.as_ref().expect("not down").agent)).collect();
            let runner = CellRunner {
                agents,
                store: &ctx.store,
                progress: ctx.progress,
                cancel: ctx.cancel.clone(),
                attempt: ctx.attempt,
            };
            runner.run_visit(cell, cell_id, opened.first, opened.reps).await
        };
        if ended {
            book.end(n);
        }
        let failure = outcome.is_failure().then(|| format!("cell {} failed", cell.describe()));
        if let Some(why) = policy::fatal_stop(&play.name, play.any_errors_fatal, failure) {
            ctx.halt(why);
        }
        let mut pairs: Vec<(&str, &mut Slot)> = involved.iter_mut().map(|(h, s)| (h.as_str(), &mut **s)).collect();
        settle(ctx, outcome, &mut pairs).await;
    }
    book.skip_unended(ctx, &cells);
    if book.unstored || book.differs {
        for (_, g) in guards.iter_mut() {
            g.failed = true;
        }
    }
}
