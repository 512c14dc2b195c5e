//! Which runs `prune` empties of their samples, a decision per run with
//! its reason: pure (the runs, which hold leases, and the time come in).
//! A run is pruned only when it finished (a running or interrupted run may
//! still be resumed and needs its samples), holds no lease, is no
//! baseline, and is both older than `--older-than` and not among the
//! newest `--keep-last` of its playbook (each rule that is given).

use crate::status::RunStatus;
use crate::store::RunRow;
use std::collections::{HashMap, HashSet};
use std::time::Duration;

/// What the command line asked to keep.
#[derive(Clone, Copy, Debug, Default)]
pub struct Policy {
    pub older_than: Option<Duration>,
    pub keep_last: Option<usize>,
}

/// Why a run stays whole.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Keep {
    AlreadyPruned,
    /// Running, or interrupted and so resumable.
    NotFinished,
    HoldsLeases,
    Baseline,
    /// Among the newest `--keep-last` of its playbook.
    AmongNewest,
    /// Started within `--older-than` (or at a time that does not read).
    Young,
}

impl Keep {
    pub fn describe(self) -> &'static str {
        match self {
            Keep::AlreadyPruned => "already pruned",
            Keep::NotFinished => "running or resumable",
            Keep::HoldsLeases => "holding leases",
            Keep::Baseline => "baseline(s)",
            Keep::AmongNewest => "among the newest of their playbook",
            Keep::Young => "younger than --older-than",
        }
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Decision {
    Prune,
    Keep(Keep),
}

/// A decision for each run, in the order given (oldest first, as
/// `Store::runs` lists them); a run's age is from its `started` to `now`.
pub fn decide(runs: &[RunRow], leased: &HashSet<i64>, now: time::OffsetDateTime, p: &Policy) -> Vec<Decision> {
    // The newest `keep_last` run ids of each playbook.
    let mut newest: HashSet<i64> = HashSet::new();
    if let Some(n) = p.keep_last {
        let mut per_playbook: HashMap<&str, usize> = HashMap::new();
        for r in runs.iter().rev() {
            let seen = per_playbook.entry(r.playbook.as_str()).or_default();
            if *seen < n {
                newest.insert(r.id);
            }
            *seen += 1;
        }
    }
    let rfc3339 = &time::format_description::well_known::Rfc3339;
    runs.iter()
        .map(|r| {
            let young = p.older_than.is_some_and(|d| match time::OffsetDateTime::parse(&r.started, rfc3339) {
                Ok(started) => now - started < d,
                Err(_) => true,
            });
            let keep = if r.pruned.is_some() {
                Some(Keep::AlreadyPruned)
            } else if matches!(r.status, RunStatus::Running | RunStatus::Interrupted) {
                Some(Keep::NotFinished)
            } else if leased.contains(&r.id) {
                Some(Keep::HoldsLeases)
            } else if r.baseline.is_some() {
                Some(Keep::Baseline)
            } else if newest.contains(&r.id) {
                Some(Keep::AmongNewest)
            } else if young {
                Some(Keep::Young)
            } else {
                None
            };
            keep.map_or(Decision::Prune, Decision::Keep)
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(id: i64, playbook: &str, day: u32, status: RunStatus) -> RunRow {
        crate::store::testing::run_row(id, "-", playbook, &format!("2026-11-{day:02}T02:00:00Z"), status)
    }

    #[test]
    fn only_old_finished_free_unmarked_runs_beyond_the_newest_go() {
        let now = time::macros::datetime!(2026-11-30 12:00 UTC);
        let mut runs: Vec<RunRow> = (1..=6).map(|d| run(d as i64, "a.yml", d, RunStatus::Ok)).collect();
        runs.push(run(7, "b.yml", 1, RunStatus::Failed));
        runs.push(run(8, "b.yml", 28, RunStatus::Ok));
        runs[1].baseline = Some("x".into());
        runs[2].status = RunStatus::Interrupted;
        runs[3].pruned = Some("x".into());
        let leased = HashSet::from([5]);
        let week = Duration::from_secs(7 * 86400);
        let both = decide(&runs, &leased, now, &Policy { older_than: Some(week), keep_last: Some(1) });
        use Decision::*;
        assert_eq!(
            both,
            [
                Prune,
                Keep(super::Keep::Baseline),
                Keep(super::Keep::NotFinished),
                Keep(super::Keep::AlreadyPruned),
                Keep(super::Keep::HoldsLeases),
                Keep(super::Keep::AmongNewest),
                Prune,
                Keep(super::Keep::AmongNewest),
            ]
        );
        // Age alone: b.yml's run of the 28th is young; keep-last alone: all
        // but the newest of each playbook go, however young.
        let age = decide(&runs, &leased, now, &Policy { older_than: Some(week), keep_last: None });
        assert_eq!((age[5], age[7]), (Prune, Keep(super::Keep::Young)));
        let last = decide(&runs, &leased, now, &Policy { older_than: None, keep_last: Some(1) });
        assert_eq!((last[0], last[6], last[7]), (Prune, Prune, Keep(super::Keep::AmongNewest)));
        // A start that does not read is kept, never guessed old.
        runs[0].started = "yesterday".into();
        let odd = decide(&runs, &leased, now, &Policy { older_than: Some(week), keep_last: None });
        assert_eq!(odd[0], Keep(super::Keep::Young));
    }
}
