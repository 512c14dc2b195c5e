//! Every exit code `benchrig` promises (src/exit_code.rs, README, --help),
//! from the real binary. The ones only a real run can produce are asserted
//! in tests/lab/main.rs: 2 (`a_failed_cell_on_this_machine_exits_2`,
//! `safety_rules_refuse_on_real_devices_and_leave_them_intact`), 4 for a run
//! (`a_host_that_dies_mid_run_is_unreachable_the_others_finish_and_resume_completes_it`), 130
//! (`interrupt_a_run`), 3 after real runs
//! (`compare_finds_a_planted_regression_and_nothing_in_noise`).

mod common;

use benchrig::exit_code;
use common::{export_doc, stderr, transcript};
use std::path::Path;
use std::process::{Command, Output, Stdio};

fn benchrig(dir: &Path, args: &[&str]) -> Command {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_benchrig"));
    cmd.args(args).current_dir(dir).env_remove("RUST_LOG").env_remove("BENCHRIG_DB").env("NO_COLOR", "1");
    cmd
}

fn run(dir: &Path, args: &[&str]) -> Output {
    let out = benchrig(dir, args).output().expect("run benchrig");
    transcript(args, &out);
    out
}

#[test]
fn an_unknown_flag_is_a_usage_error_with_clap_s_message() {
    let dir = tempfile::tempdir().unwrap();
    let out = run(dir.path(), &["run", "--restart", "3", "x.yml"]);
    assert_eq!(out.status.code(), Some(exit_code::USAGE), "not clap's 2, which means a failed cell");
    let err = stderr(&out);
    assert!(err.starts_with("error: unexpected argument '--restart' found"), "{err}");
    assert!(err.contains("Usage: benchrig run [OPTIONS] [PLAYBOOK]"), "{err}");
    assert!(out.stdout.is_empty());
    // A resume plans from what the run stored: a playbook (or -e, -l, -t) beside it is a mistake.
    for args in [
        &["run", "--resume", "3", "x.yml"][..],
        &["run", "--resume", "3", "-e", "a=1"],
        &["run", "--retry-failed", "x.yml"],
    ] {
        let out = run(dir.path(), args);
        assert_eq!(out.status.code(), Some(exit_code::USAGE), "{args:?}");
        assert!(stderr(&out).contains("cannot be used with"), "{args:?}: {}", stderr(&out));
    }
    assert!(stderr(&run(dir.path(), &["run"])).contains("required arguments were not provided"));
    // A missing subcommand and a bad value are usage errors too.
    assert_eq!(run(dir.path(), &[]).status.code(), Some(exit_code::USAGE));
    assert_eq!(run(dir.path(), &["plan", "p.yml", "--forks", "many"]).status.code(), Some(exit_code::USAGE));
}

#[test]
fn help_and_version_exit_0_and_help_lists_every_exit_code() {
    let dir = tempfile::tempdir().unwrap();
    for flag in ["--help", "-h"] {
        let out = run(dir.path(), &[flag]);
        assert_eq!(out.status.code(), Some(exit_code::OK), "{flag}");
        let text = String::from_utf8_lossy(&out.stdout);
        assert!(text.contains(exit_code::HELP), "{flag}: {text}");
        for code in ["0", "1", "2", "3", "4", "130", "141"] {
            assert!(text.lines().any(|l| l.trim_start().starts_with(&format!("{code} "))), "{flag}: {code}");
        }
    }
    let out = run(dir.path(), &["--version"]);
    assert_eq!(out.status.code(), Some(exit_code::OK));
    assert!(String::from_utf8_lossy(&out.stdout).starts_with("benchrig "));
    assert_eq!(run(dir.path(), &["run", "--help"]).status.code(), Some(exit_code::OK));
}

