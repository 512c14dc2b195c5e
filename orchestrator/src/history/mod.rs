//! `benchrig history`: over the runs of one playbook (or a `--name` glob,
//! a time window), one series per host × play × cell parameters × step ×
//! metric with a point per run (mean, CI95, n); each series split where
//! its configuration changes (what `compare` calls "not comparable": the
//! split is shown, never read as a change); change points in each part by
//! Apache Otava's method (`crate::changepoint`); each change with its run,
//! magnitude and interval, p-value, direction against `better`, and what
//! else changed that night. Pure but for `load`: `select` picks the runs,
//! `series` builds the series, `analyze` finds the changes, `render` shows them
//! (a table, markdown, JSON), `html` as a page of charts (drawn by `trend`).

pub mod alerts;
pub mod analyze;
pub mod html;
pub mod render;
pub mod select;
pub mod series;
pub mod trend;

use crate::compare::RunData;
use crate::monitors::MetricKind;
use crate::store::{summarise, RunRecord, RunRow, SampleRow, Store, StoreError, SummaryRow};
use std::collections::{BTreeMap, BTreeSet};

/// One run of a history: what it is, its hosts and cells, and what it
/// measured as summaries (a point per cell, step and metric), never its
/// samples: a year of nights is read as a year of means.
pub struct HistoryRun {
    pub row: RunRow,
    pub record: RunRecord,
    /// Its hosts and cells (each cell's steps but its devices and fresh
    /// policy left out), and a row per monitor summary (its mean) for
    /// `compare::explain_step`; no `samples`. Empty after `load` (which
    /// keeps only configurations), but while `annotate` reads them, of the
    /// changed series' hosts only, for the runs around a change.
    pub data: RunData,
    /// The results' summaries made from its samples (`MetricKind::Benchmark`
    /// only; none for a run whose summaries are stored), until they are
    /// points of the series (`load` lets them go as it reads).
    pub summaries: Vec<SummaryRow>,
}

impl HistoryRun {
    /// A run with the summaries of its samples, made here the way a
    /// finished run stores them (none for a run whose summaries are
    /// stored: `load` read those in place, and `data` has no samples).
    fn new(row: RunRow, record: RunRecord, data: RunData) -> HistoryRun {
        let summaries = summarise(&data.samples);
        let monitors = summarise(&data.monitors).into_iter().map(monitor_row).collect();
        HistoryRun { row, record, data: RunData { samples: Vec::new(), monitors, ..data }, summaries }
    }
}

/// A monitor summary as the one sample `compare::explain_step` averages.
fn monitor_row(s: SummaryRow) -> SampleRow {
    SampleRow {
        cell_id: s.cell_id,
        step_index: s.step_index,
        step: s.step,
        workload: s.workload,
        repetition: 1,
        metric: s.metric,
        value: s.summary.mean,
        unit: s.unit,
        better: s.better,
        dev_read_bytes: None,
        dev_write_bytes: None,
        info: None,
        attempt: None,
        wall_s: None,
        kind: MetricKind::Monitor,
    }
}

/// The runs `select` picks, oldest first, and their series. Each run's
/// summaries become points as it is read, and of its hosts and cells only
/// their configurations are kept (`series::CellWords`), each distinct one
/// once: a year of nights is held as a year of points, no more.
/// `annotate` reads the details of the runs around the changes.
pub fn load(store: &Store, runs: &[RunRow]) -> Result<(Vec<HistoryRun>, Vec<series::Series>), StoreError> {
    let mut gathered = series::Gatherer::default();
    let mut out = Vec::with_capacity(runs.len());
    // The database's work and the decoding of its rows, a night's cells on
    // one connection and its results on another, each on a thread of its
    // own a few nights ahead, while this one gathers: a year takes about
    // the longest of the three (a PostgreSQL server works both at once).
    let other = store.another()?;
    std::thread::scope(|scope| {
        let (cells_tx, cells_rx) = std::sync::mpsc::sync_channel(4);
        let (results_tx, results_rx) = std::sync::mpsc::sync_channel(4);
        let cells_reader = scope.spawn(move || -> Result<(), StoreError> {
            let mut words = series::CellWords::default();
            for r in runs {
                let cells = read_cells(&other, r, &mut words)?;
                if cells_tx.send((cells, words.learned())).is_err() {
                    break;
                }
            }
            Ok(())
        });
        let results_reader = scope.spawn(move || -> Result<(), StoreError> {
            let mut words = series::ResultWords::default();
            for r in runs {
                let (run, results) = read_results(store, r, &mut words)?;
                if results_tx.send((run, results, words.learned())).is_err() {
                    break;
                }
            }
            Ok(())
        });
        let nights = cells_rx.into_iter().zip(results_rx);
        for (ri, ((cells, cell_words), (run, results, result_words))) in nights.enumerate() {
            gathered.learn(cell_words, result_words);
            gathered.add(ri, &cells, &results);
            out.push(run);
        }
        let cells = cells_reader.join().expect("the history's cells reader");
        results_reader.join().expect("the history's results reader").and(cells)
    })?;
    Ok((out, gathered.finish()))
}

/// One run's hosts' and cells' configurations, as `load` gathers them.
fn read_cells(store: &Store, r: &RunRow, words: &mut series::CellWords) -> Result<series::Cells, StoreError> {
    let mut cells = words.start_run();
    store.each_host_facts(r.id, |name, facts| words.host_facts(name, facts))?;
    store.each_cell_text(r.id, |c| words.cell(&mut cells, c))?;
    Ok(cells)
}

