//! What `benchrig` and `benchrig-agent` say to each other.
//!
//! Both binaries depend on this crate and nothing else defines a message, so
//! the two sides cannot drift apart silently: a change to a message that an
//! older peer cannot read bumps [`PROTOCOL_VERSION`], and the handshake
//! refuses a mismatch.

pub mod args;
pub mod boot;
pub mod facts;
pub mod fio;
pub mod frame;
pub mod introspect;
pub mod kernel_log;
pub mod messages;
pub mod metrics;
pub mod monitor;
pub mod scratch;
pub mod steps;
pub mod units;

/// The schemars the `schema` feature derives with, re-exported so the
/// orchestrator's generator is of the same version.
#[cfg(feature = "schema")]
pub use schemars;

/// The commit benchrig and its agents were built from (`build.rs`), as
/// their `--version` says.
pub const COMMIT: &str = env!("BENCHRIG_COMMIT");
/// The Rust target this binary was built for (`i586-unknown-linux-musl`).
pub const TARGET: &str = env!("BENCHRIG_TARGET");

/// `0.1.0 (commit 1a2b3c4d5e6f)`: the version both binaries print.
pub const VERSION: &str = concat!(env!("CARGO_PKG_VERSION"), " (commit ", env!("BENCHRIG_COMMIT"), ")");

/// Bumped on every incompatible change to a frame or message (3: the
/// orchestrator's `Alive` heartbeat, `Configured` says what was restored;
/// 4: booting a kernel, `BootState` and `Boot`).
pub const PROTOCOL_VERSION: u32 = 5;

/// Lower-case hex of a byte string (a sha256 digest, in practice).
pub fn hex(bytes: &[u8]) -> String {
    const DIGITS: &[u8; 16] = b"0123456789abcdef";
    let mut s = String::with_capacity(bytes.len() * 2);
    for b in bytes {
        s.push(DIGITS[(b >> 4) as usize] as char);
        s.push(DIGITS[(b & 15) as usize] as char);
    }
    s
}
