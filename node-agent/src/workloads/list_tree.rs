//! `list_tree`: what `ls -lR` asks of a filesystem, without the printing.
//! For every directory: read all its entries, then for each entry `lstat`,
//! `readlink` for a symlink, and the ACL-present check of libacl's
//! `acl_extended_file_nofollow` (which `ls` uses to print its `+`): the size
//! of `system.posix_acl_access` (more than three entries is an ACL) and,
//! when that says no, of `system.posix_acl_default`. A filesystem without
//! xattrs or ACLs (an sshfs mount, say) has no ACLs; that is not an error.
//! Then into the subdirectories, in name order as `ls` sorts them.
//!
//! Cold by default: the page, dentry and inode caches are dropped first
//! (root only; otherwise the run is warm and `cold: false` says so).

use super::tree::{cold_info, existing_tree, is_unsupported, make_cold};
use crate::acl;
use crate::measure::Meter;
use crate::outbox::StepCtx;
use crate::state::HostState;
use benchrig_wire::args::ListTreeArgs;
use benchrig_wire::messages::AgentError;
use benchrig_wire::metrics::{ENTRIES_PER_S, TIME};
use benchrig_wire::steps::{Metric, StepOutput};
use rustix::io::Errno;
use std::path::{Path, PathBuf};

#[derive(Debug, Default, PartialEq)]
pub(crate) struct Listing {
    pub entries: u64,
    pub dirs: u64,
    pub files: u64,
    pub symlinks: u64,
    pub with_acl: u64,
}

pub fn run(st: &mut HostState, ctx: &StepCtx, args: &ListTreeArgs) -> Result<StepOutput, AgentError> {
    let (root, devices) = existing_tree(st, args.target.as_deref(), &args.dir)?;
    let cold = if args.cold { make_cold(ctx, st) } else { None };
    let meter = Meter::start(ctx, &st.view, &devices);
    let l = list(ctx, &root)?;
    let usage = meter.stop();

    let mut out = StepOutput::default();
    out.metrics.push(Metric::of(&TIME, usage.wall_s));
    let rate = if usage.wall_s > 0.0 { l.entries as f64 / usage.wall_s } else { 0.0 };
    out.metrics.push(Metric::of(&ENTRIES_PER_S, rate));
    out.usage = Some(usage);
    let info = &mut out.info;
    info.insert("entries".into(), l.entries.into());
    info.insert("dirs".into(), l.dirs.into());
    info.insert("files".into(), l.files.into());
    info.insert("symlinks".into(), l.symlinks.into());
    info.insert("with_acl".into(), l.with_acl.into());
    info.insert("cold".into(), cold_info(cold));
    Ok(out)
}

/// Everything below `root` (not `root` itself).
pub(crate) fn list(ctx: &StepCtx, root: &Path) -> Result<Listing, AgentError> {
    let mut l = Listing::default();
    let mut stack = vec![root.to_path_buf()];
    while let Some(dir) = stack.pop() {
        ctx.check_cancel()?;
        let mut names: Vec<std::ffi::OsString> = std::fs::read_dir(&dir)
            .and_then(|rd| rd.map(|e| e.map(|e| e.file_name())).collect())
            .map_err(|e| AgentError::failed(format!("read {}: {e}", dir.display())))?;
        names.sort();
        let mut subdirs: Vec<PathBuf> = Vec::new();
        for name in names {
            let p = dir.join(&name);
            let meta = p.symlink_metadata().map_err(|e| AgentError::failed(format!("lstat {}: {e}", p.display())))?;
            let ty = meta.file_type();
            l.entries += 1;
            if ty.is_dir() {
                l.dirs += 1;
                subdirs.push(p.clone());
            } else if ty.is_file() {
                l.files += 1;
            } else if ty.is_symlink() {
                l.symlinks += 1;
                std::fs::read_link(&p).map_err(|e| AgentError::failed(format!("readlink {}: {e}", p.display())))?;
            }
            if has_acl(&p)? {
                l.with_acl += 1;
            }
        }
        ctx.progress(l.entries, 0, "listing");
        stack.extend(subdirs.into_iter().rev());
    }
    Ok(l)
}

/// libacl's `acl_extended_file_nofollow`, by xattr size queries.
pub(crate) fn has_acl(p: &Path) -> Result<bool, AgentError> {
    let size = |name: &str| match rustix::fs::lgetxattr_query(p, name) {
        Ok(n) => Ok(Some(n)),
        Err(Errno::NODATA) => Ok(Some(0)),
        Err(e) if is_unsupported(e) => Ok(None),
        Err(e) => Err(AgentError::failed(format!("getxattr {} {name}: {e}", p.display()))),
    };
    match size(acl::ACCESS)? {
        None => Ok(false),
        Some(n) if n > acl::MINIMAL_SIZE => Ok(true),
        Some(_) => Ok(size(acl::DEFAULT)?.is_some_and(|n| n >= acl::MINIMAL_SIZE)),
    }
}
