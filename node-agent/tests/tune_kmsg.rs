//! `tune` and the visit's kernel log through the agent's dispatch, on real
//! loop devices of this machine (private to the test: nothing shared is
//! tuned). Both need root and say so first.

mod common;

use benchrig_agent::dispatch;
use benchrig_agent::outbox::{Outbox, StepCtx};
use benchrig_agent::state::HostState;
use benchrig_agent::sysfs::SysView;
use benchrig_wire::kernel_log::{KernelLog, KernelLogKind};
use benchrig_wire::messages::AgentError;
use benchrig_wire::scratch::{ScratchDevice, ScratchKind};
use benchrig_wire::steps::{Action, StepOutput};
use std::process::Command;
use std::sync::atomic::AtomicBool;

use common::require_root;

fn sh(cmd: &str) -> String {
    let out = Command::new("sh").arg("-c").arg(cmd).output().unwrap();
    assert!(out.status.success(), "`{cmd}`: {}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8_lossy(&out.stdout).trim().to_string()
}

/// A loop device over a sparse image in `dir` (on a small tmpfs when `full_at_mb`).
struct Disk {
    dir: tempfile::TempDir,
    dev: String,
    tmpfs: bool,
}

impl Disk {
    fn new(full_at_mb: Option<u64>) -> Disk {
        let dir = tempfile::Builder::new().prefix("brtune").tempdir_in("/var/tmp").unwrap();
        let d = dir.path().display();
        if let Some(mb) = full_at_mb {
            sh(&format!("mount -t tmpfs -o size={mb}M brtune {d}"));
        }
        sh(&format!("truncate -s 64M {d}/img"));
        let dev = sh(&format!("losetup --find --show {d}/img"));
        Disk { dir, dev, tmpfs: full_at_mb.is_some() }
    }

    fn name(&self) -> &str {
        self.dev.trim_start_matches("/dev/")
    }

    fn read_ahead_kb(&self) -> String {
        sh(&format!("cat /sys/class/block/{}/queue/read_ahead_kb", self.name()))
    }
}

impl Drop for Disk {
    fn drop(&mut self) {
        let _ = Command::new("losetup").args(["-d", &self.dev]).output();
        if self.tmpfs {
            let _ = Command::new("umount").arg(self.dir.path()).output();
        }
    }
}

fn host(disk: &Disk) -> HostState {
    let mut st = HostState::new(SysView::real());
    let d: ScratchDevice = serde_json::from_value(serde_json::json!({"name": "d", "path": disk.dev})).unwrap();
    assert_eq!(d.kind, ScratchKind::Block);
    st.scratch = vec![d];
    st.kmsg = benchrig_agent::kmsg::Reader::open_at_end().map_err(|e| e.to_string());
    let restored = st.set_work_dir(disk.dir.path().join("work"));
    assert!(restored.is_empty(), "{restored:?}");
    st
}

/// What `kill -9` leaves of a session that tuned a device: its journal,
/// here given the name a dead agent's would have (the pid of a process
/// that has exited), and the setting. The next session's start writes
/// the setting back and says so; the journal goes.
#[test]
#[ignore = "needs root; ci/test.sh runs it (--ignored)"]
fn a_killed_sessions_tuning_is_restored_by_the_next_start_from_its_journal() {
    require_root("it attaches loop devices and tunes one");
    let disk = Disk::new(None);
    let before = disk.read_ahead_kb();
    let mut st = host(&disk);
    run(&mut st, serde_json::json!({"action": "tune", "args": {"read_ahead_kb": 16, "devices": ["d"]}})).unwrap();
    assert_eq!(disk.read_ahead_kb(), "16");
    let journal = disk.dir.path().join("work/journal");
    let ours = std::fs::read_dir(&journal).unwrap().next().unwrap().unwrap().path();
    // Killed: nothing released. A pid that has surely exited stands for the agent's.
    std::mem::forget(st);
    let dead = Command::new("true").spawn().unwrap();
    let dead_pid = dead.id();
    let _ = dead.wait_with_output();
    let name = ours.file_name().unwrap().to_string_lossy().into_owned();
    let mut parts: Vec<&str> = name.trim_end_matches(".jsonl").rsplitn(3, '-').collect();
    parts.reverse(); // boot, pid, start
    let dead_name = format!("{}-{dead_pid}-{}.jsonl", parts[0], parts[2]);
    std::fs::rename(&ours, journal.join(&dead_name)).unwrap();

    let mut next = HostState::new(SysView::real());
    let restored = next.set_work_dir(disk.dir.path().join("work"));
    assert_eq!(disk.read_ahead_kb(), before, "restored by the next start");
    assert_eq!(
        restored,
        [format!("restored read_ahead_kb of {} = {before} (was 16) (left by agent pid {dead_pid})", disk.name())]
    );
    assert!(!journal.join(&dead_name).exists(), "nothing left to undo: the journal goes");
    // Once is enough: a second start finds nothing.
    assert!(HostState::new(SysView::real()).set_work_dir(disk.dir.path().join("work")).is_empty());
}

fn run(st: &mut HostState, action: serde_json::Value) -> Result<StepOutput, AgentError> {
    let action: Action = serde_json::from_value(action).expect("a valid action");
    let out = Outbox::new(Box::new(std::io::sink()));
    let cancel = AtomicBool::new(false);
    dispatch::run(st, &StepCtx::new(1, &out, &cancel), &action)
}

#[test]
#[ignore = "needs root; ci/test.sh runs it (--ignored)"]
fn tune_sets_a_devices_read_ahead_and_the_release_that_ends_the_visit_restores_it() {
    require_root("it attaches loop devices and tunes one");
    let disk = Disk::new(None);
    let mut st = host(&disk);
    let before = disk.read_ahead_kb();
    assert_ne!(before, "16");
    let out =
        run(&mut st, serde_json::json!({"action": "tune", "args": {"read_ahead_kb": 16, "devices": ["d"]}})).unwrap();
    assert_eq!(disk.read_ahead_kb(), "16");
    let t = &out.info["tune"][0];
    assert_eq!(
        (t["setting"].as_str(), t["previous"].as_str()),
        (Some(format!("read_ahead_kb of {}", disk.name()).as_str()), Some(before.as_str()))
    );
    // A scheduler the device does not offer: unsupported, nothing written.
    let e = run(
        &mut st,
        serde_json::json!({"action": "tune", "args": {"scheduler": "no-such", "read_ahead_kb": 32, "devices": ["d"]}}),
    )
    .unwrap_err();
    assert!(e.message.contains("`no-such` is not offered"), "{e:?}");
    assert_eq!(disk.read_ahead_kb(), "16");
    let out = run(&mut st, serde_json::json!({"action": "unmount", "args": {}})).unwrap();
    assert_eq!(disk.read_ahead_kb(), before, "restored: {:?}", out.info);
    assert!(out.info.contains_key("kernel_log"), "{:?}", out.info);
}

/// A scheduler switch resets the queue's nr_requests (the kernel sizes it
/// for the new scheduler): restoring the scheduler alone would leave it at
/// the kernel's default, not the host's own value.
#[test]
#[ignore = "needs root; ci/test.sh runs it (--ignored)"]
fn a_tuned_scheduler_is_restored_with_the_nr_requests_it_reset() {
    require_root("it attaches loop devices and tunes one");
    let disk = Disk::new(None);
    let q = format!("/sys/class/block/{}/queue", disk.name());
    sh(&format!("echo none > {q}/scheduler; echo 32 > {q}/nr_requests"));
    let mut st = host(&disk);
    let out =
        run(&mut st, serde_json::json!({"action": "tune", "args": {"scheduler": "mq-deadline", "devices": ["d"]}}))
            .unwrap();
    assert!(sh(&format!("cat {q}/scheduler")).contains("[mq-deadline]"));
    assert_ne!(sh(&format!("cat {q}/nr_requests")), "32", "the kernel reset it with the switch");
    assert_eq!(out.info["tune"].as_array().map(Vec::len), Some(1), "the guard is not shown as applied: {:?}", out.info);
    run(&mut st, serde_json::json!({"action": "unmount", "args": {}})).unwrap();
    assert!(sh(&format!("cat {q}/scheduler")).contains("[none]"));
    assert_eq!(sh(&format!("cat {q}/nr_requests")), "32", "the host's own nr_requests is back");
    // Both asked for: the scheduler goes first, so the nr_requests asked for is the one in effect.
    run(&mut st, serde_json::json!({"action": "tune", "args": {"scheduler": "mq-deadline", "nr_requests": 32, "devices": ["d"]}}))
        .unwrap();
    assert_eq!(sh(&format!("cat {q}/nr_requests")), "32");
    run(&mut st, serde_json::json!({"action": "unmount", "args": {}})).unwrap();
    assert!(sh(&format!("cat {q}/scheduler")).contains("[none]"));
    assert_eq!(sh(&format!("cat {q}/nr_requests")), "32");
}

#[test]
#[ignore = "needs root; ci/test.sh runs it (--ignored)"]
fn an_io_error_during_the_visit_is_in_its_release_for_the_sessions_device() {
    require_root("it mounts a tmpfs and attaches loop devices");
    let full = Disk::new(Some(4));
    let mut st = host(&full);
    // Past 4 MiB the backing tmpfs is full: the block layer fails the requests and says so.
    let _ = Command::new("dd")
        .args(["if=/dev/zero", &format!("of={}", full.dev), "bs=1M", "count=16", "conv=fsync"])
        .output();
    let out = run(&mut st, serde_json::json!({"action": "unmount", "args": {}})).unwrap();
    let log: KernelLog = serde_json::from_value(out.info["kernel_log"].clone()).unwrap();
    let mine: Vec<_> = log.lines.iter().filter(|l| l.text.contains(&format!("dev {}", full.name()))).collect();
    assert!(!mine.is_empty(), "{log:?}");
    assert!(mine.iter().all(|l| l.kind == KernelLogKind::IoError), "{mine:?}");
    // The next visit starts after them.
    let again = run(&mut st, serde_json::json!({"action": "unmount", "args": {}})).unwrap();
    let log: KernelLog = serde_json::from_value(again.info["kernel_log"].clone()).unwrap();
    assert!(log.lines.iter().all(|l| !l.text.contains(&format!("dev {},", full.name()))), "{log:?}");
    // Another session, whose devices these are not, does not keep them.
    let other = Disk::new(None);
    let mut elsewhere = host(&other);
    let _ = Command::new("dd")
        .args(["if=/dev/zero", &format!("of={}", full.dev), "bs=1M", "count=16", "conv=fsync"])
        .output();
    let out = run(&mut elsewhere, serde_json::json!({"action": "unmount", "args": {}})).unwrap();
    let log: KernelLog = serde_json::from_value(out.info["kernel_log"].clone()).unwrap();
    assert!(log.lines.iter().all(|l| !l.text.contains(&format!("dev {},", full.name()))), "{log:?}");
}
