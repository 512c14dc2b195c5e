//! Controlling system services: `systemctl` where systemd is the init,
//! SysV `service` (or the init.d script) elsewhere — old boxes run both.

use crate::cmd;
use benchrig_wire::steps::ServiceState;
use std::path::Path;
use std::time::Instant;

#[derive(Debug, thiserror::Error)]
pub enum ServiceError {
    /// No such service, or no way to control services on this host.
    #[error("{0}")]
    Missing(String),
    #[error("{0}")]
    Failed(String),
}

/// What was done, by whom, in how long.
pub struct Done {
    pub manager: &'static str,
    pub seconds: f64,
}

/// A name that is one service, not an option or a path.
pub fn valid_name(name: &str) -> bool {
    !name.is_empty() && !name.starts_with('-') && name.chars().all(|c| c.is_ascii_alphanumeric() || "@._-".contains(c))
}

fn systemd() -> bool {
    // sd_booted(3): this directory exists only when systemd is PID 1.
    Path::new("/run/systemd/system").is_dir() && cmd::which("systemctl").is_some()
}

fn verb(state: ServiceState) -> &'static str {
    match state {
        ServiceState::Started => "start",
        ServiceState::Stopped => "stop",
        ServiceState::Restarted => "restart",
        ServiceState::Reloaded => "reload",
    }
}

/// Bring `name` to `state` and wait for the manager to say it is done.
pub fn control(name: &str, state: ServiceState) -> Result<Done, ServiceError> {
    if !valid_name(name) {
        return Err(ServiceError::Failed(format!("bad service name `{name}`")));
    }
    let (manager, argv): (&'static str, Vec<String>) = if systemd() {
        ("systemctl", vec!["systemctl".into(), verb(state).into(), name.into()])
    } else if cmd::which("service").is_some() {
        ("service", vec!["service".into(), name.into(), verb(state).into()])
    } else if Path::new("/etc/init.d").join(name).exists() {
        ("init.d", vec![format!("/etc/init.d/{name}"), verb(state).into()])
    } else {
        return Err(ServiceError::Missing("neither systemctl nor service(8) is available on this host".into()));
    };
    let t0 = Instant::now();
    let out = cmd::run(&argv).map_err(ServiceError::Failed)?;
    let seconds = t0.elapsed().as_secs_f64();
    if out.ok() {
        return Ok(Done { manager, seconds });
    }
    let reason = out.reason();
    let missing = ["not found", "not-found", "unrecognized service", "No such file"];
    Err(if missing.iter().any(|m| reason.contains(m)) {
        ServiceError::Missing(format!("no service `{name}` on this host ({reason})"))
    } else {
        ServiceError::Failed(format!("`{}` failed: {reason}", argv.join(" ")))
    })
}

/// Whether the kernel NFS server runs: it has threads.
pub fn nfsd_running() -> bool {
    std::fs::read_to_string("/proc/fs/nfsd/threads").is_ok_and(|t| t.trim().parse::<u32>().is_ok_and(|n| n > 0))
}

/// The kernel NFS server's service: one name under systemd, the package's
/// init script under SysV.
pub fn nfs_server_name() -> &'static str {
    if systemd() {
        "nfs-server"
    } else {
        "nfs-kernel-server"
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_service_name_cannot_be_an_option_or_a_path() {
        assert!(valid_name("nfs-server"));
        assert!(valid_name("getty@tty1.service"));
        assert!(!valid_name("--now"));
        assert!(!valid_name("../../bin/sh"));
        assert!(!valid_name("a b"));
        assert!(!valid_name(""));
    }
}
