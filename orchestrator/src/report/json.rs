//! `benchrig report RUN -f json`: the run, its hosts with their facts, and one
//! entry per cell and measured step with every raw sample and its summary.

use crate::stats::Summary;
use crate::store::{Store, StoreError};
use serde_json::{json, Value as Json};
use std::collections::HashMap;

pub fn build(store: &Store, run: i64) -> Result<Json, StoreError> {
    let r = store.resolve_run(&run.to_string())?;
    let host_rows = store.hosts(run)?;
    // Hosts in inventory order (as the run listed them), each host's cells in plan order.
    let order: Vec<String> = host_rows.iter().map(|h| h.name.clone()).collect();
    let hosts: Vec<Json> = host_rows
        .into_iter()
        .map(|h| json!({"name": h.name, "status": h.status, "reason": h.reason, "facts": h.facts}))
        .collect();
    let samples = store.samples(run)?;
    let artifacts = store.artifacts(run)?;
    let kernel_log = store.kernel_log(run)?;
    let mut stored = store.cells(run)?;
    let position = super::host_positions(&order);
    stored.sort_by_key(|c| (position.get(c.host.as_str()).copied(), c.id));
    let times = super::time::per_host(&order, &stored, &samples);
    // Each cell's samples and artifacts in stored order: one pass, not one per cell.
    let mut samples_of: HashMap<i64, Vec<_>> = HashMap::new();
    for s in &samples {
        samples_of.entry(s.cell_id).or_default().push(s);
    }
    let mut artifacts_of: HashMap<i64, Vec<Json>> = HashMap::new();
    for a in &artifacts {
        artifacts_of.entry(a.cell_id).or_default().push(json!({"name": a.name, "content": a.content}));
    }
    let mut cells = Vec::new();
    for c in stored {
        let mine = samples_of.remove(&c.id).unwrap_or_default();
        let mut steps: Vec<(i64, String, String)> = Vec::new();
        for s in &mine {
            if !steps.iter().any(|(i, _, _)| *i == s.step_index) {
                steps.push((s.step_index, s.step.clone(), s.workload.clone()));
            }
        }
        let base = |id: String, step: Json, workload: Json, metrics: Vec<Json>| {
            json!({
                "id": id, "cell_id": c.id, "host": c.host, "play": c.play, "step": step, "workload": workload,
                "params": c.params, "repeat": c.repeat, "status": c.status, "reason": c.reason, "info": c.info, "steps": c.steps,
                "artifacts": artifacts_of.get(&c.id).cloned().unwrap_or_default(),
                "tune": super::cell_notes::tuned(c.info.as_ref()),
                "kernel_log": super::cell_notes::kernel_log(&kernel_log, c.id).iter()
                    .map(|(h, l)| json!({"host": h, "kind": l.kind, "usec": l.usec, "seq": l.seq, "text": l.text}))
                    .collect::<Vec<_>>(),
                "metrics": metrics,
            })
        };
        if steps.is_empty() {
            cells.push(base(c.id.to_string(), Json::Null, Json::Null, vec![]));
            continue;
        }
        for (index, step, workload) in steps {
            let mut metrics: Vec<(String, String, String, Vec<f64>)> = Vec::new();
            for s in mine.iter().filter(|s| s.step_index == index) {
                match metrics.iter_mut().find(|m| m.0 == s.metric) {
                    Some(m) => m.3.push(s.value),
                    None => metrics.push((s.metric.clone(), s.unit.clone(), s.better.clone(), vec![s.value])),
                }
            }
            let unsteady = super::steady_state::not_attained(mine.iter().copied().filter(|s| s.step_index == index));
            let metrics = metrics
                .into_iter()
                .map(|(name, unit, better, values)| {
                    let s = Summary::of(&values).expect("non-empty");
                    let mut flags = if s.few() { vec![json!("n<3")] } else { vec![] };
                    if unsteady.iter().any(|u| u.covers(&name)) {
                        flags.push(json!("steady state not attained"));
                    }
                    json!({
                        "name": name, "unit": unit, "better": better, "samples": values,
                        "n": s.n, "mean": s.mean, "sd": s.sd, "median": s.median, "min": s.min, "max": s.max,
                        "ci95": s.ci95.map(|(lo, hi)| json!([lo, hi])),
                        "mad": s.mad, "cv": s.cv,
                        // Indexes into `samples`, flagged by modified z-score, never dropped.
                        "outliers": s.outliers,
                        "flags": flags,
                    })
                })
                .collect();
            let mut entry = base(format!("{}.{}", c.id, index), json!(step), json!(workload), metrics);
            if !unsteady.is_empty() {
                // fio jobs whose steady state (`ss`) was not attained, by repetition.
                entry["steady_state_not_attained"] = unsteady.iter().map(|u| u.to_json()).collect();
            }
            cells.push(entry);
        }
    }
    Ok(json!({
        "run": {"id": r.id, "name": r.name, "playbook": r.playbook, "started": r.started, "finished": r.finished, "status": r.status},
        "hosts": hosts,
        "cells": cells,
        // The first, then one per `--resume`: when, by whom, on which hosts.
        "attempts": store.attempts(run)?,
        // Per host: busy, inside measured steps, and the rest (setup, teardown, between).
        "time": times.iter().map(|t| json!({
            "host": t.host, "busy_s": t.busy_s, "measured_s": t.measured_s, "outside_s": t.outside_s(),
        })).collect::<Vec<_>>(),
    }))
}
