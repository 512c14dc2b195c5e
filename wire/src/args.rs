//! The arguments of every action, as a playbook writes them (after
//! templates are rendered). Unknown fields are refused, so a misspelt
//! argument is an error at plan time, with the list of valid ones.
//!
//! Checks both sides need live here (`TuneArgs::thp_parts`,
//! `TuneArgs::check_sysctl_name`), so the orchestrator's parser and the
//! agent refuse the same values. Behind the `schema` feature, which only
//! the orchestrator enables (the agent never builds schemars), each type
//! gives its JSON Schema for `benchrig schema` and `benchrig doc`: doc
//! comments become descriptions, and an argument with a unit says it in
//! `x-unit`, an annotation validators ignore.

use crate::units::ByteSize;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(deny_unknown_fields)]
pub struct NoArgs {}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(deny_unknown_fields)]
pub struct FilesystemArgs {
    /// A scratch device name from the inventory.
    pub device: String,
    /// The filesystem profile: how to mkfs and mount (a playbook names a built-in or a play's `profiles` entry).
    pub profile: FsProfile,
}

/// A filesystem profile resolved by the orchestrator: exactly what to run.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(deny_unknown_fields)]
pub struct FsProfile {
    /// The profile's name (`ext4`, `xfs`, a play's own).
    pub name: String,
    /// The kernel's name for the filesystem (`/proc/filesystems`); `None` for
    /// `existing`, which uses a scratch directory as it is.
    #[serde(default)]
    pub fstype: Option<String>,
    /// mkfs argv without the device, which the agent appends.
    #[serde(default)]
    pub mkfs: Vec<String>,
    /// Mount options (`-o`), one per item.
    #[serde(default)]
    pub mount_options: Vec<String>,
}

#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(deny_unknown_fields)]
pub struct UnmountArgs {
    /// A scratch device name; all of this session's mounts when absent.
    #[serde(default)]
    pub device: Option<String>,
}

