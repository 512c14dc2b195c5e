//! `ansible_connection: local`: the agent is a child process, no SSH.

use super::{ExecOutput, ProcessExit, RemoteProcess, Transport, TransportError};
use async_trait::async_trait;
use std::process::Stdio;
use tokio::io::AsyncWriteExt;
use tokio::process::{Child, Command};

pub struct LocalTransport;

fn sh(script: &str) -> Command {
    let mut c = Command::new("sh");
    c.arg("-c").arg(script);
    c
}

#[async_trait]
impl Transport for LocalTransport {
    fn describe(&self) -> String {
        "local".into()
    }

    async fn exec(&self, script: &str, stdin: Option<Vec<u8>>) -> Result<ExecOutput, TransportError> {
        let mut child = sh(script)
            .kill_on_drop(true)
            .stdin(if stdin.is_some() { Stdio::piped() } else { Stdio::null() })
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .map_err(|e| TransportError::Channel(format!("cannot start sh: {e}")))?;
        if let (Some(data), Some(mut pipe)) = (stdin, child.stdin.take()) {
            pipe.write_all(&data).await.map_err(|e| TransportError::Channel(format!("writing to sh: {e}")))?;
        }
        let out = child.wait_with_output().await.map_err(|e| TransportError::Channel(e.to_string()))?;
        Ok(ExecOutput { status: out.status.code(), stdout: out.stdout, stderr: out.stderr })
    }

    async fn spawn(&self, script: &str, first_input: &[u8]) -> Result<RemoteProcess, TransportError> {
        // Its own process group: a terminal's Ctrl-C reaches the orchestrator,
        // which then tears down through the agent. Not killed on drop: a
        // closed stdin makes it release what it set up and exit.
        let mut child = sh(script)
            .process_group(0)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .map_err(|e| TransportError::Channel(format!("cannot start the agent: {e}")))?;
        let (stdin, stdout, stderr) = (child.stdin.take(), child.stdout.take(), child.stderr.take());
        let mut stdin = stdin.expect("piped");
        super::write_first(&mut stdin, first_input).await?;
        Ok(RemoteProcess {
            stdin: Box::new(stdin),
            stdout: Box::new(stdout.expect("piped")),
            stderr: Box::new(stderr.expect("piped")),
            exit: Box::new(LocalExit(child)),
        })
    }

    async fn close(self: Box<Self>) {}
}

struct LocalExit(Child);

#[async_trait]
impl ProcessExit for LocalExit {
    async fn wait(mut self: Box<Self>) -> Option<i32> {
        self.0.wait().await.ok().and_then(|s| s.code())
    }
}
