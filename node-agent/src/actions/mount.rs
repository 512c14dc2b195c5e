//! A filesystem served from elsewhere (sshfs, NFS), mounted under the work
//! dir so workloads can use it as a `target`. Nothing is formatted, and a
//! local block device is refused: those go through `filesystem` and its
//! safety rules.

use crate::state::{HostState, Mounted};
use crate::{cmd, kernel};
use benchrig_wire::args::MountArgs;
use benchrig_wire::messages::AgentError;
use benchrig_wire::steps::StepOutput;
use std::os::unix::fs::FileTypeExt;
use std::time::Instant;

pub fn run(st: &mut HostState, args: &MountArgs) -> Result<StepOutput, AgentError> {
    let good = |c: char| c.is_ascii_alphanumeric() || "._-".contains(c);
    if args.name.is_empty() || args.name.starts_with('.') || !args.name.chars().all(good) {
        return Err(AgentError::bad_request(format!("bad mount name `{}`", args.name)));
    }
    if st.scratch.iter().any(|s| s.name == args.name) {
        return Err(AgentError::bad_request(format!("`{}` is a scratch device's name", args.name)));
    }
    if std::fs::metadata(&args.source).is_ok_and(|m| m.file_type().is_block_device()) {
        return Err(AgentError::refused(
            "block_device",
            format!("{} is a local block device: use a `filesystem` step on a scratch device", args.source),
        ));
    }
    network_fs_supported(st, &args.fstype)?;
    if st.mounted.iter().any(|m| m.scratch == args.name) {
        st.release(Some(&args.name)).map_err(AgentError::failed)?;
    }
    let mountpoint = st.work_dir.join("mnt").join(&args.name);
    std::fs::create_dir_all(&mountpoint)
        .map_err(|e| AgentError::failed(format!("mkdir {}: {e}", mountpoint.display())))?;
    let mp = mountpoint.to_string_lossy().into_owned();
    let mut argv = vec!["mount".to_string(), "-t".into(), args.fstype.clone()];
    if !args.options.is_empty() {
        argv.extend(["-o".into(), args.options.join(",")]);
    }
    argv.extend([args.source.clone(), mp.clone()]);
    let t0 = Instant::now();
    let out = cmd::run(&argv).map_err(AgentError::failed)?;
    if !out.ok() {
        let reason = out.reason();
        let _ = std::fs::remove_dir(&mountpoint);
        let helper_missing = reason.contains("helper program");
        return Err(if reason.contains("unknown filesystem type") || helper_missing {
            AgentError::unsupported(format!("mount -t {} refused: {reason}", args.fstype))
        } else {
            AgentError::failed(format!("`{}` failed: {reason}", argv.join(" ")))
        });
    }
    st.mounted.push(Mounted {
        scratch: args.name.clone(),
        mountpoint,
        devices: Vec::new(),
        mounted_by_us: true,
        created_dir: false,
        loop_devices: Vec::new(),
    });
    let mut out = StepOutput::default();
    out.info.insert("mountpoint".into(), mp.into());
    out.info.insert("source".into(), args.source.clone().into());
    out.info.insert("mount_seconds".into(), serde_json::json!(t0.elapsed().as_secs_f64()));
    Ok(out)
}

/// NFS needs the kernel's client and mount.nfs (nfs-common): without them
/// the host cannot take part, which is "unsupported", not a failure.
fn network_fs_supported(st: &HostState, fstype: &str) -> Result<(), AgentError> {
    if !matches!(fstype, "nfs" | "nfs4") {
        return Ok(());
    }
    kernel::supports_filesystem(&st.view, fstype)?;
    if cmd::which("mount.nfs").is_none() {
        return Err(AgentError::unsupported("mount.nfs is not installed on this host (nfs-common)"));
    }
    Ok(())
}