#[test]
fn a_bad_playbook_is_a_configuration_error() {
    let dir = tempfile::tempdir().unwrap();
    let out = run(dir.path(), &["plan", "missing.yml"]);
    assert_eq!(out.status.code(), Some(exit_code::USAGE));
    assert!(stderr(&out).contains("missing.yml"), "{}", stderr(&out));
    std::fs::write(dir.path().join("bad.yml"), "- name: x\n  hosts: all\n  benchmark:\n    - nosuchaction: {}\n")
        .unwrap();
    for cmd in ["plan", "run"] {
        let out = run(dir.path(), &[cmd, "bad.yml", "--db", "x.db"]);
        assert_eq!(out.status.code(), Some(exit_code::USAGE), "{cmd}");
        assert!(stderr(&out).contains("bad.yml:4:"), "{cmd}: {}", stderr(&out));
    }
}

/// Run with stdout a pipe nobody reads any more: the first write fails with
/// EPIPE whatever its size, so the test does not depend on timing.
fn with_closed_stdout(dir: &Path, args: &[&str]) -> Output {
    let (reader, writer) = std::io::pipe().unwrap();
    drop(reader);
    let out = benchrig(dir, args).stdout(writer).stderr(Stdio::piped()).output().expect("run benchrig");
    eprintln!("$ benchrig {} >closed\n--- exit {:?}\n--- stderr\n{}", args.join(" "), out.status.code(), stderr(&out));
    out
}

#[test]
fn a_closed_stdout_exits_141_quietly() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("r.db");
    import_runs(dir.path(), &db);
    let db = db.to_str().unwrap();
    let inv = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/inventory_corpus/yaml_types/inventory.yml");
    let inv = inv.to_str().unwrap();
    let cases: [&[&str]; 6] = [
        &["--help"],
        &["inventory", "-i", inv, "--list"],
        &["inventory", "-i", inv, "--graph"],
        &["runs", "--db", db],
        &["show", "base", "--db", db],
        &["compare", "base", "slower", "--db", db],
    ];
    for args in cases {
        let out = with_closed_stdout(dir.path(), args);
        assert_eq!(out.status.code(), Some(exit_code::BROKEN_PIPE), "{args:?}");
        assert_eq!(stderr(&out), "", "{args:?}: nothing on stderr");
    }
}

/// Two runs in `db`: `base` at 100 MB/s, `slower` at 80 (a planted 20% regression).
fn import_runs(dir: &Path, db: &Path) {
    for (name, mean) in [("base", 100.0), ("slower", 80.0)] {
        let f = dir.join(format!("{name}.json"));
        std::fs::write(&f, export_doc(name, mean).to_string()).unwrap();
        let out = run(dir, &["import", f.to_str().unwrap(), "--db", db.to_str().unwrap()]);
        assert_eq!(out.status.code(), Some(exit_code::OK), "import {name}: {}", stderr(&out));
    }
}

#[test]
fn a_planted_regression_fails_compare_with_3_only_when_asked() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("r.db");
    import_runs(dir.path(), &db);
    let db = db.to_str().unwrap();
    let out = run(dir.path(), &["compare", "base", "slower", "--fail-on-regression", "--threshold", "5", "--db", db]);
    assert_eq!(out.status.code(), Some(exit_code::REGRESSED));
    assert!(String::from_utf8_lossy(&out.stdout).contains("1 regressed"), "the table is still printed");
    let out = run(dir.path(), &["compare", "base", "slower", "--threshold", "5", "--db", db]);
    assert_eq!(out.status.code(), Some(exit_code::OK), "without --fail-on-regression a regression is a result");
    let out = run(dir.path(), &["compare", "base", "base", "--fail-on-regression", "--db", db]);
    assert_eq!(out.status.code(), Some(exit_code::OK));
    let out = run(dir.path(), &["compare", "base", "nosuchrun", "--db", db]);
    assert_eq!(out.status.code(), Some(exit_code::USAGE));
}

