//! Reports of a stored run: JSON (the model), markdown and HTML from it (the
//! HTML page's shell in `page`, its charts' layout in `shape`, their drawing
//! in `charts`), CSV (a row a
//! sample) and JUnit (a test case a cell) from the store.

pub mod bisect_html;
pub mod cell_notes;
pub mod charts;
pub mod compare_html;
pub mod csv;
pub mod html;
pub mod json;
pub mod junit;
pub mod md;
pub mod page;
pub mod shape;
pub mod steady_state;
pub mod time;
pub mod timeline;

use crate::human::{cpus, mem};
use benchrig_wire::facts::Limits;
use serde_json::Value as Json;
use std::collections::HashMap;

/// Where each host is in `hosts` (its first place), to sort a run's cells
/// by without a scan of the hosts for every cell.
pub fn host_positions(hosts: &[String]) -> HashMap<&str, usize> {
    let mut at = HashMap::new();
    for (i, h) in hosts.iter().enumerate() {
        at.entry(h.as_str()).or_insert(i);
    }
    at
}

/// A line per attempt at a run ("attempt 2: 2026-12-01T14:50:03Z to
/// 2026-12-01T14:52:10Z by ci@lab pid 4242 on old: ok"), from the JSON
/// model's `attempts`; none when the run was made in one attempt.
pub fn attempt_lines(attempts: &Json) -> Vec<String> {
    let list = attempts.as_array().map(Vec::as_slice).unwrap_or_default();
    if list.len() < 2 {
        return Vec::new();
    }
    let text = |v: &Json| v.as_str().unwrap_or("-").to_string();
    list.iter()
        .map(|a| {
            let hosts: Vec<String> = a["hosts"].as_array().into_iter().flatten().map(text).collect();
            format!(
                "attempt {}: {} to {} by {} on {}: {}",
                a["attempt"],
                text(&a["started"]),
                a["finished"].as_str().unwrap_or("(no end recorded: killed)"),
                text(&a["holder"]),
                if hosts.is_empty() { "(hosts not recorded)".to_string() } else { hosts.join(", ") },
                text(&a["status"])
            )
        })
        .collect()
}

/// A play's `fresh` policy in one line, when it is not the default
/// ("fresh: round: a round's cells with identical setups share one"), from
/// its cells' stored steps; none when all are `cell` or were stored before
/// the policy was.
pub fn fresh_line<'a>(steps: impl IntoIterator<Item = Option<&'a Json>>) -> Option<String> {
    let mut counts: Vec<(&str, usize)> = Vec::new();
    for policy in steps.into_iter().flatten().filter_map(|s| s.get("fresh")?.as_str()) {
        match counts.iter_mut().find(|(p, _)| *p == policy) {
            Some((_, n)) => *n += 1,
            None => counts.push((policy, 1)),
        }
    }
    if counts.iter().all(|(p, _)| *p == "cell") {
        return None;
    }
    let meaning = |p: &str| match p {
        "round" => "a round's cells with identical setups share one",
        "repetition" => "a setup before every repetition",
        _ => "a setup per visit",
    };
    Some(match counts.as_slice() {
        [(p, _)] => format!("fresh: {p}: {}", meaning(p)),
        many => {
            let each: Vec<String> =
                many.iter().map(|(p, n)| format!("{p} for {n} cell{}", if *n == 1 { "" } else { "s" })).collect();
            format!("fresh: {}", each.join(", "))
        }
    })
}

/// A line per measured step that ran with monitors ("h1 · fs=ext4 · read:
/// loop3: %util 99%, … → disk-bound"), from the JSON model's cells of one
/// play: under the table, where it does not crowd the metrics.
pub fn monitor_lines<'a>(cells: impl IntoIterator<Item = &'a Json>) -> Vec<String> {
    cells
        .into_iter()
        .filter_map(|c| {
            let headline = c["monitors"]["headline"].as_str()?;
            let step = c["step"].as_str().unwrap_or("-");
            Some(format!(
                "{} · {} · {step}: {headline}",
                md::text(&c["host"]),
                crate::human::describe_params(&c["params"])
            ))
        })
        .collect()
}

/// What a host's limits leave of it, in one line: "memory 512 MiB, CPU
/// quota 0.12 → effective 512 MiB, 0.12 CPU", or "none".
pub fn limits_text(l: &Limits) -> String {
    let parts: Vec<String> = [
        l.memory_bytes.map(|b| format!("memory {}", mem(b))),
        l.memory_swap_bytes.map(|b| format!("memory+swap {}", mem(b))),
        l.cpu_quota.map(|q| format!("CPU quota {}", cpus(q))),
        l.cpuset.as_ref().map(|c| format!("cpuset {c} ({} CPUs)", l.cpuset_cpus.unwrap_or(0))),
        l.affinity_cpus.map(|n| format!("affinity {n} CPUs")),
    ]
    .into_iter()
    .flatten()
    .collect();
    if l.memory_bytes.is_none() && l.cpu_quota.is_none() && l.cpuset.is_none() && l.affinity_cpus.is_none() {
        let swap = parts.first().map(|p| format!(" ({p})")).unwrap_or_default();
        return format!("none{swap}");
    }
    format!("{} → effective {}, {} CPU", parts.join(", "), mem(l.effective_memory_bytes), cpus(l.effective_cpus))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn the_fresh_line_is_shown_only_for_another_policy_than_cell() {
        let steps = |p: &[Option<&str>]| -> Vec<Json> {
            p.iter().map(|f| f.map_or(json!({"setup": []}), |f| json!({"fresh": f}))).collect()
        };
        let line = |p: &[Option<&str>]| fresh_line(steps(p).iter().map(Some));
        assert_eq!(line(&[Some("cell"), Some("cell")]), None);
        assert_eq!(line(&[None, None]), None, "stored before the policy was");
        assert_eq!(line(&[]), None);
        assert_eq!(
            line(&[Some("round"), Some("round")]).as_deref(),
            Some("fresh: round: a round's cells with identical setups share one")
        );
        assert_eq!(
            line(&[Some("round"), Some("cell"), Some("round")]).as_deref(),
            Some("fresh: round for 2 cells, cell for 1 cell")
        );
    }
}
