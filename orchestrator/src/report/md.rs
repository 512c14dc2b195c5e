//! `report --format md`: the run's summary as markdown tables (one per play), then
//! what a reader should be wary of — for a pull request or a CI summary.

use crate::human::{describe_params, fmt_num};
use crate::status::CellStatus;
use serde_json::Value as Json;

/// From the JSON report's model (`report::json::build`).
pub fn render(model: &Json) -> String {
    let run = &model["run"];
    let mut out = format!(
        "## benchrig run {} — {}\n\n`{}` · started {} · {}\n",
        run["id"],
        text(&run["status"]),
        text(&run["playbook"]),
        text(&run["started"]),
        hosts_line(model)
    );
    let cells = model["cells"].as_array().cloned().unwrap_or_default();
    for play in plays(&cells) {
        out += &format!("\n### {}\n", esc(play));
        if let Some(line) = super::fresh_line(cell_steps(&cells, play)) {
            out += &format!("\n{}\n", esc(&line));
        }
        out += "\n| host | cell | step | metric | n | mean | ±CI95 | unit | status |\n|---|---|---|---|--:|--:|--:|---|---|\n";
        for r in table_rows(cells.iter().filter(|c| c["play"] == play)) {
            let row = [&r.host, &r.cell, &r.step, &r.metric, &r.n, &r.mean, &r.ci, &r.unit, &r.status];
            out += &format!("| {} |\n", row.map(|x| esc(x)).join(" | "));
        }
        let monitors = super::monitor_lines(cells.iter().filter(|c| c["play"] == play));
        if !monitors.is_empty() {
            out += "\nWhat the monitors saw (means over repetitions):\n\n";
            for line in monitors {
                out += &format!("- {}\n", esc(&line));
            }
        }
    }
    let attempts = super::attempt_lines(&model["attempts"]);
    if !attempts.is_empty() {
        out += "\n### Attempts\n\n";
        for a in attempts {
            out += &format!("- {}\n", esc(&a));
        }
    }
    let warnings = warnings(model);
    if !warnings.is_empty() {
        out += "\n### Warnings\n\n";
        for w in warnings {
            out += &format!("- {}\n", esc(&w.text));
        }
    }
    out
}

/// A line of a report's table: one metric of a cell (or a cell that has none).
pub struct TableRow {
    pub host: String,
    pub cell: String,
    /// The cell's parameters, axis by axis.
    pub params: Json,
    pub step: String,
    pub metric: String,
    pub n: String,
    pub mean: String,
    /// Half the CI95's width.
    pub ci: String,
    pub sd: String,
    pub unit: String,
    pub status: String,
    pub ok: bool,
}

pub fn table_rows<'a>(cells: impl Iterator<Item = &'a Json>) -> Vec<TableRow> {
    let mut out = Vec::new();
    for c in cells {
        let row = |step: &str, metric: &str, m: Option<&Json>| {
            let num = |k: &str| m.and_then(|m| m[k].as_f64()).map(fmt_num).unwrap_or_else(|| "-".into());
            TableRow {
                host: text(&c["host"]).to_string(),
                cell: describe_params(&c["params"]),
                params: c["params"].clone(),
                step: step.to_string(),
                metric: metric.to_string(),
                n: m.map(|m| m["n"].to_string()).unwrap_or_else(|| "-".into()),
                mean: num("mean"),
                ci: m.and_then(ci_half).map(fmt_num).unwrap_or_else(|| "-".into()),
                sd: num("sd"),
                unit: m.map(|m| text(&m["unit"]).to_string()).unwrap_or_else(|| "-".into()),
                status: status(c),
                ok: CellStatus::of_json(&c["status"]) == Some(CellStatus::Ok),
            }
        };
        let metrics = c["metrics"].as_array().cloned().unwrap_or_default();
        if metrics.is_empty() {
            out.push(row("-", "-", None));
        }
        for m in &metrics {
            out.push(row(c["step"].as_str().unwrap_or("-"), text(&m["name"]), Some(m)));
        }
    }
    out
}

pub fn text(v: &Json) -> &str {
    v.as_str().unwrap_or_default()
}

/// The stored steps of each cell of `play`, once a cell (the model has an
/// entry per cell and measured step).
pub fn cell_steps<'a>(cells: &'a [Json], play: &str) -> Vec<Option<&'a Json>> {
    let mut seen = Vec::new();
    let mut out = Vec::new();
    for c in cells.iter().filter(|c| c["play"] == play) {
        if !seen.contains(&&c["cell_id"]) {
            seen.push(&c["cell_id"]);
            out.push(Some(&c["steps"]));
        }
    }
    out
}

