//! What the agent watches while a measured step runs: the host's disks,
//! CPU, memory and pressure, sampled at an interval, as column-oriented
//! time series (one `Vec` per figure, one entry per interval) so a long
//! step stays a small frame.
//!
//! The agent computes the figures (iostat -x's formulas for disks); the
//! orchestrator stores them with the sample and summarises them.

use serde::{Deserialize, Serialize};

/// Asked for in a `StepRequest`; `None` there means no monitors.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct MonitorConfig {
    /// Sampling interval in milliseconds (a play's `monitors: <seconds>`, 1 s by default).
    pub interval_ms: u64,
}

/// The series of one measured step. Entry `i` of every series covers the
/// interval ending at `t[i]` seconds after the step's timed region began;
/// the last interval ends with the region, so it may be shorter than the
/// others and a step shorter than the interval still has one entry.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct MonitorSeries {
    pub interval_ms: u64,
    pub t: Vec<f64>,
    /// Every block device under the step's target (the devices `Usage`
    /// counts), as `iostat -x` figures.
    #[serde(default)]
    pub devices: Vec<DeviceSeries>,
    /// `/proc/stat`, all CPUs of the host. A series whose /proc file could
    /// not be read when the region began is empty (the agent never fails a
    /// step over its monitors).
    pub cpu: CpuSeries,
    /// `/proc/meminfo`, the value at the end of each interval.
    pub memory: MemorySeries,
    /// `/proc/vmstat` rates.
    pub vm: VmSeries,
    /// `/proc/pressure/*`, absent on kernels without PSI (or with it off).
    #[serde(default)]
    pub pressure: Option<PressureSeries>,
}

/// One device's `iostat -x` figures per interval.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct DeviceSeries {
    pub device: String,
    /// Reads and writes completed per second (r/s, w/s).
    pub r_s: Vec<f64>,
    pub w_s: Vec<f64>,
    /// MB/s read and written (1 MB = 10^6 bytes, as benchrig's other MB/s).
    pub rmb_s: Vec<f64>,
    pub wmb_s: Vec<f64>,
    /// Average time a read / write took, queue included, in ms (r_await, w_await).
    pub r_await_ms: Vec<f64>,
    pub w_await_ms: Vec<f64>,
    /// Average queue length (aqu-sz).
    pub aqu_sz: Vec<f64>,
    /// Share of the interval the device was busy, 0–100 (%util; not
    /// capped, as iostat does not cap it: a little over 100 is clock skew).
    /// A device behind a blkio throttle (the lab's `old` and `hdd`) stays
    /// low: the throttle holds requests before they reach its queue.
    pub util_pct: Vec<f64>,
}

/// Shares of all CPUs' time in the interval, 0–100, as iostat's avg-cpu:
/// user without nice, sys with hard and soft interrupts (so the four need
/// not add up to 100: nice and steal are left out).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct CpuSeries {
    pub user_pct: Vec<f64>,
    pub sys_pct: Vec<f64>,
    pub iowait_pct: Vec<f64>,
    pub idle_pct: Vec<f64>,
}

/// Kibibytes, as `/proc/meminfo` gives them.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct MemorySeries {
    pub dirty_kb: Vec<f64>,
    pub writeback_kb: Vec<f64>,
    pub cached_kb: Vec<f64>,
}

/// Per second: kibibytes paged in and out, pages swapped in and out.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct VmSeries {
    pub pgpgin_kb_s: Vec<f64>,
    pub pgpgout_kb_s: Vec<f64>,
    pub pswpin_s: Vec<f64>,
    pub pswpout_s: Vec<f64>,
}

/// Share of the interval in which some (or all) tasks stalled, 0–100, from
/// the `total=` microsecond counters (not the kernel's own 10 s averages).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct PressureSeries {
    pub cpu_some_pct: Vec<f64>,
    pub io_some_pct: Vec<f64>,
    pub io_full_pct: Vec<f64>,
    pub memory_some_pct: Vec<f64>,
    pub memory_full_pct: Vec<f64>,
}
