//! POSIX access ACLs as the kernel stores them in the `system.posix_acl_access`
//! (and `system.posix_acl_default`) extended attribute, encoded and decoded
//! here so the agent needs no libacl: a little-endian `u32` version (2), then
//! one `{u16 tag, u16 perm, u32 id}` per entry, sorted by tag and then id.
//! Entries without an id (owner, owning group, mask, other) carry 0xFFFFFFFF.

pub const ACCESS: &str = "system.posix_acl_access";
pub const DEFAULT: &str = "system.posix_acl_default";
pub const VERSION: u32 = 2;
pub const UNDEFINED_ID: u32 = u32::MAX;

pub const USER_OBJ: u16 = 0x01;
pub const USER: u16 = 0x02;
pub const GROUP_OBJ: u16 = 0x04;
pub const GROUP: u16 = 0x08;
pub const MASK: u16 = 0x10;
pub const OTHER: u16 = 0x20;

pub const READ: u16 = 4;
pub const WRITE: u16 = 2;
pub const EXECUTE: u16 = 1;

const HEADER: usize = 4;
const ENTRY: usize = 8;

/// An xattr value of more than the header and three entries is an extended
/// ACL (what libacl's `acl_extended_file` tests for the access ACL).
pub const MINIMAL_SIZE: usize = HEADER + 3 * ENTRY;

#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub struct Entry {
    pub tag: u16,
    pub perm: u16,
    pub id: u32,
}

impl Entry {
    pub fn new(tag: u16, perm: u16, id: u32) -> Self {
        Entry { tag, perm, id }
    }

    fn key(&self) -> (u16, u32) {
        (self.tag, self.id)
    }
}

/// The ACL a `tree` puts on its files: `n` entries, at least five —
/// `user::rw-`, `user:<uid>:r--`, `group::r--`, `mask::r--`, `other::---` —
/// and beyond five more named users `uid+1`, `uid+2`, ... with `r--`.
/// Fewer than five is refused: three entries are only the mode bits, not an
/// extended ACL, and four cannot be valid (a named entry needs a mask).
pub fn extended(n: u32, uid: u32) -> Result<Vec<Entry>, String> {
    if n < 5 {
        return Err(format!(
            "an extended ACL has at least 5 entries (user::, user:<uid>:, group::, mask::, other::), not {n}"
        ));
    }
    let named = n - 4;
    if uid as u64 + named as u64 > UNDEFINED_ID as u64 {
        return Err(format!("{named} named users from uid {uid} run past the largest uid"));
    }
    let mut e = vec![Entry::new(USER_OBJ, READ | WRITE, UNDEFINED_ID)];
    e.extend((0..named).map(|k| Entry::new(USER, READ, uid + k)));
    e.push(Entry::new(GROUP_OBJ, READ, UNDEFINED_ID));
    e.push(Entry::new(MASK, READ, UNDEFINED_ID));
    e.push(Entry::new(OTHER, 0, UNDEFINED_ID));
    Ok(e)
}

/// The xattr value, entries sorted by tag then id as the kernel requires.
pub fn encode(entries: &[Entry]) -> Vec<u8> {
    let mut sorted = entries.to_vec();
    sorted.sort_by_key(Entry::key);
    let mut out = Vec::with_capacity(HEADER + ENTRY * sorted.len());
    out.extend_from_slice(&VERSION.to_le_bytes());
    for e in sorted {
        out.extend_from_slice(&e.tag.to_le_bytes());
        out.extend_from_slice(&e.perm.to_le_bytes());
        out.extend_from_slice(&e.id.to_le_bytes());
    }
    out
}

