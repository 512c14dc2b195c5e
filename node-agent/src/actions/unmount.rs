use crate::state::HostState;
use benchrig_wire::messages::AgentError;
use benchrig_wire::steps::{StepOutput, UnmountArgs};

/// Releasing everything ends a visit: the kernel log since it began goes
/// with it (`kernel_log`, or `kernel_log_unavailable` with the reason),
/// read after the unmounts so their own errors count, for the devices the
/// session had before them.
pub fn run(st: &mut HostState, args: &UnmountArgs) -> Result<StepOutput, AgentError> {
    let devices = args.device.is_none().then(|| crate::scratch::session_devices(st));
    let released = st.release(args.device.as_deref()).map_err(AgentError::failed)?;
    let mut out = StepOutput::default();
    out.info.insert("released".into(), released.into());
    if let Some(devices) = devices {
        match st.kernel_log(&devices) {
            Ok(log) => {
                out.info.insert("kernel_log".into(), serde_json::to_value(log).unwrap_or_default());
            }
            Err(e) => {
                out.info.insert("kernel_log_unavailable".into(), e.into());
            }
        }
    }
    Ok(out)
}
