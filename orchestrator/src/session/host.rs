//! One host's session: connect, deploy the agent, handshake, configure it
//! with the host's scratch devices, gather facts; and the clean way out.

use crate::inventory::Vars;
use crate::plan::scratch_devices;
use crate::session::agent_client::{AgentClient, RequestError, HEARTBEAT_MS};
use crate::session::deploy::{self, AgentBuilds, DeployError, Deployed};
use crate::session::timeline::Timeline;
use crate::session::transport::{self, ConnectionSpec, RemoteProcess, Transport, TransportError};
use benchrig_wire::boot::{Armed, BootOrder, BootState, Installed, KernelPackage};
use benchrig_wire::facts::Facts;
use benchrig_wire::messages::{Reply, Request, SessionConfig, StepRequest};
use benchrig_wire::steps::{Action, NoArgs};
use std::time::Duration;
use tokio::sync::watch;

#[derive(Debug, thiserror::Error)]
pub enum HostError {
    /// Could not reach or lost the host: the run's "unreachable".
    #[error("unreachable: {0}")]
    Unreachable(String),
    #[error("{0}")]
    Failed(String),
}

impl From<DeployError> for HostError {
    fn from(e: DeployError) -> Self {
        match e {
            DeployError::Transport(TransportError::Unreachable(m)) => HostError::Unreachable(m),
            // Not let in is not reached: the host is left out as unreachable.
            e @ DeployError::Become { .. } => HostError::Unreachable(e.to_string()),
            other => HostError::Failed(other.to_string()),
        }
    }
}

impl From<RequestError> for HostError {
    fn from(e: RequestError) -> Self {
        match e {
            RequestError::Lost(m) => HostError::Unreachable(m),
            RequestError::Died(m) => HostError::Failed(m),
            RequestError::Agent(a) => HostError::Failed(a.to_string()),
        }
    }
}

pub struct HostSession {
    pub name: String,
    transport: Box<dyn Transport>,
    pub agent: AgentClient,
    pub deployed: Deployed,
    pub facts: Facts,
    /// Connect + deploy + handshake + facts.
    pub startup: Duration,
    /// The same, stage by stage.
    pub timeline: Timeline,
    /// What the agent undid at its start of what a killed one left (its
    /// journal, stale exports): said as a warning, and by `cleanup`.
    pub restored: Vec<String>,
    /// How the agent was started as its user (sudo), for a file put next to it.
    become_: Option<crate::session::transport::Become>,
}

/// The wait before retry `attempt` (0 first): 1 s, 2 s, 4 s, then 8 s each.
pub fn backoff(attempt: u32) -> Duration {
    Duration::from_secs(1 << attempt.min(3))
}

/// Connect and start the agent; a host found unreachable (by the connection
/// or by the start's first channel, which is what connects over SSH) is
/// tried again `ansible_ssh_retries` times with backoff, unless `cancel`
/// turns true meanwhile.
async fn start_retrying(
    name: &str,
    spec: &ConnectionSpec,
    builds: &AgentBuilds,
    remote_dir: Option<&str>,
    mut cancel: Option<watch::Receiver<bool>>,
) -> Result<(Box<dyn Transport>, Deployed, RemoteProcess), HostError> {
    let mut attempt = 0;
    loop {
        let tried = match transport::connect(spec).await {
            Ok(t) => match deploy::start(t.as_ref(), builds, remote_dir, spec.become_.as_ref()).await {
                Ok((deployed, proc)) => return Ok((t, deployed, proc)),
                Err(e) => {
                    t.close().await;
                    e
                }
            },
            Err(e) => DeployError::Transport(e),
        };
        let m = match tried {
            DeployError::Transport(TransportError::Unreachable(m)) => m,
            other => return Err(other.into()),
        };
        if attempt >= spec.retries {
            return Err(HostError::Unreachable(m));
        }
        let wait = backoff(attempt);
        attempt += 1;
        tracing::warn!("{name}: {m}; trying again in {} s ({attempt} of {})", wait.as_secs(), spec.retries);
        match cancel.as_mut() {
            Some(c) if *c.borrow() => return Err(HostError::Unreachable(m)),
            Some(c) => {
                tokio::select! {
                    _ = tokio::time::sleep(wait) => {}
                    _ = c.changed() => return Err(HostError::Unreachable(m)),
                }
            }
            None => tokio::time::sleep(wait).await,
        }
    }
}

