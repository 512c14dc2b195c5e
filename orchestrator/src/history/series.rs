//! The series of a history: per host × play × cell parameters × step ×
//! metric, a point per run that measured it (mean, CI95, n of its samples),
//! oldest first, and the splits: the points at which the configuration
//! differs from the point before (`compare::config_difference`: kernel,
//! limits, mkfs, device, system state such as the governor or a device's
//! I/O scheduler), where the series is cut in parts analysed apart.

use super::HistoryRun;
use crate::compare::{config_difference, RunData};
use crate::human::describe_params;
use crate::stats::Summary;
use crate::store::{CellRow, SummaryRow};
use std::collections::HashMap;

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
/// what history reads of its summary (a year of points is held at once:
/// no more than that).
#[derive(Clone, Debug)]
pub struct Point {
    pub run: usize,
    pub cell: i64,
    pub summary: PointSummary,
}

/// Of a run's summary of a metric: n, mean, sd and its CI95.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct PointSummary {
    pub n: usize,
    pub mean: f64,
    pub sd: f64,
    pub ci95: Option<(f64, f64)>,
}

impl From<&Summary> for PointSummary {
    fn from(s: &Summary) -> Self {
        PointSummary { n: s.n, mean: s.mean, sd: s.sd, ci95: s.ci95 }
    }
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

/// One series while it is gathered.
struct Gathered {
    unit: String,
    better: String,
    points: Vec<Point>,
    splits: Vec<Split>,
}

/// The series, gathered run by run as the runs are read (`history::load`):
/// a run's summaries become points, and a point's configuration is held
/// against the point before in its series as it comes (the split), so that
/// no more than the runs that are some series' newest point are kept
/// (their hosts' facts and cells: two runs, as a lab's nights come).
#[derive(Default)]
pub struct Gatherer {
    /// In the order first measured.
    series: Vec<(SeriesKey, Gathered)>,
    /// A series by its key's words as numbers (`words`): looked up for
    /// every summary of a year without making its key's five strings.
    index: HashMap<[u32; 5], usize>,
    words: HashMap<String, u32>,
    /// Run → its data and how many series have their newest point in it.
    kept: HashMap<usize, (RunData, usize)>,
    /// Every metric of a cell asks about the same pair of cells: once a pair.
    differences: HashMap<(usize, i64, usize, i64), Option<String>>,
}

impl Gatherer {
    /// Run `ri`'s summaries (results only), on its `data`'s cells and hosts.
    pub fn add(&mut self, ri: usize, data: RunData, summaries: &[SummaryRow]) {
        // A summary's cell by id, with its host, play and parameters as numbers.
        let cells: HashMap<i64, (&CellRow, [u32; 3])> = data
            .cells
            .iter()
            .rev()
            .map(|c| {
                let described = describe_params(&c.params);
                (c.id, (c, [self.word(&c.host), self.word(&c.play), self.word(&described)]))
            })
            .collect();
        let mut newest_here = 0;
        for s in summaries {
            let Some(&(c, [host, play, cell])) = cells.get(&s.cell_id) else { continue };
            let id = [host, play, cell, self.word(&s.step), self.word(&s.metric)];
            let at = match self.index.get(&id) {
                Some(&at) => at,
                None => {
                    let key = SeriesKey {
                        host: c.host.clone(),
                        play: c.play.clone(),
                        cell: describe_params(&c.params),
                        step: s.step.clone(),
                        metric: s.metric.clone(),
                    };
                    let g = Gathered {
                        unit: s.unit.clone(),
                        better: s.better.clone(),
                        points: Vec::new(),
                        splits: Vec::new(),
                    };
                    self.series.push((key, g));
                    self.index.insert(id, self.series.len() - 1);
                    self.series.len() - 1
                }
            };
            let g = &mut self.series[at].1;
            // One point a run: a second cell of the same parameters (which
            // a plan does not make) is not a second night.
            if let Some(last) = g.points.last().filter(|p| p.run != ri) {
                let (was, was_cell) = (last.run, last.cell);
                let before = &self.kept[&was].0;
                let why = self
                    .differences
                    .entry((was, was_cell, ri, c.id))
                    .or_insert_with(|| config_difference(before, was_cell, &data, c.id))
                    .clone();
                if let Some(why) = why {
                    g.splits.push(Split { at: g.points.len(), why });
                }
                let held = self.kept.get_mut(&was).expect("a series' newest run is kept");
                held.1 -= 1;
                if held.1 == 0 {
                    self.kept.remove(&was);
                }
            } else if g.points.last().is_some() {
                continue;
            }
            g.points.push(Point { run: ri, cell: c.id, summary: PointSummary::from(&s.summary) });
            newest_here += 1;
        }
        drop(cells);
        if newest_here > 0 {
            self.kept.insert(ri, (data, newest_here));
        }
    }

    /// A word's number, the same for the same word.
    fn word(&mut self, w: &str) -> u32 {
        if let Some(&n) = self.words.get(w) {
            return n;
        }
        let n = self.words.len() as u32;
        self.words.insert(w.to_string(), n);
        n
    }

    /// Every series, in the order first measured, cut where its
    /// configuration changed.
    pub fn finish(self) -> Vec<Series> {
        let series = self.series.into_iter();
        series
            .map(|(key, g)| Series { key, unit: g.unit, better: g.better, points: g.points, splits: g.splits })
            .collect()
    }
}

/// Every series over `runs` (oldest first) from their own summaries.
pub fn build(runs: &[HistoryRun]) -> Vec<Series> {
    let mut g = Gatherer::default();
    for (ri, run) in runs.iter().enumerate() {
        g.add(ri, run.data.clone(), &run.summaries);
    }
    g.finish()
}