/// The plays of a report's cells, in order.
pub fn plays(cells: &[Json]) -> Vec<&str> {
    let mut out: Vec<&str> = Vec::new();
    for c in cells {
        if !out.contains(&text(&c["play"])) {
            out.push(text(&c["play"]));
        }
    }
    out
}

/// `ok`, or the status with its reason.
pub fn status(c: &Json) -> String {
    match c["reason"].as_str() {
        Some(r) => format!("{}: {r}", text(&c["status"])),
        None => text(&c["status"]).to_string(),
    }
}

/// Half the width of a metric's CI95.
pub fn ci_half(m: &Json) -> Option<f64> {
    let ci = m["ci95"].as_array()?;
    Some((ci.get(1)?.as_f64()? - ci.first()?.as_f64()?) / 2.0)
}

/// The kinds of warning a report gives, in the order a reader wants them.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum WarningKind {
    /// The kernel logged an I/O error, BUG, Oops, WARNING or hung task during the cell.
    KernelLog,
    /// A cell that did not end ok (and has no metrics to show it).
    NotOk,
    /// A fio job whose steady state (`ss`) was not attained.
    SteadyState,
    FewSamples,
    HighCv,
    Outliers,
}

impl WarningKind {
    pub const ALL: [WarningKind; 6] = [
        WarningKind::KernelLog,
        WarningKind::NotOk,
        WarningKind::SteadyState,
        WarningKind::FewSamples,
        WarningKind::HighCv,
        WarningKind::Outliers,
    ];

    /// What the kind means, as a heading over its list.
    pub fn title(self) -> String {
        match self {
            WarningKind::KernelLog => "kernel log: I/O errors, BUG, Oops, WARNING, hung tasks during a cell".into(),
            WarningKind::NotOk => "cells that did not end ok".into(),
            WarningKind::SteadyState => "fio steady state not attained".into(),
            WarningKind::FewSamples => format!("fewer than {} samples", crate::stats::FEW),
            WarningKind::HighCv => "high variation (CV over 10%)".into(),
            WarningKind::Outliers => "outlier samples (by modified z-score, kept)".into(),
        }
    }
}

/// One thing a reader should be wary of, and its kind.
#[derive(Clone, Debug, PartialEq)]
pub struct Warning {
    pub kind: WarningKind,
    pub text: String,
}

/// What a reader should be wary of: cells not ok (with why), fewer than 3
/// samples, a CV over 10%, outliers (kept, by modified z-score).
pub fn warnings(model: &Json) -> Vec<Warning> {
    let mut out = Vec::new();
    let mut add = |kind, text| out.push(Warning { kind, text });
    let mut logged = std::collections::BTreeSet::new();
    for c in model["cells"].as_array().into_iter().flatten() {
        let (host, cell) = (text(&c["host"]), describe_params(&c["params"]));
        // A cell is an entry per step: its log once.
        if logged.insert(c["cell_id"].as_i64()) {
            for l in c["kernel_log"].as_array().into_iter().flatten() {
                let kind = serde_json::from_value::<benchrig_wire::kernel_log::KernelLogKind>(l["kind"].clone())
                    .map_or("?", |k| k.word());
                add(
                    WarningKind::KernelLog,
                    format!("{host} {cell}: {kind} on {}: {}", text(&l["host"]), text(&l["text"])),
                );
            }
        }
        let metrics = c["metrics"].as_array().cloned().unwrap_or_default();
        if metrics.is_empty() && CellStatus::of_json(&c["status"]) != Some(CellStatus::Ok) {
            add(WarningKind::NotOk, format!("{host} {cell}: {}", status(c)));
        }
        for u in c["steady_state_not_attained"].as_array().into_iter().flatten() {
            let reps: Vec<String> = u["repetitions"].as_array().into_iter().flatten().map(|r| r.to_string()).collect();
            add(
                WarningKind::SteadyState,
                format!(
                    "{host} {cell} {}: fio job `{}` did not attain steady state ({}) in repetition(s) {}",
                    c["step"].as_str().unwrap_or("-"),
                    text(&u["job"]),
                    text(&u["ss"]),
                    reps.join(", ")
                ),
            );
        }
        for m in &metrics {
            let what = format!("{host} {cell} {} {}", c["step"].as_str().unwrap_or("-"), text(&m["name"]));
            if m["n"].as_u64().unwrap_or(0) < crate::stats::FEW as u64 {
                add(WarningKind::FewSamples, format!("{what}: n={} (fewer than {})", m["n"], crate::stats::FEW));
            }
            if let Some(cv) = m["cv"].as_f64().filter(|cv| *cv > 0.10) {
                add(WarningKind::HighCv, format!("{what}: CV {:.0}%", cv * 100.0));
            }
            if let Some(o) = m["outliers"].as_array().filter(|o| !o.is_empty()) {
                let reps: Vec<String> = o.iter().filter_map(Json::as_u64).map(|i| (i + 1).to_string()).collect();
                add(
                    WarningKind::Outliers,
                    format!("{what}: outlier sample(s) {} by modified z-score (kept)", reps.join(", ")),
                );
            }
        }
    }
    out
}

