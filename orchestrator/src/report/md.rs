//! `report -f md`: the run's summary as markdown tables (one per play), then
//! what a reader should be wary of — for a pull request or a CI summary.

use crate::summary::fmt_num;
use serde_json::Value as Json;

/// From the JSON report's model (`report::json::build`).
pub fn render(model: &Json) -> String {
    let run = &model["run"];
    let mut out = format!(
        "## benchrig run {} — {}\n\n`{}` · started {} · {}\n",
        run["id"],
        run["status"].as_str().unwrap_or("?"),
        run["playbook"].as_str().unwrap_or("?"),
        run["started"].as_str().unwrap_or("?"),
        hosts_line(model)
    );
    let cells = model["cells"].as_array().cloned().unwrap_or_default();
    let mut plays: Vec<&str> = Vec::new();
    for c in &cells {
        let p = c["play"].as_str().unwrap_or_default();
        if !plays.contains(&p) {
            plays.push(p);
        }
    }
    let mut warnings = Vec::new();
    for play in plays {
        out += &format!("\n### {}\n\n| host | cell | step | metric | n | mean | ±CI95 | unit | status |\n|---|---|---|---|--:|--:|--:|---|---|\n", esc(play));
        for c in cells.iter().filter(|c| c["play"] == play) {
            let cell = crate::summary::describe_params(&c["params"]);
            let host = c["host"].as_str().unwrap_or_default();
            let status = match c["reason"].as_str() {
                Some(r) => format!("{}: {r}", c["status"].as_str().unwrap_or_default()),
                None => c["status"].as_str().unwrap_or_default().to_string(),
            };
            let metrics = c["metrics"].as_array().cloned().unwrap_or_default();
            if metrics.is_empty() {
                out += &format!("| {} | {} | - | - | - | - | - | - | {} |\n", esc(host), esc(&cell), esc(&status));
                if c["status"] != "ok" {
                    warnings.push(format!("{host} {cell}: {status}"));
                }
            }
            for m in &metrics {
                let mean = m["mean"].as_f64().unwrap_or(f64::NAN);
                let half = m["ci95"].as_array().and_then(|ci| Some((ci[1].as_f64()? - ci[0].as_f64()?) / 2.0));
                out += &format!(
                    "| {} | {} | {} | {} | {} | {} | {} | {} | {} |\n",
                    esc(host),
                    esc(&cell),
                    esc(c["step"].as_str().unwrap_or("-")),
                    esc(m["name"].as_str().unwrap_or_default()),
                    m["n"],
                    fmt_num(mean),
                    half.map(fmt_num).unwrap_or_else(|| "-".into()),
                    esc(m["unit"].as_str().unwrap_or_default()),
                    esc(&status)
                );
                let what =
                    format!("{host} {cell} {} {}", c["step"].as_str().unwrap_or("-"), m["name"].as_str().unwrap_or(""));
                if m["n"].as_u64().unwrap_or(0) < crate::stats::FEW as u64 {
                    warnings.push(format!("{what}: n={} (fewer than {})", m["n"], crate::stats::FEW));
                }
                if let Some(cv) = m["cv"].as_f64().filter(|cv| *cv > 0.10) {
                    warnings.push(format!("{what}: CV {:.0}%", cv * 100.0));
                }
                if let Some(o) = m["outliers"].as_array().filter(|o| !o.is_empty()) {
                    let reps: Vec<String> = o.iter().filter_map(Json::as_u64).map(|i| (i + 1).to_string()).collect();
                    warnings.push(format!("{what}: outlier sample(s) {} by modified z-score (kept)", reps.join(", ")));
                }
            }
        }
    }
    if !warnings.is_empty() {
        out += "\n### Warnings\n\n";
        for w in warnings {
            out += &format!("- {}\n", esc(&w));
        }
    }
    out
}

fn hosts_line(model: &Json) -> String {
    let hosts = model["hosts"].as_array().cloned().unwrap_or_default();
    let items: Vec<String> = hosts
        .iter()
        .map(|h| {
            let f = &h["facts"];
            format!(
                "{} ({} {}, kernel {})",
                h["name"].as_str().unwrap_or("?"),
                f["distribution"]["id"].as_str().unwrap_or("?"),
                f["arch"].as_str().unwrap_or("?"),
                f["kernel"]["release"].as_str().unwrap_or("?")
            )
        })
        .collect();
    format!("hosts: {}", items.join(", "))
}

fn esc(s: &str) -> String {
    s.replace('|', "\\|").replace('\n', " ")
}
