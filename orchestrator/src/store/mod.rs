//! Where results live: SQLite, or PostgreSQL for runners sharing one
//! database, with the configuration that produced them. `Store` is the API
//! the rest of benchrig uses; under it, `db` picks the adapter (`sqlite`,
//! `postgres`) that `location` names, both offering the same `sql` surface
//! over `value`s, and `schema` holds the migrations in both dialects.
//!
//! One connection behind a mutex: writes are tiny and rare next to the
//! benchmarks they record, so contention is not worth a pool.

mod alerts;
mod attempts;
mod bisects;
mod db;
mod error;
mod leases;
mod location;
mod pgpass;
mod postgres;
mod prune;
mod schema;
mod sql;
mod sqlite;
mod summaries;
#[cfg(test)]
pub(crate) mod testing;
mod tls;
pub mod transfer;
mod value;

pub use alerts::AlertRow;
pub use attempts::{AttemptRow, RunRecord};
pub use bisects::{BisectRow, BisectStepRow};
pub use error::StoreError;
pub use leases::{Holder, HostsBusy, Lease, Taken};
pub use location::{redacted_url, DbLocation};
pub use prune::{Reclaimed, Removed};
pub use summaries::{summarise, SummaryRef, SummaryRow};

use crate::monitors::{summary, MetricKind};
use crate::status::{CellStatus, HostStatus, RunStatus};
use benchrig_wire::facts::Facts;
use benchrig_wire::monitor::MonitorSeries;
use benchrig_wire::steps::{Better, StepOutput};
use db::Db;
use serde_json::Value as Json;
use sql::Sql;
use std::sync::{Arc, Mutex, MutexGuard};

/// The columns `cell_row` reads, in its order.
/// Of a cell's steps, what history reads: its devices and `fresh` policy
/// (`cells.outline`; the rest of a stored steps text is skipped unparsed).
#[derive(serde::Deserialize)]
struct Outline {
    devices: Option<Json>,
    fresh: Option<Json>,
}

fn outline_json(o: Outline) -> Json {
    let kept = [("devices", o.devices), ("fresh", o.fresh)];
    Json::Object(kept.into_iter().filter_map(|(k, v)| Some((k.to_string(), v?))).collect())
}

/// A cell's outline, from its steps as stored.
fn outline(steps: &Json) -> Json {
    outline_json(Outline { devices: steps.get("devices").cloned(), fresh: steps.get("fresh").cloned() })
}

/// A cell's devices and fresh policy from its outline or its steps as
/// stored (the rest of steps skipped unparsed); none for text that is neither.
pub fn outline_of(text: &str) -> Option<Json> {
    serde_json::from_str::<Outline>(text).ok().map(outline_json)
}

/// A cell as `Store::each_cell_text` hands it: its texts as stored.
pub struct CellText<'a> {
    pub id: i64,
    pub host: &'a str,
    pub play: &'a str,
    pub key: &'a str,
    pub params: &'a str,
    pub info: Option<&'a str>,
    /// Its outline, or its steps for a cell stored before outlines were.
    pub outline: Option<&'a str>,
}

const CELL_COLUMNS: &str =
    "id, host, play_index, play, key, params, repeat, status, reason, info, steps, started, finished, reps_done";

fn cell_row(r: &value::Row) -> Result<CellRow, StoreError> {
    Ok(CellRow {
        id: r.int(0),
        host: r.text(1),
        play_index: r.int(2),
        play: r.text(3),
        key: r.text(4),
        params: r.json(5).unwrap_or(Json::Null),
        repeat: r.int(6),
        status: status_of(r, 7)?,
        reason: r.opt_text(8),
        info: r.json(9),
        steps: r.json(10),
        started: r.opt_text(11),
        finished: r.opt_text(12),
        reps_done: r.opt_int(13),
    })
}

/// " AND `column` IN (?2, …)" for the hosts named (nothing for none named)
/// and the parameters: the run, then each host.
pub(super) fn only(run: i64, column: &str, hosts: Option<&[&str]>) -> (String, Vec<value::Val>) {
    let mut params = vec![run.into()];
    let Some(hosts) = hosts else { return (String::new(), params) };
    if hosts.is_empty() {
        // `IN ()` is SQLite's, not PostgreSQL's.
        return (" AND 1 = 0".into(), params);
    }
    params.extend(hosts.iter().map(|&h| h.into()));
    let marks: Vec<String> = (2..=params.len()).map(|i| format!("?{i}")).collect();
    (format!(" AND {column} IN ({})", marks.join(", ")), params)
}

/// Column `i` of a row as a status type.
fn status_of<S: std::str::FromStr>(r: &value::Row, i: usize) -> Result<S, StoreError> {
    word_as(&r.text(i))
}

/// A stored word as the type that wrote it (a status, a `Better`).
fn word_as<S: std::str::FromStr>(word: &str) -> Result<S, StoreError> {
    word.parse().map_err(|_| StoreError::UnknownStatus(word.to_string()))
}

pub fn now() -> String {
    time::OffsetDateTime::now_utc().format(&time::format_description::well_known::Rfc3339).unwrap_or_default()
}

#[derive(Clone)]
pub struct Store {
    conn: Arc<Mutex<Db>>,
    at: DbLocation,
}

