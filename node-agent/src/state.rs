//! What this agent session has set up on the host, so it can always be undone:
//! mounts it made, loop devices it attached, NFS exports of its mounts,
//! kernel settings it tuned. Released by `unmount`, and by the session on
//! shutdown or when the orchestrator disappears.

use crate::cmd;
use crate::exports::{self, Export};
use crate::journal::{Change, Journal};
use crate::ledger::Ledger;
use crate::safety::Device;
use crate::sysfs::SysView;
use crate::undo::{detach_loop, unmount, Unmount};
use benchrig_wire::messages::AgentError;
use benchrig_wire::scratch::ScratchDevice;
use std::path::{Path, PathBuf};

pub struct HostState {
    pub view: SysView,
    pub work_dir: PathBuf,
    /// The host's `scratch_devices`, from `Configure`; `scratch::listed` finds one by name.
    pub scratch: Vec<ScratchDevice>,
    /// Where each block entry's path led when the session was configured (`scratch::locate_all`).
    pub located: std::collections::BTreeMap<String, Located>,
    /// Oldest first; the last one is the default target of a workload.
    pub mounted: Vec<Mounted>,
    /// NFS exports of directories in `mounted`, undone before their mount.
    pub exports: Vec<Export>,
    /// The host's record of the filesystems benchrig made on it.
    pub ledger: Ledger,
    /// Kernel settings `tune` changed, oldest first, each with the value it
    /// had: restored newest first by a release of everything.
    pub tuned: Vec<Tuned>,
    /// Each change above written down before it is made, for the agent
    /// that starts here after this one is killed (`journal`).
    pub journal: Journal,
    /// The kernel log from where the current visit began (`kmsg`); `Err`
    /// says why it cannot be read (not root under `dmesg_restrict`).
    pub kmsg: Result<crate::kmsg::Reader, String>,
    /// A boot armed by `Request::Boot`, fired when the session says goodbye.
    pub armed: Option<crate::boot::Firing>,
}

/// Where a block entry's path led when the session was configured: the
/// device, or why the link cannot be believed.
#[derive(Clone, Debug)]
pub struct Located {
    /// The entry's path then: a session configured again with another path looks again.
    pub path: String,
    pub found: Result<(Device, PathBuf), Unlocated>,
}

/// Why a block entry's path gives no device to use, and the rule a
/// step's refusal names.
#[derive(Clone, Debug, thiserror::Error)]
pub enum Unlocated {
    /// Nothing there, or no block device.
    #[error("{0}")]
    NotBlockDevice(String),
    /// A `by-label`/`by-uuid` link to a device that does not carry that name.
    #[error("{0}")]
    StaleLink(String),
}

impl Unlocated {
    pub fn rule(&self) -> &'static str {
        match self {
            Unlocated::NotBlockDevice(_) => "not_block_device",
            Unlocated::StaleLink(_) => "stale_link",
        }
    }
}

/// A setting `tune` wrote, and what to write back.
#[derive(Clone, Debug, PartialEq)]
pub struct Tuned {
    /// As a person reads it: "read_ahead_kb of loop3".
    pub setting: String,
    pub path: PathBuf,
    pub previous: String,
}

impl Tuned {
    /// As the journal writes it down.
    pub fn change(&self) -> Change {
        Change::Tuned { setting: self.setting.clone(), path: self.path.clone(), previous: self.previous.clone() }
    }
}

#[derive(Clone, Debug)]
pub struct Mounted {
    /// The scratch entry's name.
    pub scratch: String,
    pub mountpoint: PathBuf,
    /// Kernel names of the block devices under it (every member of a
    /// volume), for I/O counters; empty for a ramdisk.
    pub devices: Vec<String>,
    /// Whether this session mounted it (a directory scratch is only used).
    pub mounted_by_us: bool,
    /// A directory this session created inside a directory scratch, removed on release.
    pub created_dir: bool,
    /// Loop devices this session attached for image scratches, detached on release.
    pub loop_devices: Vec<PathBuf>,
}