fn default_seq_file() -> String {
    "benchrig-seq.dat".to_string()
}
fn default_bs() -> ByteSize {
    ByteSize(1 << 20)
}
fn yes() -> bool {
    true
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(deny_unknown_fields)]
pub struct SeqWriteArgs {
    /// Scratch device name whose mount to write on; the most recently mounted when absent.
    #[serde(default)]
    pub target: Option<String>,
    /// The file's name, in the target's mount point.
    #[serde(default = "default_seq_file")]
    pub file: String,
    /// How much to write.
    pub size: ByteSize,
    /// The size of each write.
    #[serde(default = "default_bs")]
    pub bs: ByteSize,
    /// O_DIRECT.
    #[serde(default)]
    pub direct: bool,
    /// fsync before the clock stops: durability is part of a write.
    #[serde(default = "yes")]
    pub fsync: bool,
    /// Also fsync after every this many bytes. On a filesystem that
    /// allocates at writeback (btrfs, XFS, ext4) this bounds the extents
    /// the file gets: btrfs cannot move a 128 MiB extent into the smaller
    /// data chunks of a volume of 1 GiB devices.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fsync_every: Option<ByteSize>,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(deny_unknown_fields)]
pub struct SeqReadArgs {
    /// Scratch device name whose mount to read on; the most recently mounted when absent.
    #[serde(default)]
    pub target: Option<String>,
    /// The file's name, in the target's mount point (`seq_write`'s by default).
    #[serde(default = "default_seq_file")]
    pub file: String,
    /// The size of each read.
    #[serde(default = "default_bs")]
    pub bs: ByteSize,
    /// O_DIRECT.
    #[serde(default)]
    pub direct: bool,
    /// sync + drop_caches (root) or fadvise(DONTNEED) before the clock starts.
    #[serde(default = "yes")]
    pub cold: bool,
}

/// What files are made of.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "snake_case")]
pub enum ContentKind {
    Zeros,
    /// Text-like: words and lines; compresses about 3:1 with gzip.
    #[default]
    Text,
    /// Like an executable or library: repeated code, tables, padding, strings; about 2.4:1 (gzip -6).
    Binary,
    /// Incompressible.
    Random,
}

#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "snake_case")]
pub enum SizeDist {
    Fixed,
    /// Lognormal with the given mean and `sigma`: many small files, a few large ones.
    #[default]
    Lognormal,
}

fn default_tree_dir() -> String {
    "tree".to_string()
}
fn one() -> f64 {
    1.0
}
fn default_fanout() -> u64 {
    16
}
fn default_seed() -> u64 {
    1
}
fn default_uid() -> u32 {
    1000
}

/// A deterministic tree: the same arguments give the same names, sizes and
/// bytes on every host.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(deny_unknown_fields)]
pub struct TreeArgs {
    /// Scratch (or ramdisk) name to build in; the most recently set up when absent.
    #[serde(default)]
    pub target: Option<String>,
    /// Directory under the target's mount point.
    #[serde(default = "default_tree_dir")]
    pub dir: String,
    /// Files in the tree.
    pub files: u64,
    /// Directories, the top one included.
    pub dirs: u64,
    /// Most subdirectories per directory.
    #[serde(default = "default_fanout")]
    pub fanout: u64,
    /// Mean file size.
    pub size: ByteSize,
    /// How file sizes spread around `size`.
    #[serde(default)]
    pub dist: SizeDist,
    /// Spread of the lognormal distribution.
    #[serde(default = "one")]
    pub sigma: f64,
    /// What the files are made of.
    #[serde(default)]
    pub content: ContentKind,
    /// The seed of names, sizes and contents: the same seed, the same tree.
    #[serde(default = "default_seed")]
    pub seed: u64,
    /// Multiplies files and directories (sizes stay), to grow a shape toward the original.
    #[serde(default = "one")]
    pub scale: f64,
    /// An access ACL of this many entries on every file (0: none). Five is
    /// user::, user:<acl_uid>:, group::, mask::, other::; more adds named users.
    #[serde(default)]
    pub acl_entries: u32,
    /// The named user of the ACL: the uid `acl_check` checks as.
    #[serde(default = "default_uid")]
    pub acl_uid: u32,
}

impl TreeArgs {
    /// Counts after `scale`: (files, dirs); at least one directory. The
    /// agent builds these; the planner weighs them.
    pub fn scaled_counts(&self) -> Result<(u64, u64), String> {
        if !(self.scale.is_finite() && self.scale > 0.0) {
            return Err(format!("tree: scale must be a positive number, not {}", self.scale));
        }
        let files = (self.files as f64 * self.scale).round();
        let dirs = (self.dirs as f64 * self.scale).round().max(1.0);
        // Beyond this a plan would not fit in memory anyway; say so instead.
        const MAX: f64 = 100_000_000.0;
        if files > MAX || dirs > MAX {
            return Err(format!("tree: {files} files / {dirs} directories is more than this agent plans ({MAX})"));
        }
        Ok((files as u64, dirs as u64))
    }

