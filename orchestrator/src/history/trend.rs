//! A series' trend as an SVG (the charts of `history --format html`): the points'
//! means as a line over the runs with their CI95 as a band, broken at
//! each split (a grey dashed line: the configuration changed, so the
//! parts are not compared), and each change point marked where it arrived
//! (orange for a regression, green for an improvement) — in the large
//! version annotated with its percentage and p-value, with the means of
//! the segments it separates. Drawn with the report's chart helpers
//! (`report::charts`), so both reports look and read alike.

use crate::report::charts::{self, mesh, svg, tick, Drawn, Keyed, AXIS_FONT, TICK_FONT};
use plotters::element::DashedPathElement;
use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};

/// What a trend chart shows.
pub struct Trend {
    /// Per run, oldest first: the mean and its CI95.
    pub points: Vec<(f64, Option<(f64, f64)>)>,
    /// The x label of each point (the run's name or id).
    pub labels: Vec<String>,
    /// Where the configuration changed: the first point of each new part.
    pub splits: Vec<usize>,
    pub changes: Vec<Marked>,
    pub unit: String,
}

/// A change point: the first point after it, which way it went, its note
/// ("−20.1% · p=1.2e-05") and the means of the segments on either side.
pub struct Marked {
    pub at: usize,
    pub regression: bool,
    pub note: String,
    pub before: f64,
    pub after: f64,
}

pub const REGRESSION: RGBColor = RGBColor(213, 94, 0);
pub const IMPROVEMENT: RGBColor = RGBColor(0, 158, 115);
const SPLIT: RGBColor = RGBColor(120, 120, 120);

/// The small chart of the grid: no run labels but the first and last.
pub fn small(t: &Trend) -> String {
    svg((380, 230), |root| draw(root, t, false))
}

/// The large chart of a series with a change.
pub fn large(t: &Trend) -> String {
    svg((charts::MAX_WIDTH, 420), |root| draw(root, t, true))
}

/// The y range: the points and their intervals with a margin, not from
/// zero (a trend is about change; the notes give its size).
pub fn y_range(points: &[(f64, Option<(f64, f64)>)]) -> (f64, f64) {
    let values = points.iter().flat_map(|(m, ci)| [Some(*m), ci.map(|c| c.0), ci.map(|c| c.1)]).flatten();
    let (lo, hi) =
        values.filter(|v| v.is_finite()).fold((f64::INFINITY, f64::NEG_INFINITY), |(lo, hi), v| (lo.min(v), hi.max(v)));
    if !lo.is_finite() {
        return (0.0, 1.0);
    }
    let pad = if hi > lo { (hi - lo) * 0.15 } else { hi.abs().max(1.0) * 0.05 };
    ((lo - pad).max(if lo >= 0.0 { 0.0 } else { f64::NEG_INFINITY }), hi + pad)
}

/// Which of `n` points get an x label: at most `max`, evenly spread, the
/// first and the last always.
pub fn labelled(n: usize, max: usize) -> Vec<usize> {
    if n <= max.max(2) {
        return (0..n).collect();
    }
    let step = (n - 1).div_ceil(max.max(2) - 1);
    let mut out: Vec<usize> = (0..n - 1).step_by(step).collect();
    out.push(n - 1);
    out
}

/// The runs between the cuts before and after each point (splits and
/// changes), as ranges: the segments whose means a change compares.
pub fn segments(n: usize, cuts: &[usize]) -> Vec<std::ops::Range<usize>> {
    let mut c: Vec<usize> = std::iter::once(0).chain(cuts.iter().copied()).chain(std::iter::once(n)).collect();
    c.sort_unstable();
    c.dedup();
    c.windows(2).map(|w| w[0]..w[1]).collect()
}

