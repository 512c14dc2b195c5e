//! Running the host's tools (mkfs, mount, losetup, ...).
//!
//! Children never inherit the agent's stdin or stdout: those carry frames.
//! Every one has a deadline ([`TOOL_DEADLINE`] unless the caller gives
//! another): a tool that hangs (a `mount` of a dead server, a `blkid` of a
//! failing disk) is killed with its process group, and the error says so.
//! They run under the `supervisor`, as a step's children do.

use crate::outbox::StepCtx;
use crate::supervisor::{self, last_line, Ended, StdoutTo, Supervised};
use std::path::{Path, PathBuf};
use std::time::Duration;

/// How long a host tool may run unless its caller says otherwise: far
/// longer than any mkfs, mount or losetup takes on a healthy host (mkfs
/// discarding a large SSD takes minutes), short enough that a hung one
/// does not hold a host all night.
pub const TOOL_DEADLINE: Duration = Duration::from_secs(600);

/// The most of a tool's stdout kept (lsblk and blkid print kilobytes).
const STDOUT_KEEP: usize = 16 << 20;

#[derive(Debug, Clone)]
pub struct Output {
    pub status: i32,
    pub stdout: String,
    pub stderr: String,
}

impl Output {
    pub fn ok(&self) -> bool {
        self.status == 0
    }

    /// The last non-empty line of stderr (or stdout): what a person needs from a failure.
    pub fn reason(&self) -> String {
        let pick = |s| last_line(s).map(str::to_string);
        pick(&self.stderr).or_else(|| pick(&self.stdout)).unwrap_or_else(|| format!("exit status {}", self.status))
    }
}

/// Run `argv` to completion (within [`TOOL_DEADLINE`]), capturing its output.
pub fn run<S: AsRef<str>>(argv: &[S]) -> Result<Output, String> {
    run_within(argv, TOOL_DEADLINE)
}

/// Run `argv` to completion, killing it (and whatever it started) once it
/// has run for `deadline`: then the error names the command and the limit.
pub fn run_within<S: AsRef<str>>(argv: &[S], deadline: Duration) -> Result<Output, String> {
    run_supervised(argv, None, Some(deadline))
}

/// Run a tool that is a step's measured work (a `btrfs balance` takes as
/// long as the volume's data needs): no deadline of its own, but killed
/// when the step is cancelled, by its `timeout`, a Ctrl-C or a lost
/// orchestrator, and then the error says so.
pub fn run_for_step<S: AsRef<str>>(argv: &[S], ctx: &StepCtx) -> Result<Output, String> {
    run_supervised(argv, Some(ctx), None)
}

fn run_supervised<S: AsRef<str>>(
    argv: &[S],
    ctx: Option<&StepCtx>,
    deadline: Option<Duration>,
) -> Result<Output, String> {
    let (prog, args) = argv.split_first().ok_or("empty command")?;
    let prog = prog.as_ref();
    let path = which(prog).ok_or_else(|| format!("{prog} not found"))?;
    let mut command = supervisor::command(&path);
    command.args(args.iter().map(AsRef::as_ref));
    let mut child = Supervised::spawn(&mut command, StdoutTo::Capture(STDOUT_KEEP))
        .map_err(|e| format!("cannot run {prog}: {e}"))?;
    let waited = child.wait(ctx, deadline);
    let out = child.collect();
    let (status, ended) = waited.map_err(|e| format!("`{prog}`: {e}"))?;
    let shown = || argv.iter().map(AsRef::as_ref).collect::<Vec<&str>>().join(" ");
    match ended {
        Ended::Exited => {}
        Ended::TimedOut(t) => {
            return Err(format!("`{}` did not finish within {} s and was killed", shown(), t.as_secs_f64()))
        }
        Ended::Cancelled => return Err(format!("`{}` was killed: the step was cancelled", shown())),
    }
    Ok(Output {
        status: status.code().unwrap_or(-1),
        stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
        stderr: out.stderr_text(),
    })
}

/// Run and require success; the error is the command and its reason.
pub fn run_ok<S: AsRef<str>>(argv: &[S]) -> Result<Output, String> {
    succeeded(argv, run(argv)?)
}

/// `out` of `argv` if it exited 0; otherwise the error `run_ok` gives.
pub fn succeeded<S: AsRef<str>>(argv: &[S], out: Output) -> Result<Output, String> {
    if out.ok() {
        Ok(out)
    } else {
        let shown: Vec<&str> = argv.iter().map(AsRef::as_ref).collect();
        Err(format!("`{}` failed: {}", shown.join(" "), out.reason()))
    }
}

/// Find a program the way a root shell would: PATH plus the sbin directories
/// that a non-login ssh session often lacks.
pub fn which(prog: &str) -> Option<PathBuf> {
    if prog.contains('/') {
        return is_executable(Path::new(prog)).then(|| PathBuf::from(prog));
    }
    let path = std::env::var("PATH").unwrap_or_default();
    let found = path
        .split(':')
        .chain(["/usr/local/sbin", "/usr/sbin", "/sbin", "/usr/local/bin", "/usr/bin", "/bin"])
        .filter(|d| !d.is_empty())
        .map(|d| Path::new(d).join(prog))
        .find(|p| is_executable(p));
    found
}

fn is_executable(p: &Path) -> bool {
    use std::os::unix::fs::PermissionsExt;
    p.metadata().map(|m| m.is_file() && m.permissions().mode() & 0o111 != 0).unwrap_or(false)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn captures_output_and_status() {
        let o = run(&["sh", "-c", "echo out; echo err >&2; exit 3"]).unwrap();
        assert_eq!((o.status, o.stdout.trim(), o.stderr.trim()), (3, "out", "err"));
        assert_eq!(o.reason(), "err");
        assert!(run_ok(&["sh", "-c", "exit 1"]).unwrap_err().contains("exit status 1"));
    }

    #[test]
    fn a_tool_past_its_deadline_is_killed_with_what_it_started_and_named() {
        let t0 = std::time::Instant::now();
        let e = run_within(&["sh", "-c", "sleep 30 & sleep 30"], Duration::from_millis(300)).unwrap_err();
        assert!(e.contains("`sh -c sleep 30 & sleep 30` did not finish within 0.3 s and was killed"), "{e}");
        // The background sleep held the output pipes too: killed with the group, not waited for.
        assert!(t0.elapsed() < Duration::from_secs(5), "{:?}", t0.elapsed());
    }

    #[test]
    fn a_steps_tool_has_no_deadline_but_its_cancel() {
        let out = crate::outbox::Outbox::new(Box::new(std::io::sink()));
        let cancel = std::sync::atomic::AtomicBool::new(false);
        let ctx = StepCtx::new(1, &out, &cancel);
        assert_eq!(run_for_step(&["sh", "-c", "sleep 0.3; echo done"], &ctx).unwrap().stdout, "done\n");
        cancel.store(true, std::sync::atomic::Ordering::SeqCst);
        let e = run_for_step(&["sleep", "30"], &ctx).unwrap_err();
        assert_eq!(e, "`sleep 30` was killed: the step was cancelled");
    }

    #[test]
    fn missing_program_is_named() {
        assert!(run(&["no-such-tool-here"]).unwrap_err().contains("no-such-tool-here"));
    }
}
