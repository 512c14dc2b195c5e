//! Gathering the host's facts from /proc, /sys and the tools on PATH.
//! Best effort throughout: a fact that cannot be read is left empty, never an error.

use crate::sysfs::SysView;
use crate::{cmd, tools};
use benchrig_wire::facts::*;
use std::fs;

pub fn gather(view: &SysView, agent: AgentInfo) -> Facts {
    let uname = rustix::system::uname();
    Facts {
        hostname: uname.nodename().to_string_lossy().into_owned(),
        arch: uname.machine().to_string_lossy().into_owned(),
        kernel: Kernel {
            release: uname.release().to_string_lossy().into_owned(),
            version: uname.version().to_string_lossy().into_owned(),
        },
        distribution: distribution(),
        cpu: cpu(view),
        memory: memory(view),
        block_devices: block_devices(view),
        mounts: view
            .mountinfo()
            .into_iter()
            .map(|m| Mount { source: m.source, target: m.target, fstype: m.fstype, options: m.options })
            .collect(),
        swaps: view.swaps(),
        filesystems: kernel_filesystems(view),
        module_filesystems: module_filesystems(
            &std::path::Path::new("/lib/modules").join(uname.release().to_string_lossy().as_ref()),
        ),
        loadable_modules: view.proc_.join("modules").exists(),
        tools: tools::KNOWN
            .iter()
            .filter_map(|(name, _)| {
                let path = cmd::which(name)?;
                // Versions cost a process each; the mkfs tools' go into every record.
                let version = name.starts_with("mkfs.").then(|| tools::version(name)).flatten();
                Some(Tool { name: name.to_string(), path: path.to_string_lossy().into_owned(), version })
            })
            .collect(),
        user: user(),
        agent,
        // The session sets it: gathering facts does not know the session.
        work_dir: String::new(),
    }
}

pub fn kernel_release() -> String {
    rustix::system::uname().release().to_string_lossy().into_owned()
}

pub fn kernel_filesystems(view: &SysView) -> Vec<String> {
    fs::read_to_string(view.proc_.join("filesystems"))
        .unwrap_or_default()
        .lines()
        .filter_map(|l| l.split_whitespace().last())
        .map(str::to_string)
        .collect()
}

/// Filesystem types the running kernel loads on demand: the `fs-<type>`
/// aliases (MODULE_ALIAS_FS) in its modules.alias. `/proc/filesystems`
/// lists a modular filesystem only once something loaded it.
pub fn module_filesystems(modules_dir: &std::path::Path) -> Vec<String> {
    let text = fs::read_to_string(modules_dir.join("modules.alias")).unwrap_or_default();
    let mut types: Vec<String> = text
        .lines()
        .filter_map(|l| l.strip_prefix("alias fs-")?.split_whitespace().next().map(str::to_string))
        .collect();
    types.sort();
    types.dedup();
    types
}

fn distribution() -> Distribution {
    let text = fs::read_to_string("/etc/os-release")
        .or_else(|_| fs::read_to_string("/usr/lib/os-release"))
        .unwrap_or_default();
    let get = |key: &str| {
        text.lines()
            .find_map(|l| l.strip_prefix(key).and_then(|r| r.strip_prefix('=')))
            .map(|v| v.trim_matches('"').to_string())
            .unwrap_or_default()
    };
    Distribution { id: get("ID"), version_id: get("VERSION_ID"), pretty_name: get("PRETTY_NAME") }
}

fn cpu(view: &SysView) -> Cpu {
    let info = fs::read_to_string(view.proc_.join("cpuinfo")).unwrap_or_default();
    let field = |key: &str| {
        info.lines().find_map(|l| {
            let (k, v) = l.split_once(':')?;
            (k.trim() == key).then(|| v.trim().to_string())
        })
    };
    let count = info.lines().filter(|l| l.split(':').next().is_some_and(|k| k.trim() == "processor")).count() as u32;
    Cpu {
        model: field("model name").or_else(|| field("Hardware")).or_else(|| field("CPU part")).unwrap_or_default(),
        count: if count > 0 {
            count
        } else {
            std::thread::available_parallelism().map(|n| n.get() as u32).unwrap_or(1)
        },
        mhz: field("cpu MHz").and_then(|v| v.parse().ok()),
        quota: cgroup_cpu_quota(view),
    }
}

fn memory(view: &SysView) -> Memory {
    let total_kb: u64 = fs::read_to_string(view.proc_.join("meminfo"))
        .unwrap_or_default()
        .lines()
        .find_map(|l| l.strip_prefix("MemTotal:"))
        .and_then(|v| v.split_whitespace().next()?.parse().ok())
        .unwrap_or(0);
    let total_bytes = total_kb * 1024;
    let limit = cgroup_file(view, "memory", "memory.limit_in_bytes", "memory.max")
        .and_then(|v| v.parse::<u64>().ok())
        .filter(|&l| l < total_bytes);
    Memory { total_bytes, cgroup_limit_bytes: limit }
}

