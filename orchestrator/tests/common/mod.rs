//! Helpers for the end-to-end tests: the real `benchrig` binary against the
//! simulated lab that `ci/lab.sh up` builds (see ci/test.sh).
#![allow(dead_code)]

pub mod beside;
pub mod bisect;
pub mod hosts;
pub mod receiver;

use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output};
use std::time::{Duration, Instant};

pub fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).parent().unwrap().to_path_buf()
}

/// Fail the calling test unless it runs as root. A test that needs root
/// calls this first: one that cannot run fails, saying why, and never
/// passes without having checked anything.
pub fn require_root(why: &str) {
    assert!(rustix::process::geteuid().is_root(), "this test needs root ({why}); run it as root, as ci/test.sh does");
}

pub fn lab_inventory() -> PathBuf {
    require_root("the lab's key and known_hosts are root's");
    let inv = repo().join("inventories/simlab.yml");
    assert!(
        Path::new("/var/tmp/benchrig-lab/known_hosts").exists(),
        "the simulated lab is not up: run `ci/lab.sh up` (or ci/test.sh, which does it)"
    );
    inv
}

/// A fresh database of its own on the PostgreSQL server ci/test.sh starts
/// (`BENCHRIG_TEST_POSTGRES`), dropped when this goes.
pub struct PgDatabase {
    pub url: String,
    base: String,
    name: String,
}

impl PgDatabase {
    pub fn new(prefix: &str) -> Self {
        let base = std::env::var("BENCHRIG_TEST_POSTGRES")
            .expect("BENCHRIG_TEST_POSTGRES names the PostgreSQL server for this test (ci/test.sh starts one)");
        let name = format!("{prefix}_{}", std::process::id());
        sh(&format!("psql '{base}' -qc 'DROP DATABASE IF EXISTS {name}' -c 'CREATE DATABASE {name}'"));
        let (head, query) = base.split_once('?').map_or((base.as_str(), ""), |(h, q)| (h, q));
        let url = format!(
            "{}/{name}{}",
            &head[..head.rfind('/').unwrap()],
            if query.is_empty() { "" } else { "?" }.to_owned() + query
        );
        PgDatabase { url, base, name }
    }

    pub fn store(&self) -> benchrig::store::Store {
        benchrig::store::Store::open(&benchrig::store::DbLocation::Postgres(self.url.clone())).unwrap()
    }

    /// As `Bench::wait_for_cell`, in this database.
    pub fn wait_for_cell(&self, run: &str, what: &str, pred: impl Fn(&benchrig::store::CellRow) -> bool) {
        wait_for_cell(|| Some(self.store()), run, what, pred)
    }
}

/// Poll the database `open` gives (none yet: not created) until a cell of
/// run `run` satisfies `pred`; fail after two minutes.
fn wait_for_cell(
    open: impl Fn() -> Option<benchrig::store::Store>,
    run: &str,
    what: &str,
    pred: impl Fn(&benchrig::store::CellRow) -> bool,
) {
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(120);
    loop {
        assert!(std::time::Instant::now() < deadline, "timed out waiting for {what}");
        std::thread::sleep(std::time::Duration::from_millis(200));
        let Some(store) = open() else { continue };
        let Ok(r) = store.resolve_run(run) else { continue };
        if store.cells(r.id).unwrap().iter().any(&pred) {
            return;
        }
    }
}

impl Drop for PgDatabase {
    fn drop(&mut self) {
        let _ = Command::new("psql")
            .arg(&self.base)
            .args(["-qc", &format!("DROP DATABASE {} WITH (FORCE)", self.name)])
            .output();
    }
}

pub struct Bench {
    pub dir: tempfile::TempDir,
}

impl Bench {
    pub fn new() -> Self {
        Bench { dir: tempfile::tempdir().unwrap() }
    }

    pub fn db(&self) -> PathBuf {
        self.dir.path().join("results.db")
    }

    /// benchrig with `args`, this test's database, in this test's directory.
    pub fn command(&self, args: &[&str]) -> Command {
        let mut c = Command::new(env!("CARGO_BIN_EXE_benchrig"));
        c.args(args).env("BENCHRIG_DB", self.db()).current_dir(self.dir.path());
        c
    }

    /// Run benchrig with this test's database, in this test's directory.
    pub fn run(&self, args: &[&str]) -> Output {
        let out = self.command(args).output().expect("run benchrig");
        transcript(args, &out);
        out
    }

    /// Start benchrig in the background, in its own process group (as a
    /// terminal's foreground job would be), output captured; stopped if the
    /// test panics before waiting for it (see `Running`).
    pub fn spawn(&self, args: &[&str], envs: &[(&str, &Path)]) -> Running {
        use std::os::unix::process::CommandExt;
        let child = Command::new(env!("CARGO_BIN_EXE_benchrig"))
            .args(args)
            .env("BENCHRIG_DB", self.db())
            .envs(envs.iter().map(|(k, v)| (*k, *v)))
            .current_dir(self.dir.path())
            .process_group(0)
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .expect("start benchrig");
        Running { child: Some(child) }
    }

