//! `benchrig export RUN` and `benchrig import FILE`: a run with everything
//! stored about it (hosts and their facts, cells, every sample) as one JSON
//! document (with its attempts and monitor series), so a lab's runners can merge their results into one database.
//!
//! Rows travel as column → value maps; ids are renumbered on import.
//!
//! An export is data from whoever sent it, never SQL: a row's keys must be
//! columns its table has here (`Columns`), the values are bound, never
//! pasted, and the file's size and lists are bounded ([`MAX_BYTES`],
//! [`MAX_ROWS`]). The run is marked imported, and `--resume` refuses it:
//! resuming replans from the stored playbook text, which the exporter wrote.

use super::db::Db;
use super::schema::PG_ONLY_COLUMNS;
use super::sql::Sql;
use super::value::Val;
use super::{Store, StoreError};
use crate::status::{CellStatus, HostStatus, RunStatus};
use serde_json::{json, Map, Value as Json};

/// The format's version; `import` refuses one it does not know.
pub const FORMAT: i64 = 1;

/// The largest export `import` reads (a year of one lab's nights is far
/// less per run): bounded, so a file cannot take the machine's memory.
pub const MAX_BYTES: u64 = 2 << 30;

/// The most entries any one list of an export may have.
pub const MAX_ROWS: usize = 20_000_000;

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

/// Each table's columns as this database has them: the only names an
/// import puts into SQL (its keys are checked against them, never pasted).
struct Columns(std::collections::HashMap<&'static str, Vec<String>>);

impl Columns {
    fn of(db: &mut Db) -> Result<Self, StoreError> {
        let mut all = std::collections::HashMap::new();
        for table in TABLES {
            all.insert(table, db.query_named(&format!("SELECT * FROM {table} WHERE 1 = 0"), &[])?.0);
        }
        Ok(Columns(all))
    }

    /// `row` (entry `index` of the `table` list; none for the run) has only
    /// `table`'s columns. The error's words are made only on an error: an
    /// import checks millions of rows.
    fn check(&self, table: &str, index: Option<usize>, row: &Row) -> Result<(), StoreError> {
        let known = &self.0[table];
        match row.keys().find(|k| !known.contains(k)) {
            Some(k) => Err(StoreError::Import(format!(
                "not a benchrig export: {} has a key {} that is no column of `{table}` (an export from a newer benchrig, or not one at all)",
                index.map_or("the run".to_string(), |i| format!("{table}[{i}]")),
                serde_json::to_string(k).unwrap_or_default()
            ))),
            None => Ok(()),
        }
    }
}

/// The tables an export carries (each under a list of its name, but `runs`: one `run`).
const TABLES: [&str; 9] =
    ["runs", "hosts", "cells", "samples", "artifacts", "attempts", "kernel_log", "monitor_series", "summaries"];

/// Insert a row whose keys `Columns::check` passed; returns the new id for
/// tables that have one.
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
            "summaries": rows(db, "summaries", "SELECT * FROM summaries WHERE run_id = ?1 ORDER BY id", run)?,
        }))
    }

    /// Store an exported run under a new id, in one transaction; a run
    /// already here (same start time, playbook and name) is refused.
    pub fn import_run(&self, doc: &Json) -> Result<i64, StoreError> {
        let bad = |why: &str| StoreError::Import(format!("not a benchrig export: {why}"));
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
        // And from before summaries were (made again from the samples below).
        let summaries = doc["summaries"].as_array().cloned().unwrap_or_default();
        statuses_known(run, &hosts, &cells, &attempts).map_err(|why| bad(&why))?;
        for (list, items) in [
            ("hosts", &hosts),
            ("cells", &cells),
            ("samples", &samples),
            ("artifacts", &artifacts),
            ("attempts", &attempts),
            ("kernel_log", &kernel_log),
            ("monitor_series", &series),
            ("summaries", &summaries),
        ] {
            if items.len() > MAX_ROWS {
                return Err(bad(&format!(
                    "`{list}` has {} entries, more than the {MAX_ROWS} an import takes",
                    items.len()
                )));
            }
        }
        let mut db = self.db();
        let columns = Columns::of(&mut db)?;
        // `get`, not `[]`, which panics on a key the file left out.
        let text = |k: &str| run.get(k).and_then(Json::as_str);
        let mut run = run.clone();
        columns.check("runs", None, &run)?;
        // Whatever the file says: imported now, and so never resumed.
        run.insert("imported".into(), json!(super::now()));
        let existing = db.query_one(
            "SELECT id FROM runs WHERE started = ?1 AND playbook = ?2 AND name IS NOT DISTINCT FROM ?3",
            &[text("started").into(), text("playbook").into(), text("name").into()],
        )?;
        if let Some(id) = existing.and_then(|r| r.opt_int(0)) {
            return Err(StoreError::Import(format!("this run is already in the database as run {id}")));
        }
        let new_run = db.transaction(|db| {
            let new_run = insert(db, "runs", &run)?.ok_or_else(|| bad("the run has no id"))?;
            for (i, h) in hosts.iter().enumerate() {
                let mut h = h.as_object().cloned().ok_or_else(|| bad("a host is not an object"))?;
                columns.check("hosts", Some(i), &h)?;
                h.insert("run_id".into(), json!(new_run));
                insert(db, "hosts", &h)?;
            }
            for (i, a) in attempts.iter().enumerate() {
                let mut a = a.as_object().cloned().ok_or_else(|| bad("an attempt is not an object"))?;
                columns.check("attempts", Some(i), &a)?;
                a.insert("run_id".into(), json!(new_run));
                insert(db, "attempts", &a)?;
            }
            let mut cell_ids = std::collections::HashMap::new();
            for (i, c) in cells.iter().enumerate() {
                let mut c = c.as_object().cloned().ok_or_else(|| bad("a cell is not an object"))?;
                columns.check("cells", Some(i), &c)?;
                let old = c.get("id").and_then(Json::as_i64).ok_or_else(|| bad("a cell has no id"))?;
                c.insert("run_id".into(), json!(new_run));
                cell_ids.insert(old, insert(db, "cells", &c)?.ok_or_else(|| bad("a cell has no id"))?);
            }
            for (table, items) in [
                ("samples", &samples),
                ("artifacts", &artifacts),
                ("kernel_log", &kernel_log),
                ("monitor_series", &series),
                ("summaries", &summaries),
            ] {
                for (i, s) in items.iter().enumerate() {
                    let mut s =
                        s.as_object().cloned().ok_or_else(|| bad(&format!("an entry of {table} is not an object")))?;
                    columns.check(table, Some(i), &s)?;
                    let old = s
                        .get("cell_id")
                        .and_then(Json::as_i64)
                        .ok_or_else(|| bad(&format!("an entry of {table} has no cell_id")))?;
                    let new = cell_ids
                        .get(&old)
                        .ok_or_else(|| bad(&format!("an entry of {table} of cell {old}, which is not there")))?;
                    s.insert("cell_id".into(), json!(new));
                    if s.contains_key("run_id") {
                        s.insert("run_id".into(), json!(new_run));
                    }
                    insert(db, table, &s)?;
                }
            }
            Ok(new_run)
        })?;
        drop(db);
        // An export from before summaries were (a pruned run's are all that
        // is left of its samples, and come with it).
        if summaries.is_empty() {
            self.summarise_run(new_run)?;
        }
        Ok(new_run)
    }
}
