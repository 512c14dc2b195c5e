//! Getting the right agent onto a host and started.
//!
//! One channel learns the host's architecture and $HOME and, when the host
//! already has our build for it (content-addressed: `benchrig-agent-<sha256>`),
//! becomes the agent: a host that has it costs one remote shell, not two.
//! Otherwise the binary is uploaded, written to a temporary name and renamed
//! so a half-written agent is never run, and started on a channel of its own.
//! The sha256 the running agent reports about itself is checked in the
//! handshake.

use crate::session::transport::{sh_quote, RemoteProcess, Transport, TransportError};
use sha2::{Digest, Sha256};
use std::path::{Path, PathBuf};
use std::sync::OnceLock;
use tokio::io::AsyncReadExt;

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
}

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

/// The script that probes the host and, if our build for its architecture
/// is there, execs it.
fn start_script(builds: &AgentBuilds, remote_dir: &str, become_user: Option<&str>) -> String {
    let mut arms = String::new();
    for b in builds.all() {
        if let Some((names, _)) = ARCHES.iter().find(|(_, t)| *t == b.triple) {
            arms.push_str(&format!("{}) s={};; ", names.join("|"), b.sha256));
        }
    }
    let agent = serve_command("\"$a\"", become_user);
    format!(
        "m=$(uname -m); d={d}; s=; case \"$m\" in {arms}esac; a=\"$d/benchrig-agent-$s\"; \
         if [ -n \"$s\" ] && [ -x \"$a\" ]; then printf '{PROBE_TAG}\\t%s\\t%s\\t%s\\texec\\n' \"$m\" \"$HOME\" \"$d\"; exec {agent}; fi; \
         printf '{PROBE_TAG}\\t%s\\t%s\\t%s\\tabsent\\n' \"$m\" \"$HOME\" \"$d\"",
        d = remote_dir_expr(remote_dir),
    )
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

/// Start the host's agent for its architecture, uploading it first when the
/// host does not have it.
pub async fn start(
    t: &dyn Transport,
    builds: &AgentBuilds,
    remote_dir: &str,
    become_user: Option<&str>,
) -> Result<(Deployed, RemoteProcess), DeployError> {
    let mut proc = t.spawn(&start_script(builds, remote_dir, become_user)).await?;
    let line = read_line(proc.stdout.as_mut())
        .await
        .map_err(|e| DeployError::Remote(format!("probing the host failed: {e}")))?;
    let Some(probe) = parse_probe(&line) else {
        let mut err = Vec::new();
        let _ = proc.stderr.read_to_end(&mut err).await;
        let said = if line.is_empty() { String::from_utf8_lossy(&err).trim().to_string() } else { line };
        return Err(DeployError::Remote(format!("probing the host failed: {said}")));
    };
    let build = builds.for_arch(&probe.arch)?;
    let remote_path = format!("{}/benchrig-agent-{}", probe.dir, build.sha256);
    let mut deployed =
        Deployed { arch: probe.arch, home: probe.home, remote_dir: probe.dir, remote_path, build, uploaded: false };
    if probe.running {
        return Ok((deployed, proc));
    }
    proc.exit.wait().await;
    upload(t, &deployed).await?;
    deployed.uploaded = true;
    let proc = start_agent(t, &deployed, become_user).await?;
    Ok((deployed, proc))
}

/// Put the agent at its content-addressed name.
async fn upload(t: &dyn Transport, d: &Deployed) -> Result<(), DeployError> {
    let bytes = std::fs::read(&d.build.path)
        .map_err(|e| DeployError::Remote(format!("cannot read {}: {e}", d.build.path.display())))?;
    let q = sh_quote(&d.remote_dir);
    // A dropped connection gives `cat` a clean EOF: check the size
    // before the file gets its content-addressed name.
    let script = format!(
        "set -e; umask 077; mkdir -p {q}; t={q}/.benchrig-agent-{sha}.$$; cat > \"$t\"; \
         n=$(wc -c < \"$t\"); if [ \"$n\" -ne {len} ]; then rm -f \"$t\"; echo \"upload cut short: $n of {len} bytes\" >&2; exit 1; fi; \
         chmod 755 \"$t\"; mv -f \"$t\" {final_}",
        sha = d.build.sha256,
        len = bytes.len(),
        final_ = sh_quote(&d.remote_path)
    );
    let out = t.exec(&script, Some(bytes)).await?;
    if !out.success() {
        return Err(DeployError::Remote(format!(
            "uploading the agent to {} failed: {}",
            d.remote_dir,
            out.stderr_text()
        )));
    }
    Ok(())
}

/// Remove an agent whose content is not what its name says, so the next
/// session uploads it again instead of failing the same way forever.
pub async fn discard_agent(t: &dyn Transport, d: &Deployed) {
    let _ = t.exec(&format!("rm -f {}", sh_quote(&d.remote_path)), None).await;
}

/// Start the deployed agent, through `sudo -n` when the host asks to become another user.
async fn start_agent(t: &dyn Transport, d: &Deployed, become_user: Option<&str>) -> Result<RemoteProcess, DeployError> {
    let script = format!("exec {}", serve_command(&sh_quote(&d.remote_path), become_user));
    Ok(t.spawn(&script).await?)
}

/// The agent at `agent` (a shell word) serving, as the host's own user or
/// through `sudo -n` as `become_user`: one spelling for both ways it starts.
fn serve_command(agent: &str, become_user: Option<&str>) -> String {
    match become_user {
        Some(user) => format!("sudo -n -u {} -- {agent} serve", sh_quote(user)),
        None => format!("{agent} serve"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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
        assert_eq!(serve_command("'/h/a b'", None), "'/h/a b' serve");
        assert_eq!(serve_command("\"$a\"", Some("bench")), "sudo -n -u bench -- \"$a\" serve");
        let builds = AgentBuilds { dirs: vec![], found: OnceLock::from(vec![]) };
        assert!(start_script(&builds, "/d", Some("bench")).contains("exec sudo -n -u bench -- \"$a\" serve; fi"));
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
        let script = start_script(&builds, dir.path().to_str().unwrap(), None);
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
