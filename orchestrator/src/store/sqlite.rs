//! The SQLite adapter: a file in WAL mode (every sample committed as it
//! arrives, readers never waiting on a run), opened safely by several
//! processes at once, migrated with `PRAGMA user_version`. Every
//! transaction begins IMMEDIATE (`Sql::begin`): a deferred one fails at its
//! first write when another connection committed since it read (test:
//! `store::tests::read_then_write_transactions_beside_another_writer_all_succeed`).

use super::error::StoreError;
use super::sql::{EachRow, Sql};
use super::value::{Row, Val, ValRef};
use rusqlite::{Connection, Transaction, TransactionBehavior};
use std::path::Path;

/// How long a statement waits for another process's lock on a SQLite file.
const BUSY_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(30);

pub struct Sqlite {
    conn: Connection,
}

impl Sqlite {
    /// Open (or create) the file, in WAL mode with foreign keys on.
    pub fn open(path: &Path) -> Result<Sqlite, StoreError> {
        let conn =
            Connection::open(path).map_err(|source| StoreError::Open { path: path.display().to_string(), source })?;
        // Before anything that locks: switching a fresh file to WAL and
        // migrating both wait for a writer in another process rather than fail.
        conn.busy_timeout(BUSY_TIMEOUT)?;
        // A new file vacuums incrementally, so that `prune` gives space back
        // without rewriting the file: set before its first page is written
        // (on a file that has tables it waits for a VACUUM, which `prune`
        // runs once).
        conn.pragma_update(None, "auto_vacuum", "INCREMENTAL")?;
        set_wal(&conn)?;
        conn.pragma_update(None, "synchronous", "NORMAL")?;
        conn.pragma_update(None, "foreign_keys", "ON")?;
        Ok(Sqlite { conn })
    }

    /// Bring the file to the schema of `migrations` (migration N brings
    /// `user_version` from N-1 to N). Several processes may open one fresh
    /// file at once (two runners sharing it, `benchrig runs` polled while a
    /// run starts): the version is read again under the write lock, so only
    /// the first applies a migration and the others find it done. `shown`
    /// names the file in errors.
    pub fn migrate(&self, migrations: &[&str], shown: &str) -> Result<(), StoreError> {
        let known = migrations.len() as i64;
        let version = |conn: &Connection| -> Result<i64, StoreError> {
            let current: i64 = conn.pragma_query_value(None, "user_version", |r| r.get(0))?;
            if current > known {
                return Err(StoreError::TooNew { path: shown.to_string(), found: current, known });
            }
            Ok(current)
        };
        // Up to date (the common case): no write lock, so readers never wait on a run.
        if version(&self.conn)? == known {
            return Ok(());
        }
        // IMMEDIATE takes the write lock at BEGIN (waiting out the busy
        // timeout), so nobody can migrate between our read and our writes.
        let tx = Transaction::new_unchecked(&self.conn, TransactionBehavior::Immediate)?;
        let current = version(&tx)?;
        for sql in migrations.iter().skip(current as usize) {
            tx.execute_batch(sql)?;
        }
        tx.pragma_update(None, "user_version", known)?;
        tx.commit()?;
        Ok(())
    }
}

/// Switch to WAL (a no-op once the file is WAL). It takes an exclusive lock,
/// and when two connections opening one fresh file both hold the read lock
/// and want it, SQLite breaks that deadlock by failing one at once, busy
/// timeout or not: wait and retry then, as the busy handler would.
fn set_wal(conn: &Connection) -> Result<(), rusqlite::Error> {
    let deadline = std::time::Instant::now() + BUSY_TIMEOUT;
    loop {
        match conn.pragma_update(None, "journal_mode", "WAL") {
            Err(rusqlite::Error::SqliteFailure(e, _))
                if e.code == rusqlite::ErrorCode::DatabaseBusy && std::time::Instant::now() < deadline =>
            {
                std::thread::sleep(std::time::Duration::from_millis(5));
            }
            r => return r,
        }
    }
}

impl Sql for Sqlite {
    fn execute(&mut self, sql: &str, params: &[Val]) -> Result<u64, StoreError> {
        Ok(self.conn.execute(sql, rusqlite::params_from_iter(params.iter().map(to_sqlite)))? as u64)
    }

