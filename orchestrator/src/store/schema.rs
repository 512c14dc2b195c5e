//! Versioned schema: migration N brings `PRAGMA user_version` from N-1 to N.
//! Never edit a released migration; add the next one.

use super::StoreError;
use rusqlite::Connection;

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
];

pub fn migrate(conn: &Connection, path: &str) -> Result<(), StoreError> {
    let current: i64 = conn.pragma_query_value(None, "user_version", |r| r.get(0))?;
    let known = MIGRATIONS.len() as i64;
    if current > known {
        return Err(StoreError::TooNew { path: path.to_string(), found: current, known });
    }
    for (i, sql) in MIGRATIONS.iter().enumerate().skip(current as usize) {
        let tx = conn.unchecked_transaction()?;
        tx.execute_batch(sql)?;
        tx.pragma_update(None, "user_version", (i + 1) as i64)?;
        tx.commit()?;
    }
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
}
