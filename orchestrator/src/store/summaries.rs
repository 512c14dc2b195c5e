//! Each finished run's summaries, a row per cell, step and metric (mean,
//! CI95, n and the rest of `stats::Summary`): what `history` reads instead
//! of a year of samples, and what `prune` keeps of a run when it deletes
//! its samples, so trends and change points over pruned nights still work.
//! Written when a run finishes (`Store::finish_run`) or is imported.

use super::sql::Sql;
use super::{SampleRow, Store, StoreError};
use crate::monitors::MetricKind;
use crate::stats::Summary;
use benchrig_wire::steps::Better;
use indexmap::IndexMap;

/// One metric of one step of one cell, over the run's repetitions.
#[derive(Clone, Debug, PartialEq)]
pub struct SummaryRow {
    pub cell_id: i64,
    pub step_index: i64,
    pub step: String,
    pub workload: String,
    pub metric: String,
    pub unit: String,
    pub better: Better,
    pub kind: MetricKind,
    /// Without `outliers` (which samples they were is gone with them).
    pub summary: Summary,
}

/// Of a stored summary, what a history's point is made of, read in place.
pub struct SummaryRef<'a> {
    pub cell_id: i64,
    pub step: &'a str,
    pub metric: &'a str,
    pub unit: &'a str,
    pub better: Better,
    pub n: usize,
    pub mean: f64,
    pub sd: f64,
    pub ci95: Option<(f64, f64)>,
}

/// The samples' summaries, a row per (cell, step, metric, kind) in the
/// order first stored; values that are not finite are left out, as
/// `Summary::of` would be thrown by them.
pub fn summarise(samples: &[SampleRow]) -> Vec<SummaryRow> {
    // (cell, step, metric, kind) → its first sample (what it is) and the values.
    type Group<'a> = (&'a SampleRow, Vec<f64>);
    let mut groups: IndexMap<(i64, &str, &str, MetricKind), Group> = IndexMap::new();
    for s in samples.iter().filter(|s| s.value.is_finite()) {
        groups.entry((s.cell_id, &s.step, &s.metric, s.kind)).or_insert_with(|| (s, Vec::new())).1.push(s.value);
    }
    groups
        .into_values()
        .filter_map(|(s, values)| {
            let mut summary = Summary::of(&values)?;
            summary.outliers.clear();
            Some(SummaryRow {
                cell_id: s.cell_id,
                step_index: s.step_index,
                step: s.step.clone(),
                workload: s.workload.clone(),
                metric: s.metric.clone(),
                unit: s.unit.clone(),
                better: s.better,
                kind: s.kind,
                summary,
            })
        })
        .collect()
}