pub struct NewRun<'a> {
    pub name: Option<&'a str>,
    pub playbook: &'a str,
    pub playbook_text: &'a str,
    pub inventory: &'a str,
    pub limit: Option<&'a str>,
    pub extra_vars: &'a Json,
    /// What else `--resume` needs to plan the run again
    /// (`run::recipe::Recipe::stored_options`).
    pub options: &'a Json,
}

#[derive(Clone, Debug)]
pub struct RunRow {
    pub id: i64,
    pub name: Option<String>,
    pub playbook: String,
    pub started: String,
    pub finished: Option<String>,
    pub status: RunStatus,
    pub hosts: i64,
    pub cells: i64,
    /// When `prune` deleted its samples (its summaries stay).
    pub pruned: Option<String>,
    /// When it was marked a baseline (`benchrig mark RUN --baseline`):
    /// never pruned.
    pub baseline: Option<String>,
}

#[derive(Clone, Debug)]
pub struct HostRow {
    pub name: String,
    pub status: HostStatus,
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
    pub status: CellStatus,
    pub reason: Option<String>,
    pub info: Option<Json>,
    /// The planned steps, rendered (`Cell::steps_json`); none in runs stored before they were.
    pub steps: Option<Json>,
    pub started: Option<String>,
    pub finished: Option<String>,
    /// Repetitions recorded in full (`--resume` goes on after them), 0 from
    /// the start; none in runs stored before it was kept.
    pub reps_done: Option<i64>,
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
    pub better: Better,
    pub dev_read_bytes: Option<i64>,
    pub dev_write_bytes: Option<i64>,
    /// What the step recorded besides metrics (bytes moved, cold method, ...).
    pub info: Option<Json>,
    /// The attempt of the run that measured it (1, then one per `--resume`).
    pub attempt: Option<i64>,
    /// How long its step took (the same for every metric of one step).
    pub wall_s: Option<f64>,
    /// The step's own result, or a summary of its monitors (`Store::samples`
    /// gives the first, `Store::monitor_samples` the second).
    pub kind: MetricKind,
}

/// One measured step's monitor series, as stored.
#[derive(Clone, Debug)]
pub struct SeriesRow {
    pub cell_id: i64,
    pub step_index: i64,
    pub step: String,
    pub repetition: i64,
    pub attempt: i64,
    pub series: MonitorSeries,
}

/// A kernel log line flagged during a cell, on `host`.
#[derive(Clone, Debug, PartialEq)]
pub struct KernelLogRow {
    pub cell_id: i64,
    pub host: String,
    pub line: benchrig_wire::kernel_log::KernelLogLine,
}

#[derive(Clone, Debug)]
pub struct ArtifactRow {
    pub cell_id: i64,
    pub name: String,
    pub content: String,
}

/// A benchmark step's identity within its cell, for samples.
pub struct StepRef<'a> {
    pub index: usize,
    pub name: &'a str,
    pub workload: &'a str,
    pub repetition: u32,
    /// The attempt of the run measuring it.
    pub attempt: u32,
}

impl Store {
    /// The database `at` names, brought to the current schema.
    pub fn open(at: &DbLocation) -> Result<Store, StoreError> {
        Ok(Store { conn: Arc::new(Mutex::new(Db::open(at)?)), at: at.clone() })
    }

    /// The same database over a connection of its own: for a thread that
    /// reads beside this one (a clone shares the connection, and its
    /// statements wait for each other's).
    pub fn another(&self) -> Result<Store, StoreError> {
        Store::open(&self.at)
    }

