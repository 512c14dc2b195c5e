//! How a play's results are laid out as charts, decided from the play's
//! matrix alone (pure, no drawing): which axis runs along x, which one is
//! the colour (with a legend), and which panels (small multiples: per host,
//! then per value of any further axis) a chart is split into — so a chart
//! reads like the experiment was planned, and a colour always means a
//! value of a named axis, never just "the next bar".

use crate::human::scalar_text;
use benchrig_wire::units::ByteSize;
use serde_json::Value as Json;

/// The shape of a play's charts: the same for every step and metric.
#[derive(Clone, Debug, PartialEq)]
pub struct Shape {
    /// The axis along x (`host` when the matrix varies nothing).
    pub x: Axis,
    /// The axis told apart by colour, when a second one varies.
    pub colour: Option<Axis>,
    /// The axes each panel holds one value of; hosts first when several.
    pub panels: Vec<Axis>,
    /// Lines over a numeric x (device count, noise), else grouped bars.
    pub numeric_x: bool,
}

/// An axis and its values, in the order they are drawn.
#[derive(Clone, Debug, PartialEq)]
pub struct Axis {
    pub name: String,
    pub values: Vec<String>,
}

/// The pseudo-axis of the cells' hosts.
pub const HOST: &str = "host";

/// One mean to draw: which panel, x slot and colour it goes to.
#[derive(Clone, Debug, PartialEq)]
pub struct Placed {
    pub panel: usize,
    pub x: usize,
    pub colour: usize,
}

impl Shape {
    /// The shape of the charts of these cells (one play's).
    pub fn of(cells: &[&Json]) -> Shape {
        let hosts = Axis { name: HOST.into(), values: distinct(cells.iter().map(|c| host(c))) };
        let varying: Vec<Axis> = axis_names(cells)
            .into_iter()
            .map(|name| {
                let values = sorted(distinct(cells.iter().map(|c| value(c, &name))));
                Axis { name, values }
            })
            .filter(|a| a.values.len() > 1)
            .collect();
        if varying.is_empty() {
            return Shape { x: hosts, colour: None, panels: vec![], numeric_x: false };
        }
        // A numeric axis is the natural x (a line over it); else a size
        // (block size: the x of every storage plot); else the innermost axis.
        let pick = |f: fn(&str) -> Option<f64>| varying.iter().rposition(|a| a.values.iter().all(|v| f(v).is_some()));
        let (xi, numeric_x) = match (pick(|v| v.parse().ok()), pick(size)) {
            (Some(i), _) => (i, true),
            (None, Some(i)) => (i, false),
            (None, None) => (varying.len() - 1, false),
        };
        let mut rest = varying.clone();
        let x = rest.remove(xi);
        let colour = (!rest.is_empty()).then(|| rest.remove(0));
        let panels = (hosts.values.len() > 1).then_some(hosts).into_iter().chain(rest).collect();
        Shape { x, colour, panels, numeric_x }
    }

    /// The panel titles, one per combination of the panel axes' values
    /// ("old · ramdisk=yes"); one untitled panel when there are none.
    pub fn panel_titles(&self) -> Vec<String> {
        let mut titles = vec![String::new()];
        for a in &self.panels {
            titles = titles
                .iter()
                .flat_map(|t| {
                    a.values.iter().map(move |v| {
                        let part = if a.name == HOST { v.clone() } else { format!("{}={v}", a.name) };
                        if t.is_empty() {
                            part
                        } else {
                            format!("{t} · {part}")
                        }
                    })
                })
                .collect();
        }
        titles
    }

    /// Where a cell's mean goes; `None` for a value the shape has not seen.
    pub fn place(&self, cell: &Json) -> Option<Placed> {
        let index = |a: &Axis| a.values.iter().position(|v| *v == axis_value(cell, &a.name));
        let x = index(&self.x)?;
        let colour = match &self.colour {
            Some(a) => index(a)?,
            None => 0,
        };
        let mut panel = 0;
        for a in &self.panels {
            panel = panel * a.values.len() + index(a)?;
        }
        Some(Placed { panel, x, colour })
    }

    /// The names the colours stand for (one unnamed series without a colour axis).
    pub fn series(&self) -> Vec<String> {
        self.colour.as_ref().map_or_else(|| vec![String::new()], |a| a.values.clone())
    }
}

fn host(c: &Json) -> String {
    c["host"].as_str().unwrap_or_default().to_string()
}

fn value(c: &Json, axis: &str) -> String {
    match &c["params"][axis] {
        Json::Null => String::new(),
        v => scalar_text(v),
    }
}

