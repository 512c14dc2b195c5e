//! One way to run a child process a step waits on: `exec`'s command,
//! `read_tree`'s GNU tar, `cold_read`'s compressors and decompressors.
//!
//! The child never sees the agent's stdout (the protocol channel): stdin is
//! /dev/null and stdout goes where the caller says ([`StdoutTo`]). It runs
//! in its own process group, so a timeout or a cancel kills everything it
//! started, and with SIGINT and SIGHUP back at their defaults (the agent
//! ignores them, and ignored signals are inherited). Its stderr is drained
//! by a thread from the start, so a chatty child never blocks on a full
//! pipe, and its end is kept for the failure message ([`last_line`]).
//!
//! Short tool calls that need none of this (mkfs, mount, losetup) go
//! through `cmd` instead.

use crate::outbox::StepCtx;
use rustix::process::Pid;
use std::fs::File;
use std::io::{self, Read};
use std::os::unix::process::CommandExt;
use std::path::Path;
use std::process::{Child, ChildStdout, Command, ExitStatus, Stdio};
use std::sync::{mpsc, Arc, Mutex};
use std::time::{Duration, Instant};

/// The end of stderr kept for the failure message and the record.
pub const STDERR_KEEP: usize = 64 << 10;
/// After the child exits, how long processes it left behind may keep its output open.
const LEFTOVER_GRACE: Duration = Duration::from_secs(2);
/// How long a killed child may take to go. One still there is stuck in the
/// kernel (uninterruptible I/O on a dead device or server): it is left to
/// the kernel, unreaped, rather than hang the agent with it.
const KILL_GRACE: Duration = Duration::from_secs(10);

/// Where the child's stdout goes.
pub enum StdoutTo {
    /// A pipe drained by a thread: the first `keep` bytes are kept, the rest counted.
    Capture(usize),
    /// A pipe the caller reads ([`Supervised::take_stdout`]).
    Pipe,
    File(File),
}

/// How the wait ended.
pub enum Ended {
    Exited,
    TimedOut(Duration),
    Cancelled,
}

/// What the drain threads kept of the child's output.
#[derive(Default)]
pub struct Captured {
    /// With [`StdoutTo::Capture`]: its first bytes.
    pub stdout: Vec<u8>,
    /// With [`StdoutTo::Capture`]: how many bytes it wrote in all.
    pub stdout_total: u64,
    /// The last [`STDERR_KEEP`] bytes (up to twice that) of stderr.
    pub stderr: Vec<u8>,
    /// Whether processes it left holding its output were killed.
    pub leftovers_killed: bool,
}

impl Captured {
    pub fn stderr_text(&self) -> String {
        String::from_utf8_lossy(&self.stderr).into_owned()
    }
}

/// A `Command` for `program` with what every supervised child gets:
/// `LC_ALL=C` (the caller may override it), so numbers and messages read
/// the same on every host.
pub fn command(program: &Path) -> Command {
    let mut command = Command::new(program);
    command.env("LC_ALL", "C");
    command
}

/// The last non-empty line of a child's output, trimmed: what a person
/// needs from a failure.
pub fn last_line(text: &str) -> Option<&str> {
    text.lines().rev().map(str::trim).find(|l| !l.is_empty())
}

/// A spawned child: its process group, the threads draining its output,
/// and a waiter that reports its exit without reaping it. Dropped before it
/// was waited for (a panic, say), it kills the group and reaps the child.
pub struct Supervised {
    child: Child,
    pgid: Pid,
    captured: Arc<Mutex<Captured>>,
    /// One message per drained pipe as it closes.
    drained: mpsc::Receiver<()>,
    pipes: usize,
    exited: mpsc::Receiver<()>,
    /// Reaped, or given up on (`wait`): either way Drop must not wait for it.
    reaped: bool,
}

