//! Setup: make a fresh filesystem on a scratch device and mount it.
//!
//! Order matters for safety: everything that can say "no" (listed? tool?
//! kernel? safety rules?) runs before the one step that writes (mkfs).

use super::expand_home;
use crate::ledger::{self, Made};
use crate::outbox::StepCtx;
use crate::safety::{self, DeviceProbe};
use crate::signature::{self, Signature};
use crate::state::{detach_loop, HostState, Mounted};
use crate::{cmd, facts, tools};
use benchrig_wire::messages::{AgentError, LogLevel};
use benchrig_wire::scratch::{ScratchDevice, ScratchKind};
use benchrig_wire::steps::{FilesystemArgs, FsProfile, StepOutput};
use serde_json::json;
use std::fs::File;
use std::io::{Seek, SeekFrom};
use std::path::{Path, PathBuf};
use std::time::Instant;

pub fn run(st: &mut HostState, ctx: &StepCtx, args: &FilesystemArgs) -> Result<StepOutput, AgentError> {
    let entry = st.scratch(&args.device)?;
    let profile = &args.profile;
    // A failed teardown must not leave two cells stacked on one device.
    if st.mounted.iter().any(|m| m.scratch == entry.name) {
        ctx.log(LogLevel::Warn, format!("`{}` was still set up; releasing it first", entry.name));
        st.release(Some(&entry.name)).map_err(AgentError::failed)?;
    }
    if entry.kind == ScratchKind::Directory {
        return use_directory(&entry, profile, st);
    }
    let Some(fstype) = profile.fstype.as_deref() else {
        return Err(AgentError::unsupported(format!(
            "profile `{}` uses a scratch directory as it is, but `{}` is a device",
            profile.name, entry.name
        )));
    };
    let mkfs = profile.mkfs.first().ok_or_else(|| AgentError::bad_request("profile has no mkfs command"))?;
    // The kernel first: without it, installing the tool would not help.
    kernel_supports(st, fstype)?;
    if cmd::which(mkfs).is_none() {
        return Err(AgentError::unsupported(format!("{mkfs} is not installed on this host")));
    }

    let (dev_path, attached) = match entry.kind {
        ScratchKind::Image => {
            let dev = attach_image(st, &entry)?;
            (dev.clone(), Some(dev))
        }
        _ => (expand_home(&entry.path), None),
    };
    // From here on an attached loop device is ours to detach on every error path.
    let result = format_and_mount(&entry, profile, fstype, &dev_path, attached.as_deref(), st, ctx);
    if result.is_err() {
        if let Some(dev) = &attached {
            let _ = detach_loop(dev);
        }
    }
    result
}

