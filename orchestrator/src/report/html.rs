//! `report --format html`: one self-contained file (inline style, inline SVG, no
//! script, no font, a CSP that forbids every request). It leads with the
//! results drawn as the experiment was planned: per play a figure per
//! measured step and metric, shaped by the play's matrix (`shape`: x one
//! axis, colour another with its legend, a panel per host), CI95 whiskers,
//! the caption inside its figure. Then the tables, the warnings folded by
//! kind, every host's configuration and the attempts.

use super::charts::{self, Mean};
use super::limits_text;
use super::md::{by_kind, cell_steps, plays, table_rows, text, warnings};
use super::page::{self, esc};
use super::shape::Shape;
use benchrig_wire::facts::{Facts, Limits};
use serde_json::Value as Json;

pub fn render(model: &Json) -> String {
    let run = &model["run"];
    let name = run["name"].as_str().map(|n| format!(" {n}")).unwrap_or_default();
    let title = format!("benchrig run {}{name} — {}", run["id"], text(&run["status"]));
    let hosts_list: Vec<&str> = model["hosts"].as_array().into_iter().flatten().map(|h| text(&h["name"])).collect();
    let mut out = page::head(&title);
    out += &format!(
        "<p class=\"meta\"><code>{}</code> · started {} · finished {} · hosts: {}</p>\n",
        esc(text(&run["playbook"])),
        esc(&page::when(text(&run["started"]))),
        esc(&run["finished"].as_str().map_or("-".into(), page::when)),
        esc(&hosts_list.join(", "))
    );
    let cells = model["cells"].as_array().cloned().unwrap_or_default();
    let plays = plays(&cells);
    for play in &plays {
        let mine: Vec<&Json> = cells.iter().filter(|c| c["play"] == *play).collect();
        out += &format!("<h2>{}</h2>\n", esc(play));
        out += &play_charts(&mine);
    }
    out += "<h2>Results</h2>\n";
    for play in &plays {
        let mine: Vec<&Json> = cells.iter().filter(|c| c["play"] == *play).collect();
        out += &format!("<h3>{}</h3>\n", esc(play));
        if let Some(line) = super::fresh_line(cell_steps(&cells, play)) {
            out += &format!("<p class=\"meta\">{}</p>\n", esc(&line));
        }
        out += &table(&mine);
        out += &timelines(&mine);
    }
    let warnings = warnings(model);
    out += &page::warnings(by_kind(&warnings).into_iter().map(|(k, list)| (k.title(), list)));
    out += &hosts(model);
    let attempts = super::attempt_lines(&model["attempts"]);
    if !attempts.is_empty() {
        out += "<h2>Attempts</h2><ul>\n";
        for a in &attempts {
            out += &format!("<li>{}</li>\n", esc(a));
        }
        out += "</ul>\n";
    }
    out + page::TAIL
}

/// The play's summary, a column per matrix axis (and role), so it reads
/// like the experiment's table.
fn table(cells: &[&Json]) -> String {
    let axes = axes(cells);
    let mut out = String::from("<table><tr><th>host</th>");
    for a in &axes {
        out += &format!("<th>{}</th>", esc(a));
    }
    out += "<th>step</th><th>metric</th><th>n</th><th>mean</th><th>±CI95</th><th>sd</th><th>unit</th><th>status</th></tr>\n";
    for r in table_rows(cells.iter().copied()) {
        let class = if r.ok { "" } else { " class=\"bad\"" };
        out += &format!("<tr><td>{}</td>", esc(&r.host));
        for a in &axes {
            let v = &r.params[a.as_str()];
            out +=
                &format!("<td>{}</td>", if v.is_null() { String::new() } else { esc(&crate::human::scalar_text(v)) });
        }
        out += &format!(
            "<td>{}</td><td>{}</td><td class=\"n\">{}</td><td class=\"n\">{}</td><td class=\"n\">{}</td><td class=\"n\">{}</td><td>{}</td><td{class}>{}</td></tr>\n",
            esc(&r.step),
            esc(&r.metric),
            esc(&r.n),
            esc(&r.mean),
            esc(&r.ci),
            esc(&r.sd),
            esc(&r.unit),
            esc(&r.status)
        );
    }
    out + "</table>\n"
}

