//! `benchrig history`: pick the runs, build the series, find the changes,
//! print them; `exit_code::REGRESSED` when asked and a stable series
//! regressed with one of the newest `--since` runs.

use crate::changepoint;
use crate::cli::{HistoryArgs, HistoryFormat};
use crate::exit_code;
use crate::history::analyze::{self, Direction, Settings};
use crate::history::{self, render, select};
use crate::store::Store;

pub fn run(args: HistoryArgs) -> anyhow::Result<i32> {
    let name = args.name.as_deref().map(|g| globset::Glob::new(g).map(|g| g.compile_matcher())).transpose()?;
    let sel = select::Selection {
        playbook: args.playbook,
        name,
        status: None,
        since: args.from,
        until: args.to,
        last: Some(args.last),
    };
    let store = Store::open(&args.db.db)?;
    let picked = select::pick(&store.runs()?, &sel);
    if picked.is_empty() {
        anyhow::bail!("no finished run matches (see `benchrig runs`)");
    }
    let (mut runs, all) = history::load(&store, &picked)?;
    let settings = Settings {
        otava: changepoint::Options {
            window_len: args.window,
            max_pvalue: args.max_pvalue,
            min_magnitude: args.min_change / 100.0,
        },
        min_points: args.min_points.max(1),
        max_cv_pct: args.max_cv,
    };
    let mut wanted = globset::GlobSetBuilder::new();
    for g in &args.metric {
        wanted.add(globset::Glob::new(g)?);
    }
    let wanted = wanted.build()?;
    let chosen = all.into_iter().filter(|s| args.metric.is_empty() || wanted.is_match(&s.key.metric)).collect();
    let mut analyses = analyze::analyze(chosen, &settings)?;
    history::annotate(&store, &mut runs, &mut analyses)?;
    match args.format {
        HistoryFormat::Table => out!("{}", render::table(&runs, &analyses))?,
        HistoryFormat::Md => out!("{}", render::markdown(&runs, &analyses))?,
        HistoryFormat::Html => out!("{}", history::html::render(&runs, &analyses))?,
        HistoryFormat::Json => outln!("{}", serde_json::to_string_pretty(&render::json(&runs, &analyses))?)?,
    }
    // The newest `since` runs: a regression that arrived with one of them pages someone.
    let recent = runs.len().saturating_sub(args.since.max(1));
    let regressed = analyses
        .iter()
        .filter(|a| a.unstable_cv.is_none())
        .any(|a| a.changes.iter().any(|c| c.direction == Direction::Regression && a.series.points[c.at].run >= recent));
    Ok(if args.fail_on_regression && regressed { exit_code::REGRESSED } else { exit_code::OK })
}
