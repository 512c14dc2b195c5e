//! SSH through OpenSSH: one ControlMaster per host, started by us so that
//! every Ansible connection variable (including `ansible_ssh_common_args`)
//! reaches `ssh` as Ansible would pass it; channels then go over the master's
//! socket with openssh's native mux client. `~/.ssh/config` applies because
//! this is the real `ssh`.

use super::{ConnectionSpec, ExecOutput, ProcessExit, RemoteProcess, Transport, TransportError};
use async_trait::async_trait;
use openssh::{Session, Stdio};
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;
use tokio::io::AsyncWriteExt;

pub struct SshTransport {
    session: Arc<Session>,
    // Holds the control socket directory; removed when the transport goes.
    _dir: tempfile::TempDir,
    desc: String,
}

/// Unix socket paths are limited to 107 bytes: keep the control directory short.
fn control_dir() -> Result<tempfile::TempDir, TransportError> {
    let tmp = std::env::temp_dir();
    let base = if tmp.as_os_str().len() <= 40 { tmp } else { "/tmp".into() };
    tempfile::Builder::new()
        .prefix("brc")
        .tempdir_in(base)
        .map_err(|e| TransportError::Channel(format!("cannot create a control socket directory: {e}")))
}

impl SshTransport {
    pub async fn connect(spec: &ConnectionSpec) -> Result<Self, TransportError> {
        let dir = control_dir()?;
        let ctl = dir.path().join("m");
        let log = dir.path().join("log");
        let mut cmd = tokio::process::Command::new("ssh");
        cmd.arg("-E").arg(&log).arg("-S").arg(&ctl);
        // The master outlives a dropped orchestrator by at most 30 s without clients.
        cmd.args(["-M", "-f", "-N", "-o", "ControlPersist=30", "-o", "BatchMode=yes"]);
        cmd.args(["-o", &format!("ConnectTimeout={}", spec.connect_timeout_s)]);
        cmd.args(["-o", "ServerAliveInterval=15", "-o", "ServerAliveCountMax=4"]);
        if !spec.host_key_checking {
            cmd.args(["-o", "StrictHostKeyChecking=no"]);
        }
        if let Some(p) = spec.port {
            cmd.arg("-p").arg(p.to_string());
        }
        if let Some(u) = &spec.user {
            cmd.arg("-l").arg(u);
        }
        if let Some(k) = &spec.private_key {
            cmd.arg("-i").arg(expand_tilde(k));
        }
        cmd.args(&spec.ssh_args);
        cmd.arg(&spec.address);
        cmd.stdin(std::process::Stdio::null()).stdout(std::process::Stdio::null()).stderr(std::process::Stdio::piped());
        cmd.kill_on_drop(true);
        let deadline = Duration::from_secs(spec.connect_timeout_s + 20);
        let out = tokio::time::timeout(deadline, cmd.output())
            .await
            .map_err(|_| {
                TransportError::Unreachable(format!("ssh to {} timed out after {}s", spec.address, deadline.as_secs()))
            })?
            .map_err(|e| TransportError::Unreachable(format!("cannot run ssh: {e}")))?;
        if !out.status.success() {
            let logged = std::fs::read_to_string(&log).unwrap_or_default();
            let reason = logged
                .lines()
                .chain(String::from_utf8_lossy(&out.stderr).lines())
                .map(str::trim)
                .rfind(|l| !l.is_empty())
                .unwrap_or("ssh failed")
                .to_string();
            return Err(TransportError::Unreachable(format!("ssh {}: {reason}", spec.address)));
        }
        let session = Session::resume_mux(ctl.into_boxed_path(), Some(log.into_boxed_path()));
        let desc = format!(
            "ssh {}{}{}",
            spec.user.as_deref().map(|u| format!("{u}@")).unwrap_or_default(),
            spec.address,
            spec.port.map(|p| format!(":{p}")).unwrap_or_default()
        );
        Ok(SshTransport { session: Arc::new(session), _dir: dir, desc })
    }
}

fn expand_tilde(p: &str) -> String {
    match (p.strip_prefix("~/"), std::env::var("HOME")) {
        (Some(rest), Ok(home)) => format!("{home}/{rest}"),
        _ => p.to_string(),
    }
}

fn channel_err(e: openssh::Error) -> TransportError {
    TransportError::Channel(format!("ssh channel: {e}"))
}

#[async_trait]
impl Transport for SshTransport {
    fn describe(&self) -> String {
        self.desc.clone()
    }

    async fn exec(&self, script: &str, stdin: Option<Vec<u8>>) -> Result<ExecOutput, TransportError> {
        let mut cmd = self.session.raw_command(script);
        cmd.stdin(if stdin.is_some() { Stdio::piped() } else { Stdio::null() })
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        let mut child = cmd.spawn().await.map_err(channel_err)?;
        if let (Some(data), Some(mut pipe)) = (stdin, child.stdin().take()) {
            pipe.write_all(&data).await.map_err(|e| TransportError::Channel(format!("ssh stdin: {e}")))?;
            pipe.shutdown().await.map_err(|e| TransportError::Channel(format!("ssh stdin: {e}")))?;
        }
        let out = child.wait_with_output().await.map_err(channel_err)?;
        Ok(ExecOutput { status: out.status.code(), stdout: out.stdout, stderr: out.stderr })
    }

    async fn spawn(&self, script: &str) -> Result<RemoteProcess, TransportError> {
        let mut cmd = Session::to_raw_command(self.session.clone(), script);
        cmd.stdin(Stdio::piped()).stdout(Stdio::piped()).stderr(Stdio::piped());
        let mut child = cmd.spawn().await.map_err(channel_err)?;
        let stdin = child.stdin().take().ok_or_else(|| TransportError::Channel("no stdin".into()))?;
        let stdout = child.stdout().take().ok_or_else(|| TransportError::Channel("no stdout".into()))?;
        let stderr = child.stderr().take().ok_or_else(|| TransportError::Channel("no stderr".into()))?;
        Ok(RemoteProcess {
            stdin: Box::new(stdin),
            stdout: Box::new(stdout),
            stderr: Box::new(stderr),
            exit: Box::new(SshExit(child)),
        })
    }

    async fn close(self: Box<Self>) {
        let SshTransport { session, _dir, .. } = *self;
        match Arc::try_unwrap(session) {
            Ok(s) => {
                let _ = s.close().await;
            }
            Err(shared) => {
                // A channel still holds the session; stop the master by its socket.
                let ctl: &Path = shared.control_socket();
                let _ = tokio::process::Command::new("ssh").arg("-S").arg(ctl).args(["-O", "exit", "x"]).output().await;
            }
        }
    }
}

struct SshExit(openssh::Child<Arc<Session>>);

#[async_trait]
impl ProcessExit for SshExit {
    async fn wait(self: Box<Self>) -> Option<i32> {
        self.0.wait().await.ok().and_then(|s| s.code())
    }
}
