//! The schema, versioned, in both dialects: migration N brings a database
//! from version N-1 to N (SQLite's `user_version`, PostgreSQL's
//! `benchrig_schema`; the adapters apply them). Never edit a released
//! migration; add the next one, in both lists.

/// SQLite's migrations.
pub const SQLITE_MIGRATIONS: &[&str] = &[
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
/// keeps the two lists the same length). `hosts.seq` keeps insertion order, which SQLite's rowid gives
/// for free.
pub const PG_MIGRATIONS: &[&str] = &[
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

/// Columns one dialect has and the other does not: (table, column).
/// An export leaves them out, so a run moves between the dialects.
pub const PG_ONLY_COLUMNS: &[(&str, &str)] = &[("hosts", "seq")];

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn both_dialects_have_every_migration() {
        assert_eq!(SQLITE_MIGRATIONS.len(), PG_MIGRATIONS.len());
    }
}
