//! The agent's journal of what it changes on a host, so that what a killed
//! agent (OOM, `kill -9`, a power cut of the orchestrator's side) leaves
//! behind is undone by the next agent to start there, and said.
//!
//! Each change is written, and fsync'd, *before* it is made: a mount, a
//! loop device attached for an image, a kernel setting `tune` wrote (with
//! the value to write back). Undoing it writes an `undone` line after. One
//! file per session, `<work dir>/journal/<boot>-<pid>-<start>.jsonl`,
//! removed when the session ends having released everything. Every agent
//! start (`Configure`, so `benchrig cleanup` too) replays the files of
//! sessions that are dead — another boot, or no process with that pid and
//! start time — undoing what is still outstanding, newest first.
//!
//! In the work dir, inside the remote dir deploy has checked is the agent
//! user's alone (not in root's `/var/lib/benchrig`, which lab hosts
//! sharing a machine share): a journal names what root writes where. Its
//! dir is made 0700 and a replay trusts no file another user could have
//! written (`ledger::not_private`), writes only under `/sys` and
//! `/proc/sys`, and unmounts only under the work dir.
//!
//! Not journaled: NFS exports carry their own pid and boot in their file
//! (`exports::remove_stale`, run at the same start); a filesystem a cold
//! step froze is one of our mounts, and unmounting thaws it first
//! (`undo::unmount`); a reboot undoes the rest, so another boot's journal
//! is only removed.

use crate::exports::boot_id;
use crate::ledger::{not_private, open_private};
use rustix::fs::OFlags;
use serde::{Deserialize, Serialize};
use std::fs::File;
use std::io::{BufRead, BufReader, Write};
use std::os::unix::fs::{DirBuilderExt, MetadataExt};
use std::path::{Path, PathBuf};

/// A change to the host that outlives the agent unless undone.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "change", rename_all = "snake_case")]
pub enum Change {
    /// A kernel setting, and the value it had.
    Tuned { setting: String, path: PathBuf, previous: String },
    /// A filesystem mounted at a mount point of ours.
    Mounted { mountpoint: PathBuf },
    /// A loop device attached over this image.
    LoopAttached { image: PathBuf },
}

impl Change {
    /// What an `undone` line must match: the same thing changed.
    fn key(&self) -> (&'static str, &Path) {
        match self {
            Change::Tuned { path, .. } => ("tuned", path),
            Change::Mounted { mountpoint } => ("mounted", mountpoint),
            Change::LoopAttached { image } => ("loop", image),
        }
    }
}

#[derive(Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "entry", rename_all = "snake_case")]
enum Line {
    Made(Change),
    Undone(Change),
}

/// This agent's journal: nowhere until the session is configured, its file
/// made at the first change. Behind a lock so that whoever holds the host
/// state, even shared, can write it.
#[derive(Default)]
pub struct Journal {
    dir: Option<PathBuf>,
    file: std::sync::Mutex<Option<File>>,
}

/// Which session a journal is: this boot, this pid, and when the process started.
#[derive(Clone, Debug, PartialEq)]
struct Session {
    boot: String,
    pid: u32,
    start: u64,
}

impl Session {
    fn this() -> Session {
        let pid = std::process::id();
        Session { boot: boot_id(), pid, start: process_start(pid).unwrap_or(0) }
    }

    fn file_name(&self) -> String {
        format!("{}-{}-{}.jsonl", self.boot, self.pid, self.start)
    }

    fn parse(name: &str) -> Option<Session> {
        let stem = name.strip_suffix(".jsonl")?;
        let (rest, start) = stem.rsplit_once('-')?;
        let (boot, pid) = rest.rsplit_once('-')?;
        Some(Session { boot: boot.to_string(), pid: pid.parse().ok()?, start: start.parse().ok()? })
    }

    /// Its process still runs: same boot, and that pid started when it did.
    fn alive(&self) -> bool {
        self.boot == boot_id() && process_start(self.pid) == Some(self.start)
    }
}

impl Journal {
    /// The journal of the session whose remote dir is `work_dir`.
    pub fn in_dir(work_dir: &Path) -> Journal {
        Journal { dir: Some(work_dir.join("journal")), file: Default::default() }
    }

    /// Whether this journal lives under `work_dir`.
    pub fn is_in(&self, work_dir: &Path) -> bool {
        self.dir.as_deref() == Some(&work_dir.join("journal"))
    }

    /// Write down, durably, a change about to be made. An error means the
    /// change must not be made: nothing could undo it after a crash.
    pub fn record(&self, change: &Change) -> Result<(), String> {
        self.append(&Line::Made(change.clone()))
    }

