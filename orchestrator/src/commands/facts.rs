//! `benchrig facts`: push the agent and print what each host is.

use super::exit_code_for;
use crate::cli::FactsArgs;
use crate::progress::Progress;
use crate::report::limits_text;
use crate::session::{finish_all, open_sessions};
use crate::store::Store;
use benchrig_wire::facts::Facts;

pub async fn run(args: FactsArgs, progress: Progress) -> anyhow::Result<i32> {
    let (inv, hosts, connection) = super::selected_hosts(&args.hosts)?;
    let store = Store::open(&args.hosts.db.db)?;
    let results = open_sessions(&inv, &hosts, args.hosts.forks, &connection, progress).await;
    let mut json = serde_json::Map::new();
    let mut open = Vec::new();
    let mut failed = Vec::new();
    for (h, r) in results {
        match r {
            Ok(s) => {
                store.set_host_facts(None, &h, &s.facts)?;
                if args.json {
                    json.insert(h.clone(), serde_json::to_value(&s.facts)?);
                } else {
                    out!("{}", human(&h, &s.describe(), &s.facts))?;
                }
                open.push((h, s));
            }
            Err(e) => failed.push((h, Err(e))),
        }
    }
    let mut closed = finish_all(open, |_| async { Ok(()) }).await;
    closed.extend(failed);
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
    let mhz = f.cpu.mhz.map(|m| format!(" @ {m:.0} MHz")).unwrap_or_default();
    s += &format!("  cpu: {} × {}{mhz}\n", f.cpu.count, f.cpu.model);
    if !f.agent.build.is_empty() {
        s += &format!("  agent: {} build\n", f.agent.build);
    }
    s += &format!("  memory: {}\n", gib(f.memory.total_bytes));
    if let Some(l) = f.known_limits() {
        s += &format!("  limits: {}\n", limits_text(&l));
    }
    let sudo = if f.user.root {
        "root"
    } else if f.user.passwordless_sudo {
        "passwordless sudo"
    } else {
        "no root, no sudo"
    };
    s += &format!("  user: {} ({sudo})\n", f.user.name);
    if let Some(t) = &f.tuning {
        s += &format!("  tuning: {}\n", crate::system_state::summary(t));
        if let Some(c) = &t.cmdline {
            s += &format!("  cmdline: {c}\n");
        }
    }
    for sc in f.scratch.iter().filter(|sc| !sc.queues.is_empty()) {
        let q: Vec<String> = sc.queues.iter().map(crate::system_state::queue_summary).collect();
        s += &format!("  scratch {}: {}\n", sc.name, q.join("; "));
    }
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

#[cfg(test)]
mod tests {
    use super::*;
    use benchrig_wire::facts::{Cpu, Limits, Memory};

    fn host(limits: Option<Limits>) -> Facts {
        Facts {
            cpu: Cpu { count: 2, model: "Xeon".into(), ..Default::default() },
            memory: Memory { total_bytes: 24 << 30, cgroup_limit_bytes: None },
            limits,
            ..Default::default()
        }
    }

    #[test]
    fn limits_are_shown_beside_the_totals() {
        let old = Limits {
            memory_bytes: Some(512 << 20),
            cpu_quota: Some(0.12),
            online_cpus: 2,
            effective_memory_bytes: 512 << 20,
            effective_cpus: 0.12,
            ..Default::default()
        };
        let text = human("old", "ssh", &host(Some(old)));
        assert!(text.contains("  memory: 24.0 GiB\n"), "{text}");
        assert!(text.contains("  limits: memory 512 MiB, CPU quota 0.12 → effective 512 MiB, 0.12 CPU\n"), "{text}");
        let fast =
            Limits { online_cpus: 2, effective_memory_bytes: 24 << 30, effective_cpus: 2.0, ..Default::default() };
        assert!(human("fast1", "ssh", &host(Some(fast))).contains("  limits: none\n"));
        let pinned = Limits {
            cpuset: Some("1".into()),
            cpuset_cpus: Some(1),
            online_cpus: 2,
            effective_memory_bytes: 24 << 30,
            effective_cpus: 1.0,
            ..Default::default()
        };
        assert!(human("p", "ssh", &host(Some(pinned)))
            .contains("  limits: cpuset 1 (1 CPUs) → effective 24.0 GiB, 1 CPU\n"));
        // Facts from before `limits`: unknown, so no line; an old agent's
        // own-cgroup readings still show.
        assert!(!human("h", "ssh", &host(None)).contains("limits"));
        let mut before = host(None);
        before.cpu.quota = Some(0.5);
        assert!(human("h", "ssh", &before).contains("  limits: CPU quota 0.5 → effective 24.0 GiB, 0.5 CPU\n"));
    }

    #[test]
    fn system_state_and_scratch_queues_are_shown_when_recorded() {
        use benchrig_wire::facts::{HostTuning, QueueFacts, ScratchFacts};
        let mut f = host(None);
        assert!(!human("h", "ssh", &f).contains("tuning"), "facts from before: no line");
        f.tuning = Some(HostTuning {
            governor: Some("performance".into()),
            cpufreq_driver: Some("intel_pstate".into()),
            cmdline: Some("root=/dev/sda1 mitigations=off".into()),
            ..Default::default()
        });
        f.scratch = vec![ScratchFacts {
            name: "hdd0".into(),
            queues: vec![QueueFacts {
                device: "loop3".into(),
                scheduler: Some("none".into()),
                read_ahead_kb: Some(128),
                rotational: Some(true),
                ..Default::default()
            }],
            ..Default::default()
        }];
        let text = human("h", "ssh", &f);
        assert!(text.contains("  tuning: cpufreq intel_pstate, governor performance\n"), "{text}");
        assert!(text.contains("  cmdline: root=/dev/sda1 mitigations=off\n"), "{text}");
        assert!(text.contains("  scratch hdd0: loop3: none, read_ahead_kb 128, rotational\n"), "{text}");
    }
}
