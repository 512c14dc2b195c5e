//! `read_tree`: read every file of a tree in archive order, the way `tar`
//! reads a tree it archives (the seed paper's "tar" read test).
//!
//! - `builtin`: the agent walks the tree as GNU tar does — depth first, each
//!   directory's entries in `readdir` order, a directory's subtree as soon as
//!   it is met — and writes a tar archive (the `tar` crate's `Builder`) into
//!   a sink that only counts bytes. Every file is opened and read to its end.
//! - `gnu_tar`: the host's `tar cf - .` in the tree (under `supervisor`),
//!   its stdout a pipe the agent drains, never `/dev/null` (GNU tar
//!   recognises that and skips reading file data). The agent parses the stream as it passes, so
//!   `file_bytes` counts what tar really archived; tar's CPU time is in the
//!   usage (it is waited for inside the timed region). A non-zero exit fails.
//!
//! `throughput` is file content bytes over the time; `archive_bytes` is the
//! archive's length (headers and padding included).

use super::transfer_output;
use super::tree::{cold_info, existing_tree, make_cold};
use crate::measure::Meter;
use crate::outbox::StepCtx;
use crate::state::HostState;
use crate::supervisor::{self, StdoutTo, Supervised};
use benchrig_wire::args::{ReadTreeArgs, TreeReader};
use benchrig_wire::messages::AgentError;
use benchrig_wire::steps::StepOutput;
use std::ffi::OsString;
use std::fs::File;
use std::io::{BufReader, Read, Write};
use std::path::{Path, PathBuf};

#[derive(Debug, Default, PartialEq)]
pub(crate) struct Archived {
    /// Content bytes of regular files, as read.
    pub file_bytes: u64,
    pub archive_bytes: u64,
    pub files: u64,
    pub dirs: u64,
}

pub fn run(st: &mut HostState, ctx: &StepCtx, args: &ReadTreeArgs) -> Result<StepOutput, AgentError> {
    let (root, devices) = existing_tree(st, args.target.as_deref(), &args.dir)?;
    let tar = match args.reader {
        TreeReader::Builtin => None,
        TreeReader::GnuTar => Some(crate::needs::program("tar")?),
    };
    let cold = if args.cold { make_cold(ctx, st) } else { None };
    let meter = Meter::start(ctx, &st.view, &devices);
    let a = match &tar {
        None => builtin(ctx, &root)?,
        Some(tar) => gnu_tar(ctx, tar, &root)?,
    };
    let mut out = transfer_output(a.file_bytes, meter.stop());
    let info = &mut out.info;
    info.insert("file_bytes".into(), a.file_bytes.into());
    info.insert("archive_bytes".into(), a.archive_bytes.into());
    info.insert("files".into(), a.files.into());
    info.insert("dirs".into(), a.dirs.into());
    info.insert("reader".into(), serde_json::json!(args.reader));
    info.insert("cold".into(), cold_info(cold));
    Ok(out)
}

/// Counts what is written to it and keeps nothing.
#[derive(Default)]
struct CountingSink(u64);

