//! What the running kernel can do and what it says: whether it has a
//! filesystem (asking modprobe for one not loaded yet), and what it logged
//! about a device, which says why a mount failed where mount(8) does not.

use crate::sysfs::SysView;
use crate::{cmd, facts};
use benchrig_wire::messages::AgentError;

/// `/proc/filesystems`, after asking modprobe (as root) for a module not yet loaded.
pub fn supports_filesystem(view: &SysView, fstype: &str) -> Result<(), AgentError> {
    let listed = || facts::kernel_filesystems(view).iter().any(|f| f == fstype);
    if listed() {
        return Ok(());
    }
    if rustix::process::geteuid().is_root() && cmd::which("modprobe").is_some() {
        let _ = cmd::run(&["modprobe", "-q", fstype]);
        if listed() {
            return Ok(());
        }
    }
    Err(AgentError::unsupported(format!("the kernel ({}) has no {fstype} support", facts::kernel_release())))
}

/// The time stamp of the kernel log's last line: what came after it is new.
pub fn log_now() -> Option<f64> {
    log().and_then(|l| l.last().and_then(|x| log_time(x)))
}

/// What the kernel logged about a device after time `since`.
pub fn logged_about(dev: &str, since: f64) -> Option<String> {
    let tag = format!("({dev})");
    let log = log()?;
    let line = log.iter().rev().take_while(|l| log_time(l).is_none_or(|t| t > since)).find(|l| l.contains(&tag))?;
    // "[ 9501.03] XFS (loop2): Deprecated V4 ..." → "XFS (loop2): Deprecated V4 ..."
    Some(line.split_once("] ").map(|(_, m)| m).unwrap_or(line).trim().to_string())
}

/// The kernel log (`dmesg`, root only), a line each.
fn log() -> Option<Vec<String>> {
    let out = cmd::run(&["dmesg"]).ok().filter(|o| o.ok())?;
    Some(out.stdout.lines().map(str::to_string).collect())
}

/// A log line's timestamp (`[ 9501.033223] ...`): the ring buffer drops old
/// lines, so counting lines cannot tell new from old.
fn log_time(line: &str) -> Option<f64> {
    line.strip_prefix('[')?.split(']').next()?.trim().parse().ok()
}

#[cfg(test)]
mod log_tests {
    use super::log_time;

    #[test]
    fn kernel_log_timestamps() {
        assert_eq!(log_time("[ 9501.033223] XFS (loop2): Deprecated V4"), Some(9501.033223));
        assert_eq!(log_time("no stamp"), None);
    }
}
