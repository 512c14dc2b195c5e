//! Which inventory, which hosts: shared by every command that touches hosts.

use crate::inventory::{embedded_localhost, pattern, Inventory};
use std::collections::HashSet;
use std::path::PathBuf;

/// The `-i` sources, or this machine when there are none.
pub fn load_inventory(sources: &[PathBuf]) -> anyhow::Result<Inventory> {
    if sources.is_empty() {
        let cwd = std::env::current_dir()?;
        return Ok(embedded_localhost(rustix::process::geteuid().is_root(), &cwd));
    }
    Ok(Inventory::load(sources)?)
}

/// Hosts matching `pattern`, restricted by `--limit`, in Ansible's order.
pub fn select(inv: &Inventory, pattern: &str, limit: Option<&str>) -> anyhow::Result<Vec<String>> {
    let mut hosts = pattern::select(inv, pattern)?;
    if let Some(l) = limit {
        let allowed: HashSet<String> = pattern::limit(inv, l)?.into_iter().collect();
        hosts.retain(|h| allowed.contains(h));
    }
    Ok(hosts)
}
