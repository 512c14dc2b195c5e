//! `benchrig inventory --list | --graph | --host H | --list-hosts P`, shaped as
//! `ansible-inventory` (and `ansible P --list-hosts`) print them.

use crate::cli::InventoryArgs;
use crate::exit_code;
use crate::inventory::Inventory;
use crate::selection;
use serde_json::{json, Map, Value as Json};
use std::collections::HashSet;

pub fn run(args: InventoryArgs) -> anyhow::Result<i32> {
    let inv = selection::load_inventory(&args.inventory)?;
    let limit = args.limit.as_deref();
    if let Some(h) = &args.host {
        if !inv.hosts.contains_key(h) {
            anyhow::bail!("host `{h}` is not in the inventory");
        }
        outln!("{}", serde_json::to_string_pretty(&Json::Object(shown(inv.host_vars_plain(h))))?)?;
    } else if args.graph {
        if !inv.groups.contains_key(&args.group) {
            anyhow::bail!("`{}` is not a group: --graph starts at a group", args.group);
        }
        out!("{}", graph(&inv, &args.group, 0))?;
    } else if let Some(p) = &args.list_hosts {
        let hosts = selection::select(&inv, p, limit)?;
        outln!("  hosts ({}):", hosts.len())?;
        for h in hosts {
            outln!("    {h}")?;
        }
    } else {
        let hosts = selection::select(&inv, "all", limit)?;
        outln!("{}", serde_json::to_string_pretty(&list(&inv, &hosts))?)?;
    }
    Ok(exit_code::OK)
}

/// `--list` over the hosts a limit left: groups keep only those hosts, a group
/// left with neither hosts nor children is dropped (its parent still names
/// it), and hosts without variables are not in `hostvars`, as Ansible does.
pub fn list(inv: &Inventory, hosts: &[String]) -> Json {
    let mut out = Map::new();
    let hostvars: Map<String, Json> = hosts
        .iter()
        .map(|h| (h.clone(), shown(inv.host_vars_plain(h))))
        .filter(|(_, v)| !v.is_empty())
        .map(|(h, v)| (h, Json::Object(v)))
        .collect();
    // `profile` names the JSON encoding of values; ansible-core 2.19 prints it.
    out.insert("_meta".into(), json!({ "hostvars": hostvars, "profile": "inventory_legacy" }));
    let selected: HashSet<&String> = hosts.iter().collect();
    for (name, g) in &inv.groups {
        let mut entry = Map::new();
        if !g.children.is_empty() {
            entry.insert("children".into(), json!(g.children));
        }
        let kept: Vec<&String> = g.hosts.iter().filter(|h| selected.contains(h)).collect();
        if !kept.is_empty() && name != "all" {
            entry.insert("hosts".into(), json!(kept));
        }
        if !entry.is_empty() {
            out.insert(name.clone(), Json::Object(entry));
        }
    }
    Json::Object(out)
}

/// Names Ansible reserves for what it computes (C.INTERNAL_STATIC_VARS):
/// `ansible-inventory` leaves them out even when an inventory sets them.
const INTERNAL: &[&str] = &[
    "ansible_async_path",
    "ansible_collection_name",
    "ansible_config_file",
    "ansible_dependent_role_names",
    "ansible_diff_mode",
    "ansible_facts",
    "ansible_forks",
    "ansible_inventory_sources",
    "ansible_limit",
    "ansible_play_batch",
    "ansible_play_hosts",
    "ansible_play_hosts_all",
    "ansible_play_role_names",
    "ansible_playbook_python",
    "ansible_role_name",
    "ansible_role_names",
    "ansible_run_tags",
    "ansible_skip_tags",
    "ansible_verbosity",
    "ansible_version",
    "inventory_dir",
    "inventory_file",
    "inventory_hostname",
    "inventory_hostname_short",
    "groups",
    "group_names",
    "hostvars",
    "playbook_dir",
    "play_hosts",
    "role_name",
    "role_names",
    "role_path",
    "role_uuid",
];

fn shown(mut vars: crate::inventory::Vars) -> crate::inventory::Vars {
    vars.retain(|k, _| !INTERNAL.contains(&k.as_str()));
    vars
}

fn graph(inv: &Inventory, group: &str, depth: usize) -> String {
    let pad = "  |".repeat(depth);
    let mut s = if depth == 0 { format!("@{group}:\n") } else { format!("{pad}--@{group}:\n") };
    if let Some(g) = inv.groups.get(group) {
        for c in &g.children {
            s += &graph(inv, c, depth + 1);
        }
        // Ansible lists `all`'s hosts under `ungrouped` only.
        for h in g.hosts.iter().filter(|_| g.name != "all") {
            s += &format!("{}  |--{h}\n", "  |".repeat(depth));
        }
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn list_under_a_limit_keeps_parents_naming_dropped_groups() {
        let mut inv = Inventory::empty();
        inv.add_host_to_group("web", "w1");
        inv.add_host_to_group("db", "d1");
        inv.add_child("all", "web");
        inv.add_child("all", "db");
        inv.ensure_host("w1").vars.insert("x".into(), json!(1));
        let out = list(&inv, &["w1".to_string()]);
        assert_eq!(out["all"]["children"], json!(["ungrouped", "web", "db"]));
        assert_eq!(out["web"]["hosts"], json!(["w1"]));
        assert!(out.get("db").is_none(), "a group left empty is dropped");
        assert_eq!(out["_meta"]["hostvars"], json!({"w1": {"x": 1}}), "hosts without variables are left out");
    }
}
