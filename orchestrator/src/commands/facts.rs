//! `benchrig facts`: push the agent and print what each host is.

use super::{exit_code_for, open_sessions};
use crate::cli::FactsArgs;
use crate::reporter::Reporter;
use crate::selection;
use crate::store::Store;
use benchrig_wire::facts::Facts;

pub async fn run(args: FactsArgs, reporter: Reporter) -> anyhow::Result<i32> {
    let inv = selection::load_inventory(&args.hosts.inventory)?;
    let hosts = selection::select(&inv, "all", args.hosts.limit.as_deref())?;
    let store = Store::open(&args.hosts.db)?;
    let results = open_sessions(&inv, &hosts, args.hosts.forks, reporter).await;
    let mut json = serde_json::Map::new();
    let mut closed = Vec::new();
    for (h, r) in results {
        match r {
            Ok(s) => {
                store.set_host_facts(None, &h, &s.facts)?;
                if args.json {
                    json.insert(h.clone(), serde_json::to_value(&s.facts)?);
                } else {
                    out!("{}", human(&h, &s.describe(), &s.facts))?;
                }
                let facts = s.facts.clone();
                closed.push((h, s.close().await.map(|_| facts)));
            }
            Err(e) => closed.push((h, Err(e))),
        }
    }
    if args.json {
        outln!("{}", serde_json::to_string_pretty(&json)?)?;
    }
    Ok(exit_code_for(&closed))
}

fn gib(b: u64) -> String {
    format!("{:.1} GiB", b as f64 / (1u64 << 30) as f64)
}

pub fn human(name: &str, via: &str, f: &Facts) -> String {
    let mut s = format!("{name}  ({via})\n");
    s += &format!("  {} · kernel {} · {}\n", f.arch, f.kernel.release, f.distribution.pretty_name);
    let quota = f.cpu.quota.map(|q| format!(", limited to {q:.2} CPU")).unwrap_or_default();
    let mhz = f.cpu.mhz.map(|m| format!(" @ {m:.0} MHz")).unwrap_or_default();
    s += &format!("  cpu: {} × {}{mhz}{quota}\n", f.cpu.count, f.cpu.model);
    let limit = f.memory.cgroup_limit_bytes.map(|l| format!(", limited to {}", gib(l))).unwrap_or_default();
    s += &format!("  memory: {}{limit}\n", gib(f.memory.total_bytes));
    let sudo = if f.user.root {
        "root"
    } else if f.user.passwordless_sudo {
        "passwordless sudo"
    } else {
        "no root, no sudo"
    };
    s += &format!("  user: {} ({sudo})\n", f.user.name);
    for d in &f.block_devices {
        let kind = match d.rotational {
            Some(true) => "rotational",
            Some(false) => "non-rotational",
            None => "",
        };
        let extra: Vec<String> = [
            d.model.clone(),
            d.serial.as_ref().map(|x| format!("serial {x}")),
            d.scheduler.as_ref().map(|x| format!("scheduler {x}")),
            (!d.holders.is_empty()).then(|| format!("held by {}", d.holders.join(","))),
            d.backing_file.as_ref().map(|b| format!("backed by {b}")),
        ]
        .into_iter()
        .flatten()
        .collect();
        s += &format!("  disk {}: {} {kind} {}\n", d.name, gib(d.size_bytes), extra.join(", "));
    }
    s += &format!("  filesystems: {}\n", f.filesystems.join(" "));
    let loadable: Vec<&str> =
        f.module_filesystems.iter().filter(|m| !f.filesystems.contains(m)).map(String::as_str).collect();
    if !loadable.is_empty() {
        s += &format!("  as modules: {}\n", loadable.join(" "));
    }
    let tools: Vec<String> = f
        .tools
        .iter()
        .map(|t| match &t.version {
            Some(v) => format!("{} ({v})", t.name),
            None => t.name.clone(),
        })
        .collect();
    s += &format!("  tools: {}\n", tools.join(", "));
    s
}
