use crate::state::HostState;
use benchrig_wire::messages::AgentError;
use benchrig_wire::steps::{StepOutput, UnmountArgs};

pub fn run(st: &mut HostState, args: &UnmountArgs) -> Result<StepOutput, AgentError> {
    let released = st.release(args.device.as_deref()).map_err(AgentError::failed)?;
    let mut out = StepOutput::default();
    out.info.insert("released".into(), released.into());
    Ok(out)
}