    /// A change undone. Best effort: a line lost here only makes the next
    /// start try again an undo that finds nothing to do.
    pub fn undone(&self, change: &Change) {
        if self.opened().is_some() {
            if let Err(e) = self.append(&Line::Undone(change.clone())) {
                crate::say!("benchrig-agent: {e}");
            }
        }
    }

    /// The session ends. `clean`: it released everything, so nothing is
    /// left to undo and the file goes; otherwise it stays for the next start.
    pub fn close(&self, clean: bool) {
        if let (Some(_), Some(dir), true) = (self.opened().take(), &self.dir, clean) {
            let _ = std::fs::remove_file(dir.join(Session::this().file_name()));
        }
    }

    /// What this journal holds that is not undone (tests of the code that writes it).
    #[cfg(test)]
    pub fn pending(&self) -> Vec<Change> {
        let Some(dir) = &self.dir else { return vec![] };
        read(&dir.join(Session::this().file_name())).unwrap_or_default()
    }

    fn opened(&self) -> std::sync::MutexGuard<'_, Option<File>> {
        self.file.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn append(&self, line: &Line) -> Result<(), String> {
        let Some(dir) = &self.dir else { return Err("the session has no journal yet (not configured)".into()) };
        let shown = |e: &dyn std::fmt::Display| format!("cannot write the journal in {}: {e}", dir.display());
        let mut file = self.opened();
        if file.is_none() {
            std::fs::DirBuilder::new().recursive(true).mode(0o700).create(dir).map_err(|e| shown(&e))?;
            let m = std::fs::symlink_metadata(dir).map_err(|e| shown(&e))?;
            let link = m.is_symlink().then(|| "is a link".to_string());
            if let Some(why) = link.or_else(|| not_private(m.uid(), m.mode(), false)) {
                return Err(shown(&format!("{} {why}", dir.display())));
            }
            let path = dir.join(Session::this().file_name());
            let new = open_private(&path, OFlags::CREATE | OFlags::EXCL | OFlags::APPEND).map_err(|e| shown(&e))?;
            // The new name must survive a crash too.
            File::open(dir).and_then(|d| d.sync_all()).map_err(|e| shown(&e))?;
            *file = Some(new);
        }
        let file = file.as_mut().expect("opened above");
        let mut text = serde_json::to_string(line).map_err(|e| shown(&e))?;
        text.push('\n');
        file.write_all(text.as_bytes()).and_then(|()| file.sync_data()).map_err(|e| shown(&e))
    }
}

/// Undo what dead sessions journaled under `work_dir` and left, newest
/// first; what was done, as a person reads it ("restored read_ahead_kb of
/// loop3 = 128", "unmounted …"), and what could not be (kept for the next
/// start).
pub fn recover(work_dir: &Path, view: &crate::sysfs::SysView) -> Vec<String> {
    let dir = work_dir.join("journal");
    let Ok(entries) = std::fs::read_dir(&dir) else { return vec![] };
    if let Ok(m) = std::fs::symlink_metadata(&dir) {
        if let Some(why) = not_private(m.uid(), m.mode(), false) {
            return vec![format!("journal {} ignored: it {why}", dir.display())];
        }
    }
    let mut said = Vec::new();
    let mut files: Vec<(PathBuf, Session)> = entries
        .flatten()
        .filter_map(|e| Session::parse(&e.file_name().to_string_lossy()).map(|s| (e.path(), s)))
        .filter(|(_, s)| !s.alive())
        .collect();
    files.sort_by_key(|(p, _)| std::fs::symlink_metadata(p).and_then(|m| m.modified()).ok());
    for (path, session) in files.into_iter().rev() {
        if session.boot != boot_id() {
            // A reboot undid its mounts, loop devices and settings.
            let _ = std::fs::remove_file(&path);
            continue;
        }
        let outstanding = match read(&path) {
            Ok(o) => o,
            Err(e) => {
                said.push(e);
                continue;
            }
        };
        let mut left = Vec::new();
        for change in outstanding.into_iter().rev() {
            match undo(&change, work_dir, view) {
                Ok(Some(done)) => said.push(format!("{done} (left by agent pid {})", session.pid)),
                Ok(None) => {}
                Err(e) => {
                    said.push(format!("could not undo what agent pid {} left: {e}", session.pid));
                    left.push(change);
                }
            }
        }
        let kept = if left.is_empty() {
            std::fs::remove_file(&path).map_err(|e| e.to_string())
        } else {
            rewrite(&path, &left)
        };
        if let Err(e) = kept {
            said.push(format!("journal {}: {e}", path.display()));
        }
    }
    said
}

