//! A scratch path that names a filesystem, not a device:
//! `/dev/disk/by-label/L` and `/dev/disk/by-uuid/U`, which udev points at
//! whichever device carries that label or UUID now.
//!
//! benchrig's mkfs replaces the filesystem, and with it the name: after the
//! first format udev would remove the link, and the next session would
//! find nothing. So a format of a device named this way gives the new
//! filesystem the same label or UUID ([`keep`]), or the cell is
//! `unsupported` with the reason (a label longer than the filesystem
//! holds, a mkfs that cannot be told a UUID). And because a label is only
//! a name, the link is believed only when the device it points at carries
//! that name ([`FsName::carried_by`]): a stale link is refused, not followed.
//! A raw write or a volume member named this way is `unsupported`: neither
//! can keep the name.

use crate::cmd;
use std::path::Path;

/// What a `/dev/disk/by-label` or `by-uuid` path names.
#[derive(Clone, Debug, PartialEq)]
pub enum FsName {
    Label(String),
    Uuid(String),
}

impl FsName {
    /// The filesystem name a scratch path gives, if it is one.
    pub fn of(path: &str) -> Option<FsName> {
        if let Some(l) = path.strip_prefix("/dev/disk/by-label/") {
            return Some(FsName::Label(udev_decode(l)));
        }
        path.strip_prefix("/dev/disk/by-uuid/").map(|u| FsName::Uuid(u.to_string()))
    }

    /// As a reason reads it: "label `scratch`".
    pub fn describe(&self) -> String {
        match self {
            FsName::Label(l) => format!("label `{l}`"),
            FsName::Uuid(u) => format!("UUID {u}"),
        }
    }

    /// Whether the device at `dev` carries this name now, asked of
    /// `blkid -p` (the superblock, not a cache). `Ok(None)`: this host cannot
    /// tell (no util-linux blkid), and the link is taken as udev made it.
    pub fn carried_by(&self, dev: &Path) -> Result<Option<bool>, String> {
        if cmd::which("blkid").is_none() {
            return Ok(None);
        }
        let tag = match self {
            FsName::Label(_) => "LABEL",
            FsName::Uuid(_) => "UUID",
        };
        let out = cmd::run(&["blkid", "-p", "-o", "value", "-s", tag, &dev.to_string_lossy()])?;
        let carried = out.stdout.trim_end_matches('\n');
        Ok(match out.status {
            0 => Some(match self {
                FsName::Label(l) => carried == l,
                FsName::Uuid(u) => carried.eq_ignore_ascii_case(u),
            }),
            // Nothing on the device: it carries no name at all.
            2 => Some(false),
            // busybox's blkid has no -p: it cannot say.
            _ => None,
        })
    }
}

