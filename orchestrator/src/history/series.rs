//! The series of a history: per host × play × cell parameters × step ×
//! metric, a point per run that measured it (mean, CI95, n of its samples),
//! oldest first, and the splits: the points at which the configuration
//! differs from the point before (`compare::config_difference`: kernel,
//! limits, mkfs, device, system state such as the governor or a device's
//! I/O scheduler), where the series is cut in parts analysed apart.

use super::HistoryRun;
use crate::compare::config_difference;
use crate::human::describe_params;
use crate::stats::Summary;
use indexmap::IndexMap;

/// What a series follows.
#[derive(Clone, Debug, PartialEq, Eq, Hash, serde::Serialize)]
pub struct SeriesKey {
    pub host: String,
    pub play: String,
    pub cell: String,
    pub step: String,
    pub metric: String,
}

impl SeriesKey {
    pub fn describe(&self) -> String {
        format!("{} · {} · {} · {} {}", self.host, self.play, self.cell, self.step, self.metric)
    }
}

/// One run's point: its position among the history's runs, its cell, and
/// the summary of its samples.
#[derive(Clone, Debug)]
pub struct Point {
    pub run: usize,
    pub cell: i64,
    pub summary: Summary,
}

/// Where a series is cut: the point whose configuration differs from the
/// one before, and how.
#[derive(Clone, Debug, PartialEq, serde::Serialize)]
pub struct Split {
    /// Index into `points`: the first point of the new part.
    pub at: usize,
    pub why: String,
}

#[derive(Clone, Debug)]
pub struct Series {
    pub key: SeriesKey,
    pub unit: String,
    /// `higher` or `lower`, as the workload said.
    pub better: String,
    pub points: Vec<Point>,
    pub splits: Vec<Split>,
}

impl Series {
    /// The parts between splits, as ranges of `points`.
    pub fn parts(&self) -> Vec<std::ops::Range<usize>> {
        let mut cuts: Vec<usize> = std::iter::once(0).chain(self.splits.iter().map(|s| s.at)).collect();
        cuts.push(self.points.len());
        cuts.windows(2).filter(|w| w[1] > w[0]).map(|w| w[0]..w[1]).collect()
    }
}

/// One series' samples while they are gathered: unit, `better`, and per
/// run (its position, its cell) the values.
type Gathered = (String, String, Vec<(usize, i64, Vec<f64>)>);

/// Every series over `runs` (oldest first), in the order first measured.
pub fn build(runs: &[HistoryRun]) -> Vec<Series> {
    let mut out: IndexMap<SeriesKey, Gathered> = IndexMap::new();
    for (ri, run) in runs.iter().enumerate() {
        // A sample's cell by id, not by a scan of the cells for every sample.
        let cell_of: std::collections::HashMap<i64, _> = run.data.cells.iter().rev().map(|c| (c.id, c)).collect();
        for s in &run.data.samples {
            let Some(&c) = cell_of.get(&s.cell_id) else { continue };
            let key = SeriesKey {
                host: c.host.clone(),
                play: c.play.clone(),
                cell: describe_params(&c.params),
                step: s.step.clone(),
                metric: s.metric.clone(),
            };
            let entry = out.entry(key).or_insert_with(|| (s.unit.clone(), s.better.clone(), Vec::new()));
            match entry.2.last_mut() {
                Some((r, _, values)) if *r == ri => values.push(s.value),
                _ => entry.2.push((ri, c.id, vec![s.value])),
            }
        }
    }
    out.into_iter()
        .map(|(key, (unit, better, per_run))| {
            let points: Vec<Point> = per_run
                .into_iter()
                .filter_map(|(run, cell, v)| Some(Point { run, cell, summary: Summary::of(&v)? }))
                .collect();
            let splits = points
                .windows(2)
                .enumerate()
                .filter_map(|(i, w)| {
                    let why = config_difference(&runs[w[0].run].data, w[0].cell, &runs[w[1].run].data, w[1].cell)?;
                    Some(Split { at: i + 1, why })
                })
                .collect();
            Series { key, unit, better, points, splits }
        })
        .collect()
}
