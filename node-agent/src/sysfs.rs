//! Reading the kernel's view of block devices, mounts and swap.
//!
//! Everything goes through a [`SysView`] so the safety rules can be tested
//! against fake `/sys` and `/proc` trees without touching a real disk.

use std::fs;
use std::path::{Path, PathBuf};

#[derive(Clone, Debug)]
pub struct SysView {
    pub sys: PathBuf,
    pub proc_: PathBuf,
    pub run: PathBuf,
    /// What `/` is: where a path read from mountinfo lives (a mount point).
    pub root: PathBuf,
}

impl SysView {
    pub fn real() -> Self {
        SysView { sys: "/sys".into(), proc_: "/proc".into(), run: "/run".into(), root: "/".into() }
    }

    /// A fake tree for tests: `<root>/sys`, `<root>/proc`, `<root>/run`;
    /// an absolute path from the fake mountinfo is under `<root>` too.
    pub fn at(root: &Path) -> Self {
        SysView { sys: root.join("sys"), proc_: root.join("proc"), run: root.join("run"), root: root.into() }
    }

    /// An absolute path as the host names it (a mount point in mountinfo), in this view.
    pub fn host_path(&self, abs: &str) -> PathBuf {
        self.root.join(abs.trim_start_matches('/'))
    }

    pub fn class_block(&self, name: &str) -> PathBuf {
        self.sys.join("class/block").join(name)
    }

    pub fn read(&self, path: &Path) -> Option<String> {
        fs::read_to_string(path).ok().map(|s| s.trim().to_string()).filter(|s| !s.is_empty())
    }

    pub fn mountinfo(&self) -> Vec<MountEntry> {
        fs::read_to_string(self.proc_.join("self/mountinfo")).map(|t| parse_mountinfo(&t)).unwrap_or_default()
    }

    pub fn swaps(&self) -> Vec<String> {
        fs::read_to_string(self.proc_.join("swaps")).map(|t| parse_swaps(&t)).unwrap_or_default()
    }

    /// `MAJ:MIN` of a block device by its kernel name.
    pub fn dev_numbers(&self, name: &str) -> Option<(u32, u32)> {
        parse_dev(&self.read(&self.class_block(name).join("dev"))?)
    }

    /// Kernel names of the partitions of a whole disk.
    pub fn partitions(&self, name: &str) -> Vec<String> {
        let mut parts: Vec<String> = fs::read_dir(self.class_block(name))
            .into_iter()
            .flatten()
            .flatten()
            .filter(|e| e.path().join("partition").exists())
            .map(|e| e.file_name().to_string_lossy().into_owned())
            .collect();
        parts.sort();
        parts
    }

    pub fn holders(&self, name: &str) -> Vec<String> {
        let mut h: Vec<String> = fs::read_dir(self.class_block(name).join("holders"))
            .into_iter()
            .flatten()
            .flatten()
            .map(|e| e.file_name().to_string_lossy().into_owned())
            .collect();
        h.sort();
        h
    }

    pub fn is_partition(&self, name: &str) -> bool {
        self.class_block(name).join("partition").exists()
    }

    /// The whole disk a partition belongs to (the partition's parent directory in sysfs).
    pub fn parent_disk(&self, name: &str) -> Option<String> {
        let real = fs::canonicalize(self.class_block(name)).ok()?;
        let parent = real.parent()?.file_name()?.to_string_lossy().into_owned();
        self.class_block(&parent).join("dev").exists().then_some(parent)
    }

    /// The device's serial number as the kernel or udev knows it.
    pub fn serial(&self, name: &str) -> Option<String> {
        let dev = self.class_block(name).join("device");
        // SCSI/ATA put it under device/, virtio-blk beside it.
        if let Some(s) = self.read(&dev.join("serial")).or_else(|| self.read(&self.class_block(name).join("serial"))) {
            return Some(s);
        }
        if let Some(s) = fs::read(dev.join("vpd_pg80")).ok().and_then(|b| vpd_pg80_serial(&b)) {
            return Some(s);
        }
        let (maj, min) = self.dev_numbers(name)?;
        let udev = fs::read_to_string(self.run.join(format!("udev/data/b{maj}:{min}"))).ok()?;
        ["E:ID_SERIAL_SHORT=", "E:ID_SERIAL="]
            .iter()
            .find_map(|key| udev.lines().find_map(|l| l.strip_prefix(key)).map(str::to_string))
    }

    pub fn wwn(&self, name: &str) -> Option<String> {
        let dev = self.class_block(name).join("device");
        self.read(&dev.join("wwid")).or_else(|| self.read(&self.class_block(name).join("wwid")))
    }

