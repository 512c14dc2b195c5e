//! The kernel NFS server's export table, as far as this agent touches it:
//! one file per export in /etc/exports.d, so `exportfs -r` and a server
//! restart keep it, named after the agent's pid so that `cleanup` can tell
//! a dead session's leftovers from a live one's.

use crate::cmd;
use crate::services;
use benchrig_wire::steps::ServiceState;
use std::path::{Path, PathBuf};

pub const DIR: &str = "/etc/exports.d";
const PREFIX: &str = "benchrig-";

#[derive(Clone, Debug)]
pub struct Export {
    /// The mount it lives on (a scratch or ramdisk name).
    pub target: String,
    pub file: PathBuf,
    pub path: PathBuf,
    pub clients: String,
    /// This session started the NFS server for it, so stops it when done.
    pub started_server: bool,
}

/// The file for an export of `target` by this agent.
pub fn file_for(target: &str) -> PathBuf {
    Path::new(DIR).join(format!("{PREFIX}{}-{target}.exports", std::process::id()))
}

/// An exports(5) line; the path quoted, as exportfs allows, if it has blanks.
pub fn line(path: &Path, clients: &str, options: &[String]) -> String {
    let p = path.to_string_lossy();
    let p = if p.contains(char::is_whitespace) { format!("\"{p}\"") } else { p.into_owned() };
    format!("{p} {clients}({})", options.join(","))
}

/// Write the export's file and have the server read the table again.
pub fn add(e: &Export, line: &str) -> Result<(), String> {
    std::fs::create_dir_all(DIR).map_err(|err| format!("mkdir {DIR}: {err}"))?;
    let text = format!("# benchrig agent (pid {}): removed when its cell is torn down\n{line}\n", std::process::id());
    std::fs::write(&e.file, text).map_err(|err| format!("write {}: {err}", e.file.display()))?;
    if let Err(err) = cmd::run_ok(&["exportfs", "-ra"]) {
        let _ = std::fs::remove_file(&e.file);
        return Err(err);
    }
    Ok(())
}

/// Whether the server exports `path` now (`exportfs -v`: one path per entry).
pub fn is_exported(path: &Path) -> bool {
    let p = path.to_string_lossy();
    cmd::run(&["exportfs", "-v"])
        .is_ok_and(|o| o.stdout.lines().any(|l| l.split_whitespace().next().is_some_and(|w| w.trim_matches('"') == p)))
}

/// Undo an export: its file, the kernel's entry, and nfsd's hold on the
/// filesystem. Unexporting is not enough for that: after a server restart
/// nfsd keeps the mount busy until it stops (seen on 6.1, even after
/// `exportfs -f`). So the server is stopped if this session started it and
/// exports nothing else, and otherwise restarted, which keeps every export
/// still in the table.
pub fn remove(e: &Export, others_left: bool) -> Result<(), String> {
    match std::fs::remove_file(&e.file) {
        Ok(()) => {}
        Err(err) if err.kind() == std::io::ErrorKind::NotFound => {}
        Err(err) => return Err(format!("remove {}: {err}", e.file.display())),
    }
    if is_exported(&e.path) {
        cmd::run_ok(&["exportfs", "-u", &format!("{}:{}", e.clients, e.path.display())])?;
    }
    let state = if e.started_server && !others_left { ServiceState::Stopped } else { ServiceState::Restarted };
    let_go(state)
}

/// Stop or restart nfsd, if it runs, so it lets go of unexported filesystems.
fn let_go(state: ServiceState) -> Result<(), String> {
    if services::nfsd_running() {
        services::control(services::nfs_server_name(), state).map_err(|e| e.to_string())?;
    }
    Ok(())
}

/// Remove the export files of agents that are gone (a killed session),
/// and have nfsd let go of their filesystems (see `remove`). Returns the
/// files removed.
pub fn remove_stale() -> Result<Vec<String>, String> {
    let files = stale();
    for f in &files {
        std::fs::remove_file(f).map_err(|e| format!("remove {}: {e}", f.display()))?;
    }
    if !files.is_empty() {
        let_go(ServiceState::Restarted)?;
    }
    Ok(files.iter().map(|f| f.display().to_string()).collect())
}

/// Export files of agents that are gone (a killed session).
fn stale() -> Vec<PathBuf> {
    let Ok(dir) = std::fs::read_dir(DIR) else { return Vec::new() };
    dir.flatten()
        .map(|e| e.path())
        .filter(|p| {
            let name = p.file_name().unwrap_or_default().to_string_lossy().into_owned();
            let pid = name.strip_prefix(PREFIX).and_then(|r| r.split('-').next()).and_then(|p| p.parse::<u32>().ok());
            name.ends_with(".exports") && pid.is_some_and(|p| !Path::new(&format!("/proc/{p}")).exists())
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_exports_line_quotes_a_path_with_blanks_only() {
        let opts = vec!["rw".to_string(), "sync".into()];
        assert_eq!(line(Path::new("/w/mnt/a"), "*", &opts), "/w/mnt/a *(rw,sync)");
        assert_eq!(line(Path::new("/w/m a"), "10.0.0.0/8", &opts), "\"/w/m a\" 10.0.0.0/8(rw,sync)");
    }

    #[test]
    fn the_file_names_this_agent_and_the_target() {
        let f = file_for("hdd0");
        assert_eq!(f.parent().unwrap(), Path::new(DIR));
        assert_eq!(f.file_name().unwrap().to_string_lossy(), format!("benchrig-{}-hdd0.exports", std::process::id()));
    }
}
