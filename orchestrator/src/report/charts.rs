//! SVG charts for the HTML reports, drawn with plotters' SVG backend (text
//! is left to the browser's fonts, so no font is embedded or needed here).
//! A run's chart is one step's metric over a play's matrix as `shape` laid
//! it out: grouped bars (or lines over a numeric axis) with CI95 whiskers,
//! a colour per value of one named axis, a panel per host and further axis,
//! every panel on the same y scale so panels compare at a glance. The
//! pieces every chart shares (palette, fonts, the SVG document) are here
//! for `history::trend` too.

use super::shape::{self, Shape};
use crate::human::fmt_num;
use plotters::coord::ranged1d::{DefaultFormatting, KeyPointHint, Ranged};
use plotters::coord::types::RangedCoordf64;
use plotters::prelude::*;

/// Okabe and Ito's colour-blind-safe palette (yellow left out: unreadable on
/// white), in the order series take them.
pub const PALETTE: [RGBColor; 7] = [
    RGBColor(0, 114, 178),
    RGBColor(230, 159, 0),
    RGBColor(0, 158, 115),
    RGBColor(213, 94, 0),
    RGBColor(204, 121, 167),
    RGBColor(86, 180, 233),
    RGBColor(100, 100, 100),
];

/// Series `i`'s colour.
pub fn colour(i: usize) -> RGBColor {
    PALETTE[i % PALETTE.len()]
}

/// `#0072b2`, for the HTML legend beside a chart.
pub fn hex(c: RGBColor) -> String {
    format!("#{:02x}{:02x}{:02x}", c.0, c.1, c.2)
}

/// Sizes of text, chosen to be read at 100% zoom: the SVGs are drawn at
/// the size they are shown (never scaled down on a laptop). Plotters'
/// SVG backend writes a font size of the one asked over 1.24, so these
/// give 14.5, 16 and 17 pixels.
pub const TICK_FONT: u32 = 18;
pub const AXIS_FONT: u32 = 20;
pub const PANEL_FONT: u32 = 21;
pub const GRID: RGBColor = RGBColor(225, 225, 225);

/// The widest a chart is drawn: a 1280-pixel window less the page's margins.
pub const MAX_WIDTH: u32 = 1180;

/// One mean a chart shows, placed by `Shape::place`.
pub struct Mean {
    pub at: shape::Placed,
    pub mean: f64,
    pub ci: Option<(f64, f64)>,
}

pub type Area<'a> = DrawingArea<SVGBackend<'a>, plotters::coord::Shift>;
pub type Drawn = Result<(), Box<dyn std::error::Error>>;

/// An SVG document of this size, drawn by `draw` (a chart that cannot be
/// drawn leaves an empty picture, not a failed report).
pub fn svg(size: (u32, u32), draw: impl FnOnce(&Area) -> Drawn) -> String {
    let mut svg = String::new();
    {
        let root = SVGBackend::with_string(&mut svg, size).into_drawing_area();
        let _ = root.fill(&WHITE);
        let _ = draw(&root);
        let _ = root.present();
    }
    svg
}

/// The top of a y axis that starts at zero: a tenth above the largest value.
pub fn top(values: impl Iterator<Item = f64>) -> f64 {
    let m = values.filter(|v| v.is_finite()).fold(0.0f64, f64::max);
    if m > 0.0 {
        m * 1.1
    } else {
        1.0
    }
}

/// A tick label: as few digits as the value needs (`250`, `0.5`, `1.25`).
pub fn tick(v: f64) -> String {
    let s = fmt_num(v);
    if s.contains('.') {
        s.trim_end_matches('0').trim_end_matches('.').to_string()
    } else {
        s
    }
}

/// The panels' layout: columns, and one panel's size.
fn layout(shape: &Shape, panels: usize) -> (usize, (u32, u32)) {
    let slots = shape.x.values.len() * if shape.numeric_x { 1 } else { shape.series().len() };
    // Room for every bar (or line point) and its label.
    let need = 110 + 26 * slots as u32 + 30 * shape.x.values.len() as u32;
    let base = match panels {
        1 => 560,
        2 => 520,
        _ => 380,
    };
    let width = need.max(base).min(MAX_WIDTH);
    let cols = (MAX_WIDTH / width).clamp(1, 3).min(panels as u32) as usize;
    (cols, (width, 330))
}

/// One step's metric as `shape` lays it out: a panel per panel title,
/// all on one y scale from zero.
pub fn chart(shape: &Shape, unit: &str, means: &[Mean]) -> String {
    let titles = shape.panel_titles();
    let (cols, (w, h)) = layout(shape, titles.len());
    let rows = titles.len().div_ceil(cols);
    let y_max = top(means.iter().map(|m| m.ci.map_or(m.mean, |c| c.1.max(m.mean))));
    svg((w * cols as u32, h * rows as u32), |root| {
        let areas = root.split_evenly((rows, cols));
        for (p, (area, title)) in areas.iter().zip(&titles).enumerate() {
            let mine: Vec<&Mean> = means.iter().filter(|m| m.at.panel == p).collect();
            draw_panel(area, shape, title, unit, y_max, &mine)?;
        }
        Ok(())
    })
}

