//! Ansible's command-line habits on `run`, from the real binary, touching
//! no host: `--check` prints the plan (and writes nothing), `--list-tags`
//! lists each play's tags, `-l` takes a comma-separated list.

mod common;

use common::{repo, transcript};
use std::process::{Command, Output};

fn benchrig(dir: &std::path::Path, args: &[&str]) -> Output {
    let out = Command::new(env!("CARGO_BIN_EXE_benchrig"))
        .args(args)
        .current_dir(dir)
        .env_remove("BENCHRIG_DB")
        .env_remove("BENCHRIG_INVENTORY")
        .env("NO_COLOR", "1")
        .output()
        .unwrap();
    transcript(args, &out);
    out
}

fn text(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

#[test]
fn run_check_prints_the_plan_and_touches_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let pb = repo().join("playbooks/quickstart.yml");
    let inv = repo().join("inventories/simlab.yml");
    let (pb, inv) = (pb.to_str().unwrap(), inv.to_str().unwrap());
    let check = benchrig(dir.path(), &["run", pb, "-i", inv, "-l", "old,hdd", "--check"]);
    let plan = benchrig(dir.path(), &["plan", pb, "-i", inv, "-l", "old,hdd"]);
    assert_eq!(check.status.code(), Some(0));
    assert_eq!(text(&check), text(&plan));
    assert!(text(&check).contains("12 cells on 2 hosts"), "-l took both hosts of the list: {}", text(&check));
    assert!(!dir.path().join("benchrig.db").exists(), "--check wrote a database");
    let e = benchrig(dir.path(), &["run", "--resume", "last", "--check"]);
    assert_eq!(e.status.code(), Some(1), "--check and --resume conflict");
}

#[test]
fn list_tags_lists_each_play_s_tags_and_its_steps() {
    let dir = tempfile::tempdir().unwrap();
    let pb = dir.path().join("p.yml");
    std::fs::write(
        &pb,
        "- hosts: all\n  tags: [nightly]\n  benchmark:\n    - noop:\n      tags: [quick, b]\n    - noop:\n      tags: [b]\n",
    )
    .unwrap();
    let out = benchrig(dir.path(), &["run", pb.to_str().unwrap(), "--list-tags"]);
    assert_eq!(out.status.code(), Some(0));
    assert!(text(&out).contains("  TASK TAGS: [b, nightly, quick]"), "{}", text(&out));
}