    /// Poll the database until a cell of run `run` satisfies `pred`.
    pub fn wait_for_cell(&self, run: &str, what: &str, pred: impl Fn(&benchrig::store::CellRow) -> bool) {
        wait_for_cell(|| self.db().exists().then(|| self.store()), run, what, pred)
    }

    pub fn write(&self, name: &str, text: &str) -> PathBuf {
        let p = self.dir.path().join(name);
        std::fs::write(&p, text).unwrap();
        p
    }

    pub fn store(&self) -> benchrig::store::Store {
        benchrig::store::Store::open(&benchrig::store::DbLocation::Sqlite(self.db())).unwrap()
    }
}

/// A benchrig started in the background by a test. A test that panics
/// before `wait_with_output` must not leave its run going: it would hold
/// the next test's devices and agents ("an agent was left running"). So
/// dropping this stops the run as Ctrl-C would — SIGINT to its process
/// group, so that it cancels its steps and tears down — then SIGKILL if it
/// is not gone within `TEARDOWN_GRACE`, and reaps it.
pub struct Running {
    child: Option<Child>,
}

/// Long enough for a Ctrl-C'd run to cancel a step and release its mounts.
pub const TEARDOWN_GRACE: Duration = Duration::from_secs(60);

impl Running {
    pub fn id(&self) -> u32 {
        self.child.as_ref().expect("not waited for yet").id()
    }

    /// As `Child::wait_with_output`; the run is the caller's to judge then.
    pub fn wait_with_output(mut self) -> std::io::Result<Output> {
        self.child.take().expect("not waited for yet").wait_with_output()
    }
}

impl Drop for Running {
    fn drop(&mut self) {
        let Some(mut child) = self.child.take() else { return };
        // Keep reading its output, or a run blocked on a full pipe cannot
        // tear down; shown for the failing test. Not joined: a process it
        // started may hold the pipe after it is gone.
        let drain = |r: Option<Box<dyn Read + Send>>| {
            if let Some(mut r) = r {
                std::thread::spawn(move || {
                    let mut text = Vec::new();
                    let _ = r.read_to_end(&mut text);
                    eprint!("--- output of the stopped benchrig\n{}", String::from_utf8_lossy(&text));
                });
            }
        };
        drain(child.stdout.take().map(|s| Box::new(s) as Box<dyn Read + Send>));
        drain(child.stderr.take().map(|s| Box::new(s) as Box<dyn Read + Send>));
        stop(&mut child, TEARDOWN_GRACE);
    }
}

