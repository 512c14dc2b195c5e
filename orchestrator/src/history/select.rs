//! Which runs a history is over: those of one playbook (by default the
//! playbook of the newest run), or whose name matches a glob, started in a
//! time window, the newest `last` of them, oldest first. Runs still
//! running are left out: their points are not in yet.

use crate::status::RunStatus;
use crate::store::RunRow;
use std::path::Path;

/// Whose runs: a playbook as a person names it, or as runs stored it.
#[derive(Clone, Debug, PartialEq)]
pub enum PlaybookChoice {
    /// `--playbook`: the path as runs stored it, or a bare file name that
    /// also takes the runs started from other directories.
    Named(String),
    /// Exactly this stored path: the site's page for it, or the newest
    /// run's when none is named (`q.yml` then is not `dir/q.yml`).
    Stored(String),
}

#[derive(Clone, Debug, Default)]
pub struct Selection {
    pub playbook: Option<PlaybookChoice>,
    /// A glob over run names (`nightly-*`).
    pub name: Option<globset::GlobMatcher>,
    /// Only runs in this state.
    pub status: Option<RunStatus>,
    /// RFC 3339 times or dates (`2026-11-01`): started at or after, before.
    pub since: Option<String>,
    pub until: Option<String>,
    /// At most this many runs, the newest.
    pub last: Option<usize>,
}

impl PlaybookChoice {
    /// Whether run `r` was of this playbook.
    fn takes(&self, r: &RunRow) -> bool {
        let file = |p: &str| Path::new(p).file_name().map(|f| f.to_os_string());
        match self {
            PlaybookChoice::Stored(p) => r.playbook == *p,
            PlaybookChoice::Named(p) => r.playbook == *p || (!p.contains('/') && file(&r.playbook) == file(p)),
        }
    }
}

/// The runs of `all` (in id order) the selection keeps, oldest first: what
/// `benchrig runs` lists.
pub fn filter(all: &[RunRow], sel: &Selection) -> Vec<RunRow> {
    let picked: Vec<RunRow> = all
        .iter()
        .filter(|r| sel.playbook.as_ref().is_none_or(|p| p.takes(r)))
        .filter(|r| sel.name.as_ref().is_none_or(|g| r.name.as_deref().is_some_and(|n| g.is_match(n))))
        .filter(|r| sel.status.is_none_or(|s| r.status == s))
        // RFC 3339 UTC stamps order as text; a bare date is the start of its day.
        .filter(|r| sel.since.as_deref().is_none_or(|s| r.started.as_str() >= s))
        .filter(|r| sel.until.as_deref().is_none_or(|u| r.started.as_str() < u))
        .cloned()
        .collect();
    let skip = sel.last.map_or(0, |n| picked.len().saturating_sub(n.max(1)));
    picked.into_iter().skip(skip).collect()
}

/// The finished runs a history is over: [`filter`]'s, of the newest
/// finished run's playbook when neither a playbook nor a name is given.
pub fn pick(all: &[RunRow], sel: &Selection) -> Vec<RunRow> {
    let finished: Vec<RunRow> = all.iter().filter(|r| r.status != RunStatus::Running).cloned().collect();
    let mut sel = sel.clone();
    if sel.playbook.is_none() && sel.name.is_none() {
        sel.playbook = finished.last().map(|r| PlaybookChoice::Stored(r.playbook.clone()));
    }
    filter(&finished, &sel)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::testing::run_row as run;
    use PlaybookChoice::{Named, Stored};

    fn ids(v: Vec<RunRow>) -> Vec<i64> {
        v.into_iter().map(|r| r.id).collect()
    }

    #[test]
    fn runs_of_one_playbook_a_name_glob_a_window_and_the_newest_n() {
        let all = [
            run(1, "nightly-2026-11-28", "playbooks/q.yml", "2026-11-28T02:00:00Z", RunStatus::Ok),
            run(2, "adhoc", "/home/me/q.yml", "2026-11-28T12:00:00Z", RunStatus::Ok),
            run(3, "nightly-2026-11-29", "playbooks/q.yml", "2026-11-29T02:00:00Z", RunStatus::Failed),
            run(4, "nightly-2026-11-30", "playbooks/other.yml", "2026-11-30T02:00:00Z", RunStatus::Ok),
            run(5, "nightly-2026-12-01", "playbooks/q.yml", "2026-12-01T02:00:00Z", RunStatus::Ok),
            run(6, "nightly-2026-12-02", "playbooks/q.yml", "2026-12-02T02:00:00Z", RunStatus::Running),
        ];
        let sel = |f: &dyn Fn(&mut Selection)| {
            let mut s = Selection { last: Some(100), ..Default::default() };
            f(&mut s);
            ids(pick(&all, &s))
        };
        assert_eq!(sel(&|_| {}), [1, 3, 5], "the newest finished run's playbook; a running one is not in yet");
        assert_eq!(sel(&|s| s.playbook = Some(Named("q.yml".into()))), [1, 2, 3, 5], "by file name: any directory");
        assert_eq!(sel(&|s| s.playbook = Some(Named("playbooks/other.yml".into()))), [4]);
        let glob = globset::Glob::new("nightly-*").unwrap().compile_matcher();
        assert_eq!(sel(&|s| s.name = Some(glob.clone())), [1, 3, 4, 5], "a glob alone: any playbook");
        assert_eq!(sel(&|s| s.since = Some("2026-11-29".into())), [3, 5]);
        assert_eq!(sel(&|s| s.until = Some("2026-11-29".into())), [1]);
        assert_eq!(sel(&|s| s.last = Some(2)), [3, 5], "the newest two, oldest first");
    }

    #[test]
    fn runs_lists_every_run_or_those_a_filter_keeps() {
        let all = [
            run(1, "nightly-1", "playbooks/q.yml", "2026-11-28T02:00:00Z", RunStatus::Ok),
            run(2, "adhoc", "/home/me/q.yml", "2026-11-28T12:00:00Z", RunStatus::Failed),
            run(3, "nightly-2", "playbooks/other.yml", "2026-11-29T02:00:00Z", RunStatus::Running),
        ];
        let sel = |f: &dyn Fn(&mut Selection)| {
            let mut s = Selection::default();
            f(&mut s);
            ids(filter(&all, &s))
        };
        assert_eq!(sel(&|_| {}), [1, 2, 3], "every run, a running one too, of any playbook");
        assert_eq!(sel(&|s| s.status = Some(RunStatus::Failed)), [2]);
        assert_eq!(sel(&|s| s.playbook = Some(Named("q.yml".into()))), [1, 2]);
        assert_eq!(sel(&|s| s.last = Some(1)), [3]);
    }

    #[test]
    fn a_stored_path_takes_its_own_runs_only_a_name_takes_every_directorys() {
        let all = [
            run(1, "nightly-1", "playbooks/q.yml", "2026-11-28T02:00:00Z", RunStatus::Ok),
            run(2, "adhoc", "q.yml", "2026-11-28T12:00:00Z", RunStatus::Ok),
        ];
        let sel = |playbook| ids(pick(&all, &Selection { playbook, last: Some(100), ..Default::default() }));
        assert_eq!(sel(None), [2], "the newest run's playbook, as it stored it: q.yml is not playbooks/q.yml");
        assert_eq!(sel(Some(Stored("q.yml".into()))), [2], "the site's page for q.yml");
        assert_eq!(sel(Some(Named("q.yml".into()))), [1, 2], "a name a person gives: any directory");
        assert_eq!(sel(Some(Stored("playbooks/q.yml".into()))), [1]);
    }
}
