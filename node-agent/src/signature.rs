//! Is there anything on this device? Filesystem, RAID, LVM, LUKS, swap,
//! partition-table, ZFS, bcache, Oracle ASM and disk-image (qcow2, vmdk)
//! signatures found by their magic numbers, with the filesystem's UUID
//! where its superblock has one.
//!
//! By hand because the agent is static and pure Rust (no libblkid); the
//! table covers what a lab disk plausibly carries. Where `blkid` exists on
//! the host, the safety check asks it too (`blkid -p`), and anything but
//! its "nothing found" counts as a signature.

use std::io::{self, Read, Seek, SeekFrom};

/// One signature found on a device.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Signature {
    /// What it is (`ext2/ext3/ext4`, `LVM2_member`, `gpt partition table`).
    pub name: String,
    /// The filesystem's UUID as blkid prints it (lowercase, hyphenated), where it has one.
    pub uuid: Option<String>,
}

/// (offset, magic, name, offset of the 16-byte UUID). Offsets as in
/// util-linux's libblkid probers (superblock start + the field's offset).
const MAGICS: &[(u64, &[u8], &str, Option<u64>)] = &[
    (0x438, &[0x53, 0xEF], "ext2/ext3/ext4", Some(0x400 + 0x68)),
    (0, b"XFSB", "xfs", Some(0x20)),
    (0x10040, b"_BHRfS_M", "btrfs", Some(0x10000 + 0x20)),
    (0x8000, b"JFS1", "jfs", Some(0x8000 + 0x88)),
    (0x10034, b"ReIsErFs", "reiserfs", Some(0x10000 + 0x54)),
    (0x10034, b"ReIsEr2Fs", "reiserfs", Some(0x10000 + 0x54)),
    (0x10034, b"ReIsEr3Fs", "reiserfs", Some(0x10000 + 0x54)),
    (0x2034, b"ReIsErFs", "reiserfs (3.5, old layout)", None),
    (0x400, &[0x10, 0x20, 0xF5, 0xF2], "f2fs", None),
    (0x406, &[0x34, 0x34], "nilfs2", None),
    (0, b"hsqs", "squashfs", None),
    (0x8001, b"CD001", "iso9660", None),
    (3, b"NTFS    ", "ntfs", None),
    (0x36, b"FAT", "vfat", None),
    (0x52, b"FAT32", "vfat", None),
    (0, b"LUKS\xba\xbe", "crypto_LUKS", None),
    (0x200, b"LABELONE", "LVM2_member", None),
    (0x400, b"LABELONE", "LVM2_member", None),
    (0x600, b"LABELONE", "LVM2_member", None),
    (0, &[0xFC, 0x4E, 0x2B, 0xA9], "linux_raid_member (1.1)", None),
    (0x1000, &[0xFC, 0x4E, 0x2B, 0xA9], "linux_raid_member (1.2)", None),
    (0x1000 - 10, b"SWAPSPACE2", "swap", None),
    (0x2000 - 10, b"SWAPSPACE2", "swap", None),
    (0x4000 - 10, b"SWAPSPACE2", "swap", None),
    (0x10000 - 10, b"SWAPSPACE2", "swap", None),
    (0x1000 - 10, b"SWAP-SPACE", "swap", None),
    (0x200, b"EFI PART", "gpt partition table", None),
    (0x1000, b"EFI PART", "gpt partition table (4k sectors)", None),
    (0x1FE, &[0x55, 0xAA], "dos partition table or boot sector", None),
    (3, b"EXFAT   ", "exfat", None),
    // bcache's superblock is at 4 KiB, its magic 24 bytes in.
    (0x1018, b"\xc6\x85\x73\xf6\x4e\x1a\x45\xca\x82\x65\xf5\x7f\x48\xba\x6d\x81", "bcache", None),
    (32, b"ORCLDISK", "oracleasm", None),
    // A disk image written raw to the device (blkid does not look for these).
    (0, b"QFI\xfb", "qcow2 image", None),
    (0, b"VMDK", "vmdk image", None),
];

/// ZFS: the uberblock magic at the start of a 1 KiB slot of the uberblock
/// array (128 KiB into each of the two front vdev labels, at 0 and 256
/// KiB), in either byte order (libblkid's zfs prober looks there).
const ZFS_UBERBLOCK_MAGIC: u64 = 0x00ba_b10c;
const ZFS_LABELS: [u64; 2] = [0, 256 << 10];
const ZFS_UBERBLOCKS: std::ops::Range<u64> = (128 << 10)..(256 << 10);

/// How much of the start of the device the table needs.
const HEAD: u64 = 0x10100;

