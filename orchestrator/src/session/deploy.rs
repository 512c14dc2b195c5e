//! Getting the right agent onto a host and started.
//!
//! One channel learns the host's architecture and $HOME and, when the host
//! already has our build for it (content-addressed: `benchrig-agent-<sha256>`),
//! becomes the agent: a host that has it costs one remote shell, not two.
//! Otherwise the binary is uploaded, written to a temporary name and renamed
//! so a half-written agent is never run, and started on a channel of its own.
//! The sha256 the running agent reports about itself is checked in the
//! handshake.

use crate::session::transport::{sh_quote, Become, RemoteProcess, Transport, TransportError};
use sha2::{Digest, Sha256};
use std::path::{Path, PathBuf};
use std::sync::OnceLock;
use tokio::io::{AsyncReadExt, AsyncWriteExt};

/// (uname -m values, rust target) for every architecture we build an agent for.
pub const ARCHES: &[(&[&str], &str)] = &[
    (&["x86_64", "amd64"], "x86_64-unknown-linux-musl"),
    (&["i386", "i486", "i586", "i686", "x86"], "i686-unknown-linux-musl"),
    (&["aarch64", "arm64"], "aarch64-unknown-linux-musl"),
];

pub const BUILD_COMMAND: &str = "ci/build-agents.sh";

/// The cargo profile `BUILD_COMMAND` builds the agents with (Cargo.toml:
/// small, static), which is also the directory cargo puts them in.
pub const AGENT_PROFILE: &str = "agent";

#[derive(Debug, thiserror::Error)]
pub enum DeployError {
    #[error(transparent)]
    Transport(#[from] TransportError),
    #[error("no benchrig-agent build for {arch} ({triple}); looked for {searched}. Build the agents with `{BUILD_COMMAND}` (or `cargo build -p benchrig-agent --profile {AGENT_PROFILE} --target {triple}`)")]
    MissingBuild { arch: String, triple: String, searched: String },
    #[error("host architecture `{0}` has no agent build (supported: x86_64, i686, aarch64)")]
    UnknownArch(String),
    #[error("{0}")]
    Remote(String),
    /// sudo would not start the agent as the become user.
    #[error("becoming {user}: {why}")]
    Become { user: String, why: BecomeRefusal },
    /// The agent dir cannot run programs.
    #[error("{dir} is on a filesystem mounted noexec, where the agent cannot run; {}", if *fallback { "set benchrig_remote_dir to a directory that can run programs" } else { "benchrig_remote_dir must name a directory that can run programs" })]
    NoExec { dir: String, fallback: bool },
}

#[derive(Clone, Debug)]
pub struct AgentBuild {
    pub triple: &'static str,
    pub path: PathBuf,
    pub sha256: String,
}

/// Where agent builds are found: `$BENCHRIG_AGENT_DIR/<triple>/`, then
/// `agents/<triple>/` beside the benchrig binary, then cargo's
/// `target/<triple>/agent/` (the `agent` profile's directory) of the target
/// directory the benchrig binary is in and of this workspace. Not
/// `target/<triple>/release/`, where agents were built before they had their
/// own profile: one left there is as old as that change.
pub struct AgentBuilds {
    dirs: Vec<PathBuf>,
    found: OnceLock<Vec<AgentBuild>>,
}

impl AgentBuilds {
    pub fn discover() -> Self {
        let mut dirs = Vec::new();
        if let Some(d) = std::env::var_os("BENCHRIG_AGENT_DIR") {
            dirs.push(PathBuf::from(d));
        }
        if let Some(exe_dir) = std::env::current_exe().ok().and_then(|e| e.parent().map(Path::to_path_buf)) {
            dirs.push(exe_dir.join("agents"));
            // target/{debug,release}/benchrig → target/
            if let Some(target) = exe_dir.parent() {
                dirs.push(target.to_path_buf());
            }
        }
        if let Some(workspace) = Path::new(env!("CARGO_MANIFEST_DIR")).parent() {
            dirs.push(workspace.join("target"));
        }
        // The binary is usually in this workspace's target/: look there once.
        let mut seen = std::collections::HashSet::new();
        dirs.retain(|d| seen.insert(d.clone()));
        AgentBuilds { dirs, found: OnceLock::new() }
    }

