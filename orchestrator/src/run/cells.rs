//! Cell bookkeeping: where each cell of a play stands while its visits run
//! (stored yet, and its id; ended yet), and storing cells that do not run
//! with the status and reason the policy gives them.

use super::context::RunContext;
use super::context::Slot;
use super::policy;
use super::schedule;
use crate::planner::{self, Cell, HostInput};
use crate::playbook::CellOrder;
use crate::status::CellStatus;
use crate::template::Templates;

pub struct CellBook {
    /// Stored with every cell: its play's order (and the shuffle's seed).
    schedule: serde_json::Map<String, serde_json::Value>,
    ids: Vec<Option<i64>>,
    ended: Vec<bool>,
    /// A cell could not be stored (so did not run).
    pub unstored: bool,
}

impl CellBook {
    /// The book for a host's (or a role play's) cells, and the visits to run them in.
    pub fn new(cells: &[Cell], order: CellOrder, seed: u64) -> (Self, Vec<schedule::Visit>) {
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
    pub fn open(&mut self, ctx: &RunContext, n: usize, cell: &Cell) -> Option<(i64, bool)> {
        if self.ended[n] {
            return None;
        }
        if let Some(id) = self.ids[n] {
            return Some((id, false));
        }
        let Some(id) = store_cell(ctx, cell) else {
            (self.ended[n], self.unstored) = (true, true);
            return None;
        };
        self.ids[n] = Some(id);
        let _ = ctx.store.add_cell_info(id, "schedule", &self.schedule);
        Some((id, true))
    }

    pub fn end(&mut self, n: usize) {
        self.ended[n] = true;
    }

    /// " (rep 2/3)" when the cell's repetitions are spread over visits.
    pub fn visit_note(visit: &schedule::Visit, cell: &Cell) -> String {
        if visit.reps.clone().count() as u32 == cell.repeat {
            String::new()
        } else {
            format!(" (rep {}/{})", visit.reps.start(), cell.repeat)
        }
    }

    /// What a stop (or an interrupt) left unrun is recorded as skipped.
    pub fn skip_unended(&self, ctx: &RunContext, cells: &[Cell]) {
        let (status, why) = policy::left_unrun(ctx.halted());
        for (n, cell) in cells.iter().enumerate().filter(|(n, _)| !self.ended[*n]) {
            if let Some(id) = self.ids[n].or_else(|| store_cell(ctx, cell)) {
                let _ = ctx.store.set_cell_status(id, status, Some(&why));
            }
        }
    }
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
    let facts = slot.session.as_ref().map(|s| &s.facts);
    let input = HostInput { inventory: &ctx.checked.inventory, host, extra_vars: &ctx.extra, facts };
    for cell in planner::plan_play(play, pi, &input, &Templates::new()).unwrap_or_default() {
        if let Ok(id) = ctx.store.add_cell(ctx.run, &cell) {
            let _ = ctx.store.set_cell_status(id, status, Some(reason));
        }
    }
}