fn draw_panel(area: &Area, shape: &Shape, title: &str, unit: &str, y_max: f64, means: &[&Mean]) -> Drawn {
    let mut b = ChartBuilder::on(area);
    b.margin(10).margin_right(18).x_label_area_size(58).y_label_area_size(84);
    if !title.is_empty() {
        b.caption(title, ("sans-serif", PANEL_FONT).into_font().style(FontStyle::Bold));
    }
    let n = shape.x.values.len();
    if shape.numeric_x {
        let xs: Vec<f64> = shape.x.values.iter().map(|v| shape::number(v)).collect();
        let (lo, hi) =
            (xs.iter().copied().fold(f64::INFINITY, f64::min), xs.iter().copied().fold(f64::NEG_INFINITY, f64::max));
        let pad = ((hi - lo) * 0.06).max(0.5);
        let mut chart = b.build_cartesian_2d(Keyed::new((lo - pad)..(hi + pad), xs.clone()), 0.0..y_max)?;
        mesh(&mut chart, &shape.x.name, unit, &|x: &f64| tick(*x))?;
        for (k, _) in shape.series().iter().enumerate() {
            let c = colour(k);
            let mut pts: Vec<(f64, &Mean)> =
                means.iter().filter(|m| m.at.colour == k).map(|m| (xs[m.at.x], *m)).collect();
            pts.sort_by(|a, b| a.0.total_cmp(&b.0));
            chart.draw_series(LineSeries::new(pts.iter().map(|(x, m)| (*x, m.mean)), c.stroke_width(3)))?;
            chart.draw_series(pts.iter().map(|(x, m)| Circle::new((*x, m.mean), 5, c.filled())))?;
            let cap = (hi - lo + 2.0 * pad) * 0.012;
            for (x, m) in &pts {
                whisker(&mut chart, *x, cap, m.ci, c.stroke_width(2))?;
            }
        }
    } else {
        let labels = shape.x.values.clone();
        let keys: Vec<f64> = (0..n).map(|i| i as f64).collect();
        let mut chart = b.build_cartesian_2d(Keyed::new(-0.5..(n as f64 - 0.5), keys), 0.0..y_max)?;
        let label = move |x: &f64| labels.get(x.round().max(0.0) as usize).cloned().unwrap_or_default();
        mesh(&mut chart, &shape.x.name, unit, &label)?;
        let k = shape.series().len();
        let width = 0.8 / k as f64;
        for m in means {
            let mid = m.at.x as f64 + (m.at.colour as f64 - (k as f64 - 1.0) / 2.0) * width;
            let (l, r) = (mid - width * 0.45, mid + width * 0.45);
            chart
                .draw_series(std::iter::once(Rectangle::new([(l, 0.0), (r, m.mean)], colour(m.at.colour).filled())))?;
            whisker(&mut chart, mid, width * 0.2, m.ci, BLACK.stroke_width(2))?;
        }
    }
    Ok(())
}

/// A linear x whose ticks are exactly the given values (a category's
/// index, a matrix value, a run): plotters' own `WithKeyPoints` loses the
/// f64 formatter that `configure_mesh` needs.
pub struct Keyed {
    inner: RangedCoordf64,
    keys: Vec<f64>,
}

impl Keyed {
    pub fn new(range: std::ops::Range<f64>, keys: Vec<f64>) -> Keyed {
        Keyed { inner: range.into(), keys }
    }
}

impl Ranged for Keyed {
    type FormatOption = DefaultFormatting;
    type ValueType = f64;
    fn map(&self, v: &f64, limit: (i32, i32)) -> i32 {
        self.inner.map(v, limit)
    }
    fn key_points<Hint: KeyPointHint>(&self, _: Hint) -> Vec<f64> {
        self.keys.clone()
    }
    fn range(&self) -> std::ops::Range<f64> {
        self.inner.range()
    }
}

pub type Chart2d<'a, 'b> = ChartContext<'a, SVGBackend<'b>, Cartesian2d<Keyed, RangedCoordf64>>;

/// The grid, ticks and axis names, in the report's fonts.
pub fn mesh(chart: &mut Chart2d<'_, '_>, x_name: &str, unit: &str, x_label: &dyn Fn(&f64) -> String) -> Drawn {
    chart
        .configure_mesh()
        .disable_x_mesh()
        .max_light_lines(0)
        .bold_line_style(GRID)
        .y_labels(6)
        .label_style(("sans-serif", TICK_FONT))
        .axis_desc_style(("sans-serif", AXIS_FONT))
        .x_label_formatter(x_label)
        .y_label_formatter(&|y| tick(*y))
        .x_desc(x_name)
        .y_desc(unit)
        .draw()?;
    Ok(())
}

/// A CI95 whisker at `x`: the interval and its caps, `cap` wide each side.
pub fn whisker(chart: &mut Chart2d<'_, '_>, x: f64, cap: f64, ci: Option<(f64, f64)>, style: ShapeStyle) -> Drawn {
    let Some((lo, hi)) = ci.filter(|(lo, hi)| lo.is_finite() && hi.is_finite()) else { return Ok(()) };
    let lo = lo.max(0.0);
    for line in [vec![(x, lo), (x, hi)], vec![(x - cap, lo), (x + cap, lo)], vec![(x - cap, hi), (x + cap, hi)]] {
        chart.draw_series(std::iter::once(PathElement::new(line, style)))?;
    }
    Ok(())
}
