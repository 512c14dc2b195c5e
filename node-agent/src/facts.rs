//! Gathering the host's facts from /proc, /sys and the tools on PATH.
//! Best effort throughout: a fact that cannot be read is left empty, never an error.
//!
//! Beside the machine's memory and CPUs it records what the agent may
//! really use (the tightest limits of its cgroups, `cgroup`, and its CPU
//! affinity), and the filesystems the kernel has loaded or can load (the
//! `fs-*` aliases in modules.alias), so the planner can mark a cell
//! unsupported before the host is touched.

use crate::scratch::Place;
use crate::sysfs::SysView;
use crate::{cgroup, cmd, kernel_settings, tools};
use benchrig_wire::facts::*;
use benchrig_wire::scratch::ScratchKind;
use std::fs;

pub fn gather(view: &SysView, agent: AgentInfo) -> Facts {
    let uname = rustix::system::uname();
    let (cpu, memory) = (cpu(view), memory(view));
    let affinity = rustix::thread::sched_getaffinity(None).ok().map(|set| set.count());
    Facts {
        hostname: uname.nodename().to_string_lossy().into_owned(),
        arch: uname.machine().to_string_lossy().into_owned(),
        kernel: Kernel {
            release: uname.release().to_string_lossy().into_owned(),
            version: uname.version().to_string_lossy().into_owned(),
        },
        distribution: distribution(),
        limits: Some(limits(view, &memory, &cpu, affinity)),
        cpu,
        memory,
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
        tools: known_tools(),
        user: user(),
        agent,
        // The session sets it: gathering facts does not know the session.
        work_dir: String::new(),
        scratch: Vec::new(),
        tuning: Some(kernel_settings::host_tuning(view)),
    }
}

/// The known tools on PATH; the mkfs tools' versions go into every record.
fn known_tools() -> Vec<Tool> {
    let found: Vec<(&str, std::path::PathBuf)> =
        tools::KNOWN.iter().filter_map(|t| Some((t.name, cmd::which(t.name)?))).collect();
    let mkfs: Vec<(&str, std::path::PathBuf)> = found.iter().filter(|(n, _)| n.starts_with("mkfs.")).cloned().collect();
    let mut versions = tools::versions(&mkfs, tools::cache_file().as_deref());
    found
        .into_iter()
        .map(|(name, path)| Tool {
            name: name.to_string(),
            path: path.to_string_lossy().into_owned(),
            version: versions.remove(name).flatten(),
        })
        .collect()
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

/// os-release's names for this host (read again for a missing tool's
/// message: only on that failure, and it is a small file).
pub fn distribution() -> Distribution {
    let text = fs::read_to_string("/etc/os-release")
        .or_else(|_| fs::read_to_string("/usr/lib/os-release"))
        .unwrap_or_default();
    let get = |key: &str| {
        text.lines()
            .find_map(|l| l.strip_prefix(key).and_then(|r| r.strip_prefix('=')))
            .map(|v| v.trim_matches('"').to_string())
            .unwrap_or_default()
    };
    Distribution {
        id: get("ID"),
        version_id: get("VERSION_ID"),
        pretty_name: get("PRETTY_NAME"),
        id_like: get("ID_LIKE"),
    }
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
        quota: None,
    }
}

fn memory(view: &SysView) -> Memory {
    let total_kb: u64 = fs::read_to_string(view.proc_.join("meminfo"))
        .unwrap_or_default()
        .lines()
        .find_map(|l| l.strip_prefix("MemTotal:"))
        .and_then(|v| v.split_whitespace().next()?.parse().ok())
        .unwrap_or(0);
    Memory { total_bytes: total_kb * 1024, cgroup_limit_bytes: None }
}

/// What the agent may really use: its cgroups' limits, its CPU affinity,
/// and the effective figures they leave of the machine's `memory` and `cpu`.
pub fn limits(view: &SysView, memory: &Memory, cpu: &Cpu, affinity: Option<u32>) -> Limits {
    let cg = cgroup::limits(view);
    let online = view
        .read(&view.sys.join("devices/system/cpu/online"))
        .and_then(|l| cgroup::cpu_list_count(&l))
        .filter(|&n| n > 0)
        .unwrap_or(cpu.count);
    let total = memory.total_bytes;
    // A limit counts only where it leaves less than the machine has.
    let memory_bytes = cg.memory_bytes.filter(|&l| total == 0 || l < total);
    let cpu_quota = cg.cpu_quota.filter(|&q| q < online as f64);
    let cpuset_cpus = cg.cpuset.as_deref().and_then(cgroup::cpu_list_count).filter(|&n| n > 0 && n < online);
    let affinity_cpus = affinity.filter(|&n| n > 0 && n < online);
    let cpus = [cpuset_cpus, affinity_cpus].into_iter().flatten().fold(online, u32::min);
    Limits {
        memory_bytes,
        memory_swap_bytes: cg.memory_swap_bytes,
        cpu_quota,
        cpuset: cpuset_cpus.and(cg.cpuset),
        cpuset_cpus,
        affinity_cpus,
        online_cpus: online,
        // memory_bytes is below the total when there is one.
        effective_memory_bytes: memory_bytes.unwrap_or(total),
        effective_cpus: cpu_quota.map_or(cpus as f64, |q| q.min(cpus as f64)),
    }
}

