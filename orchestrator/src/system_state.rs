//! The host's system state as stored in its facts (`tuning`, each scratch
//! device's `queues`): what differs between two runs' facts, as `compare`
//! and `history` judge comparability, and a line for people. A leaf: reads
//! facts JSON only.
//!
//! Facts stored before these fields existed are unknown, not different: a
//! setting is compared only when both sides recorded it (as `compare` does
//! for limits). A file absent on the host is recorded (`null`, shown as
//! "absent"), and absent → present is a difference.

use benchrig_wire::facts::{HostTuning, QueueFacts};
use serde_json::Value as Json;

/// The first setting that differs between two hosts' facts, named as a
/// person reads it ("governor performance → powersave", "io scheduler
/// mq-deadline → none on loop3"); queues only of the scratch devices
/// `scratch` (the cell's).
pub fn difference(base: Option<&Json>, new: Option<&Json>, scratch: &[String]) -> Option<String> {
    SystemState::of(base?).difference(&SystemState::of(new?), scratch)
}

/// A host's system state as its facts recorded it, typed: what
/// [`SystemState::difference`] compares (a year of `history` holds a few
/// of these, not a year of facts).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct SystemState {
    /// None for facts from before tuning was recorded (or unreadable).
    tuning: Option<HostTuning>,
    /// Each scratch device's queues, by name (the first entry of a name;
    /// none where that run recorded none).
    queues: Vec<(String, Vec<QueueFacts>)>,
}

impl SystemState {
    pub fn of(facts: &Json) -> SystemState {
        let mut queues: Vec<(String, Vec<QueueFacts>)> = Vec::new();
        let mut seen = std::collections::BTreeSet::new();
        for entry in facts.get("scratch").and_then(Json::as_array).into_iter().flatten() {
            let Some(name) = entry.get("name").and_then(Json::as_str) else { continue };
            // The first entry of a name is the one read, queues or not.
            if !seen.insert(name) {
                continue;
            }
            let q = entry.get("queues").and_then(|q| serde_json::from_value::<Vec<QueueFacts>>(q.clone()).ok());
            if let Some(q) = q.filter(|q| !q.is_empty()) {
                queues.push((name.to_string(), q));
            }
        }
        SystemState { tuning: tuning(facts), queues }
    }

    /// The first setting that differs from `new`'s (see [`difference`]).
    pub fn difference(&self, new: &SystemState, scratch: &[String]) -> Option<String> {
        let host = match (&self.tuning, &new.tuning) {
            (Some(a), Some(b)) => host_difference(a, b),
            _ => None,
        };
        host.or_else(|| {
            scratch.iter().find_map(|name| {
                let (a, b) = (self.queues_of(name)?, new.queues_of(name)?);
                queue_difference(a, b, name)
            })
        })
    }

    fn queues_of(&self, name: &str) -> Option<&[QueueFacts]> {
        self.queues.iter().find(|(n, _)| n == name).map(|(_, q)| q.as_slice())
    }
}

fn tuning(f: &Json) -> Option<HostTuning> {
    serde_json::from_value(f.get("tuning").filter(|t| t.is_object())?.clone()).ok()
}

fn shown<T: std::fmt::Display>(v: &Option<T>) -> String {
    v.as_ref().map_or_else(|| "absent".into(), |v| v.to_string())
}

fn on_off(v: &Option<bool>) -> Option<&'static str> {
    v.map(|b| if b { "on" } else { "off" })
}

fn host_difference(a: &HostTuning, b: &HostTuning) -> Option<String> {
    let pairs: [(&str, String, String); 13] = [
        ("cpufreq driver", shown(&a.cpufreq_driver), shown(&b.cpufreq_driver)),
        ("governor", shown(&a.governor), shown(&b.governor)),
        ("boost", shown(&on_off(&a.boost)), shown(&on_off(&b.boost))),
        ("SMT", shown(&a.smt_control), shown(&b.smt_control)),
        ("SMT active", shown(&on_off(&a.smt_active)), shown(&on_off(&b.smt_active))),
        ("THP enabled", shown(&a.thp_enabled), shown(&b.thp_enabled)),
        ("THP defrag", shown(&a.thp_defrag), shown(&b.thp_defrag)),
        ("vm.swappiness", shown(&a.swappiness), shown(&b.swappiness)),
        ("vm.dirty_ratio", shown(&a.dirty_ratio), shown(&b.dirty_ratio)),
        ("vm.dirty_background_ratio", shown(&a.dirty_background_ratio), shown(&b.dirty_background_ratio)),
        ("vm.dirty_bytes", shown(&a.dirty_bytes), shown(&b.dirty_bytes)),
        ("vm.dirty_background_bytes", shown(&a.dirty_background_bytes), shown(&b.dirty_background_bytes)),
        ("kernel command line", shown(&a.cmdline), shown(&b.cmdline)),
    ];
    if let Some((what, x, y)) = pairs.into_iter().find(|(_, x, y)| x != y) {
        return Some(format!("{what} {x} → {y}"));
    }
    let names = a.mitigations.keys().chain(b.mitigations.keys());
    names.into_iter().find_map(|k| {
        let (x, y) = (a.mitigations.get(k), b.mitigations.get(k));
        (x != y).then(|| format!("mitigation {k}: {} → {}", shown(&x), shown(&y)))
    })
}

