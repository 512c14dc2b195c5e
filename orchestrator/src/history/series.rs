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
use crate::store::{CellRow, SummaryRef, SummaryRow};
/// The gatherer's maps are looked up for every summary of a year (4
/// million times): foldhash, not SipHash (no key here is an attacker's).
type HashMap<K, V> = std::collections::HashMap<K, V, foldhash::fast::RandomState>;

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

/// Strings as numbers, the same number for the same string: a year of
/// summaries names a few hundred hosts, steps and metrics a million
/// times. `history::load` numbers them on its reader thread, as each
/// night's rows are read (borrowed: no string is copied for a word known
/// already), and hands the gatherer the words it has not seen yet.
#[derive(Default)]
pub struct Words {
    ids: HashMap<String, u32>,
    names: Vec<String>,
    handed: usize,
    /// A cell's key (its play and parameters, `planner::Cell::key`) → the
    /// number of its parameters described.
    described: HashMap<String, u32>,
}

impl Words {
    pub fn id(&mut self, w: &str) -> u32 {
        if let Some(&n) = self.ids.get(w) {
            return n;
        }
        let n = self.names.len() as u32;
        self.ids.insert(w.to_string(), n);
        self.names.push(w.to_string());
        n
    }

    /// The words numbered since the last call, in their numbers' order.
    pub fn new_words(&mut self) -> Vec<String> {
        let new = self.names[self.handed..].to_vec();
        self.handed = self.names.len();
        new
    }

    /// A run's cells as numbers: host, play, parameters described.
    pub fn cells(&mut self, cells: &[CellRow]) -> Measured {
        let mut m = Measured::default();
        for c in cells.iter().rev() {
            let described = match self.described.get(&c.key) {
                Some(&w) => w,
                None => {
                    let w = self.id(&describe_params(&c.params));
                    self.described.insert(c.key.clone(), w);
                    w
                }
            };
            m.cells.insert(c.id, [self.id(&c.host), self.id(&c.play), described]);
        }
        m
    }

    /// One result's summary, onto its run's.
    pub fn add(&mut self, m: &mut Measured, s: SummaryRef<'_>) {
        m.results.push(Measure {
            cell: s.cell_id,
            words: [self.id(s.step), self.id(s.metric), self.id(s.unit), self.id(s.better)],
            point: PointSummary { n: s.n, mean: s.mean, sd: s.sd, ci95: s.ci95 },
        });
    }

    /// Summaries made in memory (a run stored before they were kept).
    pub fn add_rows(&mut self, m: &mut Measured, rows: &[SummaryRow]) {
        for r in rows {
            let s = &r.summary;
            let (step, metric, unit, better) = (&r.step, &r.metric, &r.unit, &r.better);
            let one = SummaryRef {
                cell_id: r.cell_id,
                step,
                metric,
                unit,
                better,
                n: s.n,
                mean: s.mean,
                sd: s.sd,
                ci95: s.ci95,
            };
            self.add(m, one);
        }
    }
}

/// One run's results as numbers (`Words`): its cells' words and a
/// measure per summary.
#[derive(Default)]
pub struct Measured {
    /// Cell id → host, play, parameters.
    cells: HashMap<i64, [u32; 3]>,
    results: Vec<Measure>,
}

struct Measure {
    cell: i64,
    /// Step, metric, unit, better.
    words: [u32; 4],
    point: PointSummary,
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
    /// A series by its key's words (host, play, cell, step, metric).
    index: HashMap<[u32; 5], usize>,
    /// The words' texts, by number (`learn`).
    names: Vec<String>,
    /// Run → its data and how many series have their newest point in it.
    kept: HashMap<usize, (RunData, usize)>,
    /// Every metric of a cell asks about the same pair of cells: once a pair.
    differences: HashMap<(usize, i64, usize, i64), Option<String>>,
}

impl Gatherer {
    /// The words `Words` numbered since the last call (`Words::new_words`).
    pub fn learn(&mut self, words: Vec<String>) {
        self.names.extend(words);
    }

    /// Run `ri`'s results (`m`), on its `data`'s cells and hosts.
    pub fn add(&mut self, ri: usize, data: RunData, m: &Measured) {
        let mut newest_here = 0;
        for r in &m.results {
            let Some(&[host, play, cell]) = m.cells.get(&r.cell) else { continue };
            let [step, metric, unit, better] = r.words;
            let id = [host, play, cell, step, metric];
            let at = match self.index.get(&id) {
                Some(&at) => at,
                None => {
                    let name = |w: u32| self.names[w as usize].clone();
                    let key = SeriesKey {
                        host: name(host),
                        play: name(play),
                        cell: name(cell),
                        step: name(step),
                        metric: name(metric),
                    };
                    let g = Gathered { unit: name(unit), better: name(better), points: Vec::new(), splits: Vec::new() };
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
                    .entry((was, was_cell, ri, r.cell))
                    .or_insert_with(|| config_difference(before, was_cell, &data, r.cell))
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
            g.points.push(Point { run: ri, cell: r.cell, summary: r.point });
            newest_here += 1;
        }
        if newest_here > 0 {
            self.kept.insert(ri, (data, newest_here));
        }
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
    let (mut words, mut g) = (Words::default(), Gatherer::default());
    for (ri, run) in runs.iter().enumerate() {
        let mut m = words.cells(&run.data.cells);
        words.add_rows(&mut m, &run.summaries);
        g.learn(words.new_words());
        g.add(ri, run.data.clone(), &m);
    }
    g.finish()
}
