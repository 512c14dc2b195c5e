//! The series a bisect follows in a measure run's results: per host ×
//! play × cell parameters × step × metric (as `history` names a series),
//! the metrics the recipe's globs name, each with its samples. Pure.

use crate::history::series::SeriesKey;
use crate::human::describe_params;
use crate::store::{CellRow, SampleRow};
use benchrig_wire::args::Better;
use indexmap::IndexMap;

/// One series' samples of one revision, over its measure runs.
#[derive(Clone, Debug, PartialEq)]
pub struct Sampled {
    pub unit: String,
    pub better: Better,
    pub values: Vec<f64>,
}

/// A revision's series, in the order first measured.
pub type Samples = IndexMap<SeriesKey, Sampled>;

/// The followed series of a run (its `cells` and result `samples`), onto
/// `into`: `metrics` picks them, by the metric's name (`throughput`) or
/// its step's name and it (`write throughput`, as `show` and `compare`
/// print them); a sample that is not a finite number is left out.
pub fn gather(into: &mut Samples, cells: &[CellRow], samples: &[SampleRow], metrics: &globset::GlobSet) {
    let cell_of: std::collections::HashMap<i64, &CellRow> = cells.iter().map(|c| (c.id, c)).collect();
    let followed = |s: &SampleRow| metrics.is_match(&s.metric) || metrics.is_match(format!("{} {}", s.step, s.metric));
    for s in samples.iter().filter(|s| s.value.is_finite() && followed(s)) {
        let Some(c) = cell_of.get(&s.cell_id) else { continue };
        let better = s.better;
        let key = SeriesKey {
            host: c.host.clone(),
            play: c.play.clone(),
            cell: describe_params(&c.params),
            step: s.step.clone(),
            metric: s.metric.clone(),
        };
        let unit = s.unit.clone();
        into.entry(key).or_insert_with(|| Sampled { unit, better, values: Vec::new() }).values.push(s.value);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::testing::{cell_row, sample_row};

    #[test]
    fn the_globbed_metrics_of_each_cell_pool_over_runs() {
        let cells = vec![cell_row(1, "h1"), cell_row(2, "h2")];
        let metrics = globset::GlobSetBuilder::new().add(globset::Glob::new("*put").unwrap()).build().unwrap();
        let run = |v: f64| {
            vec![
                sample_row(1, 1, "throughput", v),
                sample_row(2, 1, "throughput", v + 1.0),
                sample_row(1, 1, "time", 9.0),
            ]
        };
        let mut pooled = Samples::new();
        gather(&mut pooled, &cells, &run(10.0), &metrics);
        gather(&mut pooled, &cells, &run(20.0), &metrics);
        assert_eq!(pooled.len(), 2, "time is not followed: {pooled:?}");
        let (key, first) = pooled.first().unwrap();
        assert_eq!((key.host.as_str(), key.metric.as_str()), ("h1", "throughput"));
        assert_eq!((first.values.as_slice(), first.better), ([10.0, 20.0].as_slice(), Better::Higher));
        assert_eq!(pooled[1].values, [11.0, 21.0]);
        // By the step's name too, as `show` prints a step and its metric.
        let by_step = |glob: &str| {
            let set = globset::GlobSetBuilder::new().add(globset::Glob::new(glob).unwrap()).build().unwrap();
            let mut pooled = Samples::new();
            gather(&mut pooled, &cells, &run(10.0), &set);
            pooled.keys().map(|k| k.metric.clone()).collect::<Vec<_>>()
        };
        assert_eq!(by_step("read throughput"), ["throughput", "throughput"]);
        assert_eq!(by_step("read *"), ["throughput", "throughput", "time"]);
        assert!(by_step("write throughput").is_empty());
    }
}