impl HostState {
    pub fn new(view: SysView) -> Self {
        HostState {
            view,
            work_dir: PathBuf::new(),
            scratch: Vec::new(),
            located: Default::default(),
            mounted: Vec::new(),
            exports: Vec::new(),
            ledger: Ledger::for_this_user(),
            tuned: Vec::new(),
            journal: Journal::default(),
            kmsg: Err("not opened yet".into()),
            armed: None,
        }
    }

    /// Work under `work_dir` (mount points, the journal); what a killed
    /// agent left there is undone, and said (`journal::recover`).
    pub fn set_work_dir(&mut self, work_dir: PathBuf) -> Vec<String> {
        self.work_dir = work_dir;
        if !self.journal.is_in(&self.work_dir) {
            self.journal = Journal::in_dir(&self.work_dir);
        }
        crate::journal::recover(&self.work_dir, &self.view)
    }

    /// What the kernel logged since the last call (or the session's
    /// start) that concerns this session's `devices` (see `kmsg`).
    pub fn kernel_log(&mut self, devices: &[String]) -> Result<benchrig_wire::kernel_log::KernelLog, String> {
        let view = self.view.clone();
        match &mut self.kmsg {
            Ok(r) => Ok(crate::kmsg::collect(r, devices, &view)),
            Err(e) => Err(e.clone()),
        }
    }

    /// Write back every tuned setting's previous value, newest first (a
    /// setting tuned twice ends at its value before the first). What cannot
    /// be written back stays listed for the next release.
    pub fn restore_tuning(&mut self) -> Result<Vec<String>, String> {
        self.restore_tuning_since(0)
    }

    /// [`Self::restore_tuning`] of the settings from index `first` on (a
    /// `tune` step undoing its own writes when one fails).
    pub fn restore_tuning_since(&mut self, first: usize) -> Result<Vec<String>, String> {
        let (mut restored, mut errors, mut keep) = (Vec::new(), Vec::new(), Vec::new());
        while self.tuned.len() > first {
            let Some(t) = self.tuned.pop() else { break };
            match std::fs::write(&t.path, &t.previous) {
                Ok(()) => {
                    self.journal.undone(&t.change());
                    restored.push(format!("{} = {}", t.setting, t.previous))
                }
                Err(e) => {
                    errors.push(format!("cannot restore {} ({}) to {}: {e}", t.setting, t.path.display(), t.previous));
                    keep.push(t);
                }
            }
        }
        keep.reverse();
        self.tuned.extend(keep);
        if errors.is_empty() {
            Ok(restored)
        } else {
            Err(errors.join("; "))
        }
    }

    /// Mount points of the filesystems this session made on block devices
    /// (not a directory scratch it only uses, a ramdisk or a network
    /// mount): the ones a cold step checkpoints by freezing them.
    pub fn own_filesystems(&self) -> Vec<PathBuf> {
        self.mounted.iter().filter(|m| m.mounted_by_us && !m.devices.is_empty()).map(|m| m.mountpoint.clone()).collect()
    }

    /// Where a workload works: the named scratch's mount, or the latest one.
    pub fn target(&self, name: Option<&str>) -> Result<&Mounted, AgentError> {
        let found = match name {
            Some(n) => self.mounted.iter().rev().find(|m| m.scratch == n),
            None => self.mounted.last(),
        };
        found.ok_or_else(|| {
            AgentError::failed(match name {
                Some(n) => {
                    format!("scratch `{n}` is not set up in this cell (run a `filesystem` step on it first)")
                }
                None => "no filesystem is set up in this cell: add a `filesystem` setup step".to_string(),
            })
        })
    }

    /// Run `mount` (its `argv`) onto `mountpoint`, journaled first.
    pub fn mount<S: AsRef<str>>(&self, argv: &[S], mountpoint: &Path) -> Result<cmd::Output, String> {
        self.journal.record(&Change::Mounted { mountpoint: mountpoint.to_path_buf() })?;
        cmd::run(argv)
    }

