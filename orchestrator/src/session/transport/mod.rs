//! How benchrig reaches a host: SSH (a plain `ssh` process for the first
//! channel, a ControlMaster only once a second channel is needed; see
//! `ssh`) or a local child process. Both behind [`Transport`], so deploy
//! and the agent session do not care which.

mod local;
mod spec;
mod ssh;

pub use spec::{redact, with_become_password, Become, ConnectionDefaults, ConnectionKind, ConnectionSpec, Secret};

use async_trait::async_trait;
use tokio::io::{AsyncRead, AsyncWrite};

#[derive(Debug)]
pub struct ExecOutput {
    pub status: Option<i32>,
    pub stdout: Vec<u8>,
    pub stderr: Vec<u8>,
}

impl ExecOutput {
    pub fn success(&self) -> bool {
        self.status == Some(0)
    }

    pub fn stderr_text(&self) -> String {
        String::from_utf8_lossy(&self.stderr).trim().to_string()
    }
}

/// A long-lived process on the host with its stdio (the agent).
pub struct RemoteProcess {
    pub stdin: Box<dyn AsyncWrite + Send + Unpin>,
    pub stdout: Box<dyn AsyncRead + Send + Unpin>,
    pub stderr: Box<dyn AsyncRead + Send + Unpin>,
    pub exit: Box<dyn ProcessExit>,
}

#[async_trait]
pub trait ProcessExit: Send {
    /// Wait for the process to end; its exit code if it had one.
    async fn wait(self: Box<Self>) -> Option<i32>;
}

#[derive(Debug, thiserror::Error)]
pub enum TransportError {
    /// The host could not be reached or refused us: the host is unreachable.
    #[error("{0}")]
    Unreachable(String),
    /// Reached, but a channel or process failed.
    #[error("{0}")]
    Channel(String),
}

#[async_trait]
pub trait Transport: Send + Sync {
    /// `ssh root@10.77.0.11:22` or `local`.
    fn describe(&self) -> String;

    /// Run a POSIX shell script to completion, optionally feeding it stdin.
    async fn exec(&self, script: &str, stdin: Option<Vec<u8>>) -> Result<ExecOutput, TransportError>;

    /// Start a long-lived process from a shell script, with piped stdio,
    /// writing `first_input` to its stdin at once (sudo's password line:
    /// over SSH the process counts as started only once it answers, and
    /// its script may first wait for that line).
    async fn spawn(&self, script: &str, first_input: &[u8]) -> Result<RemoteProcess, TransportError>;

    /// Release the connection (stops the ControlMaster).
    async fn close(self: Box<Self>);
}

/// Connect according to the host's connection variables.
pub async fn connect(spec: &ConnectionSpec) -> Result<Box<dyn Transport>, TransportError> {
    match spec.kind {
        ConnectionKind::Local => Ok(Box::new(local::LocalTransport)),
        ConnectionKind::Ssh => Ok(Box::new(ssh::SshTransport::connect(spec).await?)),
    }
}

/// Write a spawned process's first input (nothing when it is empty).
async fn write_first<W: tokio::io::AsyncWrite + Unpin>(
    stdin: &mut W,
    first_input: &[u8],
) -> Result<(), TransportError> {
    use tokio::io::AsyncWriteExt;
    if first_input.is_empty() {
        return Ok(());
    }
    stdin
        .write_all(first_input)
        .await
        .map_err(|e| TransportError::Channel(format!("writing to the process's stdin: {e}")))
}

/// Quote a string for a POSIX shell.
pub fn sh_quote(s: &str) -> String {
    shlex::try_quote(s).map(|c| c.into_owned()).unwrap_or_else(|_| format!("'{}'", s.replace('\'', "'\\''")))
}
