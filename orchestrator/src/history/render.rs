//! A history as a person reads it (a table, or markdown for a CI summary:
//! the changes first, then the splits and the unstable series, then a
//! count) or as JSON (every series with its points).

use super::analyze::{stable_changes, Analysis, Change, Direction};
use super::HistoryRun;
use crate::human::fmt_num;
use serde_json::{json, Value as Json};
use std::io::Write as _;

/// "run 12 nightly-2026-11-30 (2026-11-30)".
pub fn run_label(r: &HistoryRun) -> String {
    let date = r.row.started.get(..10).unwrap_or(&r.row.started);
    match &r.row.name {
        Some(n) => format!("run {} {n} ({date})", r.row.id),
        None => format!("run {} ({date})", r.row.id),
    }
}

pub fn pct(x: f64) -> String {
    format!("{x:+.1}%")
}

pub(super) fn change_cells(runs: &[HistoryRun], a: &Analysis, c: &Change) -> Vec<String> {
    let run = &runs[a.series.points[c.at].run];
    let ci = c.ci_pct.map(|(lo, hi)| format!("{} – {}", pct(lo), pct(hi))).unwrap_or_else(|| "-".into());
    let means = format!("{} → {} {}", fmt_num(c.before.mean), fmt_num(c.after.mean), a.series.unit);
    let also = if c.what_changed.is_empty() { "-".to_string() } else { c.what_changed.join("; ") };
    // What the monitors saw, beside what else changed.
    let also = match (&c.monitors, also.as_str()) {
        (Some(m), "-") => format!("monitors: {m}"),
        (Some(m), _) => format!("{also}; monitors: {m}"),
        (None, _) => also,
    };
    vec![
        a.series.key.describe(),
        run_label(run),
        means,
        pct(c.change_pct),
        ci,
        format!("{:.2e}", c.pvalue),
        c.direction.to_string(),
        also,
        id_cell(c),
    ]
}

/// The change's id, and whether a person acknowledged it, who and why.
fn id_cell(c: &Change) -> String {
    let r = &c.reported;
    match (&r.acked, &r.acked_by, &r.ack_note) {
        (None, ..) => r.id.clone(),
        // One line, whatever the note: a table's row, a markdown table's.
        (Some(_), Some(by), Some(note)) => format!("{} (acked by {by}: {})", r.id, note.replace(['\n', '\r'], " ")),
        (Some(_), Some(by), None) => format!("{} (acked by {by})", r.id),
        (Some(_), None, _) => format!("{} (acked)", r.id),
    }
}

pub(super) const HEADER: [&str; 9] = ["SERIES", "RUN", "MEAN", "CHANGE", "CI95", "P", "VERDICT", "ALSO CHANGED", "ID"];

/// The lines under the table: splits, unstable series, the count.
pub(super) fn notes(runs: &[HistoryRun], all: &[Analysis]) -> (Vec<String>, Vec<String>, String) {
    let splits: Vec<String> = all
        .iter()
        .flat_map(|a| {
            a.series.splits.iter().map(move |s| {
                format!("{}: from {}: {}", a.series.key.describe(), run_label(&runs[a.series.points[s.at].run]), s.why)
            })
        })
        .collect();
    let unstable: Vec<String> = all
        .iter()
        .filter_map(|a| Some(format!("{}: CV {:.1}% across runs", a.series.key.describe(), a.unstable_cv?)))
        .collect();
    let changes: Vec<&Change> = stable_changes(all).map(|(_, c)| c).collect();
    let regressions = changes.iter().filter(|c| c.direction == Direction::Regression).count();
    let count = format!(
        "{} series over {} run(s): {} change(s), {regressions} regression(s); {} split(s); {} unstable",
        all.len(),
        runs.len(),
        changes.len(),
        splits.len(),
        unstable.len()
    );
    (splits, unstable, count)
}

/// A row of cells per change of a stable series.
fn change_rows(runs: &[HistoryRun], all: &[Analysis]) -> Vec<Vec<String>> {
    stable_changes(all).map(|(a, c)| change_cells(runs, a, c)).collect()
}

pub fn table(runs: &[HistoryRun], all: &[Analysis]) -> String {
    let rows = change_rows(runs, all);
    let mut out =
        if rows.is_empty() { "no change found\n".to_string() } else { crate::terminal_table::table(&HEADER, &rows) };
    let (splits, unstable, count) = notes(runs, all);
    if !splits.is_empty() {
        out += "\nsplit where the configuration changed (not read as a change):\n";
        splits.iter().for_each(|s| out += &format!("  {s}\n"));
    }
    if !unstable.is_empty() {
        out += "\nunstable (too noisy to tell a change; never a regression):\n";
        unstable.iter().for_each(|s| out += &format!("  {s}\n"));
    }
    let bisects = bisect_lines(all);
    if !bisects.is_empty() {
        out += "\nwhich change made it (the runs recorded their revisions):\n";
        bisects.iter().for_each(|s| out += &format!("  {s}\n"));
    }
    out + &count + "\n"
}

