//! The schema, versioned, in both dialects: migration N brings a database
//! from version N-1 to N (SQLite's `user_version`, PostgreSQL's
//! `benchrig_schema`; the adapters apply them). Never edit a released
//! migration; add the next one, in both lists. The tests compare the two
//! dialects table by table and column by column (normalised type,
//! nullability), as declared after every migration and as the migrated
//! databases report them.

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
    // 4: leases: which run holds which host (so two never share one), until
    // when (unix seconds; a heartbeat moves it), and hosts set aside by hand.
    "CREATE TABLE leases (
        host TEXT NOT NULL PRIMARY KEY,
        token TEXT,
        run_id INTEGER,
        holder TEXT,
        pid INTEGER,
        since TEXT,
        heartbeat TEXT,
        expires INTEGER,
        quarantine TEXT
    );",
    // 5: resuming a run in place: the options it was started with (tags,
    // inventory paths), how many repetitions of a cell are complete, which
    // attempt measured a sample, and each attempt (when, by whom, on which hosts).
    "ALTER TABLE runs ADD COLUMN options TEXT;
    ALTER TABLE cells ADD COLUMN reps_done INTEGER;
    ALTER TABLE samples ADD COLUMN attempt INTEGER;
    CREATE TABLE attempts (
        run_id INTEGER NOT NULL REFERENCES runs(id),
        attempt INTEGER NOT NULL,
        started TEXT NOT NULL,
        finished TEXT,
        holder TEXT NOT NULL,
        hosts TEXT NOT NULL,
        status TEXT NOT NULL,
        PRIMARY KEY (run_id, attempt)
    );",
    // 6: what the kernel logged during a cell that bears on its results (an
    // I/O error, BUG, Oops, WARNING, hung task), a row per line, by host.
    "CREATE TABLE kernel_log (
        id INTEGER PRIMARY KEY,
        cell_id INTEGER NOT NULL REFERENCES cells(id),
        host TEXT NOT NULL,
        kind TEXT NOT NULL,
        usec INTEGER NOT NULL,
        seq INTEGER NOT NULL,
        text TEXT NOT NULL
    );
    CREATE INDEX kernel_log_by_cell ON kernel_log (cell_id);",
    // 7: monitors: what a sample is (`kind`: its step's result, or a summary
    // of what the monitors saw, which is never judged; NULL before this is
    // a result), and each measured step's series as compact JSON, a row per
    // step, repetition and attempt.
    "ALTER TABLE samples ADD COLUMN kind TEXT;
    CREATE TABLE monitor_series (
        id INTEGER PRIMARY KEY,
        cell_id INTEGER NOT NULL REFERENCES cells(id),
        step_index INTEGER NOT NULL,
        step TEXT NOT NULL,
        repetition INTEGER NOT NULL,
        attempt INTEGER NOT NULL,
        series TEXT NOT NULL
    );
    CREATE INDEX monitor_series_by_cell ON monitor_series (cell_id);",
    // 8: when a run was imported (`benchrig import`): never resumed, as its
    // playbook text is the exporter's.
    "ALTER TABLE runs ADD COLUMN imported TEXT;",
    // 9: a year of nights. Each finished run's per-metric summary, which
    // history reads instead of the samples and which `prune` keeps when it
    // deletes them; when a run was pruned; runs kept as baselines.
    "CREATE TABLE summaries (
        id INTEGER PRIMARY KEY,
        run_id INTEGER NOT NULL REFERENCES runs(id),
        cell_id INTEGER NOT NULL REFERENCES cells(id),
        step_index INTEGER NOT NULL,
        step TEXT NOT NULL,
        workload TEXT NOT NULL,
        metric TEXT NOT NULL,
        unit TEXT NOT NULL,
        better TEXT NOT NULL,
        kind TEXT NOT NULL,
        n INTEGER NOT NULL,
        mean REAL NOT NULL,
        sd REAL NOT NULL,
        median REAL NOT NULL,
        min REAL NOT NULL,
        max REAL NOT NULL,
        ci_lo REAL,
        ci_hi REAL,
        mad REAL NOT NULL,
        cv REAL
    );
    CREATE INDEX summaries_by_run ON summaries (run_id);
    ALTER TABLE runs ADD COLUMN pruned TEXT;
    ALTER TABLE runs ADD COLUMN baseline TEXT;",
    // 10: change points as reported. A regression `history --alert` told
    // someone of (a later night does not tell it again) and one a person
    // acknowledged (`history ack`: it no longer fails the gate), by the
    // change's id (`history::alerts`), the series and the run it arrived with.
    "CREATE TABLE change_alerts (
        id TEXT PRIMARY KEY,
        playbook TEXT NOT NULL,
        series TEXT NOT NULL,
        run_id INTEGER NOT NULL,
        direction TEXT NOT NULL,
        change_pct REAL NOT NULL,
        alerted TEXT,
        acked TEXT,
        acked_by TEXT,
        ack_note TEXT
    );
    CREATE INDEX change_alerts_by_playbook ON change_alerts (playbook);",
    // 11: a cell's devices and `fresh` policy apart from its rendered steps
    // (a kilobyte a cell): what history reads of a year of cells.
    "ALTER TABLE cells ADD COLUMN outline TEXT;",
    // 12: a host's summaries without the rest of its run's (`history`'s
    // notes read the monitors of a changed series' host, a few of a
    // night's hundred), and a run's results without its monitors' (two
    // thirds of its summaries), which `history` reads of a year of runs.
    "CREATE INDEX summaries_by_cell ON summaries (cell_id);
    CREATE INDEX summaries_results_by_run ON summaries (run_id) WHERE kind = 'benchmark';",
    // 13: bisects (`benchrig bisect`): what each was asked (its recipe,
    // JSON as `bisect::Recipe` writes it), the revisions in order, where it
    // stands; and a row per measured step (a revision's build and measure
    // runs, and the verdict and figures after it), so that `--resume` goes
    // on from the last step stored.
    "CREATE TABLE bisects (
        id INTEGER PRIMARY KEY,
        name TEXT,
        started TEXT NOT NULL,
        finished TEXT,
        status TEXT NOT NULL,
        recipe TEXT NOT NULL,
        revisions TEXT NOT NULL,
        result TEXT
    );
    CREATE TABLE bisect_steps (
        id INTEGER PRIMARY KEY,
        bisect_id INTEGER NOT NULL REFERENCES bisects(id),
        revision INTEGER NOT NULL,
        purpose TEXT NOT NULL,
        build_run INTEGER,
        measure_run INTEGER,
        verdict TEXT,
        figures TEXT
    );
    CREATE INDEX bisect_steps_by_bisect ON bisect_steps (bisect_id);",
];

