//! Bisects as the store keeps them: each one's recipe and revisions (JSON
//! the `bisect` module writes and reads; the store only keeps them), its
//! status and result, and a row per measured step, so that `bisect
//! --resume` goes on from the last step stored and `bisect show` tells the
//! evidence step by step.

use super::sql::Sql;
use super::{now, Store, StoreError};
use crate::status::{BisectPurpose, BisectStatus, BisectVerdict};

/// A bisect's record.
#[derive(Clone, Debug, PartialEq)]
pub struct BisectRow {
    pub id: i64,
    pub name: Option<String>,
    pub started: String,
    pub finished: Option<String>,
    pub status: BisectStatus,
    /// What it was asked (`bisect::Recipe` as JSON).
    pub recipe: String,
    /// The revisions from good to bad (`bisect::Revision`s as JSON).
    pub revisions: String,
    /// Its answer, once it has one (JSON).
    pub result: Option<String>,
}

/// One measured step of a bisect.
#[derive(Clone, Debug, PartialEq)]
pub struct BisectStepRow {
    /// Index into the bisect's revisions.
    pub revision: i64,
    pub purpose: BisectPurpose,
    pub build_run: Option<i64>,
    pub measure_run: Option<i64>,
    /// What the revision is after this step; none while more repetitions
    /// are wanted.
    pub verdict: Option<BisectVerdict>,
    /// Each followed series' figures after it (JSON).
    pub figures: Option<String>,
}

const COLUMNS: &str = "id, name, started, finished, status, recipe, revisions, result";

impl Store {
    /// A new bisect, running.
    pub fn create_bisect(&self, name: Option<&str>, recipe: &str, revisions: &str) -> Result<i64, StoreError> {
        self.db().insert(
            "INSERT INTO bisects (name, started, status, recipe, revisions) VALUES (?1, ?2, ?3, ?4, ?5)",
            &[name.into(), now().into(), BisectStatus::Running.as_str().into(), recipe.into(), revisions.into()],
        )
    }

    /// A bisect by id, or the newest of that name.
    pub fn bisect(&self, spec: &str) -> Result<BisectRow, StoreError> {
        let found = match spec.parse::<i64>() {
            Ok(id) => self.bisects()?.into_iter().find(|b| b.id == id),
            Err(_) => self.bisects()?.into_iter().rev().find(|b| b.name.as_deref() == Some(spec)),
        };
        found.ok_or_else(|| StoreError::NoSuchBisect(spec.to_string()))
    }

    /// Every bisect, oldest first.
    pub fn bisects(&self) -> Result<Vec<BisectRow>, StoreError> {
        let rows = self.db().query(&format!("SELECT {COLUMNS} FROM bisects ORDER BY id"), &[])?;
        rows.into_iter()
            .map(|r| {
                Ok(BisectRow {
                    id: r.int(0),
                    name: r.opt_text(1),
                    started: r.text(2),
                    finished: r.opt_text(3),
                    status: super::status_of(&r, 4)?,
                    recipe: r.text(5),
                    revisions: r.text(6),
                    result: r.opt_text(7),
                })
            })
            .collect()
    }

    pub fn add_bisect_step(&self, bisect: i64, s: &BisectStepRow) -> Result<(), StoreError> {
        self.db().execute(
            "INSERT INTO bisect_steps (bisect_id, revision, purpose, build_run, measure_run, verdict, figures)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)",
            &[
                bisect.into(),
                s.revision.into(),
                s.purpose.as_str().into(),
                s.build_run.into(),
                s.measure_run.into(),
                s.verdict.map(BisectVerdict::as_str).into(),
                s.figures.as_deref().into(),
            ],
        )?;
        Ok(())
    }

    /// A bisect's steps in the order taken.
    pub fn bisect_steps(&self, bisect: i64) -> Result<Vec<BisectStepRow>, StoreError> {
        let rows = self.db().query(
            "SELECT revision, purpose, build_run, measure_run, verdict, figures FROM bisect_steps
             WHERE bisect_id = ?1 ORDER BY id",
            &[bisect.into()],
        )?;
        rows.into_iter()
            .map(|r| {
                Ok(BisectStepRow {
                    revision: r.int(0),
                    purpose: super::status_of(&r, 1)?,
                    build_run: r.opt_int(2),
                    measure_run: r.opt_int(3),
                    verdict: r.opt_text(4).as_deref().map(super::word_as).transpose()?,
                    figures: r.opt_text(5),
                })
            })
            .collect()
    }

    /// A bisect's end: its status and answer (`finished` stays empty while
    /// it is running).
    pub fn finish_bisect(&self, bisect: i64, status: BisectStatus, result: Option<&str>) -> Result<(), StoreError> {
        let finished = (status != BisectStatus::Running).then(now);
        self.db().execute(
            "UPDATE bisects SET status = ?2, result = ?3, finished = ?4 WHERE id = ?1",
            &[bisect.into(), status.as_str().into(), result.into(), finished.into()],
        )?;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::super::testing::places;
    use super::*;

    #[test]
    fn a_bisect_and_its_steps_read_back_on_both_databases() {
        for at in &places().urls {
            let s = Store::open(at).unwrap();
            let id = s.create_bisect(Some("slow-fsync"), "{\"good\":\"a\"}", "[]").unwrap();
            let step = BisectStepRow {
                revision: 3,
                purpose: BisectPurpose::Candidate,
                build_run: Some(7),
                measure_run: Some(8),
                verdict: Some(BisectVerdict::Bad),
                figures: Some("{}".into()),
            };
            s.add_bisect_step(id, &step).unwrap();
            let more = BisectStepRow { verdict: None, build_run: None, figures: None, ..step.clone() };
            s.add_bisect_step(id, &more).unwrap();
            assert_eq!(s.bisect_steps(id).unwrap(), [step, more], "{at}");
            let b = s.bisect("slow-fsync").unwrap();
            assert_eq!((b.id, b.status, b.finished.is_none()), (id, BisectStatus::Running, true), "{at}");
            s.finish_bisect(id, BisectStatus::Found, Some("{\"first_bad\":3}")).unwrap();
            let b = s.bisect(&id.to_string()).unwrap();
            assert_eq!((b.status, b.result.as_deref()), (BisectStatus::Found, Some("{\"first_bad\":3}")), "{at}");
            assert!(b.finished.is_some());
            assert!(matches!(s.bisect("nope"), Err(StoreError::NoSuchBisect(_))));
        }
    }
}