fn axis_value(c: &Json, axis: &str) -> String {
    if axis == HOST {
        host(c)
    } else {
        value(c, axis)
    }
}

/// Every parameter name of the cells, in first-seen (matrix) order.
fn axis_names(cells: &[&Json]) -> Vec<String> {
    distinct(cells.iter().flat_map(|c| c["params"].as_object().into_iter().flat_map(|m| m.keys().cloned())))
}

fn distinct(items: impl Iterator<Item = String>) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for i in items {
        if !out.contains(&i) {
            out.push(i);
        }
    }
    out
}

/// A size with a unit (`4k`, `1M`): plain numbers are numbers, not sizes.
fn size(v: &str) -> Option<f64> {
    if v.parse::<f64>().is_ok() {
        return None;
    }
    ByteSize::parse(v).ok().map(|b| b.0 as f64)
}

/// Numbers and sizes in increasing order; anything else as the matrix has it.
fn sorted(mut values: Vec<String>) -> Vec<String> {
    let key = |v: &String| v.parse::<f64>().ok().or_else(|| size(v));
    if values.iter().all(|v| key(v).is_some()) {
        values.sort_by(|a, b| key(a).unwrap_or(0.0).total_cmp(&key(b).unwrap_or(0.0)));
    }
    values
}

/// A value's x position on a numeric axis.
pub fn number(v: &str) -> f64 {
    v.parse().unwrap_or(0.0)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn cells(list: &[(&str, Json)]) -> Vec<Json> {
        list.iter().map(|(h, p)| json!({"host": h, "params": p})).collect()
    }

    fn names(a: &[Axis]) -> Vec<&str> {
        a.iter().map(|a| a.name.as_str()).collect()
    }

    #[test]
    fn block_size_runs_along_x_and_the_filesystem_is_the_colour_with_a_panel_per_host() {
        let mut list = Vec::new();
        for h in ["old", "fast1"] {
            for fs in ["ext4", "xfs", "btrfs"] {
                for bs in ["1M", "4k"] {
                    list.push((h, json!({"fs": fs, "bs": bs})));
                }
            }
        }
        let c = cells(&list);
        let refs: Vec<&Json> = c.iter().collect();
        let s = Shape::of(&refs);
        assert_eq!(s.x, Axis { name: "bs".into(), values: vec!["4k".into(), "1M".into()] }, "sizes in order");
        assert!(!s.numeric_x, "a size is a category: grouped bars");
        assert_eq!(s.colour.as_ref().unwrap().values, ["ext4", "xfs", "btrfs"], "the matrix's order");
        assert_eq!(names(&s.panels), ["host"]);
        assert_eq!(s.panel_titles(), ["old", "fast1"]);
        assert_eq!(s.place(&c[7]), Some(Placed { panel: 1, x: 0, colour: 0 }), "fast1 ext4 4k");
        assert_eq!(s.series(), ["ext4", "xfs", "btrfs"]);
    }

    #[test]
    fn a_numeric_axis_is_a_line_a_third_axis_makes_panels_and_constants_are_no_axis() {
        let mut list = Vec::new();
        for disks in [4, 1, 2] {
            for fs in ["ext4", "btrfs"] {
                for ram in ["yes", "no"] {
                    list.push(("h", json!({"size": "1G", "disks": disks, "fs": fs, "ramdisk": ram})));
                }
            }
        }
        let c = cells(&list);
        let refs: Vec<&Json> = c.iter().collect();
        let s = Shape::of(&refs);
        assert_eq!(s.x.name, "disks");
        assert_eq!(s.x.values, ["1", "2", "4"]);
        assert!(s.numeric_x);
        assert_eq!(s.colour.as_ref().unwrap().name, "fs");
        assert_eq!(names(&s.panels), ["ramdisk"], "one host: no host panels; size is constant");
        assert_eq!(s.panel_titles(), ["ramdisk=yes", "ramdisk=no"]);
        assert_eq!(s.place(&c[0]), Some(Placed { panel: 0, x: 2, colour: 0 }));
    }

    #[test]
    fn without_a_varying_axis_the_hosts_are_the_x_and_there_is_one_series() {
        let c = cells(&[("old", json!({})), ("fast1", json!({}))]);
        let refs: Vec<&Json> = c.iter().collect();
        let s = Shape::of(&refs);
        assert_eq!(s.x.values, ["old", "fast1"]);
        assert_eq!((s.colour.clone(), s.panels.clone()), (None, vec![]));
        assert_eq!(s.panel_titles(), [""]);
        assert_eq!(s.series(), [""]);
        assert_eq!(s.place(&c[1]), Some(Placed { panel: 0, x: 1, colour: 0 }));
    }
}