    fn candidates(&self, triple: &str) -> Vec<PathBuf> {
        self.dirs
            .iter()
            .flat_map(|d| {
                [d.join(triple).join("benchrig-agent"), d.join(triple).join(AGENT_PROFILE).join("benchrig-agent")]
            })
            .collect()
    }

    /// Every path where an agent build for `triple` is looked for, in order,
    /// for a message saying none was found.
    pub fn searched(&self, triple: &str) -> String {
        self.candidates(triple).iter().map(|p| p.display().to_string()).collect::<Vec<_>>().join(", ")
    }

    /// Every build present, hashed once.
    pub fn all(&self) -> &[AgentBuild] {
        self.found.get_or_init(|| {
            ARCHES
                .iter()
                .filter_map(|(_, triple)| {
                    let path = self.candidates(triple).into_iter().find(|p| p.is_file())?;
                    warn_if_stale(&path);
                    let bytes = std::fs::read(&path).ok()?;
                    Some(AgentBuild { triple, path, sha256: benchrig_wire::hex(&Sha256::digest(&bytes)) })
                })
                .collect()
        })
    }

    pub fn for_arch(&self, arch: &str) -> Result<AgentBuild, DeployError> {
        let triple = triple_for(arch).ok_or_else(|| DeployError::UnknownArch(arch.to_string()))?;
        self.all().iter().find(|b| b.triple == triple).cloned().ok_or_else(|| DeployError::MissingBuild {
            arch: arch.to_string(),
            triple: triple.to_string(),
            searched: self.searched(triple),
        })
    }
}

/// In a source checkout, an agent older than its sources is almost always a
/// mistake (the orchestrator would push yesterday's agent): say so.
fn warn_if_stale(build: &Path) {
    let sources = Path::new(env!("CARGO_MANIFEST_DIR")).join("../node-agent/src");
    let built = build.metadata().and_then(|m| m.modified()).ok();
    let newest = walk_newest(&sources);
    if let (Some(built), Some(newest)) = (built, newest) {
        if newest > built {
            tracing::warn!("{} is older than node-agent/src; rebuild with `{BUILD_COMMAND}`", build.display());
        }
    }
}

fn walk_newest(dir: &Path) -> Option<std::time::SystemTime> {
    std::fs::read_dir(dir)
        .ok()?
        .flatten()
        .filter_map(|e| {
            let p = e.path();
            if p.is_dir() {
                walk_newest(&p)
            } else {
                e.metadata().and_then(|m| m.modified()).ok()
            }
        })
        .max()
}

pub fn triple_for(arch: &str) -> Option<&'static str> {
    ARCHES.iter().find(|(names, _)| names.contains(&arch)).map(|(_, t)| *t)
}

#[derive(Clone, Debug)]
pub struct Deployed {
    pub arch: String,
    pub home: String,
    pub remote_dir: String,
    pub remote_path: String,
    pub build: AgentBuild,
    pub uploaded: bool,
    /// The agent dir this upload found mounted noexec (it went to the
    /// fallback instead), for the one line that says so.
    pub noexec_dir: Option<String>,
}

/// Where the agent goes unless the host sets `benchrig_remote_dir`.
pub const DEFAULT_REMOTE_DIR: &str = "~/.cache/benchrig";

/// Where the agent goes when the default dir (under $HOME) cannot run
/// programs: a directory of the login user's own on /var/tmp. Created 700
/// and used only while it is ours and not a symlink: another user could
/// otherwise make it first and swap the agent that sudo then runs as root.
pub const FALLBACK_REMOTE_DIR: &str = "/var/tmp/benchrig-<uid>";
const FALLBACK_EXPR: &str = "/var/tmp/benchrig-$(id -u)";
/// Left in the default dir when an upload found it noexec: only then does
/// the start script look in the fallback. Without it, a host whose default
/// dir merely lacks the agent (its first session, or one removed) would run
/// whatever agent the fallback holds, and its work dir with it: on hosts
/// that share /var/tmp, another host's.
const NOEXEC_MARKER: &str = ".benchrig-noexec";

