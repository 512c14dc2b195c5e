//! SVG charts for the HTML report, drawn with plotters' SVG backend (text
//! is left to the browser's fonts, so no font is embedded or needed here).

use plotters::prelude::*;

/// One bar: a cell on a host, its mean and 95% interval.
pub struct Bar {
    pub label: String,
    pub mean: f64,
    pub ci: Option<(f64, f64)>,
}

/// A point of a line: x, the mean, and its CI95 when there is one.
pub type Point = (f64, f64, Option<(f64, f64)>);

/// One line: a host (and the parameters the x axis does not vary), points
/// along a numeric axis.
pub struct Series {
    pub name: String,
    pub points: Vec<Point>,
}

const PALETTE: [RGBColor; 6] = [
    RGBColor(31, 119, 180),
    RGBColor(255, 127, 14),
    RGBColor(44, 160, 44),
    RGBColor(214, 39, 40),
    RGBColor(148, 103, 189),
    RGBColor(140, 86, 75),
];

fn top(values: impl Iterator<Item = f64>) -> f64 {
    let m = values.filter(|v| v.is_finite()).fold(0.0f64, f64::max);
    if m > 0.0 {
        m * 1.1
    } else {
        1.0
    }
}

/// Bars with CI95 error bars, one per label.
pub fn bars(title: &str, unit: &str, bars: &[Bar]) -> String {
    let mut svg = String::new();
    let width = (160 + 70 * bars.len() as u32).clamp(420, 1400);
    {
        let root = SVGBackend::with_string(&mut svg, (width, 380)).into_drawing_area();
        let _ = draw_bars(&root, title, unit, bars);
        let _ = root.present();
    }
    svg
}

fn draw_bars(
    root: &DrawingArea<SVGBackend, plotters::coord::Shift>,
    title: &str,
    unit: &str,
    bars: &[Bar],
) -> Result<(), Box<dyn std::error::Error>> {
    root.fill(&WHITE)?;
    let y_max = top(bars.iter().map(|b| b.ci.map_or(b.mean, |c| c.1.max(b.mean))));
    let n = bars.len().max(1);
    let mut chart = ChartBuilder::on(root)
        .caption(title, ("sans-serif", 16))
        .margin(12)
        .x_label_area_size(90)
        .y_label_area_size(70)
        .build_cartesian_2d(-0.5f64..(n as f64 - 0.5), 0.0..y_max)?;
    let labels: Vec<String> = bars.iter().map(|b| b.label.clone()).collect();
    chart
        .configure_mesh()
        .disable_x_mesh()
        .x_labels(n)
        .x_label_formatter(&|x| {
            let i = x.round();
            if (x - i).abs() < 1e-6 && i >= 0.0 {
                labels.get(i as usize).cloned().unwrap_or_default()
            } else {
                String::new()
            }
        })
        .y_desc(unit)
        .draw()?;
    for (i, b) in bars.iter().enumerate() {
        let x = i as f64;
        let color = PALETTE[i % PALETTE.len()];
        chart.draw_series(std::iter::once(Rectangle::new([(x - 0.35, 0.0), (x + 0.35, b.mean)], color.filled())))?;
        if let Some((lo, hi)) = b.ci {
            chart.draw_series(std::iter::once(ErrorBar::new_vertical(x, lo, b.mean, hi, BLACK.stroke_width(1), 12)))?;
        }
    }
    Ok(())
}

/// Lines over a numeric axis (device count, file size), one per series,
/// with CI95 error bars at each point.
pub fn lines(title: &str, x_name: &str, unit: &str, series: &[Series]) -> String {
    let mut svg = String::new();
    {
        let root = SVGBackend::with_string(&mut svg, (720, 400)).into_drawing_area();
        let _ = draw_lines(&root, title, x_name, unit, series);
        let _ = root.present();
    }
    svg
}

fn draw_lines(
    root: &DrawingArea<SVGBackend, plotters::coord::Shift>,
    title: &str,
    x_name: &str,
    unit: &str,
    series: &[Series],
) -> Result<(), Box<dyn std::error::Error>> {
    root.fill(&WHITE)?;
    let xs = || series.iter().flat_map(|s| s.points.iter().map(|p| p.0));
    let (x_min, x_max) = (xs().fold(f64::INFINITY, f64::min), xs().fold(f64::NEG_INFINITY, f64::max));
    let pad = ((x_max - x_min) * 0.05).max(0.5);
    let y_max = top(series.iter().flat_map(|s| s.points.iter().map(|p| p.2.map_or(p.1, |c| c.1.max(p.1)))));
    let mut chart = ChartBuilder::on(root)
        .caption(title, ("sans-serif", 16))
        .margin(12)
        .x_label_area_size(40)
        .y_label_area_size(70)
        .build_cartesian_2d((x_min - pad)..(x_max + pad), 0.0..y_max)?;
    chart.configure_mesh().x_desc(x_name).y_desc(unit).draw()?;
    for (i, s) in series.iter().enumerate() {
        let color = PALETTE[i % PALETTE.len()];
        chart
            .draw_series(LineSeries::new(s.points.iter().map(|p| (p.0, p.1)), color.stroke_width(2)))?
            .label(s.name.clone())
            .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 16, y)], color.stroke_width(2)));
        chart.draw_series(s.points.iter().map(|p| Circle::new((p.0, p.1), 3, color.filled())))?;
        chart.draw_series(
            s.points.iter().filter_map(|p| p.2.map(|(lo, hi)| ErrorBar::new_vertical(p.0, lo, p.1, hi, color, 8))),
        )?;
    }
    chart.configure_series_labels().background_style(WHITE.mix(0.8)).border_style(BLACK).draw()?;
    Ok(())
}
