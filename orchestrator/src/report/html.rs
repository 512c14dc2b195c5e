//! `report -f html`: one self-contained file (inline style, inline SVG, no
//! script, no font): per play a summary table and a chart per measured
//! step and metric — bars with CI95 error bars per cell and host, or lines
//! when the play has one numeric axis (device count, file size) — then
//! every host's configuration and the warnings.

use super::charts::{self, Bar, Series};
use super::limits_text;
use super::md::{plays, table_rows, text, warnings};
use crate::human::describe_params;
use benchrig_wire::facts::{Facts, Limits};
use serde_json::Value as Json;

const STYLE: &str = "body{font-family:system-ui,sans-serif;margin:2em;color:#222}\
table{border-collapse:collapse;margin:1em 0}td,th{border:1px solid #ccc;padding:3px 8px;text-align:left}\
td.n{text-align:right;font-variant-numeric:tabular-nums}th{background:#f3f3f3}\
.bad{color:#b00}.warn{background:#fff6e0;padding:.5em 1em}figure{margin:1em 0}";

pub fn render(model: &Json) -> String {
    let run = &model["run"];
    let title = format!("benchrig run {} — {}", run["id"], text(&run["status"]));
    let mut out = format!(
        "<!doctype html>\n<html><head><meta charset=\"utf-8\"><title>{}</title><style>{STYLE}</style></head><body>\n<h1>{}</h1>\n<p><code>{}</code> · started {} · finished {}</p>\n",
        esc(&title),
        esc(&title),
        esc(text(&run["playbook"])),
        esc(text(&run["started"])),
        esc(run["finished"].as_str().unwrap_or("-"))
    );
    let warnings = warnings(model);
    if !warnings.is_empty() {
        out += "<div class=\"warn\"><h2>Warnings</h2><ul>\n";
        for w in &warnings {
            out += &format!("<li>{}</li>\n", esc(w));
        }
        out += "</ul></div>\n";
    }
    let cells = model["cells"].as_array().cloned().unwrap_or_default();
    for play in plays(&cells) {
        let mine: Vec<&Json> = cells.iter().filter(|c| c["play"] == play).collect();
        out += &format!("<h2>{}</h2>\n", esc(play));
        out += &table(&mine);
        out += &play_charts(&mine);
    }
    out += &hosts(model);
    let attempts = super::attempt_lines(&model["attempts"]);
    if !attempts.is_empty() {
        out += "<h2>Attempts</h2><ul>\n";
        for a in &attempts {
            out += &format!("<li>{}</li>\n", esc(a));
        }
        out += "</ul>\n";
    }
    out += "</body></html>\n";
    out
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
                &format!("<td>{}</td>", if v.is_null() { String::new() } else { esc(&crate::matrix::scalar_text(v)) });
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

/// The one axis whose values are all numbers and vary, if exactly one does.
fn numeric_axis(cells: &[&Json]) -> Option<String> {
    let keys = axes(cells);
    let numeric: Vec<String> = keys
        .into_iter()
        .filter(|k| {
            let vals: Vec<Option<f64>> = cells.iter().map(|c| number(&c["params"][k.as_str()])).collect();
            vals.iter().all(Option::is_some) && {
                let mut v: Vec<f64> = vals.into_iter().flatten().collect();
                v.dedup();
                v.len() > 1
            }
        })
        .collect();
    (numeric.len() == 1).then(|| numeric[0].clone())
}

fn number(v: &Json) -> Option<f64> {
    v.as_f64().or_else(|| v.as_str()?.parse().ok())
}

/// A chart for every (step, metric) the play measured.
fn play_charts(cells: &[&Json]) -> String {
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
    let axis = numeric_axis(cells);
    let mut out = String::new();
    for (step, metric, unit) in keys {
        let points: Vec<(&Json, &Json)> = cells
            .iter()
            .filter(|c| c["step"].as_str() == Some(step.as_str()))
            .filter_map(|c| Some((*c, c["metrics"].as_array()?.iter().find(|m| m["name"] == metric.as_str())?)))
            .collect();
        let title = format!("{step}: {metric}");
        let ci = |m: &Json| {
            let v = m["ci95"].as_array()?;
            Some((v.first()?.as_f64()?, v.get(1)?.as_f64()?))
        };
        let svg = match &axis {
            Some(x) => {
                let mut series: Vec<Series> = Vec::new();
                for (c, m) in &points {
                    let mut rest = c["params"].clone();
                    if let Some(o) = rest.as_object_mut() {
                        o.remove(x);
                    }
                    let name = match describe_params(&rest).as_str() {
                        "-" => text(&c["host"]).to_string(),
                        others => format!("{} {others}", text(&c["host"])),
                    };
                    let point =
                        (number(&c["params"][x.as_str()]).unwrap_or(0.0), m["mean"].as_f64().unwrap_or(0.0), ci(m));
                    match series.iter_mut().find(|s| s.name == name) {
                        Some(s) => s.points.push(point),
                        None => series.push(Series { name, points: vec![point] }),
                    }
                }
                for s in &mut series {
                    s.points.sort_by(|a, b| a.0.total_cmp(&b.0));
                }
                charts::lines(&title, x, &unit, &series)
            }
            None => {
                let bars: Vec<Bar> = points
                    .iter()
                    .map(|(c, m)| Bar {
                        label: format!("{} {}", text(&c["host"]), describe_params(&c["params"])),
                        mean: m["mean"].as_f64().unwrap_or(0.0),
                        ci: ci(m),
                    })
                    .collect();
                charts::bars(&title, &unit, &bars)
            }
        };
        out += &format!("<figure>{svg}<figcaption>{}</figcaption></figure>\n", esc(&title));
    }
    out
}

fn hosts(model: &Json) -> String {
    let mut out = String::from(
        "<h2>Hosts</h2>\n<table><tr><th>host</th><th>status</th><th>arch</th><th>kernel</th><th>distribution</th><th>CPU</th><th>memory</th><th>limits</th><th>disks</th></tr>\n",
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
            "<tr><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{} {}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td></tr>\n",
            esc(text(&h["name"])),
            esc(text(&h["status"])),
            esc(text(&f["arch"])),
            esc(text(&f["kernel"]["release"])),
            esc(text(&f["distribution"]["id"])),
            esc(text(&f["distribution"]["version_id"])),
            esc(&cpu),
            esc(&mem),
            esc(&limits(f).map(|l| limits_text(&l)).unwrap_or_else(|| "?".into())),
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

fn esc(s: &str) -> String {
    s.replace('&', "&amp;").replace('<', "&lt;").replace('>', "&gt;").replace('"', "&quot;")
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

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