    /// About what the tree's files take on a filesystem of `block`-byte
    /// blocks: files × `size` (exact, whatever the spread: `treegen`), each
    /// file's last block whole (btrfs keeps the smallest inline: less
    /// there). `None` where the agent would refuse the tree.
    pub fn disk_bytes(&self, block: u64) -> Option<u64> {
        let (files, _) = self.scaled_counts().ok()?;
        let per_file = self.size.0.div_ceil(block.max(1)).saturating_mul(block.max(1));
        Some(files.saturating_mul(per_file))
    }
}

#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "snake_case")]
pub enum AclOp {
    /// access(R_OK)
    #[default]
    Access,
    /// open(O_RDONLY) and close
    Open,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(deny_unknown_fields)]
pub struct AclCheckArgs {
    /// Scratch (or ramdisk) name holding the tree; the most recently set up when absent.
    #[serde(default)]
    pub target: Option<String>,
    /// The tree's directory under the target's mount point.
    #[serde(default = "default_tree_dir")]
    pub dir: String,
    /// The non-owner the check runs as (owners never consult the ACL).
    #[serde(default = "default_uid")]
    pub uid: u32,
    /// The group the check runs as.
    #[serde(default = "default_uid")]
    pub gid: u32,
    /// Drop caches first (the paper's "right after boot"); `stat()` still
    /// precedes each timed check, so only the ACL's own reads are timed.
    #[serde(default = "yes")]
    pub cold: bool,
    /// The call that makes the permission check.
    #[serde(default)]
    pub op: AclOp,
    /// Check at most this many files (all when absent).
    #[serde(default)]
    pub limit: Option<u64>,
}

#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "snake_case")]
pub enum Preserve {
    /// Contents only, as a `cp` without EA/ACL support.
    #[default]
    None,
    /// Extended attributes too, ACLs (`system.posix_acl_*`) included.
    Xattrs,
}

fn default_copy_dir() -> String {
    "copy".to_string()
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(deny_unknown_fields)]
pub struct CopyTreeArgs {
    /// Scratch or ramdisk name holding the source tree.
    pub from: String,
    /// The tree's directory under the source's mount point.
    #[serde(default = "default_tree_dir")]
    pub from_dir: String,
    /// Destination scratch; the most recently set up when absent.
    #[serde(default)]
    pub to: Option<String>,
    /// The copy's directory under the destination's mount point.
    #[serde(default = "default_copy_dir")]
    pub to_dir: String,
    /// What is copied besides contents.
    #[serde(default)]
    pub preserve: Preserve,
    /// `sync` before the clock stops (the paper's `cp ...; sync`).
    #[serde(default = "yes")]
    pub sync: bool,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(deny_unknown_fields)]
pub struct ListTreeArgs {
    /// Scratch (or ramdisk) name holding the tree; the most recently set up when absent.
    #[serde(default)]
    pub target: Option<String>,
    /// The tree's directory under the target's mount point.
    #[serde(default = "default_tree_dir")]
    pub dir: String,
    /// sync + drop_caches (root) before the clock starts.
    #[serde(default = "yes")]
    pub cold: bool,
}

#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "snake_case")]
pub enum TreeReader {
    /// In the agent: tar archive written to a counting sink.
    #[default]
    Builtin,
    /// `tar cf - .` through a pipe the agent drains (never to /dev/null,
    /// which GNU tar recognises and then skips reading file data).
    GnuTar,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(deny_unknown_fields)]
pub struct ReadTreeArgs {
    /// Scratch (or ramdisk) name holding the tree; the most recently set up when absent.
    #[serde(default)]
    pub target: Option<String>,
    /// The tree's directory under the target's mount point.
    #[serde(default = "default_tree_dir")]
    pub dir: String,
    /// sync + drop_caches (root) before the clock starts.
    #[serde(default = "yes")]
    pub cold: bool,
    /// What reads the files.
    #[serde(default)]
    pub reader: TreeReader,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "snake_case")]
pub enum Codec {
    Raw,
    Lzo,
    Gzip,
    Zstd,
}

impl Codec {
    /// The host's program that compresses and (with `-dc`) decompresses
    /// the codec's files, for `tool: external`; raw is read with `cat`.
    pub fn program(self) -> Option<&'static str> {
        match self {
            Codec::Raw => None,
            Codec::Lzo => Some("lzop"),
            Codec::Gzip => Some("gzip"),
            Codec::Zstd => Some("zstd"),
        }
    }
}

#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "snake_case")]
pub enum CodecTool {
    /// The agent's own (pure Rust) decoder.
    #[default]
    Builtin,
    /// The host's `lzop -dc`, `gzip -dc`, `zstd -dc` (`cat` for raw), output drained by the agent.
    External,
}

fn default_cold_file() -> String {
    "cold.dat".to_string()
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(deny_unknown_fields)]
pub struct ColdReadArgs {
    /// Scratch (or ramdisk) name to read on; the most recently set up when absent.
    #[serde(default)]
    pub target: Option<String>,
    /// Base name; the compressed copy gets the codec's extension.
    #[serde(default = "default_cold_file")]
    pub file: String,
    /// Uncompressed size.
    pub size: ByteSize,
    /// What the file is made of (how well it compresses).
    #[serde(default)]
    pub content: ContentKind,
    /// How the file is compressed (`raw`: not at all).
    pub codec: Codec,
    /// What decompresses it.
    #[serde(default)]
    pub tool: CodecTool,
    /// The size of each read.
    #[serde(default = "default_bs")]
    pub bs: ByteSize,
    /// The seed of the file's contents.
    #[serde(default = "default_seed")]
    pub seed: u64,
}

#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "snake_case")]
pub enum RaidProfile {
    #[default]
    Single,
    Raid0,
    Raid1,
    Raid10,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(deny_unknown_fields)]
pub struct VolumeArgs {
    /// Scratch device names, each checked like a `filesystem` device.
    pub devices: Vec<String>,
    /// The data profile.
    #[serde(default)]
    pub data: RaidProfile,
    /// Metadata profile; btrfs's default for the device count when absent.
    #[serde(default)]
    pub metadata: Option<RaidProfile>,
    /// Mount options (`-o`), one per item.
    #[serde(default)]
    pub mount_options: Vec<String>,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(deny_unknown_fields)]
