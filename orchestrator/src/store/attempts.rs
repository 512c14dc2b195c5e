//! What `benchrig run --resume` reads and writes: the run as it was started
//! (to plan it again from what is stored, not from today's files), each
//! attempt at it (when, by whom, on which hosts, how it ended), a cell by
//! its key, and how far a cell's repetitions got.

use super::sql::Sql;
use super::{cell_row, now, status_of, CellRow, Store, StoreError, CELL_COLUMNS};
use crate::status::{CellStatus, RunStatus};
use serde_json::Value as Json;

/// A run as it was started: everything needed to plan it again.
#[derive(Clone, Debug)]
pub struct RunRecord {
    pub id: i64,
    pub name: Option<String>,
    /// The playbook's path as it was given.
    pub playbook: String,
    pub playbook_text: String,
    /// The inventory sources, joined for display.
    pub inventory: String,
    pub limit: Option<String>,
    pub extra_vars: Json,
    /// `run::recipe::Recipe`'s part not in the columns above: playbook,
    /// inventory paths and tags; none for runs stored before options were.
    pub options: Option<Json>,
    pub status: RunStatus,
    /// The benchrig that started it.
    pub benchrig_version: String,
    /// When `benchrig import` stored it; none for a run made here.
    pub imported: Option<String>,
}

/// One attempt at a run: the first, then one per `--resume`.
#[derive(Clone, Debug, serde::Serialize)]
pub struct AttemptRow {
    pub attempt: i64,
    pub started: String,
    pub finished: Option<String>,
    /// `user@machine pid N`.
    pub holder: String,
    /// The hosts it worked on.
    pub hosts: Vec<String>,
    pub status: RunStatus,
}

impl Store {
    pub fn run_record(&self, run: i64) -> Result<RunRecord, StoreError> {
        let row = self.db().query_one(
            "SELECT id, name, playbook, playbook_text, inventory, limit_pattern, extra_vars, options, status,
                    benchrig_version, imported
             FROM runs WHERE id = ?1",
            &[run.into()],
        )?;
        let r = row.ok_or_else(|| StoreError::NoSuchRun(run.to_string()))?;
        Ok(RunRecord {
            id: r.int(0),
            name: r.opt_text(1),
            playbook: r.text(2),
            playbook_text: r.text(3),
            inventory: r.text(4),
            limit: r.opt_text(5),
            extra_vars: r.json(6).unwrap_or(Json::Null),
            options: r.json(7),
            status: status_of(&r, 8)?,
            benchrig_version: r.text(9),
            imported: r.opt_text(10),
        })
    }

    /// Start attempt number N+1 of `run` (1 for a new run) on `hosts`: the
    /// run is `running` again until the attempt ends. An earlier attempt
    /// still `running` (killed) is marked interrupted, its end unknown. A
    /// run stored before attempts were gets its first one written from the
    /// run's own times.
    pub fn begin_attempt(&self, run: i64, holder: &str, hosts: &[String]) -> Result<i64, StoreError> {
        let mut db = self.db();
        db.transaction(|db| {
            let last = db.query_one("SELECT MAX(attempt) FROM attempts WHERE run_id = ?1", &[run.into()])?;
            let mut last = last.and_then(|r| r.opt_int(0)).unwrap_or(0);
            let ran_before = db.query_one("SELECT COUNT(*) FROM cells WHERE run_id = ?1", &[run.into()])?;
            if last == 0 && ran_before.is_some_and(|r| r.int(0) > 0) {
                db.execute(
                    "INSERT INTO attempts (run_id, attempt, started, finished, holder, hosts, status)
                     SELECT id, 1, started, finished, ?2, ?3, status FROM runs WHERE id = ?1",
                    &[run.into(), "(not recorded)".into(), "[]".into()],
                )?;
                last = 1;
            }
            // One still `running` was cut off: its orchestrator was killed.
            db.execute(
                "UPDATE attempts SET status = ?2 WHERE run_id = ?1 AND status = ?3",
                &[run.into(), RunStatus::Interrupted.as_str().into(), RunStatus::Running.as_str().into()],
            )?;
            let attempt = last + 1;
            db.execute(
                "INSERT INTO attempts (run_id, attempt, started, holder, hosts, status) VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
                &[
                    run.into(),
                    attempt.into(),
                    now().into(),
                    holder.into(),
                    Json::from(hosts).to_string().into(),
                    RunStatus::Running.as_str().into(),
                ],
            )?;
            db.execute(
                "UPDATE runs SET status = ?2, finished = NULL WHERE id = ?1",
                &[run.into(), RunStatus::Running.as_str().into()],
            )?;
            Ok(attempt)
        })
    }

    /// How an attempt ended (the run's own status is `finish_run`'s).
    pub fn finish_attempt(&self, run: i64, attempt: i64, status: RunStatus) -> Result<(), StoreError> {
        self.db().execute(
            "UPDATE attempts SET status = ?3, finished = ?4 WHERE run_id = ?1 AND attempt = ?2",
            &[run.into(), attempt.into(), status.as_str().into(), now().into()],
        )?;
        Ok(())
    }

