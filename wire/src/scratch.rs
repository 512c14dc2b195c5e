//! A host's `scratch_devices` entry: the only storage benchrig may format.

use crate::units::ByteSize;
use serde::{Deserialize, Serialize};

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(deny_unknown_fields)]
pub struct ScratchDevice {
    /// A block device (`/dev/sdb`, `/dev/disk/by-id/...`, a symlink to one),
    /// an image file (`kind: image`) or a directory (`kind: directory`).
    pub path: String,
    /// The stable name playbooks and reports use.
    pub name: String,
    /// Refuse the device if its serial (or WWN) differs.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub serial: Option<String>,
    /// Allow formatting over an existing filesystem or partition signature.
    #[serde(default)]
    pub wipe: bool,
    #[serde(default)]
    pub kind: ScratchKind,
    /// Size of a `kind: image` file, created sparse when missing.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub size: Option<ByteSize>,
}

#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "snake_case")]
pub enum ScratchKind {
    /// A real block device: every safety rule applies.
    #[default]
    Block,
    /// A file benchrig owns, attached to a loop device for each cell. Being
    /// benchrig's own file, its old signature never blocks a format.
    Image,
    /// A directory on an existing filesystem: no mkfs, profile `existing` only.
    Directory,
}