/// Each regression's `benchrig bisect` command line, once each.
fn bisect_lines(all: &[Analysis]) -> Vec<String> {
    let mut lines: Vec<String> = Vec::new();
    for (_, c) in stable_changes(all) {
        if let Some(b) = c.bisect.as_ref().filter(|b| !lines.contains(b)) {
            lines.push(b.clone());
        }
    }
    lines
}

pub fn markdown(runs: &[HistoryRun], all: &[Analysis]) -> String {
    let esc = |s: &str| s.replace('|', "\\|");
    let (splits, unstable, count) = notes(runs, all);
    let mut out = format!("**{}**\n\n", esc(&count));
    let rows = change_rows(runs, all);
    if !rows.is_empty() {
        out += &format!("| {} |\n|{}\n", HEADER.join(" | "), "---|".repeat(HEADER.len()));
        for r in rows {
            out += &format!("| {} |\n", r.iter().map(|c| esc(c)).collect::<Vec<_>>().join(" | "));
        }
    }
    for (title, lines) in [("Splits (configuration changed)", splits), ("Unstable series", unstable)] {
        if !lines.is_empty() {
            out += &format!("\n**{title}**\n\n");
            lines.iter().for_each(|l| out += &format!("- {}\n", esc(l)));
        }
    }
    let bisects = bisect_lines(all);
    if !bisects.is_empty() {
        out += "\n**Which change made it**\n\n";
        bisects.iter().for_each(|l| out += &format!("    {l}\n"));
    }
    out
}

/// A run as the JSON names it.
fn run_ref(runs: &[HistoryRun], i: usize) -> Json {
    let r = &runs[i].row;
    json!({"id": r.id, "name": r.name, "started": r.started})
}

/// One change as JSON: in the history's series and in an alert's payload.
pub fn change_json(runs: &[HistoryRun], a: &Analysis, c: &Change) -> Json {
    json!({"id": c.reported.id, "run": run_ref(runs, a.series.points[c.at].run), "change_pct": c.change_pct,
           "ci_pct": c.ci_pct.map(|(lo, hi)| json!([lo, hi])), "pvalue": c.pvalue,
           "direction": c.direction, "mean_before": c.before.mean, "mean_after": c.after.mean,
           "what_changed": c.what_changed, "monitors": c.monitors, "bisect": c.bisect,
           "alerted": c.reported.alerted, "acked": c.reported.acked,
           "acked_by": c.reported.acked_by, "ack_note": c.reported.ack_note})
}

/// One series as JSON, with its points, splits and changes.
fn series_json(runs: &[HistoryRun], a: &Analysis) -> Json {
    let run_ref = |i: usize| run_ref(runs, i);
    let s = &a.series;
    let points: Vec<Json> = s
        .points
        .iter()
        .map(|p| {
            json!({"run": run_ref(p.run), "mean": p.summary.mean, "n": p.summary.n,
                   "ci95": p.summary.ci95.map(|(lo, hi)| json!([lo, hi]))})
        })
        .collect();
    let splits: Vec<Json> =
        s.splits.iter().map(|x| json!({"run": run_ref(s.points[x.at].run), "why": x.why})).collect();
    let changes: Vec<Json> = a.changes.iter().map(|c| change_json(runs, a, c)).collect();
    json!({"host": s.key.host, "play": s.key.play, "cell": s.key.cell, "step": s.key.step,
           "metric": s.key.metric, "unit": s.unit, "better": s.better, "points": points,
           "splits": splits, "changes": changes, "unstable_cv_pct": a.unstable_cv})
}

/// The series, made into JSON one at a time as they are written.
struct EverySeries<'a>(&'a [HistoryRun], &'a [Analysis]);

impl serde::Serialize for EverySeries<'_> {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_seq(self.1.iter().map(|a| series_json(self.0, a)))
    }
}

/// The whole history as JSON (`runs`, then every series), written as it
/// is made: a year of series is never one document in memory.
pub fn write_json(runs: &[HistoryRun], all: &[Analysis], to: impl std::io::Write) -> std::io::Result<()> {
    #[derive(serde::Serialize)]
    struct Doc<'a> {
        runs: Vec<Json>,
        series: EverySeries<'a>,
    }
    let doc = Doc {
        runs: runs
            .iter()
            .map(|r| json!({"id": r.row.id, "name": r.row.name, "started": r.row.started, "status": r.row.status, "playbook": r.row.playbook}))
            .collect(),
        series: EverySeries(runs, all),
    };
    let mut to = std::io::BufWriter::new(to);
    serde_json::to_writer_pretty(&mut to, &doc)?;
    writeln!(to)?;
    to.flush()
}
