//! `benchrig runs` narrowed by name, status, playbook and date, as a table
//! or JSON, from the real binary over imported runs.

mod common;

use common::{export_doc, transcript};
use std::path::Path;
use std::process::Command;

fn benchrig(dir: &Path, args: &[&str]) -> String {
    let out = Command::new(env!("CARGO_BIN_EXE_benchrig"))
        .args(args)
        .current_dir(dir)
        .env_remove("BENCHRIG_DB")
        .env("NO_COLOR", "1")
        .output()
        .unwrap();
    transcript(args, &out);
    assert_eq!(out.status.code(), Some(0));
    String::from_utf8_lossy(&out.stdout).into_owned()
}

#[test]
fn runs_lists_what_the_filters_keep_as_a_table_or_json() {
    let dir = tempfile::tempdir().unwrap();
    for (name, status) in [("nightly-1", "ok"), ("adhoc", "failed"), ("nightly-2", "failed")] {
        let mut doc = export_doc(name, 100.0);
        doc["run"]["status"] = status.into();
        let f = dir.path().join(format!("{name}.json"));
        std::fs::write(&f, doc.to_string()).unwrap();
        benchrig(dir.path(), &["import", f.to_str().unwrap()]);
    }
    let json = |args: &[&str]| -> Vec<String> {
        let mut all = vec!["runs", "--json"];
        all.extend_from_slice(args);
        let list: serde_json::Value = serde_json::from_str(&benchrig(dir.path(), &all)).unwrap();
        list.as_array().unwrap().iter().map(|r| r["name"].as_str().unwrap().to_string()).collect()
    };
    assert_eq!(json(&[]), ["nightly-1", "adhoc", "nightly-2"]);
    assert_eq!(json(&["--name", "nightly-*"]), ["nightly-1", "nightly-2"]);
    assert_eq!(json(&["--status", "failed"]), ["adhoc", "nightly-2"]);
    assert_eq!(json(&["--name", "nightly-*", "--status", "failed"]), ["nightly-2"]);
    assert_eq!(json(&["--playbook", "speed.yml", "--last", "1"]), ["nightly-2"]);
    assert_eq!(json(&["--playbook", "other.yml"]), Vec::<String>::new());
    assert_eq!(json(&["--from", "2030-01-01"]), Vec::<String>::new());
    let one: serde_json::Value =
        serde_json::from_str(&benchrig(dir.path(), &["runs", "--json", "--last", "1"])).unwrap();
    assert_eq!(one[0]["status"], "failed");
    assert_eq!((one[0]["hosts"].as_i64(), one[0]["cells"].as_i64()), (Some(1), Some(1)));
    let table = benchrig(dir.path(), &["runs", "--status", "ok"]);
    assert!(table.contains("nightly-1") && !table.contains("adhoc"), "{table}");
}
