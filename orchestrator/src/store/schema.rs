//! Versioned schema: migration N brings `PRAGMA user_version` from N-1 to N.
//! Never edit a released migration; add the next one.

use super::sql::{Db, Val};
use super::StoreError;
use rusqlite::{Connection, Transaction, TransactionBehavior};

const MIGRATIONS: &[&str] = &[
    // 1: runs, hosts with their facts, cells, samples with CPU and device I/O.
    "
    CREATE TABLE runs (
        id INTEGER PRIMARY KEY,
        name TEXT,
        playbook TEXT NOT NULL,
        playbook_text TEXT NOT NULL,
        inventory TEXT NOT NULL,
        limit_pattern TEXT,
        extra_vars TEXT NOT NULL,
        benchrig_version TEXT NOT NULL,
        started TEXT NOT NULL,
        finished TEXT,
        status TEXT NOT NULL
    );
    CREATE TABLE hosts (
        run_id INTEGER NOT NULL REFERENCES runs(id),
        name TEXT NOT NULL,
        status TEXT NOT NULL,
        reason TEXT,
        arch TEXT,
        agent_sha256 TEXT,
        facts TEXT,
        PRIMARY KEY (run_id, name)
    );
    CREATE TABLE cells (
        id INTEGER PRIMARY KEY,
        run_id INTEGER NOT NULL REFERENCES runs(id),
        host TEXT NOT NULL,
        play_index INTEGER NOT NULL,
        play TEXT NOT NULL,
        key TEXT NOT NULL,
        params TEXT NOT NULL,
        repeat INTEGER NOT NULL,
        status TEXT NOT NULL,
        reason TEXT,
        info TEXT,
        started TEXT,
        finished TEXT,
        UNIQUE (run_id, host, key)
    );
    CREATE TABLE samples (
        id INTEGER PRIMARY KEY,
        cell_id INTEGER NOT NULL REFERENCES cells(id),
        step_index INTEGER NOT NULL,
        step TEXT NOT NULL,
        workload TEXT NOT NULL,
        repetition INTEGER NOT NULL,
        metric TEXT NOT NULL,
        value REAL NOT NULL,
        unit TEXT NOT NULL,
        better TEXT NOT NULL,
        wall_s REAL,
        user_s REAL,
        sys_s REAL,
        dev_read_bytes INTEGER,
        dev_write_bytes INTEGER,
        dev_read_ios INTEGER,
        dev_write_ios INTEGER,
        usage TEXT,
        info TEXT,
        ts TEXT NOT NULL
    );
    CREATE INDEX samples_by_cell ON samples (cell_id);
    CREATE TABLE host_facts (
        name TEXT PRIMARY KEY,
        facts TEXT NOT NULL,
        updated TEXT NOT NULL
    );
    ",
    // 2: each cell's planned steps, rendered (what exactly ran: sizes, mkfs
    // argv, devices), beside its parameters.
    "ALTER TABLE cells ADD COLUMN steps TEXT;",
    // 3: artifacts: long text a step produced (a filesystem's dumpe2fs -h /
    // xfs_info / btrfs show), kept apart from the cell's small facts.
    "CREATE TABLE artifacts (
        id INTEGER PRIMARY KEY,
        cell_id INTEGER NOT NULL REFERENCES cells(id),
        name TEXT NOT NULL,
        content TEXT NOT NULL,
        created TEXT NOT NULL
    );
    CREATE INDEX artifacts_by_cell ON artifacts (cell_id);",
];