/// One run as `load` gathers it, with its stored summaries (results only)
/// read in place into numbers (`series::ResultWords`); for a run without
/// stored summaries, made from its samples. Its `data` is left empty.
fn read_results(
    store: &Store,
    r: &RunRow,
    words: &mut series::ResultWords,
) -> Result<(HistoryRun, series::Results), StoreError> {
    let mut results = series::Results::default();
    let stored = store.each_summary(r.id, MetricKind::Benchmark, |s| words.add(&mut results, s))?;
    let data = match stored {
        true => RunData::default(),
        false => RunData { samples: store.samples(r.id)?, ..RunData::default() },
    };
    // Summaries made here from the samples (none for a run that has them stored).
    let mut run = HistoryRun::new(r.clone(), store.run_record(r.id)?, data);
    words.add_rows(&mut results, &std::mem::take(&mut run.summaries));
    run.data = RunData::default();
    Ok((run, results))
}

/// Every change's notes (`analyze::annotate_change`), from the details of
/// the runs on either side of it (the changed series' hosts with their
/// facts, cells, a row per monitor summary: no other host's), read a
/// night at a time in the order of the changes' runs and let go when no
/// later change needs them.
pub fn annotate(store: &Store, runs: &mut [HistoryRun], all: &mut [analyze::Analysis]) -> Result<(), StoreError> {
    // (this run, the run before, analysis, change), in the order of the runs.
    let mut todo: Vec<(usize, usize, usize, usize)> = Vec::new();
    // A run → the hosts some change on either side of it is on.
    let mut hosts: BTreeMap<usize, BTreeSet<String>> = BTreeMap::new();
    for (ai, a) in all.iter().enumerate() {
        for (ci, c) in a.changes.iter().enumerate() {
            let (this, prev) = (a.series.points[c.at].run, a.series.points[c.at - 1].run);
            todo.push((this, prev, ai, ci));
            for i in [this, prev] {
                hosts.entry(i).or_default().insert(a.series.key.host.clone());
            }
        }
    }
    todo.sort_unstable();
    // The earliest run any change from the k-th on reads.
    let mut earliest = vec![usize::MAX; todo.len() + 1];
    for k in (0..todo.len()).rev() {
        earliest[k] = earliest[k + 1].min(todo[k].1.min(todo[k].0));
    }
    let mut loaded: BTreeSet<usize> = BTreeSet::new();
    for (k, &(this, prev, ai, ci)) in todo.iter().enumerate() {
        for i in [prev, this] {
            if loaded.insert(i) {
                runs[i].data = details(store, runs[i].row.id, &hosts[&i])?;
            }
        }
        let a = &mut all[ai];
        analyze::annotate_change(&runs[prev], &runs[this], &a.series.key, &mut a.changes[ci]);
        // What no later change reads goes.
        let gone: Vec<usize> = loaded.range(..earliest[k + 1]).copied().collect();
        for i in gone {
            runs[i].data = RunData::default();
            loaded.remove(&i);
        }
    }
    Ok(())
}

/// A run's details for the notes of changes on `hosts`: theirs only (a
/// year's defaults find changes on a few hosts a night, of a hundred).
fn details(store: &Store, id: i64, hosts: &BTreeSet<String>) -> Result<RunData, StoreError> {
    let hosts: Vec<&str> = hosts.iter().map(String::as_str).collect();
    let cells = store.cells_outline(id, Some(&hosts))?;
    let mut monitors = store.summaries_of(id, Some(MetricKind::Monitor), Some(&hosts))?;
    if monitors.is_empty() {
        // A run without stored summaries: made from its samples.
        let ids: BTreeSet<i64> = cells.iter().map(|c| c.id).collect();
        let samples: Vec<_> = store.monitor_samples(id)?.into_iter().filter(|s| ids.contains(&s.cell_id)).collect();
        monitors = summarise(&samples);
    }
    Ok(RunData {
        hosts: store.hosts_of(id, Some(&hosts))?,
        cells,
        samples: Vec::new(),
        monitors: monitors.into_iter().map(monitor_row).collect(),
    })
}

/// Runs made up for the tests: night i has one host `h` (with the kernel it names),
/// one cell and the given samples of metric `m` (higher is better).
#[cfg(test)]
pub(crate) fn made_up(nights: &[(&str, Vec<f64>)]) -> Vec<HistoryRun> {
    use crate::status::{HostStatus, RunStatus};
    use crate::store::{testing, CellRow, HostRow};
    nights
        .iter()
        .enumerate()
        .map(|(i, (kernel, values))| {
            let id = i as i64 + 1;
            let row = RunRow {
                id,
                name: Some(format!("night-{id}")),
                playbook: "pb.yml".into(),
                started: format!("2026-11-{:02}T02:00:00Z", id),
                finished: None,
                status: RunStatus::Ok,
                hosts: 1,
                cells: 1,
                pruned: None,
                baseline: None,
            };
            let record = RunRecord {
                id,
                name: row.name.clone(),
                playbook: "pb.yml".into(),
                playbook_text: "- hosts: all".into(),
                inventory: "inv".into(),
                limit: None,
                extra_vars: serde_json::json!({}),
                options: None,
                status: RunStatus::Ok,
                benchrig_version: "1.0".into(),
                imported: None,
            };
            let facts =
                serde_json::json!({"kernel": {"release": kernel}, "tools": [{"name": "fio", "version": "3.33"}]});
            let hosts = vec![HostRow { name: "h".into(), status: HostStatus::Ok, reason: None, facts: Some(facts) }];
            let cell = CellRow { repeat: values.len() as i64, ..testing::cell_row(id, "h") };
            let samples =
                values.iter().enumerate().map(|(r, v)| testing::sample_row(id, r as i64 + 1, "m", *v)).collect();
            HistoryRun::new(row, record, RunData { hosts, cells: vec![cell], samples, monitors: Vec::new() })
        })
        .collect()
}