/// `~/x` → `"$HOME"/x` for the remote shell; anything else quoted as is.
fn remote_dir_expr(dir: &str) -> String {
    match dir.strip_prefix("~/") {
        Some(rest) => format!("\"$HOME\"/{}", sh_quote(rest)),
        None if dir == "~" => "\"$HOME\"".into(),
        None => sh_quote(dir),
    }
}

/// The first line the start script prints, before it execs the agent or
/// exits: `<uname -m>\t<$HOME>\t<agent dir>\t<exec|absent>`.
const PROBE_TAG: &str = "benchrig-probe";
/// Or, when sudo would not let us become the agent's user: `<tag>\t<why>`.
const BECOME_TAG: &str = "benchrig-become";

/// Why sudo did not let the agent start as `ansible_become_user`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BecomeRefusal {
    NoSudo,
    PasswordNeeded,
    WrongPassword,
}

impl BecomeRefusal {
    fn tag(self) -> &'static str {
        match self {
            BecomeRefusal::NoSudo => "no-sudo",
            BecomeRefusal::PasswordNeeded => "password-needed",
            BecomeRefusal::WrongPassword => "password-refused",
        }
    }

    fn from_tag(t: &str) -> Option<Self> {
        [BecomeRefusal::NoSudo, BecomeRefusal::PasswordNeeded, BecomeRefusal::WrongPassword]
            .into_iter()
            .find(|r| r.tag() == t)
    }
}

impl std::fmt::Display for BecomeRefusal {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            BecomeRefusal::NoSudo => "sudo is not installed on the host (ansible_become needs it)",
            BecomeRefusal::PasswordNeeded => {
                "sudo asks for a password: set ansible_become_password or run with --ask-become-pass (-K)"
            }
            BecomeRefusal::WrongPassword => {
                "sudo refused the become password (ansible_become_password or --ask-become-pass)"
            }
        })
    }
}

/// The shell lines that check sudo lets us become the agent's user, before
/// anything else runs. The password comes on stdin, read by the shell's
/// `read` and handed to `sudo -S` by the builtin `printf`: it is in no
/// process's argument list or environment. `sudo -v` then caches the
/// credential for this shell (sudo keys it by parent process when there is
/// no terminal), so the agent's `sudo -n` that follows, a child of the same
/// shell, needs none.
fn become_check(b: Option<&Become>) -> String {
    let Some(b) = b else { return String::new() };
    let refuse = |r: BecomeRefusal| format!("{{ printf '{BECOME_TAG}\\t{}\\n'; exit 1; }}", r.tag());
    let validate = match b.password {
        Some(_) => format!(
            "IFS= read -r p; printf '%s\\n' \"$p\" | sudo -S -p '' -v 2>/dev/null || {}; p=; ",
            refuse(BecomeRefusal::WrongPassword)
        ),
        None => format!("sudo -n -v 2>/dev/null || {}; ", refuse(BecomeRefusal::PasswordNeeded)),
    };
    format!("command -v sudo >/dev/null 2>&1 || {}; {validate}", refuse(BecomeRefusal::NoSudo))
}

/// The agent at `agent` (a shell word) serving, as the host's own user or
/// through `sudo -n` as the become user: one spelling for both ways it
/// starts. With a password the shell stays the agent's parent (the
/// credential `become_check` cached is this shell's); otherwise it execs.
fn serve_command(agent: &str, b: Option<&Become>) -> String {
    match b {
        Some(b) if b.password.is_some() => format!("sudo -n -u {} -- {agent} serve; exit $?", sh_quote(&b.user)),
        Some(b) => format!("exec sudo -n -u {} -- {agent} serve", sh_quote(&b.user)),
        None => format!("exec {agent} serve"),
    }
}

/// `[ <d> is ours and no symlink ]`, for the fallback dir only.
fn owned(d: &str) -> String {
    format!("[ -d {d} ] && [ ! -L {d} ] && [ -O {d} ]")
}