/// Under the play's table, each measured step that ran with monitors: its
/// headline, folded open to the timeline of its first repetition (open
/// when the play has few, so a small run shows them at once).
fn timelines(cells: &[&Json]) -> String {
    let monitored: Vec<(&Json, benchrig_wire::monitor::MonitorSeries)> = cells
        .iter()
        .filter_map(|c| {
            let first = c["monitors"]["series"].as_array()?.first()?;
            Some((*c, serde_json::from_value(first["series"].clone()).ok()?))
        })
        .collect();
    if monitored.is_empty() {
        return String::new();
    }
    let open = if monitored.len() <= 4 { " open" } else { "" };
    let mut out = String::from("<h4>What the monitors saw</h4>\n");
    for (c, series) in &monitored {
        let step = c["step"].as_str().unwrap_or("-");
        let what = format!("{} · {} · {step}", text(&c["host"]), crate::human::describe_params(&c["params"]));
        let headline = c["monitors"]["headline"].as_str().map(|h| format!(": {h}")).unwrap_or_default();
        let caption = format!("{what}: repetition 1 over time (every {} ms)", series.interval_ms);
        out += &format!("<details{open}><summary>{}</summary>\n", esc(&format!("{what}{headline}")));
        out += &page::figure(&caption, None, &super::timeline::series_names(series), &super::timeline::chart(series));
        out += "</details>\n";
    }
    out
}

/// Every parameter name the play's cells have, in first-seen order.
fn axes(cells: &[&Json]) -> Vec<String> {
    let mut keys: Vec<String> = Vec::new();
    for c in cells {
        for k in c["params"].as_object().into_iter().flat_map(|m| m.keys()) {
            if !keys.contains(k) {
                keys.push(k.clone());
            }
        }
    }
    keys
}

/// Every (step, metric, unit) the play measured, in the order measured.
fn measured(cells: &[&Json]) -> Vec<(String, String, String)> {
    let mut keys: Vec<(String, String, String)> = Vec::new();
    for c in cells {
        for m in c["metrics"].as_array().into_iter().flatten() {
            let k = (
                c["step"].as_str().unwrap_or("-").to_string(),
                text(&m["name"]).to_string(),
                text(&m["unit"]).to_string(),
            );
            if !keys.contains(&k) {
                keys.push(k);
            }
        }
    }
    keys
}

/// A figure for every (step, metric) the play measured, all of the one
/// shape the play's matrix gives.
fn play_charts(cells: &[&Json]) -> String {
    let shape = Shape::of(cells);
    let mut out = String::new();
    for (step, metric, unit) in measured(cells) {
        let means: Vec<Mean> = cells
            .iter()
            .filter(|c| c["step"].as_str() == Some(step.as_str()))
            .filter_map(|c| {
                let m = c["metrics"].as_array()?.iter().find(|m| m["name"] == metric.as_str())?;
                let ci = m["ci95"].as_array().and_then(|v| Some((v.first()?.as_f64()?, v.get(1)?.as_f64()?)));
                Some(Mean { at: shape.place(c)?, mean: m["mean"].as_f64()?, ci })
            })
            .collect();
        let caption = caption(&shape, &step, &metric, &unit);
        let colour = shape.colour.as_ref().map(|a| a.name.as_str());
        out += &page::figure(&caption, colour, &shape.series(), &charts::chart(&shape, &unit, &means));
    }
    out
}

/// "write: MB/s (mean, CI95) by bs and fs, per host".
fn caption(shape: &Shape, step: &str, metric: &str, unit: &str) -> String {
    let unit = if unit.is_empty() { String::new() } else { format!(" ({unit})") };
    let mut by = format!("by {}", shape.x.name);
    if let Some(c) = &shape.colour {
        by += &format!(" and {}", c.name);
    }
    if !shape.panels.is_empty() {
        let names: Vec<&str> = shape.panels.iter().map(|a| a.name.as_str()).collect();
        by += &format!(", per {}", names.join(" × "));
    }
    format!("{step}: {metric}{unit} — mean with CI95, {by}")
}

