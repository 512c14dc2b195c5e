//! Which change a reported or acknowledged one is. A change's id is made
//! from its playbook, series and the run it arrived with; as nights are
//! added Otava may place a change a point or two away from where it first
//! did, so a stored change of the same series and direction within
//! `DRIFT` points of a found one is that one (its id, its stamps): a
//! later night neither reports it again nor forgets its acknowledgement.

use super::analyze::{Analysis, Change, Direction, Reported};
use super::HistoryRun;
use crate::store::AlertRow;
use sha2::{Digest, Sha256};
use std::collections::HashMap;

/// How far, in a series' points, a change may move and still be the one stored.
pub const DRIFT: usize = 2;

/// Ten hex digits of SHA-256: short enough to type, unique in a lab's history.
pub fn change_id(playbook: &str, series: &str, run_id: i64) -> String {
    let digest = Sha256::digest(format!("{playbook}\0{series}\0{run_id}"));
    digest.iter().take(5).map(|b| format!("{b:02x}")).collect()
}

/// Give each change its id and stamps, from `stored` (every row of the
/// runs' playbooks) or new. A stored row is one change at most: pairs of
/// a series' changes and its stored rows of the same direction within
/// `DRIFT` points are taken nearest first (the exact run before a
/// neighbour), so a new change beside an acknowledged one stays new.
pub fn attach(runs: &[HistoryRun], all: &mut [Analysis], stored: &[AlertRow]) {
    let mut by_series: HashMap<(&str, &str), Vec<&AlertRow>> = HashMap::new();
    for r in stored {
        by_series.entry((r.playbook.as_str(), r.series.as_str())).or_default().push(r);
    }
    for a in all {
        let series = a.series.key.describe();
        let position = |run_id: i64| a.series.points.iter().position(|p| runs[p.run].row.id == run_id);
        // (distance, change, row) for every pair close enough.
        let mut pairs: Vec<(usize, usize, &AlertRow)> = Vec::new();
        for (ci, c) in a.changes.iter().enumerate() {
            let playbook = runs[a.series.points[c.at].run].row.playbook.as_str();
            for &r in by_series.get(&(playbook, series.as_str())).into_iter().flatten() {
                let near = position(r.run_id).map(|p| p.abs_diff(c.at)).filter(|d| *d <= DRIFT);
                if let (Some(d), true) = (near, r.direction == c.direction.to_string()) {
                    pairs.push((d, ci, r));
                }
            }
        }
        pairs.sort_by_key(|&(d, ci, _)| (d, ci));
        let mut known: Vec<Option<&AlertRow>> = vec![None; a.changes.len()];
        let mut taken: Vec<&str> = Vec::new();
        for (_, ci, r) in pairs {
            if known[ci].is_none() && !taken.contains(&r.id.as_str()) {
                known[ci] = Some(r);
                taken.push(&r.id);
            }
        }
        for (c, known) in a.changes.iter_mut().zip(known) {
            let run = &runs[a.series.points[c.at].run].row;
            c.reported = match known {
                Some(r) => Reported {
                    id: r.id.clone(),
                    alerted: r.alerted.clone(),
                    acked: r.acked.clone(),
                    acked_by: r.acked_by.clone(),
                    ack_note: r.ack_note.clone(),
                },
                None => Reported { id: change_id(&run.playbook, &series, run.id), ..Default::default() },
            };
        }
    }
}

/// A change as the store keeps it.
pub fn row(runs: &[HistoryRun], a: &Analysis, c: &Change) -> AlertRow {
    let run = &runs[a.series.points[c.at].run].row;
    AlertRow {
        id: c.reported.id.clone(),
        playbook: run.playbook.clone(),
        series: a.series.key.describe(),
        run_id: run.id,
        direction: c.direction.to_string(),
        change_pct: c.change_pct,
        alerted: c.reported.alerted.clone(),
        acked: c.reported.acked.clone(),
        acked_by: c.reported.acked_by.clone(),
        ack_note: c.reported.ack_note.clone(),
    }
}

