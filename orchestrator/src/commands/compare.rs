//! `benchrig compare BASE NEW…`: the verdict per metric, as a table, as
//! markdown for a CI summary, JSON, or an HTML page with charts;
//! `exit_code::REGRESSED` on a regression when asked.

use crate::cli::{CompareArgs, CompareFormat};
use crate::compare::{compare, Options, Row, RunData, Verdict};
use crate::exit_code;
use crate::human::fmt_num;
use crate::status::RunStatus;
use crate::store::Store;
use crate::terminal_table::table;

/// A run (id, name or `last`) as `compare` takes it.
pub fn load(store: &Store, spec: &str) -> anyhow::Result<(i64, RunData)> {
    let r = store.resolve_run(spec)?;
    super::unpruned(&r)?;
    Ok((
        r.id,
        RunData {
            hosts: store.hosts(r.id)?,
            cells: store.cells(r.id)?,
            samples: store.samples(r.id)?,
            monitors: store.monitor_samples(r.id)?,
        },
    ))
}

/// The newest run before `new` of the same playbook on the same hosts
/// that ended ok and still has its samples: what a nightly job compares
/// tonight with; none for a first night.
pub fn automatic_baseline(store: &Store, new: i64) -> anyhow::Result<Option<i64>> {
    let runs = store.runs()?;
    let this = runs.iter().find(|r| r.id == new).ok_or_else(|| anyhow::anyhow!("no run {new}"))?;
    let hosts = |id: i64| -> anyhow::Result<Vec<String>> {
        let mut h: Vec<String> = store.hosts(id)?.into_iter().map(|h| h.name).collect();
        h.sort();
        Ok(h)
    };
    let mine = hosts(new)?;
    for r in runs
        .iter()
        .rev()
        .filter(|r| r.id < new && r.playbook == this.playbook && r.status == RunStatus::Ok && r.pruned.is_none())
    {
        if hosts(r.id)? == mine {
            return Ok(Some(r.id));
        }
    }
    Ok(None)
}

/// Why a run has no automatic baseline, and what to do.
pub fn no_baseline(store: &Store, new: i64) -> anyhow::Error {
    let playbook = store.resolve_run(&new.to_string()).map(|r| r.playbook).unwrap_or_default();
    anyhow::anyhow!(
        "run {new} has no automatic baseline: no earlier run of {playbook} on the same hosts ended ok; name one: `benchrig compare BASE {new}`"
    )
}

pub fn run(args: CompareArgs) -> anyhow::Result<i32> {
    let store = Store::open(&args.db.db)?;
    let (base_spec, new_spec) = match args.runs.as_slice() {
        [new] => (None, new.as_str()),
        [base, new] => (Some(base.as_str()), new.as_str()),
        [base, rest @ ..] => return across(&store, base, rest, &args),
        [] => unreachable!("clap takes one run or more"),
    };
    let (new_id, new) = load(&store, new_spec)?;
    let base_spec = match base_spec {
        Some(b) => b.to_string(),
        None => {
            let id = automatic_baseline(&store, new_id)?.ok_or_else(|| no_baseline(&store, new_id))?;
            eprintln!("baseline: run {id}, the newest earlier ok run of the same playbook on the same hosts");
            id.to_string()
        }
    };
    let (base_id, base) = load(&store, &base_spec)?;
    let opts = Options { threshold_pct: args.threshold, alpha: args.alpha };
    let rows = compare(&base, &new, opts);
    let summary = summary(&rows, base_id, new_id, opts);
    let cells: Vec<Vec<String>> = rows.iter().map(cells).collect();
    let text = match args.format {
        CompareFormat::Table => format!("{}{summary}\n", table(&HEADER, &cells)),
        CompareFormat::Md => markdown(&HEADER, &cells, &summary),
        CompareFormat::Json => {
            let doc = serde_json::json!({
                "base": base_id, "new": new_id, "summary": summary,
                "rows": rows.iter().map(row_json).collect::<Vec<_>>(),
            });
            serde_json::to_string_pretty(&doc)? + "\n"
        }
        CompareFormat::Html => html(&store, (base_id, new_id), &rows, &summary)?,
    };
    super::write_out(args.output.as_deref(), &text)?;
    let regressed = rows.iter().any(|r| r.verdict == Verdict::Regressed);
    Ok(if args.fail_on_regression && regressed { exit_code::REGRESSED } else { exit_code::OK })
}

/// "run 12 against run 11: 1 regressed, 0 improved, …": how many rows
/// got each verdict.
pub fn summary(rows: &[Row], base_id: i64, new_id: i64, opts: Options) -> String {
    let count = |v: &str| rows.iter().filter(|r| r.verdict.word() == v).count();
    format!(
        "run {new_id} against run {base_id}: {} regressed, {} improved, {} unchanged, {} not comparable \
         (threshold {}%, alpha {})",
        count("regressed"),
        count("improved"),
        count("unchanged"),
        count("not comparable"),
        opts.threshold_pct,
        opts.alpha
    )
}

