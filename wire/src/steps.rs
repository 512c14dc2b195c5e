//! The actions an agent performs, their arguments, and what a step returns.
//!
//! A playbook step names an action and gives it arguments; the orchestrator
//! turns that into an [`Action`] with [`Action::from_parts`] at plan time, so a
//! misspelt action or argument is an error before any host is touched.

pub use crate::args::*;
use crate::metrics::MetricDecl;
use serde::{Deserialize, Serialize};

/// A row's `writes data`: any other word is a compile error.
macro_rules! writes {
    (data) => {
        true
    };
}

/// One place lists every action: its variant, argument type, name, the
/// metrics it reports (`crate::metrics`; `own arg`: also one per entry of
/// that argument), and after them, when they apply: the filesystem its
/// host's `kernel` must support, the tools it `needs` on the host, the info keys it `keeps` as artifacts (long text stored
/// apart from the cell's info and samples), and whether it `writes` data
/// onto a target (so `plan::capacity` must weigh it). The enum,
/// [`ACTION_NAMES`] and every per-name lookup below come from it, so they
/// cannot disagree.
macro_rules! actions {
    ($( $(#[doc = $doc:literal])* $variant:ident($args:ty) = $name:literal
        => [$($metric:ident),*] $(own $own:ident)? $(kernel $kernel:literal)? $(needs [$($tool:literal),*])?
        $(keeps [$($kept:literal),*])? $(writes $writes:ident)?, )*) => {
        #[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
        #[serde(tag = "action", content = "args", rename_all = "snake_case")]
        pub enum Action {
            $( $(#[doc = $doc])* $variant($args), )*
        }

        /// Every action name a playbook may use, in the order `benchrig` lists them.
        pub const ACTION_NAMES: &[&str] = &[$($name),*];

        impl Action {
            pub fn name(&self) -> &'static str {
                match self {
                    $( Action::$variant(_) => $name, )*
                }
            }

            /// The argument names an action accepts (empty for an unknown action).
            pub fn arg_names(name: &str) -> &'static [&'static str] {
                match name {
                    $( $name => crate::introspect::field_names::<$args>(), )*
                    _ => &[],
                }
            }

            /// What an action does: its doc comment in the table, on one line
            /// (`None` for an unknown action).
            pub fn about(name: &str) -> Option<String> {
                let lines: &[&str] = match name {
                    $( $name => &[$($doc),*], )*
                    _ => return None,
                };
                Some(lines.iter().map(|l| l.trim()).collect::<Vec<_>>().join(" "))
            }

            /// The metrics an action reports, in the order it reports them
            /// (`None` for an unknown action).
            pub fn metrics(name: &str) -> Option<&'static [MetricDecl]> {
                match name {
                    $( $name => {
                        const ROW: &[MetricDecl] = &[$(crate::metrics::$metric),*];
                        Some(ROW)
                    } )*
                    _ => None,
                }
            }

            /// The argument whose entries are metrics of the step's own
            /// (`exec`'s `metrics`), reported besides [`Action::metrics`].
            pub fn metrics_argument(name: &str) -> Option<&'static str> {
                match name {
                    $( $name => None $(.or(Some(stringify!($own))))?, )*
                    _ => None,
                }
            }

            /// The filesystem (as /proc/filesystems names it) the host's
            /// kernel must support for the action, looked for before its tools.
            pub fn kernel_filesystem(name: &str) -> Option<&'static str> {
                match name {
                    $( $name => None $(.or(Some($kernel)))?, )*
                    _ => None,
                }
            }

            /// The programs an action needs on the host, looked for in its
            /// facts' tools before the host is touched.
            pub fn tools(name: &str) -> &'static [&'static str] {
                match name {
                    $( $name => &[$($($tool),*)?], )*
                    _ => &[],
                }
            }

            /// The info keys whose text the orchestrator stores as the
            /// cell's artifacts, not in its info or samples.
            pub fn kept_keys(name: &str) -> &'static [&'static str] {
                match name {
                    $( $name => &[$($($kept),*)?], )*
                    _ => &[],
                }
            }

            /// Whether the action may write data onto a target (a mount or
            /// a raw device), so that `plan::capacity` weighs it.
            pub fn writes_data(name: &str) -> bool {
                match name {
                    $( $name => false $(|| writes!($writes))?, )*
                    _ => false,
                }
            }

            /// The JSON Schema of an action's arguments, as a playbook
            /// writes them once rendered (`None` for an unknown action);
            /// its definitions go to `generator`.
            #[cfg(feature = "schema")]
            pub fn arg_schema(name: &str, generator: &mut schemars::SchemaGenerator) -> Option<schemars::Schema> {
                match name {
                    $( $name => Some(generator.subschema_for::<$args>()), )*
                    _ => None,
                }
            }
        }
    };
}

