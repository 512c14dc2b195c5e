//! Many processes opening one fresh SQLite file at once (two runners
//! sharing a file, `benchrig runs` polled while a run starts) must all
//! succeed and leave it at the current schema: only one may migrate.
//!
//! Real processes, as in the failure it guards against: the test re-runs its
//! own binary as each opener, and every opener waits for one start instant
//! so that their reads of the schema version fall together.

use std::path::Path;
use std::process::Command;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

const OPENERS: usize = 16;
const ROUNDS: usize = 8;
const CHILD_DB: &str = "BENCHRIG_TEST_OPEN_DB";
const CHILD_START: &str = "BENCHRIG_TEST_OPEN_AT_NS";

fn now_ns() -> u128 {
    SystemTime::now().duration_since(UNIX_EPOCH).unwrap().as_nanos()
}

fn user_version(db: &Path) -> i64 {
    rusqlite::Connection::open(db).unwrap().pragma_query_value(None, "user_version", |r| r.get(0)).unwrap()
}

#[test]
fn many_processes_open_one_fresh_file_at_once() {
    if let Some(db) = std::env::var_os(CHILD_DB) {
        // An opener: wait for the common instant (spinning, so they leave together), then open.
        let at: u128 = std::env::var(CHILD_START).unwrap().parse().unwrap();
        while now_ns() < at {
            std::hint::spin_loop();
        }
        if let Err(e) = benchrig::store::Store::open(&benchrig::store::DbLocation::Sqlite(db.into())) {
            eprintln!("OPEN FAILED: {e}");
            std::process::exit(1);
        }
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let reference = dir.path().join("alone.db");
    benchrig::store::Store::open(&benchrig::store::DbLocation::Sqlite(reference.clone())).unwrap();
    let current = user_version(&reference);
    assert!(current > 0);
    let exe = std::env::current_exe().unwrap();
    let mut failures = Vec::new();
    for round in 0..ROUNDS {
        let db = dir.path().join(format!("shared{round}.db"));
        // Late enough that every opener has started and is spinning.
        let at = now_ns() + Duration::from_millis(300).as_nanos();
        let children: Vec<_> = (0..OPENERS)
            .map(|_| {
                Command::new(&exe)
                    .args(["--exact", "many_processes_open_one_fresh_file_at_once", "--nocapture", "--test-threads=1"])
                    .env(CHILD_DB, &db)
                    .env(CHILD_START, at.to_string())
                    .stdout(std::process::Stdio::piped())
                    .stderr(std::process::Stdio::piped())
                    .spawn()
                    .unwrap()
            })
            .collect();
        for c in children {
            let out = c.wait_with_output().unwrap();
            if !out.status.success() {
                let text = String::from_utf8_lossy(&out.stdout).into_owned() + &String::from_utf8_lossy(&out.stderr);
                // The harness's "test … " shares the line.
                let why = text.find("OPEN FAILED").map_or(&text[..], |i| text[i..].lines().next().unwrap_or_default());
                failures.push(format!("round {round}: {why}"));
            }
        }
        assert_eq!(user_version(&db), current, "round {round}: the schema is not the current one");
    }
    assert!(failures.is_empty(), "{} of {} opens failed:\n{}", failures.len(), OPENERS * ROUNDS, failures.join("\n"));
}
