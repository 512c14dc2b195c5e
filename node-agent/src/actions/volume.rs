//! btrfs volumes over several scratch devices: make one, add a device, remove one.

use crate::outbox::StepCtx;
use crate::state::HostState;
use benchrig_wire::args::{VolumeArgs, VolumeChangeArgs};
use benchrig_wire::messages::{AgentError, ErrorCode};
use benchrig_wire::steps::StepOutput;

pub fn make(_args: &VolumeArgs, _st: &mut HostState, _ctx: &StepCtx) -> Result<StepOutput, AgentError> {
    Err(AgentError::new(ErrorCode::Unsupported, "volume is not built into this agent yet"))
}

pub fn add(_args: &VolumeChangeArgs, _st: &mut HostState, _ctx: &StepCtx) -> Result<StepOutput, AgentError> {
    Err(AgentError::new(ErrorCode::Unsupported, "volume_add is not built into this agent yet"))
}

pub fn remove(_args: &VolumeChangeArgs, _st: &mut HostState, _ctx: &StepCtx) -> Result<StepOutput, AgentError> {
    Err(AgentError::new(ErrorCode::Unsupported, "volume_remove is not built into this agent yet"))
}
