//! One large file written sequentially in `bs` chunks; fsync inside the
//! timing by default, because a write that is not durable is not finished.

use super::{direct_flag, target_file, transfer_output};
use crate::actions::failed;
use crate::buffer::IoBuffer;
use crate::measure::Meter;
use crate::outbox::StepCtx;
use crate::state::HostState;
use benchrig_wire::messages::AgentError;
use benchrig_wire::steps::{SeqWriteArgs, StepOutput};
use std::fs::OpenOptions;
use std::io::Write;
use std::os::unix::fs::OpenOptionsExt;

pub fn run(args: &SeqWriteArgs, st: &mut HostState, ctx: &StepCtx) -> Result<StepOutput, AgentError> {
    let bs = args.bs.0 as usize;
    if bs == 0 || args.size.0 == 0 {
        return Err(failed("seq_write needs a non-zero size and bs"));
    }
    if args.direct && (!bs.is_multiple_of(crate::buffer::ALIGN) || !args.size.0.is_multiple_of(bs as u64)) {
        return Err(failed(format!(
            "O_DIRECT needs bs a multiple of 4k and size a multiple of bs ({} / {})",
            args.size, args.bs
        )));
    }
    let (path, devices) = target_file(st, args.target.as_deref(), &args.file)?;
    let buf = IoBuffer::random(bs, 0x5eed);

    let meter = Meter::start(&st.view.sys, &devices);
    let mut f = OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(true)
        .custom_flags(direct_flag(args.direct))
        .open(&path)
        .map_err(|e| failed(format!("open {}: {e}", path.display())))?;
    let mut written = 0u64;
    while written < args.size.0 {
        ctx.check_cancel()?;
        let n = (args.size.0 - written).min(bs as u64) as usize;
        f.write_all(&buf.as_ref()[..n]).map_err(|e| failed(format!("write {}: {e}", path.display())))?;
        written += n as u64;
        ctx.progress(written, args.size.0, "writing");
    }
    if args.fsync {
        rustix::fs::fsync(&f).map_err(|e| failed(format!("fsync {}: {e}", path.display())))?;
    }
    drop(f);
    let mut out = transfer_output(written, meter.stop());
    out.info.insert("path".into(), path.to_string_lossy().into_owned().into());
    Ok(out)
}