    /// What stays the same for this device while kernel names move
    /// (sdb today, sdc after a reboot): WWN, else model and serial, else
    /// for a loop device its backing file (path, filesystem and inode), else
    /// its place on the bus (the sysfs device path). A partition is its
    /// disk's identity and its number. Used to key the format ledger, so a
    /// wrong identity can only make the ledger refuse, never accept.
    pub fn stable_identity(&self, name: &str) -> String {
        if self.is_partition(name) {
            if let Some(disk) = self.parent_disk(name) {
                let n = self.read(&self.class_block(name).join("partition")).unwrap_or_default();
                return format!("{}#part{n}", self.stable_identity(&disk));
            }
        }
        if let Some(w) = self.wwn(name) {
            return format!("wwn:{w}");
        }
        if let Some(s) = self.serial(name) {
            let model = self.read(&self.class_block(name).join("device/model")).unwrap_or_default();
            return format!("serial:{model}:{s}");
        }
        if let Some(file) = self.read(&self.class_block(name).join("loop/backing_file")) {
            use std::os::unix::fs::MetadataExt;
            // The inode tells a file from a copy of it put at the same path.
            return match fs::metadata(&file) {
                Ok(m) => format!("loop:{file}@{}:{}", m.dev(), m.ino()),
                Err(_) => format!("loop:{file}"),
            };
        }
        match fs::canonicalize(self.class_block(name)) {
            Ok(p) => format!("sysfs:{}", p.strip_prefix(&self.sys).unwrap_or(&p).display()),
            Err(_) => format!("name:{name}"),
        }
    }

    /// Loop devices (kernel names) whose backing file is `file`.
    pub fn loops_backed_by(&self, file: &Path) -> Vec<String> {
        let mut loops: Vec<String> = fs::read_dir(self.sys.join("class/block"))
            .into_iter()
            .flatten()
            .flatten()
            .map(|e| e.file_name().to_string_lossy().into_owned())
            .filter(|name| self.loop_backing_file(name).is_some_and(|b| b == file))
            .collect();
        loops.sort();
        loops
    }

    /// The file loop device `name` is attached over, as the kernel names it.
    pub fn loop_backing_file(&self, name: &str) -> Option<PathBuf> {
        self.read(&self.sys.join("class/block").join(name).join("loop/backing_file")).map(PathBuf::from)
    }

    /// Mounts in this namespace whose device is one of `names` (kernel
    /// names), by device number or by the source path (btrfs shows an
    /// anonymous device number, but its source names the device).
    pub fn mounts_of(&self, names: &[String]) -> Vec<MountEntry> {
        let numbers: Vec<(u32, u32)> = names.iter().filter_map(|n| self.dev_numbers(n)).collect();
        self.mountinfo()
            .into_iter()
            .filter(|m| {
                numbers.contains(&(m.major, m.minor)) || kernel_name(&m.source).is_some_and(|n| names.contains(&n))
            })
            .collect()
    }

    /// The block device behind a path (symlinks followed): its kernel name and numbers.
    pub fn resolve_block(&self, path: &Path) -> Result<(Device, PathBuf), String> {
        use std::os::unix::fs::{FileTypeExt, MetadataExt};
        let real = path.canonicalize().map_err(|e| format!("{}: {e}", path.display()))?;
        let meta = fs::metadata(&real).map_err(|e| format!("{}: {e}", real.display()))?;
        if !meta.file_type().is_block_device() {
            return Err(format!("{} is not a block device", real.display()));
        }
        let (major, minor) = (rustix::fs::major(meta.rdev()), rustix::fs::minor(meta.rdev()));
        let link = fs::read_link(self.sys.join(format!("dev/block/{major}:{minor}")))
            .map_err(|e| format!("{} has no sysfs entry: {e}", real.display()))?;
        let name = link.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
        Ok((Device { name, major, minor }, real))
    }

    /// Kernel name of the device a path's filesystem lives on, for I/O counters.
    pub fn device_for_path(&self, path: &Path) -> Option<String> {
        let path = fs::canonicalize(path).ok()?;
        let mounts = self.mountinfo();
        let m = mounts.iter().filter(|m| path.starts_with(&m.target)).max_by_key(|m| m.target.len())?;
        // The source names the device even where st_dev is anonymous (btrfs).
        if let Some(name) = Path::new(&m.source)
            .canonicalize()
            .ok()
            .filter(|p| p.starts_with("/dev/"))
            .and_then(|p| p.file_name().map(|n| n.to_string_lossy().into_owned()))
        {
            if self.class_block(&name).exists() {
                return Some(name);
            }
        }
        let link = fs::read_link(self.sys.join(format!("dev/block/{}:{}", m.major, m.minor))).ok()?;
        Some(link.file_name()?.to_string_lossy().into_owned())
    }
}

