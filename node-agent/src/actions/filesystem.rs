//! Setup: make a fresh filesystem on a scratch device and mount it.
//!
//! Order matters for safety: everything that can say "no" (listed? tool?
//! kernel? safety rules?) runs before the one step that writes (mkfs).
//! The kernel is asked before the tool (`needs::check`, from `Action::host_needs`):
//! "the kernel has no reiserfs support" is the reason a person needs.
//!
//! Recorded with the cell: the mkfs version and the filesystem's own
//! description (`dumpe2fs -h`, `xfs_info`, `btrfs filesystem show`). A
//! mount that fails carries what the kernel logged about the device, which
//! says why where mount(8) does not.

use crate::fs_name::{self, FsName};
use crate::kernel;
use crate::ledger::{self, Made};
use crate::outbox::StepCtx;
use crate::real_device::RealDevice;
use crate::safety::DeviceProbe;
use crate::scratch::{self, ScratchBlock};
use crate::state::{HostState, Mounted};
use crate::undo::detach_loop;
use crate::{cmd, facts, needs, tools};
use benchrig_wire::messages::{AgentError, LogLevel};
use benchrig_wire::scratch::{ScratchDevice, ScratchKind};
use benchrig_wire::steps::{Action, FilesystemArgs, FsProfile, StepOutput};
use serde_json::json;
use std::path::Path;
use std::time::Instant;

pub fn run(st: &mut HostState, ctx: &StepCtx, args: &FilesystemArgs) -> Result<StepOutput, AgentError> {
    let entry = scratch::listed(st, &args.device)?;
    let profile = &args.profile;
    // A failed teardown must not leave two cells stacked on one device.
    if st.mounted.iter().any(|m| m.scratch == entry.name) {
        ctx.log(LogLevel::Warn, format!("`{}` was still set up; releasing it first", entry.name));
        st.release(Some(&entry.name)).map_err(AgentError::failed)?;
    }
    if entry.kind == ScratchKind::Directory {
        return use_directory(st, &entry, profile);
    }
    let Some(fstype) = profile.fstype.as_deref() else {
        return Err(AgentError::unsupported(format!(
            "profile `{}` uses a scratch directory as it is, but `{}` is a device",
            profile.name, entry.name
        )));
    };
    if profile.mkfs.is_empty() {
        return Err(AgentError::bad_request("profile has no mkfs command"));
    }
    // The kernel's support for it, then its mkfs.
    needs::check(st, &Action::Filesystem(args.clone()))?;

    // A device named by its label or UUID keeps that name through the format, or is not formatted.
    let keep = fs_name::keep(FsName::of(&entry.path).as_ref(), &profile.mkfs).map_err(AgentError::unsupported)?;

    // Listed, attached if an image, every safety rule: the one way to a device mkfs may write.
    let block = scratch::resolve_and_check(st, &entry)?;
    // From here on an attached loop device is ours to detach on every error path.
    let result = format_and_mount(st, ctx, &entry, profile, fstype, &block, &keep);
    if result.is_err() {
        if let Some(dev) = &block.attached {
            let _ = detach_loop(dev);
        }
    }
    result
}