/// Two runs' comparison as a page.
pub fn html(store: &Store, (base_id, new_id): (i64, i64), rows: &[Row], summary: &str) -> anyhow::Result<String> {
    let runs = [label(store, base_id)?, label(store, new_id)?];
    Ok(crate::report::compare_html::render(&runs, &[rows.to_vec()], summary))
}

/// "nightly-12 (12)", or "run 12" for a run without a name.
fn label(store: &Store, id: i64) -> anyhow::Result<String> {
    let r = store.resolve_run(&id.to_string())?;
    Ok(r.name.map_or_else(|| format!("run {id}"), |n| format!("{n} ({id})")))
}

/// MONITORS is what NEW's monitors saw of a changed metric's step against
/// BASE's: a column of its own, so VERDICT stays one word a script can read.
const HEADER: [&str; 12] =
    ["HOST", "PLAY", "CELL", "STEP", "METRIC", "BASE", "NEW", "CHANGE", "RATIO CI95", "P", "VERDICT", "MONITORS"];

fn cells(r: &Row) -> Vec<String> {
    let mean = |s: &Option<crate::stats::Summary>| {
        s.as_ref().map(|s| format!("{} {} (n={})", fmt_num(s.mean), r.unit, s.n)).unwrap_or_else(|| "-".into())
    };
    let change = r.ratio.map(|x| format!("{:+.1}%", (x - 1.0) * 100.0)).unwrap_or_else(|| "-".into());
    let ci = r.ratio_ci.map(|(lo, hi)| format!("{lo:.3}–{hi:.3}")).unwrap_or_else(|| "-".into());
    let p = match (r.test, r.welch_p, r.mwu_p) {
        ("welch", Some(p), _) => format!("{p:.3} (t)"),
        ("mann-whitney", _, Some(p)) => format!("{p:.3} (U)"),
        _ => "-".into(),
    };
    let verdict = match &r.verdict {
        Verdict::NotComparable(why) => format!("not comparable: {why}"),
        v => v.word().to_string(),
    };
    let verdict = match &r.note {
        Some(note) => format!("{verdict} ({note})"),
        None => verdict,
    };
    vec![
        r.host.clone(),
        r.play.clone(),
        r.cell.clone(),
        r.step.clone(),
        r.metric.clone(),
        mean(&r.base),
        mean(&r.new),
        change,
        ci,
        p,
        verdict,
        r.monitors.clone().unwrap_or_else(|| "-".into()),
    ]
}

fn markdown(header: &[&str], rows: &[Vec<String>], summary: &str) -> String {
    let esc = |s: &str| s.replace('|', "\\|");
    let mut out = format!("**{summary}**\n\n| {} |\n|{}\n", header.join(" | "), "---|".repeat(header.len()));
    for r in rows {
        out += &format!("| {} |\n", r.iter().map(|c| esc(c)).collect::<Vec<_>>().join(" | "));
    }
    out
}

/// One row's figures as JSON: the same as the table, as numbers.
fn row_json(r: &Row) -> serde_json::Value {
    let summary = |s: &Option<crate::stats::Summary>| {
        s.as_ref().map(|s| serde_json::json!({"n": s.n, "mean": s.mean, "sd": s.sd, "ci95": s.ci95}))
    };
    let why = match &r.verdict {
        Verdict::NotComparable(why) => Some(why.clone()),
        _ => None,
    };
    serde_json::json!({
        "host": r.host, "play": r.play, "cell": r.cell, "step": r.step, "metric": r.metric, "unit": r.unit,
        "better": r.better, "base": summary(&r.base), "new": summary(&r.new), "ratio": r.ratio,
        "ratio_ci95": r.ratio_ci, "welch_p": r.welch_p, "mann_whitney_p": r.mwu_p, "test": r.test,
        "verdict": r.verdict.word(), "not_comparable_because": why, "note": r.note, "monitors": r.monitors,
    })
}