fn draw(root: &Area, t: &Trend, large: bool) -> Drawn {
    let n = t.points.len();
    let (y_lo, y_hi) = y_range(&t.points);
    let keys: Vec<f64> = labelled(n, if large { 12 } else { 2 }).into_iter().map(|i| i as f64).collect();
    let mut b = ChartBuilder::on(root);
    b.margin(8).margin_right(16).x_label_area_size(if large { 58 } else { 30 }).y_label_area_size(if large {
        84
    } else {
        64
    });
    let mut chart = b.build_cartesian_2d(Keyed::new(-0.5..(n as f64 - 0.5).max(0.5), keys), y_lo..y_hi)?;
    let labels = t.labels.clone();
    let label = move |x: &f64| labels.get(x.round().max(0.0) as usize).cloned().unwrap_or_default();
    if large {
        mesh(&mut chart, "run (oldest to newest)", &t.unit, &label)?;
    } else {
        chart
            .configure_mesh()
            .disable_x_mesh()
            .max_light_lines(0)
            .bold_line_style(charts::GRID)
            .y_labels(4)
            .label_style(("sans-serif", TICK_FONT))
            .x_label_formatter(&label)
            .y_label_formatter(&|y| tick(*y))
            .draw()?;
    }
    let line = charts::colour(0);
    let cuts: Vec<usize> = t.splits.clone();
    for part in segments(n, &cuts) {
        let pts = &t.points[part.clone()];
        let band: Vec<(f64, f64)> = part
            .clone()
            .zip(pts)
            .filter_map(|(i, (_, ci))| ci.map(|c| (i as f64, c.1)))
            .chain(part.clone().zip(pts).rev().filter_map(|(i, (_, ci))| ci.map(|c| (i as f64, c.0))))
            .collect();
        if band.len() >= 4 {
            chart.draw_series(std::iter::once(Polygon::new(band, line.mix(0.18).filled())))?;
        }
        chart
            .draw_series(LineSeries::new(part.clone().zip(pts).map(|(i, p)| (i as f64, p.0)), line.stroke_width(2)))?;
        chart.draw_series(
            part.zip(pts).map(|(i, p)| Circle::new((i as f64, p.0), if large { 4 } else { 3 }, line.filled())),
        )?;
    }
    for &s in &t.splits {
        let x = s as f64 - 0.5;
        chart.draw_series(std::iter::once(DashedPathElement::new(
            vec![(x, y_lo), (x, y_hi)],
            6,
            4,
            SPLIT.stroke_width(2),
        )))?;
    }
    let change_cuts: Vec<usize> = t.splits.iter().chain(t.changes.iter().map(|c| &c.at)).copied().collect();
    let segs = segments(n, &change_cuts);
    for c in &t.changes {
        let colour = if c.regression { REGRESSION } else { IMPROVEMENT };
        let x = c.at as f64 - 0.5;
        chart.draw_series(std::iter::once(PathElement::new(vec![(x, y_lo), (x, y_hi)], colour.stroke_width(3))))?;
        if !large {
            continue;
        }
        // The segments' means either side, and the note by the line.
        for (seg, mean) in segs.iter().filter(|s| s.end == c.at || s.start == c.at).map(|s| {
            let mean = if s.end == c.at { c.before } else { c.after };
            (s, mean)
        }) {
            let (a, b) = (seg.start as f64 - 0.3, seg.end as f64 - 0.7);
            chart.draw_series(std::iter::once(DashedPathElement::new(
                vec![(a, mean), (b, mean)],
                8,
                5,
                colour.stroke_width(2),
            )))?;
        }
        let right = c.at * 2 > n;
        let pos = Pos::new(if right { HPos::Right } else { HPos::Left }, VPos::Top);
        let style =
            TextStyle::from(("sans-serif", AXIS_FONT).into_font().style(FontStyle::Bold)).color(&colour).pos(pos);
        let dx = if right { -0.1 } else { 0.1 };
        chart.draw_series(std::iter::once(Text::new(c.note.clone(), (x + dx, y_hi - (y_hi - y_lo) * 0.03), style)))?;
    }
    Ok(())
}

type Area<'a> = charts::Area<'a>;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_y_range_holds_every_interval_and_does_not_start_at_zero() {
        let (lo, hi) = y_range(&[(100.0, Some((98.0, 102.0))), (80.0, Some((79.0, 81.0)))]);
        assert!(lo < 79.0 && lo > 70.0, "{lo}");
        assert!(hi > 102.0 && hi < 110.0, "{hi}");
        let (lo, hi) = y_range(&[(5.0, None), (5.0, None)]);
        assert!(lo < 5.0 && hi > 5.0, "a flat series still has a range");
        assert_eq!(y_range(&[]), (0.0, 1.0));
    }

    #[test]
    fn labels_are_spread_with_the_first_and_last_and_segments_run_between_cuts() {
        assert_eq!(labelled(5, 12), [0, 1, 2, 3, 4]);
        assert_eq!(labelled(30, 2), [0, 29]);
        let l = labelled(30, 12);
        assert!(l.len() <= 13 && l[0] == 0 && *l.last().unwrap() == 29, "{l:?}");
        assert_eq!(segments(10, &[6, 3, 6]), [0..3, 3..6, 6..10]);
        assert_eq!(segments(4, &[]), vec![0..4_usize]);
    }
}
