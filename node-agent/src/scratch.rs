//! From a scratch name to a device a step may use: the one path that
//! `filesystem`, `volume` and `raw` take to a block device.
//!
//! The name must be in the host's `scratch_devices` ([`listed`]); the
//! entry's path is the inventory's with `~` expanded ([`expand_home`]); a
//! `kind: image` file is created if needed and attached to a free loop
//! device. What comes out must be a block device ([`resolve`], all a read
//! needs) and, for anything that writes to it, pass every rule of `safety`
//! ([`resolve_and_check`]). When either says no, nothing stays attached.
//!
//! A block entry's path (often a `/dev/disk/by-*` link) is followed once,
//! when the session is configured ([`locate_all`]), and the device found
//! then is the one every step gets ([`locate`]); a path naming a label or
//! UUID must lead to a device that carries it (`fs_name`).

use crate::cmd;
use crate::fs_name::FsName;
use crate::real_device::RealDevice;
use crate::safety::{self, Device};
use crate::state::{HostState, Located, Unlocated};
use crate::sysfs::SysView;
use crate::undo::{detach_loop, exclusive_open};
use benchrig_wire::messages::AgentError;
use benchrig_wire::scratch::{ScratchDevice, ScratchKind};
use std::collections::BTreeMap;
use std::fs::File;
use std::path::{Path, PathBuf};

/// A scratch entry's block device, ready for a step.
#[derive(Clone, Debug)]
pub struct ScratchBlock {
    /// The scratch entry's name.
    pub name: String,
    /// The kernel's name for the device (`sdb`, `loop3`).
    pub kernel_name: String,
    /// The device's canonical path.
    pub path: PathBuf,
    /// The loop device attached for a `kind: image` entry: the caller's to
    /// detach, or to hand to the session's state with what it set up.
    pub attached: Option<PathBuf>,
}

/// A scratch entry the session was given in `Configure`. Only [`listed`]
/// makes one, and only a `Listed` resolves to a device: nothing reaches a
/// device the inventory did not list.
#[derive(Clone, Debug)]
pub struct Listed(ScratchDevice);

impl std::ops::Deref for Listed {
    type Target = ScratchDevice;

    fn deref(&self) -> &ScratchDevice {
        &self.0
    }
}

/// The inventory entry for a scratch name: the only way to a device.
pub fn listed(st: &HostState, name: &str) -> Result<Listed, AgentError> {
    st.scratch.iter().find(|s| s.name == name).cloned().map(Listed).ok_or_else(|| {
        let known: Vec<&str> = st.scratch.iter().map(|s| s.name.as_str()).collect();
        AgentError::refused(
            "not_listed",
            format!(
                "`{name}` is not in this host's scratch_devices (listed: {})",
                if known.is_empty() { "none".to_string() } else { known.join(", ") }
            ),
        )
    })
}

/// `~/x` in an inventory path means the agent user's home, as in a shell.
pub fn expand_home(path: &str) -> PathBuf {
    match (path.strip_prefix("~/"), std::env::var_os("HOME")) {
        (Some(rest), Some(home)) => Path::new(&home).join(rest),
        _ => path.into(),
    }
}

/// Where a scratch entry is, found without attaching anything (an image
/// is attached only when a step uses it).
pub enum Place {
    /// A block entry: its device ([`locate`]).
    Device(Device),
    /// An image or a directory: its path, `~/` expanded. What holds it is
    /// the filesystem it is on (`SysView::device_for_path`).
    File(PathBuf),
}

impl Place {
    /// The block device whose queue serves it: a block entry's own, else
    /// that of the filesystem its file is on (none on a tmpfs, say).
    pub fn holder(&self, view: &SysView) -> Option<String> {
        match self {
            Place::Device(d) => Some(d.name.clone()),
            Place::File(path) => view.device_for_path(path),
        }
    }
}

/// The one lookup of an entry without attaching it: what facts report,
/// what `tune` writes to, which devices the session watches.
pub fn place(st: &HostState, entry: &ScratchDevice) -> Result<Place, Unlocated> {
    match entry.kind {
        ScratchKind::Block => locate(st, entry).map(|(dev, _)| Place::Device(dev)),
        ScratchKind::Image | ScratchKind::Directory => Ok(Place::File(expand_home(&entry.path))),
    }
}

/// The session's block devices, as the kernel names them: its scratch
/// devices and their partitions, the loop devices over its images, and
/// every device under what it mounted.
pub fn session_devices(st: &HostState) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for s in &st.scratch {
        match place(st, s) {
            Ok(Place::Device(d)) => {
                out.extend(st.view.partitions(&d.name));
                out.push(d.name);
            }
            // An image's loop devices; a directory has none of its own.
            Ok(Place::File(path)) if s.kind == ScratchKind::Image => out.extend(st.view.loops_backed_by(&path)),
            Ok(Place::File(_)) | Err(_) => {}
        }
    }
    out.extend(st.mounted.iter().flat_map(|m| m.devices.iter().cloned()));
    out.sort();
    out.dedup();
    out
}

