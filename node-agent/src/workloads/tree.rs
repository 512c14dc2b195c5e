//! `tree`: build the deterministic tree of [`crate::treegen`] under
//! `<target mount>/<dir>`, the input of `acl_check`, `copy_tree`,
//! `list_tree` and `read_tree`. Not a measured benchmark, though its wall
//! time is returned as `time`.
//!
//! Directories are mode 0755 and files 0640, owned by the agent's user
//! (root): "other" gets nothing, so with `acl_entries > 0` only the ACL's
//! named user `acl_uid` may read a file besides its owner and group. File
//! `i`'s bytes are [`content::fill`] of kind `content` drawn, in 1 MiB pieces,
//! from `Rng::new(plan.content_seed(i))`: the same arguments give the same
//! bytes everywhere. A tree of the same name is removed first, untimed; the
//! build ends with `sync`, so a following cold step starts from disk.

use crate::content::{self, Rng};
use crate::outbox::StepCtx;
use crate::state::HostState;
use crate::{acl, cache, treegen};
use benchrig_wire::args::TreeArgs;
use benchrig_wire::messages::{AgentError, LogLevel};
use benchrig_wire::metrics::TIME;
use benchrig_wire::steps::{Metric, StepOutput};
use std::fs::{DirBuilder, OpenOptions};
use std::io::Write;
use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt};
use std::path::{Component, Path, PathBuf};
use std::time::Instant;

pub const FILE_MODE: u32 = 0o640;
pub const DIR_MODE: u32 = 0o755;
/// Contents are generated in pieces of this size (part of what fixes the bytes).
const CHUNK: usize = 1 << 20;

pub fn run(st: &mut HostState, ctx: &StepCtx, args: &TreeArgs) -> Result<StepOutput, AgentError> {
    check_dir_name(&args.dir, "dir")?;
    let plan = treegen::plan(args).map_err(AgentError::failed)?;
    let acl_value = match args.acl_entries {
        0 => None,
        n => Some(acl::encode(&acl::extended(n, args.acl_uid).map_err(|e| AgentError::failed(format!("tree: {e}")))?)),
    };
    let root = st.target(args.target.as_deref())?.mountpoint.join(&args.dir);
    remove_existing(&root)?;
    if let Some(parent) = root.parent() {
        std::fs::create_dir_all(parent).map_err(|e| AgentError::failed(format!("mkdir {}: {e}", parent.display())))?;
    }

    let start = Instant::now();
    for d in &plan.dirs {
        ctx.check_cancel()?;
        let p = if d.is_empty() { root.clone() } else { root.join(d) };
        DirBuilder::new()
            .mode(DIR_MODE)
            .create(&p)
            .map_err(|e| AgentError::failed(format!("mkdir {}: {e}", p.display())))?;
        // Whatever the umask: the checking user must be able to search it.
        chmod(&p, DIR_MODE)?;
    }
    let total = plan.total_bytes();
    let biggest = plan.files.iter().map(|f| f.size).max().unwrap_or(0);
    let mut buf = vec![0u8; (biggest as usize).min(CHUNK)];
    let mut written = 0u64;
    for (i, f) in plan.files.iter().enumerate() {
        ctx.check_cancel()?;
        let p = root.join(&f.path);
        let err = |what: &str, e: &dyn std::fmt::Display| AgentError::failed(format!("{what} {}: {e}", p.display()));
        let mut file =
            OpenOptions::new().write(true).create_new(true).mode(FILE_MODE).open(&p).map_err(|e| err("create", &e))?;
        rustix::fs::fchmod(&file, rustix::fs::Mode::from_raw_mode(FILE_MODE)).map_err(|e| err("chmod", &e))?;
        let mut rng = Rng::new(plan.content_seed(i));
        let mut left = f.size;
        while left > 0 {
            let n = left.min(CHUNK as u64) as usize;
            content::fill(args.content, &mut rng, &mut buf[..n]);
            file.write_all(&buf[..n]).map_err(|e| err("write", &e))?;
            left -= n as u64;
        }
        if let Some(v) = &acl_value {
            rustix::fs::fsetxattr(&file, acl::ACCESS, v, rustix::fs::XattrFlags::empty()).map_err(|e| {
                if is_unsupported(e) {
                    AgentError::failed(format!(
                        "{} does not support POSIX ACLs ({e}): use a filesystem or mount option with ACLs, or acl_entries: 0",
                        root.display()
                    ))
                } else {
                    err("set the ACL of", &e)
                }
            })?;
        }
        written += f.size;
        ctx.progress(written, total, "writing the tree");
    }
    rustix::fs::sync();
    let seconds = start.elapsed().as_secs_f64();

    let mut out = StepOutput::default();
    out.metrics.push(Metric::of(&TIME, seconds));
    let info = &mut out.info;
    info.insert("path".into(), root.to_string_lossy().into_owned().into());
    info.insert("files".into(), plan.files.len().into());
    info.insert("dirs".into(), plan.dirs.len().into());
    info.insert("bytes".into(), written.into());
    info.insert("seconds".into(), seconds.into());
    info.insert("acl_entries".into(), args.acl_entries.into());
    Ok(out)
}