fn hosts(model: &Json) -> String {
    let mut out = String::from(
        "<h2>Hosts</h2>\n<table><tr><th>host</th><th>status</th><th>arch</th><th>kernel</th><th>distribution</th><th>CPU</th><th>memory</th><th>limits</th><th>system</th><th>disks</th></tr>\n",
    );
    for h in model["hosts"].as_array().into_iter().flatten() {
        let f = &h["facts"];
        let disks: Vec<String> = f["block_devices"]
            .as_array()
            .into_iter()
            .flatten()
            // Unused loop and RAM devices say nothing about the host.
            .filter(|d| {
                let name = text(&d["name"]);
                !(name.starts_with("ram")
                    || name.starts_with("zram")
                    || (name.starts_with("loop") && d["backing_file"].is_null()))
            })
            .map(|d| {
                let kind = match d["rotational"].as_bool() {
                    Some(true) => "rotational",
                    Some(false) => "non-rotational",
                    None => "?",
                };
                format!(
                    "{} {} GB {} {}",
                    text(&d["name"]),
                    d["size_bytes"].as_u64().unwrap_or(0) / 1_000_000_000,
                    d["model"].as_str().unwrap_or(""),
                    kind
                )
            })
            .collect();
        let cpu = format!("{} × {}", f["cpu"]["count"], text(&f["cpu"]["model"]));
        let mem = f["memory"]["total_bytes"].as_u64().map(|b| format!("{} MiB", b >> 20)).unwrap_or_default();
        out += &format!(
            "<tr><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{} {}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td></tr>\n",
            esc(text(&h["name"])),
            esc(text(&h["status"])),
            esc(text(&f["arch"])),
            esc(text(&f["kernel"]["release"])),
            esc(text(&f["distribution"]["id"])),
            esc(text(&f["distribution"]["version_id"])),
            esc(&cpu),
            esc(&mem),
            esc(&limits(f).map(|l| limits_text(&l)).unwrap_or_else(|| "?".into())),
            esc(&crate::system_state::summary_of(f).unwrap_or_else(|| "?".into())),
            esc(&disks.join("; "))
        );
    }
    out + "</table>\n"
}

/// A host's limits from its stored facts; those an older agent knew when
/// the facts have no `limits`, `None` when nothing is known.
fn limits(f: &Json) -> Option<Limits> {
    match &f["limits"] {
        Json::Null => serde_json::from_value::<Facts>(f.clone()).ok()?.known_limits(),
        l => serde_json::from_value(l.clone()).ok(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_step_with_monitors_gets_its_timeline_under_the_table_and_one_without_none() {
        let series = serde_json::to_value(crate::monitors::summary::tests::series()).unwrap();
        let cell = |step: &str, monitors: Json| {
            json!({"play": "p", "host": "h1", "params": {"fs": "ext4"}, "step": step, "status": "ok",
                   "metrics": [{"name": "speed", "unit": "MB/s", "mean": 1.0, "n": 1, "samples": [1.0]}],
                   "monitors": monitors})
        };
        let monitors =
            json!({"headline": "loop3: %util 90% → disk-bound", "series": [{"repetition": 1, "series": series}]});
        let model =
            json!({"run": {"id": 1}, "hosts": [], "cells": [cell("read", monitors), cell("write", Json::Null)]});
        let html = render(&model);
        let section = &html[html.find("<h4>What the monitors saw</h4>").expect("a monitors section")..];
        assert!(section.starts_with("<h4>What the monitors saw</h4>\n<details open><summary>h1 · fs=ext4 · read: loop3: %util 90% → disk-bound</summary>"), "{section}");
        assert_eq!(section.matches("<figure>").count(), 1, "the monitored step alone");
        assert_eq!(section.matches("class=\"key\"").count(), 5, "a legend naming every series");
        assert!(section.contains("read: repetition 1 over time (every 1000 ms)"), "{section}");
        let none = render(&json!({"run": {"id": 1}, "hosts": [], "cells": [cell("write", Json::Null)]}));
        assert!(!none.contains("What the monitors saw"));
    }

    #[test]
    fn the_hosts_table_shows_each_hosts_limits() {
        let model = json!({"hosts": [
            {"name": "old", "status": "ok", "facts": {
                "cpu": {"count": 2, "model": "Xeon"}, "memory": {"total_bytes": 25275863040u64},
                "limits": {"memory_bytes": 536870912, "cpu_quota": 0.12, "online_cpus": 2,
                           "effective_memory_bytes": 536870912, "effective_cpus": 0.12}}},
            {"name": "fast1", "status": "ok", "facts": {
                "cpu": {"count": 2, "model": "Xeon"}, "memory": {"total_bytes": 25275863040u64},
                "limits": {"online_cpus": 2, "effective_memory_bytes": 25275863040u64, "effective_cpus": 2.0}}},
            {"name": "gone", "status": "unreachable", "facts": null},
        ]});
        let html = hosts(&model);
        assert!(html.contains("<th>memory</th><th>limits</th>"), "{html}");
        assert!(
            html.contains("<td>24104 MiB</td><td>memory 512 MiB, CPU quota 0.12 → effective 512 MiB, 0.12 CPU</td>"),
            "{html}"
        );
        assert!(html.contains("<td>24104 MiB</td><td>none</td>"), "{html}");
        assert!(html.contains("<td></td><td>?</td>"), "{html}");
    }
}
