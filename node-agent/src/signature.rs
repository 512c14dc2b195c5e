//! Is there anything on this device? Filesystem, RAID, LVM, LUKS, swap and
//! partition-table signatures found by their magic numbers.
//!
//! By hand because the agent is static and pure Rust (no libblkid); the
//! table covers what a lab disk plausibly carries. Where `blkid` exists on
//! the host, the safety check asks it too.

use std::io::{self, Read, Seek, SeekFrom};

/// (offset, magic, name). Offsets as in util-linux's libblkid probers.
const MAGICS: &[(u64, &[u8], &str)] = &[
    (0x438, &[0x53, 0xEF], "ext2/ext3/ext4"),
    (0, b"XFSB", "xfs"),
    (0x10040, b"_BHRfS_M", "btrfs"),
    (0x8000, b"JFS1", "jfs"),
    (0x10034, b"ReIsErFs", "reiserfs"),
    (0x10034, b"ReIsEr2Fs", "reiserfs"),
    (0x10034, b"ReIsEr3Fs", "reiserfs"),
    (0x2034, b"ReIsErFs", "reiserfs (3.5, old layout)"),
    (0x400, &[0x10, 0x20, 0xF5, 0xF2], "f2fs"),
    (0x406, &[0x34, 0x34], "nilfs2"),
    (0, b"hsqs", "squashfs"),
    (0x8001, b"CD001", "iso9660"),
    (3, b"NTFS    ", "ntfs"),
    (0x36, b"FAT", "vfat"),
    (0x52, b"FAT32", "vfat"),
    (0, b"LUKS\xba\xbe", "crypto_LUKS"),
    (0x200, b"LABELONE", "LVM2_member"),
    (0x400, b"LABELONE", "LVM2_member"),
    (0x600, b"LABELONE", "LVM2_member"),
    (0, &[0xFC, 0x4E, 0x2B, 0xA9], "linux_raid_member (1.1)"),
    (0x1000, &[0xFC, 0x4E, 0x2B, 0xA9], "linux_raid_member (1.2)"),
    (0x1000 - 10, b"SWAPSPACE2", "swap"),
    (0x2000 - 10, b"SWAPSPACE2", "swap"),
    (0x4000 - 10, b"SWAPSPACE2", "swap"),
    (0x10000 - 10, b"SWAPSPACE2", "swap"),
    (0x1000 - 10, b"SWAP-SPACE", "swap"),
    (0x200, b"EFI PART", "gpt partition table"),
    (0x1000, b"EFI PART", "gpt partition table (4k sectors)"),
    (0x1FE, &[0x55, 0xAA], "dos partition table or boot sector"),
];

/// How much of the start of the device the table needs.
const HEAD: u64 = 0x10100;

/// The first signature found on a device of `size` bytes, if any.
pub fn probe<R: Read + Seek>(dev: &mut R, size: u64) -> io::Result<Option<&'static str>> {
    let head = read_at(dev, 0, HEAD.min(size) as usize)?;
    for (off, magic, name) in MAGICS {
        let (o, m) = (*off as usize, magic.len());
        if head.len() >= o + m && &head[o..o + m] == *magic {
            return Ok(Some(name));
        }
    }
    // md 0.90 and 1.0 keep their superblock at the end of the device.
    if size >= 0x20000 {
        let md090 = (size & !0xFFFF) - 0x10000;
        if read_at(dev, md090, 4)? == [0xFC, 0x4E, 0x2B, 0xA9] {
            return Ok(Some("linux_raid_member (0.90)"));
        }
        let md10 = (size - 8 * 1024) & !(4096 - 1);
        if read_at(dev, md10, 4)? == [0xFC, 0x4E, 0x2B, 0xA9] {
            return Ok(Some("linux_raid_member (1.0)"));
        }
    }
    Ok(None)
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

    #[test]
    fn blank_device_has_no_signature() {
        let mut d = Cursor::new(vec![0u8; 4 << 20]);
        assert_eq!(probe(&mut d, 4 << 20).unwrap(), None);
    }

    #[test]
    fn every_magic_in_the_table_is_found() {
        for (off, magic, name) in MAGICS {
            let mut d = disk_with(*off as usize, magic);
            assert_eq!(probe(&mut d, 4 << 20).unwrap(), Some(*name), "{name} at {off:#x}");
        }
    }

    #[test]
    fn md_superblock_at_the_end() {
        let size = 4u64 << 20;
        let off = ((size & !0xFFFF) - 0x10000) as usize;
        let mut d = disk_with(off, &[0xFC, 0x4E, 0x2B, 0xA9]);
        assert_eq!(probe(&mut d, size).unwrap(), Some("linux_raid_member (0.90)"));
    }

    #[test]
    fn tiny_device_does_not_panic() {
        let mut d = Cursor::new(vec![0u8; 100]);
        assert_eq!(probe(&mut d, 100).unwrap(), None);
    }
}
