//! Measured workloads, one per file. Each times only what it claims to
//! measure and returns metrics plus the [`Usage`](benchrig_wire::steps::Usage)
//! of its timed region.

pub mod seq_read;
pub mod seq_write;

use benchrig_wire::steps::{Better, Metric};

pub(crate) fn metric(name: &str, value: f64, unit: &str, better: Better) -> Metric {
    Metric { name: name.into(), value, unit: unit.into(), better }
}

/// Decimal megabytes per second, as dd and the papers we reproduce report them.
pub(crate) fn mb_per_s(bytes: u64, seconds: f64) -> f64 {
    if seconds > 0.0 {
        bytes as f64 / 1e6 / seconds
    } else {
        0.0
    }
}

/// Open flags for O_DIRECT through std's OpenOptions.
pub(crate) fn direct_flag(direct: bool) -> i32 {
    if direct {
        rustix::fs::OFlags::DIRECT.bits() as i32
    } else {
        0
    }
}