/// The script that probes the host and, if our build for its architecture
/// is in the agent dir (or, for the default dir, in the fallback), starts
/// it. The probe line names the primary dir when no agent is found.
fn start_script(builds: &AgentBuilds, dir: &str, fallback: Option<&str>, b: Option<&Become>) -> String {
    let mut arms = String::new();
    for build in builds.all() {
        if let Some((names, _)) = ARCHES.iter().find(|(_, t)| *t == build.triple) {
            arms.push_str(&format!("{}) s={};; ", names.join("|"), build.sha256));
        }
    }
    let found = |d: &str| {
        format!(
            "a=\"{d}/benchrig-agent-$s\"; if [ -n \"$s\" ] && [ -x \"$a\" ]; then \
             printf '{PROBE_TAG}\\t%s\\t%s\\t%s\\texec\\n' \"$m\" \"$HOME\" \"{d}\"; {}; fi; ",
            serve_command("\"$a\"", b)
        )
    };
    let mut script = format!(
        "{}m=$(uname -m); d={}; s=; case \"$m\" in {arms}esac; {}",
        become_check(b),
        remote_dir_expr(dir),
        found("$d")
    );
    if let Some(f) = fallback {
        script.push_str(&format!(
            "if [ -e \"$d/{NOEXEC_MARKER}\" ]; then f={f}; if {}; then {}fi; fi; ",
            owned("\"$f\""),
            found("$f")
        ));
    }
    script.push_str(&format!("printf '{PROBE_TAG}\\t%s\\t%s\\t%s\\tabsent\\n' \"$m\" \"$HOME\" \"$d\""));
    script
}

/// What the probe line said.
#[derive(Debug, PartialEq)]
struct Probe {
    arch: String,
    home: String,
    dir: String,
    running: bool,
}

fn parse_probe(line: &str) -> Option<Probe> {
    let mut f = line.trim_end_matches(['\r', '\n']).split('\t');
    if f.next()? != PROBE_TAG {
        return None;
    }
    let (arch, home, dir, state) = (f.next()?, f.next()?, f.next()?, f.next()?);
    Some(Probe { arch: arch.into(), home: home.into(), dir: dir.into(), running: state == "exec" })
}

/// The refusal a `benchrig-become` line names.
fn parse_refusal(line: &str) -> Option<BecomeRefusal> {
    let (tag, why) = line.trim_end().split_once('\t')?;
    (tag == BECOME_TAG).then(|| BecomeRefusal::from_tag(why)).flatten()
}

/// One line from the agent's stdout, byte by byte: what follows it is the
/// agent's first frame and must stay unread.
async fn read_line(r: &mut (dyn tokio::io::AsyncRead + Send + Unpin)) -> std::io::Result<String> {
    let mut line = Vec::new();
    let mut byte = [0u8; 1];
    while line.len() < 4096 && r.read(&mut byte).await? == 1 {
        if byte[0] == b'\n' {
            break;
        }
        line.push(byte[0]);
    }
    Ok(String::from_utf8_lossy(&line).into_owned())
}

/// Spawn `script`, giving it the become password as its first line of
/// stdin when there is one (`become_check` reads it).
async fn spawn_becoming(t: &dyn Transport, script: &str, b: Option<&Become>) -> Result<RemoteProcess, DeployError> {
    let mut proc = t.spawn(script).await?;
    if let Some(p) = b.and_then(|b| b.password.as_ref()) {
        let line = format!("{}\n", p.expose());
        proc.stdin
            .write_all(line.as_bytes())
            .await
            .map_err(|e| DeployError::Remote(format!("giving sudo its password failed: {e}")))?;
    }
    Ok(proc)
}

