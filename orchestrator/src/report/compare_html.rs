//! `compare --format html`: BASE against one run or several as one
//! self-contained page (the report's head, CSP and style). Per play, a
//! figure per step and metric draws every run's mean with its CI95 side by
//! side — a colour per run, BASE first, a panel per host — so a change is
//! seen before it is read; then the play's table, each run's figures and
//! verdict against BASE, the regressed and improved ones marked.

use super::charts::{self, Mean};
use super::page::{self, esc};
use super::shape::{Axis, Placed, Shape, HOST};
use crate::compare::{Row, Verdict};
use crate::human::fmt_num;
use crate::stats::Summary;

/// The page of `compared[i]`, the rows of run `runs[i + 1]` against
/// `runs[0]` (BASE), under `summary`.
pub fn render(runs: &[String], compared: &[Vec<Row>], summary: &str) -> String {
    let title = format!("benchrig compare — {} against {}", runs[1..].join(", "), runs[0]);
    let mut out = page::head(&title);
    out += &format!("<p class=\"meta\">{}</p>\n", esc(summary));
    for play in distinct(compared.iter().flatten().map(|r| r.play.clone())) {
        out += &format!("<h2>{}</h2>\n", esc(&play));
        let mine: Vec<Vec<&Row>> =
            compared.iter().map(|rows| rows.iter().filter(|r| r.play == play).collect()).collect();
        let measured = distinct(mine.iter().flatten().map(|r| (r.step.clone(), r.metric.clone(), r.unit.clone())));
        for (step, metric, unit) in &measured {
            let of_it: Vec<Vec<&Row>> = mine
                .iter()
                .map(|rows| rows.iter().copied().filter(|r| r.step == *step && r.metric == *metric).collect())
                .collect();
            out += &figure(runs, &of_it, step, metric, unit);
        }
        out += &table(runs, &mine);
    }
    out + page::TAIL
}

/// One step's metric: x the cells' parameters (the hosts, when the play
/// has no matrix), a colour per run, a panel per host when both vary.
fn figure(runs: &[String], compared: &[Vec<&Row>], step: &str, metric: &str, unit: &str) -> String {
    let all = || compared.iter().flatten();
    let hosts = distinct(all().map(|r| r.host.clone()));
    let cells = distinct(all().map(|r| r.cell.clone()));
    let no_matrix = cells.len() == 1;
    let (x, panels) = if no_matrix {
        (Axis { name: HOST.into(), values: hosts.clone() }, vec![])
    } else {
        let per_host = (hosts.len() > 1).then(|| Axis { name: HOST.into(), values: hosts.clone() });
        (Axis { name: "cell".into(), values: cells.clone() }, per_host.into_iter().collect())
    };
    let shape = Shape { x, colour: Some(Axis { name: "run".into(), values: runs.to_vec() }), panels, numeric_x: false };
    let place = |r: &Row, colour: usize| {
        let host = hosts.iter().position(|h| *h == r.host).unwrap_or(0);
        let cell = cells.iter().position(|c| *c == r.cell).unwrap_or(0);
        match no_matrix {
            true => Placed { panel: 0, x: host, colour },
            false => Placed { panel: if shape.panels.is_empty() { 0 } else { host }, x: cell, colour },
        }
    };
    let mean = |at: Placed, s: &Summary| Mean { at, mean: s.mean, ci: s.ci95 };
    let mut means: Vec<Mean> = Vec::new();
    let mut based: Vec<(&str, &str)> = Vec::new();
    for (i, rows) in compared.iter().enumerate() {
        for r in rows {
            // BASE's mean once per cell, from the first comparison that has it.
            if let Some(b) = r.base.as_ref().filter(|_| !based.contains(&(r.host.as_str(), r.cell.as_str()))) {
                based.push((&r.host, &r.cell));
                means.push(mean(place(r, 0), b));
            }
            if let Some(n) = &r.new {
                means.push(mean(place(r, i + 1), n));
            }
        }
    }
    let unit_part = if unit.is_empty() { String::new() } else { format!(" ({unit})") };
    let counts = verdict_counts(all().copied());
    let caption = format!("{step}: {metric}{unit_part} — mean with CI95 per run{counts}");
    page::figure(&caption, Some("run"), runs, &charts::chart(&shape, unit, &means))
}

/// ", 1 regressed, 2 improved" (nothing when all held).
fn verdict_counts<'a>(rows: impl Iterator<Item = &'a Row>) -> String {
    let (mut worse, mut better) = (0, 0);
    for r in rows {
        match r.verdict {
            Verdict::Regressed => worse += 1,
            Verdict::Improved => better += 1,
            _ => {}
        }
    }
    let mut out = String::new();
    if worse > 0 {
        out += &format!(", {worse} regressed");
    }
    if better > 0 {
        out += &format!(", {better} improved");
    }
    out
}