/// The same schema in PostgreSQL's words, migration for migration (a test
/// keeps the two lists the same length). `hosts.seq` keeps insertion order,
/// which SQLite's rowid gives for free.
const PG_MIGRATIONS: &[&str] = &[
    "
    CREATE TABLE runs (
        id BIGSERIAL PRIMARY KEY,
        name TEXT,
        playbook TEXT NOT NULL,
        playbook_text TEXT NOT NULL,
        inventory TEXT NOT NULL,
        limit_pattern TEXT,
        extra_vars TEXT NOT NULL,
        benchrig_version TEXT NOT NULL,
        started TEXT NOT NULL,
        finished TEXT,
        status TEXT NOT NULL
    );
    CREATE TABLE hosts (
        run_id BIGINT NOT NULL REFERENCES runs(id),
        name TEXT NOT NULL,
        status TEXT NOT NULL,
        reason TEXT,
        arch TEXT,
        agent_sha256 TEXT,
        facts TEXT,
        seq BIGSERIAL,
        PRIMARY KEY (run_id, name)
    );
    CREATE TABLE cells (
        id BIGSERIAL PRIMARY KEY,
        run_id BIGINT NOT NULL REFERENCES runs(id),
        host TEXT NOT NULL,
        play_index BIGINT NOT NULL,
        play TEXT NOT NULL,
        key TEXT NOT NULL,
        params TEXT NOT NULL,
        repeat BIGINT NOT NULL,
        status TEXT NOT NULL,
        reason TEXT,
        info TEXT,
        started TEXT,
        finished TEXT,
        UNIQUE (run_id, host, key)
    );
    CREATE TABLE samples (
        id BIGSERIAL PRIMARY KEY,
        cell_id BIGINT NOT NULL REFERENCES cells(id),
        step_index BIGINT NOT NULL,
        step TEXT NOT NULL,
        workload TEXT NOT NULL,
        repetition BIGINT NOT NULL,
        metric TEXT NOT NULL,
        value DOUBLE PRECISION NOT NULL,
        unit TEXT NOT NULL,
        better TEXT NOT NULL,
        wall_s DOUBLE PRECISION,
        user_s DOUBLE PRECISION,
        sys_s DOUBLE PRECISION,
        dev_read_bytes BIGINT,
        dev_write_bytes BIGINT,
        dev_read_ios BIGINT,
        dev_write_ios BIGINT,
        usage TEXT,
        info TEXT,
        ts TEXT NOT NULL
    );
    CREATE INDEX samples_by_cell ON samples (cell_id);
    CREATE TABLE host_facts (
        name TEXT PRIMARY KEY,
        facts TEXT NOT NULL,
        updated TEXT NOT NULL
    );
    ",
    "ALTER TABLE cells ADD COLUMN steps TEXT;",
    "CREATE TABLE artifacts (
        id BIGSERIAL PRIMARY KEY,
        cell_id BIGINT NOT NULL REFERENCES cells(id),
        name TEXT NOT NULL,
        content TEXT NOT NULL,
        created TEXT NOT NULL
    );
    CREATE INDEX artifacts_by_cell ON artifacts (cell_id);",
];

/// PostgreSQL's migrations, under an advisory lock so two orchestrators
/// starting on a new database do not both create it.
pub fn migrate_pg(db: &mut Db, url: &str) -> Result<(), StoreError> {
    db.execute("SELECT pg_advisory_lock(7420001)", &[])?;
    let result = (|| {
        db.execute("CREATE TABLE IF NOT EXISTS benchrig_schema (version BIGINT NOT NULL)", &[])?;
        let current =
            db.query_one("SELECT MAX(version) FROM benchrig_schema", &[])?.and_then(|r| r.opt_int(0)).unwrap_or(0);
        let known = PG_MIGRATIONS.len() as i64;
        if current > known {
            return Err(StoreError::TooNew { path: url.to_string(), found: current, known });
        }
        for (i, sql) in PG_MIGRATIONS.iter().enumerate().skip(current as usize) {
            db.transaction(|db| {
                db.execute(sql, &[])?;
                db.execute("INSERT INTO benchrig_schema (version) VALUES (?1)", &[Val::Int(i as i64 + 1)])
            })?;
        }
        Ok(())
    })();
    db.execute("SELECT pg_advisory_unlock(7420001)", &[])?;
    result
}

/// Bring a SQLite file to the current schema. Several processes may open
/// one fresh file at once (two runners sharing it, `benchrig runs` polled
/// while a run starts): the version is read again under the write lock, so
/// only the first applies a migration and the others find it done.
pub fn migrate(conn: &Connection, path: &str) -> Result<(), StoreError> {
    let known = MIGRATIONS.len() as i64;
    let version = |conn: &Connection| -> Result<i64, StoreError> {
        let current: i64 = conn.pragma_query_value(None, "user_version", |r| r.get(0))?;
        if current > known {
            return Err(StoreError::TooNew { path: path.to_string(), found: current, known });
        }
        Ok(current)
    };
    // Up to date (the common case): no write lock, so readers never wait on a run.
    if version(conn)? == known {
        return Ok(());
    }
    // IMMEDIATE takes the write lock at BEGIN (waiting out the busy
    // timeout), so nobody can migrate between our read and our writes.
    let tx = Transaction::new_unchecked(conn, TransactionBehavior::Immediate)?;
    let current = version(&tx)?;
    for sql in MIGRATIONS.iter().skip(current as usize) {
        tx.execute_batch(sql)?;
    }
    tx.pragma_update(None, "user_version", known)?;
    tx.commit()?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn migrating_twice_is_a_no_op_and_newer_is_refused() {
        let c = Connection::open_in_memory().unwrap();
        migrate(&c, "mem").unwrap();
        migrate(&c, "mem").unwrap();
        let v: i64 = c.pragma_query_value(None, "user_version", |r| r.get(0)).unwrap();
        assert_eq!(v, MIGRATIONS.len() as i64);
        c.pragma_update(None, "user_version", 99).unwrap();
        assert!(matches!(migrate(&c, "mem"), Err(StoreError::TooNew { found: 99, .. })));
    }

    #[test]
    fn both_dialects_have_every_migration() {
        assert_eq!(MIGRATIONS.len(), PG_MIGRATIONS.len());
    }
}
