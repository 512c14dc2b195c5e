//! Matrix expansion (`matrix::expand`): the input is JSON,
//! `{"axes": {NAME: VALUES, ..}, "exclude": [..], "include": [..]}` (a
//! play's `matrix` after rendering; anything else is skipped; the first
//! 64 rules of each list are used). A product
//! within `MAX_POINTS` expands, a larger one is refused before it is built.
//! As `matrix_products_are_bounded` in orchestrator/tests/fuzz_parsers.rs.
#![no_main]

use benchrig::matrix;
use libfuzzer_sys::fuzz_target;
use serde_json::Value as Json;

const MAX_RULES: usize = 64;

fuzz_target!(|data: &[u8]| {
    if data.len() > 64 << 10 {
        return;
    }
    let Ok(doc) = serde_json::from_slice::<Json>(data) else { return };
    let axes: Vec<(String, Json)> = match doc.get("axes") {
        Some(Json::Object(m)) => m.iter().map(|(k, v)| (k.clone(), v.clone())).collect(),
        _ => return,
    };
    // A few of each, as a play has (the property test draws up to three):
    // each is checked against every point.
    let list = |k: &str| -> Vec<Json> {
        doc.get(k).and_then(Json::as_array).map(|l| l.iter().take(MAX_RULES).cloned().collect()).unwrap_or_default()
    };
    let (exclude, include) = (list("exclude"), list("include"));
    let product = axes.iter().try_fold(1usize, |n, (_, v)| n.checked_mul(v.as_array().map_or(1, Vec::len)));
    match matrix::expand(&axes, &exclude, &include) {
        Ok(points) => assert!(points.len() <= matrix::MAX_POINTS + include.len(), "{} points", points.len()),
        Err(e) => assert!(product.is_none_or(|n| n > matrix::MAX_POINTS), "{e}"),
    }
});