    fn query_named(&mut self, sql: &str, params: &[Val]) -> Result<(Vec<String>, Vec<Row>), StoreError> {
        let mut st = self.conn.prepare(sql)?;
        let names: Vec<String> = st.column_names().map(|s| s.to_string()).collect();
        let n = names.len();
        let rows = st.query_map(rusqlite::params_from_iter(params.iter().map(to_sqlite)), |r| {
            (0..n).map(|i| r.get_ref(i).map(from_sqlite)).collect::<Result<Vec<_>, _>>().map(Row)
        })?;
        Ok((names, rows.collect::<Result<_, _>>()?))
    }

    fn for_each(&mut self, sql: &str, params: &[Val], f: EachRow<'_>) -> Result<(), StoreError> {
        let mut st = self.conn.prepare_cached(sql)?;
        let n = st.column_count();
        let mut rows = st.query(rusqlite::params_from_iter(params.iter().map(to_sqlite)))?;
        while let Some(r) = rows.next()? {
            let values = (0..n).map(|i| r.get_ref(i).map(borrowed)).collect::<Result<Vec<_>, _>>()?;
            f(&values)?;
        }
        Ok(())
    }

    /// The rowid: SQLite numbers rows as they are inserted, for free.
    fn hosts_order(&self) -> &'static str {
        "rowid"
    }

    // The machine's clock: a SQLite file's runners share one machine.
    fn unix_now_expr(&self) -> &'static str {
        "CAST(strftime('%s', 'now') AS INTEGER)"
    }

    /// The write lock at BEGIN (waiting out the busy timeout for it), not
    /// at the first write, when a reader's upgrade would fail at once.
    fn begin_exclusive(&mut self) -> Result<(), StoreError> {
        self.execute("BEGIN IMMEDIATE", &[]).map(|_| ())
    }

    /// Every transaction writes, so each takes the write lock at BEGIN:
    /// a deferred one that read first fails at its first write, at once and
    /// whatever the busy timeout, when another connection committed since
    /// its read (SQLITE_BUSY_SNAPSHOT: "database is locked"; a bisect's
    /// lease heartbeat beside its runs' stores, two runs on one file).
    fn begin(&mut self) -> Result<(), StoreError> {
        self.begin_exclusive()
    }
}

fn to_sqlite(v: &Val) -> rusqlite::types::Value {
    use rusqlite::types::Value as S;
    match v {
        Val::Null => S::Null,
        Val::Int(i) => S::Integer(*i),
        Val::Real(f) => S::Real(*f),
        Val::Text(t) => S::Text(t.clone()),
    }
}

/// As `from_sqlite`, borrowed (text that is not UTF-8 reads as NULL).
fn borrowed(v: rusqlite::types::ValueRef<'_>) -> ValRef<'_> {
    use rusqlite::types::ValueRef as R;
    match v {
        R::Null | R::Blob(_) => ValRef::Null,
        R::Integer(i) => ValRef::Int(i),
        R::Real(f) => ValRef::Real(f),
        R::Text(t) => std::str::from_utf8(t).map_or(ValRef::Null, ValRef::Text),
    }
}

/// No column holds a blob; one would read as NULL.
fn from_sqlite(v: rusqlite::types::ValueRef) -> Val {
    use rusqlite::types::ValueRef as R;
    match v {
        R::Null | R::Blob(_) => Val::Null,
        R::Integer(i) => Val::Int(i),
        R::Real(f) => Val::Real(f),
        R::Text(t) => Val::Text(String::from_utf8_lossy(t).into_owned()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::schema::SQLITE_MIGRATIONS;

    #[test]
    fn migrating_twice_is_a_no_op_and_newer_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let c = Sqlite::open(&dir.path().join("m.db")).unwrap();
        c.migrate(SQLITE_MIGRATIONS, "mem").unwrap();
        c.migrate(SQLITE_MIGRATIONS, "mem").unwrap();
        let v: i64 = c.conn.pragma_query_value(None, "user_version", |r| r.get(0)).unwrap();
        assert_eq!(v, SQLITE_MIGRATIONS.len() as i64);
        c.conn.pragma_update(None, "user_version", 99).unwrap();
        assert!(matches!(c.migrate(SQLITE_MIGRATIONS, "mem"), Err(StoreError::TooNew { found: 99, .. })));
    }
}