impl Store {
    /// (Re)write a run's summaries from its samples, in one transaction.
    pub fn summarise_run(&self, run: i64) -> Result<(), StoreError> {
        let mut samples = self.samples(run)?;
        samples.extend(self.monitor_samples(run)?);
        let rows = summarise(&samples);
        self.db().transaction(|db| {
            db.execute("DELETE FROM summaries WHERE run_id = ?1", &[run.into()])?;
            for r in &rows {
                let s = &r.summary;
                db.execute(
                    "INSERT INTO summaries (run_id, cell_id, step_index, step, workload, metric, unit, better, kind,
                        n, mean, sd, median, min, max, ci_lo, ci_hi, mad, cv)
                     VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15, ?16, ?17, ?18, ?19)",
                    &[
                        run.into(),
                        r.cell_id.into(),
                        r.step_index.into(),
                        r.step.as_str().into(),
                        r.workload.as_str().into(),
                        r.metric.as_str().into(),
                        r.unit.as_str().into(),
                        r.better.as_str().into(),
                        r.kind.as_str().into(),
                        s.n.into(),
                        s.mean.into(),
                        s.sd.into(),
                        s.median.into(),
                        s.min.into(),
                        s.max.into(),
                        s.ci95.map(|c| c.0).into(),
                        s.ci95.map(|c| c.1).into(),
                        s.mad.into(),
                        s.cv.into(),
                    ],
                )?;
            }
            Ok(())
        })
    }

    /// A run's summaries of one kind, each handed to `f` as it is read,
    /// its strings borrowed (a year of them is most of what `history`
    /// reads); whether there was any.
    pub fn each_summary(
        &self,
        run: i64,
        kind: MetricKind,
        mut f: impl FnMut(SummaryRef<'_>),
    ) -> Result<bool, StoreError> {
        let mut any = false;
        // The kind as a word in the statement, not a parameter: so that
        // both databases' planners see `summaries_results_by_run` applies.
        self.db().for_each(
            &format!(
                "SELECT cell_id, step, metric, unit, better, n, mean, sd, ci_lo, ci_hi FROM summaries \
                 WHERE run_id = ?1 AND kind = '{}' ORDER BY id",
                kind.as_str()
            ),
            &[run.into()],
            &mut |v| {
                any = true;
                f(SummaryRef {
                    cell_id: v[0].int(),
                    step: v[1].text(),
                    metric: v[2].text(),
                    unit: v[3].text(),
                    better: super::word_as(v[4].text())?,
                    n: v[5].int() as usize,
                    mean: v[6].real(),
                    sd: v[7].real(),
                    ci95: v[8].opt_real().zip(v[9].opt_real()),
                });
                Ok(())
            },
        )?;
        Ok(any)
    }

    /// A run's summaries in the order written (of one kind, or all); none
    /// for a run that has not finished (or finished before summaries were kept).
    pub fn summaries(&self, run: i64, kind: Option<MetricKind>) -> Result<Vec<SummaryRow>, StoreError> {
        self.summaries_of(run, kind, None)
    }

    /// Only of the named hosts' cells, when they are named.
    pub fn summaries_of(
        &self,
        run: i64,
        kind: Option<MetricKind>,
        hosts: Option<&[&str]>,
    ) -> Result<Vec<SummaryRow>, StoreError> {
        let columns = "cell_id, step_index, step, workload, metric, unit, better, kind,
                       n, mean, sd, median, min, max, ci_lo, ci_hi, mad, cv";
        let mut sql = format!("SELECT {columns} FROM summaries WHERE ");
        let (only, mut params) = super::only(run, "host", hosts);
        sql += &match hosts {
            None => "run_id = ?1".to_string(),
            // A host's by its cells (`summaries_by_cell`), not through its run's.
            Some(_) => format!("cell_id IN (SELECT id FROM cells WHERE run_id = ?1{only})"),
        };
        if let Some(k) = kind {
            params.push(k.as_str().into());
            sql += &format!(" AND kind = ?{}", params.len());
        }
        let rows = self.db().query(&(sql + " ORDER BY id"), &params)?;
        rows.into_iter()
            .map(|mut r| {
                let kind = r.text(7);
                let kind = MetricKind::from_stored(Some(&kind)).ok_or(StoreError::UnknownStatus(kind))?;
                let ci95 = r.opt_real(14).zip(r.opt_real(15));
                Ok(SummaryRow {
                    cell_id: r.int(0),
                    step_index: r.int(1),
                    step: r.take_text(2),
                    workload: r.take_text(3),
                    metric: r.take_text(4),
                    unit: r.take_text(5),
                    better: super::status_of(&r, 6)?,
                    kind,
                    summary: Summary {
                        n: r.int(8) as usize,
                        mean: r.real(9),
                        sd: r.real(10),
                        median: r.real(11),
                        min: r.real(12),
                        max: r.real(13),
                        ci95,
                        mad: r.real(16),
                        cv: r.opt_real(17),
                        outliers: Vec::new(),
                    },
                })
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::super::testing::{cell, new_run, places};
    use super::super::StepRef;
    use super::*;
    use benchrig_wire::steps::{Better, Metric, StepOutput};

    #[test]
    fn a_runs_summaries_read_back_bit_for_bit_as_the_samples_give_them() {
        let metric =
            |name: &str, value: f64| Metric { name: name.into(), value, unit: "MB/s".into(), better: Better::Higher };
        for at in &places().urls {
            let s = Store::open(at).unwrap();
            let run = new_run(&s, None);
            let c = s.add_cell(run, &cell("0:fs=ext4", "h1", 3)).unwrap();
            for (rep, v) in [0.1 + 0.2, 1.0 / 3.0, 2.0f64.sqrt()].into_iter().enumerate() {
                let mut metrics = vec![metric("speed", v)];
                if rep == 0 {
                    metrics.push(metric("lone", 7.0));
                }
                let step =
                    StepRef { index: 0, name: "w", workload: "seq_write", repetition: rep as u32 + 1, attempt: 1 };
                s.add_samples(c, &step, &StepOutput { metrics, ..Default::default() }).unwrap();
            }
            assert!(s.summaries(run, None).unwrap().is_empty(), "none before the run finishes");
            s.finish_run(run, crate::status::RunStatus::Ok).unwrap();
            let stored = s.summaries(run, None).unwrap();
            assert_eq!(s.summaries(run, Some(MetricKind::Monitor)).unwrap(), []);
            assert_eq!(stored, summarise(&s.samples(run).unwrap()), "{at}");
            assert_eq!(stored.len(), 2);
            assert_eq!((stored[0].metric.as_str(), stored[0].summary.n), ("speed", 3));
            assert_eq!(stored[1].summary.ci95, None, "one sample has no interval");
        }
    }

    #[test]
    fn a_hosts_summaries_cells_and_row_are_its_own() {
        for at in &places().urls {
            let s = Store::open(at).unwrap();
            let run = new_run(&s, None);
            for (host, value) in [("h1", 1.0), ("h2", 2.0), ("h1", 3.0)] {
                s.set_host(run, host, crate::status::HostStatus::Ok, None).unwrap();
                let c = s.add_cell(run, &cell(&format!("0:v={value}"), host, 1)).unwrap();
                let step = StepRef { index: 0, name: "w", workload: "seq_write", repetition: 1, attempt: 1 };
                let m = Metric { name: "speed".into(), value, unit: "MB/s".into(), better: Better::Higher };
                s.add_samples(c, &step, &StepOutput { metrics: vec![m], ..Default::default() }).unwrap();
            }
            s.finish_run(run, crate::status::RunStatus::Ok).unwrap();
            let means = |hosts: Option<&[&str]>| -> Vec<f64> {
                let rows = s.summaries_of(run, Some(MetricKind::Benchmark), hosts).unwrap();
                rows.iter().map(|r| r.summary.mean).collect()
            };
            assert_eq!(means(Some(&["h1"])), [1.0, 3.0], "{at}");
            assert_eq!(means(Some(&["h2"])), [2.0], "{at}");
            assert_eq!(means(Some(&["h2", "h1"])), [1.0, 2.0, 3.0], "{at}");
            assert_eq!(means(None), [1.0, 2.0, 3.0], "{at}");
            assert_eq!(s.summaries_of(run, Some(MetricKind::Monitor), Some(&["h1"])).unwrap(), [], "{at}");
            let cells: Vec<String> = s.cells_outline(run, Some(&["h2"])).unwrap().into_iter().map(|c| c.key).collect();
            assert_eq!(cells, ["0:v=2"], "{at}");
            let hosts: Vec<String> = s.hosts_of(run, Some(&["h1"])).unwrap().into_iter().map(|h| h.name).collect();
            assert_eq!(hosts, ["h1"], "{at}");
            assert_eq!(s.hosts_of(run, None).unwrap().len(), 2, "{at}");
        }
    }
}