pub struct VolumeChangeArgs {
    /// The scratch device to add or remove.
    pub device: String,
    /// The volume (its first device's name); the most recently set up when absent.
    #[serde(default)]
    pub volume: Option<String>,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "snake_case")]
pub enum RawOp {
    Read,
    Write,
    Copy,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(deny_unknown_fields)]
pub struct RawArgs {
    /// Read a device, write one, or copy one to another.
    pub op: RawOp,
    /// Scratch device read from (read, copy) or written (write).
    pub device: String,
    /// Destination of a copy, checked like a device to format.
    #[serde(default)]
    pub to: Option<String>,
    /// How much to read, write or copy.
    pub size: ByteSize,
    /// The size of each read and write.
    #[serde(default = "default_bs")]
    pub bs: ByteSize,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(deny_unknown_fields)]
pub struct RamdiskArgs {
    /// The name workloads use as `target`.
    pub name: String,
    /// The tmpfs's size.
    pub size: ByteSize,
}

/// A command line: a string for `sh -c`, or an argv list run as is.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(untagged)]
pub enum CommandLine {
    Shell(String),
    Argv(Vec<String>),
}

/// A metric read from a command's output.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(deny_unknown_fields)]
pub struct ExecMetric {
    /// The metric's name.
    pub name: String,
    /// Its unit (`MB/s`, `s`, `ops`).
    pub unit: String,
    /// Which way the metric is good.
    #[serde(default = "higher")]
    pub better: Better,
    /// Dotted path into the JSON on stdout (`jobs.0.write.bw_bytes`).
    #[serde(default)]
    pub json: Option<String>,
    /// A regex over stdout whose first capture group is the number.
    #[serde(default)]
    pub regex: Option<String>,
    /// Multiply what was read (bytes → MB: 1e-6).
    #[serde(default = "one")]
    pub scale: f64,
}

fn higher() -> Better {
    Better::Higher
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(deny_unknown_fields)]
pub struct ExecArgs {
    /// A string run with `sh -c` (as its words, without the shell, when it
    /// holds nothing a shell would interpret), or an argv list run as is.
    pub command: CommandLine,
    /// Run in this scratch's mount point (none: the agent's work dir).
    #[serde(default)]
    pub target: Option<String>,
    /// Environment variables added to the command's.
    #[serde(default)]
    pub env: BTreeMap<String, String>,
    /// Metrics read from the command's output.
    #[serde(default)]
    pub metrics: Vec<ExecMetric>,
    /// Seconds before the command is killed and the step fails.
    #[serde(default)]
    #[cfg_attr(feature = "schema", schemars(extend("x-unit" = "s")))]
    pub timeout: Option<u64>,
    /// A non-zero exit is a failure unless this is set.
    #[serde(default)]
    pub ignore_status: bool,
}

/// A filesystem that is not formatted here (a remote one: sshfs, NFS, ...),
/// mounted under the work dir and usable as a `target`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(deny_unknown_fields)]
pub struct MountArgs {
    /// The name workloads use as `target` (and `unmount` as `device`).
    pub name: String,
    /// `host:/path` for sshfs, `server:/export` for NFS. Never a local block device.
    pub source: String,
    /// `fuse.sshfs`, `nfs`, ...
    pub fstype: String,
    /// Mount options (`-o`), one per item.
    #[serde(default)]
    pub options: Vec<String>,
}

/// Export a directory of a filesystem this session mounted over the kernel
/// NFS server (started if it is not running). Undone with the mount it
/// lives on: unexported, and the server stopped again if this started it.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(deny_unknown_fields)]
pub struct NfsExportArgs {
    /// The scratch (or ramdisk) whose mount holds the directory.
    pub target: String,
    /// A directory inside it, relative (`.`: the whole filesystem).
    #[serde(default = "dot")]
    pub dir: String,
    /// Who may mount it, as in exports(5): hosts, networks
    /// (`10.77.0.0/24`), or `*` written out, separated by blanks. Left
    /// out in a role play, the planner names the cell's other hosts (their
    /// `ansible_host`); never anyone by default: on a lab network others
    /// reach, an export to anyone is a choice to make, not to fall into.
    #[serde(default)]
    pub clients: String,
    /// exports(5) options; `root_squash` unless they say otherwise.
    #[serde(default = "default_export_options")]
    pub options: Vec<String>,
}

