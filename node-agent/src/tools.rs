//! The host tools benchrig cares about and how each one states its version.

use crate::cmd;

pub use benchrig_wire::facts::KNOWN_TOOLS as KNOWN;

/// The first line a tool prints about its version (stdout or stderr: mke2fs uses stderr).
pub fn version(prog: &str) -> Option<String> {
    let flag = KNOWN.iter().find(|(p, _)| *p == prog).map(|(_, f)| *f).unwrap_or("--version");
    let out = cmd::run(&[prog, flag]).ok()?;
    out.stdout.lines().chain(out.stderr.lines()).map(str::trim).find(|l| !l.is_empty()).map(str::to_string)
}