/// Start the host's agent for its architecture, uploading it first when the
/// host does not have it. `dir` is `benchrig_remote_dir`; without it the
/// agent goes to [`DEFAULT_REMOTE_DIR`], or to [`FALLBACK_REMOTE_DIR`] where
/// that is mounted noexec.
pub async fn start(
    t: &dyn Transport,
    builds: &AgentBuilds,
    dir: Option<&str>,
    b: Option<&Become>,
) -> Result<(Deployed, RemoteProcess), DeployError> {
    let fallback = dir.is_none();
    let dir = dir.unwrap_or(DEFAULT_REMOTE_DIR);
    let script = start_script(builds, dir, fallback.then_some(FALLBACK_EXPR), b);
    let mut proc = spawn_becoming(t, &script, b).await?;
    let line = read_line(proc.stdout.as_mut())
        .await
        .map_err(|e| DeployError::Remote(format!("probing the host failed: {e}")))?;
    if let Some(why) = parse_refusal(&line) {
        return Err(DeployError::Become { user: b.map(|b| b.user.clone()).unwrap_or_default(), why });
    }
    let Some(probe) = parse_probe(&line) else {
        let mut err = Vec::new();
        let _ = proc.stderr.read_to_end(&mut err).await;
        let said = if line.is_empty() { String::from_utf8_lossy(&err).trim().to_string() } else { line };
        return Err(DeployError::Remote(format!("probing the host failed: {said}")));
    };
    let build = builds.for_arch(&probe.arch)?;
    let mut deployed = Deployed {
        remote_path: agent_path(&probe.dir, &build.sha256),
        arch: probe.arch,
        home: probe.home,
        remote_dir: probe.dir,
        build,
        uploaded: false,
        noexec_dir: None,
    };
    if probe.running {
        return Ok((deployed, proc));
    }
    proc.exit.wait().await;
    let bytes = std::fs::read(&deployed.build.path)
        .map_err(|e| DeployError::Remote(format!("cannot read {}: {e}", deployed.build.path.display())))?;
    let mut at = upload(t, &sh_quote(&deployed.remote_dir), false, &deployed.build.sha256, &bytes).await;
    if let (Err(DeployError::NoExec { .. }), true) = (&at, fallback) {
        deployed.noexec_dir = Some(deployed.remote_dir.clone());
        at = upload(t, FALLBACK_EXPR, true, &deployed.build.sha256, &bytes).await;
        if let Err(DeployError::NoExec { dir, .. }) = at {
            let both = format!("{} (and the fallback {dir})", deployed.remote_dir);
            return Err(DeployError::NoExec { dir: both, fallback: true });
        }
    }
    deployed.remote_dir = at?;
    deployed.remote_path = agent_path(&deployed.remote_dir, &deployed.build.sha256);
    deployed.uploaded = true;
    let proc = start_agent(t, &deployed, b).await?;
    Ok((deployed, proc))
}

/// The agent's content-addressed path in an agent dir.
fn agent_path(dir: &str, sha: &str) -> String {
    format!("{dir}/benchrig-agent-{sha}")
}

/// Exit status of the upload script when the agent, written, cannot run.
const NOEXEC_STATUS: i32 = 3;

/// Put the agent at its content-addressed name in the dir `dir_expr` (a
/// shell word) names; the dir it resolved to. `own`: the dir must be ours
/// (made 700 if missing; refused if it is a symlink or someone else's).
async fn upload(t: &dyn Transport, dir_expr: &str, own: bool, sha: &str, bytes: &[u8]) -> Result<String, DeployError> {
    let claim = if own {
        format!(
            "mkdir -m 700 \"$d\" 2>/dev/null || true; {} || {{ echo \"$d is not a directory of this user's\" >&2; exit 1; }}; ",
            owned("\"$d\"")
        )
    } else {
        "mkdir -p \"$d\"; ".into()
    };
    // A dropped connection gives `cat` a clean EOF: check the size
    // before the file gets its content-addressed name. `[ -x ]` is false
    // on a noexec mount (access(2) checks it), even for root.
    let script = format!(
        "set -e; umask 077; d={dir_expr}; {claim}t=\"$d/.benchrig-agent-{sha}.$$\"; cat > \"$t\"; \
         n=$(wc -c < \"$t\"); if [ \"$n\" -ne {len} ]; then rm -f \"$t\"; echo \"upload cut short: $n of {len} bytes\" >&2; exit 1; fi; \
         chmod 755 \"$t\"; if [ ! -x \"$t\" ]; then rm -f \"$t\"; : > \"$d/{NOEXEC_MARKER}\"; echo \"$d\"; exit {NOEXEC_STATUS}; fi; \
         mv -f \"$t\" \"$d/benchrig-agent-{sha}\"; echo \"$d\"",
        len = bytes.len(),
    );
    let out = t.exec(&script, Some(bytes.to_vec())).await?;
    let dir = String::from_utf8_lossy(&out.stdout).trim().to_string();
    match out.status {
        Some(0) => Ok(dir),
        Some(NOEXEC_STATUS) => Err(DeployError::NoExec { dir, fallback: own }),
        _ => Err(DeployError::Remote(format!("uploading the agent to {dir_expr} failed: {}", out.stderr_text()))),
    }
}

