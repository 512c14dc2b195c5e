//! A step's request for monitors and the place its series end up: carried
//! by the step's context, so `measure::Meter` starts a sampler for any
//! workload and `dispatch::run` puts what it saw into the step's output.

use benchrig_wire::monitor::{MonitorConfig, MonitorSeries};
use std::sync::{Arc, Mutex};

/// Cloned to a thread a workload starts (acl_check), so its Meter reports
/// to the same step.
#[derive(Clone, Debug, Default)]
pub struct Watch {
    config: Option<MonitorConfig>,
    series: Arc<Mutex<Option<MonitorSeries>>>,
}

impl Watch {
    pub fn new(config: Option<MonitorConfig>) -> Watch {
        Watch { config, series: Default::default() }
    }

    pub fn config(&self) -> Option<MonitorConfig> {
        self.config
    }

    /// The last timed region's series wins: a workload times one region.
    pub fn put(&self, s: MonitorSeries) {
        *self.series.lock().unwrap_or_else(|e| e.into_inner()) = Some(s);
    }

    pub fn take(&self) -> Option<MonitorSeries> {
        self.series.lock().unwrap_or_else(|e| e.into_inner()).take()
    }
}
