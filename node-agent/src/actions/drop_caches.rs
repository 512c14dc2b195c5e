//! `drop_caches`: sync, checkpoint this session's filesystems and drop the
//! page cache so the next read comes from the device (`cache::make_cold`,
//! as root). Without root it only syncs, warns, and records the method as
//! `sync_only`: cold reads then evict their own file's pages.

use crate::cache;
use crate::outbox::StepCtx;
use crate::state::HostState;
use benchrig_wire::messages::{AgentError, LogLevel};
use benchrig_wire::steps::StepOutput;

pub fn run(st: &HostState, ctx: &StepCtx) -> Result<StepOutput, AgentError> {
    let mut out = StepOutput::default();
    let method = match cache::make_cold(None, &st.own_filesystems()) {
        Ok(c) => c.method,
        Err(e) => {
            // Not root: only per-file eviction is possible, which cold reads do themselves.
            ctx.log(LogLevel::Warn, format!("page cache not dropped: {e}"));
            "sync_only"
        }
    };
    out.info.insert("method".into(), method.into());
    Ok(out)
}
