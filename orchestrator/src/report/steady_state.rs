//! fio's steady state, as the `fio` workload records it in a sample's info
//! (`steady_state`: per job, its `ss` criterion and whether fio attained
//! it): the jobs of a step that did not, and in which repetitions. Every
//! report flags them; a figure measured before the device settled is not
//! the figure the job asked for.

use crate::store::SampleRow;
use serde_json::{json, Value as Json};
use std::collections::{BTreeMap, BTreeSet};

/// A job of one step that did not attain steady state.
#[derive(Clone, Debug, PartialEq)]
pub struct NotAttained {
    pub job: String,
    /// fio's criterion as it reports it (`iops_slope:20.000000%`).
    pub ss: String,
    /// The repetitions (1-based) in which it was not attained.
    pub repetitions: Vec<i64>,
}

impl NotAttained {
    pub fn to_json(&self) -> Json {
        json!({"job": self.job, "ss": self.ss, "repetitions": self.repetitions})
    }

    /// Whether `metric` (`job.direction.figure`) is one of this job's.
    pub fn covers(&self, metric: &str) -> bool {
        metric.strip_prefix(self.job.as_str()).is_some_and(|rest| rest.starts_with('.'))
    }

    /// "job `seq` did not attain steady state (iops_slope:20%) in repetition 2".
    pub fn describe(&self) -> String {
        let reps: Vec<String> = self.repetitions.iter().map(i64::to_string).collect();
        let s = if reps.len() > 1 { "s" } else { "" };
        format!("fio job `{}` did not attain steady state ({}) in repetition{s} {}", self.job, self.ss, reps.join(", "))
    }
}

/// From the samples of one step (every metric row of a repetition carries
/// the same info): its jobs that did not attain steady state.
pub fn not_attained<'a>(samples: impl IntoIterator<Item = &'a SampleRow>) -> Vec<NotAttained> {
    let mut by_job: BTreeMap<(String, String), BTreeSet<i64>> = BTreeMap::new();
    for s in samples {
        let Some(list) = s.info.as_ref().and_then(|i| i.get("steady_state")).and_then(Json::as_array) else { continue };
        for j in list.iter().filter(|j| j["attained"] == json!(false)) {
            let key = (j["job"].as_str().unwrap_or("?").to_string(), j["ss"].as_str().unwrap_or("?").to_string());
            by_job.entry(key).or_default().insert(s.repetition);
        }
    }
    by_job
        .into_iter()
        .map(|((job, ss), reps)| NotAttained { job, ss, repetitions: reps.into_iter().collect() })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(rep: i64, metric: &str, info: Json) -> SampleRow {
        SampleRow {
            cell_id: 1,
            step_index: 0,
            step: "fio".into(),
            workload: "fio".into(),
            repetition: rep,
            metric: metric.into(),
            value: 1.0,
            unit: "IO/s".into(),
            better: benchrig_wire::steps::Better::Higher,
            dev_read_bytes: None,
            dev_write_bytes: None,
            info: Some(info),
            attempt: Some(1),
            wall_s: None,
            kind: crate::monitors::MetricKind::Benchmark,
        }
    }

    #[test]
    fn jobs_that_missed_steady_state_are_listed_with_their_repetitions_once_each() {
        let ss = |a: bool, b: bool| {
            json!({"steady_state": [
                {"job": "seq", "ss": "iops_slope:20.000000%", "attained": a},
                {"job": "rand", "ss": "bw:1.000000%", "attained": b},
            ]})
        };
        let rows = [
            row(1, "seq.read.iops", ss(true, true)),
            row(1, "seq.read.bw", ss(true, true)),
            row(2, "seq.read.iops", ss(false, true)),
            row(2, "seq.read.bw", ss(false, true)),
            row(3, "seq.read.iops", ss(false, false)),
            row(3, "time", json!({})),
        ];
        let got = not_attained(&rows);
        assert_eq!(got.len(), 2);
        assert_eq!(
            got[1].describe(),
            "fio job `seq` did not attain steady state (iops_slope:20.000000%) in repetitions 2, 3"
        );
        assert_eq!(got[0].describe(), "fio job `rand` did not attain steady state (bw:1.000000%) in repetition 3");
        assert!(got[1].covers("seq.read.iops") && !got[1].covers("seqx.read.iops") && !got[1].covers("time"));
        assert!(not_attained(&rows[..2]).is_empty());
    }
}
