//! `unmount`: release what the session mounted, one device's or all of
//! it, newest first (`HostState::release`), with the kernel log since the
//! visit began when it is all.

use crate::state::HostState;
use benchrig_wire::messages::AgentError;
use benchrig_wire::steps::{StepOutput, UnmountArgs};

/// Releasing everything ends a visit: the kernel log since it began goes
/// with it (`kernel_log`, or `kernel_log_unavailable` with the reason),
/// read after the unmounts so their own errors count, for the devices the
/// session had before them.
pub fn run(st: &mut HostState, args: &UnmountArgs) -> Result<StepOutput, AgentError> {
    let devices = args.device.is_none().then(|| crate::scratch::session_devices(st));
    let released = match st.release(args.device.as_deref()) {
        Ok(r) => r,
        Err(e) => {
            // What the kernel said likely explains the failure: in the error, not the next visit's log.
            let log = devices.as_ref().and_then(|d| st.kernel_log(d).ok()).filter(|l| !l.lines.is_empty());
            let said = log.map(|l| {
                let lines: Vec<&str> = l.lines.iter().map(|x| x.text.as_str()).collect();
                format!("; the kernel logged: {}", lines.join(" | "))
            });
            return Err(AgentError::failed(format!("{e}{}", said.unwrap_or_default())));
        }
    };
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
