//! Getting the right agent onto a host and started.
//!
//! One channel learns the host's architecture, CPU, kernel and $HOME and,
//! when the host already has the build its CPU needs (content-addressed:
//! `benchrig-agent-<sha256>`), starts it: a host that has it costs one
//! remote shell, not two.
//! Otherwise the binary is uploaded, written to a temporary name and renamed
//! so a half-written agent is never run, and started on a channel of its own.
//!
//! Everything on the host happens as the user the agent runs as (through
//! sudo when becoming), in that user's own directory: the dir and the file
//! must be that user's, no symlink and writable by no group or other, and
//! the file's sha256 is checked on the host before it is run (`sha256sum`,
//! or `openssl`). The sha256 the running agent reports about itself is
//! checked again in the handshake.

use crate::session::platform::{self, Platform, Refusal, BUILDS};
use crate::session::transport::{sh_quote, Become, RemoteProcess, Transport, TransportError};
use sha2::{Digest, Sha256};
use std::path::{Path, PathBuf};
use std::sync::OnceLock;
use tokio::io::AsyncReadExt;

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
    /// The host's CPU or kernel cannot run any agent build: said before
    /// anything is uploaded.
    #[error(transparent)]
    Refused(#[from] Refusal),
    #[error("{0}")]
    Remote(String),
    /// sudo would not start the agent as the become user.
    #[error("becoming {user}: {why}")]
    Become { user: String, why: BecomeRefusal },
    /// The agent dir cannot run programs.
    #[error("{dir} is on a filesystem mounted noexec, where the agent cannot run; {}", if *fallback { "set benchrig_remote_dir to a directory that can run programs" } else { "benchrig_remote_dir must name a directory that can run programs" })]
    NoExec { dir: String, fallback: bool },
    /// The agent dir is not the agent user's alone: another user could swap
    /// the agent that then runs (as root, through sudo).
    #[error("{dir} {why}: another user could replace the agent before it runs; make it a directory of the agent's user alone (not a symlink, `chmod go-w`) or set benchrig_remote_dir")]
    Unsafe { dir: String, why: String },
}

#[derive(Clone, Debug)]
pub struct AgentBuild {
    pub triple: &'static str,
    pub path: PathBuf,
    pub sha256: String,
}

/// Where agent builds are found: `$BENCHRIG_AGENTS/<triple>/` (or
/// `$BENCHRIG_AGENT_DIR`), then `agents/<triple>/` beside the benchrig
/// binary (a release tarball), cargo's `target/<triple>/agent/` (the
/// `agent` profile's directory) of the target directory the binary is in,
/// `/usr/lib/benchrig/agents/<triple>/` (the .deb), and this workspace's. Not
/// `target/<triple>/release/`, where agents were built before they had their
/// own profile: one left there is as old as that change.
pub struct AgentBuilds {
    dirs: Vec<PathBuf>,
    found: OnceLock<Vec<AgentBuild>>,
}

