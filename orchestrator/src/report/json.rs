//! `benchrig report RUN --format json`: the run, its hosts with their facts, and one
//! entry per cell and measured step with every raw sample and its summary.

use crate::monitors::{explain, summary};
use crate::stats::Summary;
use crate::store::{SampleRow, SeriesRow, Store, StoreError};
use benchrig_wire::steps::Better;
use serde_json::{json, Value as Json};
use std::collections::HashMap;

pub fn build(store: &Store, run: i64) -> Result<Json, StoreError> {
    let r = store.resolve_run(&run.to_string())?;
    let host_rows = store.hosts(run)?;
    let share_of: HashMap<String, f64> =
        host_rows.iter().map(|h| (h.name.clone(), explain::cpu_share_of_facts(h.facts.as_ref()))).collect();
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
    // Each step's monitor summaries and series, by (cell, step index).
    let (monitor_rows, series_rows) = (store.monitor_samples(run)?, store.monitor_series(run)?);
    let mut monitors_of: HashMap<(i64, i64), Vec<&SampleRow>> = HashMap::new();
    for m in &monitor_rows {
        monitors_of.entry((m.cell_id, m.step_index)).or_default().push(m);
    }
    let mut series_of: HashMap<(i64, i64), Vec<&SeriesRow>> = HashMap::new();
    for x in &series_rows {
        series_of.entry((x.cell_id, x.step_index)).or_default().push(x);
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
                "kernel": super::cell_notes::kernel(c.info.as_ref()),
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
            let mut metrics: Vec<(String, String, Better, Vec<f64>)> = Vec::new();
            for s in mine.iter().filter(|s| s.step_index == index) {
                match metrics.iter_mut().find(|m| m.0 == s.metric) {
                    Some(m) => m.3.push(s.value),
                    None => metrics.push((s.metric.clone(), s.unit.clone(), s.better, vec![s.value])),
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
            let share = share_of.get(&c.host).copied().unwrap_or(100.0);
            entry["monitors"] = step_monitors(
                monitors_of.get(&(c.id, index)).map(Vec::as_slice).unwrap_or_default(),
                series_of.get(&(c.id, index)).map(Vec::as_slice).unwrap_or_default(),
                share,
            );
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

/// What the monitors saw during one measured step: each summary with its
/// value per repetition and their mean (never judged: no CI, no flags), the
/// one-line headline, and each repetition's series. `null` when the step
/// ran without monitors.
fn step_monitors(metrics: &[&SampleRow], series: &[&SeriesRow], cpu_share_pct: f64) -> Json {
    if metrics.is_empty() && series.is_empty() {
        return Json::Null;
    }
    let mut by_name: Vec<(&str, &str, Vec<f64>)> = Vec::new();
    for m in metrics {
        match by_name.iter_mut().find(|(n, _, _)| *n == m.metric) {
            Some(e) => e.2.push(m.value),
            None => by_name.push((&m.metric, &m.unit, vec![m.value])),
        }
    }
    let figures = summary::from_stored(by_name.iter().map(|(n, _, v)| (*n, v.as_slice())));
    json!({
        "metrics": by_name.iter().map(|(name, unit, values)| json!({
            "name": name, "unit": unit, "samples": values,
            "mean": values.iter().sum::<f64>() / values.len() as f64,
        })).collect::<Vec<_>>(),
        "headline": explain::headline(&figures, cpu_share_pct),
        "series": series.iter().map(|x| json!({
            "repetition": x.repetition, "attempt": x.attempt, "series": x.series,
        })).collect::<Vec<_>>(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::testing::{cell, places};
    use crate::store::{NewRun, StepRef};
    use benchrig_wire::steps::{Better, Metric, StepOutput};

    #[test]
    fn each_measured_step_carries_its_monitors_and_a_step_without_has_none() {
        let places = places();
        let s = Store::open(&places.urls[0]).unwrap();
        let ev = json!({});
        let nr = NewRun {
            name: None,
            playbook: "p",
            playbook_text: "-",
            inventory: "i",
            limit: None,
            extra_vars: &ev,
            options: &ev,
        };
        let run = s.create_run(&nr).unwrap();
        s.set_host(run, "h1", crate::status::HostStatus::Ok, None).unwrap();
        let c = s.add_cell(run, &cell("0:a=1", "h1", 2)).unwrap();
        let metric = Metric { name: "throughput".into(), value: 40.0, unit: "MB/s".into(), better: Better::Higher };
        let series = crate::monitors::summary::tests::series();
        for rep in 1..=2 {
            let out = StepOutput {
                metrics: vec![metric.clone()],
                monitors: Some(Box::new(series.clone())),
                ..Default::default()
            };
            s.add_samples(
                c,
                &StepRef { index: 0, name: "read", workload: "seq_read", repetition: rep, attempt: 1 },
                &out,
            )
            .unwrap();
            let bare = StepOutput { metrics: vec![metric.clone()], ..Default::default() };
            s.add_samples(
                c,
                &StepRef { index: 1, name: "write", workload: "seq_write", repetition: rep, attempt: 1 },
                &bare,
            )
            .unwrap();
        }
        let model = build(&s, run).unwrap();
        let cells = model["cells"].as_array().unwrap();
        assert_eq!(cells.len(), 2, "one entry per measured step");
        let m = &cells[0]["monitors"];
        let names: Vec<&str> =
            cells[0]["metrics"].as_array().unwrap().iter().map(|x| x["name"].as_str().unwrap()).collect();
        assert_eq!(names, ["throughput"], "monitor summaries are not the step's metrics");
        let util = m["metrics"].as_array().unwrap().iter().find(|x| x["name"] == "%util loop3").unwrap();
        assert_eq!((util["samples"].clone(), util["mean"].clone()), (json!([90.0, 90.0]), json!(90.0)));
        assert_eq!(
            m["headline"],
            "loop3: %util 90%, rMB/s 16.0, r_await 5.0 ms; CPU user+sys 5%, iowait 36% → disk-bound"
        );
        let reps: Vec<i64> =
            m["series"].as_array().unwrap().iter().map(|x| x["repetition"].as_i64().unwrap()).collect();
        assert_eq!(reps, [1, 2]);
        assert_eq!(m["series"][0]["series"]["devices"][0]["util_pct"], json!([100.0, 100.0, 50.0]));
        assert_eq!(cells[1]["monitors"], Json::Null, "a step run without monitors");
        let md = super::super::md::render(&model);
        let lines: Vec<&str> = md.lines().filter(|l| l.contains("%util")).collect();
        assert_eq!(lines.len(), 1, "a line for the monitored step alone:\n{md}");
        assert!(lines[0].starts_with("- h1 · ") && lines[0].contains(" · read: loop3: %util 90%"), "{md}");
    }
}
