//! The table `benchrig show` prints and `benchrig run` ends with: per host ×
//! cell × step × metric, n, mean, sd and unit; failed and unsupported cells
//! with their reasons.

use crate::human::{describe_params, fmt_num};
use crate::stats::Summary;
use crate::status::CellStatus;
use crate::store::{CellRow, SampleRow, Store, StoreError};
use indexmap::IndexMap;
use std::collections::HashMap;

/// (cell, step index, step, metric, unit) → values in repetition order.
pub type Grouped = IndexMap<(i64, i64, String, String, String), Vec<f64>>;

pub fn group(samples: &[SampleRow]) -> Grouped {
    let mut g = Grouped::new();
    for s in samples {
        g.entry((s.cell_id, s.step_index, s.step.clone(), s.metric.clone(), s.unit.clone())).or_default().push(s.value);
    }
    g
}

pub fn render(store: &Store, run: i64) -> Result<String, StoreError> {
    let mut cells = store.cells(run)?;
    // Hosts in the order the run listed them (inventory order), cells in plan order.
    let hosts: Vec<String> = store.hosts(run)?.into_iter().map(|h| h.name).collect();
    let position = crate::report::host_positions(&hosts);
    cells.sort_by_key(|c| (position.get(c.host.as_str()).copied(), c.id));
    let samples = store.samples(run)?;
    let grouped = group(&samples);
    // fio jobs that did not attain steady state, per (cell, step).
    let mut of_step: HashMap<(i64, i64), Vec<&SampleRow>> = HashMap::new();
    for s in &samples {
        of_step.entry((s.cell_id, s.step_index)).or_default().push(s);
    }
    let unsteady: HashMap<(i64, i64), Vec<crate::report::steady_state::NotAttained>> = of_step
        .into_iter()
        .map(|(k, rows)| (k, crate::report::steady_state::not_attained(rows)))
        .filter(|(_, u)| !u.is_empty())
        .collect();
    // Each cell's groups, in `grouped`'s order: one pass, not one per cell.
    let mut groups_of: HashMap<i64, Vec<_>> = HashMap::new();
    for (k, values) in &grouped {
        groups_of.entry(k.0).or_default().push((k, values));
    }
    let plays: std::collections::BTreeSet<&str> = cells.iter().map(|c| c.play.as_str()).collect();
    let with_play = plays.len() > 1;
    let mut rows: Vec<Vec<String>> = Vec::new();
    let mut header = vec!["HOST"];
    if with_play {
        header.push("PLAY");
    }
    header.extend(["CELL", "STEP", "METRIC", "N", "MEAN", "SD", "UNIT", "STATUS"]);
    for c in &cells {
        let lead = |rows: &mut Vec<Vec<String>>, rest: Vec<String>| {
            let mut r = vec![c.host.clone()];
            if with_play {
                r.push(c.play.clone());
            }
            r.push(describe_params(&c.params));
            r.extend(rest);
            rows.push(r);
        };
        let mine = groups_of.remove(&c.id).unwrap_or_default();
        if mine.is_empty() {
            lead(
                &mut rows,
                vec!["-".into(), "-".into(), "-".into(), "-".into(), "-".into(), "-".into(), status_text(c)],
            );
        }
        for ((cell, index, step, metric, unit), values) in mine {
            let s = Summary::of(values).expect("non-empty group");
            let unsteady_reps: Vec<i64> = unsteady
                .get(&(*cell, *index))
                .into_iter()
                .flatten()
                .filter(|u| u.covers(metric))
                .flat_map(|u| u.repetitions.iter().copied())
                .collect();
            lead(
                &mut rows,
                vec![
                    step.clone(),
                    metric.clone(),
                    s.n.to_string(),
                    fmt_num(s.mean),
                    if s.n > 1 { fmt_num(s.sd) } else { "-".into() },
                    unit.clone(),
                    if c.status == CellStatus::Ok { ok_with_warnings(&s, &unsteady_reps) } else { status_text(c) },
                ],
            );
        }
    }
    let mut out = table(&header, &rows);
    let kernel_log = store.kernel_log(run)?;
    for c in &cells {
        let (tuned, logged) = (
            crate::report::cell_notes::tuned(c.info.as_ref()),
            crate::report::cell_notes::kernel_log(&kernel_log, c.id),
        );
        let cell = describe_params(&c.params);
        if !tuned.is_empty() {
            out += &format!("{} {cell}: tuned {}\n", c.host, tuned.join("; "));
        }
        if let Some(k) = crate::report::cell_notes::kernel(c.info.as_ref()) {
            out += &format!("{} {cell}: kernel {k}\n", c.host);
        }
        for l in &logged {
            out += &format!("KERNEL LOG {} {cell}: {}\n", c.host, crate::report::cell_notes::kernel_log_text(l));
        }
    }
    for play in &plays {
        let steps = cells.iter().filter(|c| c.play == *play).map(|c| c.steps.as_ref());
        if let Some(line) = crate::report::fresh_line(steps) {
            out += &format!("play `{play}`: {line}\n");
        }
    }
    out += &monitor_lines(store, run, &cells)?;
    let times = crate::report::time::per_host(&hosts, &cells, &samples);
    if !times.is_empty() {
        out += "time per host (busy from its first cell to its last):\n";
        for t in &times {
            out += &format!("  {}\n", crate::report::time::describe(t));
        }
    }
    let attempts = serde_json::to_value(store.attempts(run)?).unwrap_or_default();
    for line in crate::report::attempt_lines(&attempts) {
        out += &line;
        out.push('\n');
    }
    Ok(out)
}