impl Supervised {
    /// Start `command` (program, arguments, environment and directory as the
    /// caller set them) with the stdio, process group and signals above.
    pub fn spawn(command: &mut Command, stdout: StdoutTo) -> io::Result<Supervised> {
        let keep = match &stdout {
            StdoutTo::Capture(keep) => Some(*keep),
            _ => None,
        };
        let stdout = match stdout {
            StdoutTo::Capture(_) | StdoutTo::Pipe => Stdio::piped(),
            StdoutTo::File(f) => Stdio::from(f),
        };
        command.stdin(Stdio::null()).stdout(stdout).stderr(Stdio::piped());
        command.process_group(0);
        // SAFETY: between fork and exec only async-signal-safe calls: signal(2).
        unsafe {
            command.pre_exec(|| {
                libc::signal(libc::SIGINT, libc::SIG_DFL);
                libc::signal(libc::SIGHUP, libc::SIG_DFL);
                Ok(())
            });
        }
        let mut child = command.spawn()?;
        let pgid = Pid::from_raw(child.id() as i32).expect("a child's pid is positive");
        let captured = Arc::new(Mutex::new(Captured::default()));
        let (done_tx, drained) = mpsc::channel();
        let mut pipes = 0;
        if let Some(keep) = keep {
            let out_pipe = child.stdout.take().expect("stdout is piped");
            drain(out_pipe, 64 << 10, captured.clone(), done_tx.clone(), move |c, chunk| {
                c.stdout_total += chunk.len() as u64;
                let room = keep.saturating_sub(c.stdout.len()).min(chunk.len());
                c.stdout.extend_from_slice(&chunk[..room]);
            });
            pipes += 1;
        }
        let err_pipe = child.stderr.take().expect("stderr is piped");
        drain(err_pipe, 16 << 10, captured.clone(), done_tx, |c, chunk| {
            c.stderr.extend_from_slice(chunk);
            if c.stderr.len() > 2 * STDERR_KEEP {
                let cut = c.stderr.len() - STDERR_KEEP;
                c.stderr.drain(..cut);
            }
        });
        pipes += 1;
        // WNOWAIT leaves the child a zombie until `wait` below reaps it, so its
        // pid (and process group id) cannot be reused while we may still kill it.
        let (exit_tx, exited) = mpsc::channel();
        std::thread::spawn(move || {
            use rustix::process::{waitid, WaitId, WaitIdOptions};
            let _ = waitid(WaitId::Pid(pgid), WaitIdOptions::EXITED | WaitIdOptions::NOWAIT);
            let _ = exit_tx.send(());
        });
        Ok(Supervised { child, pgid, captured, drained, pipes, exited, reaped: false })
    }

    /// With [`StdoutTo::Pipe`]: the pipe to read (once).
    pub fn take_stdout(&mut self) -> Option<ChildStdout> {
        self.child.stdout.take()
    }

    /// SIGKILL to the whole process group.
    pub fn kill(&self) {
        let _ = rustix::process::kill_process_group(self.pgid, rustix::process::Signal::KILL);
    }

    /// Until the child exits, is cancelled (with `ctx`) or runs out of
    /// time (with `timeout`); then reap it. A cancelled or timed-out child's
    /// group is killed and waited for, [`KILL_GRACE`] at most: one that
    /// outlives that is an error, and left behind.
    pub fn wait(&mut self, ctx: Option<&StepCtx>, timeout: Option<Duration>) -> io::Result<(ExitStatus, Ended)> {
        let start = Instant::now();
        let mut ended = Ended::Exited;
        let mut killed_at = None;
        loop {
            let mut slice = Duration::from_millis(100);
            if let Some(t) = timeout {
                slice = slice.min(t.saturating_sub(start.elapsed()));
            }
            match self.exited.recv_timeout(slice) {
                Ok(()) | Err(mpsc::RecvTimeoutError::Disconnected) => break,
                Err(mpsc::RecvTimeoutError::Timeout) => {}
            }
            if let Some(at) = killed_at {
                if Instant::now().duration_since(at) < KILL_GRACE {
                    continue; // killed; waiting for it to go
                }
                // Dropping it must not wait for it either.
                self.reaped = true;
                return Err(io::Error::other(format!(
                    "it was killed but has not exited {} s later (stuck in the kernel?); left behind",
                    KILL_GRACE.as_secs()
                )));
            }
            if ctx.is_some_and(|c| c.check_cancel().is_err()) {
                self.kill();
                ended = Ended::Cancelled;
                killed_at = Some(Instant::now());
            } else if let Some(t) = timeout.filter(|t| start.elapsed() >= *t) {
                self.kill();
                ended = Ended::TimedOut(t);
                killed_at = Some(Instant::now());
            }
        }
        let status = self.child.wait()?;
        self.reaped = true;
        Ok((status, ended))
    }

    /// Kill the group and reap the child, for a step that gives up on it.
    pub fn stop(&mut self) {
        self.kill();
        if self.child.wait().is_ok() {
            self.reaped = true;
        }
    }

    /// The output, once the drained pipes are closed. Processes the child
    /// left running that still hold them get a grace period, then are killed.
    pub fn collect(self) -> Captured {
        let mut closed = 0;
        let deadline = Instant::now() + LEFTOVER_GRACE;
        let mut killed = false;
        while closed < self.pipes {
            let left = deadline.saturating_duration_since(Instant::now());
            match self.drained.recv_timeout(if killed { Duration::from_secs(5) } else { left }) {
                Ok(()) => closed += 1,
                Err(mpsc::RecvTimeoutError::Timeout) if !killed => {
                    self.kill();
                    killed = true;
                }
                // Held open by something outside the group: take what arrived.
                Err(_) => break,
            }
        }
        let mut c = std::mem::take(&mut *self.captured.lock().unwrap_or_else(|e| e.into_inner()));
        c.leftovers_killed = killed;
        c
    }
}

