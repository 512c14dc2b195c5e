//! btrfs volumes over several scratch devices: make one, add a device
//! (with a full balance), remove one. Every device passes the same safety
//! rules as a `filesystem` device before anything writes to it.
//!
//! Speed of add/remove, as in the Reiser5 benchmark this reproduces: data
//! relocated / time of the operation, a full sync included; the bytes moved
//! come from the devices' I/O counters and are stored with the sample.

use super::filesystem::{announce_mkfs, fs_dump, record_made};
use crate::measure::Meter;
use crate::outbox::StepCtx;
use crate::scratch::{self, ScratchBlock};
use crate::state::{HostState, Mounted};
use crate::undo::detach_loop;
use crate::{cmd, tools};
use benchrig_wire::args::{RaidProfile, VolumeArgs, VolumeChangeArgs};
use benchrig_wire::messages::AgentError;
use benchrig_wire::metrics::{RELOCATED, RELOCATION_RATE, TIME};
use benchrig_wire::scratch::ScratchKind;
use benchrig_wire::steps::{Metric, StepOutput};
use serde_json::json;
use std::path::PathBuf;

fn profile_name(p: RaidProfile) -> &'static str {
    match p {
        RaidProfile::Single => "single",
        RaidProfile::Raid0 => "raid0",
        RaidProfile::Raid1 => "raid1",
        RaidProfile::Raid10 => "raid10",
    }
}

/// A scratch device ready to be written: attached (if an image) and
/// checked; on failure nothing stays attached.
fn member(st: &HostState, name: &str) -> Result<ScratchBlock, AgentError> {
    let entry = scratch::listed(st, name)?;
    if entry.kind == ScratchKind::Directory {
        return Err(AgentError::unsupported(format!("scratch `{name}` is a directory: a volume needs devices")));
    }
    if let Some(fs) = crate::fs_name::FsName::of(&entry.path) {
        return Err(AgentError::unsupported(format!(
            "scratch `{name}` is named by its {}, which a volume over several devices cannot keep for each",
            fs.describe()
        )));
    }
    scratch::resolve_and_check(st, &entry)
}

pub fn make(st: &mut HostState, ctx: &StepCtx, args: &VolumeArgs) -> Result<StepOutput, AgentError> {
    if args.devices.is_empty() {
        return Err(AgentError::bad_request("a volume needs at least one device"));
    }
    // A failed teardown must not leave a device in two volumes.
    for name in &args.devices {
        if st.mounted.iter().any(|m| m.scratch == *name) {
            st.release(Some(name)).map_err(AgentError::failed)?;
        }
    }
    let mut members: Vec<ScratchBlock> = Vec::new();
    let detach_all = |members: &[ScratchBlock]| {
        for m in members {
            if let Some(l) = &m.attached {
                let _ = detach_loop(l);
            }
        }
    };
    for name in &args.devices {
        match member(st, name) {
            Ok(m) => members.push(m),
            Err(e) => {
                detach_all(&members);
                return Err(e);
            }
        }
    }
    ctx.check_cancel().inspect_err(|_| detach_all(&members))?;

    let mut mkfs =
        vec!["mkfs.btrfs".to_string(), "-f".into(), "-q".into(), "-d".into(), profile_name(args.data).into()];
    if let Some(m) = args.metadata {
        mkfs.extend(["-m".into(), profile_name(m).into()]);
    }
    let devices: Vec<(&str, &std::path::Path)> =
        members.iter().map(|m| (m.kernel_name.as_str(), m.path.as_path())).collect();
    let mut run = announce_mkfs(st, ctx, &devices, "btrfs", &mkfs, None);
    let paths = members.iter().map(|m| m.path.to_string_lossy().into_owned());
    mkfs.extend(paths.clone());
    run.extend(paths);
    let out = cmd::run(&run).map_err(AgentError::failed)?;
    if !out.ok() {
        detach_all(&members);
        return Err(AgentError::unsupported(format!("mkfs.btrfs refused: {}", out.reason())));
    }
    for m in &members {
        record_made(st, ctx, &m.kernel_name, &m.path);
    }
    let mountpoint = st.mountpoint_for(&members[0].name);
    std::fs::create_dir_all(&mountpoint)
        .map_err(|e| AgentError::failed(format!("mkdir {}: {e}", mountpoint.display())))?;
    // No udev here necessarily: name every member so the kernel assembles the volume.
    let mut options: Vec<String> = members.iter().map(|m| format!("device={}", m.path.display())).collect();
    options.extend(args.mount_options.iter().cloned());
    let mp = mountpoint.to_string_lossy().into_owned();
    let mount = ["mount", "-t", "btrfs", "-o", &options.join(","), &members[0].path.to_string_lossy(), &mp];
    if let Err(e) = st.mount(&mount, &mountpoint).and_then(|out| cmd::succeeded(&mount, out)) {
        detach_all(&members);
        return Err(AgentError::failed(e));
    }
    st.mounted.push(Mounted {
        scratch: members[0].name.clone(),
        mountpoint: mountpoint.clone(),
        devices: members.iter().map(|m| m.kernel_name.clone()).collect(),
        mounted_by_us: true,
        created_dir: false,
        loop_devices: members.iter().filter_map(|m| m.attached.clone()).collect(),
    });
    let mut out = StepOutput::default();
    out.info.insert("devices".into(), json!(members.iter().map(|m| &m.name).collect::<Vec<_>>()));
    out.info.insert("mountpoint".into(), mp.into());
    out.info.insert("mkfs_command".into(), mkfs.join(" ").into());
    out.info.insert("mkfs_version".into(), json!(tools::version("mkfs.btrfs")));
    out.info.insert("fs_dump".into(), json!(fs_dump("btrfs", &members[0].path, &mountpoint)));
    Ok(out)
}

