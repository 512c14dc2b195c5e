//! What an agent reports about its host. Stored with every run, so a result
//! always comes with the configuration that produced it.

use serde::{Deserialize, Serialize};

#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Facts {
    pub hostname: String,
    /// `uname -m` (i686 under a 32-bit personality on a 64-bit kernel).
    pub arch: String,
    pub kernel: Kernel,
    pub distribution: Distribution,
    pub cpu: Cpu,
    pub memory: Memory,
    /// What the agent may really use of `cpu` and `memory` (cgroups,
    /// affinity). `None` in facts from an agent older than this field:
    /// unknown, not unlimited.
    #[serde(default)]
    pub limits: Option<Limits>,
    pub block_devices: Vec<BlockDevice>,
    pub mounts: Vec<Mount>,
    pub swaps: Vec<String>,
    /// `/proc/filesystems`, without the `nodev` marker.
    pub filesystems: Vec<String>,
    /// Filesystem types the kernel has as loadable modules, not yet loaded
    /// (the `fs-*` aliases of modules.alias).
    #[serde(default)]
    pub module_filesystems: Vec<String>,
    /// The kernel loads modules at all (`/proc/modules` exists): without
    /// that, `filesystems` is all it will ever have.
    #[serde(default)]
    pub loadable_modules: bool,
    pub tools: Vec<Tool>,
    pub user: User,
    pub agent: AgentInfo,
    /// Where this session's agent keeps mount points (`<work_dir>/mnt/<scratch>`).
    #[serde(default)]
    pub work_dir: String,
    /// The host's `scratch_devices` as the agent finds them, in inventory
    /// order: how much each holds, so a playbook can size its data
    /// (`facts.scratch`) and the planner can tell data that cannot fit.
    #[serde(default)]
    pub scratch: Vec<ScratchFacts>,
    /// Kernel settings that change results (cpufreq, SMT, THP, VM
    /// writeback, command line, mitigations). `None` in facts from an agent
    /// older than this field: unknown, not "different".
    #[serde(default)]
    pub tuning: Option<HostTuning>,
}

/// Host-wide settings that change what a benchmark measures, as the agent
/// read them from /sys and /proc. Every `None` means the kernel has no such
/// file (no cpufreq in a VM, no SMT control on an old kernel): absent, not
/// a guess.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct HostTuning {
    /// `cpufreq/policy*/scaling_driver`: the common value, or each
    /// policy's (`policy0=a policy1=b`) when they differ.
    pub cpufreq_driver: Option<String>,
    /// `cpufreq/policy*/scaling_governor`, the same way.
    pub governor: Option<String>,
    /// Boost/turbo on: `cpufreq/boost` = 1, or `intel_pstate/no_turbo` = 0.
    pub boost: Option<bool>,
    /// `smt/control` (on, off, forceoff, notsupported, notimplemented).
    pub smt_control: Option<String>,
    /// `smt/active` = 1.
    pub smt_active: Option<bool>,
    /// Transparent huge pages: the bracketed word of `enabled` and `defrag`.
    pub thp_enabled: Option<String>,
    pub thp_defrag: Option<String>,
    /// `/proc/sys/vm/*`.
    pub swappiness: Option<u64>,
    pub dirty_ratio: Option<u64>,
    pub dirty_background_ratio: Option<u64>,
    pub dirty_bytes: Option<u64>,
    pub dirty_background_bytes: Option<u64>,
    /// `/proc/cmdline`.
    pub cmdline: Option<String>,
    /// `/sys/devices/system/cpu/vulnerabilities/*`: file name → its line
    /// ("Mitigation: PTI", "Not affected", "Vulnerable"); empty when absent.
    pub mitigations: std::collections::BTreeMap<String, String>,
}

/// A block device's request queue as it shapes I/O, read from
/// `/sys/class/block/<dev>/queue/`; `None` where the file is absent.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct QueueFacts {
    /// Kernel name of the device whose queue this is (a partition's disk).
    pub device: String,
    /// The bracketed scheduler of `queue/scheduler`.
    pub scheduler: Option<String>,
    pub read_ahead_kb: Option<u64>,
    pub nr_requests: Option<u64>,
    /// `queue/write_cache`: "write back" or "write through".
    pub write_cache: Option<String>,
    pub rotational: Option<bool>,
}

