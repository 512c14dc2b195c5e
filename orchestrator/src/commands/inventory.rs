//! `benchrig inventory --list | --graph | --host H`, shaped as `ansible-inventory` prints them.

use crate::cli::InventoryArgs;
use crate::inventory::Inventory;
use crate::selection;
use serde_json::{json, Map, Value as Json};

pub fn run(args: InventoryArgs) -> anyhow::Result<i32> {
    let inv = selection::load_inventory(&args.inventory)?;
    if let Some(h) = &args.host {
        if !inv.hosts.contains_key(h) {
            anyhow::bail!("host `{h}` is not in the inventory");
        }
        println!("{}", serde_json::to_string_pretty(&Json::Object(inv.host_vars_plain(h)))?);
    } else if args.graph {
        print!("{}", graph(&inv, "all", 0));
    } else {
        println!("{}", serde_json::to_string_pretty(&list(&inv))?);
    }
    Ok(0)
}

pub fn list(inv: &Inventory) -> Json {
    let mut out = Map::new();
    let hostvars: Map<String, Json> =
        inv.hosts.keys().map(|h| (h.clone(), Json::Object(inv.host_vars_plain(h)))).collect();
    out.insert("_meta".into(), json!({ "hostvars": hostvars }));
    for (name, g) in &inv.groups {
        let mut entry = Map::new();
        if !g.children.is_empty() {
            entry.insert("children".into(), json!(g.children));
        }
        if !g.hosts.is_empty() && name != "all" {
            entry.insert("hosts".into(), json!(g.hosts));
        }
        if !entry.is_empty() {
            out.insert(name.clone(), Json::Object(entry));
        }
    }
    Json::Object(out)
}

fn graph(inv: &Inventory, group: &str, depth: usize) -> String {
    let pad = "  |".repeat(depth);
    let mut s = if depth == 0 { format!("@{group}:\n") } else { format!("{pad}--@{group}:\n") };
    if let Some(g) = inv.groups.get(group) {
        for c in &g.children {
            s += &graph(inv, c, depth + 1);
        }
        for h in &g.hosts {
            s += &format!("{}  |--{h}\n", "  |".repeat(depth));
        }
    }
    s
}