pub fn decode(bytes: &[u8]) -> Result<Vec<Entry>, String> {
    if bytes.len() < HEADER || !(bytes.len() - HEADER).is_multiple_of(ENTRY) {
        return Err(format!("an ACL xattr of {} bytes is not a header and whole entries", bytes.len()));
    }
    let version = u32::from_le_bytes(bytes[..4].try_into().unwrap());
    if version != VERSION {
        return Err(format!("ACL xattr version {version}, expected {VERSION}"));
    }
    Ok(bytes[HEADER..]
        .chunks_exact(ENTRY)
        .map(|c| Entry {
            tag: u16::from_le_bytes([c[0], c[1]]),
            perm: u16::from_le_bytes([c[2], c[3]]),
            id: u32::from_le_bytes([c[4], c[5], c[6], c[7]]),
        })
        .collect())
}

fn perm_text(p: u16) -> String {
    [(READ, 'r'), (WRITE, 'w'), (EXECUTE, 'x')].iter().map(|&(b, c)| if p & b != 0 { c } else { '-' }).collect()
}

/// The text `getfacl -n --omit-header` prints for an access ACL (without
/// its trailing blank line), `#effective:` notes included.
pub fn to_text(entries: &[Entry]) -> String {
    let mut sorted = entries.to_vec();
    sorted.sort_by_key(Entry::key);
    let mask = sorted.iter().find(|e| e.tag == MASK).map(|e| e.perm);
    let mut out = String::new();
    for e in &sorted {
        let (kind, qualifier) = match e.tag {
            USER_OBJ => ("user", String::new()),
            USER => ("user", e.id.to_string()),
            GROUP_OBJ => ("group", String::new()),
            GROUP => ("group", e.id.to_string()),
            MASK => ("mask", String::new()),
            OTHER => ("other", String::new()),
            t => (if t == 0 { "unknown" } else { "tag" }, format!("{t:#x}")),
        };
        out.push_str(&format!("{kind}:{qualifier}:{}", perm_text(e.perm)));
        // Entries of the group class are limited by the mask.
        if let (Some(m), USER | GROUP_OBJ | GROUP) = (mask, e.tag) {
            if e.perm & !m != 0 {
                out.push_str(&format!("\t#effective:{}", perm_text(e.perm & m)));
            }
        }
        out.push('\n');
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::{Path, PathBuf};
    use std::process::Command;

    #[test]
    fn five_entries_layout() {
        let e = extended(5, 1000).unwrap();
        let b = encode(&e);
        assert_eq!(b.len(), 4 + 5 * 8);
        #[rustfmt::skip]
        let want: Vec<u8> = [
            vec![2, 0, 0, 0],
            vec![0x01, 0, 6, 0, 0xff, 0xff, 0xff, 0xff],
            vec![0x02, 0, 4, 0, 0xe8, 0x03, 0, 0],
            vec![0x04, 0, 4, 0, 0xff, 0xff, 0xff, 0xff],
            vec![0x10, 0, 4, 0, 0xff, 0xff, 0xff, 0xff],
            vec![0x20, 0, 0, 0, 0xff, 0xff, 0xff, 0xff],
        ].concat();
        assert_eq!(b, want);
        assert_eq!(decode(&b).unwrap(), e);
        assert_eq!(to_text(&e), "user::rw-\nuser:1000:r--\ngroup::r--\nmask::r--\nother::---\n");
    }

    #[test]
    fn more_entries_are_named_users_and_fewer_than_five_is_refused() {
        let e = extended(8, 500).unwrap();
        assert_eq!(e.len(), 8);
        let users: Vec<u32> = e.iter().filter(|e| e.tag == USER).map(|e| e.id).collect();
        assert_eq!(users, [500, 501, 502, 503]);
        assert!(extended(4, 1000).unwrap_err().contains("at least 5"));
        assert!(extended(3, 1000).is_err());
        assert!(extended(6, u32::MAX - 1).is_err());
        // Sorting: encode orders whatever it is given.
        let mut shuffled = e.clone();
        shuffled.reverse();
        assert_eq!(encode(&shuffled), encode(&e));
        assert!(decode(&[2, 0, 0]).is_err());
        assert!(decode(&[1, 0, 0, 0]).unwrap_err().contains("version"));
    }

    #[test]
    fn effective_rights_are_shown_like_getfacl() {
        let e = [
            Entry::new(USER_OBJ, 7, UNDEFINED_ID),
            Entry::new(USER, 6, 7),
            Entry::new(GROUP_OBJ, 5, UNDEFINED_ID),
            Entry::new(MASK, 4, UNDEFINED_ID),
            Entry::new(OTHER, 0, UNDEFINED_ID),
        ];
        assert_eq!(
            to_text(&e),
            "user::rwx\nuser:7:rw-\t#effective:r--\ngroup::r-x\t#effective:r--\nmask::r--\nother::---\n"
        );
    }

    /// A file on a filesystem with ACLs: /var/tmp (/tmp may be a tmpfs).
    fn temp_file() -> (tempfile::TempDir, PathBuf) {
        let dir = tempfile::tempdir_in("/var/tmp").unwrap();
        let p = dir.path().join("f");
        std::fs::write(&p, b"x").unwrap();
        std::fs::set_permissions(&p, std::os::unix::fs::PermissionsExt::from_mode(0o640)).unwrap();
        (dir, p)
    }

    fn tool(prog: &str) -> PathBuf {
        crate::cmd::which(prog).unwrap_or_else(|| {
            panic!(
                "`{prog}` is not installed: the ACL encoding is checked against the real tools (apt-get install acl)"
            )
        })
    }

    fn getfacl(p: &Path) -> String {
        let out = Command::new(tool("getfacl")).args(["-n", "--omit-header"]).arg(p).output().unwrap();
        assert!(out.status.success(), "getfacl: {}", String::from_utf8_lossy(&out.stderr));
        String::from_utf8(out.stdout).unwrap().trim_end().to_string() + "\n"
    }

    #[test]
    fn our_encoding_is_what_getfacl_reads() {
        for n in [5, 7] {
            let (_d, p) = temp_file();
            let e = extended(n, 1000).unwrap();
            rustix::fs::setxattr(&p, ACCESS, &encode(&e), rustix::fs::XattrFlags::empty())
                .unwrap_or_else(|err| panic!("setxattr {ACCESS} on {}: {err} (no ACL support?)", p.display()));
            let text = getfacl(&p);
            assert_eq!(text, to_text(&e));
            let want_users: String = (0..n - 4).map(|k| format!("user:{}:r--\n", 1000 + k)).collect();
            assert_eq!(text, format!("user::rw-\n{want_users}group::r--\nmask::r--\nother::---\n"));
        }
        // Rights beyond the mask: getfacl notes what is effective.
        let (_d, p) = temp_file();
        let e = [
            Entry::new(USER_OBJ, 7, UNDEFINED_ID),
            Entry::new(USER, 6, 7),
            Entry::new(GROUP_OBJ, 5, UNDEFINED_ID),
            Entry::new(GROUP, 7, 1234),
            Entry::new(MASK, 4, UNDEFINED_ID),
            Entry::new(OTHER, 1, UNDEFINED_ID),
        ];
        rustix::fs::setxattr(&p, ACCESS, &encode(&e), rustix::fs::XattrFlags::empty()).unwrap();
        assert_eq!(getfacl(&p), to_text(&e));
    }

    #[test]
    fn setfacl_output_decodes() {
        let (_d, p) = temp_file();
        let out = Command::new(tool("setfacl")).args(["-m", "u:1234:r"]).arg(&p).output().unwrap();
        assert!(out.status.success(), "setfacl: {}", String::from_utf8_lossy(&out.stderr));
        let mut buf = vec![0u8; 256];
        let n = rustix::fs::getxattr(&p, ACCESS, &mut buf[..]).unwrap();
        let e = decode(&buf[..n]).unwrap();
        assert_eq!(
            e,
            [
                Entry::new(USER_OBJ, READ | WRITE, UNDEFINED_ID),
                Entry::new(USER, READ, 1234),
                Entry::new(GROUP_OBJ, READ, UNDEFINED_ID),
                Entry::new(MASK, READ, UNDEFINED_ID),
                Entry::new(OTHER, 0, UNDEFINED_ID),
            ]
        );
        assert_eq!(to_text(&e), getfacl(&p));
    }
}