    pub fn attempts(&self, run: i64) -> Result<Vec<AttemptRow>, StoreError> {
        let rows = self.db().query(
            "SELECT attempt, started, finished, holder, hosts, status FROM attempts WHERE run_id = ?1 ORDER BY attempt",
            &[run.into()],
        )?;
        rows.into_iter()
            .map(|r| {
                let hosts = r.json(4).and_then(|j| serde_json::from_value(j).ok()).unwrap_or_default();
                Ok(AttemptRow {
                    attempt: r.int(0),
                    started: r.text(1),
                    finished: r.opt_text(2),
                    holder: r.text(3),
                    hosts,
                    status: status_of(&r, 5)?,
                })
            })
            .collect()
    }

    /// The cell of `run` on `host` with `key`, as it stands now.
    pub fn cell_by_key(&self, run: i64, host: &str, key: &str) -> Result<Option<CellRow>, StoreError> {
        let row = self.db().query_one(
            &format!("SELECT {CELL_COLUMNS} FROM cells WHERE run_id = ?1 AND host = ?2 AND key = ?3"),
            &[run.into(), host.into(), key.into()],
        )?;
        row.as_ref().map(cell_row).transpose()
    }

    /// Whether a cell of `run` on `host` is stored as failed.
    pub fn has_failed_cell(&self, run: i64, host: &str) -> Result<bool, StoreError> {
        let row = self.db().query_one(
            "SELECT 1 FROM cells WHERE run_id = ?1 AND host = ?2 AND status = ?3 LIMIT 1",
            &[run.into(), host.into(), CellStatus::Failed.as_str().into()],
        )?;
        Ok(row.is_some())
    }

    /// Repetitions 1..=`done` of a cell are recorded in full.
    pub fn set_reps_done(&self, cell: i64, done: u32) -> Result<(), StoreError> {
        self.db().execute("UPDATE cells SET reps_done = ?2 WHERE id = ?1", &[cell.into(), done.into()])?;
        Ok(())
    }

    /// Drop the samples of repetitions after `done`: a repetition cut off
    /// part-way (its other steps never ran) is measured again in full, not
    /// left beside its repeat. Returns how many samples went.
    /// Their monitor series go with them.
    pub fn drop_partial_repetitions(&self, cell: i64, done: u32) -> Result<u64, StoreError> {
        self.db().transaction(|db| {
            db.execute(
                "DELETE FROM monitor_series WHERE cell_id = ?1 AND repetition > ?2",
                &[cell.into(), done.into()],
            )?;
            db.execute("DELETE FROM samples WHERE cell_id = ?1 AND repetition > ?2", &[cell.into(), done.into()])
        })
    }
}

#[cfg(test)]
mod tests {
    use super::super::testing::{cell, places};
    use super::super::{NewRun, StepRef};
    use super::*;
    use crate::status::CellStatus;
    use benchrig_wire::steps::{Better, Metric, StepOutput};

    fn sample(s: &Store, cell: i64, index: usize, rep: u32, attempt: u32) {
        let out = StepOutput {
            metrics: vec![Metric { name: "m".into(), value: 1.0, unit: "s".into(), better: Better::Lower }],
            usage: None,
            info: Default::default(),
            monitors: None,
        };
        let step = StepRef { index, name: "w", workload: "exec", repetition: rep, attempt };
        s.add_samples(cell, &step, &out).unwrap();
    }

    /// A monitored step's result (step index 5), with its series.
    fn monitored(s: &Store, cell: i64, rep: u32) -> usize {
        let series = crate::monitors::summary::tests::series();
        let summaries = crate::monitors::summary::summarise(&series).len();
        let out = StepOutput {
            metrics: vec![Metric { name: "m".into(), value: 1.0, unit: "s".into(), better: Better::Lower }],
            monitors: Some(Box::new(series)),
            ..Default::default()
        };
        s.add_samples(cell, &StepRef { index: 5, name: "r", workload: "seq_read", repetition: rep, attempt: 1 }, &out)
            .unwrap();
        1 + summaries
    }

    #[test]
    fn a_cut_off_repetition_takes_its_monitor_series_with_it() {
        for url in &places().urls {
            let s = Store::open(url).unwrap();
            let ev = serde_json::json!({});
            let nr = NewRun {
                name: None,
                playbook: "pb.yml",
                playbook_text: "- hosts: all\n",
                inventory: "i",
                limit: None,
                extra_vars: &ev,
                options: &ev,
            };
            let run = s.create_run(&nr).unwrap();
            let id = s.add_cell(run, &cell("0:n=1", "h1", 3)).unwrap();
            monitored(&s, id, 1);
            let cut = monitored(&s, id, 2);
            let reps = |s: &Store| s.monitor_series(run).unwrap().iter().map(|x| x.repetition).collect::<Vec<_>>();
            assert_eq!(reps(&s), [1, 2]);
            assert_eq!(s.drop_partial_repetitions(id, 1).unwrap(), cut as u64, "{url}: its result and its summaries");
            assert_eq!(reps(&s), [1], "{url}");
            assert!(s.monitor_samples(run).unwrap().iter().all(|x| x.repetition == 1), "{url}");
        }
    }