/// cgroup v1 `cpu.cfs_quota_us / cpu.cfs_period_us` or v2 `cpu.max`, in CPUs.
fn cgroup_cpu_quota(view: &SysView) -> Option<f64> {
    if let Some(max) = cgroup_file(view, "cpu", "cpu.cfs_quota_us", "cpu.max") {
        let mut it = max.split_whitespace();
        let quota: f64 = it.next()?.parse().ok()?;
        let period: f64 = match it.next() {
            Some(p) => p.parse().ok()?,
            None => cgroup_file(view, "cpu", "cpu.cfs_period_us", "")?.parse().ok()?,
        };
        return (quota > 0.0 && period > 0.0).then(|| quota / period);
    }
    None
}

/// A file of the agent's own cgroup: v1 `<controller>/<path>/<v1>` or v2 `<path>/<v2>`.
fn cgroup_file(view: &SysView, controller: &str, v1: &str, v2: &str) -> Option<String> {
    let groups = fs::read_to_string(view.proc_.join("self/cgroup")).ok()?;
    for line in groups.lines() {
        let mut parts = line.splitn(3, ':');
        let (_, ctrls, path) = (parts.next()?, parts.next()?, parts.next()?);
        let path = path.trim_start_matches('/');
        let candidate = if ctrls.is_empty() {
            if v2.is_empty() {
                continue;
            }
            view.sys.join("fs/cgroup").join(path).join(v2)
        } else if ctrls.split(',').any(|c| c == controller) {
            view.sys.join("fs/cgroup").join(controller).join(path).join(v1)
        } else {
            continue;
        };
        if let Some(v) = view.read(&candidate).filter(|v| v != "max" && v != "-1") {
            return Some(v);
        }
    }
    None
}

fn block_devices(view: &SysView) -> Vec<BlockDevice> {
    let mut names: Vec<String> = fs::read_dir(view.sys.join("block"))
        .into_iter()
        .flatten()
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| !n.starts_with("ram"))
        .collect();
    names.sort();
    names
        .iter()
        .map(|n| block_device(view, n))
        // Unattached loop devices are noise.
        .filter(|d| d.size_bytes > 0)
        .collect()
}

pub fn block_device(view: &SysView, name: &str) -> BlockDevice {
    let dir = view.class_block(name);
    let read = |rel: &str| view.read(&dir.join(rel));
    BlockDevice {
        name: name.to_string(),
        size_bytes: read("size").and_then(|s| s.parse::<u64>().ok()).unwrap_or(0) * 512,
        model: read("device/model"),
        serial: view.serial(name),
        wwn: view.wwn(name),
        rotational: read("queue/rotational").map(|r| r == "1"),
        scheduler: read("queue/scheduler").map(|s| {
            // "none mq-deadline [bfq]": the active one is bracketed.
            s.split_whitespace()
                .find(|w| w.starts_with('['))
                .map(|w| w.trim_matches(|c| c == '[' || c == ']').to_string())
                .unwrap_or(s)
        }),
        holders: view.holders(name),
        partitions: view.partitions(name),
        read_only: read("ro").as_deref() == Some("1"),
        backing_file: read("loop/backing_file"),
    }
}

fn user() -> User {
    let uid = rustix::process::getuid().as_raw();
    let name = fs::read_to_string("/etc/passwd")
        .unwrap_or_default()
        .lines()
        .find_map(|l| {
            let f: Vec<&str> = l.split(':').collect();
            (f.get(2)?.parse::<u32>().ok()? == uid).then(|| f[0].to_string())
        })
        .unwrap_or_else(|| uid.to_string());
    let root = rustix::process::geteuid().is_root();
    let passwordless_sudo = !root && cmd::run(&["sudo", "-n", "true"]).map(|o| o.ok()).unwrap_or(false);
    User { uid, name, root, passwordless_sudo }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn module_filesystems_are_the_fs_aliases_of_modules_alias() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(
            dir.path().join("modules.alias"),
            "alias fs-reiserfs reiserfs\nalias fs-nfs4 nfsv4\nalias fs-nfs nfs\nalias pci:v00008086d* e1000\n\
             alias fs-jfs jfs\nalias fs-nfs nfs\nalias char-major-10-229 fuse\n",
        )
        .unwrap();
        assert_eq!(module_filesystems(dir.path()), ["jfs", "nfs", "nfs4", "reiserfs"]);
        // A kernel without modules (the lab's 6.18) has none.
        assert!(module_filesystems(&dir.path().join("absent")).is_empty());
    }
}
