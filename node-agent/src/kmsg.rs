//! The kernel log as `/dev/kmsg` gives it: one record per read, from where
//! this reader was when the visit began. Opened non-blocking and moved to
//! the end when the session is configured, read to its end by each release
//! of everything (the end of a visit), so what a release reads is what the
//! kernel printed during that visit. A reader that falls behind the ring
//! buffer gets EPIPE and goes on from the oldest record left; what was
//! overwritten is counted from the gap in sequence numbers.
//!
//! Kept: the lines `KernelLogKind::of` flags. A line that names a block
//! device ("dev loop3", "(loop3)", or the record's DEVICE=b7:3) is kept
//! only when that device is one of the session's (its scratch devices,
//! their partitions and loop devices, what it mounted): hosts sharing a
//! kernel (the lab's network namespaces, containers) see each other's
//! devices' errors. A line naming no device (a BUG, an Oops, a hung task)
//! is kept on every host: it may concern any of them.

use benchrig_wire::kernel_log::{KernelLog, KernelLogKind, KernelLogLine};
use std::os::fd::OwnedFd;

/// One record: `prio,seq,usec,flags;text` and ` KEY=value` lines.
#[derive(Clone, Debug, PartialEq)]
pub struct Record {
    pub seq: u64,
    pub usec: u64,
    pub text: String,
    /// `DEVICE=b<major>:<minor>` of a block device's message.
    pub block_dev: Option<(u32, u32)>,
}

pub fn parse_record(raw: &str) -> Option<Record> {
    let mut lines = raw.split('\n');
    let (head, text) = lines.next()?.split_once(';')?;
    let mut f = head.split(',');
    let _prio = f.next()?;
    let seq = f.next()?.parse().ok()?;
    let usec = f.next()?.parse().ok()?;
    let block_dev = lines.filter_map(|l| l.strip_prefix(" DEVICE=b")).find_map(|d| {
        let (a, b) = d.trim().split_once(':')?;
        Some((a.parse().ok()?, b.parse().ok()?))
    });
    Some(Record { seq, usec, text: text.to_string(), block_dev })
}

/// Device names a message mentions: after "dev " (up to `,` `:` or space),
/// in parentheses ("EXT4-fs (loop3)") and after "(device " ("EXT4-fs
/// warning (device loop3): …"), if `is_device` says it is one.
pub fn devices_named(text: &str, is_device: &dyn Fn(&str) -> bool) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    let token =
        |s: &str| -> String { s.chars().take_while(|c| c.is_ascii_alphanumeric() || *c == '-' || *c == '_').collect() };
    for (i, _) in text.match_indices("dev ") {
        out.push(token(&text[i + 4..]));
    }
    for (i, _) in text.match_indices('(') {
        let rest = &text[i + 1..];
        let rest = rest.strip_prefix("device ").unwrap_or(rest);
        let t = token(rest);
        if rest[t.len()..].starts_with(')') {
            out.push(t);
        }
    }
    out.retain(|n| !n.is_empty() && is_device(n));
    out.dedup();
    out
}

/// Which flagged records to keep: `ours` are the session's devices,
/// `name_of` turns a record's device number into a kernel name.
pub fn flagged(
    records: &[Record],
    ours: &[String],
    is_device: &dyn Fn(&str) -> bool,
    name_of: &dyn Fn((u32, u32)) -> Option<String>,
) -> Vec<KernelLogLine> {
    records
        .iter()
        .filter_map(|r| {
            let kind = KernelLogKind::of(&r.text)?;
            let mut named = devices_named(&r.text, is_device);
            named.extend(r.block_dev.and_then(name_of));
            if !named.is_empty() && !named.iter().any(|n| ours.contains(n)) {
                return None;
            }
            Some(KernelLogLine { kind, usec: r.usec, seq: r.seq, text: r.text.clone() })
        })
        .collect()
}

pub struct Reader {
    fd: OwnedFd,
    last_seq: Option<u64>,
}

impl Reader {
    /// `/dev/kmsg`, at its end: only what comes after now is read.
    pub fn open_at_end() -> std::io::Result<Reader> {
        use rustix::fs::{open, seek, Mode, OFlags, SeekFrom};
        let fd = open("/dev/kmsg", OFlags::RDONLY | OFlags::NONBLOCK | OFlags::CLOEXEC, Mode::empty())?;
        seek(&fd, SeekFrom::End(0))?;
        Ok(Reader { fd, last_seq: None })
    }