/// A stored monitor metric: its name and its value per repetition.
type Stored<'a> = (&'a str, &'a [f64]);

/// What the monitors saw during each measured step, a line per step under
/// the table (none for a run without monitors).
fn monitor_lines(store: &Store, run: i64, cells: &[CellRow]) -> Result<String, StoreError> {
    use crate::monitors::{explain, summary};
    let monitors = store.monitor_samples(run)?;
    if monitors.is_empty() {
        return Ok(String::new());
    }
    let share: HashMap<String, f64> =
        store.hosts(run)?.iter().map(|h| (h.name.clone(), explain::cpu_share_of_facts(h.facts.as_ref()))).collect();
    let grouped = group(&monitors);
    let mut out = String::from("monitors (means over repetitions):\n");
    for c in cells {
        let mut steps: IndexMap<(i64, &str), Vec<Stored>> = IndexMap::new();
        for ((_, index, step, metric, _), values) in grouped.iter().filter(|(k, _)| k.0 == c.id) {
            steps.entry((*index, step.as_str())).or_default().push((metric.as_str(), values.as_slice()));
        }
        for ((_, step), metrics) in steps {
            let figures = summary::from_stored(metrics);
            let cpu = share.get(&c.host).copied().unwrap_or(100.0);
            if let Some(line) = explain::headline(&figures, cpu) {
                out += &format!("  {} · {} · {step}: {line}\n", c.host, describe_params(&c.params));
            }
        }
    }
    Ok(out)
}

/// A CV above this is worth a second look (a noisy host, a cold start).
const HIGH_CV: f64 = 0.10;

/// `ok`, with what should make a reader wary: fio's steady state not
/// attained (in `unsteady` repetitions), few samples, high spread, outliers.
fn ok_with_warnings(s: &Summary, unsteady: &[i64]) -> String {
    let mut w = Vec::new();
    if !unsteady.is_empty() {
        let reps: Vec<String> = unsteady.iter().map(i64::to_string).collect();
        w.push(format!("steady state not attained rep {}", reps.join(",")));
    }
    if s.few() {
        w.push(format!("n<{}", crate::stats::FEW));
    }
    if s.cv.is_some_and(|cv| cv > HIGH_CV) {
        w.push(format!("cv {:.0}%", s.cv.unwrap_or_default() * 100.0));
    }
    if !s.outliers.is_empty() {
        let reps: Vec<String> = s.outliers.iter().map(|i| (i + 1).to_string()).collect();
        w.push(format!("outlier rep {}", reps.join(",")));
    }
    if w.is_empty() {
        "ok".into()
    } else {
        format!("ok ({})", w.join("; "))
    }
}

fn status_text(c: &CellRow) -> String {
    match &c.reason {
        Some(r) => format!("{}: {r}", c.status),
        None => c.status.to_string(),
    }
}

/// Left-aligned text columns, numbers right-aligned, two spaces apart.
pub fn table(header: &[&str], rows: &[Vec<String>]) -> String {
    let cols = header.len();
    let mut width: Vec<usize> = header.iter().map(|h| h.len()).collect();
    for r in rows {
        for (i, cell) in r.iter().enumerate().take(cols) {
            // The last column (status, reasons) is not padded.
            if i + 1 < cols {
                width[i] = width[i].max(cell.chars().count());
            }
        }
    }
    // A column whose cells are all numbers (or "-") is right-aligned, header included.
    let is_num = |s: &str| s == "-" || s.parse::<f64>().is_ok();
    let right: Vec<bool> = (0..cols)
        .map(|i| {
            rows.iter().all(|r| r.get(i).is_some_and(|c| is_num(c)))
                && rows.iter().any(|r| r.get(i).is_some_and(|c| c != "-"))
        })
        .collect();
    let mut out = String::new();
    let mut line = |cells: Vec<&str>| {
        let mut l = String::new();
        for (i, c) in cells.iter().enumerate() {
            if i + 1 == cells.len() {
                l.push_str(c);
            } else if right[i] {
                l.push_str(&format!("{:>w$}  ", c, w = width[i]));
            } else {
                l.push_str(&format!("{:<w$}  ", c, w = width[i]));
            }
        }
        out.push_str(l.trim_end());
        out.push('\n');
    };
    line(header.to_vec());
    for r in rows {
        line(r.iter().map(String::as_str).collect());
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn table_aligns() {
        let t = table(
            &["A", "N", "S"],
            &[vec!["long".into(), "3".into(), "ok".into()], vec!["x".into(), "12.5".into(), "failed: why".into()]],
        );
        assert_eq!(t, "A        N  S\nlong     3  ok\nx     12.5  failed: why\n");
    }
}