actions! {
    /// Check a scratch device against the safety rules, mkfs it with a profile, mount it.
    Filesystem(FilesystemArgs) = "filesystem" => [] keeps ["fs_dump"],
    /// A btrfs volume over several scratch devices (each checked), mounted.
    Volume(VolumeArgs) = "volume" => [] kernel "btrfs" needs ["mkfs.btrfs", "btrfs"] keeps ["fs_dump"],
    /// A tmpfs, usable as a target like a scratch device ("source in RAM").
    Ramdisk(RamdiskArgs) = "ramdisk" => [],
    /// A remote filesystem (sshfs, NFS), usable as a target.
    Mount(MountArgs) = "mount" => [],
    /// Export a directory of a mounted scratch over the kernel NFS server.
    NfsExport(NfsExportArgs) = "nfs_export" => [] kernel "nfsd" needs ["exportfs"],
    /// Start, stop, restart or reload a system service, timed.
    Service(ServiceArgs) = "service" => [],
    /// Unmount what this session mounted (one device, or all) and detach its loop devices.
    Unmount(UnmountArgs) = "unmount" => [],
    /// `sync`, then drop the page cache (root) — the before-each step of cold runs.
    DropCaches(NoArgs) = "drop_caches" => [],
    /// A deterministic directory tree (files, directories, sizes, content, ACLs).
    Tree(TreeArgs) = "tree" => [TIME] writes data,
    /// Write one file sequentially, fsynced before the clock stops.
    SeqWrite(SeqWriteArgs) = "seq_write" => [THROUGHPUT, TIME] writes data,
    /// Read one file sequentially (the one `seq_write` wrote), from a cold cache by default.
    SeqRead(SeqReadArgs) = "seq_read" => [THROUGHPUT, TIME],
    /// The first permission check of each file as a non-owner, after `stat()`.
    AclCheck(AclCheckArgs) = "acl_check" => [LATENCY_FIRST, LATENCY_MEAN, LATENCY_P50, LATENCY_P99, CHECKS_TOTAL],
    /// Copy a tree, preserving nothing or xattrs and ACLs; `sync` timed.
    CopyTree(CopyTreeArgs) = "copy_tree" => [THROUGHPUT, TIME, FILES_PER_S] writes data,
    /// What `ls -lR` does: readdir, lstat and the ACL-present check of every entry.
    ListTree(ListTreeArgs) = "list_tree" => [TIME, ENTRIES_PER_S],
    /// Read every file's contents in archive order (tar to a counting sink).
    ReadTree(ReadTreeArgs) = "read_tree" => [THROUGHPUT, TIME],
    /// Read one file raw or decompress it (lzo, gzip, zstd) from a cold cache.
    ColdRead(ColdReadArgs) = "cold_read" => [THROUGHPUT, TIME, USER, SYS] writes data,
    /// Add a device to a volume and rebalance, timed: data relocated per second.
    VolumeAdd(VolumeChangeArgs) = "volume_add" => [RELOCATION_RATE, RELOCATED, TIME] kernel "btrfs" needs ["btrfs"],
    /// Remove a device from a volume, timed: data relocated per second.
    VolumeRemove(VolumeChangeArgs) = "volume_remove" => [RELOCATION_RATE, RELOCATED, TIME] kernel "btrfs" needs ["btrfs"],
    /// Sequential read, write (checked like mkfs) or device-to-device copy on raw scratch devices.
    Raw(RawArgs) = "raw" => [THROUGHPUT, TIME] writes data,
    /// Any command, timed; metrics parsed from its output (JSON path or regex).
    Exec(ExecArgs) = "exec" => [TIME] own metrics,
    /// A fio job (options as a mapping, or a job file) with the host's fio; metrics per job and direction.
    // Boxed: its option maps would make every `Action`, and every message, larger.
    Fio(Box<FioArgs>) = "fio" => [TIME, FIO_BW, FIO_IOPS, FIO_CLAT_MEAN, FIO_CLAT_P50, FIO_CLAT_P99, FIO_CLAT_P99_9]
        needs ["fio"] keeps ["fio_output"] writes data,
    /// Remove what earlier sessions left behind: mounts under the work dir, their loop devices.
    Cleanup(NoArgs) = "cleanup" => [],
    /// Does nothing; measures the step round trip.
    Noop(NoArgs) = "noop" => [],
    /// Kernel settings for a visit (a play's `tune:`), restored when the visit's setup is released.
    Tune(TuneArgs) = "tune" => [],
}