fn format_and_mount(
    entry: &ScratchDevice,
    profile: &FsProfile,
    fstype: &str,
    dev_path: &Path,
    attached: Option<&Path>,
    st: &mut HostState,
    ctx: &StepCtx,
) -> Result<StepOutput, AgentError> {
    let (dev, real_path) = checked_device(st, entry, dev_path)?;
    ctx.check_cancel()?;

    let mut mkfs_argv = profile.mkfs.clone();
    mkfs_argv.push(real_path.to_string_lossy().into_owned());
    // What runs names the UUID too; what is recorded (and compared) does not.
    let mut run_argv = announce_mkfs(st, &[(&dev.name, &real_path)], fstype, &profile.mkfs, ctx);
    run_argv.push(real_path.to_string_lossy().into_owned());
    let t0 = Instant::now();
    let out = cmd::run(&run_argv).map_err(AgentError::failed)?;
    if !out.ok() {
        return Err(AgentError::unsupported(format!("{} refused: {}", mkfs_argv[0], out.reason())));
    }
    let mkfs_s = t0.elapsed().as_secs_f64();
    record_made(st, &dev.name, &real_path, ctx);

    let mountpoint = st.mountpoint_for(&entry.name);
    std::fs::create_dir_all(&mountpoint)
        .map_err(|e| AgentError::failed(format!("mkdir {}: {e}", mountpoint.display())))?;
    let mut mount_argv = vec!["mount".to_string(), "-t".into(), fstype.into()];
    if !profile.mount_options.is_empty() {
        mount_argv.extend(["-o".into(), profile.mount_options.join(",")]);
    }
    mount_argv.extend([real_path.to_string_lossy().into_owned(), mountpoint.to_string_lossy().into_owned()]);
    let log_before = kernel_log().and_then(|l| l.last().and_then(|x| log_time(x)));
    let out = cmd::run(&mount_argv).map_err(AgentError::failed)?;
    if !out.ok() {
        // mount(8) only says "wrong fs type, bad option, bad superblock";
        // the kernel's log says which (XFS: "V4 format not supported").
        let reason = log_before.and_then(|n| kernel_says(&dev.name, n)).unwrap_or_else(|| out.reason());
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
        devices: vec![dev.name.clone()],
        mounted_by_us: true,
        created_dir: false,
        loop_devices: attached.map(Path::to_path_buf).into_iter().collect(),
    });

    let mut out = StepOutput::default();
    let info = &mut out.info;
    info.insert("scratch".into(), entry.name.clone().into());
    info.insert("device".into(), real_path.to_string_lossy().into_owned().into());
    info.insert("device_facts".into(), json!(facts::block_device(&st.view, &dev.name)));
    // A partition has no model, queue or scheduler of its own: record its disk's.
    if let Some(disk) = st.view.is_partition(&dev.name).then(|| st.view.parent_disk(&dev.name)).flatten() {
        info.insert("disk_facts".into(), json!(facts::block_device(&st.view, &disk)));
    }
    info.insert("mountpoint".into(), mountpoint.to_string_lossy().into_owned().into());
    info.insert("profile".into(), profile.name.clone().into());
    info.insert("fstype".into(), fstype.into());
    info.insert("mkfs_command".into(), mkfs_argv.join(" ").into());
    info.insert("mkfs_version".into(), json!(tools::version(&profile.mkfs[0])));
    info.insert("mkfs_seconds".into(), json!(mkfs_s));
    info.insert("mount_options".into(), profile.mount_options.join(",").into());
    info.insert("fs_dump".into(), json!(fs_dump(fstype, &real_path, &mountpoint)));
    Ok(out)
}

/// The block device at `dev_path` (a scratch entry's device, or the loop
/// device its image is attached to), checked by every safety rule: what
/// mkfs must pass, and anything else that overwrites a device (raw writes).
pub(crate) fn checked_device(
    st: &HostState,
    entry: &ScratchDevice,
    dev_path: &Path,
) -> Result<(safety::Device, PathBuf), AgentError> {
    let (dev, real_path) = st
        .view
        .resolve_block(dev_path)
        .map_err(|m| AgentError::refused("not_block_device", format!("{} ({}): {m}", entry.name, entry.path)))?;
    let mut rules_entry = entry.clone();
    // An image benchrig created is its own: its old filesystem is ours to overwrite.
    rules_entry.wipe |= entry.kind == ScratchKind::Image && image_marker(&expand_home(&entry.path)).exists();
    safety::check(&st.view, &rules_entry, &dev, &RealDevice::new(st, &dev.name, &real_path))
        .map_err(|r| AgentError::refused(r.rule, format!("{} ({}): {}", entry.name, entry.path, r.message)))?;
    Ok((dev, real_path))
}