impl HostSession {
    /// Open a session; an unreachable host is tried again `ansible_ssh_retries`
    /// times with backoff, unless `cancel` turns true meanwhile.
    pub async fn open(
        name: &str,
        vars: &Vars,
        builds: &AgentBuilds,
        cancel: Option<watch::Receiver<bool>>,
    ) -> Result<HostSession, HostError> {
        let mut timeline = Timeline::start();
        let spec = ConnectionSpec::from_vars(name, vars).map_err(HostError::Failed)?;
        let scratch = scratch_devices(name, vars).map_err(HostError::Failed)?;
        let remote_dir = vars.get("benchrig_remote_dir").and_then(|v| v.as_str());
        let (transport, deployed, proc) = start_retrying(name, &spec, builds, remote_dir, cancel).await?;
        let started = async {
            if let Some(d) = &deployed.noexec_dir {
                tracing::warn!(
                    "{name}: {d} is on a filesystem mounted noexec; the agent runs from {} instead (benchrig_remote_dir chooses)",
                    deployed.remote_dir
                );
            }
            if !deployed.verified {
                tracing::warn!(
                    "{name}: the host has neither sha256sum nor openssl: the agent in {} was run on its owner and mode alone (the handshake still checks what it reports)",
                    deployed.remote_dir
                );
            }
            // Over SSH the start's first channel is what connects.
            timeline.mark(if deployed.uploaded {
                "connect, probe, upload, agent start"
            } else {
                "connect, probe and agent start"
            });
            tracing::info!(host = name, machine = %deployed.platform.machine, build = deployed.build.triple, uploaded = deployed.uploaded, "agent {}", deployed.remote_path);
            let agent = match AgentClient::handshake(proc, name, &deployed.build.sha256, deployed.build.triple).await {
                Ok(a) => a,
                Err(e) => {
                    if e.contains("sha256") {
                        deploy::discard_agent(transport.as_ref(), &deployed, spec.become_.as_ref()).await;
                    }
                    return Err(HostError::Failed(e));
                }
            };
            timeline.mark("handshake");
            let config = SessionConfig {
                work_dir: format!("{}/work", deployed.remote_dir),
                scratch,
                heartbeat_ms: HEARTBEAT_MS,
            };
            let restored = match agent.request(Request::Configure(config), None, |_| {}).await? {
                Reply::Configured { restored } => restored,
                other => return Err(HostError::Failed(format!("unexpected answer to configure: {other:?}"))),
            };
            for r in &restored {
                tracing::warn!("{name}: {r}");
            }
            timeline.mark("configure");
            let facts = match agent.request(Request::Facts, None, |_| {}).await? {
                Reply::Facts(f) => *f,
                other => return Err(HostError::Failed(format!("unexpected answer to facts: {other:?}"))),
            };
            timeline.mark("facts");
            Ok::<_, HostError>((deployed, agent, facts, restored))
        }
        .await;
        match started {
            Ok((deployed, agent, facts, restored)) => {
                tracing::debug!(host = name, "start-up: {}", timeline.describe());
                let startup = timeline.elapsed();
                Ok(HostSession {
                    name: name.to_string(),
                    transport,
                    agent,
                    deployed,
                    facts,
                    startup,
                    timeline,
                    restored,
                    become_: spec.become_.clone(),
                })
            }
            Err(e) => {
                transport.close().await;
                Err(e)
            }
        }
    }

    pub fn describe(&self) -> String {
        self.transport.describe()
    }