    fn db(&self) -> MutexGuard<'_, Db> {
        self.conn.lock().unwrap_or_else(|e| e.into_inner())
    }

    pub fn create_run(&self, r: &NewRun) -> Result<i64, StoreError> {
        self.db().insert(
            "INSERT INTO runs (name, playbook, playbook_text, inventory, limit_pattern, extra_vars, benchrig_version, started, status, options)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10)",
            &[
                r.name.into(),
                r.playbook.into(),
                r.playbook_text.into(),
                r.inventory.into(),
                r.limit.into(),
                r.extra_vars.to_string().into(),
                // With the commit: history names a new build among what changed.
                benchrig_wire::VERSION.into(),
                now().into(),
                RunStatus::Running.as_str().into(),
                r.options.to_string().into(),
            ],
        )
    }

    /// The run's end: its status, and its summaries for history.
    pub fn finish_run(&self, run: i64, status: RunStatus) -> Result<(), StoreError> {
        self.summarise_run(run)?;
        self.db().execute(
            "UPDATE runs SET status = ?2, finished = ?3 WHERE id = ?1",
            &[run.into(), status.as_str().into(), now().into()],
        )?;
        Ok(())
    }

    pub fn set_host(&self, run: i64, name: &str, status: HostStatus, reason: Option<&str>) -> Result<(), StoreError> {
        self.db().execute(
            "INSERT INTO hosts (run_id, name, status, reason) VALUES (?1, ?2, ?3, ?4)
             ON CONFLICT (run_id, name) DO UPDATE SET status = excluded.status, reason = excluded.reason",
            &[run.into(), name.into(), status.as_str().into(), reason.into()],
        )?;
        Ok(())
    }

    /// A host's facts for this run, and as the latest known facts for `plan`.
    pub fn set_host_facts(&self, run: Option<i64>, name: &str, facts: &Facts) -> Result<(), StoreError> {
        let json = serde_json::to_string(facts).unwrap_or_default();
        let mut db = self.db();
        if let Some(run) = run {
            db.execute(
                "UPDATE hosts SET facts = ?3, arch = ?4, agent_sha256 = ?5 WHERE run_id = ?1 AND name = ?2",
                &[
                    run.into(),
                    name.into(),
                    json.clone().into(),
                    facts.arch.as_str().into(),
                    facts.agent.sha256.as_str().into(),
                ],
            )?;
        }
        db.execute(
            "INSERT INTO host_facts (name, facts, updated) VALUES (?1, ?2, ?3)
             ON CONFLICT (name) DO UPDATE SET facts = excluded.facts, updated = excluded.updated",
            &[name.into(), json.into(), now().into()],
        )?;
        Ok(())
    }

    pub fn cached_facts(&self, name: &str) -> Result<Option<Facts>, StoreError> {
        let row = self.db().query_one("SELECT facts FROM host_facts WHERE name = ?1", &[name.into()])?;
        Ok(row.and_then(|r| r.opt_text(0)).and_then(|j| serde_json::from_str(&j).ok()))
    }

    pub fn add_cell(&self, run: i64, c: &crate::plan::Cell) -> Result<i64, StoreError> {
        let steps = c.steps_json();
        self.db().insert(
            "INSERT INTO cells (run_id, host, play_index, play, key, params, repeat, status, steps, reps_done, outline)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?9, ?8, 0, ?10)",
            &[
                run.into(),
                c.host.as_str().into(),
                c.play_index.into(),
                c.play_name.as_str().into(),
                c.key.as_str().into(),
                serde_json::to_string(&c.params).unwrap_or_default().into(),
                c.repeat.into(),
                steps.to_string().into(),
                CellStatus::Pending.as_str().into(),
                outline(&steps).to_string().into(),
            ],
        )
    }

    pub fn set_cell_status(&self, cell: i64, status: CellStatus, reason: Option<&str>) -> Result<(), StoreError> {
        let stamp = match status {
            CellStatus::Running => "started",
            _ => "finished",
        };
        self.db().execute(
            &format!("UPDATE cells SET status = ?2, reason = ?3, {stamp} = ?4 WHERE id = ?1"),
            &[cell.into(), status.as_str().into(), reason.into(), now().into()],
        )?;
        Ok(())
    }

    /// Merge what a setup step recorded (mkfs command, versions, fs dump) into the cell.
    pub fn add_cell_info(&self, cell: i64, step: &str, info: &serde_json::Map<String, Json>) -> Result<(), StoreError> {
        if info.is_empty() {
            return Ok(());
        }
        let mut db = self.db();
        db.transaction(|db| {
            let current = db.query_one("SELECT info FROM cells WHERE id = ?1", &[cell.into()])?;
            let mut obj: serde_json::Map<String, Json> =
                current.and_then(|r| r.json(0)).and_then(|j| j.as_object().cloned()).unwrap_or_default();
            obj.insert(step.to_string(), Json::Object(info.clone()));
            db.execute("UPDATE cells SET info = ?2 WHERE id = ?1", &[cell.into(), Json::Object(obj).to_string().into()])
        })?;
        Ok(())
    }

    /// Every metric of one step's result, committed at once; with its
    /// monitors' series, when it has them, and their summaries as monitor
    /// metrics (`MetricKind::Monitor`).
    pub fn add_samples(&self, cell: i64, step: &StepRef, out: &StepOutput) -> Result<(), StoreError> {
        let usage = out.usage.clone().unwrap_or_default();
        // No device to count (a directory on tmpfs, say) is unknown, not zero I/O.
        let sum = |f: fn(&benchrig_wire::steps::DevIo) -> u64| {
            (!usage.devices.is_empty()).then(|| usage.devices.iter().map(f).sum::<u64>() as i64)
        };
        let ts = now();
        let summaries: Vec<_> = out
            .monitors
            .iter()
            .flat_map(|s| summary::summarise(s))
            .map(|m| (m.to_metric(), MetricKind::Monitor))
            .collect();
        let metrics = out.metrics.iter().cloned().map(|m| (m, MetricKind::Benchmark)).chain(summaries);
        self.db().transaction(|db| {
            for (m, kind) in metrics {
                db.execute(
                    "INSERT INTO samples (cell_id, step_index, step, workload, repetition, metric, value, unit, better,
                        wall_s, user_s, sys_s, dev_read_bytes, dev_write_bytes, dev_read_ios, dev_write_ios, usage, info, ts, attempt, kind)
                     VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15, ?16, ?17, ?18, ?19, ?20, ?21)",
                    &[
                        cell.into(),
                        step.index.into(),
                        step.name.into(),
                        step.workload.into(),
                        step.repetition.into(),
                        m.name.as_str().into(),
                        m.value.into(),
                        m.unit.as_str().into(),
                        m.better.as_str().into(),
                        usage.wall_s.into(),
                        usage.user_s.into(),
                        usage.sys_s.into(),
                        sum(|d| d.read_bytes).into(),
                        sum(|d| d.write_bytes).into(),
                        sum(|d| d.read_ios).into(),
                        sum(|d| d.write_ios).into(),
                        serde_json::to_string(&usage).unwrap_or_default().into(),
                        Json::Object(out.info.clone()).to_string().into(),
                        ts.as_str().into(),
                        step.attempt.into(),
                        kind.as_str().into(),
                    ],
                )?;
            }
            if let Some(series) = &out.monitors {
                db.execute(
                    "INSERT INTO monitor_series (cell_id, step_index, step, repetition, attempt, series)
                     VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
                    &[
                        cell.into(),
                        step.index.into(),
                        step.name.into(),
                        step.repetition.into(),
                        step.attempt.into(),
                        serde_json::to_string(series).unwrap_or_default().into(),
                    ],
                )?;
            }
            Ok(())
        })
    }

    /// Every monitor series of a run, in the order stored.
    pub fn monitor_series(&self, run: i64) -> Result<Vec<SeriesRow>, StoreError> {
        let rows = self.db().query(
            "SELECT m.cell_id, m.step_index, m.step, m.repetition, m.attempt, m.series
             FROM monitor_series m JOIN cells c ON c.id = m.cell_id WHERE c.run_id = ?1 ORDER BY m.id",
            &[run.into()],
        )?;
        rows.into_iter()
            .map(|r| {
                let series = serde_json::from_str(&r.text(5))
                    .map_err(|e| StoreError::BadSeries { cell: r.int(0), why: e.to_string() })?;
                Ok(SeriesRow {
                    cell_id: r.int(0),
                    step_index: r.int(1),
                    step: r.text(2),
                    repetition: r.int(3),
                    attempt: r.int(4),
                    series,
                })
            })
            .collect()
    }

    /// Long text a step produced, stored beside its cell.
    pub fn add_artifact(&self, cell: i64, name: &str, content: &str) -> Result<(), StoreError> {
        self.db().execute(
            "INSERT INTO artifacts (cell_id, name, content, created) VALUES (?1, ?2, ?3, ?4)",
            &[cell.into(), name.into(), content.into(), now().into()],
        )?;
        Ok(())
    }

    pub fn add_kernel_log(
        &self,
        cell: i64,
        host: &str,
        lines: &[benchrig_wire::kernel_log::KernelLogLine],
    ) -> Result<(), StoreError> {
        for l in lines {
            let kind =
                serde_json::to_value(l.kind).ok().and_then(|k| k.as_str().map(str::to_string)).unwrap_or_default();
            self.db().execute(
                "INSERT INTO kernel_log (cell_id, host, kind, usec, seq, text) VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
                &[
                    cell.into(),
                    host.into(),
                    kind.into(),
                    (l.usec as i64).into(),
                    (l.seq as i64).into(),
                    l.text.as_str().into(),
                ],
            )?;
        }
        Ok(())
    }

    /// A run's flagged kernel log lines, in the order stored (a kind this
    /// benchrig does not know is left out).
    pub fn kernel_log(&self, run: i64) -> Result<Vec<KernelLogRow>, StoreError> {
        let rows = self.db().query(
            "SELECT k.cell_id, k.host, k.kind, k.usec, k.seq, k.text FROM kernel_log k JOIN cells c ON c.id = k.cell_id
             WHERE c.run_id = ?1 ORDER BY k.id",
            &[run.into()],
        )?;
        Ok(rows
            .into_iter()
            .filter_map(|r| {
                let kind = serde_json::from_value(serde_json::Value::String(r.text(2))).ok()?;
                let line = benchrig_wire::kernel_log::KernelLogLine {
                    kind,
                    usec: r.int(3) as u64,
                    seq: r.int(4) as u64,
                    text: r.text(5),
                };
                Some(KernelLogRow { cell_id: r.int(0), host: r.text(1), line })
            })
            .collect())
    }

    pub fn artifacts(&self, run: i64) -> Result<Vec<ArtifactRow>, StoreError> {
        let rows = self.db().query(
            "SELECT a.cell_id, a.name, a.content FROM artifacts a JOIN cells c ON c.id = a.cell_id
             WHERE c.run_id = ?1 ORDER BY a.id",
            &[run.into()],
        )?;
        Ok(rows.into_iter().map(|r| ArtifactRow { cell_id: r.int(0), name: r.text(1), content: r.text(2) }).collect())
    }

    pub fn runs(&self) -> Result<Vec<RunRow>, StoreError> {
        let rows = self.db().query(
            "SELECT r.id, r.name, r.playbook, r.started, r.finished, r.status,
                    (SELECT COUNT(*) FROM hosts h WHERE h.run_id = r.id),
                    (SELECT COUNT(*) FROM cells c WHERE c.run_id = r.id),
                    r.pruned, r.baseline
             FROM runs r ORDER BY r.id",
            &[],
        )?;
        rows.into_iter()
            .map(|r| {
                Ok(RunRow {
                    id: r.int(0),
                    name: r.opt_text(1),
                    playbook: r.text(2),
                    started: r.text(3),
                    finished: r.opt_text(4),
                    status: status_of(&r, 5)?,
                    hosts: r.int(6),
                    cells: r.int(7),
                    pruned: r.opt_text(8),
                    baseline: r.opt_text(9),
                })
            })
            .collect()
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
        self.hosts_of(run, None)
    }

    /// A run's hosts, or only those named.
    pub fn hosts_of(&self, run: i64, hosts: Option<&[&str]>) -> Result<Vec<HostRow>, StoreError> {
        let mut db = self.db();
        // In the order they were added (inventory order).
        let order = db.hosts_order();
        let (only, params) = only(run, "name", hosts);
        let rows = db.query(
            &format!("SELECT name, status, reason, facts FROM hosts WHERE run_id = ?1{only} ORDER BY {order}"),
            &params,
        )?;
        rows.into_iter()
            .map(|r| {
                Ok(HostRow { name: r.text(0), status: status_of(&r, 1)?, reason: r.opt_text(2), facts: r.json(3) })
            })
            .collect()
    }

    pub fn cells(&self, run: i64) -> Result<Vec<CellRow>, StoreError> {
        let rows = self
            .db()
            .query(&format!("SELECT {CELL_COLUMNS} FROM cells WHERE run_id = ?1 ORDER BY id"), &[run.into()])?;
        rows.iter().map(cell_row).collect()
    }

    /// A run's cells with only the devices and fresh policy of their steps
    /// (kilobytes of rendered steps a cell, which a year of `history` need
    /// not hold): the cell's `outline`, or for a cell stored before it was
    /// kept, its steps with the rest skipped as they are read, not parsed.
    /// Only of the hosts named, when they are.
    pub fn cells_outline(&self, run: i64, hosts: Option<&[&str]>) -> Result<Vec<CellRow>, StoreError> {
        let columns = CELL_COLUMNS.replace(", steps,", ", NULL,");
        let (only, params) = only(run, "host", hosts);
        let rows = self.db().query(
            &format!(
                "SELECT {columns}, outline, CASE WHEN outline IS NULL THEN steps END FROM cells \
                 WHERE run_id = ?1{only} ORDER BY id"
            ),
            &params,
        )?;
        rows.iter()
            .map(|r| {
                let mut c = cell_row(r)?;
                c.steps = r.opt_text(14).or_else(|| r.opt_text(15)).and_then(|t| outline_of(&t));
                Ok(c)
            })
            .collect()
    }

    /// A run's cells as `history` reads them, each handed to `f` as it is
    /// read, its texts borrowed (a year of cells, most of them as the night
    /// before): `outline` is the cell's outline, or for a cell stored before
    /// outlines were kept its steps ([`outline_of`] reads either).
    pub fn each_cell_text(&self, run: i64, mut f: impl FnMut(CellText<'_>)) -> Result<(), StoreError> {
        self.db().for_each(
            "SELECT id, host, play, key, params, info, COALESCE(outline, steps) FROM cells WHERE run_id = ?1 ORDER BY id",
            &[run.into()],
            &mut |v| {
                let opt = |i: usize| match v[i] {
                    value::ValRef::Text(t) => Some(t),
                    _ => None,
                };
                f(CellText {
                    id: v[0].int(),
                    host: v[1].text(),
                    play: v[2].text(),
                    key: v[3].text(),
                    params: v[4].text(),
                    info: opt(5),
                    outline: opt(6),
                });
                Ok(())
            },
        )
    }

    /// A run's hosts' facts as stored (text, borrowed), each handed to `f`.
    pub fn each_host_facts(&self, run: i64, mut f: impl FnMut(&str, Option<&str>)) -> Result<(), StoreError> {
        self.db().for_each("SELECT name, facts FROM hosts WHERE run_id = ?1", &[run.into()], &mut |v| {
            match v[1] {
                value::ValRef::Text(facts) => f(v[0].text(), Some(facts)),
                _ => f(v[0].text(), None),
            }
            Ok(())
        })
    }

    /// The newest ok cell of every (host, play, cell key) that ran to its
    /// end: what `plan` estimates a cell's time from, as PTS's
    /// estimate-run-time does from earlier runs.
    pub fn newest_cell_times(&self) -> Result<Vec<CellRow>, StoreError> {
        let rows = self.db().query(
            &format!(
                "SELECT {CELL_COLUMNS} FROM cells WHERE id IN (SELECT MAX(id) FROM cells WHERE status = ?1 AND \
                 started IS NOT NULL AND finished IS NOT NULL GROUP BY host, play, key) ORDER BY id"
            ),
            &[CellStatus::Ok.as_str().into()],
        )?;
        rows.iter().map(cell_row).collect()
    }

    /// A run's results: the steps' own metrics, never the monitors'.
    pub fn samples(&self, run: i64) -> Result<Vec<SampleRow>, StoreError> {
        self.samples_where("c.run_id = ?1", run, MetricKind::Benchmark)
    }

    /// A run's monitor metrics: what the monitors saw, summarised per step.
    pub fn monitor_samples(&self, run: i64) -> Result<Vec<SampleRow>, StoreError> {
        self.samples_where("c.run_id = ?1", run, MetricKind::Monitor)
    }

    /// One cell's samples so far (adaptive repetition reads them).
    pub fn cell_samples(&self, cell: i64) -> Result<Vec<SampleRow>, StoreError> {
        self.samples_where("s.cell_id = ?1", cell, MetricKind::Benchmark)
    }

    fn samples_where(&self, condition: &str, id: i64, kind: MetricKind) -> Result<Vec<SampleRow>, StoreError> {
        // NULL: stored before the kind was, a result.
        let of_kind = match kind {
            MetricKind::Benchmark => "(s.kind IS NULL OR s.kind = ?2)",
            MetricKind::Monitor => "s.kind = ?2",
        };
        let rows = self.db().query(
            &format!(
                "SELECT s.cell_id, s.step_index, s.step, s.workload, s.repetition, s.metric, s.value, s.unit, s.better,
                        s.dev_read_bytes, s.dev_write_bytes, s.info, s.attempt, s.wall_s
                 FROM samples s JOIN cells c ON c.id = s.cell_id WHERE {condition} AND {of_kind} ORDER BY s.id"
            ),
            &[id.into(), kind.as_str().into()],
        )?;
        rows.into_iter()
            .map(|r| {
                Ok(SampleRow {
                    cell_id: r.int(0),
                    step_index: r.int(1),
                    step: r.text(2),
                    workload: r.text(3),
                    repetition: r.int(4),
                    metric: r.text(5),
                    value: r.real(6),
                    unit: r.text(7),
                    better: status_of(&r, 8)?,
                    dev_read_bytes: r.opt_int(9),
                    dev_write_bytes: r.opt_int(10),
                    info: r.json(11),
                    attempt: r.opt_int(12),
                    wall_s: r.opt_real(13),
                    kind,
                })
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::testing::{new_run, places};
    use super::*;
    use benchrig_wire::steps::{Better, Metric, Usage};

    fn cell() -> crate::plan::Cell {
        let mut c = super::testing::cell("0:fs=ext4", "h1", 2);
        c.params = [("fs".to_string(), serde_json::json!("ext4"))].into_iter().collect();
        c
    }

    fn output(value: f64) -> StepOutput {
        StepOutput {
            metrics: vec![Metric { name: "throughput".into(), value, unit: "MB/s".into(), better: Better::Higher }],
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
            monitors: None,
        }
    }

    /// A read-then-write transaction (a cell's info merged) beside another
    /// connection's writes (a bisect's lease heartbeat, a second run on
    /// the file): SQLite fails a deferred transaction whose snapshot went
    /// stale at once, busy timeout or not ("database is locked"), so every
    /// transaction takes the write lock at BEGIN.
    #[test]
    fn read_then_write_transactions_beside_another_writer_all_succeed() {
        let places = places();
        for url in &places.urls {
            let s = Store::open(url).unwrap();
            let run = new_run(&s, None);
            let c = s.add_cell(run, &cell()).unwrap();
            let other = s.another().unwrap();
            use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
            let (stop, written) = (std::sync::Arc::new(AtomicBool::new(false)), std::sync::Arc::new(AtomicU64::new(0)));
            let writer = {
                let (stop, written) = (stop.clone(), written.clone());
                std::thread::spawn(move || {
                    while !stop.load(Ordering::Relaxed) {
                        other.set_host(run, "h1", HostStatus::Ok, None).unwrap();
                        written.fetch_add(1, Ordering::Relaxed);
                    }
                })
            };
            // The merges begin once the other connection writes.
            while written.load(Ordering::Relaxed) == 0 {
                std::thread::yield_now();
            }
            // At least 300 merges, and on until the other connection has
            // written 50 times meanwhile: a pause after each lets it take
            // the lock (SQLite's busy handler sleeps, and merges back to
            // back would starve it).
            let before = written.load(Ordering::Relaxed);
            let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
            let mut i = 0;
            while i < 300 || (written.load(Ordering::Relaxed) - before < 50 && std::time::Instant::now() < deadline) {
                let mut info = serde_json::Map::new();
                info.insert("i".into(), i.into());
                s.add_cell_info(c, &format!("setup {i}"), &info)
                    .unwrap_or_else(|e| panic!("{url:?}, merge {i}: {e:?}"));
                std::thread::sleep(std::time::Duration::from_micros(200));
                i += 1;
            }
            let during = written.load(Ordering::Relaxed) - before;
            stop.store(true, Ordering::Relaxed);
            writer.join().unwrap();
            assert!(during >= 50, "{url:?}: the other connection wrote {during} times while {i} merges ran");
        }
    }

    #[test]
    fn a_stored_better_is_read_back_typed_and_an_unknown_one_is_an_error() {
        let places = places();
        for url in &places.urls {
            let s = Store::open(url).unwrap();
            let run = new_run(&s, None);
            let c = s.add_cell(run, &cell()).unwrap();
            let step = StepRef { index: 0, name: "w", workload: "seq_write", repetition: 1, attempt: 1 };
            s.add_samples(c, &step, &output(412.5)).unwrap();
            assert_eq!(s.samples(run).unwrap()[0].better, Better::Higher);
            s.db().execute("UPDATE samples SET better = 'sideways'", &[]).unwrap();
            let e = s.samples(run).unwrap_err().to_string();
            assert!(e.contains("`sideways` is no status (or `better`)"), "{e}");
        }
    }

    #[test]
    fn a_run_round_trips() {
        let places = places();
        for url in &places.urls {
            round_trip(url);
        }
    }

    fn round_trip(url: &DbLocation) {
        let s = Store::open(url).unwrap();
        let run = new_run(&s, Some("n"));
        let attempt = s.begin_attempt(run, "ci@lab pid 1", &["h1".into(), "h0".into()]).unwrap();
        assert_eq!(attempt, 1);
        s.set_host(run, "h1", HostStatus::Ok, None).unwrap();
        s.set_host(run, "h0", HostStatus::Ok, None).unwrap();
        let c = s.add_cell(run, &cell()).unwrap();
        s.set_cell_status(c, CellStatus::Running, None).unwrap();
        s.add_samples(
            c,
            &StepRef { index: 0, name: "w", workload: "seq_write", repetition: 1, attempt: 1 },
            &output(412.5),
        )
        .unwrap();
        let monitored =
            StepOutput { monitors: Some(Box::new(crate::monitors::summary::tests::series())), ..output(50.0) };
        s.add_samples(c, &StepRef { index: 1, name: "r", workload: "seq_read", repetition: 1, attempt: 1 }, &monitored)
            .unwrap();
        let mut info = serde_json::Map::new();
        info.insert("mkfs_command".into(), "mkfs.ext4 -F /dev/loop0".into());
        s.add_cell_info(c, "setup 1", &info).unwrap();
        s.add_artifact(c, "setup 1: fs_dump", "Filesystem volume name:   <none>\n").unwrap();
        let logged = benchrig_wire::kernel_log::KernelLogLine {
            kind: benchrig_wire::kernel_log::KernelLogKind::IoError,
            usec: 44088044212,
            seq: 49597,
            text: "critical space allocation error, dev loop12, sector 16384".into(),
        };
        s.add_kernel_log(c, "h1", std::slice::from_ref(&logged)).unwrap();
        s.set_cell_status(c, CellStatus::Ok, None).unwrap();
        s.finish_attempt(run, attempt, RunStatus::Ok).unwrap();
        s.finish_run(run, RunStatus::Ok).unwrap();

        // Reopen: everything was committed.
        let s = Store::open(url).unwrap();
        let r = s.resolve_run("last").unwrap();
        assert_eq!((r.id, r.status, r.hosts, r.cells), (run, RunStatus::Ok, 2, 1));
        assert_eq!(s.resolve_run("n").unwrap().id, run);
        assert!(matches!(s.resolve_run("nope"), Err(StoreError::NoSuchRun(_))));
        let hosts: Vec<String> = s.hosts(run).unwrap().into_iter().map(|h| h.name).collect();
        assert_eq!(hosts, ["h1", "h0"], "hosts in the order they were added");
        let cells = s.cells(run).unwrap();
        assert_eq!(cells[0].params, serde_json::json!({"fs": "ext4"}));
        assert_eq!(cells[0].info.as_ref().unwrap()["setup 1"]["mkfs_command"], "mkfs.ext4 -F /dev/loop0");
        assert!(cells[0].finished.is_some());
        let samples = s.samples(run).unwrap();
        assert_eq!((samples[0].value, samples[0].dev_read_bytes, samples[0].repetition), (412.5, Some(4096), 1));
        let artifacts = s.artifacts(run).unwrap();
        assert_eq!((artifacts[0].cell_id, artifacts[0].name.as_str()), (c, "setup 1: fs_dump"));
        assert_eq!(s.kernel_log(run).unwrap(), [KernelLogRow { cell_id: c, host: "h1".into(), line: logged.clone() }]);
        // The results alone in `samples`, the monitors' summaries apart, marked; the series as sent.
        let results: Vec<(&str, i64)> = samples.iter().map(|x| (x.metric.as_str(), x.step_index)).collect();
        assert_eq!(results, [("throughput", 0), ("throughput", 1)]);
        assert!(samples.iter().all(|x| x.kind == MetricKind::Benchmark));
        let monitors = s.monitor_samples(run).unwrap();
        assert!(monitors.iter().all(|x| x.kind == MetricKind::Monitor && x.step_index == 1), "{monitors:?}");
        let util = monitors.iter().find(|x| x.metric == "%util loop3").expect("a %util summary");
        assert_eq!((util.value, util.unit.as_str()), (90.0, "%"));
        let series = s.monitor_series(run).unwrap();
        assert_eq!(series.len(), 1, "only the monitored step has a series");
        assert_eq!((series[0].cell_id, series[0].step_index, series[0].repetition, series[0].attempt), (c, 1, 1, 1));
        assert_eq!(series[0].series, crate::monitors::summary::tests::series());

        // Export, import into another database (twice into the same: refused), export again: equal but for ids.
        let doc = s.export_run(run).unwrap();
        let central = places();
        let same_kind = |u: &&DbLocation| std::mem::discriminant(*u) == std::mem::discriminant(url);
        let other = Store::open(central.urls.iter().find(same_kind).unwrap()).unwrap();
        new_run(&other, None);
        let imported = other.import_run(&doc).unwrap();
        assert_eq!(imported, 2, "a new id in the central database");
        let e = other.import_run(&doc).unwrap_err();
        assert!(e.to_string().contains("already in the database as run 2"), "{e}");
        let again = other.export_run(imported).unwrap();
        assert!(other.run_record(imported).unwrap().imported.is_some(), "marked imported");
        let strip = |mut d: Json| {
            d["run"]["id"] = Json::Null;
            d["run"]["imported"] = Json::Null;
            for k in ["hosts", "cells", "samples", "artifacts", "attempts", "kernel_log", "monitor_series", "summaries"]
            {
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
        let attempts = other.attempts(imported).unwrap();
        assert_eq!((attempts.len(), attempts[0].hosts.as_slice()), (1, &["h1".to_string(), "h0".into()][..]));
        assert_eq!(other.artifacts(imported).unwrap()[0].content, "Filesystem volume name:   <none>\n");
        assert_eq!(other.kernel_log(imported).unwrap()[0].line, logged, "the kernel log goes with the run");
        let moved = other.monitor_series(imported).unwrap();
        assert_eq!(moved[0].series, series[0].series, "the series travels with the run");
        assert_eq!(moved[0].cell_id, other.cells(imported).unwrap()[0].id, "renumbered to the imported cell");
        assert_eq!(other.monitor_samples(imported).unwrap().len(), monitors.len(), "and its summaries, still marked");
        let doc_cell_id = |d: &Json| d["cells"][0]["id"].clone();
        let mut broken = doc;
        broken["samples"][0]["cell_id"] = serde_json::json!(999);
        broken["run"]["started"] = serde_json::json!("another time");
        assert!(other.import_run(&broken).unwrap_err().to_string().contains("cell 999"));
        assert_eq!(other.runs().unwrap().len(), 2, "a refused import leaves nothing behind");
        let mut unknown = broken.clone();
        unknown["samples"][0]["cell_id"] = doc_cell_id(&unknown);
        unknown["cells"][0]["status"] = serde_json::json!("resumed");
        let e = other.import_run(&unknown).unwrap_err().to_string();
        assert!(e.contains("a cell's status `resumed` is none this benchrig knows"), "{e}");
        assert_eq!(other.runs().unwrap().len(), 2, "nor does an unknown status");
    }

    /// An export's keys are names the importer must not paste into SQL. On
    /// the store before this test, the key below turned the run's INSERT into
    /// an INSERT … SELECT that copied another run's playbook text (a lab's
    /// private playbook) into the imported run's limit, on both databases.
    #[test]
    fn an_export_is_data_a_key_that_is_no_column_is_refused_not_pasted_into_sql() {
        let places = places();
        for url in &places.urls {
            let s = Store::open(url).unwrap();
            let ev = serde_json::json!({});
            s.create_run(&NewRun {
                name: Some("secret"),
                playbook: "p.yml",
                playbook_text: "- hosts: all  # the lab's own",
                inventory: "x",
                limit: None,
                extra_vars: &ev,
                options: &ev,
            })
            .unwrap();
            let mut doc = s.export_run(1).unwrap();
            let mut run = serde_json::Map::new();
            for k in ["id", "playbook", "playbook_text", "inventory", "extra_vars", "benchrig_version"] {
                run.insert(k.into(), doc["run"][k].clone());
            }
            run.insert("name".into(), serde_json::json!("imported"));
            for k in ["started", "finished", "status", "options"] {
                run.insert(k.into(), doc["run"][k].clone());
            }
            let key = "limit_pattern) SELECT ?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, \
                       (SELECT playbook_text FROM runs WHERE name = 'secret') WHERE CAST(?11 AS TEXT) IS NOT NULL RETURNING id --";
            run.insert(key.into(), serde_json::json!("x"));
            doc["run"] = Json::Object(run);
            let result = s.import_run(&doc);
            let stolen: Vec<Option<String>> =
                s.runs().unwrap().iter().map(|r| s.run_record(r.id).unwrap().limit).collect();
            assert_eq!(stolen, [None], "{url:?}: nothing imported ({result:?})");
            let e = result.unwrap_err().to_string();
            assert!(
                e.contains("the run has a key \"limit_pattern) SELECT") && e.contains("no column of `runs`"),
                "{e}"
            );

            // A row deeper in, the same.
            let mut doc = s.export_run(1).unwrap();
            doc["run"]["started"] = serde_json::json!("another time");
            doc["hosts"] = serde_json::json!([{"name": "h", "status": "ok", "x) VALUES (1) --": 1}]);
            let e = s.import_run(&doc).unwrap_err().to_string();
            assert!(e.contains("hosts[0] has a key \"x) VALUES (1) --\""), "{e}");
            assert_eq!(s.runs().unwrap().len(), 1);
        }
    }

    #[test]
    fn two_writers_at_once_lose_nothing() {
        let places = places();
        for url in &places.urls {
            let first = Store::open(url).unwrap();
            let run = new_run(&first, None);
            let cell = first.add_cell(run, &cell()).unwrap();
            // Two orchestrators: two connections, writing at the same time.
            let writers: Vec<_> = (0..2)
                .map(|w| {
                    let url = url.clone();
                    std::thread::spawn(move || {
                        let s = Store::open(&url).unwrap();
                        for rep in 0..100u32 {
                            let step =
                                StepRef { index: w, name: "w", workload: "seq_write", repetition: rep + 1, attempt: 1 };
                            s.add_samples(cell, &step, &output(rep as f64)).unwrap();
                        }
                    })
                })
                .collect();
            for w in writers {
                w.join().unwrap();
            }
            let samples = first.samples(run).unwrap();
            assert_eq!(samples.len(), 200, "{url}");
            for w in 0..2 {
                let reps: Vec<i64> = samples.iter().filter(|x| x.step_index == w).map(|x| x.repetition).collect();
                assert_eq!(reps, (1..=100).collect::<Vec<_>>());
            }
        }
    }

    #[test]
    fn facts_cache_keeps_the_latest() {
        let places = places();
        for url in &places.urls {
            let s = Store::open(url).unwrap();
            assert!(s.cached_facts("h").unwrap().is_none());
            let mut f = Facts { arch: "i686".into(), ..Default::default() };
            s.set_host_facts(None, "h", &f).unwrap();
            f.arch = "x86_64".into();
            s.set_host_facts(None, "h", &f).unwrap();
            assert_eq!(s.cached_facts("h").unwrap().unwrap().arch, "x86_64");
        }
    }
}
