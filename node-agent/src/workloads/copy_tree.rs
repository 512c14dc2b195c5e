//! `copy_tree` (Tables 6 and 7 of Grünbacher's ACL paper: `cp -a` of a
//! tree with and without EAs/ACLs, then `sync`): copy `<from>/<from_dir>` to
//! `<to>/<to_dir>` the way cp does — directories, regular files through a
//! 1 MiB buffer with read and write (never `copy_file_range`, which some
//! filesystems turn into a reflink or a server-side copy), symlinks — and
//! with `preserve: xattrs` every extended attribute of every file,
//! directory and symlink, ACLs (`system.posix_acl_*`) included.
//!
//! Modes are the source's (less the umask, as cp without `-p`); owners are
//! the agent's user. A previous copy of the same name is removed first,
//! untimed. With `sync` the clock stops after `sync()` returns. Device
//! counters cover both the source's and the destination's devices.

use super::transfer_output;
use super::tree::{check_dir_name, existing_tree, is_unsupported, remove_existing};
use crate::measure::Meter;
use crate::outbox::StepCtx;
use crate::state::HostState;
use benchrig_wire::args::{CopyTreeArgs, Preserve};
use benchrig_wire::messages::AgentError;
use benchrig_wire::metrics::FILES_PER_S;
use benchrig_wire::steps::{Metric, StepOutput};
use std::ffi::OsStr;
use std::fs::{DirBuilder, File, OpenOptions};
use std::io::{Read, Write};
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};

const BUF: usize = 1 << 20;
/// Linux's limit on one xattr value and on a list of names.
const XATTR_MAX: usize = 64 << 10;

#[derive(Default)]
struct Copied {
    files: u64,
    dirs: u64,
    symlinks: u64,
    skipped: u64,
    bytes: u64,
    xattrs: u64,
}

pub fn run(st: &mut HostState, ctx: &StepCtx, args: &CopyTreeArgs) -> Result<StepOutput, AgentError> {
    let (src, src_devices) = existing_tree(st, Some(&args.from), &args.from_dir)?;
    check_dir_name(&args.to_dir, "to_dir")?;
    let to = st.target(args.to.as_deref())?;
    let dst = to.mountpoint.join(&args.to_dir);
    let mut devices = src_devices;
    for d in &to.devices {
        if !devices.contains(d) {
            devices.push(d.clone());
        }
    }
    let src_real = src.canonicalize().map_err(|e| AgentError::failed(format!("{}: {e}", src.display())))?;
    let dst_parent =
        to.mountpoint.canonicalize().map_err(|e| AgentError::failed(format!("{}: {e}", to.mountpoint.display())))?;
    let dst_real = dst_parent.join(&args.to_dir);
    if dst_real.starts_with(&src_real) || src_real.starts_with(&dst_real) {
        return Err(AgentError::failed(format!(
            "copy_tree from {} to {}: one is inside the other",
            src_real.display(),
            dst_real.display()
        )));
    }
    remove_existing(&dst)?;
    if let Some(parent) = dst.parent() {
        std::fs::create_dir_all(parent).map_err(|e| AgentError::failed(format!("mkdir {}: {e}", parent.display())))?;
    }

    let mut c = Copier {
        preserve: args.preserve,
        buf: vec![0u8; BUF],
        xbuf: vec![0u8; XATTR_MAX],
        names: vec![0u8; XATTR_MAX],
        n: Copied::default(),
    };
    let meter = Meter::start(ctx, &st.view, &devices);
    c.tree(ctx, &src, &dst)?;
    if args.sync {
        rustix::fs::sync();
    }
    let usage = meter.stop();

    let n = &c.n;
    let files_per_s = if usage.wall_s > 0.0 { n.files as f64 / usage.wall_s } else { 0.0 };
    let mut out = transfer_output(n.bytes, usage);
    out.metrics.push(Metric::of(&FILES_PER_S, files_per_s));
    let info = &mut out.info;
    info.insert("from".into(), src.to_string_lossy().into_owned().into());
    info.insert("to".into(), dst.to_string_lossy().into_owned().into());
    info.insert("files".into(), n.files.into());
    info.insert("dirs".into(), n.dirs.into());
    info.insert("symlinks".into(), n.symlinks.into());
    info.insert("skipped".into(), n.skipped.into());
    info.insert("xattrs".into(), n.xattrs.into());
    info.insert("preserve".into(), serde_json::json!(args.preserve));
    info.insert("sync".into(), args.sync.into());
    Ok(out)
}

struct Copier {
    preserve: Preserve,
    buf: Vec<u8>,
    xbuf: Vec<u8>,
    names: Vec<u8>,
    n: Copied,
}

