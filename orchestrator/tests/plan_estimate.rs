//! `plan` estimates each cell's time from the newest stored run of the
//! same cell on the same host, at the planned repetitions (as PTS's
//! estimate-run-time), from the real binary over an imported run.

mod common;

use common::{export_doc, transcript};
use std::process::Command;

#[test]
fn plan_estimates_each_cell_from_its_newest_stored_run_at_the_planned_repetitions() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    std::fs::write(
        d.join("inv.yml"),
        "all:\n  hosts:\n    h: {ansible_connection: local}\n    g: {ansible_connection: local}\n",
    )
    .unwrap();
    std::fs::write(
        d.join("speed.yml"),
        "- name: speed\n  hosts: all\n  matrix: {bs: [4k, 1M]}\n  repeat: \"{{ reps }}\"\n  benchmark:\n    - noop:\n",
    )
    .unwrap();
    // Host h ran cell bs=4k five times in 10 s; nothing else ran before.
    let mut doc = export_doc("before", 100.0);
    let cell = &mut doc["cells"][0];
    cell["key"] = "0:bs=4k".into();
    cell["started"] = "2026-12-01T02:00:00Z".into();
    cell["finished"] = "2026-12-01T02:00:10Z".into();
    cell["reps_done"] = 5.into();
    std::fs::write(d.join("before.json"), doc.to_string()).unwrap();
    let benchrig = |args: &[&str]| {
        let out = Command::new(env!("CARGO_BIN_EXE_benchrig"))
            .args(args)
            .current_dir(d)
            .env_remove("BENCHRIG_DB")
            .output()
            .unwrap();
        transcript(args, &out);
        assert_eq!(out.status.code(), Some(0));
        String::from_utf8_lossy(&out.stdout).into_owned()
    };
    benchrig(&["import", "before.json"]);
    let plan = benchrig(&["plan", "speed.yml", "-i", "inv.yml", "-e", "reps=10"]);
    let row = |host: &str, bs: &str| {
        plan.lines()
            .find(|l| l.starts_with(host) && l.contains(&format!("bs={bs}")))
            .unwrap_or_else(|| panic!("{plan}"))
            .split_whitespace()
            .nth(4)
            .unwrap()
            .to_string()
    };
    assert_eq!(row("h", "4k"), "20s", "2 s a repetition, 10 planned: {plan}");
    assert_eq!(row("h", "1M"), "-", "never ran: {plan}");
    assert_eq!(row("g", "4k"), "-", "another host's time is not this one's: {plan}");
    assert!(plan.contains("  h: 20s + 1 cell(s) never run here"), "{plan}");
    assert!(plan.contains("  g: 0s + 2 cell(s) never run here"), "{plan}");
}
