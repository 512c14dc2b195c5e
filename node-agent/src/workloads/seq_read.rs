//! One file read sequentially in `bs` chunks, cold by default: sync and drop
//! caches before the clock starts, so the device counters show the bytes
//! really came from the disk.

use super::{direct_flag, target_file, transfer_output};
use crate::buffer::IoBuffer;
use crate::cache;
use crate::measure::Meter;
use crate::outbox::StepCtx;
use crate::state::HostState;
use benchrig_wire::messages::AgentError;
use benchrig_wire::steps::{SeqReadArgs, StepOutput};
use std::fs::OpenOptions;
use std::io::Read;
use std::os::unix::fs::OpenOptionsExt;

pub fn run(st: &mut HostState, ctx: &StepCtx, args: &SeqReadArgs) -> Result<StepOutput, AgentError> {
    let bs = args.bs.0 as usize;
    if bs == 0 || (args.direct && !bs.is_multiple_of(crate::buffer::ALIGN)) {
        return Err(AgentError::failed(format!(
            "bs {} is not usable{}",
            args.bs,
            if args.direct { " with O_DIRECT (multiple of 4k)" } else { "" }
        )));
    }
    let (path, devices) = target_file(st, args.target.as_deref(), &args.file)?;
    if !path.exists() {
        return Err(AgentError::failed(format!("{} does not exist: run seq_write before seq_read", path.display())));
    }
    let cold = if args.cold {
        Some(cache::make_cold(Some(&path), &st.own_filesystems()).map_err(AgentError::failed)?)
    } else {
        None
    };
    let total = std::fs::metadata(&path).map(|m| m.len()).unwrap_or(0);
    let mut buf = IoBuffer::new(bs);

    let meter = Meter::start(ctx, &st.view, &devices);
    let mut f = OpenOptions::new()
        .read(true)
        .custom_flags(direct_flag(args.direct))
        .open(&path)
        .map_err(|e| AgentError::failed(format!("open {}: {e}", path.display())))?;
    let mut read = 0u64;
    loop {
        ctx.check_cancel()?;
        let n = f.read(buf.bytes_mut()).map_err(|e| AgentError::failed(format!("read {}: {e}", path.display())))?;
        if n == 0 {
            break;
        }
        read += n as u64;
        ctx.progress(read, total, "reading");
    }
    drop(f);
    let mut out = transfer_output(read, meter.stop());
    if let Some(c) = cold {
        out.info.insert("cold".into(), c.method.into());
        out.info.insert("resident_pages_at_start".into(), serde_json::json!(c.resident_pages));
    }
    Ok(out)
}