impl Copier {
    /// Each directory's entries in readdir order (as cp reads them), then
    /// its subdirectories. A directory's xattrs are copied once everything
    /// in it is, as cp does: a default ACL set earlier would be inherited by
    /// the files made in it, which the source's files may not have.
    fn tree(&mut self, ctx: &StepCtx, src: &Path, dst: &Path) -> Result<(), AgentError> {
        let meta = src.symlink_metadata().map_err(|e| AgentError::failed(format!("lstat {}: {e}", src.display())))?;
        self.dir(dst, &meta)?;
        let mut made = vec![(src.to_path_buf(), dst.to_path_buf())];
        let mut stack: Vec<(PathBuf, PathBuf)> = vec![(src.to_path_buf(), dst.to_path_buf())];
        while let Some((s, d)) = stack.pop() {
            let rd = std::fs::read_dir(&s).map_err(|e| AgentError::failed(format!("read {}: {e}", s.display())))?;
            let mut subdirs = Vec::new();
            for entry in rd {
                ctx.check_cancel()?;
                let entry = entry.map_err(|e| AgentError::failed(format!("read {}: {e}", s.display())))?;
                let (sp, dp) = (entry.path(), d.join(entry.file_name()));
                let meta =
                    sp.symlink_metadata().map_err(|e| AgentError::failed(format!("lstat {}: {e}", sp.display())))?;
                let ty = meta.file_type();
                if ty.is_dir() {
                    self.dir(&dp, &meta)?;
                    made.push((sp.clone(), dp.clone()));
                    subdirs.push((sp, dp));
                } else if ty.is_file() {
                    self.file(&sp, &dp, &meta)?;
                } else if ty.is_symlink() {
                    let target = std::fs::read_link(&sp)
                        .map_err(|e| AgentError::failed(format!("readlink {}: {e}", sp.display())))?;
                    std::os::unix::fs::symlink(&target, &dp)
                        .map_err(|e| AgentError::failed(format!("symlink {}: {e}", dp.display())))?;
                    self.xattrs(&sp, &dp)?;
                    self.n.symlinks += 1;
                } else {
                    // Devices, fifos and sockets: cp -a would make them; a tree has none.
                    self.n.skipped += 1;
                }
            }
            ctx.progress(self.n.files, 0, "copying");
            stack.extend(subdirs.into_iter().rev());
        }
        for (s, d) in made.iter().rev() {
            ctx.check_cancel()?;
            self.xattrs(s, d)?;
        }
        Ok(())
    }

    fn dir(&mut self, dst: &Path, meta: &std::fs::Metadata) -> Result<(), AgentError> {
        DirBuilder::new()
            .mode(meta.permissions().mode() & 0o7777)
            .create(dst)
            .map_err(|e| AgentError::failed(format!("mkdir {}: {e}", dst.display())))?;
        self.n.dirs += 1;
        Ok(())
    }

    fn file(&mut self, src: &Path, dst: &Path, meta: &std::fs::Metadata) -> Result<(), AgentError> {
        let mut from = File::open(src).map_err(|e| AgentError::failed(format!("open {}: {e}", src.display())))?;
        let mut to = OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(meta.permissions().mode() & 0o7777)
            .open(dst)
            .map_err(|e| AgentError::failed(format!("create {}: {e}", dst.display())))?;
        loop {
            let n = match from.read(&mut self.buf) {
                Ok(0) => break,
                Ok(n) => n,
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
                Err(e) => return Err(AgentError::failed(format!("read {}: {e}", src.display()))),
            };
            to.write_all(&self.buf[..n]).map_err(|e| AgentError::failed(format!("write {}: {e}", dst.display())))?;
            self.n.bytes += n as u64;
        }
        drop((from, to));
        self.xattrs(src, dst)?;
        self.n.files += 1;
        Ok(())
    }

    /// Every xattr of `src` onto `dst` (not following symlinks), when preserving.
    fn xattrs(&mut self, src: &Path, dst: &Path) -> Result<(), AgentError> {
        if self.preserve == Preserve::None {
            return Ok(());
        }
        let mut names = std::mem::take(&mut self.names);
        let r = self.copy_listed(src, dst, &mut names);
        self.names = names;
        r
    }

    fn copy_listed(&mut self, src: &Path, dst: &Path, names: &mut [u8]) -> Result<(), AgentError> {
        let len = match rustix::fs::llistxattr(src, &mut names[..]) {
            Ok(n) => n,
            Err(e) if is_unsupported(e) => return Ok(()),
            Err(e) => return Err(AgentError::failed(format!("listxattr {}: {e}", src.display()))),
        };
        for name in names[..len].split(|&b| b == 0).filter(|n| !n.is_empty()) {
            let name = OsStr::from_bytes(name);
            let n = match rustix::fs::lgetxattr(src, name, &mut self.xbuf[..]) {
                Ok(n) => n,
                // Removed since it was listed.
                Err(rustix::io::Errno::NODATA) => continue,
                Err(e) => return Err(AgentError::failed(format!("getxattr {} {name:?}: {e}", src.display()))),
            };
            rustix::fs::lsetxattr(dst, name, &self.xbuf[..n], rustix::fs::XattrFlags::empty()).map_err(|e| {
                AgentError::failed(format!(
                    "cannot copy the xattr {name:?} to {}: {e}{}",
                    dst.display(),
                    if is_unsupported(e) { " (the destination filesystem does not support it)" } else { "" }
                ))
            })?;
            self.n.xattrs += 1;
        }
        Ok(())
    }
}
