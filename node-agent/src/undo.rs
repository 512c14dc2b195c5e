//! Undoing what a session set up, one thing at a time: an unmount (a
//! frozen filesystem thawed first, a briefly busy one waited for, a lazy
//! detach as the last resort), a loop device detached, and whether a
//! device is still in use. Used by a session's release (`state`) and by
//! the replay of a dead session's journal (`journal`).

use crate::cmd;
use std::path::Path;
use std::time::Duration;

#[derive(Debug, thiserror::Error)]
pub enum Unmount {
    /// Still mounted.
    #[error("{0}")]
    Busy(String),
    /// Detached from the tree but alive until its last user goes: not clean.
    #[error("{0}")]
    Lazy(String),
}

/// Unmount, waiting a little for a filesystem that is briefly busy (a child
/// that has not quite exited). As a last resort detach it lazily, so no
/// mount stays in the tree, but report that: the filesystem lives on until
/// its last user goes, and the device stays claimed (the next mkfs's
/// exclusive-open check sees it).
pub fn unmount(mountpoint: &Path) -> Result<(), Unmount> {
    use rustix::mount::{unmount, UnmountFlags};
    // A cold step's freeze that was never thawed would hang the unmount.
    crate::cache::thaw(mountpoint);
    for _ in 0..20 {
        match unmount(mountpoint, UnmountFlags::empty()) {
            Ok(()) => return Ok(()),
            Err(rustix::io::Errno::INVAL) | Err(rustix::io::Errno::NOENT) => return Ok(()), // not mounted
            Err(rustix::io::Errno::BUSY) => std::thread::sleep(Duration::from_millis(100)),
            Err(e) => return Err(Unmount::Busy(format!("cannot unmount {}: {e}", mountpoint.display()))),
        }
    }
    match unmount(mountpoint, UnmountFlags::DETACH) {
        Ok(()) => Err(Unmount::Lazy(format!(
            "{} stayed busy for 2 s and was detached lazily; its filesystem lives until the last user exits",
            mountpoint.display()
        ))),
        Err(e) => Err(Unmount::Busy(format!("cannot unmount {}: busy, then {e}", mountpoint.display()))),
    }
}

pub fn detach_loop(dev: &Path) -> Result<(), String> {
    cmd::run_ok(&["losetup", "-d", &dev.to_string_lossy()]).map(|_| ())
}

/// Open a device exclusively and close it again: fails while anything claims it.
pub fn exclusive_open(path: &Path) -> Result<(), String> {
    use std::os::unix::fs::OpenOptionsExt;
    std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(rustix::fs::OFlags::EXCL.bits() as i32)
        .open(path)
        .map(drop)
        .map_err(|e| e.to_string())
}
