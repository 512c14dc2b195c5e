//! Everything a step can ask of the agent. Setup and teardown actions live
//! here; measured workloads live in `workloads/`, one per file.

mod cleanup;
mod drop_caches;
pub(crate) mod filesystem;
mod mount;
mod nfs_export;
mod ramdisk;
mod service;
mod unmount;
mod volume;

use crate::outbox::StepCtx;
use crate::state::HostState;
use crate::workloads;
use benchrig_wire::messages::{AgentError, ErrorCode};
use benchrig_wire::steps::{Action, StepOutput};

pub fn run(action: &Action, st: &mut HostState, ctx: &StepCtx) -> Result<StepOutput, AgentError> {
    ctx.check_cancel()?;
    match action {
        Action::Filesystem(a) => filesystem::run(a, st, ctx),
        Action::Volume(a) => volume::make(a, st, ctx),
        Action::VolumeAdd(a) => volume::add(a, st, ctx),
        Action::VolumeRemove(a) => volume::remove(a, st, ctx),
        Action::Ramdisk(a) => ramdisk::run(a, st),
        Action::Mount(a) => mount::run(a, st),
        Action::NfsExport(a) => nfs_export::run(a, st, ctx),
        Action::Service(a) => service::run(a, ctx),
        Action::Unmount(a) => unmount::run(a, st),
        Action::DropCaches(_) => drop_caches::run(ctx),
        Action::Cleanup(_) => cleanup::run(st),
        Action::Noop(_) => Ok(StepOutput::default()),
        Action::Tree(a) => workloads::tree::run(a, st, ctx),
        Action::SeqWrite(a) => workloads::seq_write::run(a, st, ctx),
        Action::SeqRead(a) => workloads::seq_read::run(a, st, ctx),
        Action::AclCheck(a) => workloads::acl_check::run(a, st, ctx),
        Action::CopyTree(a) => workloads::copy_tree::run(a, st, ctx),
        Action::ListTree(a) => workloads::list_tree::run(a, st, ctx),
        Action::ReadTree(a) => workloads::read_tree::run(a, st, ctx),
        Action::ColdRead(a) => workloads::cold_read::run(a, st, ctx),
        Action::Raw(a) => workloads::raw::run(a, st, ctx),
        Action::Exec(a) => workloads::exec::run(a, st, ctx),
    }
}

pub(crate) fn failed(message: impl Into<String>) -> AgentError {
    AgentError::new(ErrorCode::Failed, message)
}

pub(crate) fn unsupported(message: impl Into<String>) -> AgentError {
    AgentError::new(ErrorCode::Unsupported, message)
}

/// `~/x` in an inventory path means the agent user's home, as in a shell.
pub(crate) fn expand_home(path: &str) -> std::path::PathBuf {
    match (path.strip_prefix("~/"), std::env::var_os("HOME")) {
        (Some(rest), Some(home)) => std::path::Path::new(&home).join(rest),
        _ => path.into(),
    }
}
