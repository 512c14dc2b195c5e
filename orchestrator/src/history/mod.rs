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

pub mod analyze;
pub mod html;
pub mod render;
pub mod select;
pub mod series;
pub mod trend;

use crate::compare::RunData;
use crate::store::{RunRecord, RunRow, Store, StoreError};

/// One run of a history: what it is, and what it measured.
pub struct HistoryRun {
    pub row: RunRow,
    pub record: RunRecord,
    pub data: RunData,
}

/// The runs `select` picks, oldest first, with everything stored about them.
pub fn load(store: &Store, runs: &[RunRow]) -> Result<Vec<HistoryRun>, StoreError> {
    runs.iter()
        .map(|r| {
            let data = RunData {
                hosts: store.hosts(r.id)?,
                cells: store.cells(r.id)?,
                samples: store.samples(r.id)?,
                monitors: store.monitor_samples(r.id)?,
            };
            Ok(HistoryRun { row: r.clone(), record: store.run_record(r.id)?, data })
        })
        .collect()
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
            HistoryRun { row, record, data: RunData { hosts, cells: vec![cell], samples, monitors: Vec::new() } }
        })
        .collect()
}
