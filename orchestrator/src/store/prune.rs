//! Retention in the store: a run emptied of its samples, monitor series
//! and artifacts (its summaries, cells, hosts and facts stay, so history
//! still reads it), runs marked as baselines, and the space given back.
//! Which runs to prune is `retention`'s decision, not the store's.

use super::db::Db;
use super::sql::Sql;
use super::{now, Store, StoreError};

/// What pruning a run took out of it (or would, counted by `prunable`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Removed {
    pub samples: u64,
    pub series: u64,
    pub artifacts: u64,
}

impl Removed {
    pub fn add(&mut self, o: Removed) {
        self.samples += o.samples;
        self.series += o.series;
        self.artifacts += o.artifacts;
    }
}

/// The tables a prune empties for a run, each reached through its cells.
const EMPTIED: [&str; 3] = ["samples", "monitor_series", "artifacts"];

/// How the space a prune freed was given back.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Reclaimed {
    /// SQLite's incremental vacuum: the freed pages cut off the file.
    Incremental,
    /// A full VACUUM, once, to switch the file to incremental vacuum.
    Vacuum,
    /// SQLite could not vacuum now (another process is writing): the
    /// freed pages are reused by new runs, the file does not shrink yet.
    Busy(String),
    /// PostgreSQL's VACUUM: the space is reused by new rows; the files
    /// shrink only with `VACUUM FULL`, which locks the tables.
    Reusable,
}

impl Store {
    /// Mark a run as a baseline (`prune` never touches it), or unmark it.
    pub fn mark_baseline(&self, run: i64, baseline: bool) -> Result<(), StoreError> {
        let stamp = baseline.then(now);
        self.db().execute("UPDATE runs SET baseline = ?2 WHERE id = ?1", &[run.into(), stamp.into()])?;
        Ok(())
    }

    /// What pruning `run` would remove.
    pub fn prunable(&self, run: i64) -> Result<Removed, StoreError> {
        let mut db = self.db();
        let mut count = |table: &str| -> Result<u64, StoreError> {
            let sql = format!("SELECT COUNT(*) FROM {table} WHERE cell_id IN (SELECT id FROM cells WHERE run_id = ?1)");
            Ok(db.query_one(&sql, &[run.into()])?.and_then(|r| r.opt_int(0)).unwrap_or(0) as u64)
        };
        Ok(Removed { samples: count(EMPTIED[0])?, series: count(EMPTIED[1])?, artifacts: count(EMPTIED[2])? })
    }

    /// Empty `run` of its samples, series and artifacts and stamp it
    /// pruned, in one transaction (a prune killed half-way leaves each run
    /// whole or pruned); its summaries are written first when it has none.
    pub fn prune_run(&self, run: i64) -> Result<Removed, StoreError> {
        if self.summaries(run, None)?.is_empty() {
            self.summarise_run(run)?;
        }
        self.db().transaction(|db| {
            let mut gone = [0u64; 3];
            for (table, n) in EMPTIED.iter().zip(&mut gone) {
                let sql = format!("DELETE FROM {table} WHERE cell_id IN (SELECT id FROM cells WHERE run_id = ?1)");
                *n = db.execute(&sql, &[run.into()])?;
            }
            db.execute("UPDATE runs SET pruned = ?2 WHERE id = ?1", &[run.into(), now().into()])?;
            Ok(Removed { samples: gone[0], series: gone[1], artifacts: gone[2] })
        })
    }

    /// The database's size in bytes: SQLite's file (its pages), or
    /// PostgreSQL's database.
    pub fn size_bytes(&self) -> Result<u64, StoreError> {
        let mut db = self.db();
        let one = |db: &mut Db, sql: &str| -> Result<i64, StoreError> {
            Ok(db.query_one(sql, &[])?.and_then(|r| r.opt_int(0)).unwrap_or(0))
        };
        Ok(match &*db {
            Db::Sqlite(_) => (one(&mut db, "PRAGMA page_count")? * one(&mut db, "PRAGMA page_size")?) as u64,
            Db::Postgres(_) => one(&mut db, "SELECT pg_database_size(current_database())")? as u64,
        })
    }