    #[test]
    fn attempts_keep_what_each_did_and_a_cut_off_repetition_goes() {
        for url in &places().urls {
            let s = Store::open(url).unwrap();
            let options = serde_json::json!({"inventory": ["/lab/inv.yml"], "tags": ["a"], "skip_tags": []});
            let extra = serde_json::json!({"size": "64M"});
            let run = s
                .create_run(&NewRun {
                    name: Some("night"),
                    playbook: "pb.yml",
                    playbook_text: "- hosts: all\n",
                    inventory: "/lab/inv.yml",
                    limit: Some("fast*"),
                    extra_vars: &extra,
                    options: &options,
                })
                .unwrap();
            let rec = s.run_record(run).unwrap();
            assert_eq!(
                (rec.limit.as_deref(), &rec.extra_vars, rec.options.as_ref()),
                (Some("fast*"), &extra, Some(&options))
            );
            assert_eq!(s.begin_attempt(run, "a@x pid 1", &["h1".into(), "h2".into()]).unwrap(), 1);
            let mut cell = cell("0:n=1", "h1", 3);
            let id = s.add_cell(run, &cell).unwrap();
            cell.host = "h2".into();
            s.add_cell(run, &cell).unwrap();
            // Repetition 1 in full, repetition 2 cut off after its first step.
            sample(&s, id, 0, 1, 1);
            sample(&s, id, 1, 1, 1);
            s.set_reps_done(id, 1).unwrap();
            sample(&s, id, 0, 2, 1);
            s.set_cell_status(id, CellStatus::Skipped, Some("interrupted")).unwrap();
            // Killed: attempt 1 never ends on its own.

            let again = s.begin_attempt(run, "a@x pid 2", &["h1".into()]).unwrap();
            assert_eq!(again, 2);
            assert_eq!(s.resolve_run("night").unwrap().status, RunStatus::Running, "{url}: running again");
            let other = s.cell_by_key(run, "h2", "0:n=1").unwrap().unwrap();
            assert_eq!(other.reps_done, Some(0), "{url}: none recorded is 0, not unknown");
            assert!(!s.has_failed_cell(run, "h1").unwrap());
            s.set_cell_status(other.id, CellStatus::Failed, Some("exit 1")).unwrap();
            assert!(s.has_failed_cell(run, "h2").unwrap() && !s.has_failed_cell(run, "h1").unwrap(), "{url}");
            let found = s.cell_by_key(run, "h1", "0:n=1").unwrap().unwrap();
            assert_eq!((found.id, found.reps_done, found.status), (id, Some(1), CellStatus::Skipped));
            assert!(s.cell_by_key(run, "h3", "0:n=1").unwrap().is_none());
            assert_eq!(s.drop_partial_repetitions(id, 1).unwrap(), 1, "{url}: the cut-off repetition's sample");
            sample(&s, id, 0, 2, again as u32);
            let kept: Vec<(i64, Option<i64>)> =
                s.cell_samples(id).unwrap().iter().map(|x| (x.repetition, x.attempt)).collect();
            assert_eq!(kept, [(1, Some(1)), (1, Some(1)), (2, Some(2))]);
            s.finish_attempt(run, again, RunStatus::Ok).unwrap();
            let attempts = s.attempts(run).unwrap();
            let seen: Vec<(i64, RunStatus, usize, bool)> =
                attempts.iter().map(|a| (a.attempt, a.status, a.hosts.len(), a.finished.is_some())).collect();
            assert_eq!(seen, [(1, RunStatus::Interrupted, 2, false), (2, RunStatus::Ok, 1, true)], "{url}");
        }
    }

    #[test]
    fn a_run_stored_before_attempts_were_gets_its_first_from_the_run() {
        for url in &places().urls {
            let s = Store::open(url).unwrap();
            let none = serde_json::json!({});
            let run = s
                .create_run(&NewRun {
                    name: None,
                    playbook: "pb.yml",
                    playbook_text: "",
                    inventory: "",
                    limit: None,
                    extra_vars: &none,
                    options: &none,
                })
                .unwrap();
            let cell = cell("0:", "h", 1);
            s.add_cell(run, &cell).unwrap();
            s.finish_run(run, RunStatus::Interrupted).unwrap();
            assert_eq!(s.begin_attempt(run, "a@x pid 2", &[]).unwrap(), 2);
            let first = &s.attempts(run).unwrap()[0];
            assert_eq!(
                (first.attempt, first.status, first.holder.as_str()),
                (1, RunStatus::Interrupted, "(not recorded)")
            );
        }
    }
}