fn dot() -> String {
    ".".into()
}

fn default_export_options() -> Vec<String> {
    ["rw", "sync", "no_subtree_check", "root_squash"].map(String::from).to_vec()
}

/// What `service` does to a system service, as Ansible's `service` module says it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "snake_case")]
pub enum ServiceState {
    Started,
    Stopped,
    Restarted,
    Reloaded,
}

/// Start, stop, restart or reload a system service (systemd, else SysV init),
/// timed: a server restarted before each repetition is part of the experiment.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(deny_unknown_fields)]
pub struct ServiceArgs {
    /// The service (`nfs-server`).
    pub name: String,
    /// What to do to it.
    pub state: ServiceState,
}

/// Which way a metric is good: every metric says, an `exec` step's too.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "snake_case")]
pub enum Better {
    Higher,
    Lower,
}

impl Better {
    pub fn as_str(self) -> &'static str {
        match self {
            Better::Higher => "higher",
            Better::Lower => "lower",
        }
    }
}

/// The word `as_str` stores: what a store reads back.
impl std::str::FromStr for Better {
    type Err = String;
    fn from_str(s: &str) -> Result<Better, String> {
        match s {
            "higher" => Ok(Better::Higher),
            "lower" => Ok(Better::Lower),
            other => Err(format!("`{other}` is neither higher nor lower")),
        }
    }
}

/// A play's `tune:` for one host: kernel settings applied at the start of
/// every visit (before setup) and restored after it, always. `None`: left
/// as it is. The queue settings apply to `devices`, the cell's scratch
/// devices on this host (their request queues).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(deny_unknown_fields)]
pub struct TuneArgs {
    /// cpufreq `scaling_governor` of every policy.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub governor: Option<String>,
    /// Boost/turbo on or off (`cpufreq/boost`, or `intel_pstate/no_turbo`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub boost: Option<bool>,
    /// Transparent huge pages: `enabled`, or `enabled/defrag` (`madvise/defer`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub thp: Option<String>,
    /// The I/O scheduler of the devices' queues (`none`, `mq-deadline`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub scheduler: Option<String>,
    /// The devices' read-ahead, in KiB.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "schema", schemars(extend("x-unit" = "KiB")))]
    pub read_ahead_kb: Option<u64>,
    /// The devices' queue depth.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub nr_requests: Option<u64>,
    /// `vm.swappiness`, 0 to 200.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub swappiness: Option<u64>,
    /// Drop-in sysctls, `vm.dirty_ratio: 10` (written to /proc/sys).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub sysctl: BTreeMap<String, String>,
    /// Scratch device names whose queues take `scheduler`, `read_ahead_kb`, `nr_requests`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub devices: Vec<String>,
}

/// What `tune: {thp: ...}` may say: the kernel's words for
/// `transparent_hugepage/enabled` and `/defrag`.
pub const THP_ENABLED: &[&str] = &["always", "madvise", "never"];
pub const THP_DEFRAG: &[&str] = &["always", "defer", "defer+madvise", "madvise", "never"];

impl TuneArgs {
    /// Whether a queue setting is asked for (it needs devices).
    pub fn tunes_queues(&self) -> bool {
        self.scheduler.is_some() || self.read_ahead_kb.is_some() || self.nr_requests.is_some()
    }

    /// `thp` split into enabled and defrag, each checked against the kernel's words.
    pub fn thp_parts(thp: &str) -> Result<(&str, Option<&str>), String> {
        let (enabled, defrag) = match thp.split_once('/') {
            Some((e, d)) => (e, Some(d)),
            None => (thp, None),
        };
        if !THP_ENABLED.contains(&enabled) {
            return Err(format!("thp `{enabled}` is one of {}", THP_ENABLED.join(", ")));
        }
        if let Some(d) = defrag.filter(|d| !THP_DEFRAG.contains(d)) {
            return Err(format!("thp defrag `{d}` is one of {}", THP_DEFRAG.join(", ")));
        }
        Ok((enabled, defrag))
    }

    /// A sysctl name as /proc/sys has it: dotted words of `[a-z0-9_-]`, so
    /// it cannot leave /proc/sys.
    pub fn check_sysctl_name(name: &str) -> Result<(), String> {
        let word = |w: &str| !w.is_empty() && w.chars().all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-');
        if name.split('.').count() >= 2 && name.split('.').all(word) {
            Ok(())
        } else {
            Err(format!("sysctl `{name}` is a dotted name such as `vm.dirty_ratio`"))
        }
    }
}

