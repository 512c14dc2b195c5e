//! Running the host's tools (mkfs, mount, losetup, ...).
//!
//! Children never inherit the agent's stdin or stdout: those carry frames.

use crate::supervisor::last_line;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

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

/// Run `argv` to completion, capturing its output.
pub fn run<S: AsRef<str>>(argv: &[S]) -> Result<Output, String> {
    let (prog, args) = argv.split_first().ok_or("empty command")?;
    let prog = prog.as_ref();
    let path = which(prog).ok_or_else(|| format!("{prog} not found"))?;
    let out = Command::new(&path)
        .args(args.iter().map(AsRef::as_ref))
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .env("LC_ALL", "C")
        .output()
        .map_err(|e| format!("cannot run {prog}: {e}"))?;
    Ok(Output {
        status: out.status.code().unwrap_or(-1),
        stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
    })
}

/// Run and require success; the error is the command and its reason.
pub fn run_ok<S: AsRef<str>>(argv: &[S]) -> Result<Output, String> {
    let out = run(argv)?;
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
    fn missing_program_is_named() {
        assert!(run(&["no-such-tool-here"]).unwrap_err().contains("no-such-tool-here"));
    }
}