impl Write for CountingSink {
    fn write(&mut self, b: &[u8]) -> std::io::Result<usize> {
        self.0 += b.len() as u64;
        Ok(b.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

/// Counts what is read through it.
struct CountingReader<R> {
    inner: R,
    n: u64,
}

impl<R: Read> Read for CountingReader<R> {
    fn read(&mut self, b: &mut [u8]) -> std::io::Result<usize> {
        let n = self.inner.read(b)?;
        self.n += n as u64;
        Ok(n)
    }
}

fn names(dir: &Path) -> Result<Vec<OsString>, AgentError> {
    std::fs::read_dir(dir)
        .and_then(|rd| rd.map(|e| e.map(|e| e.file_name())).collect())
        .map_err(|e| AgentError::failed(format!("read {}: {e}", dir.display())))
}

pub(crate) fn builtin(ctx: &StepCtx, root: &Path) -> Result<Archived, AgentError> {
    use tar::{EntryType, Header, HeaderMode};
    let mut a = Archived::default();
    let mut b = tar::Builder::new(CountingSink::default());
    let werr = |e: std::io::Error| AgentError::failed(format!("tar: {e}"));
    let header = |meta: &std::fs::Metadata| {
        let mut h = Header::new_gnu();
        h.set_metadata_in_mode(meta, HeaderMode::Complete);
        h
    };
    let meta = root.symlink_metadata().map_err(|e| AgentError::failed(format!("lstat {}: {e}", root.display())))?;
    b.append_data(&mut header(&meta), ".", std::io::empty()).map_err(werr)?;
    a.dirs += 1;
    // (directory relative to root, its entries, the next one to archive)
    let mut stack: Vec<(PathBuf, Vec<OsString>, usize)> = vec![(PathBuf::new(), names(root)?, 0)];
    while let Some((dir, list, next)) = stack.last_mut() {
        ctx.check_cancel()?;
        let Some(name) = list.get(*next).cloned() else {
            stack.pop();
            continue;
        };
        *next += 1;
        let rel = dir.join(&name);
        let path = root.join(&rel);
        let name = Path::new(".").join(&rel);
        let meta = path.symlink_metadata().map_err(|e| AgentError::failed(format!("lstat {}: {e}", path.display())))?;
        let ty = meta.file_type();
        let mut h = header(&meta);
        if ty.is_dir() {
            b.append_data(&mut h, &name, std::io::empty()).map_err(werr)?;
            a.dirs += 1;
            let entries = names(&path)?;
            stack.push((rel, entries, 0));
        } else if ty.is_file() {
            let f = File::open(&path).map_err(|e| AgentError::failed(format!("open {}: {e}", path.display())))?;
            let mut r = CountingReader { inner: f, n: 0 };
            b.append_data(&mut h, &name, &mut r)
                .map_err(|e| AgentError::failed(format!("read {}: {e}", path.display())))?;
            if r.n != meta.len() {
                return Err(AgentError::failed(format!(
                    "{} changed while being read ({} bytes, then {})",
                    path.display(),
                    meta.len(),
                    r.n
                )));
            }
            a.file_bytes += r.n;
            a.files += 1;
            ctx.progress(a.file_bytes, 0, "reading");
        } else if ty.is_symlink() {
            let target = std::fs::read_link(&path)
                .map_err(|e| AgentError::failed(format!("readlink {}: {e}", path.display())))?;
            h.set_entry_type(EntryType::Symlink);
            b.append_link(&mut h, &name, &target).map_err(werr)?;
        }
        // Sockets, fifos and devices: nothing to read.
    }
    a.archive_bytes = b.into_inner().map_err(werr)?.0;
    Ok(a)
}

pub(crate) fn gnu_tar(ctx: &StepCtx, tar: &Path, root: &Path) -> Result<Archived, AgentError> {
    let mut command = supervisor::command(tar);
    command.args(["cf", "-", "."]).current_dir(root);
    let mut run = Supervised::spawn(&mut command, StdoutTo::Pipe)
        .map_err(|e| AgentError::failed(format!("cannot run {}: {e}", tar.display())))?;
    let drained = drain(ctx, run.take_stdout().expect("stdout is piped"));
    if drained.is_err() {
        run.kill();
    }
    // Its output has ended (or it was killed): it is exiting, so no cancel is needed.
    let status = run.wait(None, None);
    let stderr = run.collect().stderr_text();
    let a = drained?;
    let (status, _) = status.map_err(|e| AgentError::failed(format!("waiting for tar: {e}")))?;
    if !status.success() {
        let why = supervisor::last_line(&stderr).unwrap_or("");
        return Err(AgentError::failed(format!("`tar cf - .` in {} failed ({status}): {why}", root.display())));
    }
    Ok(a)
}

/// Parse the archive as it streams by, reading every file's data, then
/// the end-of-archive blocks and padding.
fn drain(ctx: &StepCtx, stdout: impl Read) -> Result<Archived, AgentError> {
    let mut r = CountingReader { inner: BufReader::with_capacity(256 << 10, stdout), n: 0 };
    let mut a = Archived::default();
    let mut sink = CountingSink::default();
    let bad = |e: std::io::Error| AgentError::failed(format!("reading tar's output: {e}"));
    {
        let mut archive = tar::Archive::new(&mut r);
        for entry in archive.entries().map_err(bad)? {
            ctx.check_cancel()?;
            let mut e = entry.map_err(bad)?;
            let ty = e.header().entry_type();
            if ty.is_file() {
                let n = std::io::copy(&mut e, &mut sink).map_err(bad)?;
                a.file_bytes += n;
                a.files += 1;
                ctx.progress(a.file_bytes, 0, "reading");
            } else if ty.is_dir() {
                a.dirs += 1;
            }
        }
    }
    std::io::copy(&mut r, &mut sink).map_err(bad)?;
    a.archive_bytes = r.n;
    Ok(a)
}
