//! `raw`: the reference lines under any filesystem: a sequential read of a
//! scratch device, a sequential write to one, and a device-to-device copy,
//! all O_DIRECT in `bs` chunks, writes fsynced inside the timing.
//!
//! Reading needs no safety rule, but only a listed scratch device that is a
//! block device is read (`scratch::resolve`). Writing destroys what the
//! device holds, so the device written (`device` for write, `to` for copy)
//! passes exactly the rules mkfs passes (`scratch::resolve_and_check`) and
//! is then held open with O_EXCL, so nothing can mount it while it is
//! written. A `kind: image` scratch is attached to a loop device for the
//! step, as `filesystem` does, and detached after it.

use super::transfer_output;
use crate::buffer::{IoBuffer, ALIGN};
use crate::cache;
use crate::facts;
use crate::measure::Meter;
use crate::outbox::StepCtx;
use crate::real_device::RealDevice;
use crate::scratch::{self, ScratchBlock};
use crate::state::HostState;
use crate::undo::detach_loop;
use benchrig_wire::args::{RawArgs, RawOp};
use benchrig_wire::messages::AgentError;
use benchrig_wire::scratch::ScratchKind;
use benchrig_wire::steps::StepOutput;
use serde_json::json;
use std::fs::{File, OpenOptions};
use std::io::{Read, Seek, SeekFrom, Write};
use std::os::unix::fs::OpenOptionsExt;
use std::path::PathBuf;

/// Loop devices attached for this step, detached however it ends.
#[derive(Default)]
struct Attached(Vec<PathBuf>);

impl Drop for Attached {
    fn drop(&mut self) {
        for dev in &self.0 {
            let _ = detach_loop(dev);
        }
    }
}

/// A listed device entry, or why a directory cannot be one.
fn device_entry(st: &HostState, name: &str) -> Result<scratch::Listed, AgentError> {
    let entry = scratch::listed(st, name)?;
    if entry.kind == ScratchKind::Directory {
        return Err(AgentError::unsupported(format!(
            "scratch `{}` is a directory; raw reads and writes need a device",
            entry.name
        )));
    }
    Ok(entry)
}

/// A device to read: listed and a block device; nothing else is asked.
fn source(st: &HostState, name: &str, attached: &mut Attached) -> Result<ScratchBlock, AgentError> {
    let block = scratch::resolve(st, &device_entry(st, name)?)?;
    attached.0.extend(block.attached.clone());
    Ok(block)
}

/// A device to overwrite: every rule mkfs must pass.
fn destination(st: &HostState, name: &str, attached: &mut Attached) -> Result<ScratchBlock, AgentError> {
    let entry = device_entry(st, name)?;
    if let Some(fs) = crate::fs_name::FsName::of(&entry.path) {
        return Err(AgentError::unsupported(format!(
            "scratch `{name}` is named by its {}, which a raw write would erase",
            fs.describe()
        )));
    }
    let block = scratch::resolve_and_check(st, &entry)?;
    attached.0.extend(block.attached.clone());
    Ok(block)
}

fn open(dev: &ScratchBlock, write: bool) -> Result<File, AgentError> {
    let mut flags = rustix::fs::OFlags::DIRECT;
    if write {
        // Claims the device: no mount (or mkfs) can take it while it is written.
        flags |= rustix::fs::OFlags::EXCL;
    }
    OpenOptions::new()
        .read(!write)
        .write(write)
        .custom_flags(flags.bits() as i32)
        .open(&dev.path)
        .map_err(|e| AgentError::failed(format!("open {} ({}) with O_DIRECT: {e}", dev.name, dev.path.display())))
}

fn check_fits(f: &mut File, dev: &ScratchBlock, size: u64) -> Result<(), AgentError> {
    let have = f.seek(SeekFrom::End(0)).and_then(|n| f.seek(SeekFrom::Start(0)).map(|_| n));
    let have = have.map_err(|e| AgentError::failed(format!("size of {}: {e}", dev.path.display())))?;
    if size > have {
        return Err(AgentError::failed(format!(
            "size {size} is more than {} ({}) holds: {have} bytes",
            dev.name,
            dev.path.display()
        )));
    }
    Ok(())
}

/// Random bytes to write from, several megabytes so consecutive blocks
/// differ (as seq_write's pool: nothing under the device can compress or
/// dedupe them), made before the clock starts.
struct Pool {
    buf: IoBuffer,
    bs: usize,
    slots: usize,
}

impl Pool {
    fn new(bs: usize) -> Self {
        let len = (4usize << 20).max(2 * bs).next_multiple_of(ALIGN);
        let seed = (std::process::id() as u64) << 32
            ^ std::time::UNIX_EPOCH.elapsed().map(|d| d.as_nanos() as u64).unwrap_or(7);
        Pool { buf: IoBuffer::random(len, seed), bs, slots: ((len - bs) / ALIGN).max(1) }
    }

    fn block(&self, i: u64) -> &[u8] {
        let start = ((i.wrapping_mul(7919) % self.slots as u64) as usize) * ALIGN;
        &self.buf.as_ref()[start..start + self.bs]
    }
}

