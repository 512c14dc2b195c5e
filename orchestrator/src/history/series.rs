//! The series of a history: per host × play × cell parameters × step ×
//! metric, a point per run that measured it (mean, CI95, n of its samples),
//! oldest first, and the splits: the points at which the configuration
//! differs from the point before (`configuration::difference`: kernel,
//! limits, mkfs, device, system state such as the governor or a device's
//! I/O scheduler), where the series is cut in parts analysed apart.

use super::HistoryRun;
use crate::configuration::{self, CellConfig, HostConfig};
use crate::human::describe_params;
use crate::stats::Summary;
use crate::store::{outline_of, CellText, SummaryRef, SummaryRow};
use benchrig_wire::steps::Better;
use serde_json::Value as Json;
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
    /// As the workload said.
    pub better: Better,
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
    better: Better,
    points: Vec<Point>,
    splits: Vec<Split>,
    /// Its newest point's configuration.
    config: Config,
}

/// A cell's configuration by number: its host's (`HostConfig`) and its
/// own (`CellConfig`), as `CellWords` numbered them.
type Config = (u32, u32);

/// Strings as numbers, the same number for the same string: a year of
/// summaries names a few hundred hosts, steps and metrics a million
/// times. `history::load` numbers them on its reader threads as each
/// night's rows are read (borrowed: no string is copied for a word known
/// already), and hands the gatherer the words it has not seen yet.
#[derive(Default)]
struct Interner {
    ids: HashMap<String, u32>,
    names: Vec<String>,
    handed: usize,
}

impl Interner {
    fn id(&mut self, w: &str) -> u32 {
        if let Some(&n) = self.ids.get(w) {
            return n;
        }
        let n = self.names.len() as u32;
        self.ids.insert(w.to_string(), n);
        self.names.push(w.to_string());
        n
    }

    /// The words numbered since the last call, in their numbers' order.
    fn new_words(&mut self) -> Vec<String> {
        let new = self.names[self.handed..].to_vec();
        self.handed = self.names.len();
        new
    }
}

/// A run's hosts and cells as numbers: host, play and parameters words,
/// and configurations. A host's facts and a cell's setup are read (parsed,
/// made a `HostConfig` or `CellConfig`) only when their text is not the
/// night before's, and numbered anew only when what they say differs.
pub struct CellWords {
    words: Interner,
    /// A cell's key (its play and parameters, `plan::Cell::key`) → the
    /// number of its parameters described.
    described: HashMap<String, u32>,
    /// Host configurations by number (0: no facts), and how many are handed.
    hosts: Vec<HostConfig>,
    hosts_handed: usize,
    /// A host (its word) → its facts' text the last time, their number.
    host_seen: HashMap<u32, (String, u32)>,
    /// A host's number in the run being read (`host_facts`).
    run_hosts: HashMap<u32, u32>,
    cells: Vec<CellConfig>,
    cells_handed: usize,
    /// A cell (host and key words) → its info and outline texts the last
    /// time, their number.
    cell_seen: HashMap<(u32, u32), (String, String, u32)>,
}

impl Default for CellWords {
    fn default() -> CellWords {
        CellWords {
            words: Interner::default(),
            described: HashMap::default(),
            hosts: vec![HostConfig::default()],
            hosts_handed: 0,
            host_seen: HashMap::default(),
            run_hosts: HashMap::default(),
            cells: Vec::new(),
            cells_handed: 0,
            cell_seen: HashMap::default(),
        }
    }
}

/// What `CellWords` numbered since the gatherer last learned.
pub struct LearnedCells {
    words: Vec<String>,
    hosts: Vec<HostConfig>,
    cells: Vec<CellConfig>,
}

impl CellWords {
    /// The words and configurations numbered since the last call.
    pub fn learned(&mut self) -> LearnedCells {
        let out = LearnedCells {
            words: self.words.new_words(),
            hosts: self.hosts[self.hosts_handed..].to_vec(),
            cells: self.cells[self.cells_handed..].to_vec(),
        };
        (self.hosts_handed, self.cells_handed) = (self.hosts.len(), self.cells.len());
        out
    }

    /// A new run: its hosts' facts come first (`host_facts`), then its
    /// cells (`cell`).
    pub fn start_run(&mut self) -> Cells {
        self.run_hosts.clear();
        Cells::default()
    }