    /// Every record since the last read, and how many were overwritten unread.
    pub fn read_new(&mut self) -> (Vec<Record>, u64) {
        let (mut records, mut lost, mut overrun) = (Vec::new(), 0u64, false);
        let mut buf = vec![0u8; 16384];
        // Bounded: a kernel logging faster than we read cannot keep us here.
        for _ in 0..100_000 {
            match rustix::io::read(&self.fd, &mut buf) {
                Ok(0) => break,
                Ok(n) => {
                    let Some(r) = parse_record(&String::from_utf8_lossy(&buf[..n])) else { continue };
                    match self.last_seq {
                        Some(last) if r.seq > last + 1 => lost += r.seq - last - 1,
                        None if overrun => lost += 1,
                        _ => {}
                    }
                    overrun = false;
                    self.last_seq = Some(r.seq);
                    records.push(r);
                }
                Err(rustix::io::Errno::PIPE) => overrun = true,
                Err(rustix::io::Errno::INTR) => continue,
                Err(_) => break, // EAGAIN: nothing more for now
            }
        }
        (records, lost)
    }
}

/// What the kernel logged since the last call that concerns `ours`.
pub fn collect(reader: &mut Reader, ours: &[String], view: &crate::sysfs::SysView) -> KernelLog {
    let (records, lost_records) = reader.read_new();
    let is_device = |n: &str| view.class_block(n).exists();
    let name_of = |(a, b): (u32, u32)| {
        let link = std::fs::read_link(view.sys.join(format!("dev/block/{a}:{b}"))).ok()?;
        Some(link.file_name()?.to_string_lossy().into_owned())
    };
    KernelLog { lines: flagged(&records, ours, &is_device, &name_of), lost_records }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn records_parse_with_their_device() {
        let r = parse_record("3,1234,43496046933,-;critical space allocation error, dev loop0, sector 17408 op 0x1:(WRITE)\n SUBSYSTEM=block\n DEVICE=b7:0\n").unwrap();
        assert_eq!((r.seq, r.usec, r.block_dev), (1234, 43496046933, Some((7, 0))));
        assert!(r.text.starts_with("critical space allocation error, dev loop0,"));
        // Continuation fields are optional; a header with more fields reads too.
        let r = parse_record("4,77,5000,-,caller=T12;WARNING: CPU: 1 PID: 12 at fs/x.c:7 f+0x1\n").unwrap();
        assert_eq!((r.seq, r.block_dev), (77, None));
        assert_eq!(parse_record("garbage"), None);
    }

    #[test]
    fn flagged_lines_are_kept_for_this_sessions_devices_and_when_they_name_none() {
        let devs = ["loop0", "loop3", "loop3p1"];
        let is_device = |n: &str| devs.contains(&n);
        let name_of = |d: (u32, u32)| (d == (7, 3)).then(|| "loop3".to_string());
        let rec = |seq: u64, text: &str, dev: Option<(u32, u32)>| Record {
            seq,
            usec: seq * 10,
            text: text.into(),
            block_dev: dev,
        };
        let records = [
            rec(1, "critical space allocation error, dev loop0, sector 17408 op 0x1:(WRITE)", None),
            rec(2, "Buffer I/O error on dev loop3, logical block 0, lost async page write", None),
            rec(3, "EXT4-fs (loop3): mounted filesystem", None),
            rec(4, "BUG: kernel NULL pointer dereference, address: 0000000000000000", None),
            rec(5, "INFO: task dd:99 blocked for more than 120 seconds.", None),
            rec(6, "blk_update_request: I/O error, dev sdz, sector 1", None),
            rec(7, "I/O error on something", Some((7, 3))),
        ];
        let kept = flagged(&records, &["loop3".into()], &is_device, &name_of);
        let seqs: Vec<(u64, KernelLogKind)> = kept.iter().map(|l| (l.seq, l.kind)).collect();
        // loop0 is another host's; sdz is not a block device here, so the line names none of ours... nor any.
        assert_eq!(
            seqs,
            [
                (2, KernelLogKind::IoError),
                (4, KernelLogKind::Bug),
                (5, KernelLogKind::HungTask),
                (6, KernelLogKind::IoError),
                (7, KernelLogKind::IoError)
            ]
        );
        assert_eq!(devices_named("EXT4-fs (loop3p1): error op 0x1:(WRITE)", &is_device), ["loop3p1"]);
        assert_eq!(devices_named("EXT4-fs warning (device loop3): ext4_end_bio: I/O error 10", &is_device), ["loop3"]);
    }
}
