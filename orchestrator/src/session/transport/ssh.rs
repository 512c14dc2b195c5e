//! SSH through OpenSSH, with every Ansible connection variable (including
//! `ansible_ssh_common_args`) reaching `ssh` as Ansible would pass it, and
//! `~/.ssh/config` applying because this is the real `ssh`.
//!
//! A host whose agent is already there needs one channel: the start script
//! that probes and then becomes the agent. That channel is one plain `ssh`
//! process, with no ControlMaster: a master costs a process that forks
//! itself, a mux round trip and a second session on the host (measured in
//! docs/perf.md: with the `ssh` command line, 2.63 s against 1.91 s for
//! one plain `ssh` to 128 hosts). Only a host that needs more
//! channels (an upload, then the start again) gets a master, on first
//! need; those channels then go over its socket with openssh's native mux
//! client. `ControlPersist=30` bounds a master a killed orchestrator leaves.

use super::{ConnectionSpec, ExecOutput, ProcessExit, RemoteProcess, Transport, TransportError};
use async_trait::async_trait;
use openssh::{Session, Stdio};
use std::ffi::OsString;
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
use tokio::sync::OnceCell;

/// ssh's own exit status when it could not connect or lost the connection.
const SSH_FAILED: i32 = 255;

pub struct SshTransport {
    /// Every option and the address: what both a plain `ssh` and the master take.
    args: Vec<OsString>,
    /// How long connecting may take before the host counts as unreachable.
    deadline: Duration,
    address: String,
    master: OnceCell<Master>,
    desc: String,
    /// ssh's own messages (`-E`), read when it fails: a warning such as
    /// "Permanently added … to the list of known hosts" is not the agent's
    /// stderr. Holds the master's control socket too; removed with the transport.
    dir: tempfile::TempDir,
}

struct Master {
    session: Arc<Session>,
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
    /// Nothing is connected yet: the first channel connects.
    pub async fn connect(spec: &ConnectionSpec) -> Result<Self, TransportError> {
        let mut args: Vec<OsString> = ["-o", "BatchMode=yes"].iter().map(OsString::from).collect();
        args.extend(["-o".into(), format!("ConnectTimeout={}", spec.connect_timeout_s).into()]);
        for o in ["-o", "ServerAliveInterval=15", "-o", "ServerAliveCountMax=4"] {
            args.push(o.into());
        }
        if !spec.host_key_checking {
            args.extend(["-o".into(), "StrictHostKeyChecking=no".into()]);
        }
        if let Some(p) = spec.port {
            args.extend(["-p".into(), p.to_string().into()]);
        }
        if let Some(u) = &spec.user {
            args.extend(["-l".into(), u.into()]);
        }
        if let Some(k) = &spec.private_key {
            args.extend(["-i".into(), expand_tilde(k).into()]);
        }
        args.extend(spec.ssh_args.iter().map(OsString::from));
        args.push(spec.address.clone().into());
        let desc = format!(
            "ssh {}{}{}",
            spec.user.as_deref().map(|u| format!("{u}@")).unwrap_or_default(),
            spec.address,
            spec.port.map(|p| format!(":{p}")).unwrap_or_default()
        );
        Ok(SshTransport {
            dir: control_dir()?,
            args,
            deadline: Duration::from_secs(spec.connect_timeout_s + 20),
            address: spec.address.clone(),
            master: OnceCell::new(),
            desc,
        })
    }

    fn timed_out(&self) -> TransportError {
        TransportError::Unreachable(format!("ssh to {} timed out after {}s", self.address, self.deadline.as_secs()))
    }

    fn log(&self) -> std::path::PathBuf {
        self.dir.path().join("log")
    }

    /// The master, started on first need.
    async fn master(&self) -> Result<&Master, TransportError> {
        self.master.get_or_try_init(|| self.start_master()).await
    }

    async fn start_master(&self) -> Result<Master, TransportError> {
        let ctl = self.dir.path().join("m");
        let log = self.log();
        let mut cmd = tokio::process::Command::new("ssh");
        cmd.arg("-E").arg(&log).arg("-S").arg(&ctl);
        // The master outlives a dropped orchestrator by at most 30 s without clients.
        cmd.args(["-M", "-f", "-N", "-o", "ControlPersist=30"]);
        cmd.args(&self.args);
        cmd.stdin(std::process::Stdio::null()).stdout(std::process::Stdio::null()).stderr(std::process::Stdio::piped());
        cmd.kill_on_drop(true);
        let out = tokio::time::timeout(self.deadline, cmd.output())
            .await
            .map_err(|_| self.timed_out())?
            .map_err(|e| TransportError::Unreachable(format!("cannot run ssh: {e}")))?;
        if !out.status.success() {
            return Err(self.unreachable(&out.stderr));
        }
        let session = Session::resume_mux(ctl.into_boxed_path(), Some(log.into_boxed_path()));
        Ok(Master { session: Arc::new(session) })
    }

