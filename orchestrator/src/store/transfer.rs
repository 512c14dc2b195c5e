//! `benchrig export RUN` and `benchrig import FILE`: a run with everything
//! stored about it (hosts and their facts, cells, every sample) as one JSON
//! document (with its attempts and monitor series), so a lab's runners can merge their results into one database.
//!
//! Rows travel as column → value maps, so a column added by a later
//! migration travels too; ids are renumbered on import.

use super::db::Db;
use super::schema::PG_ONLY_COLUMNS;
use super::sql::Sql;
use super::value::Val;
use super::{Store, StoreError};
use crate::status::{CellStatus, HostStatus, RunStatus};
use serde_json::{json, Map, Value as Json};

/// The format's version; `import` refuses one it does not know.
const FORMAT: i64 = 1;

type Row = Map<String, Json>;

/// `table`'s rows that `sql` selects, as column → value maps, without the
/// columns only one dialect has (PostgreSQL's `hosts.seq`).
fn rows(db: &mut Db, table: &str, sql: &str, id: i64) -> Result<Vec<Row>, StoreError> {
    let (names, rows) = db.query_named(sql, &[id.into()])?;
    let local = |name: &str| PG_ONLY_COLUMNS.contains(&(table, name));
    Ok(rows
        .into_iter()
        .map(|r| names.iter().zip(r.0).filter(|(n, _)| !local(n)).map(|(n, v)| (n.clone(), Json::from(v))).collect())
        .collect())
}

/// Insert a row; returns the new id for tables that have one.
fn insert(db: &mut Db, table: &str, row: &Row) -> Result<Option<i64>, StoreError> {
    let cols: Vec<&String> = row.keys().filter(|k| *k != "id").collect();
    let values: Vec<Val> = cols.iter().map(|c| Val::from_json(&row[*c])).collect();
    let names: Vec<&str> = cols.iter().map(|c| c.as_str()).collect();
    let marks: Vec<String> = (1..=cols.len()).map(|i| format!("?{i}")).collect();
    let sql = format!("INSERT INTO {table} ({}) VALUES ({})", names.join(", "), marks.join(", "));
    if row.contains_key("id") {
        db.insert(&sql, &values).map(Some)
    } else {
        db.execute(&sql, &values).map(|_| None)
    }
}

/// Whether every row's status is a word this benchrig reads back: an import
/// must not plant a row that would make the store unreadable.
fn statuses_known(run: &Row, hosts: &[Json], cells: &[Json], attempts: &[Json]) -> Result<(), String> {
    fn known<S: std::str::FromStr>(what: &str, row: &Json) -> Result<(), String> {
        let word = row["status"].as_str().unwrap_or_default();
        word.parse::<S>().map(|_| ()).map_err(|_| format!("{what} status `{word}` is none this benchrig knows"))
    }
    known::<RunStatus>("the run's", &Json::Object(run.clone()))?;
    hosts.iter().try_for_each(|h| known::<HostStatus>("a host's", h))?;
    cells.iter().try_for_each(|c| known::<CellStatus>("a cell's", c))?;
    attempts.iter().try_for_each(|a| known::<RunStatus>("an attempt's", a))
}

impl Store {
    pub fn export_run(&self, run: i64) -> Result<Json, StoreError> {
        let mut db = self.db();
        let db = &mut *db;
        let run_row = rows(db, "runs", "SELECT * FROM runs WHERE id = ?1", run)?;
        let Some(run_row) = run_row.into_iter().next() else { return Err(StoreError::NoSuchRun(run.to_string())) };
        let order = db.hosts_order();
        Ok(json!({
            "benchrig_export": FORMAT,
            "run": run_row,
            "hosts": rows(db, "hosts", &format!("SELECT * FROM hosts WHERE run_id = ?1 ORDER BY {order}"), run)?,
            "cells": rows(db, "cells", "SELECT * FROM cells WHERE run_id = ?1 ORDER BY id", run)?,
            "samples": rows(db, "samples", "SELECT s.* FROM samples s JOIN cells c ON c.id = s.cell_id WHERE c.run_id = ?1 ORDER BY s.id", run)?,
            "artifacts": rows(db, "artifacts", "SELECT a.* FROM artifacts a JOIN cells c ON c.id = a.cell_id WHERE c.run_id = ?1 ORDER BY a.id", run)?,
            "attempts": rows(db, "attempts", "SELECT * FROM attempts WHERE run_id = ?1 ORDER BY attempt", run)?,
            "kernel_log": rows(db, "kernel_log", "SELECT k.* FROM kernel_log k JOIN cells c ON c.id = k.cell_id WHERE c.run_id = ?1 ORDER BY k.id", run)?,
            "monitor_series": rows(db, "monitor_series", "SELECT m.* FROM monitor_series m JOIN cells c ON c.id = m.cell_id WHERE c.run_id = ?1 ORDER BY m.id", run)?,
        }))
    }

