//! The kernel NFS server's export table, as far as this agent touches it:
//! one file per export in /etc/exports.d, so `exportfs -r` and a server
//! restart keep it, named after the agent's pid and marked with the boot
//! it was made in, so that every agent start and `cleanup` can tell a dead
//! session's leftovers (its pid gone, or the machine rebooted since: a pid
//! is reused after a reboot) from a live one's.

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

/// An exports(5) line: the path (quoted, as exportfs allows, if it has
/// blanks), then each of the blank-separated `clients` with the options.
pub fn line(path: &Path, clients: &str, options: &[String]) -> String {
    let p = path.to_string_lossy();
    let p = if p.contains(char::is_whitespace) { format!("\"{p}\"") } else { p.into_owned() };
    let opts = options.join(",");
    let each: Vec<String> = clients.split_whitespace().map(|c| format!("{c}({opts})")).collect();
    format!("{p} {}", each.join(" "))
}

/// This boot of the machine (`/proc/sys/kernel/random/boot_id`).
pub(crate) fn boot_id() -> String {
    std::fs::read_to_string("/proc/sys/kernel/random/boot_id").map(|b| b.trim().to_string()).unwrap_or_default()
}

/// The first line of an export's file: its agent and its boot.
fn header(pid: u32, boot: &str) -> String {
    format!("# benchrig agent (pid {pid}, boot {boot}): removed when its cell is torn down")
}

/// Write the export's file and have the server read the table again.
pub fn add(e: &Export, line: &str) -> Result<(), String> {
    std::fs::create_dir_all(DIR).map_err(|err| format!("mkdir {DIR}: {err}"))?;
    let text = format!("{}\n{line}\n", header(std::process::id(), &boot_id()));
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

/// Remove the export files of agents that are gone (a killed session, or
/// one from before a reboot), and have nfsd let go of their filesystems
/// (see `remove`). Returns the files removed. Run at every agent start and
/// by `cleanup`.
pub fn remove_stale() -> Result<Vec<String>, String> {
    let files = stale(Path::new(DIR), &boot_id(), |pid| Path::new(&format!("/proc/{pid}")).exists());
    for f in &files {
        std::fs::remove_file(f).map_err(|e| format!("remove {}: {e}", f.display()))?;
    }
    if !files.is_empty() {
        let_go(ServiceState::Restarted)?;
    }
    Ok(files.iter().map(|f| f.display().to_string()).collect())
}

/// Export files in `dir` of agents that are gone: made in another boot
/// than `boot`, or by a pid not `alive`.
fn stale(dir: &Path, boot: &str, alive: impl Fn(u32) -> bool) -> Vec<PathBuf> {
    let Ok(entries) = std::fs::read_dir(dir) else { return Vec::new() };
    entries
        .flatten()
        .map(|e| e.path())
        .filter(|p| {
            let name = p.file_name().unwrap_or_default().to_string_lossy().into_owned();
            let pid = name.strip_prefix(PREFIX).and_then(|r| r.split('-').next()).and_then(|p| p.parse::<u32>().ok());
            let Some(pid) = pid.filter(|_| name.ends_with(".exports")) else { return false };
            let text = std::fs::read_to_string(p).unwrap_or_default();
            let this_boot = text.lines().next() == Some(header(pid, boot).as_str());
            !this_boot || !alive(pid)
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
        assert_eq!(line(Path::new("/w/a"), " 10.0.0.2  10.0.0.3 ", &opts), "/w/a 10.0.0.2(rw,sync) 10.0.0.3(rw,sync)");
    }

    /// A file whose pid lives is stale all the same when it was made in
    /// another boot (the pid is someone else's now), or when it has no
    /// boot mark (made before there was one).
    #[test]
    fn an_export_of_another_boot_or_a_dead_agent_is_stale() {
        let dir = tempfile::tempdir().unwrap();
        let put = |name: &str, text: &str| std::fs::write(dir.path().join(name), text).unwrap();
        put("benchrig-100-a.exports", &format!("{}\n/w *(rw)\n", header(100, "boot-now")));
        put("benchrig-101-b.exports", &format!("{}\n/w *(rw)\n", header(101, "boot-before")));
        put("benchrig-102-c.exports", "# benchrig agent (pid 102): removed when its cell is torn down\n/w *(rw)\n");
        put("benchrig-103-d.exports", &format!("{}\n/w *(rw)\n", header(103, "boot-now")));
        put("other.exports", "/srv *(ro)\n");
        let mut found: Vec<String> = stale(dir.path(), "boot-now", |pid| pid != 103)
            .iter()
            .map(|p| p.file_name().unwrap().to_string_lossy().into_owned())
            .collect();
        found.sort();
        assert_eq!(found, ["benchrig-101-b.exports", "benchrig-102-c.exports", "benchrig-103-d.exports"]);
    }

    #[test]
    fn the_file_names_this_agent_and_the_target() {
        let f = file_for("hdd0");
        assert_eq!(f.parent().unwrap(), Path::new(DIR));
        assert_eq!(f.file_name().unwrap().to_string_lossy(), format!("benchrig-{}-hdd0.exports", std::process::id()));
    }
}
