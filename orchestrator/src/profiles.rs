//! Named filesystem profiles: the mkfs command line and mount options each
//! name stands for. A play may override a profile or add its own under
//! `profiles:`.

use benchrig_wire::steps::FsProfile;

/// (name, kernel fstype, mkfs argv, mount options). `existing` uses a scratch
/// directory as it is.
type Builtin = (&'static str, Option<&'static str>, &'static [&'static str], &'static [&'static str]);
const BUILTIN: &[Builtin] = &[
    ("ext2", Some("ext2"), &["mkfs.ext2", "-F", "-q"], &[]),
    ("ext3", Some("ext3"), &["mkfs.ext3", "-F", "-q"], &[]),
    ("ext4", Some("ext4"), &["mkfs.ext4", "-F", "-q"], &[]),
    // 128-byte inodes push ACLs and xattrs out of the inode into a block.
    ("ext4-128", Some("ext4"), &["mkfs.ext4", "-F", "-q", "-I", "128"], &[]),
    ("xfs", Some("xfs"), &["mkfs.xfs", "-f", "-q"], &[]),
    // 256-byte inodes need the v4 format (crc=0), which new kernels refuse.
    ("xfs-256", Some("xfs"), &["mkfs.xfs", "-f", "-q", "-m", "crc=0", "-i", "size=256"], &[]),
    ("xfs-512", Some("xfs"), &["mkfs.xfs", "-f", "-q", "-i", "size=512"], &[]),
    ("btrfs", Some("btrfs"), &["mkfs.btrfs", "-f", "-q"], &[]),
    ("btrfs-lzo", Some("btrfs"), &["mkfs.btrfs", "-f", "-q"], &["compress=lzo"]),
    ("btrfs-zstd", Some("btrfs"), &["mkfs.btrfs", "-f", "-q"], &["compress=zstd"]),
    ("jfs", Some("jfs"), &["mkfs.jfs", "-q"], &[]),
    // ReiserFS has ACLs and user xattrs only when mounted with them (as in 2003).
    ("reiserfs", Some("reiserfs"), &["mkfs.reiserfs", "-q", "-f"], &["acl", "user_xattr"]),
    ("f2fs", Some("f2fs"), &["mkfs.f2fs", "-f", "-q"], &[]),
    ("existing", None, &[], &[]),
];

pub fn builtin_names() -> impl Iterator<Item = &'static str> {
    BUILTIN.iter().map(|p| p.0)
}

pub fn builtin(name: &str) -> Option<FsProfile> {
    BUILTIN.iter().find(|p| p.0 == name).map(|(n, fstype, mkfs, opts)| FsProfile {
        name: n.to_string(),
        fstype: fstype.map(str::to_string),
        mkfs: mkfs.iter().map(|s| s.to_string()).collect(),
        mount_options: opts.iter().map(|s| s.to_string()).collect(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_profile_with_a_fstype_has_a_mkfs() {
        for name in builtin_names() {
            let p = builtin(name).unwrap();
            assert_eq!(p.fstype.is_some(), !p.mkfs.is_empty(), "{name}");
        }
        assert_eq!(builtin("btrfs-zstd").unwrap().mount_options, ["compress=zstd"]);
        assert!(builtin("zfs").is_none());
    }
}