    /// One host's facts in the run being read.
    pub fn host_facts(&mut self, name: &str, facts: Option<&str>) {
        let host = self.words.id(name);
        let Some(text) = facts else {
            self.run_hosts.insert(host, 0);
            return;
        };
        let n = match self.host_seen.get(&host) {
            Some((seen, n)) if seen == text => *n,
            last => {
                let config = HostConfig::of(serde_json::from_str::<Json>(text).ok().as_ref());
                let last = last.map(|(_, n)| *n);
                let n = match last.filter(|&n| self.hosts[n as usize] == config) {
                    Some(n) => n,
                    None => {
                        self.hosts.push(config);
                        self.hosts.len() as u32 - 1
                    }
                };
                self.host_seen.insert(host, (text.to_string(), n));
                n
            }
        };
        self.run_hosts.insert(host, n);
    }

    /// One cell of the run being read: its words and configuration.
    pub fn cell(&mut self, m: &mut Cells, c: CellText<'_>) {
        let described = match self.described.get(c.key) {
            Some(&w) => w,
            None => {
                let params = serde_json::from_str::<Json>(c.params).unwrap_or(Json::Null);
                let w = self.words.id(&describe_params(&params));
                self.described.insert(c.key.to_string(), w);
                w
            }
        };
        let (host, key) = (self.words.id(c.host), self.words.id(c.key));
        let (info, outline) = (c.info.unwrap_or(""), c.outline.unwrap_or(""));
        let config = match self.cell_seen.get(&(host, key)) {
            Some((i, o, n)) if i == info && o == outline => *n,
            last => {
                let parsed = serde_json::from_str::<Json>(info).ok();
                let config = CellConfig::from_parts(c.host, parsed.as_ref(), outline_of(outline).as_ref());
                let last = last.map(|(_, _, n)| *n);
                let n = match last.filter(|&n| self.cells[n as usize] == config) {
                    Some(n) => n,
                    None => {
                        self.cells.push(config);
                        self.cells.len() as u32 - 1
                    }
                };
                self.cell_seen.insert((host, key), (info.to_string(), outline.to_string(), n));
                n
            }
        };
        let host_config = self.run_hosts.get(&host).copied().unwrap_or(0);
        m.cells.insert(c.id, ([host, self.words.id(c.play), described], (host_config, config)));
    }
}

/// A run's results as numbers: step, metric, unit and better words, and
/// the point each summary makes.
#[derive(Default)]
pub struct ResultWords {
    words: Interner,
}

impl ResultWords {
    /// The words numbered since the last call.
    pub fn learned(&mut self) -> Vec<String> {
        self.words.new_words()
    }

    /// One result's summary, onto its run's.
    pub fn add(&mut self, m: &mut Results, s: SummaryRef<'_>) {
        let w = &mut self.words;
        m.results.push(Measure {
            cell: s.cell_id,
            words: [w.id(s.step), w.id(s.metric), w.id(s.unit)],
            better: s.better,
            point: PointSummary { n: s.n, mean: s.mean, sd: s.sd, ci95: s.ci95 },
        });
    }