/// How much each scratch entry holds, as the planner and playbooks size
/// data from: a device's size, an image's (or the size it will be
/// created with), a directory's free space.
pub fn scratch(st: &crate::state::HostState) -> Vec<ScratchFacts> {
    let view = &st.view;
    st.scratch
        .iter()
        .map(|e| {
            // A block device's size and queues; an image's or a directory's
            // queues are those of the device its file lives on.
            let place = crate::scratch::place(st, e).ok();
            let (device, size_bytes) = match &place {
                Some(Place::Device(dev)) => (Some(dev.name.clone()), Some(block_device(view, &dev.name).size_bytes)),
                Some(Place::File(path)) => match e.kind {
                    ScratchKind::Image => (None, fs::metadata(path).map(|m| m.len()).ok().or(e.size.map(|s| s.0))),
                    _ => (None, rustix::fs::statvfs(path).ok().map(|v| v.f_bavail.saturating_mul(v.f_frsize))),
                },
                None => (None, None),
            };
            let under = place
                .and_then(|p| p.holder(view))
                .map(|d| kernel_settings::devices_under(view, &d))
                .unwrap_or_default();
            let queues = under.iter().map(|d| kernel_settings::queue(view, d)).collect();
            ScratchFacts { name: e.name.clone(), device, size_bytes, queues }
        })
        .collect()
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
        // "none mq-deadline [bfq]": the active one is bracketed.
        scheduler: read("queue/scheduler").map(|s| kernel_settings::bracketed(&s)),
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

    #[test]
    fn effective_limits_are_the_least_of_machine_cgroups_and_affinity() {
        let dir = tempfile::tempdir().unwrap();
        let r = dir.path();
        let write = |rel: &str, text: &str| {
            let p = r.join(rel);
            fs::create_dir_all(p.parent().unwrap()).unwrap();
            fs::write(p, text).unwrap();
        };
        write("sys/devices/system/cpu/online", "0-3\n");
        write("proc/self/cgroup", "0::/a\n");
        write("proc/self/mountinfo", "30 22 0:26 / /cg rw - cgroup2 cgroup2 rw\n");
        write("cg/a/memory.max", "536870912\n");
        write("cg/a/cpu.max", "150000 100000\n");
        write("cg/a/cpuset.cpus.effective", "0-1\n");
        let view = SysView::at(r);
        let memory = Memory { total_bytes: 24 << 30, cgroup_limit_bytes: None };
        let cpu = Cpu { count: 4, ..Default::default() };
        let l = limits(&view, &memory, &cpu, Some(4));
        assert_eq!(
            l,
            Limits {
                memory_bytes: Some(536870912),
                memory_swap_bytes: None,
                cpu_quota: Some(1.5),
                cpuset: Some("0-1".into()),
                cpuset_cpus: Some(2),
                affinity_cpus: None, // all four: no limit
                online_cpus: 4,
                effective_memory_bytes: 536870912,
                effective_cpus: 1.5,
            }
        );
        // Pinned to one CPU by affinity: that is all it gets.
        assert_eq!(limits(&view, &memory, &cpu, Some(1)).effective_cpus, 1.0);
        // A limit above what the machine has limits nothing.
        write("cg/a/memory.max", "34359738368\n");
        write("cg/a/cpu.max", "800000 100000\n");
        write("cg/a/cpuset.cpus.effective", "0-3\n");
        let l = limits(&view, &memory, &cpu, None);
        assert_eq!((l.memory_bytes, l.cpu_quota, l.cpuset, l.cpuset_cpus), (None, None, None, None));
        assert_eq!((l.effective_memory_bytes, l.effective_cpus), (24 << 30, 4.0));
    }

    /// The machine this runs on, whatever it is: the figures hold together.
    #[test]
    fn this_hosts_limits_are_consistent() {
        let view = SysView::real();
        let (cpu, memory) = (cpu(&view), memory(&view));
        let affinity = rustix::thread::sched_getaffinity(None).ok().map(|s| s.count());
        let l = limits(&view, &memory, &cpu, affinity);
        eprintln!("{l:?}");
        assert!(l.online_cpus >= 1 && l.effective_cpus > 0.0 && l.effective_cpus <= l.online_cpus as f64);
        assert!(l.effective_memory_bytes > 0 && l.effective_memory_bytes <= memory.total_bytes);
    }
}
