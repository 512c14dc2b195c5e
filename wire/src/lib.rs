//! What `benchrig` and `benchrig-agent` say to each other.
//!
//! Both binaries depend on this crate and nothing else defines a message, so
//! the two sides cannot drift apart silently: a change to a message that an
//! older peer cannot read bumps [`PROTOCOL_VERSION`], and the handshake
//! refuses a mismatch.

pub mod args;
pub mod facts;
pub mod fio;
pub mod frame;
pub mod introspect;
pub mod kernel_log;
pub mod messages;
pub mod monitor;
pub mod scratch;
pub mod steps;
pub mod units;

/// Bumped on every incompatible change to a frame or message (3: the
/// orchestrator's `Alive` heartbeat, `Configured` says what was restored).
pub const PROTOCOL_VERSION: u32 = 3;

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
