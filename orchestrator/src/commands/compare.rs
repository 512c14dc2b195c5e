//! `benchrig compare BASE NEW`: the verdict per metric, as a table or as
//! markdown for a CI summary; `exit_code::REGRESSED` on a regression when asked.

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
/// that ended ok: what a nightly job compares tonight with.
pub fn automatic_baseline(store: &Store, new: i64) -> anyhow::Result<i64> {
    let runs = store.runs()?;
    let this = runs.iter().find(|r| r.id == new).ok_or_else(|| anyhow::anyhow!("no run {new}"))?;
    let hosts = |id: i64| -> anyhow::Result<Vec<String>> {
        let mut h: Vec<String> = store.hosts(id)?.into_iter().map(|h| h.name).collect();
        h.sort();
        Ok(h)
    };
    let mine = hosts(new)?;
    for r in runs.iter().rev().filter(|r| r.id < new && r.playbook == this.playbook && r.status == RunStatus::Ok) {
        if hosts(r.id)? == mine {
            return Ok(r.id);
        }
    }
    anyhow::bail!(
        "run {new} has no automatic baseline: no earlier run of {} on the same hosts ended ok; name one: `benchrig compare BASE {new}`",
        this.playbook
    )
}

pub fn run(args: CompareArgs) -> anyhow::Result<i32> {
    let store = Store::open(&args.db.db)?;
    let (base_spec, new_spec) = match args.runs.as_slice() {
        [new] => (None, new.as_str()),
        [base, new] => (Some(base.as_str()), new.as_str()),
        _ => unreachable!("clap takes one or two runs"),
    };
    let (new_id, new) = load(&store, new_spec)?;
    let base_spec = match base_spec {
        Some(b) => b.to_string(),
        None => {
            let id = automatic_baseline(&store, new_id)?;
            eprintln!("baseline: run {id}, the newest earlier ok run of the same playbook on the same hosts");
            id.to_string()
        }
    };
    let (base_id, base) = load(&store, &base_spec)?;
    let rows = compare(&base, &new, Options { threshold_pct: args.threshold, alpha: args.alpha });
    let count = |v: &str| rows.iter().filter(|r| r.verdict.word() == v).count();
    let summary = format!(
        "run {new_id} against run {base_id}: {} regressed, {} improved, {} unchanged, {} not comparable \
         (threshold {}%, alpha {})",
        count("regressed"),
        count("improved"),
        count("unchanged"),
        count("not comparable"),
        args.threshold,
        args.alpha
    );
    let cells: Vec<Vec<String>> = rows.iter().map(cells).collect();
    match args.format {
        CompareFormat::Table => {
            out!("{}", table(&HEADER, &cells))?;
            outln!("{summary}")?;
        }
        CompareFormat::Md => out!("{}", markdown(&cells, &summary))?,
    }
    let regressed = rows.iter().any(|r| r.verdict == Verdict::Regressed);
    Ok(if args.fail_on_regression && regressed { exit_code::REGRESSED } else { exit_code::OK })
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

fn markdown(rows: &[Vec<String>], summary: &str) -> String {
    let esc = |s: &str| s.replace('|', "\\|");
    let mut out = format!("**{summary}**\n\n| {} |\n|{}\n", HEADER.join(" | "), "---|".repeat(HEADER.len()));
    for r in rows {
        out += &format!("| {} |\n", r.iter().map(|c| esc(c)).collect::<Vec<_>>().join(" | "));
    }
    out
}
