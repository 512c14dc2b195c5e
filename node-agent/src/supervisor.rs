//! One way to run a child process a step waits on: `exec`'s command,
//! `read_tree`'s GNU tar, `cold_read`'s compressors and decompressors.
//!
//! The child never sees the agent's stdout (the protocol channel): stdin is
//! /dev/null and stdout goes where the caller says ([`StdoutTo`]). It runs
//! in its own process group, so a timeout or a cancel kills everything it
//! started, and with SIGINT and SIGHUP at their defaults (the agent
//! catches them with a handler that does nothing, and exec resets caught
//! signals; ignored ones it would pass on). Its stderr is drained
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

/// SIGINT and SIGHUP no longer end the agent, and its children still get
/// them. A handler that does nothing, not SIG_IGN: exec resets a caught
/// signal to its default and keeps an ignored one ignored, so children
/// need no code between fork and exec (`pre_exec`) to get SIGINT back, and
/// std can start them with posix_spawn (vfork) instead of a fork that
/// copies the agent's page tables for every step.
pub fn outlive_interrupts() {
    extern "C" fn nothing(_: libc::c_int) {}
    // SAFETY: the handler touches nothing. SA_RESTART resumes the reads and
    // waits a signal interrupts, which SIG_IGN never interrupted.
    unsafe {
        let mut action: libc::sigaction = std::mem::zeroed();
        action.sa_sigaction = nothing as *const () as libc::sighandler_t;
        action.sa_flags = libc::SA_RESTART;
        libc::sigemptyset(&mut action.sa_mask);
        libc::sigaction(libc::SIGINT, &action, std::ptr::null_mut());
        libc::sigaction(libc::SIGHUP, &action, std::ptr::null_mut());
    }
}

/// The last non-empty line of a child's output, trimmed: what a person
/// needs from a failure.
pub fn last_line(text: &str) -> Option<&str> {
    text.lines().rev().map(str::trim).find(|l| !l.is_empty())
}

/// A spawned child: its process group, the thread draining its output,
/// and a watch on its exit that does not reap it. Dropped before it was
/// waited for (a panic, say), it kills the group and reaps the child.
pub struct Supervised {
    child: Child,
    pgid: Pid,
    captured: Arc<Mutex<Captured>>,
    /// One message once every drained pipe is closed.
    drained: mpsc::Receiver<()>,
    exit: ExitWatch,
    /// Reaped, or given up on (`wait`): either way Drop must not wait for it.
    reaped: bool,
}

/// How the wait learns that the child exited, without reaping it: the
/// zombie keeps its pid (and process group id) from being reused while we
/// may still kill it.
enum ExitWatch {
    /// Linux 5.3 and later: the child's pidfd polls readable once it exits.
    Pidfd(rustix::fd::OwnedFd),
    /// Older kernels: a thread blocked in `waitid(WNOWAIT)` says so.
    Thread(mpsc::Receiver<()>),
}

impl ExitWatch {
    fn new(pid: Pid) -> ExitWatch {
        match rustix::process::pidfd_open(pid, rustix::process::PidfdFlags::empty()) {
            Ok(fd) => ExitWatch::Pidfd(fd),
            Err(_) => ExitWatch::waiter(pid),
        }
    }

    fn waiter(pid: Pid) -> ExitWatch {
        let (exit_tx, exited) = mpsc::channel();
        std::thread::spawn(move || {
            use rustix::process::{waitid, WaitId, WaitIdOptions};
            let _ = waitid(WaitId::Pid(pid), WaitIdOptions::EXITED | WaitIdOptions::NOWAIT);
            let _ = exit_tx.send(());
        });
        ExitWatch::Thread(exited)
    }