impl AgentBuilds {
    pub fn discover() -> Self {
        let mut dirs = Vec::new();
        // BENCHRIG_AGENTS as the release docs name it; BENCHRIG_AGENT_DIR as before.
        for var in ["BENCHRIG_AGENTS", "BENCHRIG_AGENT_DIR"] {
            if let Some(d) = std::env::var_os(var).filter(|d| !d.is_empty()) {
                dirs.push(PathBuf::from(d));
            }
        }
        if let Some(exe_dir) = std::env::current_exe().ok().and_then(|e| e.parent().map(Path::to_path_buf)) {
            dirs.push(exe_dir.join("agents"));
            // target/{debug,release}/benchrig → target/
            if let Some(target) = exe_dir.parent() {
                dirs.push(target.to_path_buf());
            }
        }
        // Where the .deb puts them.
        dirs.push(PathBuf::from("/usr/lib/benchrig/agents"));
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
            BUILDS
                .iter()
                .filter_map(|b| {
                    let triple = b.triple;
                    let path = self.candidates(triple).into_iter().find(|p| p.is_file())?;
                    warn_if_stale(&path);
                    let bytes = std::fs::read(&path).ok()?;
                    Some(AgentBuild { triple, path, sha256: benchrig_wire::hex(&Sha256::digest(&bytes)) })
                })
                .collect()
        })
    }

    /// The build `platform` needs, or why it has none (refused, or not built).
    pub fn for_platform(&self, platform: &Platform) -> Result<AgentBuild, DeployError> {
        let triple = platform::choose(platform)?.triple;
        self.all().iter().find(|b| b.triple == triple).cloned().ok_or_else(|| DeployError::MissingBuild {
            arch: platform.machine.clone(),
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

#[derive(Clone, Debug)]
pub struct Deployed {
    /// What the probe found of the host's machine (the build follows from it).
    pub platform: Platform,
    pub home: String,
    pub remote_dir: String,
    pub remote_path: String,
    pub build: AgentBuild,
    pub uploaded: bool,
    /// The host checked the agent's sha256 before it ran (it has
    /// `sha256sum` or `openssl`); otherwise only its owner and mode were.
    pub verified: bool,
    /// The agent dir this upload found mounted noexec (it went to the
    /// fallback instead), for the one line that says so.
    pub noexec_dir: Option<String>,
}

/// Where the agent goes unless the host sets `benchrig_remote_dir`: under
/// the home of the user the agent runs as (root's, when becoming root).
pub const DEFAULT_REMOTE_DIR: &str = "~/.cache/benchrig";

/// Where the agent goes when the default dir (under $HOME) cannot run
/// programs: a directory of the agent user's own on /var/tmp, made 0700 and
/// used only while it is private (below): another user could otherwise make
/// it first and swap the agent.
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

/// The first line the start script prints, before it starts the agent or
/// exits: `<tag>\t<uname -m>\t<$HOME>\t<agent dir>\t<exec|absent>\t<verified|unverified|->`
/// then `\t<uname -r>\t<sha256 of the build chosen, or empty>\t<CPU model>\t<flags>`
/// (the last two for 32-bit x86 only: `platform::shell_choice`).
const PROBE_TAG: &str = "benchrig-probe";
/// Or, when sudo would not let us become the agent's user: `<tag>\t<why>`.
const BECOME_TAG: &str = "benchrig-become";
/// Or, when the agent dir is not private: `<tag>\t<dir>\t<why>`.
const UNSAFE_TAG: &str = "benchrig-unsafe";

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
/// no terminal), so the `sudo -n` that follows, a child of the same shell,
/// needs none.
fn become_check(b: &Become) -> String {
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

/// `script` run as the agent's user: as it is, or, when becoming, whole
/// under `sudo -n -H -u <user> /bin/sh -c` once `become_check` passed. Every
/// look at the agent dir, the upload and the start happen as the user the
/// agent runs as, in that user's own dir: the agent sudo runs as root is
/// root's copy, which the login (or anyone who took it over) cannot swap.
/// With a password the login shell stays sudo's parent (the credential
/// `become_check` cached is that shell's); otherwise it execs.
fn as_agent_user(script: &str, b: Option<&Become>) -> String {
    let Some(b) = b else { return script.to_string() };
    let sudo = format!("sudo -n -H -u {} -- /bin/sh -c {}", sh_quote(&b.user), sh_quote(script));
    let run = if b.password.is_some() { format!("{sudo}; exit $?") } else { format!("exec {sudo}") };
    format!("{}{run}", become_check(b))
}

/// Shell functions every agent-user script starts with (POSIX sh; busybox
/// has every command). `private P`: P is no symlink, is this user's own and
/// no group or other may write it (the 6th and 9th letters of `ls -ld`).
/// `why P`: which of those P fails. `sha_is F SHA`: 0 when F's sha256 is
/// SHA, 1 when it is not, 2 when the host has no tool to tell.
const SH_FUNCTIONS: &str = "private() { [ ! -L \"$1\" ] && [ -O \"$1\" ] && \
     case $(ls -ld \"$1\") in ?????-??-*) true;; *) false;; esac; }; \
     why() { if [ -L \"$1\" ]; then echo 'is a symlink'; elif [ ! -O \"$1\" ]; then echo \"is not $(id -un)'s own\"; \
     else echo 'is writable by group or others'; fi; }; \
     sha_is() { if command -v sha256sum >/dev/null 2>&1; then h=$(sha256sum < \"$1\"); \
     elif command -v openssl >/dev/null 2>&1; then h=$(openssl dgst -sha256 -r < \"$1\"); else return 2; fi; \
     case \"$h\" in \"$2 \"*) return 0;; esac; return 1; }; ";

/// The script that probes the host and, if our build for its architecture
/// is in the agent dir (or, for the default dir, in the fallback), private
/// and of the right sha256, starts it. An agent whose file is not private
/// or not what its name says is left for the upload to replace; a dir that
/// is not private is refused. The probe line names the primary dir when no
/// agent is found.
///
/// Hashing the agent (1.7 MB) is most of what a start costs the host (7 ms
/// of CPU for coreutils' `sha256sum` here, ten times that on a slow box),
/// so a verified agent gets a stamp, `<agent>.ok`, and is hashed again only
/// once its file is newer than the stamp: any write to it (a replaced or
/// damaged agent) moves its mtime past the stamp's. Only the dir's owner,
/// who could rewrite the agent anyway, can forge a stamp in a private dir.
/// A verified agent is told so (`serve --verified`) and takes its sha256
/// from its name instead of hashing itself a second time.
fn start_script(builds: &AgentBuilds, dir: &str, fallback: Option<&str>) -> String {
    let present: Vec<(&str, &str)> = builds.all().iter().map(|b| (b.triple, b.sha256.as_str())).collect();
    // The agent runs as the shell's child, not in its place: a death by a
    // signal then reaches the controller as the shell's exit status 128+N
    // (ssh passes it on), where an exec'd agent's would be ssh's own 255.
    let serve = format!(
        "serve() {{ a=\"$1/benchrig-agent-$s\"; [ -n \"$s\" ] && [ -f \"$a\" ] || return 0; \
         private \"$1\" || {{ printf '{UNSAFE_TAG}\\t%s\\t%s\\n' \"$1\" \"$(why \"$1\")\"; exit 1; }}; \
         private \"$a\" && [ -x \"$a\" ] || return 0; \
         if [ \"$a.ok\" -nt \"$a\" ]; then v=verified; else sha_is \"$a\" \"$s\"; r=$?; [ $r -eq 1 ] && return 0; \
         if [ $r -eq 0 ]; then v=verified; {{ : > \"$a.ok\"; }} 2>/dev/null; else v=unverified; fi; fi; \
         probe exec \"$1\" \"$v\"; \
         if [ $v = verified ]; then \"$a\" serve --verified; else \"$a\" serve; fi; exit $?; }}; "
    );
    let probe = format!(
        "probe() {{ printf '{PROBE_TAG}\\t%s\\t%s\\t%s\\t%s\\t%s\\t%s\\t%s\\t%s\\t%s\\n' \
         \"$m\" \"$HOME\" \"$2\" \"$1\" \"$3\" \"$k\" \"$s\" \"$c\" \"$f\"; }}; "
    );
    let mut script = format!(
        "{SH_FUNCTIONS}{probe}{serve}{}d={}; serve \"$d\"; ",
        platform::shell_choice(&present),
        remote_dir_expr(dir)
    );
    if let Some(f) = fallback {
        script.push_str(&format!("if [ -e \"$d/{NOEXEC_MARKER}\" ]; then serve {f}; fi; "));
    }
    script.push_str("probe absent \"$d\" -");
    script
}

/// What the probe line said.
#[derive(Debug, PartialEq)]
struct Probe {
    platform: Platform,
    home: String,
    dir: String,
    running: bool,
    /// The host had a tool to check the agent's sha256 before it ran.
    verified: bool,
    /// The sha256 of the build the host's shell chose for its CPU, empty
    /// when it could run none of those present.
    chosen: String,
}

/// What the first line of an agent-user script said.
#[derive(Debug, PartialEq)]
enum FirstLine {
    Probe(Probe),
    Become(BecomeRefusal),
    Unsafe { dir: String, why: String },
}

fn parse_first_line(line: &str) -> Option<FirstLine> {
    let mut f = line.trim_end_matches(['\r', '\n']).split('\t');
    match f.next()? {
        PROBE_TAG => {
            let (machine, home, dir, state, verified) = (f.next()?, f.next()?, f.next()?, f.next()?, f.next()?);
            let (kernel, chosen, cpu_model, flags) = (f.next()?, f.next()?, f.next()?, f.next()?);
            let platform = Platform {
                machine: machine.into(),
                kernel: kernel.into(),
                cpu_model: cpu_model.into(),
                flags: platform::parse_flags(flags),
            };
            Some(FirstLine::Probe(Probe {
                platform,
                home: home.into(),
                dir: dir.into(),
                running: state == "exec",
                verified: verified == "verified",
                chosen: chosen.into(),
            }))
        }
        BECOME_TAG => BecomeRefusal::from_tag(f.next()?).map(FirstLine::Become),
        UNSAFE_TAG => Some(FirstLine::Unsafe { dir: f.next()?.into(), why: f.next()?.into() }),
        _ => None,
    }
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

/// What an agent-user script reads first on its stdin: the become
/// password's line, when there is one (`become_check` reads it).
fn password_line(b: Option<&Become>) -> Vec<u8> {
    b.and_then(|b| b.password.as_ref()).map(|p| format!("{}\n", p.expose()).into_bytes()).unwrap_or_default()
}

/// Spawn the start script as the agent's user and read its first line:
/// the probe, or why it could not start.
async fn probe(t: &dyn Transport, script: &str, b: Option<&Become>) -> Result<(Probe, RemoteProcess), DeployError> {
    let mut proc = t.spawn(&as_agent_user(script, b), &password_line(b)).await?;
    let line = read_line(proc.stdout.as_mut())
        .await
        .map_err(|e| DeployError::Remote(format!("probing the host failed: {e}")))?;
    match parse_first_line(&line) {
        Some(FirstLine::Probe(p)) => Ok((p, proc)),
        Some(FirstLine::Become(why)) => {
            Err(DeployError::Become { user: b.map(|b| b.user.clone()).unwrap_or_default(), why })
        }
        Some(FirstLine::Unsafe { dir, why }) => Err(DeployError::Unsafe { dir, why }),
        None => {
            let mut err = Vec::new();
            let _ = proc.stderr.read_to_end(&mut err).await;
            let said = if line.is_empty() { String::from_utf8_lossy(&err).trim().to_string() } else { line };
            Err(DeployError::Remote(format!("probing the host failed: {said}")))
        }
    }
}

/// Start the host's agent for its architecture, uploading it first when the
/// host does not have it. `dir` is `benchrig_remote_dir`; without it the
/// agent goes to [`DEFAULT_REMOTE_DIR`], or to [`FALLBACK_REMOTE_DIR`] where
/// that is mounted noexec. All of it as the agent's user (`as_agent_user`).
pub async fn start(
    t: &dyn Transport,
    builds: &AgentBuilds,
    dir: Option<&str>,
    b: Option<&Become>,
) -> Result<(Deployed, RemoteProcess), DeployError> {
    let fallback = dir.is_none();
    let dir = dir.unwrap_or(DEFAULT_REMOTE_DIR);
    let script = start_script(builds, dir, fallback.then_some(FALLBACK_EXPR));
    let (probe_line, proc) = probe(t, &script, b).await?;
    // Refused before anything is uploaded; an agent an older benchrig left
    // on a host now refused is not let run either.
    let build = match builds.for_platform(&probe_line.platform) {
        Ok(build) => build,
        Err(e) => {
            drop(proc);
            return Err(e);
        }
    };
    if !probe_line.chosen.is_empty() && probe_line.chosen != build.sha256 {
        return Err(DeployError::Remote(format!(
            "the host's shell chose agent {} where benchrig chose its {} build: a bug",
            probe_line.chosen, build.triple
        )));
    }
    let mut deployed = Deployed {
        remote_path: agent_path(&probe_line.dir, &build.sha256),
        platform: probe_line.platform,
        home: probe_line.home,
        remote_dir: probe_line.dir,
        build,
        uploaded: false,
        verified: probe_line.verified,
        noexec_dir: None,
    };
    if probe_line.running {
        return Ok((deployed, proc));
    }
    proc.exit.wait().await;
    let bytes = std::fs::read(&deployed.build.path)
        .map_err(|e| DeployError::Remote(format!("cannot read {}: {e}", deployed.build.path.display())))?;
    let mut at = upload(t, &remote_dir_expr(dir), &deployed.build.sha256, &bytes, b).await;
    if let (Err(DeployError::NoExec { .. }), true) = (&at, fallback) {
        deployed.noexec_dir = Some(deployed.remote_dir.clone());
        at = upload(t, FALLBACK_EXPR, &deployed.build.sha256, &bytes, b).await;
        if let Err(DeployError::NoExec { dir, .. }) = at {
            let both = format!("{} (and the fallback {dir})", deployed.remote_dir);
            return Err(DeployError::NoExec { dir: both, fallback: true });
        }
    }
    deployed.remote_dir = at?;
    deployed.remote_path = agent_path(&deployed.remote_dir, &deployed.build.sha256);
    deployed.uploaded = true;
    // The same script starts what was just put there, checking it again:
    // between the upload and the start nothing is taken on trust.
    let (started, proc) = probe(t, &script, b).await?;
    if !started.running {
        return Err(DeployError::Remote(format!(
            "the agent uploaded to {} did not start: it is not there, or not what was uploaded",
            deployed.remote_dir
        )));
    }
    deployed.verified = started.verified;
    Ok((deployed, proc))
}

/// The agent's content-addressed path in an agent dir.
fn agent_path(dir: &str, sha: &str) -> String {
    format!("{dir}/benchrig-agent-{sha}")
}

/// Exit status of the upload script when the agent, written, cannot run.
const NOEXEC_STATUS: i32 = 3;
/// Exit status of the upload script when the agent dir is not private.
const UNSAFE_STATUS: i32 = 4;

/// The upload, as the agent's user: the dir made (0700) if missing and
/// refused unless private; the bytes written to a temporary file made by
/// `mktemp` (O_EXCL: a planted name or symlink is never written through;
/// noclobber where there is no mktemp), checked for size and sha256, and
/// renamed to the content-addressed name, so a half-written or altered
/// agent never has that name. `[ -x ]` is false on a noexec mount (access(2)
/// checks it), even for root.
fn upload_script(dir_expr: &str, sha: &str, len: usize) -> String {
    write_script(dir_expr, &Upload::Agent, sha, len)
}

/// What an upload writes: the agent (run from there), or a file the agent
/// reads (a kernel package), private and not executable.
enum Upload {
    Agent,
    File,
}

impl Upload {
    /// The temporary name's prefix, the final name, and what the script
    /// prints once done: the dir for the agent, the file's path for a file.
    fn names(&self, sha: &str) -> (&'static str, String, String) {
        match self {
            Upload::Agent => (".benchrig-agent", format!("benchrig-agent-{sha}"), "$d".into()),
            Upload::File => (".benchrig-file", format!(".benchrig-file-{sha}"), format!("$d/.benchrig-file-{sha}")),
        }
    }
}

fn write_script(dir_expr: &str, what: &Upload, sha: &str, len: usize) -> String {
    let (tmp, name, said) = what.names(sha);
    let finish = match what {
        Upload::Agent => format!(
            "chmod 700 \"$t\"; if [ ! -x \"$t\" ]; then rm -f \"$t\"; : > \"$d/{NOEXEC_MARKER}\"; echo \"$d\"; exit {NOEXEC_STATUS}; fi; "
        ),
        Upload::File => "chmod 600 \"$t\"; ".to_string(),
    };
    format!(
        "{SH_FUNCTIONS}umask 077; d={dir_expr}; mkdir -p \"$d\" 2>/dev/null; \
         if ! private \"$d\"; then printf '%s\\t%s\\n' \"$d\" \"$(why \"$d\")\"; exit {UNSAFE_STATUS}; fi; \
         t=$(mktemp \"$d/{tmp}.XXXXXX\" 2>/dev/null) \
         || {{ t=\"$d/{tmp}.$$\"; (set -C; : > \"$t\") || exit 1; }}; \
         cat > \"$t\" || {{ rm -f \"$t\"; exit 1; }}; \
         n=$(wc -c < \"$t\"); if [ \"$n\" -ne {len} ]; then rm -f \"$t\"; echo \"upload cut short: $n of {len} bytes\" >&2; exit 1; fi; \
         sha_is \"$t\" {sha}; if [ $? -eq 1 ]; then rm -f \"$t\"; echo \"the upload arrived altered: its sha256 is not {sha}\" >&2; exit 1; fi; \
         {finish}mv -f \"$t\" \"$d/{name}\"; echo \"{said}\""
    )
}

/// Put a file (a kernel package) into the agent's dir, content-addressed,
/// as the agent's user, the same way the agent itself goes there; its path
/// on the host. The agent checks its sha256 again before it uses it.
pub async fn put_file(
    t: &dyn Transport,
    dir: &str,
    sha: &str,
    bytes: Vec<u8>,
    b: Option<&Become>,
) -> Result<String, DeployError> {
    let script = as_agent_user(&write_script(&sh_quote(dir), &Upload::File, sha, bytes.len()), b);
    let mut stdin = password_line(b);
    stdin.extend(bytes);
    let out = t.exec(&script, Some(stdin)).await?;
    let said = String::from_utf8_lossy(&out.stdout).trim().to_string();
    match out.status {
        Some(0) => Ok(said),
        Some(UNSAFE_STATUS) => {
            let (dir, why) = said.split_once('\t').unwrap_or((&said, "is not private"));
            Err(DeployError::Unsafe { dir: dir.into(), why: why.into() })
        }
        _ => Err(DeployError::Remote(format!("uploading a file to {dir} failed: {}", out.stderr_text()))),
    }
}

/// Put the agent at its content-addressed name in the dir `dir_expr` (a
/// shell word) names; the dir it resolved to.
async fn upload(
    t: &dyn Transport,
    dir_expr: &str,
    sha: &str,
    bytes: &[u8],
    b: Option<&Become>,
) -> Result<String, DeployError> {
    let script = as_agent_user(&upload_script(dir_expr, sha, bytes.len()), b);
    let mut stdin = password_line(b);
    stdin.extend_from_slice(bytes);
    let out = t.exec(&script, Some(stdin)).await?;
    let said = String::from_utf8_lossy(&out.stdout).trim().to_string();
    if let Some(FirstLine::Become(why)) = parse_first_line(&said) {
        return Err(DeployError::Become { user: b.map(|b| b.user.clone()).unwrap_or_default(), why });
    }
    match out.status {
        Some(0) => Ok(said),
        Some(NOEXEC_STATUS) => Err(DeployError::NoExec { dir: said, fallback: dir_expr == FALLBACK_EXPR }),
        Some(UNSAFE_STATUS) => {
            let (dir, why) = said.split_once('\t').unwrap_or((&said, "is not private"));
            Err(DeployError::Unsafe { dir: dir.into(), why: why.into() })
        }
        _ => Err(DeployError::Remote(format!("uploading the agent to {dir_expr} failed: {}", out.stderr_text()))),
    }
}

/// Remove an agent whose content is not what its name says, so the next
/// session uploads it again instead of failing the same way forever.
pub async fn discard_agent(t: &dyn Transport, d: &Deployed, b: Option<&Become>) {
    let script =
        as_agent_user(&format!("rm -f {} {}", sh_quote(&d.remote_path), sh_quote(&format!("{}.ok", d.remote_path))), b);
    let _ = t.exec(&script, Some(password_line(b))).await;
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::session::transport::Secret;

    #[test]
    fn remote_dir_keeps_home_unquoted() {
        assert_eq!(remote_dir_expr("~/.cache/benchrig"), "\"$HOME\"/.cache/benchrig");
        assert_eq!(remote_dir_expr("/opt/b r"), "'/opt/b r'");
    }

    #[test]
    fn every_script_runs_as_the_agent_user_whole_under_sudo_when_becoming() {
        assert_eq!(as_agent_user("echo hi", None), "echo hi");
        let nopw = Become { user: "bench".into(), password: None };
        let s = as_agent_user("echo \"$HOME\"", Some(&nopw));
        assert!(s.ends_with("exec sudo -n -H -u bench -- /bin/sh -c 'echo \"$HOME\"'"), "{s}");
        assert!(s.contains("sudo -n -v"), "{s}");
        let pw = Become { user: "root".into(), password: Some(Secret::new("pw")) };
        let s = as_agent_user("echo hi", Some(&pw));
        assert!(
            s.contains("sudo -S -p '' -v") && s.ends_with("sudo -n -H -u root -- /bin/sh -c 'echo hi'; exit $?"),
            "{s}"
        );
        assert!(!s.contains("exec sudo"), "with a password the shell stays sudo's parent: {s}");
        assert!(!s.contains("pw\n") && !s.contains("'pw'"), "the password is never in the script: {s}");
        assert_eq!(password_line(Some(&pw)), b"pw\n");
        assert!(password_line(Some(&nopw)).is_empty());
    }

    #[test]
    fn the_first_line_is_read_back() {
        let line = "benchrig-probe\ti686\t/root\t/root/.cache/benchrig\texec\tverified\t6.1.0-28-686\tab12\tPentium III (Coppermine)\t  fpu cx8 cmov sse \n";
        let want = Probe {
            platform: Platform {
                machine: "i686".into(),
                kernel: "6.1.0-28-686".into(),
                cpu_model: "Pentium III (Coppermine)".into(),
                flags: vec!["fpu".into(), "cx8".into(), "cmov".into(), "sse".into()],
            },
            home: "/root".into(),
            dir: "/root/.cache/benchrig".into(),
            running: true,
            verified: true,
            chosen: "ab12".into(),
        };
        assert_eq!(parse_first_line(line), Some(FirstLine::Probe(want)));
        let FirstLine::Probe(p) = parse_first_line("benchrig-probe\tx86_64\t/h\t/h/d\tabsent\t-\t6.1.0\t\t\t").unwrap()
        else {
            panic!()
        };
        assert!(!p.running && !p.verified && p.chosen.is_empty() && p.platform.flags.is_empty());
        assert_eq!(
            parse_first_line("benchrig-become\tpassword-refused"),
            Some(FirstLine::Become(BecomeRefusal::WrongPassword))
        );
        assert_eq!(
            parse_first_line("benchrig-unsafe\t/h/d\tis a symlink"),
            Some(FirstLine::Unsafe { dir: "/h/d".into(), why: "is a symlink".into() })
        );
        assert_eq!(parse_first_line("Welcome to the host!"), None);
        assert_eq!(parse_first_line("benchrig-probe\tx86_64"), None);
    }

    /// A stand-in agent (a script that prints its arguments) and the builds
    /// that name it by its real sha256, for this machine's architecture.
    fn stand_in(text: &str) -> Option<(String, AgentBuilds)> {
        let arch = std::process::Command::new("uname").arg("-m").output().unwrap();
        let arch = String::from_utf8(arch.stdout).unwrap().trim().to_string();
        let platform = Platform { machine: arch, kernel: "6.1".into(), ..Default::default() };
        let triple = platform::choose(&platform).ok()?.triple;
        let sha = benchrig_wire::hex(&Sha256::digest(text.as_bytes()));
        let build = AgentBuild { triple, path: "/nonexistent".into(), sha256: sha.clone() };
        Some((sha, AgentBuilds { dirs: vec![], found: OnceLock::from(vec![build]) }))
    }

    fn put(path: &Path, text: &str, mode: u32) {
        std::fs::write(path, text).unwrap();
        std::fs::set_permissions(path, std::os::unix::fs::PermissionsExt::from_mode(mode)).unwrap();
    }

    /// `script` under every POSIX shell this machine has of those hosts
    /// have (dash, busybox's ash, bash): each must answer alike (the
    /// scripts' effects are idempotent); the first's answer.
    fn sh_out(script: &str, stdin: &[u8]) -> (Option<i32>, String, String) {
        use std::io::Write;
        let shells: [&[&str]; 3] = [&["sh"], &["busybox", "sh"], &["bash", "--posix"]];
        let mut answers = Vec::new();
        for shell in shells {
            let Ok(mut c) = std::process::Command::new(shell[0])
                .args(&shell[1..])
                .arg("-c")
                .arg(script)
                .stdin(std::process::Stdio::piped())
                .stdout(std::process::Stdio::piped())
                .stderr(std::process::Stdio::piped())
                .spawn()
            else {
                continue;
            };
            c.stdin.take().unwrap().write_all(stdin).unwrap();
            let o = c.wait_with_output().unwrap();
            let answer = (o.status.code(), String::from_utf8(o.stdout).unwrap(), String::from_utf8(o.stderr).unwrap());
            if let Some(first) = answers.first() {
                let (c0, o0, _): &(Option<i32>, String, String) = first;
                assert_eq!((c0, o0), (&answer.0, &answer.1), "{shell:?} answers otherwise than sh");
            }
            answers.push(answer);
        }
        answers.into_iter().next().expect("sh runs")
    }

    /// The script under a real `sh`: with our build for this machine in the
    /// agent dir it execs it, without it it says `absent` and exits; an
    /// agent that is not what its name says, or that others may write, is
    /// never run (the upload replaces it), and a dir others may write is
    /// refused, saying why.
    #[test]
    fn the_start_script_execs_the_agent_it_finds_only_when_private_and_verified() {
        let text = "#!/bin/sh\necho \"agent $*\"\n";
        let Some((sha, builds)) = stand_in(text) else { return };
        let dir = tempfile::tempdir().unwrap();
        let d = dir.path().to_str().unwrap();
        let script = start_script(&builds, d, None);
        let first = |out: &str| match parse_first_line(out.lines().next().unwrap_or_default()) {
            Some(FirstLine::Probe(p)) => Ok(p),
            other => Err(format!("{other:?}")),
        };
        let p = first(&sh_out(&script, b"").1).unwrap();
        assert_eq!((p.running, p.dir.as_str()), (false, d));
        let agent = dir.path().join(format!("benchrig-agent-{sha}"));
        put(&agent, text, 0o700);
        let (_, out, _) = sh_out(&script, b"");
        let p = first(&out).unwrap();
        assert!(p.running && p.verified, "{out}");
        assert_eq!(out.lines().nth(1), Some("agent serve --verified"), "{out}");
        let stamp = PathBuf::from(format!("{}.ok", agent.display()));
        assert!(stamp.exists(), "a verified agent is stamped");
        let (_, out, _) = sh_out(&script, b"");
        assert!(
            first(&out).unwrap().verified && out.lines().nth(1) == Some("agent serve --verified"),
            "stamped: {out}"
        );

        // A wrapper under the agent's name, written after the stamp: not run.
        put(&agent, "#!/bin/sh\necho payload\nexec true\n", 0o700);
        let (_, out, _) = sh_out(&script, b"");
        assert!(!first(&out).unwrap().running && !out.contains("payload"), "{out}");
        // The real agent, writable by others: not run.
        put(&agent, text, 0o722);
        assert!(!first(&sh_out(&script, b"").1).unwrap().running);
        // A dir others may write: refused, with why.
        put(&agent, text, 0o700);
        std::fs::set_permissions(dir.path(), std::os::unix::fs::PermissionsExt::from_mode(0o777)).unwrap();
        let (_, out, _) = sh_out(&script, b"");
        assert_eq!(
            parse_first_line(out.lines().next().unwrap()),
            Some(FirstLine::Unsafe { dir: d.into(), why: "is writable by group or others".into() }),
            "{out}"
        );
        assert!(!out.contains("agent serve"));
    }

    /// The fallback dir is looked in only once an upload left the marker
    /// in the default dir: an agent there is never run for a host whose
    /// default dir merely lacks one.
    #[test]
    fn the_fallback_is_used_only_after_the_default_dir_was_found_noexec() {
        let text = "#!/bin/sh\necho \"fallback $*\"\n";
        let Some((sha, builds)) = stand_in(text) else { return };
        let (home, spare) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
        put(&spare.path().join(format!("benchrig-agent-{sha}")), text, 0o700);
        let script = start_script(&builds, home.path().to_str().unwrap(), Some(spare.path().to_str().unwrap()));
        let running =
            |out: &str| matches!(parse_first_line(out.lines().next().unwrap()), Some(FirstLine::Probe(p)) if p.running);
        assert!(!running(&sh_out(&script, b"").1), "no marker: the fallback's agent is not run");
        std::fs::write(home.path().join(NOEXEC_MARKER), "").unwrap();
        let (_, out, _) = sh_out(&script, b"");
        assert!(running(&out), "{out}");
        assert!(out.lines().next().unwrap().contains(spare.path().to_str().unwrap()), "{out}");
        assert_eq!(out.lines().nth(1), Some("fallback serve --verified"));
    }

    /// The upload under a real `sh`: the agent lands under its
    /// content-addressed name, 0700, only whole and of the right sha256, and
    /// never in a dir others may write or through a symlink.
    #[test]
    fn the_upload_writes_only_a_whole_verified_agent_into_a_private_dir() {
        let bytes = b"#!/bin/sh\necho agent\n";
        let sha = benchrig_wire::hex(&Sha256::digest(bytes));
        let root = tempfile::tempdir().unwrap();
        let d = root.path().join("agents");
        let expr = sh_quote(d.to_str().unwrap());
        let (rc, out, err) = sh_out(&upload_script(&expr, &sha, bytes.len()), bytes);
        assert_eq!((rc, out.trim()), (Some(0), d.to_str().unwrap()), "{err}");
        let agent = d.join(format!("benchrig-agent-{sha}"));
        assert_eq!(std::fs::read(&agent).unwrap(), bytes);
        let mode = |p: &Path| std::os::unix::fs::PermissionsExt::mode(&std::fs::metadata(p).unwrap().permissions());
        assert_eq!((mode(&d) & 0o777, mode(&agent) & 0o777), (0o700, 0o700));

        // Other bytes than the sha256 names, or too few: nothing is renamed.
        std::fs::remove_file(&agent).unwrap();
        let (rc, _, err) = sh_out(&upload_script(&expr, &sha, bytes.len()), b"#!/bin/sh\necho evil!\n");
        assert_eq!(rc, Some(1));
        assert!(err.contains("arrived altered"), "{err}");
        let (rc, _, err) = sh_out(&upload_script(&expr, &sha, bytes.len()), &bytes[..5]);
        assert_eq!(rc, Some(1));
        assert!(err.contains("upload cut short"), "{err}");
        assert_eq!(std::fs::read_dir(&d).unwrap().count(), 0, "no temporary file is left");

        // A dir others may write, or a symlink to one of ours: refused.
        std::fs::set_permissions(&d, std::os::unix::fs::PermissionsExt::from_mode(0o770)).unwrap();
        let (rc, out, _) = sh_out(&upload_script(&expr, &sha, bytes.len()), bytes);
        assert_eq!((rc, out.trim().split('\t').nth(1)), (Some(UNSAFE_STATUS), Some("is writable by group or others")));
        std::fs::set_permissions(&d, std::os::unix::fs::PermissionsExt::from_mode(0o700)).unwrap();
        let link = root.path().join("link");
        std::os::unix::fs::symlink(&d, &link).unwrap();
        let (rc, out, _) = sh_out(&upload_script(&sh_quote(link.to_str().unwrap()), &sha, bytes.len()), bytes);
        assert_eq!((rc, out.trim().split('\t').nth(1)), (Some(UNSAFE_STATUS), Some("is a symlink")));
        assert_eq!(std::fs::read_dir(&d).unwrap().count(), 0);

        // A file for the agent (a kernel package): the same checks, private, not executable.
        let (rc, out, err) = sh_out(&write_script(&expr, &Upload::File, &sha, bytes.len()), bytes);
        let file = d.join(format!(".benchrig-file-{sha}"));
        assert_eq!((rc, out.trim()), (Some(0), file.to_str().unwrap()), "{err}");
        assert_eq!((std::fs::read(&file).unwrap().as_slice(), mode(&file) & 0o777), (&bytes[..], 0o600));
        let (rc, _, err) = sh_out(&write_script(&expr, &Upload::File, &sha, bytes.len()), b"#!/bin/sh\necho evil!\n");
        assert!(rc == Some(1) && err.contains("arrived altered"), "{err}");
    }

    #[test]
    fn a_missing_build_names_where_it_goes_and_the_command() {
        let b = AgentBuilds { dirs: vec!["/nonexistent".into()], found: OnceLock::new() };
        let arm = Platform { machine: "aarch64".into(), kernel: "6.1".into(), ..Default::default() };
        let e = b.for_platform(&arm).unwrap_err().to_string();
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
        let found = b.for_platform(&Platform { machine: "x86_64".into(), ..Default::default() }).unwrap();
        assert_eq!(found.path, dir.path().join("x86_64-unknown-linux-musl/agent/benchrig-agent"));
    }
}
