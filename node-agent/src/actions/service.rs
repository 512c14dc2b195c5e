//! `service`: start, stop, restart or reload a system service, timed and
//! logged — a server restarted before each repetition is part of the
//! experiment, and the run's log shows that it happened.

use crate::outbox::StepCtx;
use crate::services::{self, Done, ServiceError};
use benchrig_wire::messages::{AgentError, LogLevel};
use benchrig_wire::steps::{ServiceArgs, ServiceState, StepOutput};
use serde_json::json;

pub fn run(ctx: &StepCtx, args: &ServiceArgs) -> Result<StepOutput, AgentError> {
    let done = control(ctx, &args.name, args.state)?;
    let mut out = StepOutput::default();
    out.info.insert("service".into(), args.name.clone().into());
    out.info.insert("state".into(), state_name(args.state).into());
    out.info.insert("manager".into(), done.manager.into());
    out.info.insert("seconds".into(), json!(done.seconds));
    Ok(out)
}

/// A service brought to `state` by a step (this one, or `nfs_export`
/// starting the server), logged for the run: a host without it is
/// "unsupported", anything else a failure.
pub(super) fn control(ctx: &StepCtx, name: &str, state: ServiceState) -> Result<Done, AgentError> {
    let done = services::control(name, state).map_err(|e| match e {
        ServiceError::Missing(m) => AgentError::unsupported(m),
        ServiceError::Failed(m) => AgentError::failed(m),
    })?;
    let how = format!("by {} in {:.2} s", done.manager, done.seconds);
    ctx.log(LogLevel::Info, format!("service {name} {} {how}", state_name(state)));
    Ok(done)
}

/// The state as a playbook writes it (`restarted`).
fn state_name(state: ServiceState) -> String {
    serde_json::to_value(state).ok().and_then(|v| v.as_str().map(str::to_string)).unwrap_or_default()
}