    /// Give back the space pruned rows left (`Reclaimed` says how).
    pub fn reclaim(&self) -> Result<Reclaimed, StoreError> {
        let mut db = self.db();
        if matches!(&*db, Db::Postgres(_)) {
            db.execute(&format!("VACUUM (ANALYZE) {}", EMPTIED.join(", ")), &[])?;
            return Ok(Reclaimed::Reusable);
        }
        // 2: incremental (`sqlite::open` sets it on a new file).
        let mode = db.query_one("PRAGMA auto_vacuum", &[])?.and_then(|r| r.opt_int(0)).unwrap_or(0);
        let done = if mode == 2 {
            // It answers a row per page freed: read, not executed.
            db.query("PRAGMA incremental_vacuum", &[]).map(|_| Reclaimed::Incremental)
        } else {
            db.execute("PRAGMA auto_vacuum = INCREMENTAL", &[])?;
            db.execute("VACUUM", &[]).map(|_| Reclaimed::Vacuum)
        };
        match done {
            Err(StoreError::Sql(e)) if e.sqlite_error_code() == Some(rusqlite::ErrorCode::DatabaseBusy) => {
                Ok(Reclaimed::Busy(e.to_string()))
            }
            other => other,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::testing::{cell, new_run, places};
    use super::super::StepRef;
    use super::*;
    use benchrig_wire::steps::{Better, Metric, StepOutput};

    #[test]
    fn a_pruned_run_keeps_its_summaries_and_loses_its_samples_and_the_file_shrinks() {
        for at in &places().urls {
            let s = Store::open(at).unwrap();
            let mut runs = Vec::new();
            for night in 0..3 {
                let run = new_run(&s, Some(&format!("n{night}")));
                let c = s.add_cell(run, &cell("0:x", "h1", 200)).unwrap();
                for rep in 1..=200 {
                    let metrics =
                        vec![Metric { name: "m".into(), value: rep as f64, unit: "s".into(), better: Better::Lower }];
                    let step = StepRef { index: 0, name: "w", workload: "exec", repetition: rep, attempt: 1 };
                    s.add_samples(c, &step, &StepOutput { metrics, ..Default::default() }).unwrap();
                }
                s.add_artifact(c, "out", &"x".repeat(100_000)).unwrap();
                s.finish_run(run, crate::status::RunStatus::Ok).unwrap();
                runs.push(run);
            }
            let before = s.size_bytes().unwrap();
            let summaries = s.summaries(runs[0], None).unwrap();
            assert_eq!(s.prunable(runs[0]).unwrap(), Removed { samples: 200, series: 0, artifacts: 1 });
            assert_eq!(s.prune_run(runs[0]).unwrap(), Removed { samples: 200, series: 0, artifacts: 1 });
            assert_eq!(s.prunable(runs[0]).unwrap(), Removed::default(), "nothing left to prune");
            assert!(s.samples(runs[0]).unwrap().is_empty() && s.artifacts(runs[0]).unwrap().is_empty());
            assert_eq!(s.summaries(runs[0], None).unwrap(), summaries, "{at}: the summaries stay");
            assert_eq!(s.samples(runs[1]).unwrap().len(), 200, "the other runs untouched");
            let row = s.resolve_run("n0").unwrap();
            assert!(row.pruned.is_some() && row.baseline.is_none());
            s.mark_baseline(runs[1], true).unwrap();
            assert!(s.resolve_run("n1").unwrap().baseline.is_some());
            let how = s.reclaim().unwrap();
            if at.sqlite_path().is_some() {
                // A new file vacuums incrementally: no full VACUUM needed.
                assert_eq!(how, Reclaimed::Incremental);
                let after = s.size_bytes().unwrap();
                assert!(after + 100_000 <= before, "{before} → {after}");
            } else {
                assert_eq!(how, Reclaimed::Reusable);
            }
        }
    }
}
