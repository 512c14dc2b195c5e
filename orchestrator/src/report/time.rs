//! Where a run's time went, per host: how long the host was busy with
//! cells (the union of its cells' spans, so a resume's gap and interleaved
//! visits count once), how much of that its measured steps took (each
//! step's wall time once, however many metrics it gave), and the rest —
//! setup (mkfs, mount), teardown, dropping caches, round trips — which is
//! what a faster tool can win back without bending a result.

use crate::store::{CellRow, SampleRow};
use std::collections::{HashMap, HashSet};
use time::format_description::well_known::Rfc3339;
use time::OffsetDateTime;

#[derive(Clone, Debug, PartialEq, serde::Serialize)]
pub struct HostTime {
    pub host: String,
    /// Seconds between its cells' starts and ends, overlaps counted once.
    pub busy_s: f64,
    /// Seconds inside measured steps.
    pub measured_s: f64,
}

impl HostTime {
    /// Seconds outside measured steps: setup, teardown and between.
    pub fn outside_s(&self) -> f64 {
        (self.busy_s - self.measured_s).max(0.0)
    }
}

fn at(t: &str) -> Option<f64> {
    OffsetDateTime::parse(t, &Rfc3339).ok().map(|t| t.unix_timestamp_nanos() as f64 / 1e9)
}

/// Total length of the union of `spans`.
fn union_len(mut spans: Vec<(f64, f64)>) -> f64 {
    spans.sort_by(|a, b| a.0.total_cmp(&b.0));
    let (mut total, mut open): (f64, Option<(f64, f64)>) = (0.0, None);
    for (s, e) in spans {
        open = match open {
            Some((os, oe)) if s <= oe => Some((os, oe.max(e))),
            Some((os, oe)) => {
                total += oe - os;
                Some((s, e))
            }
            None => Some((s, e)),
        };
    }
    total + open.map_or(0.0, |(s, e)| e - s)
}

/// Each host of `hosts` (in that order) that ran a cell.
pub fn per_host(hosts: &[String], cells: &[CellRow], samples: &[SampleRow]) -> Vec<HostTime> {
    // One pass over the cells and one over the samples, not one per host.
    let mut cells_of: HashMap<&str, Vec<&CellRow>> = HashMap::new();
    for c in cells {
        cells_of.entry(c.host.as_str()).or_default().push(c);
    }
    let host_of: HashMap<i64, &str> = cells.iter().map(|c| (c.id, c.host.as_str())).collect();
    // Each measured step's wall time once, in sample order, by host.
    let mut walls: HashMap<&str, Vec<f64>> = HashMap::new();
    let mut seen = HashSet::new();
    for s in samples {
        let Some(h) = host_of.get(&s.cell_id) else { continue };
        if seen.insert((s.cell_id, s.step_index, s.repetition)) {
            if let Some(w) = s.wall_s {
                walls.entry(h).or_default().push(w);
            }
        }
    }
    hosts
        .iter()
        .filter_map(|h| {
            let mine = cells_of.get(h.as_str()).map(Vec::as_slice).unwrap_or_default();
            let spans: Vec<(f64, f64)> = mine
                .iter()
                .filter_map(|c| Some((at(c.started.as_deref()?)?, at(c.finished.as_deref()?)?)))
                .filter(|(s, e)| e >= s)
                .collect();
            if spans.is_empty() {
                return None;
            }
            // fold, not sum: an empty f64 sum is -0.0, printed "-0.0 s measured (-0%)".
            let measured_s = walls.get(h.as_str()).into_iter().flatten().fold(0.0, |a, b| a + b);
            Some(HostTime { host: h.clone(), busy_s: union_len(spans), measured_s })
        })
        .collect()
}

/// "fast1 52.1 s busy: 31.0 s measured (60%), 21.1 s setup, teardown and between".
pub fn describe(t: &HostTime) -> String {
    let share = if t.busy_s > 0.0 { t.measured_s / t.busy_s * 100.0 } else { 0.0 };
    format!(
        "{} {:.1} s busy: {:.1} s measured ({share:.0}%), {:.1} s setup, teardown and between",
        t.host,
        t.busy_s,
        t.measured_s,
        t.outside_s()
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn overlapping_spans_count_once_and_gaps_not_at_all() {
        assert_eq!(union_len(vec![]), 0.0);
        assert_eq!(union_len(vec![(0.0, 10.0), (5.0, 12.0), (20.0, 25.0)]), 17.0);
        assert_eq!(union_len(vec![(20.0, 25.0), (0.0, 10.0), (2.0, 3.0)]), 15.0);
    }

    #[test]
    fn a_steps_time_is_counted_once_however_many_metrics_it_gave() {
        use crate::store::testing::{cell_row, sample_row};
        let cell = |id: i64, host: &str, from: &str, to: &str| CellRow {
            started: Some(from.into()),
            finished: Some(to.into()),
            ..cell_row(id, host)
        };
        let sample = |cell_id: i64, rep: i64, metric: &str, wall: f64| SampleRow {
            wall_s: Some(wall),
            ..sample_row(cell_id, rep, metric, 1.0)
        };
        let cells = [
            cell(1, "a", "2026-12-01T00:00:00Z", "2026-12-01T00:00:10Z"),
            cell(2, "a", "2026-12-01T00:00:05Z", "2026-12-01T00:00:20Z"),
            cell(3, "b", "2026-12-01T00:00:00Z", "2026-12-01T00:00:04Z"),
        ];
        let samples = [
            sample(1, 1, "throughput", 3.0),
            sample(1, 1, "time", 3.0),
            sample(1, 2, "throughput", 2.0),
            sample(2, 1, "throughput", 4.0),
            sample(3, 1, "throughput", 1.0),
        ];
        let hosts = ["a".to_string(), "b".into(), "c".into()];
        let t = per_host(&hosts, &cells, &samples);
        assert_eq!(t.len(), 2, "c ran nothing");
        assert_eq!((t[0].busy_s, t[0].measured_s, t[0].outside_s()), (20.0, 9.0, 11.0));
        assert_eq!((t[1].host.as_str(), t[1].busy_s, t[1].measured_s), ("b", 4.0, 1.0));
        assert_eq!(describe(&t[0]), "a 20.0 s busy: 9.0 s measured (45%), 11.0 s setup, teardown and between");
    }

    #[test]
    fn a_host_whose_cells_all_failed_measured_nothing_not_minus_nothing() {
        use crate::store::testing::cell_row;
        let cells = [CellRow {
            started: Some("2026-12-01T00:00:00Z".into()),
            finished: Some("2026-12-01T00:00:01Z".into()),
            ..cell_row(1, "hdd")
        }];
        let t = per_host(&["hdd".to_string()], &cells, &[]);
        assert_eq!(describe(&t[0]), "hdd 1.0 s busy: 0.0 s measured (0%), 1.0 s setup, teardown and between");
    }
}
