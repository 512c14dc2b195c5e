//! `benchrig export RUN` and `benchrig import FILE`: a run with everything
//! stored about it (hosts and their facts, cells, every sample) as one JSON
//! document, so a lab's runners can merge their results into one database.
//!
//! Rows travel as column → value maps, so a column added by a later
//! migration travels too; ids are renumbered on import.

use super::{Store, StoreError};
use rusqlite::types::{Value as Sql, ValueRef};
use rusqlite::{params, Connection};
use serde_json::{json, Map, Value as Json};

/// The format's version; `import` refuses one it does not know.
const FORMAT: i64 = 1;

type Row = Map<String, Json>;

fn rows(db: &Connection, sql: &str, id: i64) -> Result<Vec<Row>, StoreError> {
    let mut st = db.prepare(sql)?;
    let names: Vec<String> = st.column_names().map(str::to_string).collect();
    let out = st.query_map([id], |r| {
        let mut m = Row::new();
        for (i, n) in names.iter().enumerate() {
            let v = match r.get_ref(i)? {
                ValueRef::Null => Json::Null,
                ValueRef::Integer(x) => json!(x),
                ValueRef::Real(x) => json!(x),
                ValueRef::Text(t) => Json::String(String::from_utf8_lossy(t).into_owned()),
                ValueRef::Blob(_) => Json::Null,
            };
            m.insert(n.clone(), v);
        }
        Ok(m)
    })?;
    Ok(out.collect::<Result<_, _>>()?)
}

fn insert(db: &Connection, table: &str, row: &Row) -> Result<i64, StoreError> {
    let cols: Vec<&String> = row.keys().filter(|k| *k != "id").collect();
    let values: Vec<Sql> = cols
        .iter()
        .map(|c| match &row[*c] {
            Json::Null => Sql::Null,
            Json::Bool(b) => Sql::Integer(*b as i64),
            Json::Number(n) => {
                n.as_i64().map(Sql::Integer).unwrap_or_else(|| Sql::Real(n.as_f64().unwrap_or(f64::NAN)))
            }
            Json::String(s) => Sql::Text(s.clone()),
            other => Sql::Text(other.to_string()),
        })
        .collect();
    let names: Vec<&str> = cols.iter().map(|c| c.as_str()).collect();
    let marks: Vec<String> = (1..=cols.len()).map(|i| format!("?{i}")).collect();
    let sql = format!("INSERT INTO {table} ({}) VALUES ({})", names.join(", "), marks.join(", "));
    db.execute(&sql, rusqlite::params_from_iter(values))?;
    Ok(db.last_insert_rowid())
}

impl Store {
    pub fn export_run(&self, run: i64) -> Result<Json, StoreError> {
        let db = self.db();
        let run_row = rows(&db, "SELECT * FROM runs WHERE id = ?1", run)?;
        let Some(run_row) = run_row.into_iter().next() else { return Err(StoreError::NoSuchRun(run.to_string())) };
        Ok(json!({
            "benchrig_export": FORMAT,
            "run": run_row,
            "hosts": rows(&db, "SELECT * FROM hosts WHERE run_id = ?1", run)?,
            "cells": rows(&db, "SELECT * FROM cells WHERE run_id = ?1 ORDER BY id", run)?,
            "samples": rows(&db, "SELECT s.* FROM samples s JOIN cells c ON c.id = s.cell_id WHERE c.run_id = ?1 ORDER BY s.id", run)?,
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
        let mut db = self.db();
        let existing: Option<i64> = db
            .query_row(
                "SELECT id FROM runs WHERE started = ?1 AND playbook = ?2 AND name IS ?3",
                params![run["started"].as_str(), run["playbook"].as_str(), run["name"].as_str()],
                |r| r.get(0),
            )
            .ok();
        if let Some(id) = existing {
            return Err(StoreError::Export(format!("this run is already in the database as run {id}")));
        }
        let tx = db.transaction()?;
        let new_run = insert(&tx, "runs", run)?;
        for h in &hosts {
            let mut h = h.as_object().cloned().ok_or_else(|| bad("a host is not an object"))?;
            h.insert("run_id".into(), json!(new_run));
            insert(&tx, "hosts", &h)?;
        }
        let mut cell_ids = std::collections::HashMap::new();
        for c in &cells {
            let mut c = c.as_object().cloned().ok_or_else(|| bad("a cell is not an object"))?;
            let old = c["id"].as_i64().ok_or_else(|| bad("a cell has no id"))?;
            c.insert("run_id".into(), json!(new_run));
            cell_ids.insert(old, insert(&tx, "cells", &c)?);
        }
        for s in &samples {
            let mut s = s.as_object().cloned().ok_or_else(|| bad("a sample is not an object"))?;
            let old = s["cell_id"].as_i64().ok_or_else(|| bad("a sample has no cell_id"))?;
            let new = cell_ids.get(&old).ok_or_else(|| bad(&format!("a sample of cell {old}, which is not there")))?;
            s.insert("cell_id".into(), json!(new));
            insert(&tx, "samples", &s)?;
        }
        tx.commit()?;
        Ok(new_run)
    }
}