/// Remove an agent whose content is not what its name says, so the next
/// session uploads it again instead of failing the same way forever.
pub async fn discard_agent(t: &dyn Transport, d: &Deployed) {
    let _ = t.exec(&format!("rm -f {}", sh_quote(&d.remote_path)), None).await;
}

/// Start the deployed agent, becoming its user first when the host says so.
async fn start_agent(t: &dyn Transport, d: &Deployed, b: Option<&Become>) -> Result<RemoteProcess, DeployError> {
    let Some(b) = b else { return Ok(t.spawn(&serve_command(&sh_quote(&d.remote_path), None)).await?) };
    // Here no probe line follows the check: say it passed, so that a
    // refusal (the password changed since the probe) is read as one.
    let script = format!(
        "{}printf '{BECOME_TAG}\tok\n'; {}",
        become_check(Some(b)),
        serve_command(&sh_quote(&d.remote_path), Some(b))
    );
    let mut proc = spawn_becoming(t, &script, Some(b)).await?;
    let line = read_line(proc.stdout.as_mut())
        .await
        .map_err(|e| DeployError::Remote(format!("starting the agent failed: {e}")))?;
    match parse_refusal(&line) {
        Some(why) => Err(DeployError::Become { user: b.user.clone(), why }),
        None if line == format!("{BECOME_TAG}\tok") => Ok(proc),
        None => Err(DeployError::Remote(format!("starting the agent failed: {line}"))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::session::transport::Secret;

    #[test]
    fn arch_names_map_to_targets() {
        assert_eq!(triple_for("i686"), Some("i686-unknown-linux-musl"));
        assert_eq!(triple_for("x86_64"), Some("x86_64-unknown-linux-musl"));
        assert_eq!(triple_for("arm64"), Some("aarch64-unknown-linux-musl"));
        assert_eq!(triple_for("sparc64"), None);
    }

    #[test]
    fn remote_dir_keeps_home_unquoted() {
        assert_eq!(remote_dir_expr("~/.cache/benchrig"), "\"$HOME\"/.cache/benchrig");
        assert_eq!(remote_dir_expr("/opt/b r"), "'/opt/b r'");
    }

    #[test]
    fn the_agent_serves_as_the_user_or_through_sudo() {
        assert_eq!(serve_command("'/h/a b'", None), "exec '/h/a b' serve");
        let nopw = Become { user: "bench".into(), password: None };
        assert_eq!(serve_command("\"$a\"", Some(&nopw)), "exec sudo -n -u bench -- \"$a\" serve");
        let pw = Become { user: "root".into(), password: Some(Secret::new("pw")) };
        assert_eq!(serve_command("\"$a\"", Some(&pw)), "sudo -n -u root -- \"$a\" serve; exit $?");
        let builds = AgentBuilds { dirs: vec![], found: OnceLock::from(vec![]) };
        let script = start_script(&builds, "/d", None, Some(&pw));
        assert!(!script.contains("exec sudo") && script.contains("sudo -S -p '' -v"), "{script}");
        assert!(!script.contains("pw"), "the password is never in the script: {script}");
    }

    #[test]
    fn the_probe_line_is_read_back() {
        let p = parse_probe("benchrig-probe\ti686\t/root\t/root/.cache/benchrig\texec\n").unwrap();
        assert_eq!(
            p,
            Probe { arch: "i686".into(), home: "/root".into(), dir: "/root/.cache/benchrig".into(), running: true }
        );
        assert!(!parse_probe("benchrig-probe\tx86_64\t/h\t/h/d\tabsent").unwrap().running);
        assert_eq!(parse_probe("Welcome to the host!"), None);
        assert_eq!(parse_probe("benchrig-probe\tx86_64"), None);
    }

    /// The script under a real `sh`: with our build for this machine in the
    /// agent dir it execs it (here a stand-in that prints its arguments),
    /// without it it says `absent` and exits.
    #[tokio::test]
    async fn the_start_script_execs_the_agent_it_finds_and_only_it() {
        let arch = std::process::Command::new("uname").arg("-m").output().unwrap();
        let arch = String::from_utf8(arch.stdout).unwrap().trim().to_string();
        let Some(triple) = triple_for(&arch) else { return };
        let dir = tempfile::tempdir().unwrap();
        let build = AgentBuild { triple, path: "/nonexistent".into(), sha256: "ab12".into() };
        let builds = AgentBuilds { dirs: vec![], found: OnceLock::from(vec![build]) };
        let script = start_script(&builds, dir.path().to_str().unwrap(), None, None);
        let run = || std::process::Command::new("sh").arg("-c").arg(&script).output().unwrap();
        let absent = String::from_utf8(run().stdout).unwrap();
        let p = parse_probe(absent.lines().next().unwrap()).unwrap();
        assert_eq!((p.arch.as_str(), p.running, p.dir.as_str()), (arch.as_str(), false, dir.path().to_str().unwrap()));
        let agent = dir.path().join("benchrig-agent-ab12");
        std::fs::write(&agent, "#!/bin/sh\necho \"agent $*\"\n").unwrap();
        std::fs::set_permissions(&agent, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
        let out = String::from_utf8(run().stdout).unwrap();
        let mut lines = out.lines();
        assert!(parse_probe(lines.next().unwrap()).unwrap().running, "{out}");
        assert_eq!(lines.next(), Some("agent serve"), "{out}");
    }

    /// The fallback dir is looked in only once an upload left the marker
    /// in the default dir, and only while it is ours: an agent there is
    /// never run for a host whose default dir merely lacks one.
    #[tokio::test]
    async fn the_fallback_is_used_only_after_the_default_dir_was_found_noexec() {
        let arch = std::process::Command::new("uname").arg("-m").output().unwrap();
        let arch = String::from_utf8(arch.stdout).unwrap().trim().to_string();
        let Some(triple) = triple_for(&arch) else { return };
        let (home, spare) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
        let build = AgentBuild { triple, path: "/nonexistent".into(), sha256: "cd34".into() };
        let builds = AgentBuilds { dirs: vec![], found: OnceLock::from(vec![build]) };
        let agent = spare.path().join("benchrig-agent-cd34");
        std::fs::write(&agent, "#!/bin/sh\necho \"fallback $*\"\n").unwrap();
        std::fs::set_permissions(&agent, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
        let script = start_script(&builds, home.path().to_str().unwrap(), Some(spare.path().to_str().unwrap()), None);
        let run = || {
            String::from_utf8(std::process::Command::new("sh").arg("-c").arg(&script).output().unwrap().stdout).unwrap()
        };
        assert!(
            !parse_probe(run().lines().next().unwrap()).unwrap().running,
            "no marker: the fallback's agent is not run"
        );
        std::fs::write(home.path().join(NOEXEC_MARKER), "").unwrap();
        let out = run();
        let p = parse_probe(out.lines().next().unwrap()).unwrap();
        assert!(p.running && p.dir == spare.path().to_str().unwrap(), "{out}");
        assert_eq!(out.lines().nth(1), Some("fallback serve"));
    }

    #[test]
    fn a_missing_build_names_where_it_goes_and_the_command() {
        let b = AgentBuilds { dirs: vec!["/nonexistent".into()], found: OnceLock::new() };
        let e = b.for_arch("aarch64").unwrap_err().to_string();
        assert!(e.contains("/nonexistent/aarch64-unknown-linux-musl/agent/benchrig-agent"), "{e}");
        assert!(e.contains(BUILD_COMMAND), "{e}");
        assert!(e.contains("cargo build -p benchrig-agent --profile agent --target aarch64-unknown-linux-musl"), "{e}");
    }

    #[test]
    fn builds_are_found_in_the_agent_profiles_directory_not_release() {
        let dir = tempfile::tempdir().unwrap();
        let put = |sub: &str| {
            let p = dir.path().join("x86_64-unknown-linux-musl").join(sub);
            std::fs::create_dir_all(&p).unwrap();
            std::fs::write(p.join("benchrig-agent"), sub).unwrap();
        };
        put("release");
        let b = AgentBuilds { dirs: vec![dir.path().into()], found: OnceLock::new() };
        assert!(b.all().is_empty(), "an agent built with the old release profile is not picked up");
        put("agent");
        let b = AgentBuilds { dirs: vec![dir.path().into()], found: OnceLock::new() };
        let found = b.for_arch("x86_64").unwrap();
        assert_eq!(found.path, dir.path().join("x86_64-unknown-linux-musl/agent/benchrig-agent"));
    }
}
