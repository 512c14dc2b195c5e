//! `bisect show --format html`: a bisect's record as one self-contained
//! page (the report's head, CSP and style): the answer, what was asked, a
//! figure per followed series drawing each measured revision's mean and
//! CI95 in the range's order (the step at the first bad revision is seen
//! before it is read), then the steps' table, the good and bad verdicts
//! marked.

use super::charts::{self, Mean};
use super::page::{self, esc};
use super::shape::{Axis, Placed, Shape};

/// One followed series across the range: each measured revision (its
/// place in the range, the good one 0; in order) with its mean and CI95
/// there.
pub struct Trace {
    pub series: String,
    pub points: Vec<Point>,
}

pub struct Point {
    pub label: String,
    pub mean: f64,
    pub ci95: Option<(f64, f64)>,
}

/// The page: `answer` (the answer line), `asked` (what the bisect was
/// asked, a line each), the traces, and the steps' table.
pub fn render(
    title: &str,
    answer: &str,
    asked: &[String],
    traces: &[Trace],
    header: &[&str],
    rows: &[Vec<String>],
) -> String {
    let mut out = page::head(title);
    for line in answer.lines() {
        out += &format!("<p><b>{}</b></p>\n", esc(line.trim()));
    }
    out += "<ul class=\"meta\">\n";
    for a in asked {
        out += &format!("<li>{}</li>\n", esc(a));
    }
    out += "</ul>\n";
    if !traces.is_empty() {
        out += "<h2>Measured revisions</h2>\n";
        for t in traces {
            out += &figure(t);
        }
    }
    out += "<h2>Steps</h2>\n<table><tr>";
    for h in header {
        out += &format!("<th>{}</th>", esc(&h.to_lowercase()));
    }
    out += "</tr>\n";
    let verdict_column = header.iter().position(|h| *h == "VERDICT");
    for r in rows {
        let class = match verdict_column.map(|i| r[i].as_str()) {
            Some("bad") => " class=\"bad\"",
            Some("good") => " class=\"good\"",
            _ => "",
        };
        out += &format!("<tr{class}>");
        for c in r {
            out += &format!("<td>{}</td>", esc(c));
        }
        out += "</tr>\n";
    }
    out + "</table>\n" + page::TAIL
}

/// A series' means with their CI95, a bar per measured revision.
fn figure(t: &Trace) -> String {
    let x = Axis {
        name: "revision (its place after the good one: the steps' AT)".into(),
        values: t.points.iter().map(|p| p.label.clone()).collect(),
    };
    let shape = Shape { x, colour: None, panels: vec![], numeric_x: false };
    let means: Vec<Mean> = t
        .points
        .iter()
        .enumerate()
        .map(|(i, p)| Mean { at: Placed { panel: 0, x: i, colour: 0 }, mean: p.mean, ci: p.ci95 })
        .collect();
    page::figure(&t.series, None, &[], &charts::chart(&shape, "", &means))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_page_has_a_figure_per_series_and_marks_the_verdicts() {
        let traces = [Trace {
            series: "h · p · - · run time".into(),
            points: vec![
                Point { label: "c0".into(), mean: 1.0, ci95: Some((0.9, 1.1)) },
                Point { label: "c<40>".into(), mean: 4.0, ci95: None },
            ],
        }];
        let header = ["STEP", "REVISION", "VERDICT"];
        let rows = [
            vec!["1".to_string(), "c0".into(), "-".into()],
            vec!["2".to_string(), "c20".into(), "bad".into()],
            vec!["3".to_string(), "c10".into(), "good".into()],
        ];
        let page = render(
            "bisect 1",
            "bisect 1: found: the first bad revision is c23 x",
            &["range c0..c40".into()],
            &traces,
            &header,
            &rows,
        );
        assert!(page.starts_with("<!doctype html>") && page.ends_with("</html>\n"));
        assert_eq!(page.matches("<figure>").count(), 1);
        assert!(page.contains("<figcaption>h · p · - · run time</figcaption>"), "{page}");
        assert!(page.contains("c&lt;40&gt;"), "escaped in the chart's labels");
        assert!(page.contains("<tr class=\"bad\"><td>2</td>") && page.contains("<tr class=\"good\"><td>3</td>"));
        assert!(page.contains("<tr><td>1</td>"), "an endpoint has no verdict");
        assert!(page.contains("<p><b>bisect 1: found: the first bad revision is c23 x</b></p>"));
    }
}