fn queue_difference(a: &[QueueFacts], b: &[QueueFacts], name: &str) -> Option<String> {
    if a.len() != b.len() || a.iter().zip(b).any(|(x, y)| x.device != y.device) {
        let devs = |q: &[QueueFacts]| q.iter().map(|q| q.device.clone()).collect::<Vec<_>>().join("+");
        return Some(format!("devices under {name} {} → {}", devs(a), devs(b)));
    }
    a.iter().zip(b).find_map(|(x, y)| {
        let on = &x.device;
        let wc = |q: &QueueFacts| q.write_cache.clone();
        let rot = |q: &QueueFacts| on_off(&q.rotational);
        let pairs: [(&str, String, String); 5] = [
            ("io scheduler", shown(&x.scheduler), shown(&y.scheduler)),
            ("read_ahead_kb", shown(&x.read_ahead_kb), shown(&y.read_ahead_kb)),
            ("nr_requests", shown(&x.nr_requests), shown(&y.nr_requests)),
            ("write cache", shown(&wc(x)), shown(&wc(y))),
            ("rotational", shown(&rot(x)), shown(&rot(y))),
        ];
        let (what, p, q) = pairs.into_iter().find(|(_, p, q)| p != q)?;
        Some(format!("{what} {p} → {q} on {on}"))
    })
}

/// The settings a person scans first, on one line: "governor performance,
/// boost on, SMT on, THP madvise/madvise, swappiness 60, dirty 20%/10%,
/// mitigations: 3 vulnerable" (absent ones left out).
pub fn summary(t: &HostTuning) -> String {
    let dirty = |ratio: Option<u64>, bytes: Option<u64>| match bytes.filter(|&b| b > 0) {
        Some(b) => Some(crate::human::mem(b)),
        None => ratio.map(|r| format!("{r}%")),
    };
    let vulnerable = t.mitigations.values().filter(|v| v.starts_with("Vulnerable")).count();
    let parts: Vec<String> = [
        t.cpufreq_driver.as_ref().map(|d| format!("cpufreq {d}")),
        t.governor.as_ref().map(|g| format!("governor {g}")),
        on_off(&t.boost).map(|b| format!("boost {b}")),
        t.smt_control.as_ref().map(|s| format!("SMT {s}")),
        t.thp_enabled.as_ref().map(|e| format!("THP {e}/{}", t.thp_defrag.as_deref().unwrap_or("?"))),
        t.swappiness.map(|s| format!("swappiness {s}")),
        match (dirty(t.dirty_ratio, t.dirty_bytes), dirty(t.dirty_background_ratio, t.dirty_background_bytes)) {
            (Some(a), Some(b)) => Some(format!("dirty {a}/{b}")),
            _ => None,
        },
        (!t.mitigations.is_empty())
            .then(|| format!("{vulnerable} of {} vulnerabilities unmitigated", t.mitigations.len())),
    ]
    .into_iter()
    .flatten()
    .collect();
    if t.cpufreq_driver.is_none() {
        // Worth saying: frequency is not under the kernel's control here (a VM).
        return format!("no cpufreq, {}", parts.join(", "));
    }
    parts.join(", ")
}

/// [`summary`] of stored facts, with each scratch device's queues; `None`
/// for facts from before they were recorded.
pub fn summary_of(facts: &Json) -> Option<String> {
    let mut s = summary(&tuning(facts)?);
    for sc in facts.get("scratch").and_then(Json::as_array).into_iter().flatten() {
        let q: Vec<QueueFacts> =
            sc.get("queues").and_then(|q| serde_json::from_value(q.clone()).ok()).unwrap_or_default();
        if !q.is_empty() {
            let name = sc.get("name").and_then(Json::as_str).unwrap_or("?");
            s += &format!("; {name}: {}", q.iter().map(queue_summary).collect::<Vec<_>>().join(", "));
        }
    }
    Some(s)
}