fn use_directory(entry: &ScratchDevice, profile: &FsProfile, st: &mut HostState) -> Result<StepOutput, AgentError> {
    if profile.fstype.is_some() {
        return Err(AgentError::unsupported(format!(
            "scratch `{}` is a directory: profile `{}` needs a device to format (use profile `existing`)",
            entry.name, profile.name
        )));
    }
    // A fresh directory per cell, removed on release: the closest a
    // directory comes to a fresh filesystem, and nothing is left in it.
    let dir = expand_home(&entry.path).join(format!("benchrig-{}", std::process::id()));
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

/// The kernel log (`dmesg`, root only), a line each.
fn kernel_log() -> Option<Vec<String>> {
    let out = cmd::run(&["dmesg"]).ok().filter(|o| o.ok())?;
    Some(out.stdout.lines().map(str::to_string).collect())
}

/// A log line's timestamp (`[ 9501.033223] ...`): the ring buffer drops old
/// lines, so counting lines cannot tell new from old.
fn log_time(line: &str) -> Option<f64> {
    line.strip_prefix('[')?.split(']').next()?.trim().parse().ok()
}

/// What the kernel logged about a device after time `since`.
fn kernel_says(dev: &str, since: f64) -> Option<String> {
    let tag = format!("({dev})");
    let log = kernel_log()?;
    let line = log.iter().rev().take_while(|l| log_time(l).is_none_or(|t| t > since)).find(|l| l.contains(&tag))?;
    // "[ 9501.03] XFS (loop2): Deprecated V4 ..." → "XFS (loop2): Deprecated V4 ..."
    Some(line.split_once("] ").map(|(_, m)| m).unwrap_or(line).trim().to_string())
}

/// `/proc/filesystems`, after asking modprobe (as root) for a module not yet loaded.
pub(crate) fn kernel_supports(st: &HostState, fstype: &str) -> Result<(), AgentError> {
    let listed = || facts::kernel_filesystems(&st.view).iter().any(|f| f == fstype);
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

/// Beside an image benchrig created: proof that formatting over it destroys nothing of anyone's.
fn image_marker(image: &Path) -> PathBuf {
    let mut name = image.file_name().unwrap_or_default().to_os_string();
    name.push(".benchrig");
    image.with_file_name(name)
}

/// Create the image (sparse, with its marker) if needed and attach it to a
/// free loop device. A loop device still attached to it (a session that
/// died) is detached first, unless something still uses it: two loop devices
/// on one image would let two filesystems write the same file.
pub(crate) fn attach_image(st: &HostState, entry: &ScratchDevice) -> Result<PathBuf, AgentError> {
    let path = expand_home(&entry.path);
    match std::fs::metadata(&path) {
        Ok(m) if !m.is_file() => {
            return Err(AgentError::refused(
                "not_an_image",
                format!("{} is not a regular file; a `kind: image` scratch must be one", path.display()),
            ))
        }
        Ok(_) => {}
        Err(_) => {
            let size = entry.size.ok_or_else(|| {
                AgentError::failed(format!("image {} does not exist and the entry has no `size`", path.display()))
            })?;
            if let Some(dir) = path.parent() {
                std::fs::create_dir_all(dir)
                    .map_err(|e| AgentError::failed(format!("mkdir {}: {e}", dir.display())))?;
            }
            let f = File::create(&path).map_err(|e| AgentError::failed(format!("create {}: {e}", path.display())))?;
            f.set_len(size.0).map_err(|e| AgentError::failed(format!("size {}: {e}", path.display())))?;
            File::create(image_marker(&path))
                .map_err(|e| AgentError::failed(format!("create marker beside {}: {e}", path.display())))?;
        }
    }
    let real = path.canonicalize().unwrap_or_else(|_| path.clone());
    for name in st.view.loops_backed_by(&real) {
        let dev = PathBuf::from("/dev").join(&name);
        let busy = st
            .view
            .mounts_of(std::slice::from_ref(&name))
            .into_iter()
            .next()
            .map(|m| format!("mounted at {}", m.target));
        if let Some(why) = busy.or_else(|| exclusive_open(&dev).err()) {
            return Err(AgentError::refused(
                "in_use",
                format!("image {} is attached to {} and in use: {why}", path.display(), dev.display()),
            ));
        }
        detach_loop(&dev).map_err(AgentError::failed)?;
    }
    let p = path.to_string_lossy();
    let out = cmd::run_ok(&["losetup", "--find", "--show", "--direct-io=on", &p])
        .or_else(|_| cmd::run_ok(&["losetup", "--find", "--show", &p]))
        .map_err(|e| AgentError::failed(format!("cannot attach image {p} to a loop device: {e}")))?;
    Ok(PathBuf::from(out.stdout.trim()))
}

/// The option that makes a mkfs program use a given UUID, where it has one.
fn uuid_option(mkfs: &str, uuid: &str) -> Option<Vec<String>> {
    Some(match Path::new(mkfs).file_name()?.to_str()? {
        "mkfs.ext2" | "mkfs.ext3" | "mkfs.ext4" | "mke2fs" | "mkfs.btrfs" => vec!["-U".into(), uuid.into()],
        "mkfs.xfs" => vec!["-m".into(), format!("uuid={uuid}")],
        "mkfs.reiserfs" | "mkreiserfs" => vec!["-u".into(), uuid.into()],
        _ => return None,
    })
}

/// Before mkfs: choose the new filesystem's UUID and write it in the ledger
/// for each device (kernel name, path), beside the benchrig filesystem the
/// device carries now, so that a session lost mid-mkfs leaves a device
/// benchrig still recognises, whichever of the two it holds. Returns the
/// argv to run before the devices: `mkfs` with the UUID option, or as
/// given where the program has none (then only `record_made` records).
pub(crate) fn announce_mkfs(
    st: &HostState,
    devices: &[(&str, &Path)],
    fstype: &str,
    mkfs: &[String],
    ctx: &StepCtx,
) -> Vec<String> {
    let mut argv = mkfs.to_vec();
    let Some((uuid, option)) = ledger::new_uuid().and_then(|u| Some((u.clone(), uuid_option(&mkfs[0], &u)?))) else {
        return argv;
    };
    for (dev, path) in devices {
        let probe = RealDevice::new(st, dev, path);
        // Only a filesystem the ledger already vouches for may stay vouched for.
        let before = probe.made_here();
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
            ctx.log(LogLevel::Warn, format!("cannot write {}: {e}", st.ledger.path().display()));
        }
    }
    argv.extend(option);
    argv
}

/// Note in the host's ledger the filesystem mkfs just made on a device
/// (kernel name `dev`), so a later cell may format over it without `wipe`.
/// Failing to is no error: the next format is then refused, and says why.
pub(crate) fn record_made(st: &HostState, dev: &str, path: &Path, ctx: &StepCtx) {
    if !record_found(st, dev, path, ctx) {
        ctx.log(
            LogLevel::Warn,
            format!(
                "cannot read the UUID of the filesystem made on {}: formatting over it will need `wipe: true`",
                path.display()
            ),
        );
    }
}

/// After a raw write or copy onto a device: whatever filesystem it now
/// carries (a copy of another device's), benchrig wrote it there.
pub(crate) fn record_written(st: &HostState, dev: &str, path: &Path, ctx: &StepCtx) {
    record_found(st, dev, path, ctx);
}

/// Record the filesystem UUID the device carries, if any; false when it has none.
fn record_found(st: &HostState, dev: &str, path: &Path, ctx: &StepCtx) -> bool {
    let probe = RealDevice::new(st, dev, path);
    let found = probe.signatures().unwrap_or_default();
    // Our table's name for it where it knows the filesystem, else blkid's.
    let Some(fs) = found.iter().find(|s| s.uuid.is_some()) else { return false };
    let made = Made {
        fstype: fs.name.clone(),
        uuid: fs.uuid.clone().unwrap_or_default(),
        made_at: ledger::now(),
        path: path.to_string_lossy().into_owned(),
        previous: None,
    };
    if let Err(e) = st.ledger.record(&probe.identity, made) {
        ctx.log(
            LogLevel::Warn,
            format!(
                "cannot record the new filesystem in {}: {e}; formatting over it will need `wipe: true`",
                st.ledger.path().display()
            ),
        );
    }
    true
}

/// The real device behind the safety rules' probes.
struct RealDevice<'a> {
    path: &'a Path,
    /// Its stable identity, the ledger's key.
    identity: String,
    ledger: &'a ledger::Ledger,
}

