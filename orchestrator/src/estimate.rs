//! How long a planned cell will take, from the newest stored run of the
//! same cell on the same host (host, play, cell key), scaled to the planned
//! repetitions: what `plan` shows per cell and per host, as the Phoronix
//! Test Suite's estimate-run-time does from earlier results. Pure: the
//! store's rows come in, durations go out.

use crate::store::CellRow;
use std::collections::HashMap;
use std::ops::RangeInclusive;
use std::time::Duration;
use time::format_description::well_known::Rfc3339;
use time::OffsetDateTime;

/// Seconds per repetition of each (host, play, key) that ran to its end.
pub struct Estimates(HashMap<(String, String, String), f64>);

impl Estimates {
    pub fn from_rows(rows: &[CellRow]) -> Estimates {
        let parse = |t: &Option<String>| t.as_deref().and_then(|t| OffsetDateTime::parse(t, &Rfc3339).ok());
        let known = rows
            .iter()
            .filter_map(|c| {
                let took = (parse(&c.finished)? - parse(&c.started)?).as_seconds_f64();
                // The repetitions it ran (an adaptive cell may stop early).
                let reps = c.reps_done.filter(|&n| n > 0).unwrap_or(c.repeat).max(1) as f64;
                (took >= 0.0).then(|| ((c.host.clone(), c.play.clone(), c.key.clone()), took / reps))
            })
            .collect();
        Estimates(known)
    }

    /// The cell's time at `repeat` repetitions, if it ran before.
    pub fn cell(&self, host: &str, play: &str, key: &str, repeat: u32) -> Option<Duration> {
        let per_rep = self.0.get(&(host.to_string(), play.to_string(), key.to_string()))?;
        Some(Duration::from_secs_f64(per_rep * f64::from(repeat.max(1))))
    }
}

/// An estimate as people read one: to the second, as `1m 12s`.
pub fn to_the_second(d: Duration) -> String {
    humantime::format_duration(Duration::from_secs(d.as_secs_f64().round() as u64)).to_string()
}

/// Each host's total over its cells with an estimate, and how many had none.
#[derive(Debug, Default, PartialEq)]
pub struct HostTotal {
    pub known: Duration,
    pub unknown_cells: usize,
}

/// Sum per host, in the order hosts first appear.
pub fn per_host<'a>(cells: impl IntoIterator<Item = (&'a str, Option<Duration>)>) -> Vec<(String, HostTotal)> {
    let mut out: Vec<(String, HostTotal)> = Vec::new();
    for (host, est) in cells {
        let i = match out.iter().position(|(h, _)| h == host) {
            Some(i) => i,
            None => {
                out.push((host.to_string(), HostTotal::default()));
                out.len() - 1
            }
        };
        match est {
            Some(d) => out[i].1.known += d,
            None => out[i].1.unknown_cells += 1,
        }
    }
    out
}

/// The time a host has left when a cell starts: the estimates of that
/// cell and of every cell after it in the visit order.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Left {
    pub known: Duration,
    pub unknown_cells: usize,
}

impl Left {
    /// ` · ≈1m 10s left` for the progress line (`≥` when some cells have
    /// never run), or nothing when no cell has an estimate.
    pub fn suffix(&self) -> String {
        if self.known.is_zero() {
            return String::new();
        }
        let at_least = if self.unknown_cells > 0 { "≥" } else { "≈" };
        format!(" · {at_least}{} left", to_the_second(self.known))
    }
}

/// [`Left`] at each visit, keyed by (cell, its first repetition): the
/// visits in their order, each a cell (index into `per_rep`, a cell's time
/// per repetition) and its repetitions (a `fresh: round` or interleaved
/// order visits a cell once per round).
pub fn left_at(visits: &[(usize, RangeInclusive<u32>)], per_rep: &[Option<Duration>]) -> HashMap<(usize, u32), Left> {
    let mut out = HashMap::new();
    let mut left = Left::default();
    for (cell, reps) in visits.iter().rev() {
        match per_rep.get(*cell).copied().flatten() {
            Some(d) => left.known += d * reps.clone().count() as u32,
            None => left.unknown_cells += 1,
        }
        out.insert((*cell, *reps.start()), left);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::status::CellStatus;

    fn row(host: &str, key: &str, started: &str, finished: &str, repeat: i64, done: Option<i64>) -> CellRow {
        CellRow {
            id: 1,
            host: host.into(),
            play_index: 0,
            play: "p".into(),
            key: key.into(),
            params: serde_json::json!({}),
            repeat,
            status: CellStatus::Ok,
            reason: None,
            info: None,
            steps: None,
            started: Some(started.into()),
            finished: Some(finished.into()),
            reps_done: done,
        }
    }

    #[test]
    fn a_cell_takes_its_last_time_per_repetition_times_the_planned_repetitions() {
        let e = Estimates::from_rows(&[
            row("a", "0", "2026-12-01T02:00:00Z", "2026-12-01T02:00:30Z", 3, Some(3)),
            // Adaptive, stopped after 2 of 10: 20 s over 2 repetitions.
            row("a", "1", "2026-12-01T02:01:00.5Z", "2026-12-01T02:01:20.5Z", 10, Some(2)),
            row("b", "0", "2026-12-01T02:00:00Z", "not a time", 3, Some(3)),
        ]);
        assert_eq!(e.cell("a", "p", "0", 3), Some(Duration::from_secs(30)));
        assert_eq!(e.cell("a", "p", "0", 6), Some(Duration::from_secs(60)));
        assert_eq!(e.cell("a", "p", "1", 10), Some(Duration::from_secs(100)));
        assert_eq!(e.cell("b", "p", "0", 3), None, "an unreadable time is no estimate");
        assert_eq!(e.cell("a", "other play", "0", 3), None);
        let totals =
            per_host([("a", e.cell("a", "p", "0", 3)), ("b", None), ("a", e.cell("a", "p", "1", 2)), ("a", None)]);
        let per_rep = [Some(Duration::from_secs(10)), None, Some(Duration::from_secs(30))];
        let left = left_at(&[(2, 1..=3), (0, 1..=3), (1, 1..=3)], &per_rep);
        assert_eq!(left[&(2, 1)].suffix(), " · ≥2m left", "the first visit: every cell, one never run");
        assert_eq!(left[&(0, 1)].suffix(), " · ≥30s left");
        assert_eq!(left[&(1, 1)].suffix(), "", "no estimate at all: nothing said");
        // Round by round: cell 0 twice, a repetition each.
        let left = left_at(&[(0, 1..=1), (2, 1..=1), (0, 2..=2)], &per_rep);
        assert_eq!((left[&(0, 1)].known, left[&(0, 2)].known), (Duration::from_secs(50), Duration::from_secs(10)));
        assert_eq!(
            totals,
            [
                ("a".to_string(), HostTotal { known: Duration::from_secs(50), unknown_cells: 1 }),
                ("b".to_string(), HostTotal { known: Duration::ZERO, unknown_cells: 1 })
            ]
        );
    }
}