fn format_and_mount(
    st: &mut HostState,
    ctx: &StepCtx,
    entry: &ScratchDevice,
    profile: &FsProfile,
    fstype: &str,
    block: &ScratchBlock,
    keep: &fs_name::Keep,
) -> Result<StepOutput, AgentError> {
    let (dev, real_path) = (&block.kernel_name, &block.path);
    ctx.check_cancel()?;

    let mut mkfs_argv = profile.mkfs.clone();
    mkfs_argv.push(real_path.to_string_lossy().into_owned());
    // What runs names the UUID and a kept label too; what is recorded (and compared) does not.
    let mut run_argv = announce_mkfs(st, ctx, &[(dev, real_path)], fstype, &profile.mkfs, keep.uuid.as_deref());
    run_argv.extend(keep.args.iter().cloned());
    run_argv.push(real_path.to_string_lossy().into_owned());
    let t0 = Instant::now();
    let out = cmd::run(&run_argv).map_err(AgentError::failed)?;
    if !out.ok() {
        return Err(AgentError::unsupported(format!("{} refused: {}", mkfs_argv[0], out.reason())));
    }
    let mkfs_s = t0.elapsed().as_secs_f64();
    record_made(st, ctx, dev, real_path);

    let mountpoint = st.mountpoint_for(&entry.name);
    std::fs::create_dir_all(&mountpoint)
        .map_err(|e| AgentError::failed(format!("mkdir {}: {e}", mountpoint.display())))?;
    let mut mount_argv = vec!["mount".to_string(), "-t".into(), fstype.into()];
    if !profile.mount_options.is_empty() {
        mount_argv.extend(["-o".into(), profile.mount_options.join(",")]);
    }
    mount_argv.extend([real_path.to_string_lossy().into_owned(), mountpoint.to_string_lossy().into_owned()]);
    let log_before = kernel::log_now();
    let out = st.mount(&mount_argv, &mountpoint).map_err(AgentError::failed)?;
    if !out.ok() {
        // mount(8) only says "wrong fs type, bad option, bad superblock";
        // the kernel's log says which (XFS: "V4 format not supported").
        let reason = log_before.and_then(|n| kernel::logged_about(dev, n)).unwrap_or_else(|| out.reason());
        // Only the kernel lacking the filesystem or the format is
        // "unsupported"; a bad option is a mistake to fix.
        return Err(if reason.contains("unknown filesystem type") || reason.contains("not supported") {
            AgentError::unsupported(format!("mount -t {fstype} refused: {reason}"))
        } else {
            AgentError::failed(format!("`{}` failed: {reason}", mount_argv.join(" ")))
        });
    }
    st.mounted.push(Mounted {
        scratch: entry.name.clone(),
        mountpoint: mountpoint.clone(),
        devices: vec![dev.clone()],
        mounted_by_us: true,
        created_dir: false,
        loop_devices: block.attached.iter().cloned().collect(),
    });

    let mut out = StepOutput::default();
    let info = &mut out.info;
    info.insert("scratch".into(), entry.name.clone().into());
    info.insert("device".into(), real_path.to_string_lossy().into_owned().into());
    info.insert("device_facts".into(), json!(facts::block_device(&st.view, dev)));
    // A partition has no model, queue or scheduler of its own: record its disk's.
    if let Some(disk) = st.view.is_partition(dev).then(|| st.view.parent_disk(dev)).flatten() {
        info.insert("disk_facts".into(), json!(facts::block_device(&st.view, &disk)));
    }
    info.insert("mountpoint".into(), mountpoint.to_string_lossy().into_owned().into());
    info.insert("profile".into(), profile.name.clone().into());
    info.insert("fstype".into(), fstype.into());
    info.insert("mkfs_command".into(), mkfs_argv.join(" ").into());
    info.insert("mkfs_version".into(), json!(tools::version(&profile.mkfs[0])));
    info.insert("mkfs_seconds".into(), json!(mkfs_s));
    info.insert("mount_options".into(), profile.mount_options.join(",").into());
    info.insert("fs_dump".into(), json!(fs_dump(fstype, real_path, &mountpoint)));
    Ok(out)
}