impl Action {
    /// The scratch devices (by name) an action touches; the planner checks
    /// each against the host's `scratch_devices`. Every action is listed, no
    /// `_` arm: a new action must say whether it names a device.
    pub fn scratch_names(&self) -> Vec<&str> {
        match self {
            Action::Filesystem(a) => vec![a.device.as_str()],
            Action::Volume(a) => a.devices.iter().map(String::as_str).collect(),
            Action::VolumeAdd(a) | Action::VolumeRemove(a) => vec![a.device.as_str()],
            Action::Raw(a) => std::iter::once(a.device.as_str()).chain(a.to.as_deref()).collect(),
            // Writes only the devices' queue settings, never their data.
            Action::Tune(a) => a.devices.iter().map(String::as_str).collect(),
            // `unmount` names a target this session mounted (a scratch device,
            // a ramdisk, a remote mount) and only releases it.
            Action::Unmount(_) => Vec::new(),
            Action::Ramdisk(_)
            | Action::Mount(_)
            | Action::NfsExport(_)
            | Action::Service(_)
            | Action::DropCaches(_)
            | Action::Tree(_)
            | Action::SeqWrite(_)
            | Action::SeqRead(_)
            | Action::AclCheck(_)
            | Action::CopyTree(_)
            | Action::ListTree(_)
            | Action::ReadTree(_)
            | Action::ColdRead(_)
            | Action::Exec(_)
            | Action::Fio(_)
            | Action::Cleanup(_)
            | Action::Noop(_) => Vec::new(),
        }
    }
}

impl Action {
    /// Whether a metric a step reported is one this action declares: one
    /// of its row's (name, unit, direction), or for `exec` one of the
    /// step's own `metrics`. What `benchrig doc` says is what a run stores.
    pub fn declares(&self, m: &Metric) -> bool {
        let row = Action::metrics(self.name()).unwrap_or_default();
        let own = match self {
            Action::Exec(a) => a.metrics.iter().any(|e| e.name == m.name && e.unit == m.unit && e.better == m.better),
            _ => false,
        };
        own || row.iter().any(|d| d.matches(&m.name, &m.unit, m.better))
    }
}

/// What a step needs of its host before it can run: a filesystem its
/// kernel must support, asked first (without it, installing a tool would
/// not help), then programs on the host's PATH. The planner asks a host's
/// facts, the agent the host itself: one list for both.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct HostNeeds<'a> {
    pub kernel: Option<&'a str>,
    pub tools: Vec<&'a str>,
}

impl Action {
    /// Its row's `kernel` and `needs`, and what its arguments add: a
    /// profile's filesystem and mkfs, a remote mount's client, a host
    /// program the step was told to use.
    pub fn host_needs(&self) -> HostNeeds<'_> {
        let name = self.name();
        let mut needs = HostNeeds { kernel: Action::kernel_filesystem(name), tools: Action::tools(name).to_vec() };
        match self {
            Action::Filesystem(a) => {
                needs.kernel = a.profile.fstype.as_deref();
                needs.tools.extend(a.profile.mkfs.first().map(String::as_str));
            }
            Action::Mount(a) => match a.fstype.as_str() {
                "nfs" | "nfs4" => {
                    needs.kernel = Some(&a.fstype);
                    needs.tools.push("mount.nfs");
                }
                "fuse.sshfs" | "sshfs" => {
                    needs.kernel = Some("fuse");
                    needs.tools.push("sshfs");
                }
                _ => {}
            },
            Action::ColdRead(a) if a.tool == CodecTool::External => needs.tools.extend(a.codec.program()),
            Action::ReadTree(a) if a.reader == TreeReader::GnuTar => needs.tools.push("tar"),
            _ => {}
        }
        needs
    }

    /// What [`Action::host_needs`] adds by an action's arguments, in words
    /// for `benchrig doc`.
    pub fn needs_by_arguments(name: &str) -> Option<&'static str> {
        match name {
            "filesystem" => Some("the kernel's support for its profile's filesystem, and the profile's mkfs"),
            "mount" => Some("for `fstype: nfs` or `nfs4`, the kernel's support for it and `mount.nfs`; for `fuse.sshfs` or `sshfs`, the kernel's fuse and `sshfs`"),
            "cold_read" => Some("with `tool: external`, the codec's program (`lzop`, `gzip` or `zstd`)"),
            "read_tree" => Some("with `reader: gnu_tar`, `tar`"),
            _ => None,
        }
    }
}