/// A device entry's block device (an image's attached loop device): what
/// reading it needs. A directory entry is no block device, and is refused
/// as one; callers that have a better word for it say it first.
pub fn resolve(st: &HostState, entry: &Listed) -> Result<ScratchBlock, AgentError> {
    let (dev, path, attached) = block_device(st, entry)?;
    Ok(ScratchBlock { name: entry.name.clone(), kernel_name: dev.name, path, attached })
}

/// [`resolve`], then every safety rule, right before something writes to
/// the device: what mkfs must pass, and anything else that overwrites a
/// device (a raw write, a device added to a volume).
pub fn resolve_and_check(st: &HostState, entry: &Listed) -> Result<ScratchBlock, AgentError> {
    let (dev, path, attached) = block_device(st, entry)?;
    let mut rules_entry = ScratchDevice::clone(entry);
    // An image benchrig created is its own: its old filesystem is ours to overwrite.
    rules_entry.wipe |= entry.kind == ScratchKind::Image && made_by_us(&expand_home(&entry.path));
    let checked = safety::check(&st.view, &rules_entry, &dev, &RealDevice::new(st, &dev.name, &path))
        .map_err(|r| AgentError::refused(r.rule, format!("{} ({}): {}", entry.name, entry.path, r.message)));
    if let Err(e) = checked {
        detach(&attached);
        return Err(e);
    }
    Ok(ScratchBlock { name: entry.name.clone(), kernel_name: dev.name, path, attached })
}

/// Kernel names of the loop devices attached to an image entry's file.
pub fn image_loop_devices(view: &SysView, entry: &ScratchDevice) -> Vec<String> {
    let image = expand_home(&entry.path);
    let image = image.canonicalize().unwrap_or(image);
    view.loops_backed_by(&image)
}

/// The block device behind an entry, with the loop device attached for it.
fn block_device(st: &HostState, entry: &ScratchDevice) -> Result<(Device, PathBuf, Option<PathBuf>), AgentError> {
    let attached = match entry.kind {
        ScratchKind::Image => Some(attach_image(st, entry)?),
        _ => None,
    };
    let found = match &attached {
        Some(dev) => st.view.resolve_block(dev).map_err(Unlocated::NotBlockDevice),
        None => locate(st, entry),
    };
    match found {
        Ok((dev, path)) => Ok((dev, path, attached)),
        Err(e) => {
            detach(&attached);
            Err(AgentError::refused(e.rule(), format!("{} ({}): {e}", entry.name, entry.path)))
        }
    }
}

/// Follow each block entry's path once, when the session is configured
/// (keeping what `before` found for an entry given again unchanged). A
/// link is then never followed again while its device is there: a
/// by-label link that udev removes and remakes around benchrig's own
/// mkfs, or any link repointed mid-run, cannot move a step to another
/// device. An entry whose path leads nowhere yet is looked up when used.
pub fn locate_all(
    view: &SysView,
    entries: &[ScratchDevice],
    before: &BTreeMap<String, Located>,
) -> BTreeMap<String, Located> {
    entries
        .iter()
        .filter(|e| e.kind == ScratchKind::Block)
        .filter_map(|e| {
            let kept = before.get(&e.name).filter(|l| l.path == e.path && l.found.is_ok());
            let found = match kept {
                Some(l) => l.found.clone(),
                // Nowhere yet: looked up when used.
                None => match follow(view, e) {
                    Err(Unlocated::NotBlockDevice(_)) => return None,
                    found => found,
                },
            };
            Some((e.name.clone(), Located { path: e.path.clone(), found }))
        })
        .collect()
}

/// A block entry's device: the one [`locate_all`] found while it is still
/// there (same kernel name and numbers), else where the path leads now.
pub fn locate(st: &HostState, entry: &ScratchDevice) -> Result<(Device, PathBuf), Unlocated> {
    match st.located.get(&entry.name).filter(|l| l.path == entry.path).map(|l| &l.found) {
        Some(Err(why)) => Err(why.clone()),
        Some(Ok((dev, path))) if st.view.resolve_block(path).is_ok_and(|(d, _)| d == *dev) => {
            Ok((dev.clone(), path.clone()))
        }
        _ => follow(&st.view, entry),
    }
}

/// Where a block entry's path leads now. A path that names a filesystem
/// (`by-label`, `by-uuid`) must lead to a device that carries that name:
/// udev may lag behind a change, and two devices may carry one label.
fn follow(view: &SysView, entry: &ScratchDevice) -> Result<(Device, PathBuf), Unlocated> {
    let (dev, path) = view.resolve_block(&expand_home(&entry.path)).map_err(Unlocated::NotBlockDevice)?;
    if let Some(name) = FsName::of(&entry.path) {
        if name.carried_by(&path).map_err(Unlocated::NotBlockDevice)? == Some(false) {
            return Err(Unlocated::StaleLink(format!(
                "{} leads to {}, which does not carry the {} it names: the link is stale",
                entry.path,
                path.display(),
                name.describe()
            )));
        }
    }
    Ok((dev, path))
}