/// One device's queue for people: "loop3: none, read_ahead 128 KiB, nr_requests 128, write back, rotational".
pub fn queue_summary(q: &QueueFacts) -> String {
    let parts: Vec<String> = [
        q.scheduler.clone(),
        q.read_ahead_kb.map(|r| format!("read_ahead_kb {r}")),
        q.nr_requests.map(|n| format!("nr_requests {n}")),
        q.write_cache.clone(),
        q.rotational.map(|r| if r { "rotational".into() } else { "non-rotational".into() }),
    ]
    .into_iter()
    .flatten()
    .collect();
    format!("{}: {}", q.device, parts.join(", "))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn facts(governor: Option<&str>, scheduler: &str, ra: u64) -> Json {
        json!({
            "kernel": {"release": "6.18"},
            "tuning": {"governor": governor, "cpufreq_driver": governor.map(|_| "acpi-cpufreq"),
                       "thp_enabled": "madvise", "swappiness": 60, "mitigations": {"meltdown": "Mitigation: PTI"}},
            "scratch": [{"name": "d", "device": "loop3", "size_bytes": 1,
                         "queues": [{"device": "loop3", "scheduler": scheduler, "read_ahead_kb": ra},
                                    {"device": "nvme0n1", "scheduler": "none", "read_ahead_kb": 128}]},
                        {"name": "other", "queues": [{"device": "sdz", "scheduler": scheduler}]}]
        })
    }

    #[test]
    fn a_changed_setting_is_named_with_both_values_and_its_device() {
        let d = ["d".to_string()];
        let base = facts(Some("performance"), "mq-deadline", 128);
        assert_eq!(difference(Some(&base), Some(&base.clone()), &d), None);
        let sched = facts(Some("performance"), "none", 128);
        assert_eq!(
            difference(Some(&base), Some(&sched), &d).as_deref(),
            Some("io scheduler mq-deadline → none on loop3")
        );
        let ra = facts(Some("performance"), "mq-deadline", 16);
        assert_eq!(difference(Some(&base), Some(&ra), &d).as_deref(), Some("read_ahead_kb 128 → 16 on loop3"));
        let gov = facts(Some("powersave"), "mq-deadline", 128);
        assert_eq!(difference(Some(&base), Some(&gov), &d).as_deref(), Some("governor performance → powersave"));
        // cpufreq gone (the same host booted as a VM): absent is a value, and a difference.
        let none = facts(None, "mq-deadline", 128);
        assert_eq!(difference(Some(&base), Some(&none), &d).as_deref(), Some("cpufreq driver acpi-cpufreq → absent"));
        let mut mit = base.clone();
        mit["tuning"]["mitigations"]["meltdown"] = json!("Vulnerable");
        assert_eq!(
            difference(Some(&base), Some(&mit), &d).as_deref(),
            Some("mitigation meltdown: Mitigation: PTI → Vulnerable")
        );
    }

    #[test]
    fn only_the_cells_own_devices_count() {
        let mut other = facts(Some("performance"), "mq-deadline", 128);
        other["scratch"][1]["queues"][0]["scheduler"] = json!("bfq");
        let base = facts(Some("performance"), "mq-deadline", 128);
        assert_eq!(difference(Some(&base), Some(&other), &["d".into()]), None);
        assert!(difference(Some(&base), Some(&other), &["other".into()]).is_some());
    }

    #[test]
    fn facts_stored_before_these_fields_are_unknown_not_different() {
        let d = ["d".to_string()];
        let new = facts(Some("performance"), "none", 16);
        let old =
            json!({"kernel": {"release": "6.18"}, "scratch": [{"name": "d", "device": "loop3", "size_bytes": 1}]});
        assert_eq!(difference(Some(&old), Some(&new), &d), None);
        assert_eq!(difference(Some(&new), Some(&old), &d), None);
        assert_eq!(difference(None, Some(&new), &d), None);
    }

    #[test]
    fn the_summary_names_what_is_there_and_says_when_cpufreq_is_absent() {
        let t = HostTuning {
            governor: Some("performance".into()),
            cpufreq_driver: Some("intel_pstate".into()),
            boost: Some(false),
            thp_enabled: Some("always".into()),
            thp_defrag: Some("madvise".into()),
            dirty_ratio: Some(20),
            dirty_background_ratio: Some(10),
            ..Default::default()
        };
        assert_eq!(
            summary(&t),
            "cpufreq intel_pstate, governor performance, boost off, THP always/madvise, dirty 20%/10%"
        );
        let vm = HostTuning { swappiness: Some(60), ..Default::default() };
        assert_eq!(summary(&vm), "no cpufreq, swappiness 60");
    }
}
