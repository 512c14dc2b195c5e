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

use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::fs::{self, File};
use std::io;
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

    /// What benchrig last made on the device with this identity. An
    /// unreadable ledger is an empty one: the rule then refuses, never accepts.
    pub fn lookup(&self, identity: &str) -> Option<Made> {
        self.read().ok()?.devices.remove(identity)
    }

    /// Record the filesystem just made on a device, replacing its last one.
    pub fn record(&self, identity: &str, made: Made) -> io::Result<()> {
        let dir = self.path.parent().unwrap_or(Path::new("."));
        fs::create_dir_all(dir)?;
        let lock = File::create(dir.join("formatted.lock"))?;
        rustix::fs::flock(&lock, rustix::fs::FlockOperation::LockExclusive)?;
        let mut file = self.read().unwrap_or_default();
        file.version = 1;
        file.devices.insert(identity.to_string(), made);
        file.devices.retain(|id, _| !is_gone_loop(id));
        while file.devices.len() > KEEP {
            let oldest = file.devices.iter().min_by_key(|(_, m)| m.made_at).map(|(id, _)| id.clone());
            file.devices.remove(&oldest.expect("not empty"));
        }
        let tmp = self.path.with_extension(format!("tmp.{}", std::process::id()));
        fs::write(&tmp, serde_json::to_vec_pretty(&file).map_err(io::Error::other)?)?;
        fs::rename(&tmp, &self.path)
        // The lock goes with `lock`.
    }

    fn read(&self) -> io::Result<File1> {
        match fs::read(&self.path) {
            Ok(bytes) => serde_json::from_slice(&bytes).map_err(io::Error::other),
            Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(File1::default()),
            Err(e) => Err(e),
        }
    }
}

/// A loop identity (`loop:<file>@<dev>:<ino>`, or a partition of one,
/// `…#part<n>`: see `SysView::stable_identity`) whose file no longer exists
/// as that inode.
fn is_gone_loop(identity: &str) -> bool {
    use std::os::unix::fs::MetadataExt;
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
        assert_eq!(l.lookup("wwn:1"), None);
        l.record("wwn:1", made("a")).unwrap();
        l.record("wwn:2", made("b")).unwrap();
        l.record("wwn:1", made("c")).unwrap();
        assert_eq!(l.lookup("wwn:1"), Some(made("c")));
        assert_eq!(l.lookup("wwn:2"), Some(made("b")));
        // Another agent's view of the same file.
        assert_eq!(Ledger::at(l.path()).lookup("wwn:2"), Some(made("b")));
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
        assert!(l.lookup(&live).is_some());
        assert_eq!(l.lookup(&gone), None);
        // A partition of a live image's disk is live (it was dropped as
        // soon as recorded: its inode compared with the `#part` suffix).
        let (part, gone_part) = (format!("{live}#part2"), format!("{gone}#part2"));
        l.record(&part, made("p")).unwrap();
        l.record(&gone_part, made("q")).unwrap();
        assert_eq!(l.lookup(&part).map(|m| m.uuid), Some("p".to_string()));
        assert_eq!(l.lookup(&gone_part), None);
        for i in 0..KEEP as u64 + 5 {
            l.record(&format!("wwn:{i}"), Made { made_at: i + 2, ..made("x") }).unwrap();
        }
        assert_eq!(l.read().unwrap().devices.len(), KEEP);
        assert_eq!(l.lookup("wwn:0"), None, "the oldest went first");
        assert!(l.lookup(&format!("wwn:{}", KEEP + 4)).is_some());
    }

    #[test]
    fn a_damaged_ledger_vouches_for_nothing() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("formatted.json");
        fs::write(&p, "{not json").unwrap();
        assert_eq!(Ledger::at(&p).lookup("wwn:1"), None);
        // ... and the next record starts it afresh.
        Ledger::at(&p).record("wwn:1", made("a")).unwrap();
        assert_eq!(Ledger::at(&p).lookup("wwn:1"), Some(made("a")));
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
            assert!(Ledger::at(&p).lookup(&format!("dev{i}")).is_some(), "dev{i} lost");
        }
    }
}
