//! Where results live: SQLite (WAL, every sample committed as it arrives),
//! with the configuration that produced them.
//!
//! One connection behind a mutex: writes are tiny and rare next to the
//! benchmarks they record, so contention is not worth a pool.

mod schema;
mod transfer;

use benchrig_wire::facts::Facts;
use benchrig_wire::steps::StepOutput;
use rusqlite::{params, Connection, OptionalExtension};
use serde_json::Value as Json;
use std::path::Path;
use std::sync::{Arc, Mutex, MutexGuard};

#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    #[error("database {path}: {source}")]
    Open { path: String, source: rusqlite::Error },
    #[error("database: {0}")]
    Sql(#[from] rusqlite::Error),
    #[error("no run `{0}` in the database (see `benchrig runs`)")]
    NoSuchRun(String),
    #[error("database {path} was written by a newer benchrig (schema {found}, this one knows {known})")]
    TooNew { path: String, found: i64, known: i64 },
    #[error("writing the report: {0}")]
    Export(String),
}

pub fn now() -> String {
    time::OffsetDateTime::now_utc().format(&time::format_description::well_known::Rfc3339).unwrap_or_default()
}

#[derive(Clone)]
pub struct Store {
    conn: Arc<Mutex<Connection>>,
}

pub struct NewRun<'a> {
    pub name: Option<&'a str>,
    pub playbook: &'a str,
    pub playbook_text: &'a str,
    pub inventory: &'a str,
    pub limit: Option<&'a str>,
    pub extra_vars: &'a Json,
}

#[derive(Clone, Debug)]
pub struct RunRow {
    pub id: i64,
    pub name: Option<String>,
    pub playbook: String,
    pub started: String,
    pub finished: Option<String>,
    pub status: String,
    pub hosts: i64,
    pub cells: i64,
}

#[derive(Clone, Debug)]
pub struct HostRow {
    pub name: String,
    pub status: String,
    pub reason: Option<String>,
    pub facts: Option<Json>,
}

#[derive(Clone, Debug)]
pub struct CellRow {
    pub id: i64,
    pub host: String,
    pub play_index: i64,
    pub play: String,
    pub key: String,
    pub params: Json,
    pub repeat: i64,
    pub status: String,
    pub reason: Option<String>,
    pub info: Option<Json>,
    /// The planned steps, rendered (`Cell::steps_json`); none in runs stored before they were.
    pub steps: Option<Json>,
    pub started: Option<String>,
    pub finished: Option<String>,
}

#[derive(Clone, Debug)]
pub struct SampleRow {
    pub cell_id: i64,
    pub step_index: i64,
    pub step: String,
    pub workload: String,
    pub repetition: i64,
    pub metric: String,
    pub value: f64,
    pub unit: String,
    pub better: String,
    pub dev_read_bytes: Option<i64>,
    pub dev_write_bytes: Option<i64>,
    /// What the step recorded besides metrics (bytes moved, cold method, ...).
    pub info: Option<Json>,
}

/// A benchmark step's identity within its cell, for samples.
pub struct StepRef<'a> {
    pub index: usize,
    pub name: &'a str,
    pub workload: &'a str,
    pub repetition: u32,
}

impl Store {
    pub fn open(path: &Path) -> Result<Store, StoreError> {
        let shown = path.display().to_string();
        let conn = Connection::open(path).map_err(|source| StoreError::Open { path: shown.clone(), source })?;
        conn.busy_timeout(std::time::Duration::from_secs(30))?;
        conn.pragma_update(None, "journal_mode", "WAL")?;
        conn.pragma_update(None, "synchronous", "NORMAL")?;
        conn.pragma_update(None, "foreign_keys", "ON")?;
        schema::migrate(&conn, &shown)?;
        Ok(Store { conn: Arc::new(Mutex::new(conn)) })
    }

