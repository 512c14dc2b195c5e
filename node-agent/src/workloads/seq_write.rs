//! One large file written sequentially in `bs` chunks; fsync inside the
//! timing by default, because a write that is not durable is not finished.

use super::{direct_flag, target_file, transfer_output};
use crate::buffer::{IoBuffer, ALIGN};
use crate::measure::Meter;
use crate::outbox::StepCtx;
use crate::state::HostState;
use benchrig_wire::messages::AgentError;
use benchrig_wire::steps::{SeqWriteArgs, StepOutput};
use std::fs::OpenOptions;
use std::io::Write;
use std::os::unix::fs::OpenOptionsExt;
use std::sync::atomic::{AtomicU64, Ordering};

/// Random bytes to write from, several megabytes of them, so consecutive
/// blocks differ: a compressing filesystem sees incompressible data at any
/// block size (it compresses 128 KiB at a time; one repeated 4k block would
/// compress 30-fold). Generated before the clock starts, a new seed each step.
struct DataPool {
    buf: IoBuffer,
    bs: usize,
    /// Block-aligned start offsets that leave a whole block after them.
    slots: usize,
}

impl DataPool {
    const MIN: usize = 4 << 20;

    fn new(bs: usize) -> Self {
        static STEP: AtomicU64 = AtomicU64::new(0);
        let len = Self::MIN.max(2 * bs).next_multiple_of(ALIGN);
        let seed = STEP.fetch_add(1, Ordering::Relaxed) ^ (std::process::id() as u64) << 32 ^ 0x5eed;
        let slots = ((len - bs) / ALIGN).max(1);
        DataPool { buf: IoBuffer::random(len, seed), bs, slots }
    }

    /// Block `i`'s bytes; starts are multiples of 4 KiB, as O_DIRECT needs.
    fn block(&self, i: u64) -> &[u8] {
        // A stride that is not a multiple of the slot count walks every slot.
        let start = ((i.wrapping_mul(7919) % self.slots as u64) as usize) * ALIGN;
        &self.buf.as_ref()[start..start + self.bs]
    }
}

pub fn run(st: &mut HostState, ctx: &StepCtx, args: &SeqWriteArgs) -> Result<StepOutput, AgentError> {
    let bs = args.bs.0 as usize;
    if bs == 0 || args.size.0 == 0 {
        return Err(AgentError::failed("seq_write needs a non-zero size and bs"));
    }
    if args.direct && (!bs.is_multiple_of(ALIGN) || !args.size.0.is_multiple_of(bs as u64)) {
        return Err(AgentError::failed(format!(
            "O_DIRECT needs bs a multiple of 4k and size a multiple of bs ({} / {})",
            args.size, args.bs
        )));
    }
    let (path, devices) = target_file(st, args.target.as_deref(), &args.file)?;
    let pool = DataPool::new(bs);
    // Freeing the previous repetition's file is not part of this write.
    let _ = std::fs::remove_file(&path);
    rustix::fs::sync();

    let meter = Meter::start(ctx, &st.view, &devices);
    let mut f = OpenOptions::new()
        .write(true)
        .create_new(true)
        .custom_flags(direct_flag(args.direct))
        .open(&path)
        .map_err(|e| AgentError::failed(format!("open {}: {e}", path.display())))?;
    let mut written = 0u64;
    for block in 0.. {
        if written >= args.size.0 {
            break;
        }
        ctx.check_cancel()?;
        let n = (args.size.0 - written).min(bs as u64) as usize;
        f.write_all(&pool.block(block)[..n])
            .map_err(|e| AgentError::failed(format!("write {}: {e}", path.display())))?;
        written += n as u64;
        if args.fsync_every.is_some_and(|every| every.0 > 0 && written / every.0 != (written - n as u64) / every.0) {
            rustix::fs::fsync(&f).map_err(|e| AgentError::failed(format!("fsync {}: {e}", path.display())))?;
        }
        ctx.progress(written, args.size.0, "writing");
    }
    if args.fsync {
        rustix::fs::fsync(&f).map_err(|e| AgentError::failed(format!("fsync {}: {e}", path.display())))?;
    }
    drop(f);
    let mut out = transfer_output(written, meter.stop());
    out.info.insert("path".into(), path.to_string_lossy().into_owned().into());
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::DataPool;

    #[test]
    fn consecutive_blocks_differ_and_stay_aligned() {
        for bs in [512, 4096, 1 << 20] {
            let p = DataPool::new(bs);
            let blocks: Vec<&[u8]> = (0..64).map(|i| p.block(i)).collect();
            for (i, b) in blocks.iter().enumerate() {
                assert_eq!(b.len(), bs);
                if i > 0 {
                    assert_ne!(*b, blocks[i - 1], "bs {bs}: block {i} repeats the previous one");
                }
                assert_eq!(b.as_ptr() as usize % super::ALIGN, 0);
            }
        }
    }
}
