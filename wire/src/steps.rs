//! The actions an agent performs, their arguments, and what a step returns.
//!
//! A playbook step names an action and gives it arguments; the orchestrator
//! turns that into an [`Action`] with [`Action::from_parts`] at plan time, so a
//! misspelt action or argument is an error before any host is touched.

use crate::units::ByteSize;
use serde::{Deserialize, Serialize};

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "action", content = "args", rename_all = "snake_case")]
pub enum Action {
    /// Check a scratch device against the safety rules, mkfs it with a profile, mount it.
    Filesystem(FilesystemArgs),
    /// Unmount what this session mounted (one device, or all) and detach its loop devices.
    Unmount(UnmountArgs),
    /// `sync`, then drop the page cache (root) — the before-each step of cold runs.
    DropCaches(NoArgs),
    SeqWrite(SeqWriteArgs),
    SeqRead(SeqReadArgs),
    /// Remove what earlier sessions left behind: mounts under the work dir, their loop devices.
    Cleanup(NoArgs),
    /// Does nothing; measures the step round trip.
    Noop(NoArgs),
}

/// Every action name a playbook may use, in the order `benchrig` lists them.
pub const ACTION_NAMES: &[&str] = &["filesystem", "unmount", "drop_caches", "seq_write", "seq_read", "cleanup", "noop"];

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

    /// The argument names an action accepts (empty for an unknown action).
    pub fn arg_names(name: &str) -> &'static [&'static str] {
        use crate::introspect::field_names;
        match name {
            "filesystem" => field_names::<FilesystemArgs>(),
            "unmount" => field_names::<UnmountArgs>(),
            "seq_write" => field_names::<SeqWriteArgs>(),
            "seq_read" => field_names::<SeqReadArgs>(),
            _ => &[],
        }
    }

    pub fn name(&self) -> &'static str {
        match self {
            Action::Filesystem(_) => "filesystem",
            Action::Unmount(_) => "unmount",
            Action::DropCaches(_) => "drop_caches",
            Action::SeqWrite(_) => "seq_write",
            Action::SeqRead(_) => "seq_read",
            Action::Cleanup(_) => "cleanup",
            Action::Noop(_) => "noop",
        }
    }
}

#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct NoArgs {}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FilesystemArgs {
    /// A scratch device name from the inventory.
    pub device: String,
    pub profile: FsProfile,
}

/// A filesystem profile resolved by the orchestrator: exactly what to run.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FsProfile {
    pub name: String,
    /// The kernel's name for the filesystem (`/proc/filesystems`); `None` for
    /// `existing`, which uses a scratch directory as it is.
    #[serde(default)]
    pub fstype: Option<String>,
    /// mkfs argv without the device, which the agent appends.
    #[serde(default)]
    pub mkfs: Vec<String>,
    #[serde(default)]
    pub mount_options: Vec<String>,
}

#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
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
#[serde(deny_unknown_fields)]
pub struct SeqWriteArgs {
    /// Scratch device name whose mount to write on; the most recently mounted when absent.
    #[serde(default)]
    pub target: Option<String>,
    #[serde(default = "default_seq_file")]
    pub file: String,
    pub size: ByteSize,
    #[serde(default = "default_bs")]
    pub bs: ByteSize,
    /// O_DIRECT.
    #[serde(default)]
    pub direct: bool,
    /// fsync before the clock stops: durability is part of a write.
    #[serde(default = "yes")]
    pub fsync: bool,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SeqReadArgs {
    #[serde(default)]
    pub target: Option<String>,
    #[serde(default = "default_seq_file")]
    pub file: String,
    #[serde(default = "default_bs")]
    pub bs: ByteSize,
    #[serde(default)]
    pub direct: bool,
    /// sync + drop_caches (root) or fadvise(DONTNEED) before the clock starts.
    #[serde(default = "yes")]
    pub cold: bool,
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
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Metric {
    pub name: String,
    pub value: f64,
    pub unit: String,
    pub better: Better,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
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
                "filesystem" => {
                    json!({"device": "d", "profile": {"name": "ext4", "fstype": "ext4", "mkfs": ["mkfs.ext4"]}})
                }
                "seq_write" => json!({"size": 1}),
                _ => json!({}),
            };
            assert_eq!(Action::from_parts(name, args).unwrap().name(), *name);
        }
    }
}
