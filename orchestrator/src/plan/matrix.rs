//! Expanding a play's matrix into points: the product of its axes (first
//! axis outermost), minus `exclude`, plus `include`. Pure.

use crate::human::scalar_text;
use indexmap::IndexMap;
use serde_json::Value as Json;

/// One cell's parameters, in axis order.
pub type Point = IndexMap<String, Json>;

/// The most cells one play's matrix may have. A benchmark runs every cell
/// at least once, so this is far past any real matrix, and small enough that
/// a product of long axes is refused before it is built rather than after
/// memory runs out.
pub const MAX_POINTS: usize = 100_000;

pub fn expand(axes: &[(String, Json)], exclude: &[Json], include: &[Json]) -> Result<Vec<Point>, String> {
    let size = axes.iter().try_fold(1usize, |n, (_, v)| n.checked_mul(v.as_array().map_or(1, Vec::len)));
    if size.is_none_or(|n| n > MAX_POINTS) {
        let sizes: Vec<String> =
            axes.iter().map(|(k, v)| format!("{k}: {}", v.as_array().map_or(1, Vec::len))).collect();
        return Err(format!(
            "the matrix has more than {MAX_POINTS} cells ({}); split the play or shorten an axis",
            sizes.join(" × ")
        ));
    }
    // An empty axis empties the product: skip building the others' first.
    let mut points = if size == Some(0) { Vec::new() } else { vec![Point::new()] };
    for (name, values) in axes {
        let values: Vec<Json> = match values {
            Json::Array(items) => items.clone(),
            single => vec![single.clone()],
        };
        points = points
            .into_iter()
            .flat_map(|p| {
                values.iter().map(move |v| {
                    let mut q = p.clone();
                    q.insert(name.clone(), v.clone());
                    q
                })
            })
            .collect();
    }
    if axes.is_empty() {
        points.clear();
        points.push(Point::new());
    }
    points.retain(|p| !exclude.iter().any(|e| matches(p, e)));
    for inc in include {
        if let Json::Object(m) = inc {
            let point: Point = m.iter().map(|(k, v)| (k.clone(), v.clone())).collect();
            if !points.iter().any(|p| p == &point) {
                points.push(point);
            }
        }
    }
    Ok(points)
}

/// Does a point have every key/value of a partial one? `4k` and "4k", 1 and "1" are equal.
fn matches(point: &Point, partial: &Json) -> bool {
    let Json::Object(m) = partial else { return false };
    m.iter().all(|(k, v)| point.get(k).is_some_and(|pv| loose_eq(pv, v)))
}

fn loose_eq(a: &Json, b: &Json) -> bool {
    a == b || (!a.is_object() && !a.is_array() && scalar_text(a) == scalar_text(b))
}

/// `fs=ext4 bs=4k`: how a cell is shown and keyed.
pub fn describe(point: &Point) -> String {
    point.iter().map(|(k, v)| format!("{k}={}", scalar_text(v))).collect::<Vec<_>>().join(" ")
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn axes(v: Json) -> Vec<(String, Json)> {
        v.as_object().unwrap().iter().map(|(k, v)| (k.clone(), v.clone())).collect()
    }

    #[test]
    fn product_in_axis_order() {
        let p = expand(&axes(json!({"fs": ["ext4", "xfs"], "bs": ["4k", "1M"]})), &[], &[]).unwrap();
        let shown: Vec<String> = p.iter().map(describe).collect();
        assert_eq!(shown, ["fs=ext4 bs=4k", "fs=ext4 bs=1M", "fs=xfs bs=4k", "fs=xfs bs=1M"]);
    }

    #[test]
    fn exclude_include_and_scalars() {
        let p = expand(
            &axes(json!({"fs": ["ext4", "xfs"], "n": [1, 2], "mode": "cold"})),
            &[json!({"fs": "xfs", "n": "2"})],
            &[json!({"fs": "btrfs", "n": 1, "mode": "warm"}), json!({"fs": "ext4", "n": 1, "mode": "cold"})],
        )
        .unwrap();
        let shown: Vec<String> = p.iter().map(describe).collect();
        assert_eq!(
            shown,
            ["fs=ext4 n=1 mode=cold", "fs=ext4 n=2 mode=cold", "fs=xfs n=1 mode=cold", "fs=btrfs n=1 mode=warm"]
        );
    }

    #[test]
    fn no_axes_is_one_cell_and_an_empty_axis_is_none() {
        assert_eq!(expand(&[], &[], &[]).unwrap().len(), 1);
        assert!(expand(&axes(json!({"fs": []})), &[], &[]).unwrap().is_empty());
    }

    #[test]
    fn huge_products_are_refused_before_they_are_built() {
        // Six axes of 100 values: 10^12 cells, which used to be built until memory ran out.
        let axis: Vec<u32> = (0..100).collect();
        let big: Vec<(String, Json)> = (0..6).map(|i| (format!("a{i}"), json!(axis))).collect();
        let e = expand(&big, &[], &[]).unwrap_err();
        assert!(e.starts_with("the matrix has more than 100000 cells (a0: 100 × a1: 100"), "{e}");
        // Products that overflow usize are refused too.
        let long: Vec<(String, Json)> = (0..40).map(|i| (format!("a{i}"), json!(axis))).collect();
        assert!(expand(&long, &[], &[]).is_err());
        // An empty axis makes the product empty however long the others are.
        let mut empty = big.clone();
        empty.push(("none".into(), json!([])));
        assert!(expand(&empty, &[], &[]).unwrap().is_empty());
        assert_eq!(expand(&big[..2], &[], &[]).unwrap().len(), 10_000);
    }
}
