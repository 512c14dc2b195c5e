//! The import reader: an export file is anyone's (issue 26). The input is
//! read as `benchrig import FILE` reads one (UTF-8, then JSON) and given to
//! `Store::import_run`: imported or refused, never a panic. As
//! `import_of_a_mutated_export` in orchestrator/tests/fuzz_parsers.rs,
//! which mutates the seed export its `seed_export` makes (a copy is
//! fuzz/seeds/import_export/seed.json).
//!
//! One SQLite store per process, in a temporary directory (opening one
//! migrates it: milliseconds each). As in the property test, the run's
//! `started` is made unique per input when it is a string, or every input
//! after the first that imports would be refused as a run already imported
//! and the fuzzer would never see the insert paths again.
#![no_main]

use benchrig::store::{DbLocation, Store};
use libfuzzer_sys::fuzz_target;
use serde_json::Value as Json;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::OnceLock;

fn store() -> &'static Store {
    static STORE: OnceLock<(tempfile::TempDir, Store)> = OnceLock::new();
    &STORE
        .get_or_init(|| {
            let dir = tempfile::tempdir().expect("a temporary directory");
            let store = Store::open(&DbLocation::Sqlite(dir.path().join("fuzz.db"))).expect("a fresh store");
            (dir, store)
        })
        .1
}

fuzz_target!(|data: &[u8]| {
    if data.len() > 64 << 10 {
        return;
    }
    let Ok(text) = std::str::from_utf8(data) else { return };
    let Ok(mut doc) = serde_json::from_str::<Json>(text) else { return };
    static CASE: AtomicUsize = AtomicUsize::new(0);
    if let Some(Json::String(started)) = doc.pointer_mut("/run/started") {
        *started = format!("{started}#{}", CASE.fetch_add(1, Ordering::Relaxed));
    }
    if let Err(e) = store().import_run(&doc) {
        let _ = e.to_string();
    }
});