    /// Whether the child exited, waiting `slice` at most.
    fn exited_within(&self, slice: Duration) -> bool {
        match self {
            ExitWatch::Pidfd(fd) => {
                use rustix::event::{poll, PollFd, PollFlags, Timespec};
                let t = Timespec { tv_sec: slice.as_secs() as _, tv_nsec: slice.subsec_nanos() as _ };
                let mut fds = [PollFd::new(fd, PollFlags::IN)];
                // An interrupted poll is a slice with no news.
                poll(&mut fds, Some(&t)).is_ok_and(|n| n > 0)
            }
            ExitWatch::Thread(exited) => !matches!(exited.recv_timeout(slice), Err(mpsc::RecvTimeoutError::Timeout)),
        }
    }
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
        // SIGINT and SIGHUP come back to their defaults at exec (`outlive_interrupts`).
        command.process_group(0);
        let mut child = command.spawn()?;
        let pgid = Pid::from_raw(child.id() as i32).expect("a child's pid is positive");
        let captured = Arc::new(Mutex::new(Captured::default()));
        let mut pipes: Vec<Drained> = Vec::new();
        if let Some(keep) = keep {
            let out_pipe = child.stdout.take().expect("stdout is piped");
            pipes.push(Drained::new(out_pipe.into(), 64 << 10, move |c, chunk| {
                c.stdout_total += chunk.len() as u64;
                let room = keep.saturating_sub(c.stdout.len()).min(chunk.len());
                c.stdout.extend_from_slice(&chunk[..room]);
            }));
        }
        let err_pipe = child.stderr.take().expect("stderr is piped");
        pipes.push(Drained::new(err_pipe.into(), 16 << 10, |c, chunk| {
            c.stderr.extend_from_slice(chunk);
            if c.stderr.len() > 2 * STDERR_KEEP {
                let cut = c.stderr.len() - STDERR_KEEP;
                c.stderr.drain(..cut);
            }
        }));
        let drained = drain(pipes, captured.clone());
        let exit = ExitWatch::new(pgid);
        Ok(Supervised { child, pgid, captured, drained, exit, reaped: false })
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
    /// group is killed and waited for, `KILL_GRACE` at most: one that
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
            if self.exit.exited_within(slice) {
                break;
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
        let mut killed = false;
        if let Err(mpsc::RecvTimeoutError::Timeout) = self.drained.recv_timeout(LEFTOVER_GRACE) {
            self.kill();
            killed = true;
            // Held open by something outside the group: take what arrived.
            let _ = self.drained.recv_timeout(Duration::from_secs(5));
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

/// What a drained pipe keeps of each chunk read from it.
type Keep = Box<dyn Fn(&mut Captured, &[u8]) + Send>;

/// A pipe a child writes, and what to keep of it.
struct Drained {
    pipe: File,
    buf: Vec<u8>,
    keep: Keep,
}

impl Drained {
    fn new(pipe: rustix::fd::OwnedFd, chunk: usize, keep: impl Fn(&mut Captured, &[u8]) + Send + 'static) -> Drained {
        Drained { pipe: File::from(pipe), buf: vec![0u8; chunk], keep: Box::new(keep) }
    }
}

/// Read every pipe to its end on one thread (a step's stdout and stderr:
/// one thread, not one each), handing each chunk to its `keep` under the
/// lock; the receiver hears once all are closed.
fn drain(mut pipes: Vec<Drained>, captured: Arc<Mutex<Captured>>) -> mpsc::Receiver<()> {
    use rustix::event::{poll, PollFd, PollFlags};
    let (done, drained) = mpsc::channel();
    std::thread::spawn(move || {
        while !pipes.is_empty() {
            let mut fds: Vec<PollFd> = pipes.iter().map(|d| PollFd::new(&d.pipe, PollFlags::IN)).collect();
            match poll(&mut fds, None) {
                Ok(_) => {}
                Err(rustix::io::Errno::INTR) => continue,
                Err(_) => break,
            }
            let mut ready = fds.iter().map(|f| !f.revents().is_empty()).collect::<Vec<_>>().into_iter();
            drop(fds);
            pipes.retain_mut(|d| {
                if !ready.next().unwrap_or(false) {
                    return true;
                }
                match d.pipe.read(&mut d.buf) {
                    Ok(0) => false,
                    Ok(n) => {
                        (d.keep)(&mut captured.lock().unwrap_or_else(|e| e.into_inner()), &d.buf[..n]);
                        true
                    }
                    Err(e) => e.kind() == io::ErrorKind::Interrupted,
                }
            });
        }
        let _ = done.send(());
    });
    drained
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
    fn a_child_of_an_agent_that_outlives_interrupts_is_ended_by_one() {
        outlive_interrupts();
        // A shell cannot take back a signal ignored when it started: were
        // SIGINT passed on ignored, this would sleep its 5 s and exit 0.
        let mut run = Supervised::spawn(&mut sh("kill -INT $$; sleep 5"), StdoutTo::Capture(0)).unwrap();
        let (status, _) = run.wait(None, Some(Duration::from_secs(20))).unwrap();
        // SAFETY: back to the default a test process has; no handler code.
        unsafe { libc::signal(libc::SIGINT, libc::SIG_DFL) };
        unsafe { libc::signal(libc::SIGHUP, libc::SIG_DFL) };
        assert_eq!(std::os::unix::process::ExitStatusExt::signal(&status), Some(libc::SIGINT), "{status:?}");
    }

    #[test]
    fn both_exit_watches_see_the_exit_and_leave_the_child_to_reap() {
        for pidfd in [true, false] {
            let mut child = sh("sleep 0.3").spawn().unwrap();
            let pid = Pid::from_raw(child.id() as i32).unwrap();
            let watch = if pidfd { ExitWatch::new(pid) } else { ExitWatch::waiter(pid) };
            assert_eq!(matches!(watch, ExitWatch::Pidfd(_)), pidfd, "this kernel has pidfd_open");
            assert!(!watch.exited_within(Duration::from_millis(50)), "pidfd {pidfd}: still running");
            assert!(watch.exited_within(Duration::from_secs(10)), "pidfd {pidfd}: exited");
            // Not reaped by the watch: the status is still ours to take.
            assert!(child.wait().unwrap().success());
        }
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
