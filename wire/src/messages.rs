//! Requests the orchestrator sends and messages the agent answers with.
//!
//! The agent speaks first with [`Hello`]; the orchestrator checks it and sends
//! [`Request::Configure`]. Every request carries an id; everything the agent
//! says about it comes back as [`AgentMsg::Event`] with that id, ending with
//! exactly one [`Event::Result`] or [`Event::Error`] (but for [`Request::Alive`],
//! which is never answered). Heartbeats flow on their own both ways, so a
//! silent but alive agent is told apart from a dead one, and an agent behind
//! a half-open link notices its orchestrator is gone.

use crate::facts::Facts;
use crate::scratch::ScratchDevice;
use crate::steps::{Action, StepOutput};
use serde::{Deserialize, Serialize};

/// How often an agent beats unless `Configure` says otherwise, and how
/// often the orchestrator tells the agent it is still there ([`Request::Alive`]).
pub const HEARTBEAT_MS: u64 = 2000;

/// An agent that hears nothing from its orchestrator for this long (no
/// request, no [`Request::Alive`]) takes it for gone over a half-open
/// link: it cancels its step, releases what it set up and exits. Generous
/// beside [`HEARTBEAT_MS`]: an orchestrator with hundreds of hosts on two
/// busy cores still writes every 2 s.
pub const ORCHESTRATOR_SILENCE_MS: u64 = 30_000;

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Hello {
    pub protocol: u32,
    pub agent_version: String,
    /// sha256 of the agent's own executable, so the orchestrator knows it runs what it pushed.
    pub sha256: String,
    /// `uname -m` as the agent sees it (i686 under a 32-bit personality).
    pub arch: String,
    pub pid: u32,
    pub uid: u32,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Envelope {
    pub id: u64,
    #[serde(flatten)]
    pub request: Request,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum Request {
    Configure(SessionConfig),
    Ping,
    /// The orchestrator's heartbeat: it is still there. No answer.
    Alive,
    Facts,
    Run(StepRequest),
    /// Ask the step with id `target` to stop; it ends with an `Error` of kind `cancelled`.
    Cancel {
        target: u64,
    },
    /// Clean up what this session made (mounts, loop devices) and exit;
    /// then boot, when a `Boot` armed it.
    Shutdown,
    /// The host's boot: its kernel, its installed kernels, a boot of ours
    /// still under way, and with `means`, what it can boot with.
    BootState {
        #[serde(default)]
        means: bool,
    },
    /// Arm a boot (a kernel once, or back to the baseline), which happens
    /// when the session ends. Answered with `Reply::Armed`.
    Boot(crate::boot::BootOrder),
    /// Install a kernel package the controller put on the host, written
    /// down first so that it is removed again. Answered with
    /// `Reply::Installed`.
    InstallKernel {
        package: crate::boot::KernelPackage,
        /// Leave it installed after the play.
        #[serde(default)]
        keep: bool,
    },
    /// The host is back on its baseline, as verified: remove the boot record,
    /// the one-shot entry and the kernel packages benchrig installed (but
    /// those to keep). Answered with `Reply::BootDone`.
    BootDone,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct SessionConfig {
    /// Where the agent keeps mount points and images; absolute.
    pub work_dir: String,
    /// The host's `scratch_devices` from the inventory: the only devices this
    /// session may format.
    pub scratch: Vec<ScratchDevice>,
    pub heartbeat_ms: u64,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct StepRequest {
    /// The cell this step belongs to (for logs and mount bookkeeping).
    pub cell: String,
    /// The step's display name.
    pub name: String,
    #[serde(flatten)]
    pub action: Action,
    /// Watch the host while the step's timed region runs (measured steps
    /// only; an action ignores it).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub monitor: Option<crate::monitor::MonitorConfig>,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum AgentMsg {
    Hello(Hello),
    Event { id: u64, event: Event },
    Heartbeat { seq: u64 },
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Event {
    Progress { done: u64, total: u64, message: String },
    Log { level: LogLevel, message: String },
    Result { reply: Reply },
    Error(AgentError),
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum LogLevel {
    Debug,
    Info,
    Warn,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "reply", rename_all = "snake_case")]
pub enum Reply {
    /// What the agent undid of what a dead session left on the host
    /// (its journal, stale exports), as a person reads it.
    Configured {
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        restored: Vec<String>,
    },
    /// Acknowledges a `Cancel` (the cancelled step still ends on its own).
    Ack,
    Pong,
    Facts(Box<Facts>),
    Step(StepOutput),
    /// The answer to `Shutdown`: what the agent released on its way out.
    Bye {
        released: Vec<String>,
    },
    BootState(Box<crate::boot::BootState>),
    Armed(crate::boot::Armed),
    Installed(crate::boot::Installed),
    /// What `BootDone` removed, as a person reads it.
    BootDone {
        removed: Vec<String>,
    },
}

/// Why a request did not succeed. Its `Display` is what a person reads:
/// the message, behind the rule's name for a refusal.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, thiserror::Error)]
#[error("{}", shown(.rule.as_deref(), .message))]
pub struct AgentError {
    pub code: ErrorCode,
    pub message: String,
    /// For `refused`: the safety rule that refused (`mounted`, `swap`, ...).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rule: Option<String>,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ErrorCode {
    /// The host cannot do this (no mkfs tool, no kernel support); not a failure of the run.
    Unsupported,
    /// A device safety rule refused; nothing was changed.
    Refused,
    Failed,
    Cancelled,
    /// The request made no sense to this agent (a bug or a version skew).
    BadRequest,
}

/// The constructors every agent module uses, one per code, so no module
/// needs another's helpers to say how it failed.
impl AgentError {
    pub fn new(code: ErrorCode, message: impl Into<String>) -> Self {
        AgentError { code, message: message.into(), rule: None }
    }

    /// [`ErrorCode::Failed`].
    pub fn failed(message: impl Into<String>) -> Self {
        AgentError::new(ErrorCode::Failed, message)
    }

    /// [`ErrorCode::Unsupported`]: the host cannot, which is not the run's failure.
    pub fn unsupported(message: impl Into<String>) -> Self {
        AgentError::new(ErrorCode::Unsupported, message)
    }

    /// [`ErrorCode::BadRequest`].
    pub fn bad_request(message: impl Into<String>) -> Self {
        AgentError::new(ErrorCode::BadRequest, message)
    }

    /// [`ErrorCode::Refused`] by the safety rule `rule`; nothing was changed.
    pub fn refused(rule: impl Into<String>, message: impl Into<String>) -> Self {
        AgentError { code: ErrorCode::Refused, message: message.into(), rule: Some(rule.into()) }
    }

    /// [`ErrorCode::Cancelled`]: the orchestrator asked the step to stop.
    pub fn cancelled() -> Self {
        AgentError::new(ErrorCode::Cancelled, "cancelled")
    }
}

fn shown(rule: Option<&str>, message: &str) -> String {
    match rule {
        Some(rule) => format!("refused by rule `{rule}`: {message}"),
        None => message.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::steps::{Action, SeqReadArgs};

    #[test]
    fn envelope_is_flat_json() {
        let e = Envelope { id: 3, request: Request::Cancel { target: 2 } };
        assert_eq!(serde_json::to_string(&e).unwrap(), r#"{"id":3,"type":"cancel","target":2}"#);
    }

    #[test]
    fn run_request_round_trips() {
        let args: SeqReadArgs = serde_json::from_str(r#"{"bs":"1M"}"#).unwrap();
        let e = Envelope {
            id: 9,
            request: Request::Run(StepRequest {
                cell: "c1".into(),
                name: "read".into(),
                action: Action::SeqRead(args),
                monitor: Some(crate::monitor::MonitorConfig { interval_ms: 1000 }),
            }),
        };
        let s = serde_json::to_string(&e).unwrap();
        let back: Envelope = serde_json::from_str(&s).unwrap();
        assert_eq!(back, e);
    }

    #[test]
    fn errors_read_and_serialise_as_they_always_have() {
        let refused = AgentError::refused("mounted", "sdb is mounted at /mnt");
        assert_eq!(refused.to_string(), "refused by rule `mounted`: sdb is mounted at /mnt");
        assert_eq!(
            serde_json::to_string(&refused).unwrap(),
            r#"{"code":"refused","message":"sdb is mounted at /mnt","rule":"mounted"}"#
        );
        let failed = AgentError::failed("mkdir /x: denied");
        assert_eq!(failed.to_string(), "mkdir /x: denied");
        assert_eq!(serde_json::to_string(&failed).unwrap(), r#"{"code":"failed","message":"mkdir /x: denied"}"#);
        assert_eq!(AgentError::unsupported("no jfs"), AgentError::new(ErrorCode::Unsupported, "no jfs"));
        assert_eq!(AgentError::bad_request("?"), AgentError::new(ErrorCode::BadRequest, "?"));
        assert_eq!(AgentError::cancelled(), AgentError::new(ErrorCode::Cancelled, "cancelled"));
    }

    #[test]
    fn unknown_request_type_is_an_error() {
        assert!(serde_json::from_str::<Envelope>(r#"{"id":1,"type":"format_everything"}"#).is_err());
    }
}