/// The same schema in PostgreSQL's words, migration for migration (the tests
/// below compare the two, table by table and column by column, after every
/// migration). `hosts.seq` keeps insertion order, which SQLite's rowid gives
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
    "CREATE TABLE leases (
        host TEXT NOT NULL PRIMARY KEY,
        token TEXT,
        run_id BIGINT,
        holder TEXT,
        pid BIGINT,
        since TEXT,
        heartbeat TEXT,
        expires BIGINT,
        quarantine TEXT
    );",
    "ALTER TABLE runs ADD COLUMN options TEXT;
    ALTER TABLE cells ADD COLUMN reps_done BIGINT;
    ALTER TABLE samples ADD COLUMN attempt BIGINT;
    CREATE TABLE attempts (
        run_id BIGINT NOT NULL REFERENCES runs(id),
        attempt BIGINT NOT NULL,
        started TEXT NOT NULL,
        finished TEXT,
        holder TEXT NOT NULL,
        hosts TEXT NOT NULL,
        status TEXT NOT NULL,
        PRIMARY KEY (run_id, attempt)
    );",
    "CREATE TABLE kernel_log (
        id BIGSERIAL PRIMARY KEY,
        cell_id BIGINT NOT NULL REFERENCES cells(id),
        host TEXT NOT NULL,
        kind TEXT NOT NULL,
        usec BIGINT NOT NULL,
        seq BIGINT NOT NULL,
        text TEXT NOT NULL
    );
    CREATE INDEX kernel_log_by_cell ON kernel_log (cell_id);",
    "ALTER TABLE samples ADD COLUMN kind TEXT;
    CREATE TABLE monitor_series (
        id BIGSERIAL PRIMARY KEY,
        cell_id BIGINT NOT NULL REFERENCES cells(id),
        step_index BIGINT NOT NULL,
        step TEXT NOT NULL,
        repetition BIGINT NOT NULL,
        attempt BIGINT NOT NULL,
        series TEXT NOT NULL
    );
    CREATE INDEX monitor_series_by_cell ON monitor_series (cell_id);",
    "ALTER TABLE runs ADD COLUMN imported TEXT;",
    "CREATE TABLE summaries (
        id BIGSERIAL PRIMARY KEY,
        run_id BIGINT NOT NULL REFERENCES runs(id),
        cell_id BIGINT NOT NULL REFERENCES cells(id),
        step_index BIGINT NOT NULL,
        step TEXT NOT NULL,
        workload TEXT NOT NULL,
        metric TEXT NOT NULL,
        unit TEXT NOT NULL,
        better TEXT NOT NULL,
        kind TEXT NOT NULL,
        n BIGINT NOT NULL,
        mean DOUBLE PRECISION NOT NULL,
        sd DOUBLE PRECISION NOT NULL,
        median DOUBLE PRECISION NOT NULL,
        min DOUBLE PRECISION NOT NULL,
        max DOUBLE PRECISION NOT NULL,
        ci_lo DOUBLE PRECISION,
        ci_hi DOUBLE PRECISION,
        mad DOUBLE PRECISION NOT NULL,
        cv DOUBLE PRECISION
    );
    CREATE INDEX summaries_by_run ON summaries (run_id);
    ALTER TABLE runs ADD COLUMN pruned TEXT;
    ALTER TABLE runs ADD COLUMN baseline TEXT;",
    "CREATE TABLE change_alerts (
        id TEXT PRIMARY KEY,
        playbook TEXT NOT NULL,
        series TEXT NOT NULL,
        run_id BIGINT NOT NULL,
        direction TEXT NOT NULL,
        change_pct DOUBLE PRECISION NOT NULL,
        alerted TEXT,
        acked TEXT,
        acked_by TEXT,
        ack_note TEXT
    );
    CREATE INDEX change_alerts_by_playbook ON change_alerts (playbook);",
    "ALTER TABLE cells ADD COLUMN outline TEXT;",
    "CREATE INDEX summaries_by_cell ON summaries (cell_id);
    CREATE INDEX summaries_results_by_run ON summaries (run_id) WHERE kind = 'benchmark';",
    "CREATE TABLE bisects (
        id BIGSERIAL PRIMARY KEY,
        name TEXT,
        started TEXT NOT NULL,
        finished TEXT,
        status TEXT NOT NULL,
        recipe TEXT NOT NULL,
        revisions TEXT NOT NULL,
        result TEXT
    );
    CREATE TABLE bisect_steps (
        id BIGSERIAL PRIMARY KEY,
        bisect_id BIGINT NOT NULL REFERENCES bisects(id),
        revision BIGINT NOT NULL,
        purpose TEXT NOT NULL,
        build_run BIGINT,
        measure_run BIGINT,
        verdict TEXT,
        figures TEXT
    );
    CREATE INDEX bisect_steps_by_bisect ON bisect_steps (bisect_id);",
];

