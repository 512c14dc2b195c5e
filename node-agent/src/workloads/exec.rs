//! `exec`: see the Action documentation in benchrig-wire.

use crate::outbox::StepCtx;
use crate::state::HostState;
use benchrig_wire::args::ExecArgs;
use benchrig_wire::messages::{AgentError, ErrorCode};
use benchrig_wire::steps::StepOutput;

pub fn run(_args: &ExecArgs, _st: &mut HostState, _ctx: &StepCtx) -> Result<StepOutput, AgentError> {
    Err(AgentError::new(ErrorCode::Unsupported, "exec is not built into this agent yet"))
}