fn detach(attached: &Option<PathBuf>) {
    if let Some(dev) = attached {
        let _ = detach_loop(dev);
    }
}

/// Beside an image benchrig created: proof that formatting over it destroys nothing of anyone's.
fn image_marker(image: &Path) -> PathBuf {
    let mut name = image.file_name().unwrap_or_default().to_os_string();
    name.push(".benchrig");
    image.with_file_name(name)
}

/// Whether the image is one benchrig made: it and its marker are files
/// (no symlinks) of the agent's user or root, which no group or other may
/// write. A marker anyone could drop beside anyone's image proves nothing.
fn made_by_us(image: &Path) -> bool {
    use std::os::unix::fs::MetadataExt;
    let ours = |p: &Path| {
        std::fs::symlink_metadata(p)
            .is_ok_and(|m| m.file_type().is_file() && crate::ledger::not_private(m.uid(), m.mode(), false).is_none())
    };
    ours(image) && ours(&image_marker(image))
}

/// A new file, never through a link or over one that is there.
fn create_new(path: &Path) -> std::io::Result<File> {
    std::fs::OpenOptions::new().write(true).create_new(true).open(path)
}

/// Create the image (sparse, with its marker) if needed and attach it to a
/// free loop device. A loop device still attached to it (a session that
/// died) is detached first, unless something still uses it: two loop devices
/// on one image would let two filesystems write the same file.
fn attach_image(st: &HostState, entry: &ScratchDevice) -> Result<PathBuf, AgentError> {
    let path = expand_home(&entry.path);
    // Not followed: a link would let whoever can write its dir point the
    // entry at another file (a disk image of someone's, a device).
    match std::fs::symlink_metadata(&path) {
        Ok(m) if !m.is_file() => {
            return Err(AgentError::refused(
                "not_an_image",
                format!(
                    "{} is not a regular file (a symlink is not followed); a `kind: image` scratch must be one",
                    path.display()
                ),
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
            let f = create_new(&path).map_err(|e| AgentError::failed(format!("create {}: {e}", path.display())))?;
            f.set_len(size.0).map_err(|e| AgentError::failed(format!("size {}: {e}", path.display())))?;
            let marker = image_marker(&path);
            let _ = std::fs::remove_file(&marker); // one left beside a removed image; never a link's target
            create_new(&marker)
                .map_err(|e| AgentError::failed(format!("create marker beside {}: {e}", path.display())))?;
        }
    }
    for name in image_loop_devices(&st.view, entry) {
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
    // As the kernel will name it (`loop/backing_file`), for a replay of the journal.
    st.attaching_loop(&path.canonicalize().unwrap_or_else(|_| path.clone())).map_err(AgentError::failed)?;
    let p = path.to_string_lossy();
    let out = cmd::run_ok(&["losetup", "--find", "--show", "--direct-io=on", &p])
        .or_else(|_| cmd::run_ok(&["losetup", "--find", "--show", &p]))
        .map_err(|e| AgentError::failed(format!("cannot attach image {p} to a loop device: {e}")))?;
    Ok(PathBuf::from(out.stdout.trim()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt;

    /// The `.benchrig` marker lets a format over an image's contents go
    /// without `wipe`: only the agent user's (or root's) own marker beside
    /// its own image counts. (On the main before, any marker did, and the
    /// image was followed through a symlink.)
    #[test]
    fn only_our_own_marker_beside_our_own_image_vouches_for_it() {
        let dir = tempfile::tempdir().unwrap();
        let img = dir.path().join("s.img");
        std::fs::write(&img, "").unwrap();
        assert!(!made_by_us(&img), "no marker");
        std::fs::write(image_marker(&img), "").unwrap();
        assert!(made_by_us(&img));
        std::fs::set_permissions(image_marker(&img), std::fs::Permissions::from_mode(0o666)).unwrap();
        assert!(!made_by_us(&img), "a marker anyone may write");
        std::fs::set_permissions(image_marker(&img), std::fs::Permissions::from_mode(0o644)).unwrap();
        if rustix::process::geteuid().is_root() {
            std::os::unix::fs::chown(image_marker(&img), Some(4242), None).unwrap();
            assert!(!made_by_us(&img), "another user's marker");
            std::os::unix::fs::chown(image_marker(&img), Some(0), None).unwrap();
        }
        // A link named as the image, to someone's file with a marker of its own.
        let theirs = dir.path().join("theirs.img");
        std::fs::write(&theirs, "data").unwrap();
        std::fs::write(image_marker(&theirs), "").unwrap();
        let link = dir.path().join("link.img");
        std::os::unix::fs::symlink(&theirs, &link).unwrap();
        std::os::unix::fs::symlink(image_marker(&theirs), image_marker(&link)).unwrap();
        assert!(!made_by_us(&link));
        assert!(create_new(&link).is_err(), "never written through a link");
        assert_eq!(std::fs::read_to_string(&theirs).unwrap(), "data");
    }
}