impl<'a> RealDevice<'a> {
    fn new(st: &'a HostState, dev: &str, path: &'a Path) -> Self {
        RealDevice { path, identity: st.view.stable_identity(dev), ledger: &st.ledger }
    }
}

impl safety::DeviceProbe for RealDevice<'_> {
    /// Our own magic table, then blkid's view (which knows more) where the host has it.
    fn signatures(&self) -> Result<Vec<Signature>, String> {
        let mut f = File::open(self.path).map_err(|e| e.to_string())?;
        let size = f.seek(SeekFrom::End(0)).map_err(|e| e.to_string())?;
        let mut found = signature::probe(&mut f, size).map_err(|e| e.to_string())?;
        if cmd::which("blkid").is_none() {
            return Ok(found);
        }
        let out = cmd::run(&["blkid", "-p", "-o", "export", &self.path.to_string_lossy()])?;
        let field = |key: &str| out.stdout.lines().find_map(|l| l.strip_prefix(key)).map(str::to_string);
        match out.status {
            // 2: nothing found. 0: found. Anything else (8: ambivalent, 4: error) is not "blank".
            2 => {}
            0 => found.push(Signature {
                name: format!(
                    "{} (blkid)",
                    field("TYPE=").or_else(|| field("PTTYPE=")).as_deref().unwrap_or("unknown")
                ),
                uuid: field("UUID="),
            }),
            8 => found.push(Signature { name: "more than one (blkid: ambivalent result)".into(), uuid: None }),
            n => return Err(format!("blkid -p exited {n}: {}", out.reason())),
        }
        Ok(found)
    }

    fn exclusive(&self) -> Result<(), String> {
        exclusive_open(self.path)
    }

    fn made_here(&self) -> Option<Made> {
        self.ledger.lookup(&self.identity)
    }
}