/// A tree's directory is a plain relative path below the mount point: the
/// agent removes it before rebuilding, so nothing may lead outside.
pub(crate) fn check_dir_name(dir: &str, what: &str) -> Result<(), AgentError> {
    let p = Path::new(dir);
    let plain = !dir.is_empty() && p.components().all(|c| matches!(c, Component::Normal(_)));
    if plain {
        Ok(())
    } else {
        Err(AgentError::failed(format!(
            "`{what}: {dir}` must be a relative path below the mount point, without `.` or `..`"
        )))
    }
}

/// The tree a reading workload works on, which must exist, and the devices
/// under it. Reading changes nothing, so `.` (the whole mount, as a remote
/// tree is read) is allowed; a way out of the mount (`..`, `/`) is not.
pub(crate) fn existing_tree(
    st: &HostState,
    target: Option<&str>,
    dir: &str,
) -> Result<(PathBuf, Vec<String>), AgentError> {
    if !Path::new(dir).components().all(|c| matches!(c, Component::Normal(_) | Component::CurDir)) {
        return Err(AgentError::failed(format!(
            "`dir: {dir}` must be a relative path below the mount point, without `..`"
        )));
    }
    let (root, devices) = super::target_file(st, target, dir)?;
    if !root.is_dir() {
        return Err(AgentError::failed(format!("{} does not exist: run a `tree` step first", root.display())));
    }
    Ok((root, devices))
}

/// Remove what a previous step left under this name (untimed), and flush
/// the removal so its writeback does not land in the next timed region.
pub(crate) fn remove_existing(path: &Path) -> Result<(), AgentError> {
    match path.symlink_metadata() {
        Err(_) => return Ok(()),
        Ok(m) if m.is_dir() => std::fs::remove_dir_all(path),
        Ok(_) => std::fs::remove_file(path),
    }
    .map_err(|e| AgentError::failed(format!("cannot remove the previous {}: {e}", path.display())))?;
    rustix::fs::sync();
    Ok(())
}

/// Drop the page, dentry and inode caches before a cold step: `Some(method)`
/// as root; without root nothing global can be dropped, so the step runs
/// warm and says so (`cold: false` in its info).
pub(crate) fn make_cold(ctx: &StepCtx, st: &HostState) -> Option<&'static str> {
    if !rustix::process::geteuid().is_root() {
        ctx.log(LogLevel::Warn, "caches not dropped (the agent is not root): this run is warm");
        return None;
    }
    match cache::make_cold(None, &st.own_filesystems()) {
        Ok(c) => Some(c.method),
        Err(e) => {
            ctx.log(LogLevel::Warn, format!("caches not dropped: {e}"));
            None
        }
    }
}

pub(crate) fn cold_info(method: Option<&'static str>) -> serde_json::Value {
    match method {
        Some(m) => m.into(),
        None => false.into(),
    }
}

/// The filesystem has no such xattr namespace (or no xattrs at all).
pub(crate) fn is_unsupported(e: rustix::io::Errno) -> bool {
    use rustix::io::Errno;
    e == Errno::NOTSUP || e == Errno::OPNOTSUPP || e == Errno::NOSYS
}

fn chmod(p: &Path, mode: u32) -> Result<(), AgentError> {
    rustix::fs::chmod(p, rustix::fs::Mode::from_raw_mode(mode))
        .map_err(|e| AgentError::failed(format!("chmod {}: {e}", p.display())))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dir_names_stay_below_the_mount() {
        for ok in ["tree", "a/b", "copy-1"] {
            assert!(check_dir_name(ok, "dir").is_ok(), "{ok}");
        }
        for bad in ["", ".", "..", "../x", "a/../../b", "/etc", "./tree"] {
            assert!(check_dir_name(bad, "dir").is_err(), "{bad}");
        }
    }
}
