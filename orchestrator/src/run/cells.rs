//! Cell bookkeeping: where each cell of a play stands while its visits run
//! (stored yet, and its id; ended yet; how many repetitions an earlier
//! attempt recorded), and storing cells that do not run with the status and
//! reason the policy gives them. A cell the run already stored is taken up,
//! not stored again: what it has is kept, and it runs only if
//! `policy::needs_running` says so.

use super::context::RunContext;
use super::context::Slot;
use super::policy;
use super::resume;
use super::schedule;
use crate::plan::{self, Cell, HostInput};
use crate::playbook::CellOrder;
use crate::status::CellStatus;
use std::ops::RangeInclusive;

pub struct CellBook {
    /// Stored with every cell: its play's order (and the shuffle's seed).
    schedule: serde_json::Map<String, serde_json::Value>,
    ids: Vec<Option<i64>>,
    ended: Vec<bool>,
    /// A visit of the cell has started in this attempt.
    started: Vec<bool>,
    /// Repetitions recorded before this attempt (a resumed cell goes on after them).
    done: Vec<u32>,
    /// A cell could not be stored (so did not run).
    pub unstored: bool,
    /// A stored cell that would now be planned differently was left as it was.
    pub differs: bool,
}

/// Where a planned cell stands in the store.
enum Placed {
    /// Not stored before: stored now, with this id.
    New(i64),
    /// Stored, and it runs again after its first `done` repetitions.
    Resumed { id: i64, done: u32 },
    /// Stored with a result (or a verdict) it keeps.
    Finished,
    /// Stored, and planned differently now (why): left as it was.
    Differs(String),
}

/// Find or store a planned cell of the run; `None` when the store fails
/// (said on the host's line).
fn place(ctx: &RunContext, cell: &Cell, retry_failed: bool) -> Option<Placed> {
    let row = match ctx.store.cell_by_key(ctx.run, &cell.host, &cell.key) {
        Ok(row) => row,
        Err(e) => {
            ctx.progress.line(&cell.host, format!("cannot read cell {}: {e}", cell.describe()));
            return None;
        }
    };
    let Some(row) = row else { return store_cell(ctx, cell).map(Placed::New) };
    if !policy::needs_running(row.status, retry_failed) {
        return Some(Placed::Finished);
    }
    if let Some(what) = resume::difference(&row, cell) {
        return Some(Placed::Differs(what));
    }
    // Runs stored before `reps_done` was: each repetition with samples counts.
    let done = match row.reps_done {
        Some(n) => n as u32,
        None => ctx.store.cell_samples(row.id).ok()?.iter().map(|s| s.repetition as u32).max().unwrap_or(0),
    };
    Some(Placed::Resumed { id: row.id, done })
}

/// What is left of `reps` after the first `done` repetitions.
fn remaining(reps: RangeInclusive<u32>, done: u32) -> Option<RangeInclusive<u32>> {
    let start = (*reps.start()).max(done + 1);
    (start <= *reps.end()).then(|| start..=*reps.end())
}

impl CellBook {
    /// The book for a host's (or a role play's) cells, and the visits to
    /// run them in, grouped by the setup they share (`fresh: round`).
    pub fn new(cells: &[Cell], order: CellOrder, seed: u64) -> (Self, Vec<schedule::Group>) {
        let repeats: Vec<u32> = cells.iter().map(|c| c.repeat).collect();
        let setups: Vec<Option<serde_json::Value>> = cells.iter().map(Cell::shared_setup).collect();
        let visits = schedule::visits(&repeats, &schedule::classes(&setups), order, seed);
        let n = cells.len();
        let schedule = match order {
            CellOrder::Sequential => serde_json::json!({"cell_order": "sequential"}),
            CellOrder::Interleaved => serde_json::json!({"cell_order": "interleaved"}),
            CellOrder::Shuffled(_) => serde_json::json!({"cell_order": "shuffled", "seed": seed}),
        };
        let schedule = schedule.as_object().cloned().unwrap_or_default();
        let book = CellBook {
            schedule,
            ids: vec![None; n],
            ended: vec![false; n],
            started: vec![false; n],
            done: vec![0; n],
            unstored: false,
            differs: false,
        };
        (book, visits)
    }

    /// Cell `n`'s id, whether this is its first visit in this attempt, and
    /// the repetitions of `visit` it still lacks; `None` when it has ended,
    /// has them all, or cannot be stored (which ends it).
    pub fn open(&mut self, ctx: &RunContext, visit: &schedule::Visit, cell: &Cell) -> Option<Opened> {
        let n = visit.cell;
        if self.ended[n] {
            return None;
        }
        if self.ids[n].is_none() {
            match place(ctx, cell, ctx.retry_failed) {
                None => (self.ended[n], self.unstored) = (true, true),
                Some(Placed::New(id)) => {
                    self.ids[n] = Some(id);
                    let _ = ctx.store.add_cell_info(id, "schedule", &self.schedule);
                }
                Some(Placed::Resumed { id, done }) => self.resume(ctx, n, cell, id, done),
                Some(Placed::Finished) => self.ended[n] = true,
                Some(Placed::Differs(what)) => {
                    ctx.progress.line(
                        &cell.host,
                        format!("cell {} left as it was: planned differently now: {what}", cell.describe()),
                    );
                    (self.ended[n], self.differs) = (true, true);
                }
            }
        }
        let id = self.ids[n].filter(|_| !self.ended[n])?;
        let reps = remaining(visit.reps.clone(), self.done[n])?;
        let first = !std::mem::replace(&mut self.started[n], true);
        Some(Opened { id, first, reps })
    }

