//! `benchrig prune` and `mark` from the real binary on nights stored with
//! their dates (imported, as a lab's central database gets them): history's
//! series and change points over the pruned nights are those over the
//! whole ones; baselines, the newest and `--dry-run` are kept; a pruned run
//! is refused by `compare` with the reason; and a prune killed with
//! SIGKILL part-way leaves a database that opens and whose every run reads,
//! each whole or pruned.

mod common;

use benchrig::store::{DbLocation, Store};
use common::{night, stored, Bench};
use serde_json::Value as Json;
use std::process::{Command, Output};

fn text(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

#[test]
fn a_pruned_year_in_small_keeps_its_history_its_baselines_and_its_newest() {
    let b = Bench::new();
    let db = b.db();
    // Thirty nights, a step down from 100 to 80 MB/s at night 21.
    stored(&db, (0..30).map(|i| night(i, if i < 20 { 100.0 } else { 80.0 }, 5)));
    let history = || -> Json {
        let out = b.run(&["history", "--playbook", "speed.yml", "--format", "json"]);
        assert_eq!(out.status.code(), Some(0));
        serde_json::from_str(&text(&out)).unwrap()
    };
    let whole = history();
    let changes: Vec<&Json> =
        whole["series"].as_array().unwrap().iter().flat_map(|s| s["changes"].as_array().unwrap()).collect();
    assert!(!changes.is_empty() && changes.iter().all(|c| c.to_string().contains("night-021")), "{whole}");

    assert_eq!(b.run(&["mark", "night-005", "--baseline"]).status.code(), Some(0));
    let size = std::fs::metadata(&db).unwrap().len();
    let dry = b.run(&["prune", "--older-than", "1d", "--keep-last", "5", "--dry-run"]);
    assert_eq!(dry.status.code(), Some(0));
    let dry = text(&dry);
    // 30 − the 5 newest − 1 baseline.
    assert!(dry.contains("would prune 24 run(s): 120 samples, 0 monitor series, 0 artifacts; kept whole: 1 baseline(s), 5 among the newest of their playbook"), "{dry}");
    assert_eq!(b.run(&["compare", "night-001", "night-002"]).status.code(), Some(0), "whole still");
    assert_eq!(std::fs::metadata(&db).unwrap().len(), size, "--dry-run changes nothing");

    let out = b.run(&["prune", "--older-than", "1d", "--keep-last", "5"]);
    assert_eq!(out.status.code(), Some(0));
    let said = text(&out);
    assert!(said.contains("pruned 24 run(s): 120 samples, 0 monitor series, 0 artifacts"), "{said}");
    assert!(said.contains("database ") && said.contains("(freed "), "{said}");
    assert_eq!(history(), whole, "the same series, points and change points over the pruned nights");

    let refused = b.run(&["compare", "night-001", "night-030"]);
    assert_eq!(refused.status.code(), Some(1));
    let why = String::from_utf8_lossy(&refused.stderr);
    assert!(why.contains("run 1 was pruned on") && why.contains("history"), "{why}");
    // The automatic baseline of tonight is the newest whole ok run.
    let auto = b.run(&["compare", "night-030", "--format", "json"]);
    assert_eq!(auto.status.code(), Some(0));
    let listed: Json = serde_json::from_str(&text(&b.run(&["runs", "--json"]))).unwrap();
    let listed = listed.as_array().unwrap();
    assert_eq!(listed.iter().filter(|r| !r["pruned"].is_null()).count(), 24);
    assert!(!listed[4]["baseline"].is_null() && listed[4]["pruned"].is_null(), "night-005 is whole");
    let again = text(&b.run(&["prune", "--older-than", "1d", "--keep-last", "5"]));
    assert!(again.starts_with("nothing to prune; kept whole: 24 already pruned, 1 baseline(s), 5 among"), "{again}");
    let none = b.run(&["prune"]);
    assert_eq!(none.status.code(), Some(1), "no rule, no prune");
}

#[test]
fn a_prune_killed_part_way_leaves_every_run_whole_or_pruned() {
    let dir = tempfile::tempdir().unwrap();
    let template = dir.path().join("template.db");
    const RUNS: usize = 60;
    const REPS: usize = 1000;
    stored(&template, (0..RUNS as i64).map(|i| night(i, 100.0, REPS)));
    let mut partial = 0;
    for attempt in 0..40 {
        let db = dir.path().join(format!("b{attempt}.db"));
        std::fs::copy(&template, &db).unwrap();
        let mut child = Command::new(env!("CARGO_BIN_EXE_benchrig"))
            .args(["prune", "--older-than", "1d", "--db"])
            .arg(&db)
            .env_remove("BENCHRIG_DB")
            .stdout(std::process::Stdio::null())
            .spawn()
            .unwrap();
        std::thread::sleep(std::time::Duration::from_millis(40 + 25 * attempt));
        let _ = child.kill(); // SIGKILL
        child.wait().unwrap();
        let store = Store::open(&DbLocation::Sqlite(db.clone())).unwrap();
        let runs = store.runs().unwrap();
        assert_eq!(runs.len(), RUNS);
        let mut pruned = 0;
        for r in &runs {
            let (samples, summaries) = (store.samples(r.id).unwrap(), store.summaries(r.id, None).unwrap());
            assert_eq!(summaries.len(), 1, "run {}: its summary is there either way", r.id);
            match &r.pruned {
                Some(_) => {
                    assert!(samples.is_empty(), "run {}: pruned but {} samples left", r.id, samples.len());
                    pruned += 1;
                }
                None => assert_eq!(samples.len(), REPS, "run {}: not pruned, so whole", r.id),
            }
        }
        let history =
            Bench::new().run(&["history", "--playbook", "speed.yml", "--format", "json", "--db", db.to_str().unwrap()]);
        assert_eq!(history.status.code(), Some(0), "attempt {attempt}: history reads the killed prune's database");
        if 0 < pruned && pruned < RUNS {
            partial += 1;
            if partial == 2 {
                break;
            }
        }
        if pruned == RUNS {
            break;
        }
    }
    assert!(partial > 0, "no kill landed part-way: make the runs bigger");
}
