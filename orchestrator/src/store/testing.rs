//! Where the store's tests run: a SQLite file, and a fresh PostgreSQL
//! database when `BENCHRIG_TEST_POSTGRES` names a server (`ci/test.sh`
//! starts one with `ci/postgres.sh`). Each call gives new, empty databases,
//! dropped again when the `Places` is.

use super::location::DbLocation;
use super::postgres::Pg;
use super::sql::Sql;

pub struct Places {
    _dir: tempfile::TempDir,
    /// The SQLite file first, then the PostgreSQL database if there is one.
    pub urls: Vec<DbLocation>,
    /// The server's URL and the database made on it.
    pg: Option<(String, String)>,
}

impl Places {
    /// The PostgreSQL database, when a server was named.
    pub fn postgres(&self) -> Option<&DbLocation> {
        self.urls.iter().find(|u| matches!(u, DbLocation::Postgres(_)))
    }
}

impl Drop for Places {
    fn drop(&mut self) {
        if let Some((base, name)) = &self.pg {
            if let Ok(mut pg) = Pg::connect(base) {
                let _ = pg.execute(&format!("DROP DATABASE IF EXISTS {name} WITH (FORCE)"), &[]);
            }
        }
    }
}

pub fn places() -> Places {
    static N: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(0);
    let dir = tempfile::tempdir().unwrap();
    let mut urls = vec![DbLocation::Sqlite(dir.path().join("b.db"))];
    let mut pg = None;
    if let Ok(base) = std::env::var("BENCHRIG_TEST_POSTGRES") {
        let name = format!("benchrig_t{}_{}", std::process::id(), N.fetch_add(1, std::sync::atomic::Ordering::SeqCst));
        let mut admin = Pg::connect(&base).unwrap();
        admin.execute(&format!("DROP DATABASE IF EXISTS {name}"), &[]).unwrap();
        admin.execute(&format!("CREATE DATABASE {name}"), &[]).unwrap();
        // Same server and user, the new database: the URL's path is the database name.
        let (head, query) = base.split_once('?').map_or((base.as_str(), ""), |(h, q)| (h, q));
        let server = &head[..head.rfind('/').unwrap()];
        let q = if query.is_empty() { String::new() } else { format!("?{query}") };
        urls.push(DbLocation::Postgres(format!("{server}/{name}{q}")));
        pg = Some((base, name));
    }
    Places { _dir: dir, urls, pg }
}

/// A new run named `name`, of a one-line playbook, in `s`.
pub fn new_run(s: &super::Store, name: Option<&str>) -> i64 {
    let ev = serde_json::json!({});
    s.create_run(&super::NewRun {
        name,
        playbook: "p.yml",
        playbook_text: "- hosts: all",
        inventory: "x",
        limit: None,
        extra_vars: &ev,
        options: &ev,
    })
    .unwrap()
}

/// A stored run's row: one host, one cell, neither pruned nor a baseline.
pub fn run_row(id: i64, name: &str, playbook: &str, started: &str, status: crate::status::RunStatus) -> super::RunRow {
    super::RunRow {
        id,
        name: Some(name.into()),
        playbook: playbook.into(),
        started: started.into(),
        finished: None,
        status,
        hosts: 1,
        cells: 1,
        pruned: None,
        baseline: None,
    }
}

/// A cell with no steps: `repeat` repetitions of nothing, for bookkeeping tests.
pub fn cell(key: &str, host: &str, repeat: u32) -> crate::plan::Cell {
    crate::plan::Cell {
        key: key.into(),
        host: host.into(),
        play_index: 0,
        play_name: "q".into(),
        params: Default::default(),
        repeat,
        policy: crate::plan::RepeatPolicy::fixed(repeat),
        setup: vec![],
        before_each: vec![],
        benchmark: vec![],
        teardown: vec![],
        unsupported: None,
        fresh: crate::playbook::Fresh::Cell,
        monitor: None,
        devices: vec![],
        kernel: None,
    }
}

/// A stored cell of run-less tests: ok, no parameters, steps or times.
pub fn cell_row(id: i64, host: &str) -> super::CellRow {
    super::CellRow {
        id,
        host: host.into(),
        play_index: 0,
        play: "p".into(),
        key: format!("0:{id}"),
        params: serde_json::json!({}),
        repeat: 1,
        status: crate::status::CellStatus::Ok,
        reason: None,
        info: None,
        steps: None,
        started: None,
        finished: None,
        reps_done: None,
    }
}

/// A stored sample of step 0 (`read`, higher is better) of cell `cell_id`.
pub fn sample_row(cell_id: i64, repetition: i64, metric: &str, value: f64) -> super::SampleRow {
    super::SampleRow {
        cell_id,
        step_index: 0,
        step: "read".into(),
        workload: "seq_read".into(),
        repetition,
        metric: metric.into(),
        value,
        unit: "MB/s".into(),
        better: benchrig_wire::steps::Better::Higher,
        dev_read_bytes: None,
        dev_write_bytes: None,
        info: None,
        attempt: Some(1),
        wall_s: None,
        kind: crate::monitors::MetricKind::Benchmark,
    }
}