    /// Undo what earlier sessions left on the host (mounts under the work
    /// dir, loop devices of benchrig images, dead per-cell directories); a
    /// summary of what was removed.
    pub async fn cleanup(&self) -> Result<String, HostError> {
        let req = Request::Run(StepRequest {
            cell: "cleanup".into(),
            name: "cleanup".into(),
            action: Action::Cleanup(NoArgs {}),
            monitor: None,
        });
        match self.agent.request(req, None, |_| {}).await? {
            Reply::Step(out) => {
                let items: Vec<String> = out
                    .info
                    .iter()
                    .flat_map(|(kind, v)| {
                        v.as_array()
                            .into_iter()
                            .flatten()
                            .map(move |i| format!("{kind} {}", i.as_str().unwrap_or_default()))
                    })
                    .collect();
                let items: Vec<String> = self.restored.iter().cloned().chain(items).collect();
                Ok(if items.is_empty() { "nothing".into() } else { items.join(", ") })
            }
            other => Err(HostError::Failed(format!("unexpected answer to cleanup: {other:?}"))),
        }
    }

    /// The host's boot: its kernel, the kernels it has, a boot of ours
    /// under way, and with `means`, what it can boot with (slower).
    pub async fn boot_state(&self, means: bool) -> Result<BootState, HostError> {
        match self.agent.request(Request::BootState { means }, None, |_| {}).await? {
            Reply::BootState(st) => Ok(*st),
            other => Err(HostError::Failed(format!("unexpected answer to boot_state: {other:?}"))),
        }
    }

    /// Arm a boot, which happens when this session is closed. An agent's
    /// refusal keeps its code (`unsupported` is the host's, not a failure).
    pub async fn arm_boot(&self, order: BootOrder) -> Result<Armed, RequestError> {
        match self.agent.request(Request::Boot(order), None, |_| {}).await? {
            Reply::Armed(a) => Ok(a),
            other => Err(RequestError::Lost(format!("unexpected answer to boot: {other:?}"))),
        }
    }

    /// Put a kernel package from the controller on the host and install
    /// it; what was installed. An agent's refusal keeps its code.
    pub async fn install_kernel(&self, local: &std::path::Path, keep: bool) -> Result<Installed, RequestError> {
        use sha2::{Digest, Sha256};
        let bytes =
            tokio::fs::read(local).await.map_err(|e| RequestError::Lost(format!("{}: {e}", local.display())))?;
        let sha256 = benchrig_wire::hex(&Sha256::digest(&bytes));
        let file =
            deploy::put_file(self.transport.as_ref(), &self.deployed.remote_dir, &sha256, bytes, self.become_.as_ref())
                .await
                .map_err(|e| RequestError::Lost(format!("putting {} on the host: {e}", local.display())))?;
        let name = local.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
        let package = KernelPackage { file, sha256, name };
        match self.agent.request(Request::InstallKernel { package, keep }, None, |_| {}).await? {
            Reply::Installed(i) => Ok(i),
            other => Err(RequestError::Lost(format!("unexpected answer to install_kernel: {other:?}"))),
        }
    }

    /// The host is back on its baseline: the agent removes the boot record
    /// and the one-shot entry; what it removed.
    pub async fn boot_done(&self) -> Result<Vec<String>, HostError> {
        match self.agent.request(Request::BootDone, None, |_| {}).await? {
            Reply::BootDone { removed } => Ok(removed),
            other => Err(HostError::Failed(format!("unexpected answer to boot_done: {other:?}"))),
        }
    }

    /// Drop a session whose agent is gone, without waiting for it.
    pub async fn abandon(self) {
        self.transport.close().await;
    }

    /// Let the agent release what it set up, then drop the connection.
    pub async fn close(self) -> Result<Vec<String>, HostError> {
        let released = self.agent.shutdown().await;
        self.transport.close().await;
        Ok(released?)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn retries_back_off_to_eight_seconds() {
        let waits: Vec<u64> = (0..6).map(|a| backoff(a).as_secs()).collect();
        assert_eq!(waits, [1, 2, 4, 8, 8, 8]);
    }
}