    /// Journal a loop device about to be attached over `image`.
    pub fn attaching_loop(&self, image: &Path) -> Result<(), String> {
        self.journal.record(&Change::LoopAttached { image: image.to_path_buf() })
    }

    pub fn mountpoint_for(&self, scratch: &str) -> PathBuf {
        self.work_dir.join("mnt").join(scratch)
    }

    /// Undo what was set up for one scratch (or all), newest first. What
    /// cannot be undone stays listed, so shutdown tries it again; the error
    /// says what failed.
    ///
    /// Releasing everything restores tuned settings first, while the
    /// devices whose queues were tuned are still attached (a loop device
    /// this session attached goes with its mount).
    pub fn release(&mut self, name: Option<&str>) -> Result<Vec<String>, String> {
        let mut released = Vec::new();
        let mut errors = Vec::new();
        let mut keep = Vec::new();
        if name.is_none() {
            match self.restore_tuning() {
                Ok(r) => released.extend(r.into_iter().map(|r| format!("restored {r}"))),
                Err(e) => errors.push(e),
            }
        }
        while let Some(mut m) = self.mounted.pop() {
            if name.is_some_and(|n| n != m.scratch) {
                keep.push(m);
                continue;
            }
            // An exported filesystem is busy for the kernel: unexport first.
            if let Err(e) = self.unexport(&m.scratch) {
                errors.push(e);
                keep.push(m);
                continue;
            }
            match release_one(&mut m, &self.journal, &self.view) {
                Ok(()) => released.push(format!("{} ({})", m.scratch, m.mountpoint.display())),
                Err(e) => {
                    errors.push(e);
                    keep.push(m);
                }
            }
        }
        keep.reverse();
        self.mounted = keep;
        if errors.is_empty() {
            Ok(released)
        } else {
            Err(errors.join("; "))
        }
    }

    /// Undo the exports living on mount `target`.
    fn unexport(&mut self, target: &str) -> Result<(), String> {
        while let Some(i) = self.exports.iter().rposition(|e| e.target == target) {
            let others_left = self.exports.iter().any(|e| e.target != target);
            exports::remove(&self.exports[i], others_left)?;
            self.exports.remove(i);
        }
        Ok(())
    }
}

/// Each part on its own, marking what is done (here and in the journal),
/// so a retry does only the rest.
fn release_one(m: &mut Mounted, journal: &Journal, view: &SysView) -> Result<(), String> {
    let mut errors = Vec::new();
    if m.mounted_by_us {
        let r = unmount(&m.mountpoint);
        if !matches!(r, Err(Unmount::Busy(_))) {
            // Unmounted, or detached lazily: either way no longer in the tree.
            m.mounted_by_us = false;
            journal.undone(&Change::Mounted { mountpoint: m.mountpoint.clone() });
            let _ = std::fs::remove_dir(&m.mountpoint);
        }
        if let Err(e) = r {
            errors.push(e.to_string());
        }
    }
    if m.created_dir {
        match std::fs::remove_dir_all(&m.mountpoint) {
            Ok(()) => m.created_dir = false,
            Err(e) => errors.push(format!("cannot remove {}: {e}", m.mountpoint.display())),
        }
    }
    if !m.mounted_by_us {
        let mut still = Vec::new();
        for dev in m.loop_devices.drain(..) {
            let image = dev.file_name().and_then(|n| view.loop_backing_file(&n.to_string_lossy()));
            match detach_loop(&dev) {
                Ok(()) => {
                    if let Some(image) = image {
                        journal.undone(&Change::LoopAttached { image });
                    }
                }
                Err(e) => {
                    errors.push(e);
                    still.push(dev);
                }
            }
        }
        m.loop_devices = still;
    }
    if errors.is_empty() {
        Ok(())
    } else {
        Err(errors.join("; "))
    }
}
