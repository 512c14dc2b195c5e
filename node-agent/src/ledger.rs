//! The host's record of the filesystems benchrig made on it: for each
//! device, by its stable identity, the UUID of the last filesystem an agent
//! made there. The `signature` safety rule lets a format over a filesystem
//! through without `wipe` only when the device still carries exactly that
//! UUID: a filesystem re-made by hand since has another one, a copy of an
//! image made on another host (or on another device here) has no record
//! under this device's identity, and a label proves nothing.
//!
//! One JSON file per host (`/var/lib/benchrig/formatted.json` as root), one
//! entry per device. Entries of loop devices whose backing file is gone are
//! dropped, and at most [`KEEP`] are kept (the newest), so it does not grow
//! with every throw-away image. Agents of concurrent runs update it under a
//! lock file, by write-and-rename, so a reader never sees half a file.
//!
//! Whoever can write the ledger can vouch for any device, so it is trusted
//! only while it, its lock and every directory above it are root's or the
//! agent user's and writable by no group or other (`Ledger::check_dir`):
//! a sudo login cannot forge root's entries. Its files are opened without
//! following links and its new text is written to a file made O_EXCL.

use rustix::fs::{Mode, OFlags};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::fs::{self, File};
use std::io::{self, Read, Write};
use std::os::unix::fs::{DirBuilderExt, MetadataExt};
use std::path::{Path, PathBuf};

/// A filesystem benchrig made.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Made {
    /// As the signature table names it (`ext2/ext3/ext4`, `xfs`, `btrfs`).
    pub fstype: String,
    pub uuid: String,
    /// Seconds since the epoch.
    pub made_at: u64,
    /// The device path mkfs was given, for messages.
    pub path: String,
    /// Set while a mkfs benchrig announced has not been confirmed: the
    /// benchrig filesystem the device carried before it (if any), which
    /// it still carries if that mkfs never ran.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub previous: Option<String>,
}

impl Made {
    /// The UUIDs a device may carry and still be benchrig's.
    pub fn uuids(&self) -> impl Iterator<Item = &str> {
        std::iter::once(self.uuid.as_str()).chain(self.previous.as_deref())
    }
}

/// The most entries a ledger keeps: far more devices than one host has.
pub const KEEP: usize = 1024;

#[derive(Default, Serialize, Deserialize)]
struct File1 {
    version: u32,
    /// Stable device identity → the last filesystem made on it.
    devices: BTreeMap<String, Made>,
}

/// Why the ledger cannot vouch for anything.
#[derive(Debug, thiserror::Error)]
pub enum LedgerError {
    /// It, or a directory it is in, is not the agent user's (or root's)
    /// alone: whoever else could write it could forge an entry.
    #[error("the format ledger {path} is not trusted: {why}")]
    Untrusted { path: PathBuf, why: String },
    #[error("the format ledger {path} is damaged: {why}")]
    Damaged { path: PathBuf, why: String },
    #[error("the format ledger {path}: {source}")]
    Io { path: PathBuf, source: io::Error },
}

#[derive(Clone, Debug)]
pub struct Ledger {
    path: PathBuf,
}

impl Ledger {
    /// The agent's user's ledger: system-wide as root, in the user's state
    /// directory otherwise (so a non-root agent never trusts a root one's record).
    pub fn for_this_user() -> Ledger {
        if rustix::process::geteuid().is_root() {
            return Ledger::at(Path::new("/var/lib/benchrig/formatted.json"));
        }
        let state = std::env::var_os("XDG_STATE_HOME")
            .map(PathBuf::from)
            .or_else(|| std::env::var_os("HOME").map(|h| Path::new(&h).join(".local/state")))
            .unwrap_or_else(|| PathBuf::from("/tmp"));
        Ledger::at(&state.join("benchrig/formatted.json"))
    }