    /// Summaries made in memory (a run stored before they were kept).
    pub fn add_rows(&mut self, m: &mut Results, rows: &[SummaryRow]) {
        for r in rows {
            let s = &r.summary;
            let (step, metric, unit, better) = (&r.step, &r.metric, &r.unit, r.better);
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

/// One run's cells as numbers (`CellWords`): cell id → host, play,
/// parameters; configuration.
#[derive(Default)]
pub struct Cells {
    cells: HashMap<i64, ([u32; 3], Config)>,
}

/// One run's results as numbers (`ResultWords`): a measure per summary.
#[derive(Default)]
pub struct Results {
    results: Vec<Measure>,
}

struct Measure {
    cell: i64,
    /// Step, metric, unit.
    words: [u32; 3],
    better: Better,
    point: PointSummary,
}

/// The series, gathered run by run as the runs are read (`history::load`):
/// a run's summaries become points, and a point's configuration is held
/// against the point before in its series as it comes (the split); only
/// configurations are kept, by number, never a run's hosts or cells.
#[derive(Default)]
pub struct Gatherer {
    /// In the order first measured.
    series: Vec<(SeriesKey, Gathered)>,
    /// A series by its key's words (host, play, cell, step, metric).
    index: HashMap<[u32; 5], usize>,
    /// The words' texts, by number (`learn`): the cells' and the results'.
    cell_names: Vec<String>,
    result_names: Vec<String>,
    /// The configurations, by number (`learn`).
    hosts: Vec<HostConfig>,
    cells: Vec<CellConfig>,
    /// Every metric of a cell asks about the same pair: once a pair.
    differences: HashMap<(Config, Config), Option<String>>,
}

impl Gatherer {
    /// What `CellWords` and `ResultWords` numbered since the last call.
    pub fn learn(&mut self, cells: LearnedCells, results: Vec<String>) {
        self.cell_names.extend(cells.words);
        self.hosts.extend(cells.hosts);
        self.cells.extend(cells.cells);
        self.result_names.extend(results);
    }

    /// Run `ri`'s results, on its cells.
    pub fn add(&mut self, ri: usize, cells: &Cells, results: &Results) {
        for r in &results.results {
            let Some(&([host, play, cell], config)) = cells.cells.get(&r.cell) else { continue };
            let [step, metric, unit] = r.words;
            let id = [host, play, cell, step, metric];
            let at = match self.index.get(&id) {
                Some(&at) => at,
                None => {
                    let of_cell = |w: u32| self.cell_names[w as usize].clone();
                    let of_result = |w: u32| self.result_names[w as usize].clone();
                    let key = SeriesKey {
                        host: of_cell(host),
                        play: of_cell(play),
                        cell: of_cell(cell),
                        step: of_result(step),
                        metric: of_result(metric),
                    };
                    let g = Gathered {
                        unit: of_result(unit),
                        better: r.better,
                        points: Vec::new(),
                        splits: Vec::new(),
                        config,
                    };
                    self.series.push((key, g));
                    self.index.insert(id, self.series.len() - 1);
                    self.series.len() - 1
                }
            };
            let g = &mut self.series[at].1;
            // One point a run: a second cell of the same parameters (which
            // a plan does not make) is not a second night.
            if g.points.last().is_some_and(|p| p.run == ri) {
                continue;
            }
            if !g.points.is_empty() && g.config != config {
                let (hosts, cells) = (&self.hosts, &self.cells);
                let of = |(h, c): Config| (&hosts[h as usize], &cells[c as usize]);
                let why = self
                    .differences
                    .entry((g.config, config))
                    .or_insert_with(|| configuration::difference(of(g.config), of(config)))
                    .clone();
                if let Some(why) = why {
                    g.splits.push(Split { at: g.points.len(), why });
                }
            }
            g.config = config;
            g.points.push(Point { run: ri, cell: r.cell, summary: r.point });
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
    let (mut cell_words, mut result_words, mut g) = (CellWords::default(), ResultWords::default(), Gatherer::default());
    let text = |j: Option<&Json>| j.map(Json::to_string);
    for (ri, run) in runs.iter().enumerate() {
        let mut cells = cell_words.start_run();
        for h in &run.data.hosts {
            cell_words.host_facts(&h.name, text(h.facts.as_ref()).as_deref());
        }
        for c in &run.data.cells {
            let (params, info, outline) = (c.params.to_string(), text(c.info.as_ref()), text(c.steps.as_ref()));
            let (info, outline) = (info.as_deref(), outline.as_deref());
            let cell = CellText { id: c.id, host: &c.host, play: &c.play, key: &c.key, params: &params, info, outline };
            cell_words.cell(&mut cells, cell);
        }
        let mut results = Results::default();
        result_words.add_rows(&mut results, &run.summaries);
        g.learn(cell_words.learned(), result_words.learned());
        g.add(ri, &cells, &results);
    }
    g.finish()
}

#[cfg(test)]
mod tests {
    use super::super::made_up;
    use super::*;

    #[test]
    fn facts_that_say_the_same_in_other_words_split_nothing_and_a_new_kernel_splits() {
        let mut runs = made_up(&[("6.1", vec![1.0]), ("6.1", vec![1.0]), ("6.1", vec![1.0]), ("6.6", vec![1.0])]);
        // Night 2's facts are another text (a field history does not read)
        // with the same configuration.
        runs[1].data.hosts[0].facts.as_mut().unwrap()["uptime_s"] = 12345.into();
        let series = build(&runs);
        assert_eq!(series.len(), 1);
        assert_eq!(series[0].splits, [Split { at: 3, why: "kernel differs: 6.1 → 6.6".into() }]);
        let mut words = CellWords::default();
        for r in &runs {
            words.start_run();
            let facts = r.data.hosts[0].facts.as_ref().map(|f| f.to_string());
            words.host_facts("h", facts.as_deref());
        }
        assert_eq!(words.hosts.len(), 3, "none, 6.1 (once, in two texts), 6.6");
    }
}