#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct ScratchFacts {
    pub name: String,
    /// Kernel name of its block device; none for an image or a directory.
    pub device: Option<String>,
    /// A device's or an image's size, a directory's free space; none when
    /// the agent cannot tell (a missing device).
    pub size_bytes: Option<u64>,
    /// The queues of the devices under it: its device (a partition's
    /// disk), a loop device's backing device, an image's filesystem's
    /// device. Empty in facts from an older agent.
    #[serde(default)]
    pub queues: Vec<QueueFacts>,
}

#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Kernel {
    pub release: String,
    pub version: String,
}

#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Distribution {
    pub id: String,
    pub version_id: String,
    pub pretty_name: String,
    /// os-release's `ID_LIKE`: the distributions this one derives from
    /// (`rhel centos fedora` on Rocky), space-separated.
    #[serde(default)]
    pub id_like: String,
}

/// Whose package names a host's missing tool is named by.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PackageFamily {
    /// Debian, Ubuntu and their derivatives (`apt install`).
    Debian,
    /// Fedora, RHEL and theirs: CentOS, Rocky, Alma, Oracle, Amazon (`dnf install`).
    Fedora,
}

impl Distribution {
    /// The family of its `ID`, else of the first `ID_LIKE` that has one;
    /// `None` for any other (Alpine, SUSE, no os-release at all).
    pub fn package_family(&self) -> Option<PackageFamily> {
        std::iter::once(self.id.as_str()).chain(self.id_like.split_whitespace()).find_map(|id| match id {
            "debian" | "ubuntu" => Some(PackageFamily::Debian),
            "fedora" | "rhel" | "centos" => Some(PackageFamily::Fedora),
            _ => None,
        })
    }
}

#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Cpu {
    pub model: String,
    /// Logical CPUs the kernel reports.
    pub count: u32,
    pub mhz: Option<f64>,
    /// Superseded by [`Limits::cpu_quota`]; kept so facts stored before it
    /// still read (an agent no longer sets it).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub quota: Option<f64>,
}

#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Memory {
    pub total_bytes: u64,
    /// Superseded by [`Limits::memory_bytes`]; kept so facts stored before
    /// it still read (an agent no longer sets it).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cgroup_limit_bytes: Option<u64>,
}

/// The limits a host really has for the agent, beside the machine's totals
/// in [`Cpu`] and [`Memory`]: the tightest of the agent's cgroup and every
/// ancestor (cgroup v1 or v2), and its CPU affinity. A limit is set only
/// where it leaves less than the machine has; `None` is no limit.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct Limits {
    /// v1 `memory.limit_in_bytes`, v2 `memory.max`.
    pub memory_bytes: Option<u64>,
    /// Memory and swap together: v1 `memory.memsw.limit_in_bytes`, v2
    /// `memory.max` + `memory.swap.max`.
    pub memory_swap_bytes: Option<u64>,
    /// CPU bandwidth in CPUs: v1 `cpu.cfs_quota_us / cpu.cfs_period_us`,
    /// v2 `cpu.max` (0.12 is 12% of one CPU's time).
    pub cpu_quota: Option<f64>,
    /// The cpuset's CPU list ("0-1,4"; v1 `cpuset.effective_cpus` or
    /// `cpuset.cpus`, v2 `cpuset.cpus.effective`) and how many CPUs it holds.
    pub cpuset: Option<String>,
    pub cpuset_cpus: Option<u32>,
    /// CPUs in the agent's `sched_getaffinity` mask.
    pub affinity_cpus: Option<u32>,
    /// CPUs online (`/sys/devices/system/cpu/online`).
    pub online_cpus: u32,
    /// min(MemTotal, `memory_bytes`).
    pub effective_memory_bytes: u64,
    /// min(online CPUs, `cpuset_cpus`, `affinity_cpus`, `cpu_quota`).
    pub effective_cpus: f64,
}

#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct BlockDevice {
    pub name: String,
    pub size_bytes: u64,
    pub model: Option<String>,
    pub serial: Option<String>,
    pub wwn: Option<String>,
    pub rotational: Option<bool>,
    pub scheduler: Option<String>,
    pub holders: Vec<String>,
    pub partitions: Vec<String>,
    pub read_only: bool,
    /// For a loop device, the file behind it.
    pub backing_file: Option<String>,
}

#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Mount {
    pub source: String,
    pub target: String,
    pub fstype: String,
    pub options: String,
}

#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Tool {
    pub name: String,
    pub path: String,
    pub version: Option<String>,
}

