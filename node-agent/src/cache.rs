//! Making the next read cold: `sync` first (drop_caches frees only clean
//! pages), then, as root, freeze and thaw this session's own filesystems
//! (see `checkpoint`) and drop the page cache, and evict the file's own pages
//! with `posix_fadvise(DONTNEED)` (the only way without root). Then check:
//! the pages of the file still in memory are counted (mincore), eviction is
//! retried while any remain, and the count is recorded with the sample.
//! Test: `tree_workloads.rs::a_cold_acl_check_of_a_tree_just_written_reads_inodes_and_acls_from_the_disk`.

use std::fs::File;
use std::path::{Path, PathBuf};

pub struct Cold {
    pub method: &'static str,
    /// Pages of the file still cached when the read starts (0 when cold).
    pub resident_pages: Option<u64>,
}

/// `filesystems`: mount points of the filesystems this session mounted;
/// each is checkpointed before the drop.
pub fn make_cold(file: Option<&Path>, filesystems: &[PathBuf]) -> Result<Cold, String> {
    rustix::fs::sync();
    let root = rustix::process::geteuid().is_root();
    if root {
        filesystems.iter().for_each(|m| checkpoint(m));
    }
    let dropped = root && drop_caches().is_ok();
    let method = if dropped { "drop_caches" } else { "fadvise_dontneed" };
    let Some(file) = file else {
        return if dropped {
            Ok(Cold { method, resident_pages: None })
        } else {
            Err("cannot drop caches (not root) and no file was given to evict".into())
        };
    };
    // A page busy during drop_caches (under writeback, locked) survives it.
    let mut resident = 0;
    for _ in 0..5 {
        evict(file)?;
        resident = resident_pages(file).map_err(|e| format!("mincore {}: {e}", file.display()))?;
        if resident == 0 {
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    Ok(Cold { method, resident_pages: Some(resident) })
}

/// A journaled filesystem keeps the metadata it wrote pinned in memory
/// until its journal is checkpointed (ext3/4's jbd2, XFS's AIL), and
/// drop_caches frees no pinned buffer: measured on ext4, a tree written
/// and synced was still fully cached after a drop (a "cold" ACL check of
/// it read 0 blocks). Freezing a filesystem checkpoints it (ext4 flushes
/// its journal, XFS pushes its AIL, btrfs commits); thawing it at once
/// leaves only clean, unpinned buffers, which the drop then frees.
/// Best effort: a filesystem without freeze support (tmpfs, FUSE) or one
/// frozen by someone else is left as it is, and the drop still runs.
/// Only a mount's own root is frozen, never the root filesystem: if the
/// mount went away behind the agent, the path leads into the filesystem
/// below it, which is not ours ([`own_mount_root`]).
fn checkpoint(mountpoint: &Path) {
    let Some(fd) = open_mount_root(mountpoint) else { return };
    // Written out first, so the frozen window is only the journal's flush.
    let _ = rustix::fs::syncfs(&fd);
    // SAFETY: FIFREEZE takes an int the kernel ignores; the fd is the
    // root of the filesystem to freeze, as the ioctl wants.
    if unsafe { rustix::ioctl::ioctl(&fd, rustix::ioctl::Setter::<FIFREEZE, libc::c_int>::new(0)) }.is_ok() {
        thaw_fd(&fd);
    }
}

// <linux/fs.h>: FIFREEZE _IOWR('X', 119, int), FITHAW _IOWR('X', 120, int).
const FIFREEZE: rustix::ioctl::Opcode = rustix::ioctl::opcode::read_write::<libc::c_int>(b'X', 119);
const FITHAW: rustix::ioctl::Opcode = rustix::ioctl::opcode::read_write::<libc::c_int>(b'X', 120);

fn thaw_fd(fd: &std::os::fd::OwnedFd) -> bool {
    // SAFETY: as FIFREEZE above; EINVAL when the filesystem is not frozen.
    unsafe { rustix::ioctl::ioctl(fd, rustix::ioctl::Setter::<FITHAW, libc::c_int>::new(0)) }.is_ok()
}

/// Thaw the filesystem at `mountpoint` if a cold step of an agent that
/// died between its freeze and its thaw left it frozen (its writers would
/// hang, and so would its unmount): release calls this before unmounting.
/// Not frozen (the usual case), not a mount root, or gone: nothing happens.
pub fn thaw(mountpoint: &Path) -> bool {
    open_mount_root(mountpoint).is_some_and(|fd| thaw_fd(&fd))
}

/// `mountpoint` opened, if it is the root of a mount of its own ([`own_mount_root`]).
fn open_mount_root(mountpoint: &Path) -> Option<std::os::fd::OwnedFd> {
    use rustix::fs::{Mode, OFlags};
    let fd = rustix::fs::open(mountpoint, OFlags::RDONLY | OFlags::DIRECTORY | OFlags::CLOEXEC, Mode::empty()).ok()?;
    own_mount_root(&fd, mountpoint).then_some(fd)
}

/// Whether `fd` (opened from `path`) is the root of a mount other than
/// the root filesystem: its device differs from its parent directory's
/// and from `/`'s.
pub fn own_mount_root(fd: &std::os::fd::OwnedFd, path: &Path) -> bool {
    let dev = |p: &Path| rustix::fs::stat(p).ok().map(|s| s.st_dev);
    let Ok(me) = rustix::fs::fstat(fd) else { return false };
    let parent = path.parent().and_then(dev);
    parent.is_some_and(|p| p != me.st_dev) && dev(Path::new("/")).is_some_and(|r| r != me.st_dev)
}

pub fn drop_caches() -> std::io::Result<()> {
    std::fs::write("/proc/sys/vm/drop_caches", "3\n")
}

fn evict(path: &Path) -> Result<(), String> {
    let f = File::open(path).map_err(|e| format!("cannot open {}: {e}", path.display()))?;
    // Dirty pages cannot be dropped; write them first.
    rustix::fs::fdatasync(&f).map_err(|e| format!("fdatasync {}: {e}", path.display()))?;
    rustix::fs::fadvise(&f, 0, None, rustix::fs::Advice::DontNeed)
        .map_err(|e| format!("fadvise {}: {e}", path.display()))
}

/// How many of a file's pages are in the page cache, as fincore(1) counts
/// them: mincore over a read-only mapping. By hand with libc because rustix
/// has no mincore.
pub fn resident_pages(path: &Path) -> std::io::Result<u64> {
    use std::os::fd::AsRawFd;
    let f = File::open(path)?;
    let len = f.metadata()?.len() as usize;
    if len == 0 {
        return Ok(0);
    }
    let page = rustix::param::page_size();
    let mut vec = vec![0u8; len.div_ceil(page)];
    // SAFETY: a private read-only mapping of a file we hold open, used only
    // by mincore (which reads no page contents) and unmapped before return;
    // `vec` has one byte per page of the mapping, as mincore requires.
    unsafe {
        let addr = libc::mmap(std::ptr::null_mut(), len, libc::PROT_READ, libc::MAP_SHARED, f.as_raw_fd(), 0);
        if addr == libc::MAP_FAILED {
            return Err(std::io::Error::last_os_error());
        }
        let rc = libc::mincore(addr, len, vec.as_mut_ptr());
        let err = std::io::Error::last_os_error();
        libc::munmap(addr, len);
        if rc != 0 {
            return Err(err);
        }
    }
    Ok(vec.iter().filter(|b| *b & 1 == 1).count() as u64)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::{Read, Write};

    #[test]
    fn a_read_file_is_resident_and_eviction_makes_it_cold() {
        // On tmpfs pages cannot be evicted; use a real filesystem.
        let dir = tempfile::tempdir_in("/var/tmp").unwrap();
        let p = dir.path().join("f");
        let mut f = File::create(&p).unwrap();
        f.write_all(&vec![7u8; 1 << 20]).unwrap();
        f.sync_all().unwrap();
        let mut buf = Vec::new();
        File::open(&p).unwrap().read_to_end(&mut buf).unwrap();
        let pages = (1 << 20) / rustix::param::page_size() as u64;
        assert_eq!(resident_pages(&p).unwrap(), pages);
        evict(&p).unwrap();
        assert_eq!(resident_pages(&p).unwrap(), 0);
    }
}
