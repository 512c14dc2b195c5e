//! The inventory used when no `-i` is given: this machine, no SSH.
//!
//! As root, scratch is a sparse image under `~/.cache/benchrig/` attached to
//! a loop device for each cell, so every profile can be made. Otherwise it is
//! a plain directory on the current filesystem and only the `existing`
//! profile applies (no mkfs without root).

use super::Inventory;
use serde_json::json;

/// The one line `run` says before it starts with no `-i`, as Ansible warns
/// that only the implicit localhost is available: what will be measured,
/// on what, and where the results go (`db`).
pub fn notice(is_root: bool, cwd: &std::path::Path, db: &str) -> String {
    let scratch = if is_root {
        "on a 4 GiB sparse image, ~/.cache/benchrig/scratch0.img, on a loop device each cell formats".to_string()
    } else {
        format!(
            "in the plain directory {} (not root: no mkfs, profile `existing` only)",
            cwd.join("benchrig-scratch").display()
        )
    };
    format!("no inventory (-i): measuring this machine, {scratch}; results into {db}")
}

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

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::Path;

    #[test]
    fn the_notice_says_what_is_measured_where_and_where_results_go() {
        let root = notice(true, Path::new("/w"), "benchrig.db");
        assert_eq!(
            root,
            "no inventory (-i): measuring this machine, on a 4 GiB sparse image, ~/.cache/benchrig/scratch0.img, \
             on a loop device each cell formats; results into benchrig.db"
        );
        let user = notice(false, Path::new("/w"), "r.db");
        assert!(
            user.contains("/w/benchrig-scratch") && user.contains("no mkfs") && user.ends_with("results into r.db")
        );
        // The notice describes the inventory the run gets.
        let inv = embedded_localhost(true, Path::new("/w"));
        let scratch = &inv.host_vars("localhost")["scratch_devices"][0];
        assert_eq!(
            (scratch["size"].as_str(), scratch["path"].as_str()),
            (Some("4G"), Some("~/.cache/benchrig/scratch0.img"))
        );
    }
}