#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum ActionError {
    #[error("unknown action `{0}`")]
    Unknown(String),
    #[error("{0}")]
    BadArgs(String),
}

impl Action {
    /// Build an action from a step's name and its (already rendered) arguments.
    pub fn from_parts(name: &str, args: serde_json::Value) -> Result<Action, ActionError> {
        if !ACTION_NAMES.contains(&name) {
            return Err(ActionError::Unknown(name.to_string()));
        }
        let args = if args.is_null() { serde_json::Value::Object(Default::default()) } else { args };
        serde_json::from_value(serde_json::json!({ "action": name, "args": args }))
            .map_err(|e| ActionError::BadArgs(e.to_string()))
    }
}

/// What a step returns: measured metrics (benchmark steps) and facts about
/// what it did (mount point, mkfs command and version, filesystem dump).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct StepOutput {
    #[serde(default)]
    pub metrics: Vec<Metric>,
    #[serde(default)]
    pub usage: Option<Usage>,
    #[serde(default)]
    pub info: serde_json::Map<String, serde_json::Value>,
    /// What the monitors saw during the timed region, when asked for (boxed:
    /// a few hundred bytes of Vecs would make every `Reply` that large).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub monitors: Option<Box<crate::monitor::MonitorSeries>>,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Metric {
    pub name: String,
    pub value: f64,
    pub unit: String,
    pub better: Better,
}

impl Metric {
    /// A metric as its declaration says: name, unit and direction.
    pub fn of(decl: &MetricDecl, value: f64) -> Metric {
        Metric { name: decl.name.into(), value, unit: decl.unit.into(), better: decl.better }
    }

    /// A per-job metric (fio's) of one job and direction.
    pub fn per_job(decl: &MetricDecl, job: &str, direction: &str, value: f64) -> Metric {
        Metric { name: decl.per_job(job, direction), ..Metric::of(decl, value) }
    }
}

/// Resources a timed region consumed: every sample carries these, so a
/// "cold" read that never reached the disk shows zero device reads.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Usage {
    pub wall_s: f64,
    pub user_s: f64,
    pub sys_s: f64,
    pub devices: Vec<DevIo>,
}