fn default_fio_dir() -> String {
    "fio".to_string()
}

/// A fio job run with the host's fio, in a directory of the target.
/// Exactly one of `jobs` (with `global`), `job_file` or `job_text`.
/// Checked when it is built (at plan time): options that would write
/// outside the target are refused (`crate::fio::check_option`).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
// The schema is of the fields below, not of `FioArgsUnchecked` (the same
// fields, undocumented), which serde's `try_from` would make schemars use.
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema), schemars(!try_from))]
#[serde(deny_unknown_fields, try_from = "FioArgsUnchecked")]
pub struct FioArgs {
    /// Scratch (or ramdisk) name to run on; the most recently set up when absent.
    #[serde(default)]
    pub target: Option<String>,
    /// Directory under the target's mount point: fio's `directory`.
    #[serde(default = "default_fio_dir")]
    pub dir: String,
    /// `[global]` options, as `option: value` (`~` for a flag such as `time_based`).
    #[serde(default, skip_serializing_if = "indexmap::IndexMap::is_empty")]
    pub global: crate::fio::FioOptions,
    /// Jobs by name, each its options, in order.
    #[serde(default, skip_serializing_if = "indexmap::IndexMap::is_empty")]
    pub jobs: indexmap::IndexMap<String, crate::fio::FioOptions>,
    /// A job file on the host (checked there as `jobs` are here).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub job_file: Option<String>,
    /// A job file's text, inline.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub job_text: Option<String>,
    /// fio options (or `ioengine=NAME`) beyond those benchrig runs unasked,
    /// which the playbook's author vouches write only under the target;
    /// never one benchrig refuses (`crate::fio::check_option`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub allow: Vec<String>,
}

/// [`FioArgs`] as written, before [`FioArgs::job`] checks it.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct FioArgsUnchecked {
    #[serde(default)]
    target: Option<String>,
    #[serde(default = "default_fio_dir")]
    dir: String,
    #[serde(default)]
    global: crate::fio::FioOptions,
    #[serde(default)]
    jobs: indexmap::IndexMap<String, crate::fio::FioOptions>,
    #[serde(default)]
    job_file: Option<String>,
    #[serde(default)]
    job_text: Option<String>,
    #[serde(default)]
    allow: Vec<String>,
}

impl TryFrom<FioArgsUnchecked> for FioArgs {
    type Error = String;
    fn try_from(u: FioArgsUnchecked) -> Result<FioArgs, String> {
        let a = FioArgs {
            target: u.target,
            dir: u.dir,
            global: u.global,
            jobs: u.jobs,
            job_file: u.job_file,
            job_text: u.job_text,
            allow: u.allow,
        };
        // fio reads `directory` as a `:`-separated list and expands `$`: a
        // plain relative path only, or a part could name another place.
        let plain = a.dir.chars().all(|c| c.is_ascii_alphanumeric() || "._-/".contains(c));
        if a.dir.is_empty() || !plain || a.dir.starts_with('/') || a.dir.split('/').any(|c| c == "..") {
            return Err(format!(
                "`dir` ({:?}) is a directory under the target: relative, without `..`, of letters, digits and `._-/`",
                a.dir
            ));
        }
        a.job()?;
        Ok(a)
    }
}

impl FioArgs {
    /// The job, checked; `None` for a `job_file`, which only the host can read.
    pub fn job(&self) -> Result<Option<crate::fio::FioJob>, String> {
        let given = [!self.jobs.is_empty(), self.job_file.is_some(), self.job_text.is_some()];
        if given.iter().filter(|g| **g).count() != 1 {
            return Err("give exactly one of `jobs` (with `global`), `job_file` and `job_text`".into());
        }
        if !self.global.is_empty() && self.jobs.is_empty() {
            return Err("`global` goes with `jobs`; a job file has its own [global]".into());
        }
        let job = match (&self.job_text, self.job_file.is_some()) {
            (Some(text), _) => crate::fio::FioJob::parse(text, &self.allow),
            (None, true) => return Ok(None),
            (None, false) => crate::fio::FioJob::from_options(&self.global, &self.jobs, &self.allow),
        };
        job.map(Some)
    }
}
