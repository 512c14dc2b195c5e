//! What this agent session has set up on the host, so it can always be undone:
//! mounts it made and loop devices it attached. Released by `unmount`, and by
//! the session on shutdown or when the orchestrator disappears.

use crate::cmd;
use crate::sysfs::SysView;
use benchrig_wire::messages::{AgentError, ErrorCode};
use benchrig_wire::scratch::ScratchDevice;
use std::path::{Path, PathBuf};
use std::time::Duration;

pub struct HostState {
    pub view: SysView,
    pub work_dir: PathBuf,
    pub scratch: Vec<ScratchDevice>,
    /// Oldest first; the last one is the default target of a workload.
    pub mounted: Vec<Mounted>,
}

#[derive(Clone, Debug)]
pub struct Mounted {
    /// The scratch entry's name.
    pub scratch: String,
    pub mountpoint: PathBuf,
    /// Kernel name of the block device, for I/O counters.
    pub device: Option<String>,
    /// Whether this session mounted it (a directory scratch is only used).
    pub mounted_by_us: bool,
    /// A directory this session created inside a directory scratch, removed on release.
    pub created_dir: bool,
    /// A loop device this session attached for an image scratch.
    pub loop_device: Option<PathBuf>,
}

impl HostState {
    pub fn new(view: SysView) -> Self {
        HostState { view, work_dir: PathBuf::new(), scratch: Vec::new(), mounted: Vec::new() }
    }

    /// The inventory entry for a scratch name: the only way to a device.
    pub fn scratch(&self, name: &str) -> Result<ScratchDevice, AgentError> {
        self.scratch.iter().find(|s| s.name == name).cloned().ok_or_else(|| {
            let known: Vec<&str> = self.scratch.iter().map(|s| s.name.as_str()).collect();
            AgentError {
                code: ErrorCode::Refused,
                rule: Some("not_listed".into()),
                message: format!(
                    "`{name}` is not in this host's scratch_devices (listed: {})",
                    if known.is_empty() { "none".to_string() } else { known.join(", ") }
                ),
            }
        })
    }

    /// Where a workload works: the named scratch's mount, or the latest one.
    pub fn target(&self, name: Option<&str>) -> Result<&Mounted, AgentError> {
        let found = match name {
            Some(n) => self.mounted.iter().rev().find(|m| m.scratch == n),
            None => self.mounted.last(),
        };
        found.ok_or_else(|| {
            AgentError::new(
                ErrorCode::Failed,
                match name {
                    Some(n) => {
                        format!("scratch `{n}` is not set up in this cell (run a `filesystem` step on it first)")
                    }
                    None => "no filesystem is set up in this cell: add a `filesystem` setup step".to_string(),
                },
            )
        })
    }

    pub fn mountpoint_for(&self, scratch: &str) -> PathBuf {
        self.work_dir.join("mnt").join(scratch)
    }

    /// Undo what was set up for one scratch (or all), newest first.
    /// Returns what was released; the first error after trying everything.
    pub fn release(&mut self, name: Option<&str>) -> Result<Vec<String>, String> {
        let mut released = Vec::new();
        let mut first_err = None;
        let mut keep = Vec::new();
        while let Some(m) = self.mounted.pop() {
            if name.is_some_and(|n| n != m.scratch) {
                keep.push(m);
                continue;
            }
            match release_one(&m) {
                Ok(()) => released.push(format!("{} ({})", m.scratch, m.mountpoint.display())),
                Err(e) => {
                    first_err.get_or_insert(e);
                }
            }
        }
        keep.reverse();
        self.mounted = keep;
        match first_err {
            Some(e) => Err(e),
            None => Ok(released),
        }
    }
}

fn release_one(m: &Mounted) -> Result<(), String> {
    if m.mounted_by_us {
        unmount(&m.mountpoint)?;
        let _ = std::fs::remove_dir(&m.mountpoint);
    }
    if m.created_dir {
        std::fs::remove_dir_all(&m.mountpoint).map_err(|e| format!("cannot remove {}: {e}", m.mountpoint.display()))?;
    }
    if let Some(dev) = &m.loop_device {
        detach_loop(dev)?;
    }
    Ok(())
}

/// Unmount, waiting a little for a filesystem that is briefly busy
/// (a child that has not quite exited); lazily as a last resort so teardown
/// never leaves a mount behind.
pub fn unmount(mountpoint: &Path) -> Result<(), String> {
    use rustix::mount::{unmount, UnmountFlags};
    let mut last = None;
    for _ in 0..20 {
        match unmount(mountpoint, UnmountFlags::empty()) {
            Ok(()) => return Ok(()),
            Err(rustix::io::Errno::INVAL) | Err(rustix::io::Errno::NOENT) => return Ok(()), // not mounted
            Err(rustix::io::Errno::BUSY) => {
                last = Some(rustix::io::Errno::BUSY);
                std::thread::sleep(Duration::from_millis(100));
            }
            Err(e) => return Err(format!("cannot unmount {}: {e}", mountpoint.display())),
        }
    }
    unmount(mountpoint, UnmountFlags::DETACH)
        .map_err(|e| format!("cannot unmount {} ({:?}, then {e})", mountpoint.display(), last))
}

pub fn detach_loop(dev: &Path) -> Result<(), String> {
    cmd::run_ok(&["losetup", "-d", &dev.to_string_lossy()]).map(|_| ())
}