/// The changes a journal file holds that were not undone, oldest first.
fn read(path: &Path) -> Result<Vec<Change>, String> {
    let file = open_private(path, OFlags::empty()).map_err(|e| format!("journal {}: {e}", path.display()))?;
    let m = file.metadata().map_err(|e| format!("journal {}: {e}", path.display()))?;
    if let Some(why) = not_private(m.uid(), m.mode(), false) {
        return Err(format!("journal {} ignored: it {why}", path.display()));
    }
    Ok(outstanding(BufReader::new(file).lines().map_while(Result::ok)))
}

/// Replay journal lines: what was made and not undone since, oldest first.
/// A line that does not parse (the last one, torn by the crash) is skipped.
fn outstanding(lines: impl Iterator<Item = String>) -> Vec<Change> {
    let mut made: Vec<Change> = Vec::new();
    for line in lines {
        match serde_json::from_str::<Line>(&line) {
            Ok(Line::Made(c)) => made.push(c),
            Ok(Line::Undone(c)) => {
                if let Some(i) = made.iter().rposition(|m| m.key() == c.key()) {
                    made.remove(i);
                }
            }
            Err(_) => {}
        }
    }
    made
}

fn rewrite(path: &Path, left: &[Change]) -> Result<(), String> {
    let tmp = path.with_extension("tmp");
    let _ = std::fs::remove_file(&tmp);
    let mut f = open_private(&tmp, OFlags::CREATE | OFlags::EXCL).map_err(|e| e.to_string())?;
    for c in left {
        let line = serde_json::to_string(&Line::Made(c.clone())).map_err(|e| e.to_string())?;
        writeln!(f, "{line}").map_err(|e| e.to_string())?;
    }
    f.sync_all().map_err(|e| e.to_string())?;
    std::fs::rename(&tmp, path).map_err(|e| e.to_string())
}

/// Undo one change if it is still in effect: what was done, or `None`
/// when there was nothing left to do.
fn undo(change: &Change, work_dir: &Path, view: &crate::sysfs::SysView) -> Result<Option<String>, String> {
    match change {
        Change::Tuned { setting, path, previous } => {
            if !(path.starts_with("/sys/") || path.starts_with("/proc/sys/"))
                || path.components().any(|c| c.as_os_str() == "..")
            {
                return Err(format!("{} is not a kernel setting; not written", path.display()));
            }
            let now = match std::fs::read_to_string(path) {
                Ok(v) => v,
                // The device is gone: so is its setting.
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
                Err(e) => return Err(format!("cannot read {}: {e}", path.display())),
            };
            // A choice file reads "none [mq-deadline]"; `previous` is the word.
            if crate::kernel_settings::bracketed(&now) == *previous {
                return Ok(None);
            }
            std::fs::write(path, previous).map_err(|e| format!("cannot restore {setting} to {previous}: {e}"))?;
            Ok(Some(format!("restored {setting} = {previous} (was {})", crate::kernel_settings::bracketed(&now))))
        }
        Change::Mounted { mountpoint } => {
            if !mountpoint.starts_with(work_dir) || mountpoint.components().any(|c| c.as_os_str() == "..") {
                return Err(format!("{} is not under {}; not unmounted", mountpoint.display(), work_dir.display()));
            }
            let mp = mountpoint.to_string_lossy();
            if !view.mountinfo().iter().any(|m| m.target == mp) {
                return Ok(None);
            }
            crate::undo::unmount(mountpoint).map_err(|e| e.to_string())?;
            let _ = std::fs::remove_dir(mountpoint);
            Ok(Some(format!("unmounted {mp}")))
        }
        Change::LoopAttached { image } => {
            let mut detached = Vec::new();
            for name in view.loops_backed_by(image) {
                let dev = PathBuf::from("/dev").join(&name);
                // Still in use (by whom, if not by us?): left alone.
                if crate::undo::exclusive_open(&dev).is_err() {
                    return Err(format!("{} ({}) is in use", dev.display(), image.display()));
                }
                crate::undo::detach_loop(&dev)?;
                detached.push(dev.display().to_string());
            }
            Ok((!detached.is_empty()).then(|| format!("detached {} from {}", detached.join(", "), image.display())))
        }
    }
}