/// Every signature found on a device of `size` bytes: a device that carries
/// two is never taken for the one it also has.
pub fn probe<R: Read + Seek>(dev: &mut R, size: u64) -> io::Result<Vec<Signature>> {
    let head = read_at(dev, 0, HEAD.min(size) as usize)?;
    let mut found = Vec::new();
    for (off, magic, name, uuid_at) in MAGICS {
        let (o, m) = (*off as usize, magic.len());
        if head.len() >= o + m && &head[o..o + m] == *magic {
            let uuid = uuid_at.and_then(|u| head.get(u as usize..u as usize + 16)).and_then(format_uuid);
            found.push(Signature { name: name.to_string(), uuid });
        }
    }
    if zfs_member(dev, size)? {
        found.push(Signature { name: "zfs_member".into(), uuid: None });
    }
    // md 0.90 and 1.0 keep their superblock at the end of the device.
    if size >= 0x20000 {
        let md090 = (size & !0xFFFF) - 0x10000;
        if read_at(dev, md090, 4)? == [0xFC, 0x4E, 0x2B, 0xA9] {
            found.push(Signature { name: "linux_raid_member (0.90)".into(), uuid: None });
        }
        let md10 = (size - 8 * 1024) & !(4096 - 1);
        if read_at(dev, md10, 4)? == [0xFC, 0x4E, 0x2B, 0xA9] {
            found.push(Signature { name: "linux_raid_member (1.0)".into(), uuid: None });
        }
    }
    Ok(found)
}

/// Whether a front ZFS vdev label holds an uberblock.
fn zfs_member<R: Read + Seek>(dev: &mut R, size: u64) -> io::Result<bool> {
    for label in ZFS_LABELS {
        if label + ZFS_UBERBLOCKS.end > size {
            break;
        }
        let array = read_at(dev, label + ZFS_UBERBLOCKS.start, (ZFS_UBERBLOCKS.end - ZFS_UBERBLOCKS.start) as usize)?;
        let found = array.chunks_exact(1024).any(|slot| {
            let word: [u8; 8] = slot[..8].try_into().expect("8 bytes");
            u64::from_le_bytes(word) == ZFS_UBERBLOCK_MAGIC || u64::from_be_bytes(word) == ZFS_UBERBLOCK_MAGIC
        });
        if found {
            return Ok(true);
        }
    }
    Ok(false)
}

/// The EFI system partition's type GUID as a GPT entry stores it.
const ESP_GUID: [u8; 16] =
    [0x28, 0x73, 0x2A, 0xC1, 0x1F, 0xF8, 0xD2, 0x11, 0xBA, 0x4B, 0x00, 0xA0, 0xC9, 0x3E, 0xC9, 0x3B];

/// Whether a disk's partition table (MBR type 0xEF, or a GPT entry of the
/// ESP's type, with 512- or 4096-byte sectors) holds an EFI system
/// partition: the disk a machine boots from.
pub fn has_esp<R: Read + Seek>(disk: &mut R, size: u64) -> io::Result<bool> {
    let mbr = read_at(disk, 0, 512)?;
    if mbr.len() < 512 || mbr[0x1FE..0x200] != [0x55, 0xAA] {
        return Ok(false);
    }
    if (0..4).any(|i| mbr[0x1BE + 16 * i + 4] == 0xEF) {
        return Ok(true);
    }
    for sector in [512u64, 4096] {
        let header = read_at(disk, sector, 92)?;
        if header.len() < 92 || &header[..8] != b"EFI PART" {
            continue;
        }
        let u64_at = |o: usize| u64::from_le_bytes(header[o..o + 8].try_into().expect("8 bytes"));
        let u32_at = |o: usize| u32::from_le_bytes(header[o..o + 4].try_into().expect("4 bytes"));
        let (start, count, each) = (u64_at(72), u32_at(80).min(256) as u64, u32_at(84) as u64);
        if !(16..=4096).contains(&each) || start.saturating_mul(sector) >= size {
            continue;
        }
        let entries = read_at(disk, start * sector, (count * each) as usize)?;
        if entries.chunks(each as usize).any(|e| e.len() >= 16 && e[..16] == ESP_GUID) {
            return Ok(true);
        }
    }
    Ok(false)
}

/// 16 raw bytes as blkid prints a UUID; all zeros is no UUID.
fn format_uuid(b: &[u8]) -> Option<String> {
    if b.iter().all(|&x| x == 0) {
        return None;
    }
    let hex: String = b.iter().map(|x| format!("{x:02x}")).collect();
    Some(format!("{}-{}-{}-{}-{}", &hex[0..8], &hex[8..12], &hex[12..16], &hex[16..20], &hex[20..32]))
}