#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct User {
    pub uid: u32,
    pub name: String,
    pub root: bool,
    /// `sudo -n true` succeeded (only asked when not root).
    pub passwordless_sudo: bool,
}

#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct AgentInfo {
    pub version: String,
    pub sha256: String,
    pub protocol: u32,
    /// The build's Rust target (the host's CPU chose it); empty from an
    /// agent older than this field.
    #[serde(default)]
    pub build: String,
}

/// A tool an agent looks for: the flag that makes it print its version,
/// and the package that brings it on Debian and on Fedora/RHEL, for the
/// message that says it is missing.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct KnownTool {
    pub name: &'static str,
    pub version_flag: &'static str,
    pub debian: &'static str,
    pub fedora: &'static str,
}

const fn tool(name: &'static str, version_flag: &'static str, debian: &'static str, fedora: &'static str) -> KnownTool {
    KnownTool { name, version_flag, debian, fedora }
}

/// The tools an agent looks for. Shared so the planner knows that a tool
/// missing from a host's facts is really absent, not merely unasked.
pub const KNOWN_TOOLS: &[KnownTool] = &[
    tool("mkfs.ext2", "-V", "e2fsprogs", "e2fsprogs"),
    tool("mkfs.ext3", "-V", "e2fsprogs", "e2fsprogs"),
    tool("mkfs.ext4", "-V", "e2fsprogs", "e2fsprogs"),
    tool("mkfs.xfs", "-V", "xfsprogs", "xfsprogs"),
    tool("mkfs.btrfs", "--version", "btrfs-progs", "btrfs-progs"),
    tool("mkfs.jfs", "-V", "jfsutils", "jfsutils"),
    tool("mkfs.reiserfs", "-V", "reiserfsprogs", "reiserfs-utils"),
    tool("mkfs.f2fs", "-V", "f2fs-tools", "f2fs-tools"),
    tool("mkfs.vfat", "--help", "dosfstools", "dosfstools"),
    tool("dumpe2fs", "-V", "e2fsprogs", "e2fsprogs"),
    tool("xfs_info", "-V", "xfsprogs", "xfsprogs"),
    tool("btrfs", "--version", "btrfs-progs", "btrfs-progs"),
    tool("losetup", "--version", "mount", "util-linux"),
    tool("mount", "--version", "mount", "util-linux"),
    tool("blkid", "-V", "util-linux", "util-linux"),
    tool("lzop", "--version", "lzop", "lzop"),
    tool("gzip", "--version", "gzip", "gzip"),
    tool("zstd", "--version", "zstd", "zstd"),
    tool("tar", "--version", "tar", "tar"),
    tool("fio", "--version", "fio", "fio"),
    tool("sshfs", "--version", "sshfs", "fuse-sshfs"),
    tool("mount.nfs", "-V", "nfs-common", "nfs-utils"),
    tool("exportfs", "-h", "nfs-kernel-server", "nfs-utils"),
];

impl KnownTool {
    pub fn find(name: &str) -> Option<&'static KnownTool> {
        KNOWN_TOOLS.iter().find(|t| t.name == name)
    }
}

/// "mkfs.xfs is not installed on h1 (Debian package xfsprogs)": the
/// package of the host's family is named when it is not the tool's own
/// name. Of a family we have no names for, Debian's are given as such
/// (most distributions' are the same).
pub fn not_installed(tool: &str, on: &str, distribution: &Distribution) -> String {
    let (family, package) = match (KnownTool::find(tool), distribution.package_family()) {
        (Some(t), Some(PackageFamily::Fedora)) => ("Fedora/RHEL", t.fedora),
        (Some(t), _) => ("Debian", t.debian),
        (None, _) => ("", tool),
    };
    match package == tool {
        true => format!("{tool} is not installed on {on}"),
        false => format!("{tool} is not installed on {on} ({family} package {package})"),
    }
}

impl Facts {
    /// Bytes scratch device `name` holds, where known.
    pub fn scratch_size(&self, name: &str) -> Option<u64> {
        self.scratch.iter().find(|s| s.name == name)?.size_bytes
    }