/// Open a device exclusively and close it again: fails while anything claims it.
fn exclusive_open(path: &Path) -> Result<(), String> {
    use std::os::unix::fs::OpenOptionsExt;
    std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(rustix::fs::OFlags::EXCL.bits() as i32)
        .open(path)
        .map(drop)
        .map_err(|e| e.to_string())
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

#[cfg(test)]
mod log_tests {
    use super::log_time;

    #[test]
    fn kernel_log_timestamps() {
        assert_eq!(log_time("[ 9501.033223] XFS (loop2): Deprecated V4"), Some(9501.033223));
        assert_eq!(log_time("no stamp"), None);
    }
}

#[cfg(test)]
mod uuid_tests {
    use super::uuid_option;
    use std::process::Command;

    /// The UUID option is the one each mkfs honours (blkid as the oracle):
    /// the ledger's announced UUID is the filesystem's.
    #[test]
    fn mkfs_makes_the_filesystem_with_the_announced_uuid() {
        let dir = tempfile::tempdir().unwrap();
        let img = dir.path().join("img");
        for mkfs in [
            &["mkfs.ext4", "-q", "-F"][..],
            &["mkfs.xfs", "-q", "-f"],
            &["mkfs.btrfs", "-q", "-f"],
            &["mkfs.reiserfs", "-q", "-f", "-f"],
        ] {
            std::fs::File::create(&img).unwrap().set_len(320 << 20).unwrap();
            let uuid = crate::ledger::new_uuid().unwrap();
            let option = uuid_option(mkfs[0], &uuid).unwrap();
            let out = Command::new(mkfs[0]).args(&mkfs[1..]).args(&option).arg(&img).output();
            let out = out.unwrap_or_else(|e| panic!("{}: {e} (install it: .ci/run lists the package)", mkfs[0]));
            assert!(out.status.success(), "{mkfs:?}: {}", String::from_utf8_lossy(&out.stderr));
            let blkid = Command::new("blkid").args(["-p", "-o", "value", "-s", "UUID"]).arg(&img).output().unwrap();
            assert_eq!(String::from_utf8_lossy(&blkid.stdout).trim(), uuid, "{mkfs:?}");
        }
        assert_eq!(uuid_option("/sbin/mkfs.jfs", "u"), None, "mkfs.jfs has no UUID option");
    }
}