#[test]
fn an_unreachable_host_exits_4() {
    let dir = tempfile::tempdir().unwrap();
    // Nothing listens on port 1: ssh is refused at once.
    std::fs::write(
        dir.path().join("inv.yml"),
        "all:\n  hosts:\n    nowhere:\n      ansible_host: 127.0.0.1\n      ansible_port: 1\n",
    )
    .unwrap();
    for cmd in ["ping", "facts", "cleanup"] {
        let out = run(dir.path(), &[cmd, "-i", "inv.yml", "--db", "x.db"]);
        assert_eq!(out.status.code(), Some(exit_code::UNREACHABLE), "{cmd}");
        assert!(stderr(&out).contains("unreachable"), "{cmd}: {}", stderr(&out));
    }
}

#[test]
fn an_unreachable_host_is_tried_again_as_often_as_ansible_ssh_retries_says() {
    let dir = tempfile::tempdir().unwrap();
    let inv = |retries: &str| {
        format!("all:\n  hosts:\n    nowhere:\n      ansible_host: 127.0.0.1\n      ansible_port: 1\n{retries}")
    };
    std::fs::write(dir.path().join("default.yml"), inv("")).unwrap();
    std::fs::write(dir.path().join("none.yml"), inv("      ansible_ssh_retries: 0\n")).unwrap();
    let started = std::time::Instant::now();
    let out = run(dir.path(), &["ping", "-i", "default.yml"]);
    let (took, err) = (started.elapsed(), stderr(&out));
    assert_eq!(out.status.code(), Some(exit_code::UNREACHABLE));
    assert!(err.contains("trying again in 1 s (1 of 2)") && err.contains("trying again in 2 s (2 of 2)"), "{err}");
    assert!(took >= std::time::Duration::from_secs(3), "backed off 1 s, then 2 s: {took:?}");
    let out = run(dir.path(), &["ping", "-i", "none.yml"]);
    assert_eq!(out.status.code(), Some(exit_code::UNREACHABLE));
    assert!(!stderr(&out).contains("trying again"), "{}", stderr(&out));
}

/// A second Ctrl-C quits at once with 130, and on its way out (returned
/// from `main`, not `process::exit`) the run's leases are released by
/// their destructor. A teardown of 60 s is what the first one waits for.
#[test]
fn a_second_ctrl_c_quits_at_once_with_130_and_releases_the_run_s_leases() {
    use std::time::{Duration, Instant};
    let b = common::Bench::new();
    let inv = b.write("local.ini", "localhost ansible_connection=local\n");
    let pb = b.write(
        "slow.yml",
        "- name: slow\n  hosts: all\n  benchmark:\n    - name: wait\n      exec: {command: \"sleep 60\"}\n  teardown:\n    - name: slow teardown\n      exec: {command: \"sleep 60\"}\n",
    );
    let run = b.spawn(&["run", pb.to_str().unwrap(), "-i", inv.to_str().unwrap(), "--name", "quit"], &[]);
    let pid = rustix::process::Pid::from_raw(run.id() as i32).unwrap();
    b.wait_for_cell("quit", "the cell to run", |c| c.status == benchrig::status::CellStatus::Running);
    assert_eq!(b.store().leases().unwrap().len(), 1, "the run holds localhost");
    rustix::process::kill_process(pid, rustix::process::Signal::INT).unwrap();
    // Into the teardown's sleep (the first Ctrl-C stopped the step's).
    std::thread::sleep(Duration::from_secs(2));
    let t0 = Instant::now();
    rustix::process::kill_process(pid, rustix::process::Signal::INT).unwrap();
    let out = run.wait_with_output().unwrap();
    let err = stderr(&out);
    assert!(t0.elapsed() < Duration::from_secs(20), "quit at once, not after the teardown: {:?}\n{err}", t0.elapsed());
    assert_eq!(out.status.code(), Some(exit_code::INTERRUPTED), "{err}");
    assert!(err.contains("interrupted again: quit without waiting"), "{err}");
    assert_eq!(b.store().leases().unwrap(), vec![], "released on the way out of main");
}
