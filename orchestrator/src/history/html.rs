//! `history --format html`: one self-contained page (the report's shell,
//! `report::page`: no script, a CSP that forbids every request). First a
//! grid of small trend charts, one per series (`trend::small`: means, CI95
//! band, splits and change points marked), so a person sees at a glance
//! which series moved; then a large chart per series with a change
//! (`trend::large`: the runs by name, the change annotated with its
//! percentage and p-value); then the changes' table, the splits and the
//! unstable series, as `render` words them.

use super::analyze::{Analysis, Direction};
use super::render::{change_cells, notes, pct, run_label, HEADER};
use super::trend::{self, Marked, Trend};
use super::HistoryRun;
use crate::report::charts::{colour, hex};
use crate::report::page::{self, esc};

/// The trend of one analysed series, ready to draw.
pub fn trend_of(runs: &[HistoryRun], a: &Analysis) -> Trend {
    let s = &a.series;
    Trend {
        points: s.points.iter().map(|p| (p.summary.mean, p.summary.ci95)).collect(),
        labels: s
            .points
            .iter()
            .map(|p| runs[p.run].row.name.clone().unwrap_or_else(|| format!("run {}", runs[p.run].row.id)))
            .collect(),
        splits: s.splits.iter().map(|x| x.at).collect(),
        changes: a
            .changes
            .iter()
            .map(|c| Marked {
                at: c.at,
                regression: c.direction == Direction::Regression,
                note: format!("{} · p={:.1e}", pct(c.change_pct), c.pvalue),
                before: c.before.mean,
                after: c.after.mean,
            })
            .collect(),
        unit: s.unit.clone(),
    }
}

/// A series' standing in a few words: its changes, or why it has none.
pub fn verdict(a: &Analysis) -> String {
    if let Some(cv) = a.unstable_cv {
        return format!("unstable (CV {cv:.1}%)");
    }
    if a.changes.is_empty() {
        return "no change".into();
    }
    let each: Vec<String> = a.changes.iter().map(|c| format!("{} {}", pct(c.change_pct), c.direction)).collect();
    each.join(", ")
}

/// Where a page puts a run's report and its comparison with its baseline,
/// when it has them (`benchrig site` does; a page on its own does not).
pub trait Links {
    fn report(&self, run: &crate::store::RunRow) -> Option<String>;
    fn compare(&self, run: &crate::store::RunRow) -> Option<String>;
}

/// A page on its own: no links.
pub struct NoLinks;

impl Links for NoLinks {
    fn report(&self, _: &crate::store::RunRow) -> Option<String> {
        None
    }
    fn compare(&self, _: &crate::store::RunRow) -> Option<String> {
        None
    }
}

/// A link to `href` (relative, escaped) saying `text`, or the text alone.
fn link(href: Option<String>, text: &str) -> String {
    match href {
        Some(h) => format!("<a href=\"{}\">{}</a>", esc(&h), esc(text)),
        None => esc(text),
    }
}

pub fn render(runs: &[HistoryRun], all: &[Analysis], links: &dyn Links) -> String {
    let mut playbooks: Vec<&str> = runs.iter().map(|r| r.row.playbook.as_str()).collect();
    playbooks.dedup();
    let mut out = page::head(&format!("benchrig history — {}", playbooks.join(", ")));
    let (splits, unstable, count) = notes(runs, all);
    if let (Some(first), Some(last)) = (runs.first(), runs.last()) {
        out += &format!(
            "<p class=\"meta\">{} to {} · {}</p>\n",
            esc(&run_label(first)),
            esc(&run_label(last)),
            esc(&count)
        );
    }
    out += &key();
    out += "<h2>Every series</h2>\n<div class=\"grid\">\n";
    for a in all {
        let class = match (a.unstable_cv, a.changes.iter().any(|c| c.direction == Direction::Regression)) {
            (Some(_), _) => "",
            (None, true) => " class=\"bad\"",
            (None, false) if !a.changes.is_empty() => " class=\"good\"",
            _ => "",
        };
        out += &format!(
            "<figure><figcaption>{} ({})<br><span{class}>{}</span></figcaption>{}</figure>\n",
            esc(&a.series.key.describe()),
            esc(&a.series.unit),
            esc(&verdict(a)),
            trend::small(&trend_of(runs, a))
        );
    }
    out += "</div>\n";
    let changed: Vec<&Analysis> = all.iter().filter(|a| !a.changes.is_empty()).collect();
    if !changed.is_empty() {
        out += "<h2>Changes</h2>\n";
        for a in changed {
            let when: Vec<String> = a
                .changes
                .iter()
                .map(|c| {
                    format!("{} {} at {}", pct(c.change_pct), c.direction, run_label(&runs[a.series.points[c.at].run]))
                })
                .collect();
            let unstable = a.unstable_cv.map(|cv| format!(" (unstable: CV {cv:.1}%)")).unwrap_or_default();
            let caption = format!("{} — {}{unstable}", a.series.key.describe(), when.join("; "));
            out += &page::figure(&caption, None, &[], &trend::large(&trend_of(runs, a)));
        }
        let stable: Vec<_> = super::analyze::stable_changes(all).collect();
        if !stable.is_empty() {
            out += "<table><tr>";
            for h in HEADER.iter().chain(&["against its baseline"]) {
                out += &format!("<th>{}</th>", esc(&h.to_lowercase()));
            }
            out += "</tr>\n";
            for (a, c) in stable {
                let run = &runs[a.series.points[c.at].run].row;
                out += "<tr>";
                for (i, cell) in change_cells(runs, a, c).iter().enumerate() {
                    // The run's column links to its report.
                    let text = if i == 1 { link(links.report(run), cell) } else { esc(cell) };
                    out += &format!("<td>{text}</td>");
                }
                out += &format!("<td>{}</td></tr>\n", link(links.compare(run), "compare"));
            }
            out += "</table>\n";
        }
    }
    for (title, lines) in
        [("Splits (the configuration changed: not read as a change)", splits), ("Unstable series", unstable)]
    {
        if !lines.is_empty() {
            out += &format!("<h2>{}</h2>\n<ul>\n", esc(title));
            for l in lines {
                out += &format!("<li>{}</li>\n", esc(&l));
            }
            out += "</ul>\n";
        }
    }
    out + page::TAIL
}