/// SIGINT to the child's process group, SIGKILL after `grace`, then reap.
/// Signalled only while the child is unreaped, so its group id is still its own.
fn stop(child: &mut Child, grace: Duration) {
    use rustix::process::{kill_process_group, Pid, Signal};
    if !matches!(child.try_wait(), Ok(None)) {
        return;
    }
    let group = Pid::from_child(child);
    eprintln!("stopping benchrig (pid {}) left running by the test", child.id());
    let _ = kill_process_group(group, Signal::INT);
    let deadline = Instant::now() + grace;
    while Instant::now() < deadline {
        if !matches!(child.try_wait(), Ok(None)) {
            return;
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    eprintln!("benchrig (pid {}) ignored SIGINT for {grace:?}: killing it", child.id());
    let _ = kill_process_group(group, Signal::KILL);
    let _ = child.wait();
}

/// What a benchrig command did, on the test's stderr (shown when it fails).
pub fn transcript(args: &[&str], out: &Output) {
    eprintln!(
        "$ benchrig {}\n--- exit {:?}\n--- stdout\n{}--- stderr\n{}",
        args.join(" "),
        out.status.code(),
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
}

pub fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

pub fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

pub fn sh(cmd: &str) -> String {
    let out = Command::new("sh").arg("-c").arg(cmd).output().unwrap();
    assert!(out.status.success(), "`{cmd}` failed: {}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8_lossy(&out.stdout).trim().to_string()
}

pub fn sha256_file(path: &Path) -> String {
    sh(&format!("sha256sum {} | cut -d' ' -f1", path.display()))
}

/// Runs `f` when dropped: cleanup that must happen on a failed assert too.
pub fn scopeguard(f: impl FnOnce()) -> impl Drop {
    struct Guard<F: FnOnce()>(Option<F>);
    impl<F: FnOnce()> Drop for Guard<F> {
        fn drop(&mut self) {
            if let Some(f) = self.0.take() {
                f();
            }
        }
    }
    Guard(Some(f))
}

pub fn lab(args: &[&str]) -> String {
    sh(&format!("{} {}", repo().join("ci/lab.sh").display(), args.join(" ")))
}

/// A loop device over a fresh sparse image, detached on drop.
pub struct LoopDisk {
    pub dev: String,
    _img: tempfile::NamedTempFile,
}

impl LoopDisk {
    pub fn new(size_mb: u64) -> Self {
        require_root("it attaches loop devices");
        let img = tempfile::Builder::new().prefix("brtest").suffix(".img").tempfile_in("/var/tmp").unwrap();
        img.as_file().set_len(size_mb << 20).unwrap();
        let dev = sh(&format!("losetup --find --show {}", img.path().display()));
        LoopDisk { dev, _img: img }
    }

    /// A loop device over a copy of this one's image: the same bytes on
    /// another device, as a disk image copied from another host would be.
    pub fn copy(&self) -> Self {
        let img = tempfile::Builder::new().prefix("brtest").suffix(".img").tempfile_in("/var/tmp").unwrap();
        sh(&format!("sync && cp --sparse=always {} {}", self._img.path().display(), img.path().display()));
        let dev = sh(&format!("losetup --find --show {}", img.path().display()));
        LoopDisk { dev, _img: img }
    }

    /// sha256 of the whole device: proof that nothing wrote to it.
    pub fn digest(&self) -> String {
        sh(&format!("sha256sum {} | cut -d' ' -f1", self.dev))
    }

    /// sha256 of the first 4 KiB: for an active swap device, whose slots
    /// the kernel may write whenever some cgroup of the lab is short of
    /// memory. That page holds the swap signature, which any mkfs or
    /// wipefs over the device rewrites.
    pub fn header_digest(&self) -> String {
        sh(&format!("head -c 4096 {} | sha256sum | cut -d' ' -f1", self.dev))
    }
}

impl Drop for LoopDisk {
    fn drop(&mut self) {
        let _ = Command::new("swapoff").arg(&self.dev).output();
        // Partitions partx added outlive the detach: the next test given
        // this loop number would find them.
        let _ = Command::new("partx").args(["-d", &self.dev]).output();
        let _ = Command::new("losetup").args(["-d", &self.dev]).output();
    }
}

/// The lab inventory's connection settings for one host, with our own scratch devices.
pub fn inventory_for(host: &str, address: &str, scratch_yaml: &str) -> String {
    format!(
        "all:\n  vars:\n    ansible_user: root\n    ansible_ssh_private_key_file: /var/tmp/benchrig-lab/id_ed25519\n    \
         ansible_ssh_common_args: \"-o UserKnownHostsFile=/var/tmp/benchrig-lab/known_hosts\"\n  hosts:\n    {host}:\n      \
         ansible_host: {address}\n      scratch_devices:\n{scratch_yaml}"
    )
}

/// A run in `benchrig export`'s format: host `h`, one cell, five samples of
/// `speed` around `mean` (higher is better).
pub fn export_doc(name: &str, mean: f64) -> serde_json::Value {
    let samples: Vec<_> = [0.0, 1.0, -1.0, 0.5, -0.5]
        .iter()
        .enumerate()
        .map(|(i, d)| {
            serde_json::json!({
                "cell_id": 1, "step_index": 0, "step": "measure", "workload": "exec", "repetition": i + 1,
                "metric": "speed", "value": mean + d, "unit": "MB/s", "better": "higher",
                "ts": "2026-01-01T00:00:00Z",
            })
        })
        .collect();
    serde_json::json!({
        "benchrig_export": 1,
        "run": {
            "id": 1, "name": name, "playbook": "speed.yml", "playbook_text": "", "inventory": "",
            "extra_vars": "{}", "benchrig_version": "0", "started": format!("2026-01-01T00:00:0{}Z", name.len()),
            "finished": "2026-01-01T00:01:00Z", "status": "ok",
        },
        "hosts": [{"name": "h", "status": "ok"}],
        "cells": [{
            "id": 1, "host": "h", "play_index": 0, "play": "speed", "key": "0", "params": "{}",
            "repeat": 5, "status": "ok",
        }],
        "samples": samples,
    })
}

/// Night `i` (from 2026-01-01, one a day) of speed.yml: `reps` samples
/// around `mean`.
pub fn night(i: i64, mean: f64, reps: usize) -> serde_json::Value {
    let mut doc = export_doc(&format!("night-{:03}", i + 1), mean);
    let day = time::macros::datetime!(2026-01-01 02:00 UTC) + time::Duration::days(i);
    doc["run"]["started"] = day.format(&time::format_description::well_known::Rfc3339).unwrap().into();
    let one = doc["samples"][0].clone();
    doc["samples"] = (0..reps)
        .map(|r| {
            let mut s = one.clone();
            s["repetition"] = (r + 1).into();
            s["value"] = (mean + [0.0, 1.0, -1.0, 0.5, -0.5][r % 5]).into();
            s
        })
        .collect();
    doc
}

pub fn stored(db: &std::path::Path, nights: impl Iterator<Item = serde_json::Value>) {
    let store = benchrig::store::Store::open(&benchrig::store::DbLocation::Sqlite(db.to_path_buf())).unwrap();
    for doc in nights {
        store.import_run(&doc).unwrap();
    }
}