/// udev's names escape what may not stand in a file name (`\x20` for a
/// space, `\x2f` for `/`), as libblkid's `blkid_encode_string` does.
fn udev_decode(name: &str) -> String {
    let b = name.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        let hex = b.get(i + 2..i + 4).and_then(|h| std::str::from_utf8(h).ok());
        match (b[i], b.get(i + 1), hex.and_then(|h| u8::from_str_radix(h, 16).ok())) {
            (b'\\', Some(b'x'), Some(byte)) => {
                out.push(byte);
                i += 4;
            }
            (c, ..) => {
                out.push(c);
                i += 1;
            }
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// What a mkfs must be given so that the filesystem it makes keeps the
/// name the scratch path gives.
#[derive(Debug, Default, PartialEq)]
pub struct Keep {
    /// Options to add (a label's); not recorded in the cell's mkfs
    /// command, as a name changes nothing measured.
    pub args: Vec<String>,
    /// The UUID the new filesystem must have, in place of a fresh one.
    pub uuid: Option<String>,
}

/// What `mkfs` (the profile's argv) must be given to keep `name`, or why it
/// cannot: the cell's `unsupported` reason.
pub fn keep(name: Option<&FsName>, mkfs: &[String]) -> Result<Keep, String> {
    let program = mkfs.first().map(|p| program_name(p)).unwrap_or_default();
    let sets = |flag: &str| mkfs.iter().skip(1).any(|a| a.starts_with(flag));
    match name {
        None => Ok(Keep::default()),
        Some(FsName::Label(label)) => {
            let what = format!("the device's label `{label}`");
            let (flag, max) = label_option(&program)
                .ok_or_else(|| format!("{program} cannot be told a label, so {what} would go"))?;
            if sets(flag) {
                return Err(format!(
                    "the profile's {program} sets its own label ({flag}), which would take {what} away"
                ));
            }
            if label.len() > max {
                return Err(format!(
                    "{program} holds a label of at most {max} bytes, so {what} ({} bytes) would not survive the format",
                    label.len()
                ));
            }
            Ok(Keep { args: vec![flag.to_string(), label.clone()], uuid: None })
        }
        Some(FsName::Uuid(uuid)) => {
            if program == "mkfs.btrfs" {
                // Checked here: it refuses a UUID any device carries, its own old one included.
                return Err(format!(
                    "mkfs.btrfs refuses to reuse the UUID {uuid} the device carries (\"non-unique UUID\"), so its by-uuid name would go"
                ));
            }
            let flag = uuid_option(&program, uuid)
                .ok_or_else(|| format!("{program} cannot be told a UUID, so the device's UUID {uuid} would go"))?;
            if sets(&flag[0]) {
                return Err(format!(
                    "the profile's {program} sets its own UUID ({}), which would take the device's UUID {uuid} away",
                    flag[0]
                ));
            }
            Ok(Keep { args: Vec::new(), uuid: Some(uuid.clone()) })
        }
    }
}

fn program_name(mkfs: &str) -> String {
    Path::new(mkfs).file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default()
}

/// A mkfs program's label option and the most bytes its filesystem holds.
fn label_option(program: &str) -> Option<(&'static str, usize)> {
    Some(match program {
        "mkfs.ext2" | "mkfs.ext3" | "mkfs.ext4" | "mke2fs" | "mkfs.jfs" | "jfs_mkfs" => ("-L", 16),
        "mkfs.xfs" => ("-L", 12),
        // It accepts 255 bytes but keeps 254 (btrfs-progs 6.2; blkid and `btrfs filesystem label` agree).
        "mkfs.btrfs" => ("-L", 254),
        "mkfs.reiserfs" | "mkreiserfs" => ("-l", 16),
        "mkfs.f2fs" => ("-l", 512),
        _ => return None,
    })
}

/// The option that makes a mkfs program use a given UUID, where it has one.
pub fn uuid_option(mkfs: &str, uuid: &str) -> Option<Vec<String>> {
    Some(match program_name(mkfs).as_str() {
        "mkfs.ext2" | "mkfs.ext3" | "mkfs.ext4" | "mke2fs" | "mkfs.btrfs" => vec!["-U".into(), uuid.into()],
        "mkfs.xfs" => vec!["-m".into(), format!("uuid={uuid}")],
        "mkfs.reiserfs" | "mkreiserfs" => vec!["-u".into(), uuid.into()],
        _ => return None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::process::Command;

    fn argv(a: &[&str]) -> Vec<String> {
        a.iter().map(|s| s.to_string()).collect()
    }

    const MKFS: [&[&str]; 5] = [
        &["mkfs.ext4", "-q", "-F"],
        &["mkfs.xfs", "-q", "-f"],
        &["mkfs.btrfs", "-q", "-f"],
        &["mkfs.jfs", "-q"],
        &["mkfs.reiserfs", "-q", "-f", "-f"],
    ];

    /// Runs `mkfs` with `extra` on a fresh image; blkid's value of `tag` after.
    fn made(img: &Path, mkfs: &[&str], extra: &[String], tag: &str) -> (bool, String) {
        std::fs::File::create(img).unwrap().set_len(320 << 20).unwrap();
        let out = Command::new(mkfs[0]).args(&mkfs[1..]).args(extra).arg(img).output();
        let out = out.unwrap_or_else(|e| panic!("{}: {e} (install it: .ci/run lists the package)", mkfs[0]));
        let blkid = Command::new("blkid").args(["-p", "-o", "value", "-s", tag]).arg(img).output().unwrap();
        (out.status.success(), String::from_utf8_lossy(&blkid.stdout).trim_end().to_string())
    }

    #[test]
    fn a_by_label_path_names_its_label_as_udev_escaped_it() {
        assert_eq!(FsName::of("/dev/disk/by-label/my\\x20disk"), Some(FsName::Label("my disk".into())));
        assert_eq!(FsName::of("/dev/disk/by-label/a\\x2fb\\xzz"), Some(FsName::Label("a/b\\xzz".into())));
        assert_eq!(FsName::of("/dev/disk/by-uuid/ab-cd"), Some(FsName::Uuid("ab-cd".into())));
        assert_eq!(FsName::of("/dev/disk/by-id/wwn-0x5000"), None);
        assert_eq!(FsName::of("/dev/disk/by-partlabel/scratch"), None, "a partition's name survives mkfs");
    }

    #[test]
    fn a_label_is_kept_where_the_filesystem_holds_it_and_refused_with_the_reason_where_not() {
        let label = Some(FsName::Label("scratch-0001".into()));
        assert_eq!(keep(label.as_ref(), &argv(&["mkfs.xfs", "-f"])).unwrap().args, argv(&["-L", "scratch-0001"]));
        let reiser = keep(label.as_ref(), &argv(&["/sbin/mkfs.reiserfs", "-f"])).unwrap();
        assert_eq!(reiser.args, argv(&["-l", "scratch-0001"]));
        let long = Some(FsName::Label("scratch-000001".into()));
        let e = keep(long.as_ref(), &argv(&["mkfs.xfs", "-f"])).unwrap_err();
        assert!(e.contains("at most 12 bytes") && e.contains("(14 bytes)"), "{e}");
        assert!(keep(long.as_ref(), &argv(&["mkfs.ext4"])).is_ok());
        let e = keep(label.as_ref(), &argv(&["mkfs.ext4", "-Lmine"])).unwrap_err();
        assert!(e.contains("sets its own label (-L)"), "{e}");
        assert!(keep(label.as_ref(), &argv(&["mkfs.nilfs2"])).unwrap_err().contains("cannot be told a label"));
        assert_eq!(keep(None, &argv(&["mkfs.ext4", "-L", "x"])).unwrap(), Keep::default());
    }

    #[test]
    fn a_uuid_is_reused_where_mkfs_takes_it_and_refused_with_the_reason_where_not() {
        let uuid = Some(FsName::Uuid("0b1c".into()));
        assert_eq!(keep(uuid.as_ref(), &argv(&["mkfs.xfs"])).unwrap().uuid.as_deref(), Some("0b1c"));
        assert!(keep(uuid.as_ref(), &argv(&["mkfs.jfs", "-q"])).unwrap_err().contains("cannot be told a UUID"));
        assert!(keep(uuid.as_ref(), &argv(&["mkfs.btrfs", "-f"])).unwrap_err().contains("non-unique"));
        let e = keep(uuid.as_ref(), &argv(&["mkfs.ext4", "-U", "time"])).unwrap_err();
        assert!(e.contains("sets its own UUID (-U)"), "{e}");
    }

    /// Each label option is the one its mkfs honours, and each limit the
    /// one it enforces (blkid as the oracle): one byte more comes out cut
    /// or refused by the program itself.
    #[test]
    fn mkfs_makes_the_filesystem_with_the_kept_label_up_to_its_limit() {
        let dir = tempfile::tempdir().unwrap();
        let img = dir.path().join("fs.img");
        for mkfs in MKFS {
            let (flag, max) = label_option(mkfs[0]).unwrap();
            let label = "L".repeat(max);
            let kept = keep(Some(&FsName::Label(label.clone())), &argv(mkfs)).unwrap();
            assert_eq!(made(&img, mkfs, &kept.args, "LABEL"), (true, label.clone()), "{mkfs:?}");
            let longer = format!("{label}M");
            assert!(keep(Some(&FsName::Label(longer.clone())), &argv(mkfs)).is_err(), "{mkfs:?}");
            let (ok, got) = made(&img, mkfs, &[flag.to_string(), longer.clone()], "LABEL");
            assert!(!ok || got != longer, "{mkfs:?} kept a {}-byte label: the limit is wrong", longer.len());
        }
    }

    /// The UUID option is the one each mkfs honours (blkid as the oracle):
    /// the ledger's announced UUID is the filesystem's.
    #[test]
    fn mkfs_makes_the_filesystem_with_the_announced_uuid() {
        let dir = tempfile::tempdir().unwrap();
        let img = dir.path().join("img");
        for mkfs in MKFS.into_iter().filter(|m| m[0] != "mkfs.jfs") {
            let uuid = crate::ledger::new_uuid().unwrap();
            let option = uuid_option(mkfs[0], &uuid).unwrap();
            assert_eq!(made(&img, mkfs, &option, "UUID"), (true, uuid), "{mkfs:?}");
        }
        assert_eq!(uuid_option("/sbin/mkfs.jfs", "u"), None, "mkfs.jfs has no UUID option");
    }
}