/// Logical data on a volume: btrfs's own "Data, <profile>: ... used=" figure.
fn data_bytes(mountpoint: &std::path::Path) -> Result<u64, AgentError> {
    let out =
        cmd::run_ok(&["btrfs", "filesystem", "df", "-b", &mountpoint.to_string_lossy()]).map_err(AgentError::failed)?;
    out.stdout
        .lines()
        .filter(|l| l.starts_with("Data"))
        .filter_map(|l| l.split("used=").nth(1)?.split_whitespace().next()?.parse::<u64>().ok())
        .max()
        .ok_or_else(|| {
            AgentError::failed(format!("cannot read the data size from `btrfs filesystem df`: {}", out.stdout.trim()))
        })
}

/// Index of the volume in the session's mounts.
fn volume_index(st: &HostState, name: Option<&str>) -> Result<usize, AgentError> {
    let target = st.target(name)?;
    let i = st.mounted.iter().position(|m| m.mountpoint == target.mountpoint).expect("target is mounted");
    Ok(i)
}

/// Time `argv` plus a sync. What is measured is what the Reiser5
/// benchmark measured: data relocated per second, the bytes moved being
/// those written to the devices that hold the volume afterwards
/// (`receivers`), from their I/O counters, not the data on the volume (a
/// device that held none of it is removed in no time, moving nothing).
fn timed_change(
    st: &HostState,
    ctx: &StepCtx,
    devices: &[String],
    receivers: &[String],
    mountpoint: &std::path::Path,
    argvs: &[Vec<String>],
) -> Result<StepOutput, AgentError> {
    // After the sync: btrfs counts data as used once its transaction commits.
    rustix::fs::sync();
    let data = data_bytes(mountpoint)?;
    let meter = Meter::without_monitors(&st.view.sys, devices);
    for argv in argvs {
        // A balance moves all the volume's data: the step's time, not a tool's deadline.
        let out = cmd::run_for_step(argv, ctx).map_err(|e| match ctx.check_cancel() {
            Err(cancelled) => cancelled,
            Ok(()) => AgentError::failed(e),
        })?;
        cmd::succeeded(argv, out).map_err(AgentError::failed)?;
    }
    rustix::fs::sync();
    let usage = meter.stop();
    let moved: u64 = usage.devices.iter().filter(|d| receivers.contains(&d.device)).map(|d| d.write_bytes).sum();
    let mut out = StepOutput::default();
    let rate = if usage.wall_s > 0.0 { moved as f64 / 1e6 / usage.wall_s } else { 0.0 };
    out.metrics.push(Metric::of(&RELOCATION_RATE, rate));
    out.metrics.push(Metric::of(&RELOCATED, moved as f64 / 1e6));
    out.metrics.push(Metric::of(&TIME, usage.wall_s));
    out.info.insert("data_bytes".into(), data.into());
    out.info.insert("relocated_bytes".into(), moved.into());
    out.usage = Some(usage);
    Ok(out)
}

