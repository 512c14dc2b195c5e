//! A filesystem served from elsewhere (sshfs, NFS), mounted under the work
//! dir so workloads can use it as a `target`. Nothing is formatted, and a
//! local block device is refused: those go through `filesystem` and its
//! safety rules.

use crate::state::{HostState, Mounted};
use benchrig_wire::args::MountArgs;
use benchrig_wire::messages::AgentError;
use benchrig_wire::steps::{Action, StepOutput};
use std::os::unix::fs::FileTypeExt;
use std::time::Instant;

/// The filesystems `mount` mounts: served from elsewhere. A local one
/// (ext4 from `UUID=…`, an image with `-o loop`) would reach a device the
/// inventory never listed; those go through `filesystem`.
const NETWORK_FSTYPES: &[&str] =
    &["nfs", "nfs4", "fuse.sshfs", "sshfs", "cifs", "smb3", "9p", "virtiofs", "ceph", "glusterfs", "fuse.glusterfs"];

/// mount(8) options that mount something local or elsewhere than named.
const LOCAL_OPTIONS: &[&str] = &["loop", "bind", "rbind", "move", "remount", "offset", "sizelimit"];

pub fn run(st: &mut HostState, args: &MountArgs) -> Result<StepOutput, AgentError> {
    let good = |c: char| c.is_ascii_alphanumeric() || "._-".contains(c);
    if args.name.is_empty() || args.name.starts_with('.') || !args.name.chars().all(good) {
        return Err(AgentError::bad_request(format!("bad mount name `{}`", args.name)));
    }
    if st.scratch.iter().any(|s| s.name == args.name) {
        return Err(AgentError::bad_request(format!("`{}` is a scratch device's name", args.name)));
    }
    from_elsewhere(args)?;
    if std::fs::metadata(&args.source).is_ok_and(|m| m.file_type().is_block_device()) {
        return Err(AgentError::refused(
            "block_device",
            format!("{} is a local block device: use a `filesystem` step on a scratch device", args.source),
        ));
    }
    // The kernel's client and its mount helper (nfs), fuse and sshfs.
    crate::needs::check(st, &Action::Mount(args.clone()))?;
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
    let out = st.mount(&argv, &mountpoint).map_err(AgentError::failed)?;
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

/// A network filesystem, from a network source, without an option that
/// mounts something local: every local device goes through `filesystem`
/// and its safety rules.
fn from_elsewhere(args: &MountArgs) -> Result<(), AgentError> {
    let refuse = |why: String| {
        Err(AgentError::refused(
            "not_remote",
            format!("{why}: use a `filesystem` step on a scratch device for a local one"),
        ))
    };
    if !NETWORK_FSTYPES.contains(&args.fstype.as_str()) {
        return refuse(format!(
            "`mount` is for filesystems served from elsewhere ({}), not `{}`",
            NETWORK_FSTYPES.join(", "),
            args.fstype
        ));
    }
    let tag = ["UUID=", "LABEL=", "PARTUUID=", "PARTLABEL=", "ID="].iter().find(|t| args.source.starts_with(**t));
    if let Some(tag) = tag {
        return refuse(format!("source `{}` names a local device by its {}", args.source, tag.trim_end_matches('=')));
    }
    if args.source.starts_with('/') && !args.source.starts_with("//") {
        return refuse(format!("source `{}` is a local path", args.source));
    }
    for o in args.options.iter().flat_map(|o| o.split(',')) {
        let name = o.split_once('=').map_or(o, |(k, _)| k).trim();
        if LOCAL_OPTIONS.contains(&name) || name.starts_with("make-") || name.starts_with("X-mount.") {
            return refuse(format!("option `{o}` mounts something local or elsewhere than named"));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(fstype: &str, source: &str, options: &[&str]) -> MountArgs {
        MountArgs {
            name: "remote".into(),
            source: source.into(),
            fstype: fstype.into(),
            options: options.iter().map(|o| o.to_string()).collect(),
        }
    }

    /// Each way a `mount` step reached a local device on the main before.
    #[test]
    fn only_a_network_filesystem_from_a_network_source_is_mounted() {
        let refused = |a: MountArgs| from_elsewhere(&a).unwrap_err().message;
        assert!(refused(args("ext4", "UUID=0b7c", &[])).contains("not `ext4`"));
        assert!(refused(args("nfs", "LABEL=data", &[])).contains("names a local device by its LABEL"));
        assert!(refused(args("nfs", "PARTUUID=1-2", &[])).contains("by its PARTUUID"));
        assert!(refused(args("nfs", "/var/img", &[])).contains("is a local path"));
        assert!(refused(args("nfs", "srv:/x", &["vers=4", "loop"])).contains("option `loop`"));
        assert!(refused(args("nfs", "srv:/x", &["ro,bind"])).contains("option `bind`"));
        assert!(refused(args("fuse.sshfs", "u@h:/x", &["rbind"])).contains("option `rbind`"));
        assert!(refused(args("nfs", "srv:/x", &["X-mount.mkdir"])).contains("X-mount.mkdir"));
        for ok in [
            args("nfs", "10.77.0.21:/srv", &["vers=4.2", "proto=tcp"]),
            args("fuse.sshfs", "root@10.77.0.12:/x", &["IdentityFile=/k", "StrictHostKeyChecking=yes"]),
            args("cifs", "//server/share", &["ro"]),
        ] {
            assert!(from_elsewhere(&ok).is_ok(), "{ok:?}");
        }
    }
}
