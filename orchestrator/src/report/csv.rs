//! `report --format csv`: one row per sample with everything that identifies it,
//! for a spreadsheet, pandas or R.

use crate::human::describe_params;
use crate::store::{Store, StoreError};

pub fn build(store: &Store, run: i64) -> Result<String, StoreError> {
    let cells = store.cells(run)?;
    let mut w = csv::Writer::from_writer(Vec::new());
    let header = [
        "run",
        "host",
        "play",
        "cell",
        "params",
        "status",
        "step",
        "workload",
        "repetition",
        "metric",
        "value",
        "unit",
        "better",
        "dev_read_bytes",
        "dev_write_bytes",
        // Which attempt at the run measured it (1, then one per `--resume`).
        "attempt",
    ];
    let row_err = |e: csv::Error| StoreError::Export(e.to_string());
    w.write_record(header).map_err(row_err)?;
    // A sample's cell by id, not by a scan of the cells for every sample.
    let cell_of: std::collections::HashMap<i64, _> = cells.iter().rev().map(|c| (c.id, c)).collect();
    for s in store.samples(run)? {
        let Some(&c) = cell_of.get(&s.cell_id) else { continue };
        let opt = |v: Option<i64>| v.map(|v| v.to_string()).unwrap_or_default();
        w.write_record([
            run.to_string(),
            c.host.clone(),
            c.play.clone(),
            describe_params(&c.params),
            c.params.to_string(),
            c.status.to_string(),
            s.step.clone(),
            s.workload.clone(),
            s.repetition.to_string(),
            s.metric.clone(),
            s.value.to_string(),
            s.unit.clone(),
            s.better.as_str().to_string(),
            opt(s.dev_read_bytes),
            opt(s.dev_write_bytes),
            opt(s.attempt),
        ])
        .map_err(row_err)?;
    }
    let bytes = w.into_inner().map_err(|e| StoreError::Export(e.to_string()))?;
    Ok(String::from_utf8_lossy(&bytes).into_owned())
}