    /// Take up a stored cell after its first `done` repetitions: what a
    /// repetition cut off part-way left goes; one with every repetition
    /// recorded only lacked its ending.
    fn resume(&mut self, ctx: &RunContext, n: usize, cell: &Cell, id: i64, done: u32) {
        self.ids[n] = Some(id);
        self.done[n] = done;
        match ctx.store.drop_partial_repetitions(id, done) {
            Ok(0) => {}
            Ok(k) => ctx.progress.line(
                &cell.host,
                format!("cell {}: {k} sample(s) of a repetition cut off part-way dropped", cell.describe()),
            ),
            Err(e) => {
                ctx.progress.line(&cell.host, format!("cannot resume cell {}: {e}", cell.describe()));
                (self.ended[n], self.unstored) = (true, true);
                return;
            }
        }
        if done >= cell.repeat {
            let _ = ctx.store.set_cell_status(id, CellStatus::Ok, None);
            self.ended[n] = true;
        } else if done > 0 {
            ctx.progress
                .line(&cell.host, format!("cell {}: resumed after repetition {done}/{}", cell.describe(), cell.repeat));
        }
    }

    pub fn end(&mut self, n: usize) {
        self.ended[n] = true;
    }

    /// " (rep 2/3)" when the cell's repetitions are spread over visits.
    pub fn visit_note(reps: &RangeInclusive<u32>, cell: &Cell) -> String {
        if reps.clone().count() as u32 == cell.repeat {
            String::new()
        } else {
            format!(" (rep {}/{})", reps.start(), cell.repeat)
        }
    }

    /// What a stop (or an interrupt) left unrun is recorded as skipped.
    pub fn skip_unended(&self, ctx: &RunContext, cells: &[Cell]) {
        let (status, why) = policy::left_unrun(ctx.halted());
        for (n, cell) in cells.iter().enumerate().filter(|(n, _)| !self.ended[*n]) {
            let id = self.ids[n].or_else(|| match place(ctx, cell, ctx.retry_failed)? {
                Placed::New(id) | Placed::Resumed { id, .. } => Some(id),
                Placed::Finished | Placed::Differs(_) => None,
            });
            if let Some(id) = id {
                let _ = ctx.store.set_cell_status(id, status, Some(&why));
            }
        }
    }
}

/// A visit about to run: the cell's id, whether it is the cell's first
/// visit in this attempt, and the repetitions it records.
pub struct Opened {
    pub id: i64,
    pub first: bool,
    pub reps: RangeInclusive<u32>,
}

fn store_cell(ctx: &RunContext, cell: &Cell) -> Option<i64> {
    match ctx.store.add_cell(ctx.run, cell) {
        Ok(id) => Some(id),
        Err(e) => {
            ctx.progress.line(&cell.host, format!("cannot store cell: {e}"));
            None
        }
    }
}

/// Store the cells a host would have run in a play, with a status and why
/// they did not run (planned with the host's facts when it has a session).
pub fn record_cells(ctx: &RunContext, host: &str, pi: usize, slot: &Slot, status: CellStatus, reason: &str) {
    let play = &ctx.checked.playbook.plays[pi];
    if !play.roles.is_empty() {
        return; // a role cell is recorded on the host that measures it
    }
    let input = HostInput { inventory: &ctx.checked.inventory, host, extra_vars: &ctx.extra, facts: slot.facts() };
    for cell in plan::plan_play(play, pi, &input, &ctx.checked.templates).unwrap_or_default() {
        // What this attempt (or an earlier one) settled stays as it is.
        if let Some(Placed::New(id) | Placed::Resumed { id, .. }) = place(ctx, &cell, false) {
            let _ = ctx.store.set_cell_status(id, status, Some(reason));
        }
    }
}

/// Store `cells` (planned, not run) with a status and why, and, when
/// given, an info entry each; what the run settled before stays.
pub fn record_these(
    ctx: &RunContext,
    cells: &[Cell],
    status: CellStatus,
    reason: &str,
    info: Option<(&str, &serde_json::Map<String, serde_json::Value>)>,
) {
    for cell in cells {
        if let Some(Placed::New(id) | Placed::Resumed { id, .. }) = place(ctx, cell, ctx.retry_failed) {
            let _ = ctx.store.set_cell_status(id, status, Some(reason));
            if let Some((key, info)) = info {
                let _ = ctx.store.add_cell_info(id, key, info);
            }
        }
    }
}

/// Add an info entry to each of `cells` the run has stored.
pub fn note_these(ctx: &RunContext, cells: &[Cell], key: &str, info: &serde_json::Map<String, serde_json::Value>) {
    for cell in cells {
        if let Ok(Some(row)) = ctx.store.cell_by_key(ctx.run, &cell.host, &cell.key) {
            let _ = ctx.store.add_cell_info(row.id, key, info);
        }
    }
}

/// Whether any of `cells` still runs in this attempt (not stored, or
/// stored without a result it keeps).
pub fn any_to_run(ctx: &RunContext, cells: &[Cell]) -> bool {
    cells.iter().any(|c| match ctx.store.cell_by_key(ctx.run, &c.host, &c.key) {
        Ok(Some(row)) => policy::needs_running(row.status, ctx.retry_failed),
        _ => true,
    })
}