fn read_at<R: Read + Seek>(dev: &mut R, off: u64, len: usize) -> io::Result<Vec<u8>> {
    dev.seek(SeekFrom::Start(off))?;
    let mut buf = Vec::with_capacity(len);
    dev.take(len as u64).read_to_end(&mut buf)?;
    Ok(buf)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Cursor;

    fn disk_with(off: usize, magic: &[u8]) -> Cursor<Vec<u8>> {
        let mut d = vec![0u8; 4 << 20];
        d[off..off + magic.len()].copy_from_slice(magic);
        Cursor::new(d)
    }

    fn names(found: Vec<Signature>) -> Vec<String> {
        found.into_iter().map(|s| s.name).collect()
    }

    #[test]
    fn blank_device_has_no_signature() {
        let mut d = Cursor::new(vec![0u8; 4 << 20]);
        assert_eq!(probe(&mut d, 4 << 20).unwrap(), vec![]);
    }

    #[test]
    fn every_magic_in_the_table_is_found() {
        for (off, magic, name, _) in MAGICS {
            let mut d = disk_with(*off as usize, magic);
            assert!(names(probe(&mut d, 4 << 20).unwrap()).contains(&name.to_string()), "{name} at {off:#x}");
        }
    }

    #[test]
    fn two_signatures_are_both_reported() {
        // An ext4 superblock over an LVM label: neither hides the other.
        let mut d = disk_with(0x438, &[0x53, 0xEF]);
        d.get_mut()[0x200..0x208].copy_from_slice(b"LABELONE");
        assert_eq!(names(probe(&mut d, 4 << 20).unwrap()), ["ext2/ext3/ext4", "LVM2_member"]);
    }

    #[test]
    fn uuid_is_read_from_the_superblock() {
        let mut d = disk_with(0x438, &[0x53, 0xEF]);
        let uuid: Vec<u8> = (1..=16).collect();
        d.get_mut()[0x468..0x478].copy_from_slice(&uuid);
        let found = probe(&mut d, 4 << 20).unwrap();
        assert_eq!(found[0].uuid.as_deref(), Some("01020304-0506-0708-090a-0b0c0d0e0f10"));
        // A zeroed UUID field is no UUID.
        let mut d = disk_with(0, b"XFSB");
        assert_eq!(probe(&mut d, 4 << 20).unwrap()[0].uuid, None);
    }

    /// ZFS by its spec's magic (no ZFS tools on Debian main): an uberblock
    /// in either front label, either byte order; not in a slot's middle.
    #[test]
    fn a_zfs_uberblock_is_found_in_either_front_label() {
        for (label, le) in [(0usize, true), (256 << 10, false)] {
            let magic = if le { ZFS_UBERBLOCK_MAGIC.to_le_bytes() } else { ZFS_UBERBLOCK_MAGIC.to_be_bytes() };
            let mut d = disk_with(label + (128 << 10) + 5 * 1024, &magic);
            assert!(names(probe(&mut d, 4 << 20).unwrap()).contains(&"zfs_member".to_string()), "{label:#x}");
        }
        let mut off_slot = disk_with((128 << 10) + 512, &ZFS_UBERBLOCK_MAGIC.to_le_bytes());
        assert!(!names(probe(&mut off_slot, 4 << 20).unwrap()).contains(&"zfs_member".to_string()));
    }

    /// Signatures the tools on Debian make (`.ci/run` installs them), found
    /// by the agent's own table as on a host without blkid. (qcow2, Oracle
    /// ASM and ZFS by their specs' magic above: `.ci/run` keeps qemu-utils
    /// to ci/vm.sh, and Debian main has no tool for the other two.)
    #[test]
    fn exfat_and_bcache_made_by_their_tools_are_found() {
        use std::process::Command;
        let cases: &[(&str, &[&str])] = &[("exfat", &["mkfs.exfat"]), ("bcache", &["make-bcache", "-B"])];
        let dir = tempfile::tempdir().unwrap();
        for (want, tool) in cases {
            let img = dir.path().join(format!("{}.img", want.replace(' ', "-")));
            std::fs::File::create(&img).unwrap().set_len(64 << 20).unwrap();
            let out = Command::new(tool[0])
                .args(&tool[1..])
                .arg(&img)
                .output()
                .unwrap_or_else(|e| panic!("{}: {e} (install it: .ci/run lists the package)", tool[0]));
            assert!(out.status.success(), "{tool:?}: {}", String::from_utf8_lossy(&out.stderr));
            let size = std::fs::metadata(&img).unwrap().len();
            let found = names(probe(&mut std::fs::File::open(&img).unwrap(), size).unwrap());
            assert!(found.contains(&want.to_string()), "{tool:?}: {found:?}");
        }
    }

    /// The oracle: sfdisk writes the tables, with and without an ESP.
    #[test]
    fn an_esp_is_found_in_a_gpt_or_a_dos_table_that_sfdisk_wrote() {
        use std::io::Write;
        use std::process::{Command, Stdio};
        let dir = tempfile::tempdir().unwrap();
        for (label, esp, other) in [("gpt", "U", "L"), ("dos", "ef", "83")] {
            for (with_esp, want) in [(true, true), (false, false)] {
                let img = dir.path().join(format!("{label}-{with_esp}.img"));
                std::fs::File::create(&img).unwrap().set_len(64 << 20).unwrap();
                let first = if with_esp { esp } else { other };
                let script = format!("label: {label}\n,16M,{first}\n,,{other}\n");
                let mut c = Command::new("sfdisk").arg("-q").arg(&img).stdin(Stdio::piped()).spawn().unwrap();
                c.stdin.take().unwrap().write_all(script.as_bytes()).unwrap();
                assert!(c.wait().unwrap().success(), "sfdisk {label}");
                let mut f = std::fs::File::open(&img).unwrap();
                assert_eq!(has_esp(&mut f, 64 << 20).unwrap(), want, "{label}, ESP {with_esp}");
            }
        }
        assert!(!has_esp(&mut Cursor::new(vec![0u8; 4096]), 4096).unwrap(), "no table");
    }

    #[test]
    fn md_superblock_at_the_end() {
        let size = 4u64 << 20;
        let off = ((size & !0xFFFF) - 0x10000) as usize;
        let mut d = disk_with(off, &[0xFC, 0x4E, 0x2B, 0xA9]);
        assert_eq!(names(probe(&mut d, size).unwrap()), ["linux_raid_member (0.90)"]);
    }

    #[test]
    fn tiny_device_does_not_panic() {
        let mut d = Cursor::new(vec![0u8; 100]);
        assert_eq!(probe(&mut d, 100).unwrap(), vec![]);
    }

    /// The oracle: real mkfs on an image file, and blkid's UUID for it. Needs
    /// the tools `.ci/run` installs (e2fsprogs, xfsprogs, btrfs-progs,
    /// jfsutils, reiserfsprogs, util-linux): a missing one fails, naming it.
    #[test]
    fn uuids_agree_with_blkid_for_every_filesystem_mkfs_makes() {
        use std::process::Command;
        let cases: &[(&str, &[&str])] = &[
            ("ext2/ext3/ext4", &["mkfs.ext4", "-q", "-F"]),
            ("ext2/ext3/ext4", &["mkfs.ext2", "-q", "-F"]),
            ("xfs", &["mkfs.xfs", "-q", "-f"]),
            ("btrfs", &["mkfs.btrfs", "-q", "-f"]),
            ("jfs", &["mkfs.jfs", "-q"]),
            ("reiserfs", &["mkfs.reiserfs", "-q", "-f", "-f"]),
        ];
        let dir = tempfile::tempdir().unwrap();
        for (want, mkfs) in cases {
            let img = dir.path().join("img");
            let f = std::fs::File::create(&img).unwrap();
            f.set_len(320 << 20).unwrap();
            let out = Command::new(mkfs[0]).args(&mkfs[1..]).arg(&img).output();
            let out = out.unwrap_or_else(|e| panic!("{}: {e} (install it: .ci/run lists the package)", mkfs[0]));
            assert!(out.status.success(), "{mkfs:?}: {}", String::from_utf8_lossy(&out.stderr));
            let blkid = Command::new("blkid").args(["-p", "-o", "value", "-s", "UUID"]).arg(&img).output().unwrap();
            let blkid = String::from_utf8_lossy(&blkid.stdout).trim().to_string();
            assert!(!blkid.is_empty(), "blkid found no UUID after {mkfs:?}");
            let mut dev = std::fs::File::open(&img).unwrap();
            let found = probe(&mut dev, 320 << 20).unwrap();
            let fs: Vec<_> = found.iter().filter(|s| s.uuid.is_some()).collect();
            assert_eq!(fs.len(), 1, "{mkfs:?}: {found:?}");
            assert_eq!(fs[0].name, *want, "{mkfs:?}");
            assert_eq!(fs[0].uuid.as_deref(), Some(blkid.as_str()), "{mkfs:?}");
        }
    }
}