    pub fn at(path: &Path) -> Ledger {
        Ledger { path: path.to_path_buf() }
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    fn dir(&self) -> &Path {
        self.path.parent().unwrap_or(Path::new("."))
    }

    fn untrusted(&self, why: String) -> LedgerError {
        LedgerError::Untrusted { path: self.path.clone(), why }
    }

    fn io(&self, source: io::Error) -> LedgerError {
        LedgerError::Io { path: self.path.clone(), source }
    }

    /// What benchrig last made on the device with this identity; an error
    /// when the ledger cannot be trusted or read (the rule then refuses,
    /// never accepts, and says why).
    pub fn lookup(&self, identity: &str) -> Result<Option<Made>, LedgerError> {
        self.check_dir()?;
        Ok(self.read()?.devices.remove(identity))
    }

    /// Record the filesystem just made on a device, replacing its last one.
    /// The dir is made 0700; the lock and the ledger are opened without
    /// following a link, the new text goes to a file made O_EXCL and is
    /// renamed over the old, so a reader never sees half a file.
    pub fn record(&self, identity: &str, made: Made) -> Result<(), LedgerError> {
        fs::DirBuilder::new().recursive(true).mode(0o700).create(self.dir()).map_err(|e| self.io(e))?;
        self.check_dir()?;
        let lock = open_private(&self.dir().join("formatted.lock"), OFlags::CREATE).map_err(|e| self.io(e))?;
        self.check_file(&lock, "formatted.lock")?;
        rustix::fs::flock(&lock, rustix::fs::FlockOperation::LockExclusive).map_err(|e| self.io(e.into()))?;
        // A damaged ledger vouches for nothing: start it afresh.
        let mut file = match self.read() {
            Err(LedgerError::Damaged { .. }) => File1::default(),
            other => other?,
        };
        file.version = 1;
        file.devices.insert(identity.to_string(), made);
        file.devices.retain(|id, _| !is_gone_loop(id));
        while file.devices.len() > KEEP {
            let oldest = file.devices.iter().min_by_key(|(_, m)| m.made_at).map(|(id, _)| id.clone());
            file.devices.remove(&oldest.expect("not empty"));
        }
        let tmp = self.path.with_extension(format!("tmp.{}", std::process::id()));
        let _ = fs::remove_file(&tmp); // one a killed agent of this pid left; never a link's target
        let mut out = open_private(&tmp, OFlags::CREATE | OFlags::EXCL).map_err(|e| self.io(e))?;
        let text = serde_json::to_vec_pretty(&file).map_err(|e| self.io(io::Error::other(e)))?;
        out.write_all(&text).and_then(|()| out.sync_all()).map_err(|e| self.io(e))?;
        fs::rename(&tmp, &self.path).map_err(|e| self.io(e))
        // The lock goes with `lock`.
    }

    fn read(&self) -> Result<File1, LedgerError> {
        let mut f = match open_private(&self.path, OFlags::empty()) {
            Ok(f) => f,
            Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(File1::default()),
            Err(e) if e.raw_os_error() == Some(libc::ELOOP) => {
                return Err(self.untrusted("it is a symlink".into()));
            }
            Err(e) => return Err(self.io(e)),
        };
        self.check_file(&f, "it")?;
        let mut bytes = Vec::new();
        f.read_to_end(&mut bytes).map_err(|e| self.io(e))?;
        serde_json::from_slice(&bytes).map_err(|e| LedgerError::Damaged { path: self.path.clone(), why: e.to_string() })
    }

    /// The ledger's dir and every dir above it: only root or the agent's
    /// user may write them (a sticky dir, as /tmp, only where it is not
    /// the ledger's own). Checked on the dir's real path, so a link on the
    /// way is judged by where it leads.
    fn check_dir(&self) -> Result<(), LedgerError> {
        let dir = match fs::canonicalize(self.dir()) {
            Ok(d) => d,
            // No dir, no ledger: nothing to trust or distrust yet.
            Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(()),
            Err(e) => return Err(self.io(e)),
        };
        for (i, d) in dir.ancestors().enumerate() {
            let m = fs::symlink_metadata(d).map_err(|e| self.io(e))?;
            if let Some(why) = not_private(m.uid(), m.mode(), i > 0) {
                return Err(self.untrusted(format!("{} {why}", d.display())));
            }
        }
        Ok(())
    }

    fn check_file(&self, f: &File, what: &str) -> Result<(), LedgerError> {
        let m = f.metadata().map_err(|e| self.io(e))?;
        match not_private(m.uid(), m.mode(), false) {
            Some(why) => Err(self.untrusted(format!("{what} {why}"))),
            None => Ok(()),
        }
    }
}

/// Open a ledger file read-write (created 0600 with `CREATE`), never
/// through a symlink.
pub(crate) fn open_private(path: &Path, how: OFlags) -> io::Result<File> {
    let access = if how.is_empty() { OFlags::RDONLY } else { OFlags::RDWR };
    let fd = rustix::fs::open(path, access | how | OFlags::NOFOLLOW | OFlags::CLOEXEC, Mode::from_raw_mode(0o600))?;
    Ok(File::from(fd))
}

/// Why a file or dir of this `uid` and `mode` may be written by someone
/// other than root and the agent's user; `sticky_ok`: a sticky dir's
/// write bits let others make their own entries there, not replace ours.
/// (Also what `scratch` asks of an image and its marker.)
pub(crate) fn not_private(uid: u32, mode: u32, sticky_ok: bool) -> Option<String> {
    let me = rustix::process::geteuid().as_raw();
    if uid != 0 && uid != me {
        return Some(format!("is owned by uid {uid}, neither root nor the agent's user (uid {me})"));
    }
    if mode & 0o022 != 0 && !(sticky_ok && mode & 0o1000 != 0) {
        return Some(format!("is writable by group or others (mode {:o})", mode & 0o7777));
    }
    None
}

/// A loop identity (`loop:<file>@<dev>:<ino>`, or a partition of one,
/// `…#part<n>`: see `SysView::stable_identity`) whose file no longer exists
/// as that inode.
fn is_gone_loop(identity: &str) -> bool {
    let disk = identity.split_once("#part").map_or(identity, |(disk, _)| disk);
    let Some((file, inode)) = disk.strip_prefix("loop:").and_then(|r| r.rsplit_once('@')) else {
        return false;
    };
    fs::metadata(file).map_or(true, |m| format!("{}:{}", m.dev(), m.ino()) != inode)
}

/// A fresh random UUID, from the kernel.
pub fn new_uuid() -> Option<String> {
    fs::read_to_string("/proc/sys/kernel/random/uuid").ok().map(|u| u.trim().to_string()).filter(|u| u.len() == 36)
}

pub fn now() -> u64 {
    std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map(|d| d.as_secs()).unwrap_or(0)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn made(uuid: &str) -> Made {
        Made { fstype: "xfs".into(), uuid: uuid.into(), made_at: 1, path: "/dev/sdb".into(), previous: None }
    }

    #[test]
    fn a_record_replaces_the_devices_last_one_and_keeps_the_others() {
        let dir = tempfile::tempdir().unwrap();
        let l = Ledger::at(&dir.path().join("sub/formatted.json"));
        assert_eq!(l.lookup("wwn:1").unwrap(), None);
        l.record("wwn:1", made("a")).unwrap();
        l.record("wwn:2", made("b")).unwrap();
        l.record("wwn:1", made("c")).unwrap();
        assert_eq!(l.lookup("wwn:1").unwrap(), Some(made("c")));
        assert_eq!(l.lookup("wwn:2").unwrap(), Some(made("b")));
        // Another agent's view of the same file.
        assert_eq!(Ledger::at(l.path()).lookup("wwn:2").unwrap(), Some(made("b")));
        let mode = |p: &Path| fs::symlink_metadata(p).unwrap().mode() & 0o777;
        assert_eq!((mode(&dir.path().join("sub")), mode(l.path())), (0o700, 0o600));
    }

    #[test]
    fn entries_of_images_that_are_gone_are_dropped_and_the_newest_kept() {
        use std::os::unix::fs::MetadataExt;
        let dir = tempfile::tempdir().unwrap();
        let l = Ledger::at(&dir.path().join("formatted.json"));
        let img = dir.path().join("a.img");
        fs::write(&img, "").unwrap();
        let m = fs::metadata(&img).unwrap();
        let live = format!("loop:{}@{}:{}", img.display(), m.dev(), m.ino());
        let gone = format!("loop:{}@{}:{}", dir.path().join("b.img").display(), m.dev(), m.ino());
        l.record(&live, made("a")).unwrap();
        l.record(&gone, made("b")).unwrap();
        assert!(l.lookup(&live).unwrap().is_some());
        assert_eq!(l.lookup(&gone).unwrap(), None);
        // A partition of a live image's disk is live (it was dropped as
        // soon as recorded: its inode compared with the `#part` suffix).
        let (part, gone_part) = (format!("{live}#part2"), format!("{gone}#part2"));
        l.record(&part, made("p")).unwrap();
        l.record(&gone_part, made("q")).unwrap();
        assert_eq!(l.lookup(&part).unwrap().map(|m| m.uuid), Some("p".to_string()));
        assert_eq!(l.lookup(&gone_part).unwrap(), None);
        // A full ledger (written whole: a record each is a thousand fsyncs).
        let mut full = l.read().unwrap();
        for i in 0..KEEP as u64 + 4 {
            full.devices.insert(format!("wwn:{i}"), Made { made_at: i + 2, ..made("x") });
        }
        fs::write(l.path(), serde_json::to_vec(&full).unwrap()).unwrap();
        l.record(&format!("wwn:{}", KEEP + 4), Made { made_at: KEEP as u64 + 6, ..made("x") }).unwrap();
        assert_eq!(l.read().unwrap().devices.len(), KEEP);
        assert_eq!(l.lookup("wwn:0").unwrap(), None, "the oldest went first");
        assert!(l.lookup(&format!("wwn:{}", KEEP + 4)).unwrap().is_some());
    }

    #[test]
    fn a_damaged_ledger_vouches_for_nothing() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("formatted.json");
        fs::write(&p, "{not json").unwrap();
        let e = Ledger::at(&p).lookup("wwn:1").unwrap_err();
        assert!(matches!(e, LedgerError::Damaged { .. }), "{e}");
        // ... and the next record starts it afresh.
        Ledger::at(&p).record("wwn:1", made("a")).unwrap();
        assert_eq!(Ledger::at(&p).lookup("wwn:1").unwrap(), Some(made("a")));
    }

