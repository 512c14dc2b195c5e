//! The host tools benchrig cares about and how each one states its version.
//! Each binary is asked once: the answers are kept in `tool-versions.json`
//! beside the agent, keyed by the binary's real path, size, mtime and inode.

use crate::cmd;
use std::collections::HashMap;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};

use benchrig_wire::facts::KnownTool;
pub use benchrig_wire::facts::KNOWN_TOOLS as KNOWN;

/// The first line a tool prints about its version (stdout or stderr: mke2fs
/// uses stderr), asked once per binary (see [`versions`]).
pub fn version(prog: &str) -> Option<String> {
    let path = cmd::which(prog)?;
    versions(&[(prog, path)], cache_file().as_deref()).remove(prog).flatten()
}

/// Beside the agent binary: the content-addressed agent dir outlives sessions.
pub fn cache_file() -> Option<PathBuf> {
    std::env::current_exe().ok().and_then(|e| e.parent().map(|d| d.join("tool-versions.json")))
}

fn ask(prog: &str, path: &Path) -> Option<String> {
    let flag = KnownTool::find(prog).map_or("--version", |t| t.version_flag);
    let out = cmd::run(&[path.to_string_lossy().as_ref(), flag]).ok()?;
    out.stdout.lines().chain(out.stderr.lines()).map(str::trim).find(|l| !l.is_empty()).map(str::to_string)
}

/// What identifies a tool's binary: its real path, size, mtime and inode.
/// An upgrade replaces the file, so the key changes with the version.
fn binary_key(path: &Path) -> Option<String> {
    let real = std::fs::canonicalize(path).ok()?;
    let m = std::fs::metadata(&real).ok()?;
    Some(format!("{} {} {}.{} {}", real.display(), m.len(), m.mtime(), m.mtime_nsec(), m.ino()))
}

/// The versions of `tools` (name, path on PATH), each binary asked once per
/// key ever: a version costs a process, at every session start, and on a
/// hundred hosts sharing their cores (or one at 12% of a core) that is most
/// of what facts cost. Answers are kept in `cache` (best effort: a cache
/// that cannot be read or written only costs the processes); the misses
/// are asked in parallel.
pub fn versions(tools: &[(&str, PathBuf)], cache: Option<&Path>) -> HashMap<String, Option<String>> {
    let mut known: HashMap<String, Option<String>> = cache
        .and_then(|c| std::fs::read(c).ok())
        .and_then(|bytes| serde_json::from_slice(&bytes).ok())
        .unwrap_or_default();
    let keyed: Vec<(&str, Option<String>)> = tools.iter().map(|(name, path)| (*name, binary_key(path))).collect();
    let mut missing: Vec<(&str, &Path, String)> = Vec::new();
    for ((name, key), (_, path)) in keyed.iter().zip(tools) {
        if let Some(k) = key {
            if !known.contains_key(k) && !missing.iter().any(|(_, _, m)| m == k) {
                missing.push((name, path, k.clone()));
            }
        }
    }
    if !missing.is_empty() {
        let asked: Vec<(String, Option<String>)> = std::thread::scope(|s| {
            let handles: Vec<_> =
                missing.iter().map(|(name, path, key)| s.spawn(move || (key.clone(), ask(name, path)))).collect();
            handles.into_iter().filter_map(|h| h.join().ok()).collect()
        });
        known.extend(asked);
        if let Some(c) = cache {
            // Old keys (tools since upgraded) stay: a few lines per upgrade.
            if let Ok(text) = serde_json::to_vec(&known) {
                let tmp = c.with_extension(format!("tmp.{}", std::process::id()));
                if std::fs::write(&tmp, text).is_ok() && std::fs::rename(&tmp, c).is_err() {
                    let _ = std::fs::remove_file(&tmp);
                }
            }
        }
    }
    keyed
        .into_iter()
        .map(|(name, key)| (name.to_string(), key.and_then(|k| known.get(&k).cloned().flatten())))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A stand-in tool that counts how often it is asked.
    fn tool(dir: &Path, name: &str, says: &str) -> PathBuf {
        let p = dir.join(name);
        let count = dir.join(format!("{name}.asked"));
        std::fs::write(&p, format!("#!/bin/sh\necho x >> '{}'\necho '{says}'\n", count.display())).unwrap();
        std::fs::set_permissions(&p, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
        p
    }

    fn asked(dir: &Path, name: &str) -> usize {
        std::fs::read_to_string(dir.join(format!("{name}.asked"))).map(|t| t.lines().count()).unwrap_or(0)
    }

    #[test]
    fn each_binary_is_asked_once_until_it_changes() {
        let dir = tempfile::tempdir().unwrap();
        let d = dir.path();
        let a = tool(d, "mkfs.a", "a 1.0");
        let b = d.join("mkfs.b");
        std::os::unix::fs::symlink(&a, &b).unwrap();
        let cache = d.join("versions.json");
        let tools = [("mkfs.a", a.clone()), ("mkfs.b", b)];
        let first = versions(&tools, Some(&cache));
        assert_eq!(first["mkfs.a"].as_deref(), Some("a 1.0"));
        assert_eq!(first["mkfs.b"].as_deref(), Some("a 1.0"));
        assert_eq!(asked(d, "mkfs.a"), 1, "one binary behind two names is asked once");
        assert_eq!(versions(&tools, Some(&cache)), first);
        assert_eq!(asked(d, "mkfs.a"), 1, "the second session reads the cache");
        // An upgrade: a new file in its place.
        std::fs::remove_file(&a).unwrap();
        tool(d, "mkfs.a", "a 2.0 longer");
        assert_eq!(versions(&tools, Some(&cache))["mkfs.a"].as_deref(), Some("a 2.0 longer"));
        assert_eq!(asked(d, "mkfs.a"), 2);
        // No cache: asked every time.
        versions(&tools[..1], None);
        assert_eq!(asked(d, "mkfs.a"), 3);
    }
}