/// Columns one dialect has and the other does not: (table, column).
/// An export leaves them out, so a run moves between the dialects.
pub const PG_ONLY_COLUMNS: &[(&str, &str)] = &[("hosts", "seq")];

/// The two dialects' schemas, compared table by table and column by column:
/// as their migrations declare them (always) and as the databases report
/// them once migrated (SQLite's `PRAGMA table_info` always, PostgreSQL's
/// `information_schema.columns` when `BENCHRIG_TEST_POSTGRES` names a server).
#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::db::Db;
    use crate::store::sql::Sql;
    use crate::store::testing::places;
    use std::collections::BTreeMap;

    /// PostgreSQL's migration bookkeeping; SQLite keeps the version in `user_version`.
    const PG_ONLY_TABLES: &[&str] = &["benchrig_schema"];

    #[derive(Clone, Copy, Debug)]
    enum Dialect {
        Sqlite,
        Postgres,
    }

    /// What a column's values come back as, whichever dialect stores them.
    #[derive(Clone, Debug, PartialEq)]
    enum Kind {
        /// 64-bit: SQLite's INTEGER affinity, PostgreSQL's BIGINT.
        Integer,
        /// 64-bit: SQLite's REAL affinity, PostgreSQL's DOUBLE PRECISION.
        Real,
        Text,
        /// Anything else (a 32-bit INTEGER in PostgreSQL, say), by its declared name.
        Other(String),
    }

    #[derive(Clone, Debug, PartialEq)]
    struct Column {
        name: String,
        kind: Kind,
        /// A primary key counts as NOT NULL in both (SQLite would let a
        /// non-integer key be NULL; the store never writes one).
        nullable: bool,
    }

    /// Table → its columns in order.
    type Tables = BTreeMap<String, Vec<Column>>;

    fn kind(dialect: Dialect, declared: &str) -> Kind {
        let t = declared.trim().to_ascii_uppercase();
        match dialect {
            // SQLite's affinity rules (datatype3.html, 3.1), in their order.
            Dialect::Sqlite if t.contains("INT") => Kind::Integer,
            Dialect::Sqlite if ["CHAR", "CLOB", "TEXT"].iter().any(|w| t.contains(w)) => Kind::Text,
            Dialect::Sqlite if ["REAL", "FLOA", "DOUB"].iter().any(|w| t.contains(w)) => Kind::Real,
            Dialect::Postgres if ["BIGINT", "INT8", "BIGSERIAL", "SERIAL8"].contains(&t.as_str()) => Kind::Integer,
            Dialect::Postgres if ["DOUBLE PRECISION", "FLOAT8"].contains(&t.as_str()) => Kind::Real,
            Dialect::Postgres if t == "TEXT" => Kind::Text,
            _ => Kind::Other(t),
        }
    }

    /// `a, b (c, d), e` → `a`, `b (c, d)`, `e`.
    fn split_top_level(body: &str) -> Vec<&str> {
        let (mut parts, mut depth, mut start) = (Vec::new(), 0, 0);
        for (i, c) in body.char_indices() {
            match c {
                '(' => depth += 1,
                ')' => depth -= 1,
                ',' if depth == 0 => {
                    parts.push(body[start..i].trim());
                    start = i + 1;
                }
                _ => {}
            }
        }
        parts.push(body[start..].trim());
        parts.into_iter().filter(|p| !p.is_empty()).collect()
    }

    /// Words that end a column's type and start its constraints.
    const CONSTRAINT_WORDS: &[&str] =
        &["NOT", "NULL", "PRIMARY", "REFERENCES", "UNIQUE", "DEFAULT", "CHECK", "CONSTRAINT", "COLLATE", "GENERATED"];

    fn column(dialect: Dialect, def: &str) -> Column {
        let words: Vec<&str> = def.split_whitespace().collect();
        let upper = |w: &&str| w.to_ascii_uppercase();
        let type_end = words
            .iter()
            .skip(1)
            .position(|w| CONSTRAINT_WORDS.contains(&upper(w).as_str()))
            .map_or(words.len(), |p| p + 1);
        let declared = words[1..type_end].join(" ");
        let rest = words[type_end..].iter().map(upper).collect::<Vec<_>>().join(" ");
        let serial = matches!(dialect, Dialect::Postgres) && declared.to_ascii_uppercase().ends_with("SERIAL");
        Column {
            name: words[0].to_string(),
            kind: kind(dialect, &declared),
            nullable: !(rest.contains("NOT NULL") || rest.contains("PRIMARY KEY") || serial),
        }
    }

    /// The tables a list of migrations leaves, read from their DDL. A
    /// statement it cannot read fails the test rather than being skipped.
    fn declared(dialect: Dialect, migrations: &[&str]) -> Tables {
        let mut tables = Tables::new();
        for statement in migrations.iter().flat_map(|m| m.split(';')).map(str::trim).filter(|s| !s.is_empty()) {
            let upper = statement.to_ascii_uppercase();
            let words: Vec<&str> = statement.split_whitespace().collect();
            if upper.starts_with("CREATE TABLE") {
                let open = statement.find('(').unwrap();
                let close = statement.rfind(')').unwrap();
                let name = statement[..open].split_whitespace().last().unwrap().to_string();
                let mut columns = Vec::new();
                for def in split_top_level(&statement[open + 1..close]) {
                    let first = def.split_whitespace().next().unwrap().to_ascii_uppercase();
                    if ["PRIMARY", "UNIQUE", "FOREIGN", "CHECK", "CONSTRAINT"].contains(&first.as_str()) {
                        // A table's primary key makes its columns NOT NULL.
                        if def.to_ascii_uppercase().starts_with("PRIMARY KEY") {
                            let inner = &def[def.find('(').unwrap() + 1..def.rfind(')').unwrap()];
                            for key in inner.split(',').map(str::trim) {
                                columns
                                    .iter_mut()
                                    .filter(|c: &&mut Column| c.name == key)
                                    .for_each(|c| c.nullable = false);
                            }
                        }
                    } else {
                        columns.push(column(dialect, def));
                    }
                }
                assert!(tables.insert(name.clone(), columns).is_none(), "table {name} created twice");
            } else if upper.starts_with("ALTER TABLE") && upper.contains(" ADD ") {
                let table = words[2];
                let at = words.iter().position(|w| w.eq_ignore_ascii_case("ADD")).unwrap() + 1;
                let at = if words[at].eq_ignore_ascii_case("COLUMN") { at + 1 } else { at };
                let def = words[at..].join(" ");
                tables
                    .get_mut(table)
                    .unwrap_or_else(|| panic!("ALTER of unknown table {table}"))
                    .push(column(dialect, &def));
            } else if upper.starts_with("CREATE INDEX") || upper.starts_with("CREATE UNIQUE INDEX") {
                // Indexes hold no columns of their own.
            } else {
                panic!("the schema test cannot read this statement yet; teach it: {statement}");
            }
        }
        tables
    }

    /// A migrated SQLite file's tables, as `PRAGMA table_info` reports them.
    fn sqlite_applied(db: &mut Db) -> Tables {
        let names = db.query("SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name", &[]).unwrap();
        names
            .iter()
            .map(|t| {
                let table = t.text(0);
                // cid, name, type, notnull, dflt_value, pk
                let rows = db.query(&format!("PRAGMA table_info(\"{table}\")"), &[]).unwrap();
                let columns = rows
                    .iter()
                    .map(|r| Column {
                        name: r.text(1),
                        kind: kind(Dialect::Sqlite, &r.text(2)),
                        nullable: r.int(3) == 0 && r.int(5) == 0,
                    })
                    .collect();
                (table, columns)
            })
            .collect()
    }

    /// A migrated PostgreSQL database's tables, as `information_schema` reports them.
    fn postgres_applied(db: &mut Db) -> Tables {
        let rows = db
            .query(
                "SELECT table_name::text, column_name::text, data_type::text, is_nullable::text
                 FROM information_schema.columns WHERE table_schema = current_schema()
                 ORDER BY table_name, ordinal_position",
                &[],
            )
            .unwrap();
        let mut tables = Tables::new();
        for r in rows {
            let column =
                Column { name: r.text(1), kind: kind(Dialect::Postgres, &r.text(2)), nullable: r.text(3) == "YES" };
            tables.entry(r.text(0)).or_default().push(column);
        }
        tables
    }

    /// `name kind [NOT NULL]`, or that there is no such column.
    fn shown(c: Option<&Column>) -> String {
        let Some(c) = c else { return "no column".into() };
        let kind = match &c.kind {
            Kind::Integer => "integer".to_string(),
            Kind::Real => "real".to_string(),
            Kind::Text => "text".to_string(),
            Kind::Other(t) => t.clone(),
        };
        format!("`{} {kind}{}`", c.name, if c.nullable { "" } else { " NOT NULL" })
    }

    /// Every way `pg` differs from `sqlite`, but for what only PostgreSQL
    /// has on purpose; empty when they are the same.
    fn differences(sqlite: &Tables, pg: &Tables) -> Vec<String> {
        let mut found = Vec::new();
        let pg_tables = pg.keys().filter(|t| !PG_ONLY_TABLES.contains(&t.as_str()));
        for t in pg_tables.clone().filter(|t| !sqlite.contains_key(*t)) {
            found.push(format!("table {t}: only in PostgreSQL"));
        }
        for (t, columns) in sqlite {
            let Some(pg_columns) = pg.get(t) else {
                found.push(format!("table {t}: only in SQLite"));
                continue;
            };
            let pg_columns: Vec<&Column> =
                pg_columns.iter().filter(|c| !PG_ONLY_COLUMNS.contains(&(t.as_str(), c.name.as_str()))).collect();
            for i in 0..columns.len().max(pg_columns.len()) {
                match (columns.get(i), pg_columns.get(i)) {
                    (Some(a), Some(b)) if a == *b => {}
                    (a, b) => found.push(format!(
                        "table {t}, column {}: SQLite {}, PostgreSQL {}",
                        i + 1,
                        shown(a),
                        shown(b.copied())
                    )),
                }
            }
        }
        found
    }

    #[test]
    fn both_dialects_have_every_migration() {
        assert_eq!(SQLITE_MIGRATIONS.len(), PG_MIGRATIONS.len());
    }

    #[test]
    fn both_dialects_declare_the_same_columns_after_every_migration() {
        // Version N means the same tables in both: after each migration, not only the last.
        for n in 1..=SQLITE_MIGRATIONS.len() {
            let sqlite = declared(Dialect::Sqlite, &SQLITE_MIGRATIONS[..n]);
            let pg = declared(Dialect::Postgres, &PG_MIGRATIONS[..n]);
            assert!(sqlite.len() >= 5 && sqlite.values().all(|c| !c.is_empty()), "the DDL was read: {sqlite:?}");
            assert_eq!(differences(&sqlite, &pg), Vec::<String>::new(), "after migration {n}");
        }
        // What only PostgreSQL has is there.
        let pg = declared(Dialect::Postgres, PG_MIGRATIONS);
        for (t, c) in PG_ONLY_COLUMNS {
            assert!(pg[*t].iter().any(|x| x.name == *c), "{t}.{c}");
        }
    }

    #[test]
    fn the_migrated_databases_have_the_same_columns() {
        let places = places();
        let mut sqlite_db = Db::open(&places.urls[0]).unwrap();
        let sqlite = sqlite_applied(&mut sqlite_db);
        // The declarations are read as SQLite reads them.
        assert_eq!(sqlite, declared(Dialect::Sqlite, SQLITE_MIGRATIONS));
        let Some(pg_url) = places.postgres() else {
            eprintln!("BENCHRIG_TEST_POSTGRES is not set: PostgreSQL's migrated schema is not compared");
            return;
        };
        let pg = postgres_applied(&mut Db::open(pg_url).unwrap());
        let mut pg_declared = declared(Dialect::Postgres, PG_MIGRATIONS);
        pg_declared.insert(
            "benchrig_schema".into(),
            vec![Column { name: "version".into(), kind: Kind::Integer, nullable: false }],
        );
        assert_eq!(pg, pg_declared, "the declarations are read as PostgreSQL reads them");
        assert_eq!(differences(&sqlite, &pg), Vec::<String>::new());
    }

    #[test]
    fn a_difference_in_any_one_column_is_found() {
        let sqlite = declared(Dialect::Sqlite, SQLITE_MIGRATIONS);
        let pg = declared(Dialect::Postgres, PG_MIGRATIONS);
        assert_eq!(differences(&sqlite, &pg), Vec::<String>::new(), "no difference before one is planted");
        let planted = |change: &dyn Fn(&mut Tables)| {
            let mut pg = pg.clone();
            change(&mut pg);
            differences(&sqlite, &pg)
        };
        fn column<'a>(t: &'a mut Tables, table: &str, name: &str) -> &'a mut Column {
            t.get_mut(table).unwrap().iter_mut().find(|c| c.name == name).unwrap()
        }
        let found = planted(&|t| column(t, "samples", "value").kind = Kind::Text);
        assert_eq!(found.len(), 1, "{found:?}");
        assert_eq!(found[0], "table samples, column 8: SQLite `value real NOT NULL`, PostgreSQL `value text NOT NULL`");
        assert_eq!(planted(&|t| column(t, "cells", "reason").nullable = false).len(), 1);
        assert_eq!(planted(&|t| column(t, "runs", "name").name = "title".into()).len(), 1);
        assert!(!planted(&|t| t.get_mut("hosts").unwrap().swap(1, 2)).is_empty(), "order counts");
        assert!(!planted(&|t| drop(t.get_mut("artifacts").unwrap().pop())).is_empty(), "a missing column");
        assert!(!planted(&|t| drop(t.remove("host_facts"))).is_empty(), "a missing table");
        assert!(!planted(&|t| drop(t.insert("extra".into(), vec![]))).is_empty(), "an extra table");
        // A 32-bit integer is not SQLite's 64-bit one.
        assert_eq!(kind(Dialect::Postgres, "INTEGER"), Kind::Other("INTEGER".into()));
        assert_eq!(kind(Dialect::Sqlite, "INTEGER"), Kind::Integer);
    }
}
