//! Reports of a stored run: JSON (the model), markdown from it, CSV (a row a
//! sample) and JUnit (a test case a cell) from the store.

pub mod charts;
pub mod csv;
pub mod html;
pub mod json;
pub mod junit;
pub mod md;

use crate::human::{cpus, mem};
use benchrig_wire::facts::Limits;

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