    /// Store an exported run under a new id, in one transaction; a run
    /// already here (same start time, playbook and name) is refused.
    pub fn import_run(&self, doc: &Json) -> Result<i64, StoreError> {
        let bad = |why: &str| StoreError::Export(format!("not a benchrig export: {why}"));
        if doc["benchrig_export"].as_i64() != Some(FORMAT) {
            return Err(bad(&format!("`benchrig_export` must be {FORMAT}")));
        }
        let run = doc["run"].as_object().ok_or_else(|| bad("no `run`"))?;
        let list = |k: &str| doc[k].as_array().cloned().ok_or_else(|| bad(&format!("no `{k}` list")));
        let (hosts, cells, samples) = (list("hosts")?, list("cells")?, list("samples")?);
        // Exports from before artifacts were stored have none.
        let artifacts = doc["artifacts"].as_array().cloned().unwrap_or_default();
        // And from before attempts were.
        let attempts = doc["attempts"].as_array().cloned().unwrap_or_default();
        // And from before the kernel log was.
        let kernel_log = doc["kernel_log"].as_array().cloned().unwrap_or_default();
        // And from before monitors were.
        let series = doc["monitor_series"].as_array().cloned().unwrap_or_default();
        statuses_known(run, &hosts, &cells, &attempts).map_err(|why| bad(&why))?;
        let mut db = self.db();
        let existing = db.query_one(
            "SELECT id FROM runs WHERE started = ?1 AND playbook = ?2 AND name IS NOT DISTINCT FROM ?3",
            &[run["started"].as_str().into(), run["playbook"].as_str().into(), run["name"].as_str().into()],
        )?;
        if let Some(id) = existing.and_then(|r| r.opt_int(0)) {
            return Err(StoreError::Export(format!("this run is already in the database as run {id}")));
        }
        db.transaction(|db| {
            let new_run = insert(db, "runs", run)?.ok_or_else(|| bad("the run has no id"))?;
            for h in &hosts {
                let mut h = h.as_object().cloned().ok_or_else(|| bad("a host is not an object"))?;
                h.insert("run_id".into(), json!(new_run));
                insert(db, "hosts", &h)?;
            }
            for a in &attempts {
                let mut a = a.as_object().cloned().ok_or_else(|| bad("an attempt is not an object"))?;
                a.insert("run_id".into(), json!(new_run));
                insert(db, "attempts", &a)?;
            }
            let mut cell_ids = std::collections::HashMap::new();
            for c in &cells {
                let mut c = c.as_object().cloned().ok_or_else(|| bad("a cell is not an object"))?;
                let old = c["id"].as_i64().ok_or_else(|| bad("a cell has no id"))?;
                c.insert("run_id".into(), json!(new_run));
                cell_ids.insert(old, insert(db, "cells", &c)?.ok_or_else(|| bad("a cell has no id"))?);
            }
            for (table, items) in [
                ("samples", &samples),
                ("artifacts", &artifacts),
                ("kernel_log", &kernel_log),
                ("monitor_series", &series),
            ] {
                for s in items {
                    let mut s =
                        s.as_object().cloned().ok_or_else(|| bad(&format!("an entry of {table} is not an object")))?;
                    let old =
                        s["cell_id"].as_i64().ok_or_else(|| bad(&format!("an entry of {table} has no cell_id")))?;
                    let new = cell_ids
                        .get(&old)
                        .ok_or_else(|| bad(&format!("an entry of {table} of cell {old}, which is not there")))?;
                    s.insert("cell_id".into(), json!(new));
                    insert(db, table, &s)?;
                }
            }
            Ok(new_run)
        })
    }
}
