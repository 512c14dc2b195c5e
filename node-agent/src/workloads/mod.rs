//! Measured workloads, one per file. Each times only what it claims to
//! measure and returns metrics plus the [`Usage`]
//! of its timed region.
//!
//! What they share lives here (MB/s and `transfer_output`, a target's file
//! and devices). Every metric is made from its declaration in
//! `benchrig_wire::metrics` (`Metric::of`).

pub mod acl_check;
pub mod cold_read;
pub mod copy_tree;
pub mod exec;
pub mod fio;
pub mod list_tree;
pub mod raw;
pub mod read_tree;
pub mod seq_read;
pub mod seq_write;
pub mod tree;

use crate::state::HostState;
use benchrig_wire::messages::AgentError;
use benchrig_wire::metrics::{THROUGHPUT, TIME};
use benchrig_wire::steps::{Metric, StepOutput, Usage};
use std::path::PathBuf;

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

/// The file a workload works on and the devices whose counters to read.
pub(crate) fn target_file(
    st: &HostState,
    target: Option<&str>,
    file: &str,
) -> Result<(PathBuf, Vec<String>), AgentError> {
    let t = st.target(target)?;
    Ok((t.mountpoint.join(file), t.devices.clone()))
}

/// A transfer's result: MB/s and seconds from the timed region, bytes moved.
pub(crate) fn transfer_output(bytes: u64, usage: Usage) -> StepOutput {
    let mut out = StepOutput::default();
    out.metrics.push(Metric::of(&THROUGHPUT, mb_per_s(bytes, usage.wall_s)));
    out.metrics.push(Metric::of(&TIME, usage.wall_s));
    out.info.insert("bytes".into(), bytes.into());
    out.usage = Some(usage);
    out
}