/// Deltas of `/sys/block/<dev>/stat` over the timed region.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct DevIo {
    pub device: String,
    pub read_ios: u64,
    pub read_bytes: u64,
    pub write_ios: u64,
    pub write_bytes: u64,
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::units::ByteSize;
    use serde_json::json;

    #[test]
    fn from_parts_fills_defaults() {
        let a = Action::from_parts("seq_write", json!({"size": "64M"})).unwrap();
        let Action::SeqWrite(w) = a else { panic!("wrong action") };
        assert_eq!(w.size, ByteSize(64 << 20));
        assert_eq!(w.bs, ByteSize(1 << 20));
        assert!(w.fsync && !w.direct);
        assert_eq!(w.file, "benchrig-seq.dat");
    }

    #[test]
    fn actions_that_write_to_devices_name_every_device() {
        let names = |name: &str, args| Action::from_parts(name, args).unwrap().scratch_names().join(",");
        assert_eq!(names("filesystem", json!({"device": "hdd0", "profile": {"name": "ext4"}})), "hdd0");
        assert_eq!(names("volume", json!({"devices": ["a", "b"]})), "a,b");
        assert_eq!(names("volume_add", json!({"device": "c"})), "c");
        assert_eq!(names("volume_remove", json!({"device": "c"})), "c");
        assert_eq!(names("raw", json!({"op": "copy", "device": "a", "to": "b", "size": "1M"})), "a,b");
        assert_eq!(names("raw", json!({"op": "read", "device": "a", "size": "1M"})), "a");
        assert_eq!(names("unmount", json!({"device": "remote"})), "");
        assert_eq!(names("tune", json!({"read_ahead_kb": 16, "devices": ["hdd0", "hdd1"]})), "hdd0,hdd1");
        assert_eq!(names("noop", json!({})), "");
    }

    #[test]
    fn every_action_says_what_it_does() {
        for name in ACTION_NAMES {
            let about = Action::about(name).unwrap();
            assert!(about.len() > 10 && !about.contains("  ") && !about.contains('\n'), "{name}: {about:?}");
        }
        assert_eq!(Action::about("mkfs_all"), None);
    }

    #[test]
    fn every_metric_says_what_it_measures_and_a_row_names_each_once() {
        for name in ACTION_NAMES {
            let row = Action::metrics(name).unwrap();
            for m in row {
                assert!(m.about.len() > 10 && !m.unit.is_empty(), "{name}: {m:?}");
            }
            let mut names: Vec<String> = row.iter().map(|m| m.shown_name()).collect();
            names.sort();
            names.dedup();
            assert_eq!(names.len(), row.len(), "{name}: a metric twice");
        }
        assert_eq!(Action::metrics("mkfs_all"), None);
        assert_eq!(Action::metrics("seq_write").unwrap(), &[crate::metrics::THROUGHPUT, crate::metrics::TIME]);
    }

    #[test]
    fn a_reported_metric_is_declared_by_its_row_or_for_exec_by_the_step() {
        use crate::metrics::{FIO_BW, THROUGHPUT, TIME};
        let seq = Action::from_parts("seq_write", json!({"size": "1M"})).unwrap();
        assert!(seq.declares(&Metric::of(&THROUGHPUT, 1.0)));
        assert!(!seq.declares(&Metric { unit: "MiB/s".into(), ..Metric::of(&THROUGHPUT, 1.0) }));
        assert!(!seq.declares(&Metric::per_job(&FIO_BW, "j", "read", 1.0)));
        let fio = Action::from_parts("fio", json!({"jobs": {"r": {"rw": "read"}}})).unwrap();
        assert!(fio.declares(&Metric::per_job(&FIO_BW, "r", "read", 1.0)));
        let own = json!({"command": "true", "metrics": [{"name": "ops", "unit": "op/s", "regex": "(\\d+)"}]});
        let exec = Action::from_parts("exec", own).unwrap();
        let ops = Metric { name: "ops".into(), value: 1.0, unit: "op/s".into(), better: Better::Higher };
        assert!(exec.declares(&ops) && exec.declares(&Metric::of(&TIME, 1.0)));
        assert!(!exec.declares(&Metric { better: Better::Lower, ..ops.clone() }));
        assert!(!seq.declares(&ops));
        // Only `exec` has metrics of the step's own, in the argument its row names.
        let owners: Vec<&str> =
            ACTION_NAMES.iter().copied().filter(|n| Action::metrics_argument(n).is_some()).collect();
        assert_eq!(owners, ["exec"]);
        assert!(Action::arg_names("exec").contains(&Action::metrics_argument("exec").unwrap()));
    }

    #[test]
    fn every_tool_a_row_needs_is_one_the_facts_look_for() {
        // Facts list only known tools: any other would read as missing everywhere.
        for name in ACTION_NAMES {
            for tool in Action::tools(name) {
                assert!(crate::facts::KnownTool::find(tool).is_some(), "{name} needs {tool}");
            }
        }
        assert_eq!(Action::tools("fio"), ["fio"]);
    }

    #[test]
    fn a_step_needs_what_its_arguments_name_and_only_tools_the_facts_look_for() {
        let needs = |name: &str, args: serde_json::Value| {
            let a = Action::from_parts(name, args).unwrap();
            let n = a.host_needs();
            (n.kernel.map(str::to_string), n.tools.iter().map(|t| t.to_string()).collect::<Vec<_>>())
        };
        let mount = |fstype: &str| needs("mount", serde_json::json!({"name": "r", "source": "s:/x", "fstype": fstype}));
        assert_eq!(mount("nfs4"), (Some("nfs4".into()), vec!["mount.nfs".to_string()]));
        assert_eq!(mount("fuse.sshfs"), (Some("fuse".into()), vec!["sshfs".to_string()]));
        assert_eq!(mount("cifs"), (None, vec![]));
        let cold = |codec: &str, tool: &str| {
            needs("cold_read", serde_json::json!({"size": "1M", "codec": codec, "tool": tool})).1
        };
        assert_eq!(cold("zstd", "external"), ["zstd"]);
        assert_eq!(cold("zstd", "builtin"), Vec::<String>::new());
        assert_eq!(cold("raw", "external"), Vec::<String>::new());
        assert_eq!(needs("read_tree", serde_json::json!({"reader": "gnu_tar"})).1, ["tar"]);
        assert_eq!(needs("read_tree", serde_json::json!({})).1, Vec::<String>::new());
        assert_eq!(needs("volume_add", serde_json::json!({"device": "d"})).0.as_deref(), Some("btrfs"));
        for codec in [Codec::Lzo, Codec::Gzip, Codec::Zstd] {
            assert!(crate::facts::KnownTool::find(codec.program().unwrap()).is_some(), "{codec:?}");
        }
        for tool in ["mount.nfs", "sshfs", "tar"] {
            assert!(crate::facts::KnownTool::find(tool).is_some(), "{tool}");
        }
        for name in ACTION_NAMES {
            let by_args = matches!(*name, "filesystem" | "mount" | "cold_read" | "read_tree");
            assert_eq!(Action::needs_by_arguments(name).is_some(), by_args, "{name}");
        }
    }

    #[test]
    fn null_args_mean_none() {
        assert_eq!(Action::from_parts("drop_caches", serde_json::Value::Null).unwrap(), Action::DropCaches(NoArgs {}));
    }

    #[test]
    fn unknown_action_and_argument_are_refused() {
        assert_eq!(Action::from_parts("mkfs_all", json!({})), Err(ActionError::Unknown("mkfs_all".into())));
        let ActionError::BadArgs(msg) = Action::from_parts("seq_read", json!({"bss": "4k"})).unwrap_err() else {
            panic!("expected BadArgs")
        };
        assert!(msg.contains("bss") && msg.contains("`bs`"), "{msg}");
        assert!(Action::from_parts("seq_write", json!({})).is_err(), "size is required");
    }

    #[test]
    fn arg_names_come_from_the_structs() {
        assert_eq!(Action::arg_names("seq_read"), &["target", "file", "bs", "direct", "cold"]);
        assert_eq!(Action::arg_names("filesystem"), &["device", "profile"]);
        assert!(Action::arg_names("noop").is_empty());
    }

    #[test]
    fn every_listed_name_parses() {
        for name in ACTION_NAMES {
            let args = match *name {
                "volume" => json!({"devices": ["a", "b"]}),
                "ramdisk" => json!({"name": "ram", "size": "1G"}),
                "mount" => json!({"name": "r", "source": "h:/x", "fstype": "fuse.sshfs"}),
                "tree" => json!({"files": 10, "dirs": 2, "size": "4k"}),
                "copy_tree" => json!({"from": "ram"}),
                "cold_read" => json!({"size": "1M", "codec": "lzo"}),
                "volume_add" | "volume_remove" => json!({"device": "d"}),
                "raw" => json!({"op": "read", "device": "d", "size": "1M"}),
                "exec" => json!({"command": "true"}),
                "fio" => json!({"jobs": {"r": {"rw": "read"}}}),
                "filesystem" => {
                    json!({"device": "d", "profile": {"name": "ext4", "fstype": "ext4", "mkfs": ["mkfs.ext4"]}})
                }
                "seq_write" => json!({"size": 1}),
                "nfs_export" => json!({"target": "hdd0", "clients": "10.77.0.0/24"}),
                "service" => json!({"name": "nfs-server", "state": "restarted"}),
                _ => json!({}),
            };
            assert_eq!(Action::from_parts(name, args).unwrap().name(), *name);
        }
    }
}
