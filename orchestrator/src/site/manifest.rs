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
    /// Its pages were taken out again: older than the site keeps (`--keep-last`).
    #[serde(default)]
    pub dropped: bool,
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
/// has its samples, and what was written (if anything) was of another state
/// or taken out since.
pub fn stale(m: &Manifest, r: &RunRow) -> bool {
    r.status != RunStatus::Running
        && r.pruned.is_none()
        && m.runs.get(&r.id).is_none_or(|w| w.state != state(r) || w.dropped)
}

/// The runs whose pages the site keeps: each playbook's newest `keep`
/// (every run with 0) and every baseline. `runs` oldest first.
pub fn kept(runs: &[RunRow], keep: usize) -> std::collections::HashSet<i64> {
    let mut seen: std::collections::HashMap<&str, usize> = Default::default();
    let mut out = std::collections::HashSet::new();
    for r in runs.iter().rev() {
        let n = seen.entry(r.playbook.as_str()).or_default();
        *n += 1;
        if keep == 0 || *n <= keep || r.baseline.is_some() {
            out.insert(r.id);
        }
    }
    out
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
        m.runs.insert(1, Written { state: state(&done), report: true, compare: None, dropped: false });
        assert!(!stale(&m, &done), "written: not again");
        let resumed = run(1, RunStatus::Ok, Some("2026-12-02T01:00:00Z"), false);
        assert!(stale(&m, &resumed), "finished again: written again");
        assert!(!stale(&m, &run(2, RunStatus::Running, None, false)));
        assert!(!stale(&m, &run(3, RunStatus::Failed, Some("x"), true)), "pruned: no samples to report");
        assert!(stale(&m, &run(4, RunStatus::Failed, Some("x"), false)), "a failed night has its report");
        m.runs.get_mut(&1).unwrap().dropped = true;
        assert!(stale(&m, &done), "taken out, then kept again (--keep-last raised): written again");
    }

    #[test]
    fn the_site_keeps_each_playbooks_newest_and_every_baseline() {
        let mut runs: Vec<RunRow> = (1..=6).map(|i| run(i, RunStatus::Ok, Some("x"), false)).collect();
        runs[3].playbook = "q.yml".into();
        runs[0].baseline = Some("b".into());
        let mut k: Vec<i64> = kept(&runs, 2).into_iter().collect();
        k.sort();
        assert_eq!(k, [1, 4, 5, 6], "p.yml's newest two (5, 6), q.yml's one (4), the baseline (1)");
        assert_eq!(kept(&runs, 0).len(), 6);
    }
}
