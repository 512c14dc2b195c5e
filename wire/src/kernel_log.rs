//! What the kernel logged during a visit that bears on its results: the
//! lines of `/dev/kmsg` the agent flags (an I/O error, a BUG, an Oops, a
//! WARNING, a hung task), returned in the info of the release that ends
//! each visit (`kernel_log`) and flagged in every report.

use serde::{Deserialize, Serialize};

/// Why a kernel log line is flagged.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum KernelLogKind {
    /// "I/O error" (buffer heads, a filesystem's metadata I/O), or the
    /// block layer's report of a failed request ("critical space allocation
    /// error, dev loop3, sector …": `blk_print_req_error`, any status).
    IoError,
    /// "BUG:" or "kernel BUG at".
    Bug,
    /// "Oops:".
    Oops,
    /// "WARNING:" (a `WARN()` splat).
    Warning,
    /// "blocked for more than N seconds" (the hung task detector).
    HungTask,
}

impl KernelLogKind {
    pub const ALL: [KernelLogKind; 5] = [Self::IoError, Self::Bug, Self::Oops, Self::Warning, Self::HungTask];

    pub fn word(self) -> &'static str {
        match self {
            Self::IoError => "I/O error",
            Self::Bug => "BUG",
            Self::Oops => "Oops",
            Self::Warning => "WARNING",
            Self::HungTask => "hung task",
        }
    }

    /// The kind a message is, if flagged: the most serious first (an Oops
    /// line may also say WARNING).
    pub fn of(text: &str) -> Option<KernelLogKind> {
        if text.contains("Oops:") || text.contains("Oops ") && text.contains("PREEMPT") {
            Some(Self::Oops)
        } else if text.starts_with("BUG:") || text.contains("kernel BUG at") {
            Some(Self::Bug)
        } else if text.contains("blocked for more than") && text.contains("seconds") {
            Some(Self::HungTask)
        } else if text.contains("I/O error") || text.contains(" error, dev ") && text.contains(", sector ") {
            Some(Self::IoError)
        } else if text.starts_with("WARNING:") || text.contains("] WARNING:") {
            Some(Self::Warning)
        } else {
            None
        }
    }
}

/// One flagged line.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct KernelLogLine {
    pub kind: KernelLogKind,
    /// Microseconds since boot (the record's time stamp).
    pub usec: u64,
    /// The record's sequence number.
    pub seq: u64,
    pub text: String,
}

/// What a visit's kernel log held: the flagged lines, and how many records
/// the ring buffer overwrote before the agent read them (so lines may be missing).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct KernelLog {
    pub lines: Vec<KernelLogLine>,
    pub lost_records: u64,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kinds_of_real_kernel_lines() {
        let k = |t: &str| KernelLogKind::of(t);
        assert_eq!(
            k("I/O error, dev loop3, sector 2048 op 0x1:(WRITE) flags 0x800 phys_seg 1 prio class 0"),
            Some(KernelLogKind::IoError)
        );
        assert_eq!(
            k("Buffer I/O error on dev loop3, logical block 0, lost async page write"),
            Some(KernelLogKind::IoError)
        );
        assert_eq!(k("BUG: unable to handle page fault for address: ffffffffc0a1b000"), Some(KernelLogKind::Bug));
        assert_eq!(k("kernel BUG at fs/ext4/inode.c:1234!"), Some(KernelLogKind::Bug));
        assert_eq!(k("Oops: 0002 [#1] PREEMPT SMP NOPTI"), Some(KernelLogKind::Oops));
        assert_eq!(
            k("WARNING: CPU: 1 PID: 4242 at fs/iomap/buffered-io.c:77 iomap_page_release+0x9a/0xb0"),
            Some(KernelLogKind::Warning)
        );
        assert_eq!(k("INFO: task kworker/u8:2:123 blocked for more than 122 seconds."), Some(KernelLogKind::HungTask));
        // A loop device whose backing file's filesystem is full (the lab test's error).
        assert_eq!(k("critical space allocation error, dev loop0, sector 17408 op 0x1:(WRITE) flags 0x4800 phys_seg 32 prio class 2"), Some(KernelLogKind::IoError));
        assert_eq!(k("EXT4-fs (loop3): mounted filesystem with ordered data mode"), None);
        assert_eq!(k("loop3: detected capacity change from 0 to 2097152"), None);
    }
}
