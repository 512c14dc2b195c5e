//! Several cells' visits on one setup (`fresh: round`): the visits of a
//! round whose cells have identical rendered setup and teardown steps
//! (`schedule::visits` groups them, `Cell::shared_setup` says which are
//! identical) run one after another between one setup and one teardown.
//!
//! - The setup runs once, for the first cell. Its info (mkfs command and
//!   version, mount options, the device) is recorded with every cell that
//!   runs on it, since each result was measured on it; its artifacts (the
//!   filesystem's dump) only with the first, so a run holds one dump per
//!   mkfs. Each cell's `fresh` info names the cell the setup was made for.
//! - A setup that fails, fails every cell of the group: each would have
//!   made the same one. One cut off (an interrupt, a lost host) ends the
//!   first cell; the others are handed back to the play loop, which skips
//!   them or, once the host is back, runs them on a new setup.
//! - A measured step that fails ends its cell, and the cells after it are
//!   handed back: the play loop runs them on a new setup, since a failed
//!   step may leave the filesystem full or half-written. A step the agent
//!   refuses as unsupported (said before it touches anything) does not.
//! - Warm-up repetitions open each cell's visit: warming up is about the
//!   cell's workload, not the filesystem.
//! - The teardown runs once, after the last cell that ran, whatever
//!   happened (a failure, Ctrl-C); a failure of it is the failure of every
//!   cell that ran on that setup, as it would be of each one's own.

use super::executor::{absorb, lost_host, CellOutcome, CellRunner};
use crate::plan::Cell;
use std::ops::RangeInclusive;

/// One visit of a group: its cell, the cell's id, whether this is the
/// cell's first visit in this attempt, the repetitions it records, and the
/// line that announces it.
pub struct Member<'c> {
    pub cell: &'c Cell,
    pub id: i64,
    pub first: bool,
    pub reps: RangeInclusive<u32>,
    pub line: String,
}

impl CellRunner<'_> {
    /// Run `members` (at least one) on one setup, in order. How each of the
    /// first k ended (flagged when its cell has ended, as `run_visit`
    /// says); members after those did not start, and the caller runs them
    /// again later (their setup cut off, or a cell before them failed).
    pub async fn run_shared(&self, members: &[Member<'_>]) -> Vec<(CellOutcome, bool)> {
        let Some(lead) = members.first() else { return Vec::new() };
        self.progress
            .line(&lead.cell.host, format!("{} (fresh: round: one setup for {} cells)", lead.line, members.len()));
        if lead.first {
            if let Err(bad) = self.start(lead.id) {
                return vec![(self.finish(lead.id, bad), true)];
            }
        }
        let mut ran: Vec<(CellOutcome, bool)> = Vec::new();
        match self.setup(lead.cell, lead.id).await {
            Err(bad) => {
                // Failed or unsupported: every cell would have made the same setup.
                let everyone = matches!(bad, CellOutcome::Failed(_) | CellOutcome::Unsupported(_));
                let n = if everyone { members.len() } else { 1 };
                for m in &members[..n] {
                    if m.first && m.id != lead.id {
                        let _ = self.start(m.id);
                    }
                    ran.push((bad.clone(), false));
                }
            }
            Ok(made) => {
                let note = serde_json::json!({"policy": "round", "setup_made_for": lead.cell.key});
                let note = note.as_object().cloned().unwrap_or_default();
                for (k, m) in members.iter().enumerate() {
                    if k > 0 {
                        self.progress.line(&m.cell.host, m.line.clone());
                        if m.first {
                            if let Err(bad) = self.start(m.id) {
                                ran.push((bad, false));
                                break;
                            }
                        }
                        for (step, info) in &made {
                            let _ = self.store.add_cell_info(m.id, step, info);
                        }
                    }
                    let _ = self.store.add_cell_info(m.id, "fresh", &note);
                    let (outcome, enough) = self.measure(m.cell, m.id, m.reps.clone()).await;
                    let go_on = matches!(outcome, CellOutcome::Ok | CellOutcome::Unsupported(_));
                    ran.push((outcome, enough));
                    if !go_on {
                        break;
                    }
                }
            }
        }
        let ids: Vec<i64> = members[..ran.len()].iter().map(|m| m.id).collect();
        let lost: Vec<String> = ran.iter().filter_map(|(o, _)| lost_host(o)).collect();
        let what = format!("the setup {} shared with {} other cell(s)", lead.cell.describe(), ids.len() - 1);
        if let Some(bad) = self.tear_down(lead.cell, &ids, lost, &what).await {
            for (outcome, _) in ran.iter_mut() {
                absorb(outcome, bad.clone());
            }
        }
        members
            .iter()
            .zip(ran)
            .map(|(m, (outcome, enough))| self.conclude(m.cell, m.id, &m.reps, outcome, enough))
            .collect()
    }
}
