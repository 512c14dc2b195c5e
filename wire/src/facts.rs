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
}

#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Cpu {
    pub model: String,
    /// Logical CPUs the kernel reports.
    pub count: u32,
    pub mhz: Option<f64>,
    /// CPUs' worth of time the agent's cgroup may use (cfs quota / period), when limited.
    pub quota: Option<f64>,
}

#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Memory {
    pub total_bytes: u64,
    /// The agent's memory cgroup limit, when one is set below the total.
    pub cgroup_limit_bytes: Option<u64>,
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
}

/// The tools an agent looks for, with the flag that makes each print its
/// version. Shared so the planner knows that a tool missing from a host's
/// facts is really absent, not merely unasked.
pub const KNOWN_TOOLS: &[(&str, &str)] = &[
    ("mkfs.ext2", "-V"),
    ("mkfs.ext3", "-V"),
    ("mkfs.ext4", "-V"),
    ("mkfs.xfs", "-V"),
    ("mkfs.btrfs", "--version"),
    ("mkfs.jfs", "-V"),
    ("mkfs.reiserfs", "-V"),
    ("mkfs.f2fs", "-V"),
    ("mkfs.vfat", "--help"),
    ("dumpe2fs", "-V"),
    ("xfs_info", "-V"),
    ("btrfs", "--version"),
    ("losetup", "--version"),
    ("mount", "--version"),
    ("blkid", "-V"),
    ("lzop", "--version"),
    ("gzip", "--version"),
    ("zstd", "--version"),
    ("tar", "--version"),
    ("fio", "--version"),
    ("sshfs", "--version"),
    ("mount.nfs", "-V"),
    ("exportfs", "-h"),
];

impl Facts {
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