    /// The host's limits; for facts an older agent reported, what it knew
    /// (its own cgroup's CPU quota and memory limit, no ancestors).
    pub fn known_limits(&self) -> Option<Limits> {
        if let Some(l) = &self.limits {
            return Some(l.clone());
        }
        if self.cpu.quota.is_none() && self.memory.cgroup_limit_bytes.is_none() {
            return None;
        }
        let online = self.cpu.count;
        let memory = self.memory.cgroup_limit_bytes;
        Some(Limits {
            memory_bytes: memory,
            cpu_quota: self.cpu.quota,
            online_cpus: online,
            effective_memory_bytes: memory.unwrap_or(self.memory.total_bytes),
            effective_cpus: self.cpu.quota.map_or(online as f64, |q| q.min(online as f64)),
            ..Default::default()
        })
    }

    /// The memory the host's limits leave the agent (and a tmpfs it
    /// fills), where known.
    pub fn usable_memory(&self) -> Option<u64> {
        let limited = self.known_limits().map(|l| l.effective_memory_bytes).filter(|&b| b > 0);
        limited.or(Some(self.memory.total_bytes)).filter(|&b| b > 0)
    }

    pub fn supports_filesystem(&self, fstype: &str) -> bool {
        self.filesystems.iter().chain(&self.module_filesystems).any(|f| f == fstype)
    }

    /// Whether the kernel is known to lack `fstype`: not built in, and not
    /// among its modules (when it has modules and their list was readable).
    pub fn lacks_filesystem(&self, fstype: &str) -> bool {
        let modules_known = !self.loadable_modules || !self.module_filesystems.is_empty();
        !self.filesystems.is_empty() && modules_known && !self.supports_filesystem(fstype)
    }

    pub fn tool(&self, name: &str) -> Option<&Tool> {
        self.tools.iter().find(|t| t.name == name)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_missing_tool_is_named_by_the_package_of_its_hosts_family() {
        let os =
            |id: &str, id_like: &str| Distribution { id: id.into(), id_like: id_like.into(), ..Default::default() };
        let said = |d: &Distribution| not_installed("sshfs", "h", d);
        assert_eq!(said(&os("debian", "")), "sshfs is not installed on h");
        assert_eq!(said(&os("fedora", "")), "sshfs is not installed on h (Fedora/RHEL package fuse-sshfs)");
        assert_eq!(said(&os("almalinux", "rhel centos fedora")), said(&os("fedora", "")), "by ID_LIKE");
        assert_eq!(os("linuxmint", "ubuntu debian").package_family(), Some(PackageFamily::Debian));
        assert_eq!(os("alpine", "").package_family(), None);
        // Of a family we have no names for, Debian's, said to be Debian's.
        let exportfs = not_installed("exportfs", "h", &os("alpine", ""));
        assert_eq!(exportfs, "exportfs is not installed on h (Debian package nfs-kernel-server)");
        assert_eq!(not_installed("mkfs.foo", "h", &os("fedora", "")), "mkfs.foo is not installed on h");
        // Older facts, stored without ID_LIKE, still read.
        let old: Distribution = serde_json::from_str(r#"{"id":"rocky","version_id":"9","pretty_name":"R"}"#).unwrap();
        assert_eq!(old.package_family(), None);
    }

    #[test]
    fn facts_stored_before_limits_still_read() {
        // An older agent's memory and cpu, with its own-cgroup readings, and no `limits`.
        let mut v = serde_json::to_value(Facts::default()).unwrap();
        let o = v.as_object_mut().unwrap();
        o.remove("limits");
        o.insert("cpu".into(), serde_json::json!({"model": "x", "count": 2, "mhz": null, "quota": 0.12}));
        o.insert("memory".into(), serde_json::json!({"total_bytes": 1u64 << 34, "cgroup_limit_bytes": null}));
        let f: Facts = serde_json::from_value(v).unwrap();
        assert_eq!(f.limits, None);
        let l = f.known_limits().unwrap();
        assert_eq!((l.cpu_quota, l.memory_bytes, l.effective_cpus), (Some(0.12), None, 0.12));
        // Limits with fields missing (a later agent's additions, say) read too.
        let l: Limits = serde_json::from_str(r#"{"memory_bytes": 536870912}"#).unwrap();
        assert_eq!(l.memory_bytes, Some(536870912));
        // New facts carry `limits` and drop the superseded fields.
        let f = Facts { limits: Some(Limits::default()), ..Default::default() };
        let v = serde_json::to_value(&f).unwrap();
        assert!(v["limits"].is_object() && v["cpu"].get("quota").is_none());
        assert!(v["memory"].get("cgroup_limit_bytes").is_none());
    }
}
