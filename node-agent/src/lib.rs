//! benchrig-agent: the process benchrig runs on each host, speaking frames on
//! stdin/stdout. Synchronous std Rust with pure-Rust dependencies so it
//! builds statically for every architecture with no C toolchain.

/// A line on stderr for whoever reads the agent's log (the orchestrator
/// forwards it). Never `eprintln!`, which panics when stderr is gone (the
/// connection died): that would kill the agent before it releases what it
/// set up.
#[macro_export]
macro_rules! say {
    ($($arg:tt)*) => {{
        use std::io::Write as _;
        let _ = writeln!(std::io::stderr(), $($arg)*);
    }};
}

pub mod acl;
pub mod actions;
pub mod boot;
pub mod buffer;
pub mod builds;
pub mod cache;
pub mod cgroup;
pub mod cmd;
pub mod compress;
pub mod content;
pub mod dispatch;
pub mod exports;
pub mod facts;
pub mod fs_name;
pub mod journal;
pub mod kernel;
pub mod kernel_settings;
pub mod kmsg;
pub mod ledger;
pub mod measure;
pub mod monitor;
pub mod needs;
pub mod outbox;
pub mod real_device;
pub mod safety;
pub mod scratch;
pub mod services;
pub mod session;
pub mod signature;
pub mod state;
pub mod supervisor;
pub mod sysfs;
pub mod tools;
pub mod treegen;
pub mod undo;
pub mod workloads;

/// The sha256 the running executable's name carries (`benchrig-agent-<sha256>`,
/// the content-addressed name it was uploaded under), if it has one.
pub fn named_sha256() -> Option<String> {
    let exe = std::fs::read_link("/proc/self/exe").ok()?;
    builds::sha_of(exe.file_name()?.to_str()?).map(str::to_string)
}

/// sha256 of the running executable, so the orchestrator can verify it runs what it pushed.
pub fn self_sha256() -> std::io::Result<String> {
    use sha2::{Digest, Sha256};
    let bytes = std::fs::read("/proc/self/exe")?;
    Ok(benchrig_wire::hex(&Sha256::digest(&bytes)))
}