pub fn add(st: &mut HostState, ctx: &StepCtx, args: &VolumeChangeArgs) -> Result<StepOutput, AgentError> {
    let vi = volume_index(st, args.volume.as_deref())?;
    if st.mounted.iter().any(|m| m.scratch == args.device) {
        return Err(AgentError::failed(format!("`{}` is already in use in this cell", args.device)));
    }
    let m = member(st, &args.device)?;
    ctx.check_cancel()?;
    let mountpoint = st.mounted[vi].mountpoint.clone();
    let mp = mountpoint.to_string_lossy().into_owned();
    let mut devices = st.mounted[vi].devices.clone();
    devices.push(m.kernel_name.clone());
    let dev = m.path.to_string_lossy().into_owned();
    // --full-balance: without a filter, btrfs-progs otherwise waits 10 s to let you change your mind.
    let argvs = vec![
        vec!["btrfs".into(), "device".into(), "add".into(), "-f".into(), dev.clone(), mp.clone()],
        vec!["btrfs".into(), "balance".into(), "start".into(), "--full-balance".into(), mp.clone()],
    ];
    let result = timed_change(st, ctx, &devices, &devices, &mountpoint, &argvs);
    // Added, it carries the volume's UUID: benchrig's to format over later.
    record_made(st, ctx, &m.kernel_name, &m.path);
    // Whatever happened, the device may now be part of the volume: release it with it.
    let vol = &mut st.mounted[vi];
    vol.devices = devices;
    vol.loop_devices.extend(m.attached);
    let mut out = result?;
    out.info.insert("added".into(), args.device.clone().into());
    Ok(out)
}

pub fn remove(st: &mut HostState, ctx: &StepCtx, args: &VolumeChangeArgs) -> Result<StepOutput, AgentError> {
    let vi = volume_index(st, args.volume.as_deref())?;
    let entry = scratch::listed(st, &args.device)?;
    let path = match entry.kind {
        ScratchKind::Image => {
            // Its loop device is one this session attached to the volume.
            let name = scratch::image_loop_devices(&st.view, &entry).into_iter().next().ok_or_else(|| {
                AgentError::failed(format!("`{}` is not attached, so not in the volume", args.device))
            })?;
            PathBuf::from("/dev").join(name)
        }
        _ => scratch::expand_home(&entry.path)
            .canonicalize()
            .map_err(|e| AgentError::failed(format!("{}: {e}", entry.path)))?,
    };
    let kernel_name = path.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
    if !st.mounted[vi].devices.contains(&kernel_name) {
        return Err(AgentError::failed(format!("`{}` ({kernel_name}) is not a member of this volume", args.device)));
    }
    ctx.check_cancel()?;
    let mountpoint = st.mounted[vi].mountpoint.clone();
    let devices = st.mounted[vi].devices.clone();
    let argvs = vec![vec![
        "btrfs".into(),
        "device".into(),
        "remove".into(),
        path.to_string_lossy().into_owned(),
        mountpoint.to_string_lossy().into_owned(),
    ]];
    let staying: Vec<String> = devices.iter().filter(|d| **d != kernel_name).cloned().collect();
    let mut out = timed_change(st, ctx, &devices, &staying, &mountpoint, &argvs)?;
    st.mounted[vi].devices.retain(|d| *d != kernel_name);
    out.info.insert("removed".into(), args.device.clone().into());
    Ok(out)
}