    #[test]
    fn concurrent_agents_lose_no_record() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("formatted.json");
        let threads: Vec<_> = (0..8)
            .map(|i| {
                let p = p.clone();
                std::thread::spawn(move || Ledger::at(&p).record(&format!("dev{i}"), made("u")).unwrap())
            })
            .collect();
        threads.into_iter().for_each(|t| t.join().unwrap());
        for i in 0..8 {
            assert!(Ledger::at(&p).lookup(&format!("dev{i}")).unwrap().is_some(), "dev{i} lost");
        }
    }

    /// Whoever else can write the ledger could vouch for any device: a
    /// ledger in a dir others may write, owned by another user, writable
    /// by others or reached through a symlink is refused, saying why, and
    /// a planted symlink at its lock or its temporary file is never
    /// written through.
    #[test]
    fn a_ledger_others_could_write_vouches_for_nothing_and_no_link_is_followed() {
        use std::os::unix::fs::PermissionsExt;
        let untrusted = |l: &Ledger| match l.lookup("wwn:1") {
            Err(LedgerError::Untrusted { why, .. }) => why,
            other => panic!("{other:?}"),
        };
        let dir = tempfile::tempdir().unwrap();
        let d = dir.path().join("benchrig");
        let l = Ledger::at(&d.join("formatted.json"));
        l.record("wwn:1", made("a")).unwrap();
        fs::set_permissions(&d, fs::Permissions::from_mode(0o777)).unwrap();
        assert!(untrusted(&l).contains("is writable by group or others (mode 777)"));
        assert!(matches!(l.record("wwn:1", made("forged")), Err(LedgerError::Untrusted { .. })));
        fs::set_permissions(&d, fs::Permissions::from_mode(0o700)).unwrap();
        fs::set_permissions(l.path(), fs::Permissions::from_mode(0o666)).unwrap();
        assert!(untrusted(&l).starts_with("it is writable by group or others"));
        fs::set_permissions(l.path(), fs::Permissions::from_mode(0o600)).unwrap();
        if rustix::process::geteuid().is_root() {
            std::os::unix::fs::chown(l.path(), Some(4242), None).unwrap();
            assert!(untrusted(&l).contains("is owned by uid 4242"), "{}", untrusted(&l));
            std::os::unix::fs::chown(l.path(), Some(0), None).unwrap();
            std::os::unix::fs::chown(&d, Some(4242), None).unwrap();
            assert!(untrusted(&l).contains("is owned by uid 4242"));
            std::os::unix::fs::chown(&d, Some(0), None).unwrap();
        }
        assert_eq!(l.lookup("wwn:1").unwrap(), Some(made("a")));

        // The ledger as a symlink to a file that vouches: refused.
        let forged = dir.path().join("forged.json");
        fs::copy(l.path(), &forged).unwrap();
        fs::remove_file(l.path()).unwrap();
        std::os::unix::fs::symlink(&forged, l.path()).unwrap();
        assert_eq!(untrusted(&l), "it is a symlink");
        fs::remove_file(l.path()).unwrap();
        // A link at the lock or at the temporary name: nothing written through it.
        let victim = dir.path().join("victim");
        fs::write(&victim, "keep").unwrap();
        fs::remove_file(d.join("formatted.lock")).unwrap();
        std::os::unix::fs::symlink(&victim, d.join("formatted.lock")).unwrap();
        assert!(l.record("wwn:2", made("b")).is_err());
        fs::remove_file(d.join("formatted.lock")).unwrap();
        let tmp = l.path().with_extension(format!("tmp.{}", std::process::id()));
        std::os::unix::fs::symlink(&victim, &tmp).unwrap();
        l.record("wwn:2", made("b")).unwrap();
        assert_eq!(fs::read_to_string(&victim).unwrap(), "keep");
        assert_eq!(l.lookup("wwn:2").unwrap(), Some(made("b")));
    }
}
