//! Monitors: what the host's disks, CPUs, memory and pressure did while a
//! measured step's timed region ran, read from /proc (no sysstat needed on
//! the host) and reduced with `iostat -x`'s formulas.
//!
//! One job per file: `counter` is how a counter advances (32-bit wraps),
//! `diskstats`, `cpu`, `meminfo`, `vmstat` and `pressure` parse one /proc
//! file each and hold its interval formulas, `sampler` is the thread that
//! reads them every interval, and `watch` carries a step's request for
//! monitors to the `measure::Meter` that starts and stops the sampler.
//!
//! Tests: captured snapshots (x86_64, the i686 `old` host, a 32-bit wrap)
//! in `tests/data/monitor/`, and `tests/monitor_oracle.rs`, which checks
//! every figure against `iostat -x` on the same snapshots.

pub mod counter;
pub mod cpu;
pub mod diskstats;
pub mod meminfo;
pub mod pressure;
pub mod sampler;
pub mod vmstat;
pub mod watch;

pub use sampler::Sampler;
pub use watch::Watch;