fn use_directory(st: &mut HostState, entry: &ScratchDevice, profile: &FsProfile) -> Result<StepOutput, AgentError> {
    if profile.fstype.is_some() {
        return Err(AgentError::unsupported(format!(
            "scratch `{}` is a directory: profile `{}` needs a device to format (use profile `existing`)",
            entry.name, profile.name
        )));
    }
    // A fresh directory per cell, removed on release: the closest a
    // directory comes to a fresh filesystem, and nothing is left in it.
    let dir = scratch::expand_home(&entry.path).join(format!("benchrig-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).map_err(|e| AgentError::failed(format!("mkdir {}: {e}", dir.display())))?;
    let device = st.view.device_for_path(&dir);
    st.mounted.push(Mounted {
        scratch: entry.name.clone(),
        mountpoint: dir.clone(),
        devices: device.clone().into_iter().collect(),
        mounted_by_us: false,
        created_dir: true,
        loop_devices: Vec::new(),
    });
    let mut out = StepOutput::default();
    out.info.insert("scratch".into(), entry.name.clone().into());
    out.info.insert("mountpoint".into(), dir.to_string_lossy().into_owned().into());
    out.info.insert("profile".into(), profile.name.clone().into());
    out.info.insert("device".into(), json!(device));
    Ok(out)
}

/// Before mkfs: choose the new filesystem's UUID (`uuid`, where the device
/// is named by the one it has) and write it in the ledger
/// for each device (kernel name, path), beside the benchrig filesystem the
/// device carries now, so that a session lost mid-mkfs leaves a device
/// benchrig still recognises, whichever of the two it holds. Returns the
/// argv to run before the devices: `mkfs` with the UUID option, or as
/// given where the program has none (then only `record_made` records).
pub(crate) fn announce_mkfs(
    st: &HostState,
    ctx: &StepCtx,
    devices: &[(&str, &Path)],
    fstype: &str,
    mkfs: &[String],
    uuid: Option<&str>,
) -> Vec<String> {
    let mut argv = mkfs.to_vec();
    let chosen = uuid.map(str::to_string).or_else(ledger::new_uuid);
    let Some((uuid, option)) = chosen.and_then(|u| Some((u.clone(), fs_name::uuid_option(&mkfs[0], &u)?))) else {
        return argv;
    };
    for (dev, path) in devices {
        let probe = RealDevice::new(st, dev, path);
        // Only a filesystem the ledger already vouches for may stay vouched for.
        let before = probe.made_here().ok().flatten();
        let now_on_it = probe.signatures().ok().and_then(|f| f.into_iter().find_map(|s| s.uuid));
        let previous = now_on_it.filter(|u| before.as_ref().is_some_and(|b| b.uuids().any(|m| m == u)));
        let made = Made {
            fstype: fstype.to_string(),
            uuid: uuid.clone(),
            made_at: ledger::now(),
            path: path.to_string_lossy().into_owned(),
            previous,
        };
        if let Err(e) = st.ledger.record(&probe.identity, made) {
            ctx.log(LogLevel::Warn, format!("cannot record the mkfs to come: {e}"));
        }
    }
    argv.extend(option);
    argv
}

/// Note in the host's ledger the filesystem mkfs just made on a device
/// (kernel name `dev`), so a later cell may format over it without `wipe`.
/// Failing to is no error: the next format is then refused, and says why.
pub(crate) fn record_made(st: &HostState, ctx: &StepCtx, dev: &str, path: &Path) {
    if !RealDevice::new(st, dev, path).record_filesystem(ctx) {
        ctx.log(
            LogLevel::Warn,
            format!(
                "cannot read the UUID of the filesystem made on {}: formatting over it will need `wipe: true`",
                path.display()
            ),
        );
    }
}

/// The filesystem's own description of itself, recorded with the cell.
pub(crate) fn fs_dump(fstype: &str, dev: &Path, mountpoint: &Path) -> Option<String> {
    let argv: Vec<String> = match fstype {
        "ext2" | "ext3" | "ext4" => vec!["dumpe2fs".into(), "-h".into(), dev.to_string_lossy().into()],
        "xfs" => vec!["xfs_info".into(), mountpoint.to_string_lossy().into()],
        "btrfs" => vec!["btrfs".into(), "filesystem".into(), "show".into(), mountpoint.to_string_lossy().into()],
        _ => return None,
    };
    let out = cmd::run(&argv).ok().filter(|o| o.ok())?;
    let mut text = out.stdout;
    let mut cut = text.len().min(16 * 1024);
    while !text.is_char_boundary(cut) {
        cut -= 1;
    }
    text.truncate(cut);
    Some(text)
}
