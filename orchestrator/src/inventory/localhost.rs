//! The inventory used when no `-i` is given: this machine, no SSH.
//!
//! As root, scratch is a sparse image under `~/.cache/benchrig/` attached to
//! a loop device for each cell, so every profile can be made. Otherwise it is
//! a plain directory on the current filesystem and only the `existing`
//! profile applies (no mkfs without root).

use super::Inventory;
use serde_json::json;

pub fn embedded_localhost(is_root: bool, cwd: &std::path::Path) -> Inventory {
    let mut inv = Inventory::empty();
    inv.sources.push("embedded localhost".into());
    inv.add_host_to_group("ungrouped", "localhost");
    let (scratch, profiles) = if is_root {
        (
            json!([{ "name": "scratch0", "path": "~/.cache/benchrig/scratch0.img", "kind": "image", "size": "4G" }]),
            json!(["ext4", "xfs", "btrfs"]),
        )
    } else {
        (
            json!([{ "name": "scratch0", "path": cwd.join("benchrig-scratch").display().to_string(), "kind": "directory" }]),
            json!(["existing"]),
        )
    };
    let host = inv.ensure_host("localhost");
    host.vars.insert("ansible_connection".into(), json!("local"));
    host.vars.insert("scratch_devices".into(), scratch);
    host.vars.insert("benchrig_profiles".into(), profiles);
    inv
}