    fn db(&self) -> MutexGuard<'_, Connection> {
        self.conn.lock().unwrap_or_else(|e| e.into_inner())
    }

    pub fn create_run(&self, r: &NewRun) -> Result<i64, StoreError> {
        let db = self.db();
        db.execute(
            "INSERT INTO runs (name, playbook, playbook_text, inventory, limit_pattern, extra_vars, benchrig_version, started, status)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, 'running')",
            params![r.name, r.playbook, r.playbook_text, r.inventory, r.limit, r.extra_vars.to_string(), env!("CARGO_PKG_VERSION"), now()],
        )?;
        Ok(db.last_insert_rowid())
    }

    pub fn finish_run(&self, run: i64, status: &str) -> Result<(), StoreError> {
        self.db().execute("UPDATE runs SET status = ?2, finished = ?3 WHERE id = ?1", params![run, status, now()])?;
        Ok(())
    }

    pub fn set_host(&self, run: i64, name: &str, status: &str, reason: Option<&str>) -> Result<(), StoreError> {
        self.db().execute(
            "INSERT INTO hosts (run_id, name, status, reason) VALUES (?1, ?2, ?3, ?4)
             ON CONFLICT (run_id, name) DO UPDATE SET status = excluded.status, reason = excluded.reason",
            params![run, name, status, reason],
        )?;
        Ok(())
    }

    /// A host's facts for this run, and as the latest known facts for `plan`.
    pub fn set_host_facts(&self, run: Option<i64>, name: &str, facts: &Facts) -> Result<(), StoreError> {
        let json = serde_json::to_string(facts).unwrap_or_default();
        let db = self.db();
        if let Some(run) = run {
            db.execute(
                "UPDATE hosts SET facts = ?3, arch = ?4, agent_sha256 = ?5 WHERE run_id = ?1 AND name = ?2",
                params![run, name, json, facts.arch, facts.agent.sha256],
            )?;
        }
        db.execute(
            "INSERT INTO host_facts (name, facts, updated) VALUES (?1, ?2, ?3)
             ON CONFLICT (name) DO UPDATE SET facts = excluded.facts, updated = excluded.updated",
            params![name, json, now()],
        )?;
        Ok(())
    }

    pub fn cached_facts(&self, name: &str) -> Result<Option<Facts>, StoreError> {
        let json: Option<String> =
            self.db().query_row("SELECT facts FROM host_facts WHERE name = ?1", [name], |r| r.get(0)).optional()?;
        Ok(json.and_then(|j| serde_json::from_str(&j).ok()))
    }

    pub fn add_cell(&self, run: i64, c: &crate::planner::Cell) -> Result<i64, StoreError> {
        let db = self.db();
        db.execute(
            "INSERT INTO cells (run_id, host, play_index, play, key, params, repeat, status, steps)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, 'pending', ?8)",
            params![
                run,
                c.host,
                c.play_index as i64,
                c.play_name,
                c.key,
                serde_json::to_string(&c.params).unwrap_or_default(),
                c.repeat,
                c.steps_json().to_string()
            ],
        )?;
        Ok(db.last_insert_rowid())
    }

    pub fn set_cell_status(&self, cell: i64, status: &str, reason: Option<&str>) -> Result<(), StoreError> {
        let stamp = match status {
            "running" => "started",
            _ => "finished",
        };
        self.db().execute(
            &format!("UPDATE cells SET status = ?2, reason = ?3, {stamp} = ?4 WHERE id = ?1"),
            params![cell, status, reason, now()],
        )?;
        Ok(())
    }

    /// Merge what a setup step recorded (mkfs command, versions, fs dump) into the cell.
    pub fn add_cell_info(&self, cell: i64, step: &str, info: &serde_json::Map<String, Json>) -> Result<(), StoreError> {
        if info.is_empty() {
            return Ok(());
        }
        let db = self.db();
        let current: Option<String> = db.query_row("SELECT info FROM cells WHERE id = ?1", [cell], |r| r.get(0))?;
        let mut obj: serde_json::Map<String, Json> =
            current.and_then(|c| serde_json::from_str(&c).ok()).unwrap_or_default();
        obj.insert(step.to_string(), Json::Object(info.clone()));
        db.execute("UPDATE cells SET info = ?2 WHERE id = ?1", params![cell, Json::Object(obj).to_string()])?;
        Ok(())
    }

    /// Every metric of one step's result, committed at once.
    pub fn add_samples(&self, cell: i64, step: &StepRef, out: &StepOutput) -> Result<(), StoreError> {
        let mut db = self.db();
        let tx = db.transaction()?;
        let usage = out.usage.clone().unwrap_or_default();
        // No device to count (a directory on tmpfs, say) is unknown, not zero I/O.
        let sum = |f: fn(&benchrig_wire::steps::DevIo) -> u64| {
            (!usage.devices.is_empty()).then(|| usage.devices.iter().map(f).sum::<u64>() as i64)
        };
        let ts = now();
        for m in &out.metrics {
            tx.execute(
                "INSERT INTO samples (cell_id, step_index, step, workload, repetition, metric, value, unit, better,
                    wall_s, user_s, sys_s, dev_read_bytes, dev_write_bytes, dev_read_ios, dev_write_ios, usage, info, ts)
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15, ?16, ?17, ?18, ?19)",
                params![
                    cell,
                    step.index as i64,
                    step.name,
                    step.workload,
                    step.repetition,
                    m.name,
                    m.value,
                    m.unit,
                    m.better.as_str(),
                    usage.wall_s,
                    usage.user_s,
                    usage.sys_s,
                    sum(|d| d.read_bytes),
                    sum(|d| d.write_bytes),
                    sum(|d| d.read_ios),
                    sum(|d| d.write_ios),
                    serde_json::to_string(&usage).unwrap_or_default(),
                    Json::Object(out.info.clone()).to_string(),
                    ts,
                ],
            )?;
        }
        tx.commit()?;
        Ok(())
    }

    pub fn runs(&self) -> Result<Vec<RunRow>, StoreError> {
        let db = self.db();
        let mut st = db.prepare(
            "SELECT r.id, r.name, r.playbook, r.started, r.finished, r.status,
                    (SELECT COUNT(*) FROM hosts h WHERE h.run_id = r.id),
                    (SELECT COUNT(*) FROM cells c WHERE c.run_id = r.id)
             FROM runs r ORDER BY r.id",
        )?;
        let rows = st.query_map([], |r| {
            Ok(RunRow {
                id: r.get(0)?,
                name: r.get(1)?,
                playbook: r.get(2)?,
                started: r.get(3)?,
                finished: r.get(4)?,
                status: r.get(5)?,
                hosts: r.get(6)?,
                cells: r.get(7)?,
            })
        })?;
        Ok(rows.collect::<Result<_, _>>()?)
    }

    /// A run by id, by name (the newest of that name), or `last`.
    pub fn resolve_run(&self, spec: &str) -> Result<RunRow, StoreError> {
        let runs = self.runs()?;
        let found = if spec == "last" {
            runs.last()
        } else if let Ok(id) = spec.parse::<i64>() {
            runs.iter().find(|r| r.id == id)
        } else {
            runs.iter().rev().find(|r| r.name.as_deref() == Some(spec))
        };
        found.cloned().ok_or_else(|| StoreError::NoSuchRun(spec.to_string()))
    }

    pub fn hosts(&self, run: i64) -> Result<Vec<HostRow>, StoreError> {
        let db = self.db();
        let mut st = db.prepare("SELECT name, status, reason, facts FROM hosts WHERE run_id = ?1 ORDER BY rowid")?;
        let rows = st.query_map([run], |r| {
            let facts: Option<String> = r.get(3)?;
            Ok(HostRow {
                name: r.get(0)?,
                status: r.get(1)?,
                reason: r.get(2)?,
                facts: facts.and_then(|f| serde_json::from_str(&f).ok()),
            })
        })?;
        Ok(rows.collect::<Result<_, _>>()?)
    }

    pub fn cells(&self, run: i64) -> Result<Vec<CellRow>, StoreError> {
        let db = self.db();
        let mut st = db.prepare(
            "SELECT id, host, play_index, play, key, params, repeat, status, reason, info, steps, started, finished
             FROM cells WHERE run_id = ?1 ORDER BY id",
        )?;
        let rows = st.query_map([run], |r| {
            let params: String = r.get(5)?;
            let info: Option<String> = r.get(9)?;
            let steps: Option<String> = r.get(10)?;
            Ok(CellRow {
                id: r.get(0)?,
                host: r.get(1)?,
                play_index: r.get(2)?,
                play: r.get(3)?,
                key: r.get(4)?,
                params: serde_json::from_str(&params).unwrap_or(Json::Null),
                repeat: r.get(6)?,
                status: r.get(7)?,
                reason: r.get(8)?,
                info: info.and_then(|i| serde_json::from_str(&i).ok()),
                steps: steps.and_then(|i| serde_json::from_str(&i).ok()),
                started: r.get(11)?,
                finished: r.get(12)?,
            })
        })?;
        Ok(rows.collect::<Result<_, _>>()?)
    }

    pub fn samples(&self, run: i64) -> Result<Vec<SampleRow>, StoreError> {
        self.samples_where("c.run_id = ?1", run)
    }

    /// One cell's samples so far (adaptive repetition reads them).
    pub fn cell_samples(&self, cell: i64) -> Result<Vec<SampleRow>, StoreError> {
        self.samples_where("s.cell_id = ?1", cell)
    }

    fn samples_where(&self, condition: &str, id: i64) -> Result<Vec<SampleRow>, StoreError> {
        let db = self.db();
        let mut st = db.prepare(&format!(
            "SELECT s.cell_id, s.step_index, s.step, s.workload, s.repetition, s.metric, s.value, s.unit, s.better,
                    s.dev_read_bytes, s.dev_write_bytes, s.info
             FROM samples s JOIN cells c ON c.id = s.cell_id WHERE {condition} ORDER BY s.id"
        ))?;
        let rows = st.query_map([id], |r| {
            Ok(SampleRow {
                cell_id: r.get(0)?,
                step_index: r.get(1)?,
                step: r.get(2)?,
                workload: r.get(3)?,
                repetition: r.get(4)?,
                metric: r.get(5)?,
                value: r.get(6)?,
                unit: r.get(7)?,
                better: r.get(8)?,
                dev_read_bytes: r.get(9)?,
                dev_write_bytes: r.get(10)?,
                info: r.get::<_, Option<String>>(11)?.and_then(|i| serde_json::from_str(&i).ok()),
            })
        })?;
        Ok(rows.collect::<Result<_, _>>()?)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::planner::Cell;
    use benchrig_wire::steps::{Better, Metric, Usage};

    fn cell() -> Cell {
        Cell {
            key: "0:fs=ext4".into(),
            host: "h1".into(),
            play_index: 0,
            play_name: "q".into(),
            params: [("fs".to_string(), serde_json::json!("ext4"))].into_iter().collect(),
            repeat: 2,
            policy: crate::planner::RepeatPolicy::fixed(2),
            setup: vec![],
            before_each: vec![],
            benchmark: vec![],
            teardown: vec![],
            unsupported: None,
            fresh_each_repetition: false,
        }
    }

    #[test]
    fn a_run_round_trips() {
        let dir = tempfile::tempdir().unwrap();
        let s = Store::open(&dir.path().join("b.db")).unwrap();
        let ev = serde_json::json!({});
        let run = s
            .create_run(&NewRun {
                name: Some("n"),
                playbook: "p.yml",
                playbook_text: "- hosts: all",
                inventory: "x",
                limit: None,
                extra_vars: &ev,
            })
            .unwrap();
        s.set_host(run, "h1", "ok", None).unwrap();
        let c = s.add_cell(run, &cell()).unwrap();
        s.set_cell_status(c, "running", None).unwrap();
        let out = StepOutput {
            metrics: vec![Metric {
                name: "throughput".into(),
                value: 412.5,
                unit: "MB/s".into(),
                better: Better::Higher,
            }],
            usage: Some(Usage {
                wall_s: 1.0,
                user_s: 0.1,
                sys_s: 0.2,
                devices: vec![benchrig_wire::steps::DevIo {
                    device: "loop0".into(),
                    read_bytes: 4096,
                    ..Default::default()
                }],
            }),
            info: Default::default(),
        };
        s.add_samples(c, &StepRef { index: 0, name: "w", workload: "seq_write", repetition: 1 }, &out).unwrap();
        let mut info = serde_json::Map::new();
        info.insert("mkfs_command".into(), "mkfs.ext4 -F /dev/loop0".into());
        s.add_cell_info(c, "setup 1", &info).unwrap();
        s.set_cell_status(c, "ok", None).unwrap();
        s.finish_run(run, "ok").unwrap();

        // Reopen: everything was committed.
        let s = Store::open(&dir.path().join("b.db")).unwrap();
        let r = s.resolve_run("last").unwrap();
        assert_eq!((r.id, r.status.as_str(), r.hosts, r.cells), (run, "ok", 1, 1));
        assert_eq!(s.resolve_run("n").unwrap().id, run);
        assert!(matches!(s.resolve_run("nope"), Err(StoreError::NoSuchRun(_))));
        let cells = s.cells(run).unwrap();
        assert_eq!(cells[0].params, serde_json::json!({"fs": "ext4"}));
        assert_eq!(cells[0].info.as_ref().unwrap()["setup 1"]["mkfs_command"], "mkfs.ext4 -F /dev/loop0");
        let samples = s.samples(run).unwrap();
        assert_eq!((samples[0].value, samples[0].dev_read_bytes), (412.5, Some(4096)));

        // Export, import into another database (twice into the same: refused), export again: equal but for ids.
        let doc = s.export_run(run).unwrap();
        let other = Store::open(&dir.path().join("central.db")).unwrap();
        other
            .create_run(&NewRun {
                name: None,
                playbook: "o",
                playbook_text: "",
                inventory: "",
                limit: None,
                extra_vars: &ev,
            })
            .unwrap();
        let imported = other.import_run(&doc).unwrap();
        assert_eq!(imported, 2, "a new id in the central database");
        let e = other.import_run(&doc).unwrap_err();
        assert!(e.to_string().contains("already in the database as run 2"), "{e}");
        let again = other.export_run(imported).unwrap();
        let strip = |mut d: Json| {
            d["run"]["id"] = Json::Null;
            for k in ["hosts", "cells", "samples"] {
                for row in d[k].as_array_mut().unwrap() {
                    for id in ["id", "run_id", "cell_id"] {
                        if row.get(id).is_some() {
                            row[id] = Json::Null;
                        }
                    }
                }
            }
            d
        };
        assert_eq!(strip(again), strip(doc.clone()));
        assert_eq!(other.samples(imported).unwrap()[0].value, 412.5);
        let mut broken = doc;
        broken["samples"][0]["cell_id"] = serde_json::json!(999);
        broken["run"]["started"] = serde_json::json!("another time");
        assert!(other.import_run(&broken).unwrap_err().to_string().contains("cell 999"));
        assert_eq!(other.runs().unwrap().len(), 2, "a refused import leaves nothing behind");
    }

    #[test]
    fn facts_cache_keeps_the_latest() {
        let dir = tempfile::tempdir().unwrap();
        let s = Store::open(&dir.path().join("b.db")).unwrap();
        assert!(s.cached_facts("h").unwrap().is_none());
        let mut f = Facts { arch: "i686".into(), ..Default::default() };
        s.set_host_facts(None, "h", &f).unwrap();
        f.arch = "x86_64".into();
        s.set_host_facts(None, "h", &f).unwrap();
        assert_eq!(s.cached_facts("h").unwrap().unwrap().arch, "x86_64");
    }
}
