//! A step's [`Action`] to the agent function that carries it out: the one
//! table of every action and workload, above `actions/` and `workloads/`,
//! so neither needs the other.

use crate::outbox::StepCtx;
use crate::state::HostState;
use crate::{actions, workloads};
use benchrig_wire::messages::AgentError;
use benchrig_wire::steps::{Action, StepOutput};

/// Run one step. A step cancelled while it waited in the queue does not start.
/// What the monitors saw during its timed region (if the request asked for
/// them) goes into its output here, whichever workload it was.
pub fn run(st: &mut HostState, ctx: &StepCtx, action: &Action) -> Result<StepOutput, AgentError> {
    ctx.check_cancel()?;
    let mut out = step(st, ctx, action)?;
    if out.monitors.is_none() {
        out.monitors = ctx.watch.take().map(Box::new);
    }
    Ok(out)
}

fn step(st: &mut HostState, ctx: &StepCtx, action: &Action) -> Result<StepOutput, AgentError> {
    match action {
        Action::Filesystem(a) => actions::filesystem::run(st, ctx, a),
        Action::Volume(a) => actions::volume::make(st, ctx, a),
        Action::VolumeAdd(a) => actions::volume::add(st, ctx, a),
        Action::VolumeRemove(a) => actions::volume::remove(st, ctx, a),
        Action::Ramdisk(a) => actions::ramdisk::run(st, a),
        Action::Mount(a) => actions::mount::run(st, a),
        Action::NfsExport(a) => actions::nfs_export::run(st, ctx, a),
        Action::Service(a) => actions::service::run(ctx, a),
        Action::Unmount(a) => actions::unmount::run(st, a),
        Action::DropCaches(_) => actions::drop_caches::run(st, ctx),
        Action::Cleanup(_) => actions::cleanup::run(st),
        Action::Noop(_) => Ok(StepOutput::default()),
        Action::Tune(a) => actions::tune::run(st, a),
        Action::Tree(a) => workloads::tree::run(st, ctx, a),
        Action::SeqWrite(a) => workloads::seq_write::run(st, ctx, a),
        Action::SeqRead(a) => workloads::seq_read::run(st, ctx, a),
        Action::AclCheck(a) => workloads::acl_check::run(st, ctx, a),
        Action::CopyTree(a) => workloads::copy_tree::run(st, ctx, a),
        Action::ListTree(a) => workloads::list_tree::run(st, ctx, a),
        Action::ReadTree(a) => workloads::read_tree::run(st, ctx, a),
        Action::ColdRead(a) => workloads::cold_read::run(st, ctx, a),
        Action::Raw(a) => workloads::raw::run(st, ctx, a),
        Action::Exec(a) => workloads::exec::run(st, ctx, a),
        Action::Fio(a) => workloads::fio::run(st, ctx, a),
    }
}
