//! What the monitors saw, on the orchestrator's side: a measured step's
//! `MonitorSeries` (sampled by the agent) summarised into monitor metrics
//! (`summary`), which are stored beside the step's own but marked
//! (`MetricKind::Monitor`) so no report ever judges them as results, and
//! read back into a short explanation of a change (`explain`). A leaf: it
//! knows the wire types and nothing of the store or the reports.

pub mod explain;
pub mod summary;

/// What a stored metric is: the step's own result, or a summary of what the
/// monitors saw while it ran. Only `Benchmark` metrics are judged
/// (regressed, improved); `Monitor` ones explain them.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum MetricKind {
    Benchmark,
    Monitor,
}

impl MetricKind {
    /// The word stored in `samples.kind` (`NULL` in rows stored before the
    /// column existed reads as `Benchmark`).
    pub fn as_str(self) -> &'static str {
        match self {
            MetricKind::Benchmark => "benchmark",
            MetricKind::Monitor => "monitor",
        }
    }

    /// A stored word back; `None` for a word this benchrig does not know.
    pub fn from_stored(word: Option<&str>) -> Option<MetricKind> {
        match word {
            None | Some("benchmark") => Some(MetricKind::Benchmark),
            Some("monitor") => Some(MetricKind::Monitor),
            Some(_) => None,
        }
    }
}