impl Drop for Supervised {
    fn drop(&mut self) {
        if !self.reaped {
            self.stop();
        }
    }
}

/// Read `pipe` to its end on a thread of its own, handing each chunk (at
/// most `chunk` bytes) to `keep` under the lock, then say so on `done`.
fn drain(
    mut pipe: impl Read + Send + 'static,
    chunk: usize,
    captured: Arc<Mutex<Captured>>,
    done: mpsc::Sender<()>,
    keep: impl Fn(&mut Captured, &[u8]) + Send + 'static,
) {
    std::thread::spawn(move || {
        let mut buf = vec![0u8; chunk];
        while let Ok(n) = pipe.read(&mut buf) {
            if n == 0 {
                break;
            }
            keep(&mut captured.lock().unwrap_or_else(|e| e.into_inner()), &buf[..n]);
        }
        let _ = done.send(());
    });
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sh(script: &str) -> Command {
        let mut c = command(Path::new("/bin/sh"));
        c.args(["-c", script]);
        c
    }

    #[test]
    fn captures_stdout_up_to_its_limit_and_the_end_of_stderr() {
        let script =
            "head -c 100000 /dev/zero; i=0; while [ $i -lt 3000 ]; do echo line $i >&2; i=$((i+1)); done; exit 3";
        let mut run = Supervised::spawn(&mut sh(script), StdoutTo::Capture(1000)).unwrap();
        let (status, ended) = run.wait(None, None).unwrap();
        assert!(matches!(ended, Ended::Exited));
        assert_eq!(status.code(), Some(3));
        let c = run.collect();
        assert_eq!((c.stdout.len(), c.stdout_total), (1000, 100_000));
        assert!(c.stderr.len() <= 2 * STDERR_KEEP);
        assert_eq!(last_line(&c.stderr_text()), Some("line 2999"));
        assert!(!c.leftovers_killed);
    }

    #[test]
    fn a_timeout_kills_the_whole_group() {
        let mut run = Supervised::spawn(&mut sh("sleep 30 & sleep 30; wait"), StdoutTo::Capture(0)).unwrap();
        let t0 = Instant::now();
        let (status, ended) = run.wait(None, Some(Duration::from_millis(300))).unwrap();
        assert!(matches!(ended, Ended::TimedOut(_)));
        assert!(!status.success());
        // The background sleep held the pipes too: killed with the group, not waited for.
        let c = run.collect();
        assert!(!c.leftovers_killed);
        assert!(t0.elapsed() < Duration::from_secs(5), "{:?}", t0.elapsed());
    }

    #[test]
    fn a_cancel_kills_the_group_and_says_so() {
        let out = crate::outbox::Outbox::new(Box::new(io::sink()));
        let cancel = std::sync::atomic::AtomicBool::new(true);
        let ctx = StepCtx::new(1, &out, &cancel);
        let mut run = Supervised::spawn(&mut sh("sleep 30"), StdoutTo::Pipe).unwrap();
        let t0 = Instant::now();
        let (status, ended) = run.wait(Some(&ctx), None).unwrap();
        assert!(matches!(ended, Ended::Cancelled));
        assert!(!status.success());
        assert!(t0.elapsed() < Duration::from_secs(5), "{:?}", t0.elapsed());
        // Without the context nothing cancels it.
        let mut run = Supervised::spawn(&mut sh("sleep 0.3"), StdoutTo::Pipe).unwrap();
        let (status, ended) = run.wait(None, None).unwrap();
        assert!(matches!(ended, Ended::Exited) && status.success());
    }

    #[test]
    fn the_caller_reads_a_piped_stdout() {
        let mut run = Supervised::spawn(&mut sh("echo hello; echo oops >&2"), StdoutTo::Pipe).unwrap();
        let mut out = String::new();
        run.take_stdout().unwrap().read_to_string(&mut out).unwrap();
        let (status, _) = run.wait(None, None).unwrap();
        assert!(status.success());
        assert_eq!(out, "hello\n");
        assert_eq!(run.collect().stderr_text(), "oops\n");
    }

    #[test]
    fn last_line_skips_blank_lines() {
        assert_eq!(last_line("first\n  second  \n\n \n"), Some("second"));
        assert_eq!(last_line(" \n"), None);
    }
}