/// When process `pid` started, in clock ticks since boot (`/proc/PID/stat`
/// field 22), telling a reused pid from the process that wrote a journal.
fn process_start(pid: u32) -> Option<u64> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // The command name may hold spaces and parentheses: fields follow the last ')'.
    let after = &stat[stat.rfind(')')? + 1..];
    after.split_whitespace().nth(19)?.parse().ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tuned(path: &str, previous: &str) -> Change {
        Change::Tuned { setting: "read_ahead_kb of loop3".into(), path: path.into(), previous: previous.into() }
    }

    #[test]
    fn what_was_made_and_not_undone_is_outstanding_and_a_torn_last_line_is_skipped() {
        let mounted = Change::Mounted { mountpoint: "/r/work/mnt/d0".into() };
        let lines = [
            Line::Made(tuned("/sys/a", "128")),
            Line::Made(mounted.clone()),
            Line::Undone(mounted.clone()),
            Line::Made(mounted.clone()),
            Line::Made(tuned("/sys/a", "16")),
            Line::Undone(tuned("/sys/a", "16")),
        ];
        let mut text: Vec<String> = lines.iter().map(|l| serde_json::to_string(l).unwrap()).collect();
        text.push(r#"{"entry":"made","change":"tun"#.into());
        assert_eq!(outstanding(text.into_iter()), [tuned("/sys/a", "128"), mounted]);
    }

    #[test]
    fn a_session_is_alive_only_as_the_same_process_of_this_boot() {
        let me = Session::this();
        assert!(me.alive());
        assert_eq!(Session::parse(&me.file_name()), Some(me.clone()));
        assert!(!Session { start: me.start + 1, ..me.clone() }.alive(), "a reused pid");
        assert!(!Session { boot: "another-boot".into(), ..me.clone() }.alive());
        assert_eq!(Session::parse("x.jsonl"), None);
    }

    #[test]
    fn a_dead_sessions_changes_are_undone_newest_first_and_said_and_the_file_goes() {
        let remote = tempfile::tempdir().unwrap();
        let dir = remote.path().join("journal");
        std::fs::create_dir(&dir).unwrap();
        std::fs::set_permissions(&dir, std::os::unix::fs::PermissionsExt::from_mode(0o700)).unwrap();
        let dead = Session { boot: boot_id(), pid: u32::MAX - 1, start: 1 };
        let lines = [
            Line::Made(tuned("/etc/passwd", "root::0:0::/:/bin/sh")),
            Line::Made(Change::Mounted { mountpoint: "/elsewhere".into() }),
        ];
        let text: String = lines.iter().map(|l| serde_json::to_string(l).unwrap() + "\n").collect();
        let path = dir.join(dead.file_name());
        std::fs::write(&path, text).unwrap();
        std::fs::set_permissions(&path, std::os::unix::fs::PermissionsExt::from_mode(0o600)).unwrap();
        let said = recover(remote.path(), &crate::sysfs::SysView::real());
        // Neither is ours to undo: refused, kept, and said.
        assert_eq!(said.len(), 2, "{said:?}");
        assert!(said[0].contains("/elsewhere is not under"), "{said:?}");
        assert!(said[1].contains("/etc/passwd is not a kernel setting"), "{said:?}");
        assert_eq!(outstanding(std::fs::read_to_string(&path).unwrap().lines().map(String::from)).len(), 2);

        // A journal another user could write is not replayed at all.
        std::fs::set_permissions(&path, std::os::unix::fs::PermissionsExt::from_mode(0o666)).unwrap();
        let said = recover(remote.path(), &crate::sysfs::SysView::real());
        assert!(said.len() == 1 && said[0].contains("writable by group or others"), "{said:?}");

        // Another boot's journal: a reboot undid it all; it just goes.
        let old = dir.join(Session { boot: "another-boot".into(), ..dead }.file_name());
        std::fs::rename(&path, &old).unwrap();
        assert_eq!(recover(remote.path(), &crate::sysfs::SysView::real()), Vec::<String>::new());
        assert!(!old.exists());
    }

    #[test]
    fn a_journal_is_written_before_the_change_and_gone_after_a_clean_end() {
        let remote = tempfile::tempdir().unwrap();
        let j = Journal::default();
        assert!(j.record(&tuned("/sys/a", "1")).is_err(), "no journal before Configure: no change either");
        let j = Journal::in_dir(remote.path());
        let c = Change::Mounted { mountpoint: remote.path().join("work/mnt/d0") };
        j.record(&c).unwrap();
        let path = remote.path().join("journal").join(Session::this().file_name());
        let text = std::fs::read_to_string(&path).unwrap();
        assert_eq!(outstanding(text.lines().map(String::from)), std::slice::from_ref(&c));
        use std::os::unix::fs::PermissionsExt;
        assert_eq!(std::fs::metadata(&path).unwrap().permissions().mode() & 0o777, 0o600);
        j.undone(&c);
        j.close(true);
        assert!(!path.exists());
    }
}