/// A block device as the kernel names it.
#[derive(Clone, Debug, PartialEq)]
pub struct Device {
    /// Kernel name (`sdb`, `loop3`, `nvme0n1p2`).
    pub name: String,
    pub major: u32,
    pub minor: u32,
}

/// The kernel name behind a `/dev/...` path, following symlinks.
pub fn kernel_name(source: &str) -> Option<String> {
    let p = Path::new(source);
    if !p.starts_with("/dev") {
        return None;
    }
    let real = p.canonicalize().unwrap_or_else(|_| p.to_path_buf());
    Some(real.file_name()?.to_string_lossy().into_owned())
}

/// One line of `/proc/self/mountinfo`.
#[derive(Clone, Debug, PartialEq)]
pub struct MountEntry {
    pub major: u32,
    pub minor: u32,
    pub target: String,
    pub fstype: String,
    pub source: String,
    pub options: String,
}

pub fn parse_mountinfo(text: &str) -> Vec<MountEntry> {
    text.lines()
        .filter_map(|line| {
            let (left, right) = line.split_once(" - ")?;
            let l: Vec<&str> = left.split(' ').collect();
            let r: Vec<&str> = right.split(' ').collect();
            let (major, minor) = parse_dev(l.get(2)?)?;
            Some(MountEntry {
                major,
                minor,
                target: unescape(l.get(4)?),
                options: l.get(5)?.to_string(),
                fstype: r.first()?.to_string(),
                source: unescape(r.get(1)?),
            })
        })
        .collect()
}

pub fn parse_swaps(text: &str) -> Vec<String> {
    text.lines().skip(1).filter_map(|l| l.split_whitespace().next()).map(unescape).collect()
}

fn parse_dev(s: &str) -> Option<(u32, u32)> {
    let (a, b) = s.trim().split_once(':')?;
    Some((a.parse().ok()?, b.parse().ok()?))
}

/// The kernel escapes space, tab, newline and backslash in paths as `\ooo`.
pub(crate) fn unescape(s: &str) -> String {
    let b = s.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        // `\ooo` up to \377: a larger one is no byte (fuzzing found `\777`
        // overflowing), so it stays as written.
        let octal = b.get(i + 1..i + 4).filter(|d| b[i] == b'\\' && d.iter().all(|c| (b'0'..=b'7').contains(c)));
        let byte = octal.map(|d| d.iter().fold(0u16, |n, c| n * 8 + u16::from(c - b'0'))).filter(|n| *n <= 0o377);
        if let Some(byte) = byte {
            out.push(byte as u8);
            i += 4;
        } else {
            out.push(b[i]);
            i += 1;
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// SCSI VPD page 0x80: 4-byte header, then the serial (length in byte 3).
fn vpd_pg80_serial(b: &[u8]) -> Option<String> {
    let len = *b.get(3)? as usize;
    let s = String::from_utf8_lossy(b.get(4..4 + len)?).trim().to_string();
    (!s.is_empty()).then_some(s)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mountinfo_lines_parse_with_escapes() {
        let text = "22 1 254:0 / / rw,relatime shared:1 - ext4 /dev/vda rw\n\
                    90 22 7:3 / /mnt/my\\040disk rw - xfs /dev/loop3 rw,attr2\n\
                    91 22 0:45 / /srv/b rw - btrfs /dev/loop4 rw\n";
        let m = parse_mountinfo(text);
        assert_eq!(m.len(), 3);
        assert_eq!((m[0].major, m[0].minor), (254, 0));
        assert_eq!(m[1].target, "/mnt/my disk");
        assert_eq!(m[1].source, "/dev/loop3");
        assert_eq!(m[2].fstype, "btrfs");
    }

    /// An escape past `\377` is no byte: kept as written (it panicked, or
    /// in a release build wrapped, before the fuzzing found it).
    #[test]
    fn an_escape_that_is_no_byte_stays_as_written() {
        assert_eq!(unescape("a\\040b\\134"), "a b\\");
        assert_eq!(unescape("x\\777y"), "x\\777y");
        assert_eq!(unescape("end\\04"), "end\\04");
    }

    #[test]
    fn swaps_skip_the_header() {
        let t = "Filename\tType\tSize\tUsed\tPriority\n/dev/sdc2 partition 1000 0 -2\n/swap\\040file file 10 0 -3\n";
        assert_eq!(parse_swaps(t), vec!["/dev/sdc2".to_string(), "/swap file".to_string()]);
    }

    #[test]
    fn vpd_serial() {
        let mut page = vec![0, 0x80, 0, 8];
        page.extend_from_slice(b"WD-1234 ");
        assert_eq!(vpd_pg80_serial(&page).as_deref(), Some("WD-1234"));
        assert_eq!(vpd_pg80_serial(&[0, 0x80, 0, 0]), None);
    }
}
