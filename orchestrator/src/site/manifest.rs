//! What a site directory holds (`site.json` in it): per run, which of its
//! pages were written from which state of the run, and the comparison's
//! counts the index shows. A run whose state is unchanged is not written
//! again; a run pruned since keeps the pages written before.

use crate::status::RunStatus;
use crate::store::RunRow;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

pub const FILE: &str = "site.json";

#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Manifest {
    pub runs: BTreeMap<i64, Written>,
}

/// One run's pages.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Written {
    /// The run's state when they were written (`state`).
    pub state: String,
    /// Its report (`runs/ID.html`) is there.
    pub report: bool,
    /// Its comparison with its automatic baseline, when it had one.
    pub compare: Option<Compared>,
}

/// What the index says of a comparison.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Compared {
    pub baseline: i64,
    pub regressed: usize,
    pub improved: usize,
}

/// What, when it changes, makes a run's pages stale: its status and when
/// it finished (a resumed run finishes again).
pub fn state(r: &RunRow) -> String {
    format!("{}|{}", r.status, r.finished.as_deref().unwrap_or(""))
}

/// Whether a run's pages are to be written now: it is finished, it still
/// has its samples, and what was written (if anything) was of another state.
pub fn stale(m: &Manifest, r: &RunRow) -> bool {
    r.status != RunStatus::Running && r.pruned.is_none() && m.runs.get(&r.id).is_none_or(|w| w.state != state(r))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(id: i64, status: RunStatus, finished: Option<&str>, pruned: bool) -> RunRow {
        let mut r = crate::store::testing::run_row(id, "n", "p.yml", "2026-12-01T00:00:00Z", status);
        r.finished = finished.map(str::to_string);
        r.pruned = pruned.then(|| "2026-12-04T00:00:00Z".into());
        r
    }

    #[test]
    fn a_run_is_written_once_per_state_and_never_while_running_or_once_pruned() {
        let mut m = Manifest::default();
        let done = run(1, RunStatus::Ok, Some("2026-12-01T01:00:00Z"), false);
        assert!(stale(&m, &done));
        m.runs.insert(1, Written { state: state(&done), report: true, compare: None });
        assert!(!stale(&m, &done), "written: not again");
        let resumed = run(1, RunStatus::Ok, Some("2026-12-02T01:00:00Z"), false);
        assert!(stale(&m, &resumed), "finished again: written again");
        assert!(!stale(&m, &run(2, RunStatus::Running, None, false)));
        assert!(!stale(&m, &run(3, RunStatus::Failed, Some("x"), true)), "pruned: no samples to report");
        assert!(stale(&m, &run(4, RunStatus::Failed, Some("x"), false)), "a failed night has its report");
    }
}