/// `compare BASE A B …`: each later run against BASE, one row per metric
/// with a column per run (its mean, and after BASE its change and verdict),
/// as mmtests' compare-kernels lays out kernels.
fn across(store: &Store, base_spec: &str, others: &[String], args: &CompareArgs) -> anyhow::Result<i32> {
    let (base_id, base) = load(store, base_spec)?;
    let mut runs = vec![(base_id, label(store, base_id)?)];
    let mut compared = Vec::new();
    for spec in others {
        let (id, data) = load(store, spec)?;
        runs.push((id, label(store, id)?));
        compared.push(compare(&base, &data, Options { threshold_pct: args.threshold, alpha: args.alpha }));
    }
    let wide = widen(&compared);
    let regressed = compared.iter().flatten().any(|r| r.verdict == Verdict::Regressed);
    let summary = format!(
        "{} runs against {}: {} metric(s) regressed in at least one (threshold {}%, alpha {})",
        others.len(),
        runs[0].1,
        wide.iter().filter(|w| w.columns.iter().flatten().any(|r| r.verdict == Verdict::Regressed)).count(),
        args.threshold,
        args.alpha
    );
    let text = match args.format {
        CompareFormat::Json => {
            let doc = serde_json::json!({
                "runs": runs.iter().map(|(id, l)| serde_json::json!({"id": id, "label": l})).collect::<Vec<_>>(),
                "summary": summary,
                "rows": wide.iter().map(|w| serde_json::json!({
                    "host": w.key.0, "play": w.key.1, "cell": w.key.2, "step": w.key.3, "metric": w.key.4,
                    "against_base": w.columns.iter().map(|c| c.map(row_json)).collect::<Vec<_>>(),
                })).collect::<Vec<_>>(),
            });
            serde_json::to_string_pretty(&doc)? + "\n"
        }
        CompareFormat::Html => {
            let labels: Vec<String> = runs.into_iter().map(|(_, l)| l).collect();
            crate::report::compare_html::render(&labels, &compared, &summary)
        }
        format => {
            let mut header: Vec<&str> = vec!["HOST", "PLAY", "CELL", "STEP", "METRIC"];
            header.extend(runs.iter().map(|(_, l)| l.as_str()));
            let rows: Vec<Vec<String>> = wide.iter().map(wide_cells).collect();
            match format {
                CompareFormat::Md => markdown(&header, &rows, &summary),
                _ => format!("{}{summary}\n", table(&header, &rows)),
            }
        }
    };
    super::write_out(args.output.as_deref(), &text)?;
    Ok(if args.fail_on_regression && regressed { exit_code::REGRESSED } else { exit_code::OK })
}

/// One metric across the runs: its key, and its row in each comparison
/// with BASE (none where that run lacks it).
struct Wide<'a> {
    key: (String, String, String, String, String),
    columns: Vec<Option<&'a Row>>,
}

/// The comparisons' rows, one line per metric in the order they first
/// appear, a column per comparison.
fn widen(compared: &[Vec<Row>]) -> Vec<Wide<'_>> {
    let mut out: Vec<Wide> = Vec::new();
    let mut at: std::collections::HashMap<(String, String, String, String, String), usize> = Default::default();
    for (i, rows) in compared.iter().enumerate() {
        for r in rows {
            let key = (r.host.clone(), r.play.clone(), r.cell.clone(), r.step.clone(), r.metric.clone());
            let line = *at.entry(key.clone()).or_insert_with(|| {
                out.push(Wide { key, columns: vec![None; compared.len()] });
                out.len() - 1
            });
            out[line].columns[i] = Some(r);
        }
    }
    out
}

fn wide_cells(w: &Wide) -> Vec<String> {
    let (host, play, cell, step, metric) = w.key.clone();
    let mut line = vec![host, play, cell, step, metric];
    let first = w.columns.iter().flatten().next();
    line.push(
        first.and_then(|r| r.base.as_ref().map(|s| format!("{} {}", fmt_num(s.mean), r.unit))).unwrap_or("-".into()),
    );
    for c in &w.columns {
        line.push(match c {
            Some(r) => match (&r.new, r.ratio) {
                (Some(s), Some(x)) => format!("{} ({:+.1}%, {})", fmt_num(s.mean), (x - 1.0) * 100.0, r.verdict.word()),
                (Some(s), None) => format!("{} ({})", fmt_num(s.mean), r.verdict.word()),
                (None, _) => "-".into(),
            },
            None => "-".into(),
        });
    }
    line
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(metric: &str, mean: f64, ratio: f64, verdict: Verdict) -> Row {
        let s = |m: f64| crate::stats::Summary::of(&[m, m, m]).unwrap();
        Row {
            host: "h".into(),
            play: "p".into(),
            cell: "c".into(),
            step: "s".into(),
            metric: metric.into(),
            unit: "MB/s".into(),
            better: benchrig_wire::steps::Better::Higher,
            base: Some(s(100.0)),
            new: Some(s(mean)),
            ratio: Some(ratio),
            ratio_ci: None,
            welch_p: None,
            mwu_p: None,
            test: "welch",
            verdict,
            note: None,
            monitors: None,
        }
    }

    #[test]
    fn runs_widen_into_a_column_each_against_the_base() {
        let compared = vec![
            vec![row("a", 100.0, 1.0, Verdict::Unchanged), row("b", 80.0, 0.8, Verdict::Regressed)],
            vec![row("b", 120.0, 1.2, Verdict::Improved)],
        ];
        let wide = widen(&compared);
        let lines: Vec<Vec<String>> = wide.iter().map(wide_cells).collect();
        assert_eq!(lines.len(), 2);
        assert_eq!(lines[0][5..], ["100.0 MB/s", "100.0 (+0.0%, unchanged)", "-"]);
        assert_eq!(lines[1][4..], ["b", "100.0 MB/s", "80.00 (-20.0%, regressed)", "120.0 (+20.0%, improved)"]);
    }
}