    /// Unreachable, with ssh's last word on why.
    fn unreachable(&self, stderr: &[u8]) -> TransportError {
        let logged = std::fs::read_to_string(self.log()).unwrap_or_default();
        let said = format!("{logged}\n{}", String::from_utf8_lossy(stderr));
        let reason = said.lines().map(str::trim).rfind(|l| !l.is_empty()).unwrap_or("ssh failed");
        TransportError::Unreachable(format!("ssh {}: {reason}", self.address))
    }

    /// One plain `ssh` running `script`, returned once its first byte of
    /// output came (connected), or as unreachable when ssh gave up first.
    async fn spawn_plain(&self, script: &str, first_input: &[u8]) -> Result<RemoteProcess, TransportError> {
        let mut cmd = tokio::process::Command::new("ssh");
        cmd.arg("-E").arg(self.log()).args(&self.args).arg(script);
        // Its own process group: a Ctrl-C at the terminal is the
        // orchestrator's to handle (stop the step, let the agent release its
        // mounts), not a signal that cuts the channel under it.
        cmd.process_group(0);
        cmd.stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped());
        let mut child = cmd.spawn().map_err(|e| TransportError::Unreachable(format!("cannot run ssh: {e}")))?;
        let (Some(mut stdin), Some(stdout), Some(mut stderr)) =
            (child.stdin.take(), child.stdout.take(), child.stderr.take())
        else {
            return Err(TransportError::Channel("ssh: no stdio".into()));
        };
        // A failed write (ssh already gone) is judged with what ssh said below.
        let wrote = super::write_first(&mut stdin, first_input).await;
        let mut stdout = BufReader::new(stdout);
        // Peek, not read: what the script prints first is the caller's.
        let first = tokio::time::timeout(self.deadline, stdout.fill_buf()).await;
        let connected = matches!(&first, Ok(Ok(b)) if !b.is_empty());
        if !connected {
            // Nothing came: the script printed nothing (its caller sees that)
            // or ssh never got through (unreachable, as a master's failure is).
            if first.is_err() {
                let _ = child.kill().await;
                return Err(self.timed_out());
            }
            let mut said = Vec::new();
            let _ = tokio::io::AsyncReadExt::read_to_end(&mut stderr, &mut said).await;
            let status = child.wait().await.ok().and_then(|s| s.code());
            if status == Some(SSH_FAILED) {
                return Err(self.unreachable(&said));
            }
            wrote?;
            let stderr: Box<dyn tokio::io::AsyncRead + Send + Unpin> = Box::new(std::io::Cursor::new(said));
            return Ok(RemoteProcess {
                stdin: Box::new(stdin),
                stdout: Box::new(stdout),
                stderr,
                exit: Box::new(Exited(status)),
            });
        }
        wrote?;
        Ok(RemoteProcess {
            stdin: Box::new(stdin),
            stdout: Box::new(stdout),
            stderr: Box::new(stderr),
            exit: Box::new(PlainExit(child)),
        })
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
        let session = &self.master().await?.session;
        let mut cmd = session.raw_command(script);
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

    async fn spawn(&self, script: &str, first_input: &[u8]) -> Result<RemoteProcess, TransportError> {
        let Some(master) = self.master.get() else { return self.spawn_plain(script, first_input).await };
        let mut cmd = Session::to_raw_command(master.session.clone(), script);
        cmd.stdin(Stdio::piped()).stdout(Stdio::piped()).stderr(Stdio::piped());
        let mut child = cmd.spawn().await.map_err(channel_err)?;
        let mut stdin = child.stdin().take().ok_or_else(|| TransportError::Channel("no stdin".into()))?;
        super::write_first(&mut stdin, first_input).await?;
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
        // The dir (the socket, the log) goes only after the master has.
        let SshTransport { master, dir: _dir, .. } = *self;
        let Some(Master { session }) = master.into_inner() else { return };
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

/// A plain `ssh` carrying the channel: its status is the remote command's
/// (or 255 when the connection failed).
struct PlainExit(tokio::process::Child);

#[async_trait]
impl ProcessExit for PlainExit {
    async fn wait(mut self: Box<Self>) -> Option<i32> {
        self.0.wait().await.ok().and_then(|s| s.code())
    }
}

/// A process already reaped.
struct Exited(Option<i32>);

#[async_trait]
impl ProcessExit for Exited {
    async fn wait(self: Box<Self>) -> Option<i32> {
        self.0
    }
}
