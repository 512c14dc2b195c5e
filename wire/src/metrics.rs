//! Every metric an action reports, declared once: its name, unit, which
//! way is better and what it measures. An action's row in the table of
//! `steps` lists the ones it reports; the agent makes every metric it
//! reports from these (`Metric::of`), `Action::declares` checks a reported
//! one against the row (the agent's dispatch and its tests call it), and
//! `benchrig doc` prints them, so the reference says what a run stores.
//!
//! Which way is better stays a typed `Better` end to end: the store writes
//! its word and reads it back as one (an unknown word is an error), and
//! `compare`, `history` and `bisect` judge on the type, never on a string.

use crate::args::Better;

/// One metric an action reports.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct MetricDecl {
    pub name: &'static str,
    pub naming: Naming,
    pub unit: &'static str,
    pub better: Better,
    /// What it measures (the reference's description).
    pub about: &'static str,
}

/// How a reported metric's name is made from its declaration's.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Naming {
    /// The declared name itself.
    Fixed,
    /// `JOB.DIRECTION.` and the declared name, once per fio job and
    /// direction ([`FIO_DIRECTIONS`]) that did I/O.
    PerJobDirection,
}

/// fio's directions in its JSON; `mixed` is all of them as one, under
/// `unified_rw_reporting=mixed`.
pub const FIO_DIRECTIONS: [&str; 4] = ["read", "write", "trim", "mixed"];

impl MetricDecl {
    /// The name a metric of this declaration has for a fio job and direction.
    pub fn per_job(&self, job: &str, direction: &str) -> String {
        format!("{job}.{direction}.{}", self.name)
    }

    /// The name as the reference shows it (`JOB.DIRECTION.bw`).
    pub fn shown_name(&self) -> String {
        match self.naming {
            Naming::Fixed => self.name.to_string(),
            Naming::PerJobDirection => self.per_job("JOB", "DIRECTION"),
        }
    }

    /// Whether a reported metric is one of this declaration: its name, unit
    /// and direction.
    pub fn matches(&self, name: &str, unit: &str, better: Better) -> bool {
        if unit != self.unit || better != self.better {
            return false;
        }
        match self.naming {
            Naming::Fixed => name == self.name,
            Naming::PerJobDirection => name
                .strip_suffix(self.name)
                .and_then(|n| n.strip_suffix('.'))
                // A job's name may hold dots; the direction is the last word.
                .and_then(|n| n.rsplit_once('.'))
                .is_some_and(|(job, dir)| !job.is_empty() && FIO_DIRECTIONS.contains(&dir)),
        }
    }
}

const fn fixed(name: &'static str, unit: &'static str, better: Better, about: &'static str) -> MetricDecl {
    MetricDecl { name, naming: Naming::Fixed, unit, better, about }
}

const fn per_job(name: &'static str, unit: &'static str, better: Better, about: &'static str) -> MetricDecl {
    MetricDecl { name, naming: Naming::PerJobDirection, unit, better, about }
}

use Better::{Higher, Lower};

pub const TIME: MetricDecl = fixed(
    "time",
    "s",
    Lower,
    "Wall-clock time of the step's timed region (what the step's description says it times).",
);
pub const THROUGHPUT: MetricDecl = fixed(
    "throughput",
    "MB/s",
    Higher,
    "The bytes the step read, wrote, copied or decompressed over its wall time, in decimal megabytes (10^6 bytes) per second, as dd reports them.",
);
pub const FILES_PER_S: MetricDecl = fixed("files_per_s", "files/s", Higher, "Files copied per second of wall time.");
pub const ENTRIES_PER_S: MetricDecl = fixed(
    "entries_per_s",
    "entries/s",
    Higher,
    "Entries listed (readdir, lstat, the ACL check) per second of wall time.",
);
pub const USER: MetricDecl = fixed(
    "user",
    "s",
    Lower,
    "CPU time in user mode over the timed region: the agent's and its children's (getrusage).",
);
pub const SYS: MetricDecl = fixed(
    "sys",
    "s",
    Lower,
    "CPU time in the kernel over the timed region: the agent's and its children's (getrusage).",
);

pub const LATENCY_FIRST: MetricDecl = fixed(
    "latency_first",
    "µs",
    Lower,
    "The first file's check: identical ACLs share one xattr block (ext2/3/4), so from a cold cache only this one reads it.",
);
pub const LATENCY_MEAN: MetricDecl = fixed("latency_mean", "µs", Lower, "The mean of every file's check.");
pub const LATENCY_P50: MetricDecl = fixed("latency_p50", "µs", Lower, "The median of the files' checks.");
pub const LATENCY_P99: MetricDecl = fixed("latency_p99", "µs", Lower, "The 99th percentile of the files' checks.");
pub const CHECKS_TOTAL: MetricDecl =
    fixed("total", "s", Lower, "Every file's check added up (the `stat()` before each is not timed).");

pub const RELOCATION_RATE: MetricDecl = fixed(
    "throughput",
    "MB/s",
    Higher,
    "Data relocated per second: the bytes written to the devices that hold the volume afterwards (their I/O counters) over the step's wall time.",
);
pub const RELOCATED: MetricDecl = fixed(
    "relocated",
    "MB",
    Higher,
    "The bytes written to the devices that hold the volume afterwards, in decimal megabytes (10^6 bytes).",
);

pub const FIO_BW: MetricDecl =
    per_job("bw", "MB/s", Higher, "fio's bandwidth (`bw_bytes`) of the job in that direction, in decimal MB/s.");
pub const FIO_IOPS: MetricDecl = per_job("iops", "IO/s", Higher, "fio's I/O operations per second (`iops`).");
pub const FIO_CLAT_MEAN: MetricDecl =
    per_job("clat_mean", "µs", Lower, "The mean completion latency (fio's `clat_ns`).");
pub const FIO_CLAT_P50: MetricDecl = per_job(
    "clat_p50",
    "µs",
    Lower,
    "The median completion latency (absent when the job sets its own `percentile_list`).",
);
pub const FIO_CLAT_P99: MetricDecl = per_job(
    "clat_p99",
    "µs",
    Lower,
    "The 99th percentile of completion latency (absent when the job sets its own `percentile_list`).",
);
pub const FIO_CLAT_P99_9: MetricDecl = per_job(
    "clat_p99_9",
    "µs",
    Lower,
    "The 99.9th percentile of completion latency (absent when the job sets its own `percentile_list`).",
);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_fixed_metric_matches_its_name_unit_and_direction_only() {
        assert!(TIME.matches("time", "s", Lower));
        assert!(!TIME.matches("time", "ms", Lower));
        assert!(!TIME.matches("time", "s", Higher));
        assert!(!TIME.matches("times", "s", Lower));
    }

    #[test]
    fn a_per_job_metric_matches_any_job_and_a_direction_fio_reports() {
        assert_eq!(FIO_BW.per_job("rand.read", "read"), "rand.read.read.bw");
        assert!(FIO_BW.matches(&FIO_BW.per_job("rand.read", "read"), "MB/s", Higher));
        assert!(FIO_BW.matches("w#1.mixed.bw", "MB/s", Higher));
        assert!(!FIO_BW.matches("w.sideways.bw", "MB/s", Higher), "not a direction");
        assert!(!FIO_BW.matches(".read.bw", "MB/s", Higher), "no job");
        assert!(!FIO_BW.matches("bw", "MB/s", Higher));
        assert!(!FIO_BW.matches("w.read.xbw", "MB/s", Higher));
        assert_eq!(FIO_CLAT_P99.shown_name(), "JOB.DIRECTION.clat_p99");
    }
}