/// The changes a gate and an alert judge: regressions in stable series.
pub fn regressions(all: &[Analysis]) -> impl Iterator<Item = (&Analysis, &Change)> {
    super::analyze::stable_changes(all).filter(|(_, c)| c.direction == Direction::Regression)
}

/// What `--alert` reports tonight: regressions nobody was told of yet and
/// nobody acknowledged.
pub fn unreported(all: &[Analysis]) -> Vec<(&Analysis, &Change)> {
    regressions(all).filter(|(_, c)| c.reported.alerted.is_none() && c.reported.acked.is_none()).collect()
}

#[cfg(test)]
mod tests {
    use super::super::analyze::{analyze, Settings};
    use super::super::{made_up, series};
    use super::*;

    /// Twelve nights at 100, then 80: one regression, with night 13.
    fn found() -> (Vec<HistoryRun>, Vec<Analysis>) {
        let nights: Vec<(&str, Vec<f64>)> =
            (0..20).map(|i| ("6.1", if i < 12 { vec![99.5, 100.0, 100.5] } else { vec![79.5, 80.0, 80.5] })).collect();
        let runs = made_up(&nights);
        let all = analyze(series::build(&runs), &Settings::default()).unwrap();
        assert_eq!(all[0].changes.len(), 1);
        assert_eq!(all[0].changes[0].at, 12);
        (runs, all)
    }

    fn stored(all: &[Analysis], run_id: i64, direction: &str) -> AlertRow {
        AlertRow {
            id: "stored0001".into(),
            playbook: "pb.yml".into(),
            series: all[0].series.key.describe(),
            run_id,
            direction: direction.into(),
            change_pct: -20.0,
            alerted: Some("2026-11-13T03:00:00Z".into()),
            acked: None,
            acked_by: None,
            ack_note: None,
        }
    }

    #[test]
    fn a_stored_change_is_the_found_one_within_the_drift_of_the_same_series_and_direction() {
        let (runs, mut all) = found();
        attach(&runs, &mut all, &[]);
        let fresh = all[0].changes[0].reported.clone();
        assert_eq!(fresh.id, change_id("pb.yml", &all[0].series.key.describe(), 13));
        assert_eq!((&fresh.alerted, &fresh.acked), (&None, &None));
        assert_eq!(unreported(&all).len(), 1);
        // Night 13's change, stored when Otava placed it at night 14 or 11: the same.
        for run_id in [13, 14, 11] {
            let row = stored(&all, run_id, "regression");
            attach(&runs, &mut all, &[row]);
            assert_eq!(all[0].changes[0].reported.id, "stored0001", "stored at night {run_id}");
            assert!(unreported(&all).is_empty(), "reported before: not again");
        }
        // Too far, or the other way: another change.
        for (run_id, direction) in [(16, "regression"), (13, "improvement")] {
            let row = stored(&all, run_id, direction);
            attach(&runs, &mut all, &[row]);
            assert_eq!(all[0].changes[0].reported, fresh, "{run_id} {direction}");
        }
        // A stored row is one change: a second regression two points on,
        // beside the stored one, is new.
        let mut second = all[0].changes[0].clone();
        second.at = 14;
        all[0].changes.push(second);
        let row = stored(&all, 13, "regression");
        attach(&runs, &mut all, &[row]);
        assert_eq!(all[0].changes[0].reported.id, "stored0001");
        assert_eq!(all[0].changes[1].reported.id, change_id("pb.yml", &all[0].series.key.describe(), 15));
        all[0].changes.pop();
        // Acknowledged without being reported: not reported either.
        let mut acked = stored(&all, 13, "regression");
        (acked.alerted, acked.acked) = (None, Some("2026-11-14T09:00:00Z".into()));
        attach(&runs, &mut all, &[acked]);
        assert!(unreported(&all).is_empty());
    }
}