/// What the marks on every trend chart mean (the charts share it).
fn key() -> String {
    let mark = |css: &str, what: &str| {
        format!("<span class=\"key\"><span class=\"sw\" style=\"{css}\"></span>{}</span>", esc(what))
    };
    let line = hex(colour(0));
    format!(
        "<div class=\"legend\" id=\"key\">{}{}{}{}{}</div>\n",
        mark(&format!("background:{line}"), "mean of a run's samples"),
        mark(&format!("background:{line};opacity:.25"), "its CI95"),
        mark("border-left:3px dashed #787878;width:0;border-radius:0", "split: the configuration changed"),
        mark(&format!("background:{}", hex(trend::REGRESSION)), "change point: regression"),
        mark(&format!("background:{}", hex(trend::IMPROVEMENT)), "change point: improvement"),
    )
}

#[cfg(test)]
mod tests {
    use super::super::analyze::{analyze, Settings};
    use super::super::{made_up, series};
    use super::*;

    fn nights(means: &[(&'static str, f64)]) -> Vec<HistoryRun> {
        made_up(&means.iter().map(|&(k, m)| (k, vec![m * 0.995, m, m * 1.005])).collect::<Vec<_>>())
    }

    #[test]
    fn a_change_gets_its_large_chart_and_its_note_and_a_split_its_mark() {
        let mut list: Vec<(&'static str, f64)> = (0..10).map(|i| ("6.1", 100.0 + (i % 3) as f64 * 0.2)).collect();
        list.extend([("6.1", 80.0), ("6.1", 80.2), ("6.1", 79.8), ("6.2", 80.0), ("6.2", 80.1)]);
        let runs = nights(&list);
        let all = analyze(series::build(&runs), &Settings::default()).unwrap();
        let t = trend_of(&runs, &all[0]);
        assert_eq!(t.splits, [13], "the kernel changed with night-14");
        assert_eq!(t.changes.len(), 1);
        assert_eq!(t.changes[0].at, 10);
        assert!(t.changes[0].regression);
        assert!(t.changes[0].note.starts_with("-20.") && t.changes[0].note.contains(" · p="), "{}", t.changes[0].note);
        assert_eq!(t.labels[10], "night-11");
        assert!(verdict(&all[0]).ends_with("% regression"), "{}", verdict(&all[0]));
        let html = render(&runs, &all, &NoLinks);
        assert_eq!(html.matches("<svg").count(), 2, "a small chart, and a large one for the change");
        assert!(html.contains("<h2>Changes</h2>") && html.contains("night-11"), "{html}");
        assert!(html.contains("kernel differs: 6.1 → 6.2"), "the split is listed");
        assert!(html.contains(page::CSP));
    }

    #[test]
    fn steady_series_get_a_small_chart_each_and_no_large_one() {
        let list: Vec<(&'static str, f64)> = (0..6).map(|i| ("6.1", 100.0 + (i % 2) as f64 * 0.1)).collect();
        let runs = nights(&list);
        let all = analyze(series::build(&runs), &Settings::default()).unwrap();
        assert_eq!(verdict(&all[0]), "no change");
        let html = render(&runs, &all, &NoLinks);
        assert_eq!(html.matches("<svg").count(), 1);
        assert!(!html.contains("<h2>Changes</h2>"));
    }
}