/// Fill `buf` from `f`; O_DIRECT reads of a device return whole requests
/// except at its end, which `check_fits` rules out.
fn read_full(f: &mut File, buf: &mut [u8], dev: &ScratchBlock) -> Result<(), AgentError> {
    let mut got = 0;
    while got < buf.len() {
        match f.read(&mut buf[got..]) {
            Ok(0) => return Err(AgentError::failed(format!("{} ended early", dev.path.display()))),
            Ok(n) => got += n,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) => return Err(AgentError::failed(format!("read {}: {e}", dev.path.display()))),
        }
    }
    Ok(())
}

pub fn run(st: &mut HostState, ctx: &StepCtx, args: &RawArgs) -> Result<StepOutput, AgentError> {
    let bs = args.bs.0 as usize;
    let size = args.size.0;
    if bs == 0 || !bs.is_multiple_of(ALIGN) || size == 0 || !size.is_multiple_of(ALIGN as u64) {
        return Err(AgentError::failed(format!(
            "raw is O_DIRECT: bs and size must be non-zero multiples of 4k (bs {}, size {})",
            args.bs, args.size
        )));
    }
    let bad = |m: &str| Err(AgentError::bad_request(m));
    match (args.op, args.to.as_deref()) {
        (RawOp::Copy, None) => return bad("raw copy needs `to`, the device to copy onto"),
        (RawOp::Copy, Some(to)) if to == args.device => return bad("raw copy: `to` is the device copied from"),
        (RawOp::Read | RawOp::Write, Some(_)) => return bad("`to` is only for raw copy"),
        _ => {}
    }

    let mut attached = Attached::default();
    let (from, to) = match args.op {
        RawOp::Read => (Some(source(st, &args.device, &mut attached)?), None),
        RawOp::Write => (None, Some(destination(st, &args.device, &mut attached)?)),
        RawOp::Copy => {
            let from = source(st, &args.device, &mut attached)?;
            let to = destination(st, args.to.as_deref().unwrap_or_default(), &mut attached)?;
            if from.kernel_name == to.kernel_name {
                return bad("raw copy: `device` and `to` are the same block device");
            }
            (Some(from), Some(to))
        }
    };
    ctx.check_cancel()?;

    let mut src = from.as_ref().map(|d| open(d, false)).transpose()?;
    let mut dst = to.as_ref().map(|d| open(d, true)).transpose()?;
    if let (Some(f), Some(d)) = (src.as_mut(), from.as_ref()) {
        check_fits(f, d, size)?;
    }
    if let (Some(f), Some(d)) = (dst.as_mut(), to.as_ref()) {
        check_fits(f, d, size)?;
    }
    let pool = (args.op == RawOp::Write).then(|| Pool::new(bs));
    let mut buf = IoBuffer::new(bs);
    // O_DIRECT bypasses the page cache, but a cold start is cold everywhere
    // (the device's own pages, metadata a copy's destination might share).
    let cold = if src.is_some() {
        Some(cache::make_cold(None, &st.own_filesystems()).map(|c| c.method).unwrap_or("none"))
    } else {
        None
    };

    let devices: Vec<String> = from.iter().chain(to.iter()).map(|d| d.kernel_name.clone()).collect();
    let message = match args.op {
        RawOp::Read => "reading",
        RawOp::Write => "writing",
        RawOp::Copy => "copying",
    };
    let meter = Meter::start(ctx, &st.view, &devices);
    let mut done = 0u64;
    let mut block = 0u64;
    while done < size {
        ctx.check_cancel()?;
        let n = (size - done).min(bs as u64) as usize;
        let data: &[u8] = match (&mut src, &pool) {
            (Some(f), _) => {
                let b = &mut buf.bytes_mut()[..n];
                read_full(f, b, from.as_ref().expect("a source"))?;
                &buf.as_ref()[..n]
            }
            (None, Some(p)) => &p.block(block)[..n],
            (None, None) => unreachable!("a read or a write"),
        };
        if let (Some(f), Some(d)) = (dst.as_mut(), to.as_ref()) {
            f.write_all(data).map_err(|e| AgentError::failed(format!("write {}: {e}", d.path.display())))?;
        }
        done += n as u64;
        block += 1;
        ctx.progress(done, size, message);
    }
    if let (Some(f), Some(d)) = (dst.as_ref(), to.as_ref()) {
        rustix::fs::fsync(f).map_err(|e| AgentError::failed(format!("fsync {}: {e}", d.path.display())))?;
    }
    drop(dst);
    drop(src);
    let mut out = transfer_output(done, meter.stop());
    // A copy of a benchrig filesystem is benchrig's too (so formatting over it needs no `wipe`).
    if let Some(d) = &to {
        RealDevice::new(st, &d.kernel_name, &d.path).record_filesystem(ctx);
    }

    let info = &mut out.info;
    info.insert("op".into(), json!(args.op));
    info.insert("bs".into(), json!(bs));
    for (key, dev) in [("from", &from), ("to", &to)] {
        if let Some(d) = dev {
            info.insert(
                key.into(),
                json!({
                    "scratch": d.name,
                    "device": d.path.to_string_lossy(),
                    "device_facts": facts::block_device(&st.view, &d.kernel_name),
                }),
            );
        }
    }
    if let Some(c) = cold {
        info.insert("cold".into(), c.into());
    }
    drop(attached);
    Ok(out)
}
