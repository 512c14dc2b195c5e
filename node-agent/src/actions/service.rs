//! `service`: start, stop, restart or reload a system service, timed and
//! logged — a server restarted before each repetition is part of the
//! experiment, and the run's log shows that it happened.

use super::{failed, unsupported};
use crate::outbox::StepCtx;
use crate::services::{self, ServiceError};
use benchrig_wire::messages::{AgentError, LogLevel};
use benchrig_wire::steps::{ServiceArgs, StepOutput};
use serde_json::json;

pub fn run(args: &ServiceArgs, ctx: &StepCtx) -> Result<StepOutput, AgentError> {
    let done = services::control(&args.name, args.state).map_err(|e| match e {
        ServiceError::Missing(m) => unsupported(m),
        ServiceError::Failed(m) => failed(m),
    })?;
    let state = serde_json::to_value(args.state).unwrap_or_default();
    let state = state.as_str().unwrap_or_default();
    ctx.log(LogLevel::Info, format!("service {} {state} by {} in {:.2} s", args.name, done.manager, done.seconds));
    let mut out = StepOutput::default();
    out.info.insert("service".into(), args.name.clone().into());
    out.info.insert("state".into(), state.into());
    out.info.insert("manager".into(), done.manager.into());
    out.info.insert("seconds".into(), json!(done.seconds));
    Ok(out)
}
