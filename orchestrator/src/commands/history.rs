//! `benchrig history`: pick the runs, build the series, find the changes,
//! give each its id and what was done about it, print them; with
//! `--alert`, report the regressions nobody was told of (to each
//! `--webhook`) and stamp them so; `exit_code::REGRESSED` when asked and a
//! stable regression nobody acknowledged arrived with one of the newest
//! `--since` runs or was reported by this call. `history ack` stamps
//! changes acknowledged.

use crate::changepoint;
use crate::cli::{AckArgs, HistoryAction, HistoryArgs, HistoryFormat, HistoryQuery};
use crate::exit_code;
use crate::history::analyze::{self, Analysis, Settings};
use crate::history::{self, alerts, render, select, HistoryRun};
use crate::store::{Holder, Store};
use std::collections::BTreeSet;

pub fn run(args: HistoryArgs) -> anyhow::Result<i32> {
    if let Some(HistoryAction::Ack(a)) = args.action {
        return ack(a);
    }
    let store = Store::open(&args.query.db.db)?;
    let (runs, mut analyses) = analysed(&store, &args.query)?;
    let alerted = match args.alert {
        true => alert(&store, &runs, &mut analyses, &args.webhook),
        false => Ok(BTreeSet::new()),
    };
    match args.format {
        HistoryFormat::Table => out!("{}", render::table(&runs, &analyses))?,
        HistoryFormat::Md => out!("{}", render::markdown(&runs, &analyses))?,
        // Written as it is, not through `out!`'s copy: a year's page is
        // tens of megabytes.
        HistoryFormat::Html => {
            let page = history::html::render(&runs, &analyses, &history::html::NoLinks);
            std::io::Write::write_all(&mut std::io::stdout().lock(), crate::human::printable(&page).as_bytes())?
        }
        HistoryFormat::Json => render::write_json(&runs, &analyses, std::io::stdout().lock())?,
    }
    // A webhook that failed is said after the history: what was found is
    // printed, and nothing was stamped, so the next call reports it again.
    let alerted = alerted?;
    let recent = runs.len().saturating_sub(args.since.max(1));
    let regressed = alerts::regressions(&analyses).any(|(a, c)| {
        c.reported.acked.is_none() && (a.series.points[c.at].run >= recent || alerted.contains(&c.reported.id))
    });
    Ok(if args.fail_on_regression && regressed { exit_code::REGRESSED } else { exit_code::OK })
}

/// The history `q` asks for: its runs, and its series analysed, each
/// change with its id and what the store says was done about it.
pub fn analysed(store: &Store, q: &HistoryQuery) -> anyhow::Result<(Vec<HistoryRun>, Vec<Analysis>)> {
    analysed_of(store, q, q.playbook.clone().map(select::PlaybookChoice::Named))
}

/// [`analysed`], of the runs of `playbook` (in place of `q.playbook`).
pub fn analysed_of(
    store: &Store,
    q: &HistoryQuery,
    playbook: Option<select::PlaybookChoice>,
) -> anyhow::Result<(Vec<HistoryRun>, Vec<Analysis>)> {
    let name = q.name.as_deref().map(|g| globset::Glob::new(g).map(|g| g.compile_matcher())).transpose()?;
    let sel = select::Selection {
        playbook,
        name,
        status: None,
        since: q.from.clone(),
        until: q.to.clone(),
        last: Some(q.last),
    };
    let picked = select::pick(&store.runs()?, &sel);
    if picked.is_empty() {
        anyhow::bail!("no finished run matches (see `benchrig runs`)");
    }
    let (mut runs, all) = history::load(store, &picked)?;
    let c = &q.settings;
    let settings = Settings {
        otava: changepoint::Options {
            window_len: c.window,
            max_pvalue: c.max_pvalue,
            min_magnitude: c.min_change / 100.0,
        },
        min_points: c.min_points.max(1),
        max_cv_pct: c.max_cv,
    };
    let mut wanted = globset::GlobSetBuilder::new();
    for g in &q.metric {
        wanted.add(globset::Glob::new(g)?);
    }
    let wanted = wanted.build()?;
    let chosen = all.into_iter().filter(|s| q.metric.is_empty() || wanted.is_match(&s.key.metric)).collect();
    let mut analyses = analyze::analyze(chosen, &settings)?;
    history::annotate(store, &mut runs, &mut analyses)?;
    let playbooks: BTreeSet<&str> = runs.iter().map(|r| r.row.playbook.as_str()).collect();
    let mut stored = Vec::new();
    for p in playbooks {
        stored.extend(store.alerts(p)?);
    }
    alerts::attach(&runs, &mut analyses, &stored);
    Ok((runs, analyses))
}