/// The play's metrics, a line each: BASE's figures, then each run's
/// against them.
fn table(runs: &[String], compared: &[Vec<&Row>]) -> String {
    let mut out = String::from("<table><tr><th>host</th><th>cell</th><th>step</th><th>metric</th>");
    for r in runs {
        out += &format!("<th>{}</th>", esc(r));
    }
    out += "</tr>\n";
    let keys = distinct(compared.iter().flatten().map(|r| (&r.host, &r.cell, &r.step, &r.metric)));
    for key in keys {
        let columns: Vec<Option<&Row>> = compared
            .iter()
            .map(|rows| rows.iter().copied().find(|r| (&r.host, &r.cell, &r.step, &r.metric) == key))
            .collect();
        let base = columns.iter().flatten().find_map(|r| r.base.as_ref().map(|s| figures(s, &r.unit)));
        out += &format!(
            "<tr><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td class=\"n\">{}</td>",
            esc(key.0),
            esc(key.1),
            esc(key.2),
            esc(key.3),
            esc(&base.unwrap_or_else(|| "-".into()))
        );
        for c in columns {
            out += &match c {
                Some(r) => against_base(r),
                None => "<td>-</td>".into(),
            };
        }
        out += "</tr>\n";
    }
    out + "</table>\n"
}

/// "80.00 MB/s ± 1.20 (n=5)".
fn figures(s: &Summary, unit: &str) -> String {
    let half = s.ci95.map(|(lo, hi)| format!(" ± {}", fmt_num((hi - lo) / 2.0))).unwrap_or_default();
    format!("{} {unit}{half} (n={})", fmt_num(s.mean), s.n)
}

/// A run's cell: its figures, the change, the ratio's CI95 and p, the
/// verdict (marked when it is one), and what its monitors saw.
fn against_base(r: &Row) -> String {
    let class = match r.verdict {
        Verdict::Regressed => " bad",
        Verdict::Improved => " good",
        _ => "",
    };
    let mut text = r.new.as_ref().map_or_else(|| "-".into(), |s| figures(s, &r.unit));
    if let Some(x) = r.ratio {
        text += &format!(" · {:+.1}%", (x - 1.0) * 100.0);
    }
    if let Some((lo, hi)) = r.ratio_ci {
        text += &format!(" · ratio {lo:.3}–{hi:.3}");
    }
    match (r.test, r.welch_p, r.mwu_p) {
        ("welch", Some(p), _) => text += &format!(" · p={p:.3} (t)"),
        ("mann-whitney", _, Some(p)) => text += &format!(" · p={p:.3} (U)"),
        _ => {}
    }
    let verdict = match &r.verdict {
        Verdict::NotComparable(why) => format!("not comparable: {why}"),
        v => v.word().to_string(),
    };
    let mut out = format!("<td class=\"n{class}\">{} · <b>{}</b>", esc(&text), esc(&verdict));
    for extra in [&r.note, &r.monitors].into_iter().flatten() {
        out += &format!("<br><small>{}</small>", esc(extra));
    }
    out + "</td>"
}

/// The values in the order first seen.
fn distinct<T: PartialEq>(items: impl Iterator<Item = T>) -> Vec<T> {
    let mut out = Vec::new();
    for i in items {
        if !out.contains(&i) {
            out.push(i);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(host: &str, cell: &str, new_mean: f64, verdict: Verdict) -> Row {
        let s = |m: f64| Summary::of(&[m - 1.0, m, m + 1.0]).unwrap();
        Row {
            host: host.into(),
            play: "p".into(),
            cell: cell.into(),
            step: "write".into(),
            metric: "speed".into(),
            unit: "MB/s".into(),
            better: benchrig_wire::steps::Better::Higher,
            base: Some(s(100.0)),
            new: Some(s(new_mean)),
            ratio: Some(new_mean / 100.0),
            ratio_ci: Some((0.7, 0.9)),
            welch_p: Some(0.001),
            mwu_p: None,
            test: "welch",
            verdict,
            note: None,
            monitors: Some("w_await +40%".into()),
        }
    }

    #[test]
    fn a_bar_per_run_and_cell_and_the_verdicts_marked() {
        let runs = vec!["base (1)".to_string(), "same (2)".into(), "slower (3)".into()];
        let compared = vec![
            vec![row("a", "bs=4k", 100.0, Verdict::Unchanged), row("b", "bs=4k", 100.0, Verdict::Unchanged)],
            vec![row("a", "bs=4k", 80.0, Verdict::Regressed), row("b", "bs=4k", 120.0, Verdict::Improved)],
        ];
        let page = render(&runs, &compared, "2 runs against base (1)");
        assert!(page.contains("<h1>benchrig compare — same (2), slower (3) against base (1)</h1>"), "{page}");
        // One cell on two hosts: the hosts along x, a bar each for BASE and
        // the two runs (BASE drawn once, not once per comparison).
        let fig = page.split("<figure>").nth(1).unwrap();
        assert!(fig.contains("write: speed (MB/s) — mean with CI95 per run, 1 regressed, 1 improved"), "{fig}");
        assert_eq!(fig.matches("class=\"key\"").count(), 3);
        let bars = fig.matches("<rect").count() - 1; // less the white background
        assert_eq!(bars, 2 * 3, "{fig}");
        assert!(page.contains("<td class=\"n bad\">80.00 MB/s ± "), "{page}");
        assert!(page.contains("-20.0% · ratio 0.700–0.900 · p=0.001 (t) · <b>regressed</b><br><small>w_await +40%"));
        assert!(page.contains("<td class=\"n good\">120.0 MB/s"), "{page}");
        assert_eq!(page.matches("<tr><td>").count(), 2, "a line per host's metric");
    }
}