/// The warnings by kind, in `WarningKind::ALL`'s order, kinds with none left out.
pub fn by_kind(all: &[Warning]) -> Vec<(WarningKind, Vec<&str>)> {
    WarningKind::ALL
        .iter()
        .map(|&k| (k, all.iter().filter(|w| w.kind == k).map(|w| w.text.as_str()).collect::<Vec<_>>()))
        .filter(|(_, list)| !list.is_empty())
        .collect()
}

fn hosts_line(model: &Json) -> String {
    let hosts = model["hosts"].as_array().cloned().unwrap_or_default();
    let items: Vec<String> = hosts
        .iter()
        .map(|h| {
            let f = &h["facts"];
            let system = crate::system_state::summary_of(f).map(|s| format!("; {s}")).unwrap_or_default();
            format!(
                "{} ({} {}, kernel {}{system})",
                text(&h["name"]),
                text(&f["distribution"]["id"]),
                text(&f["arch"]),
                text(&f["kernel"]["release"])
            )
        })
        .collect();
    format!("hosts: {}", items.join(", "))
}

fn esc(s: &str) -> String {
    s.replace('|', "\\|").replace('\n', " ")
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn warnings_are_grouped_by_kind_in_the_order_a_reader_wants() {
        let m = |n: u64, cv: f64, outliers: Json| json!({"name": "speed", "n": n, "cv": cv, "outliers": outliers});
        let model = json!({"cells": [
            {"host": "a", "params": {"x": 1}, "step": "s", "status": "ok", "metrics": [m(2, 0.5, json!([1]))]},
            {"host": "b", "params": {"x": 2}, "step": "s", "status": "ok", "metrics": [m(5, 0.2, json!([]))]},
            {"host": "c", "params": {}, "step": null, "status": "failed", "reason": "mkfs", "metrics": []},
            // Two steps of one cell whose kernel logged an I/O error: flagged once, first.
            {"cell_id": 7, "host": "d", "params": {}, "step": "s", "status": "ok", "metrics": [],
             "kernel_log": [{"host": "d", "kind": "io_error", "text": "critical space allocation error, dev loop0, sector 8"}]},
            {"cell_id": 7, "host": "d", "params": {}, "step": "t", "status": "ok", "metrics": [],
             "kernel_log": [{"host": "d", "kind": "io_error", "text": "critical space allocation error, dev loop0, sector 8"}]},
            {"host": "d", "params": {}, "step": "f", "status": "ok", "metrics": [],
             "steady_state_not_attained": [{"job": "seq", "ss": "iops_slope:20.000000%", "repetitions": [2, 3]}]},
        ]});
        let all = warnings(&model);
        assert_eq!(all.len(), 7);
        let grouped = by_kind(&all);
        let kinds: Vec<WarningKind> = grouped.iter().map(|(k, _)| *k).collect();
        use WarningKind::*;
        assert_eq!(kinds, [KernelLog, NotOk, SteadyState, FewSamples, HighCv, Outliers]);
        assert_eq!(grouped[0].1, ["d -: I/O error on d: critical space allocation error, dev loop0, sector 8"]);
        assert_eq!(grouped[1].1, ["c -: failed: mkfs"]);
        assert_eq!(
            grouped[2].1,
            ["d - f: fio job `seq` did not attain steady state (iops_slope:20.000000%) in repetition(s) 2, 3"]
        );
        assert_eq!(grouped[4].1, ["a x=1 s speed: CV 50%", "b x=2 s speed: CV 20%"]);
    }
}