/// Report the regressions nobody was told of: post them to every webhook,
/// then stamp them reported (only once every webhook took them). Their ids.
fn alert(
    store: &Store,
    runs: &[HistoryRun],
    analyses: &mut [Analysis],
    webhooks: &[String],
) -> anyhow::Result<BTreeSet<String>> {
    let new = alerts::unreported(analyses);
    if new.is_empty() {
        eprintln!("alert: no new regression");
        return Ok(BTreeSet::new());
    }
    let lines: Vec<String> = new
        .iter()
        .map(|(a, c)| {
            format!(
                "{} [{}]: {} with {} (p={:.1e})",
                a.series.key.describe(),
                c.reported.id,
                render::pct(c.change_pct),
                render::run_label(&runs[a.series.points[c.at].run]),
                c.pvalue
            )
        })
        .collect();
    let title = format!("benchrig: {} new regression(s)", new.len());
    let doc = serde_json::json!({
        "source": "benchrig",
        "text": format!("{title}\n{}", lines.iter().map(|l| format!("• {l}")).collect::<Vec<_>>().join("\n")),
        "changes": new.iter().map(|(a, c)| {
            let mut j = render::change_json(runs, a, c);
            j["series"] = a.series.key.describe().into();
            j["host"] = a.series.key.host.as_str().into();
            j["metric"] = a.series.key.metric.as_str().into();
            j["playbook"] = runs[a.series.points[c.at].run].row.playbook.as_str().into();
            j
        }).collect::<Vec<_>>(),
    });
    for url in webhooks {
        crate::webhook::post(url, &doc)?;
    }
    let rows: Vec<_> = new.iter().map(|(a, c)| alerts::row(runs, a, c)).collect();
    store.record_alerted(&rows)?;
    eprintln!(
        "{title}, reported{}:",
        if webhooks.is_empty() { String::new() } else { format!(" to {} webhook(s)", webhooks.len()) }
    );
    lines.iter().for_each(|l| eprintln!("  {l}"));
    let ids: BTreeSet<String> = rows.into_iter().map(|r| r.id).collect();
    // What this call printed says so.
    let stamp = crate::store::now();
    for a in analyses.iter_mut() {
        for c in a.changes.iter_mut().filter(|c| ids.contains(&c.reported.id)) {
            c.reported.alerted.get_or_insert_with(|| stamp.clone());
        }
    }
    Ok(ids)
}

/// `history ack ID…`: each id must name a change of this history; all are
/// checked before any is stamped.
fn ack(args: AckArgs) -> anyhow::Result<i32> {
    let store = Store::open(&args.query.db.db)?;
    let (runs, analyses) = analysed(&store, &args.query)?;
    let mut found = Vec::new();
    for id in &args.ids {
        let hit =
            analyses.iter().flat_map(|a| a.changes.iter().map(move |c| (a, c))).find(|(_, c)| &c.reported.id == id);
        match hit {
            Some(hit) => found.push(hit),
            None => anyhow::bail!(
                "no change {id} in this history ({} run(s) of {}): `benchrig history` with the same --playbook, --name, \
                 --metric and settings lists the changes with their ids; nothing was acknowledged",
                runs.len(),
                runs.last().map_or("?", |r| r.row.playbook.as_str())
            ),
        }
    }
    let who = Holder::this_process().who;
    for (a, c) in found {
        store.record_ack(&alerts::row(&runs, a, c), &who, args.note.as_deref())?;
        println!(
            "acknowledged {}: {} {} {} with {}",
            c.reported.id,
            a.series.key.describe(),
            render::pct(c.change_pct),
            c.direction,
            render::run_label(&runs[a.series.points[c.at].run])
        );
    }
    Ok(exit_code::OK)
}
