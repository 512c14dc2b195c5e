//! A measured step's monitors over its time, for the run report: three
//! panels side by side on one time axis — %util of each device, the
//! devices' MB/s read and written, and the CPU's iowait and user+sys —
//! each series a line with its points marked, in a colour of its own
//! across the figure so one legend names them all.

use super::charts::{colour, mesh, svg, tick, Drawn, Keyed, MAX_WIDTH, PANEL_FONT};
use benchrig_wire::monitor::MonitorSeries;
use plotters::prelude::*;

/// One line of a panel.
struct Line {
    name: String,
    values: Vec<f64>,
}

/// The panels: title, unit, a fixed top (percentages) or none, lines.
fn panels(s: &MonitorSeries) -> Vec<(&'static str, &'static str, Option<f64>, Vec<Line>)> {
    let util =
        s.devices.iter().map(|d| Line { name: format!("%util {}", d.device), values: d.util_pct.clone() }).collect();
    // Summed over the devices: what the step moved, whichever disk held it.
    let total = |f: fn(&benchrig_wire::monitor::DeviceSeries) -> &Vec<f64>| -> Vec<f64> {
        (0..s.t.len()).map(|i| s.devices.iter().filter_map(|d| f(d).get(i)).sum()).collect()
    };
    let busy: Vec<f64> = s.cpu.user_pct.iter().zip(&s.cpu.sys_pct).map(|(u, y)| u + y).collect();
    vec![
        ("device busy", "%util", Some(100.0), util),
        (
            "throughput",
            "MB/s",
            None,
            vec![
                Line { name: "rMB/s".into(), values: total(|d| &d.rmb_s) },
                Line { name: "wMB/s".into(), values: total(|d| &d.wmb_s) },
            ],
        ),
        (
            "CPU",
            "% of all CPUs",
            Some(100.0),
            vec![
                Line { name: "%iowait".into(), values: s.cpu.iowait_pct.clone() },
                Line { name: "%user+sys".into(), values: busy },
            ],
        ),
    ]
}

/// The names of the figure's series, in the order of their colours (for the legend).
pub fn series_names(s: &MonitorSeries) -> Vec<String> {
    panels(s).into_iter().flat_map(|(_, _, _, lines)| lines.into_iter().map(|l| l.name)).collect()
}

/// Ticks at a round step (1, 2 or 5 × a power of ten) from 0 to `t_max`,
/// at most six.
fn round_ticks(t_max: f64) -> Vec<f64> {
    let magnitude = 10f64.powf((t_max / 5.0).log10().floor());
    let step =
        [1.0, 2.0, 5.0, 10.0].into_iter().map(|m| m * magnitude).find(|s| t_max / s <= 5.0).unwrap_or(magnitude * 10.0);
    (0..).map(|i| i as f64 * step).take_while(|t| *t <= t_max * 1.0001).collect()
}

/// The SVG of one step's series.
pub fn chart(s: &MonitorSeries) -> String {
    let panels = panels(s);
    let t_max = s.t.last().copied().filter(|t| *t > 0.0).unwrap_or(1.0);
    let ticks = round_ticks(t_max);
    svg((MAX_WIDTH, 300), |root| {
        let areas = root.split_evenly((1, panels.len()));
        let mut k = 0;
        for (area, (title, unit, fixed_top, lines)) in areas.iter().zip(&panels) {
            draw_panel(area, title, unit, *fixed_top, lines, &s.t, t_max, &ticks, k)?;
            k += lines.len();
        }
        Ok(())
    })
}

#[allow(clippy::too_many_arguments)]
fn draw_panel(
    area: &super::charts::Area,
    title: &str,
    unit: &str,
    fixed_top: Option<f64>,
    lines: &[Line],
    t: &[f64],
    t_max: f64,
    ticks: &[f64],
    first_colour: usize,
) -> Drawn {
    let top = fixed_top.unwrap_or_else(|| super::charts::top(lines.iter().flat_map(|l| l.values.iter().copied())));
    let mut b = ChartBuilder::on(area);
    b.margin(10).margin_right(14).x_label_area_size(52).y_label_area_size(70);
    b.caption(title, ("sans-serif", PANEL_FONT).into_font().style(FontStyle::Bold));
    let mut chart = b.build_cartesian_2d(Keyed::new(0.0..t_max, ticks.to_vec()), 0.0..top)?;
    mesh(&mut chart, "s", unit, &|x: &f64| tick(*x))?;
    for (i, l) in lines.iter().enumerate() {
        let c = colour(first_colour + i);
        let pts: Vec<(f64, f64)> =
            t.iter().copied().zip(l.values.iter().copied()).filter(|p| p.1.is_finite()).collect();
        chart.draw_series(LineSeries::new(pts.iter().copied(), c.stroke_width(2)))?;
        chart.draw_series(pts.iter().map(|p| Circle::new(*p, 3, c.filled())))?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn time_ticks_fall_on_round_seconds() {
        assert_eq!(round_ticks(1.2), [0.0, 0.5, 1.0]);
        assert_eq!(round_ticks(7.3), [0.0, 2.0, 4.0, 6.0]);
        assert_eq!(round_ticks(60.0), [0.0, 20.0, 40.0, 60.0]);
    }

    #[test]
    fn every_series_is_named_and_drawn_in_its_own_colour() {
        let s = crate::monitors::summary::tests::series();
        assert_eq!(series_names(&s), ["%util loop3", "rMB/s", "wMB/s", "%iowait", "%user+sys"]);
        let svg = chart(&s);
        for i in 0..5 {
            let fill = format!("fill=\"{}\"", super::super::charts::hex(colour(i)).to_ascii_uppercase());
            assert!(svg.to_ascii_uppercase().contains(&fill.to_ascii_uppercase()), "series {i}'s points: {fill}");
        }
        assert!(svg.contains("device busy") && svg.contains("throughput"), "the panels' titles");
    }
}
