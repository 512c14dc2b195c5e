//! Running a cell through its hosts' agent sessions (one host, or one per
//! role): setup once, then for each repetition the `before_each` steps and
//! the measured `benchmark` steps (every sample stored as it arrives), and
//! the teardown, which runs whatever happened before it unless a host itself
//! is gone. Each step goes to the agent of its host.

use crate::agent_client::{AgentClient, RequestError};
use crate::planner::{Cell, PlannedStep};
use crate::reporter::Reporter;
use crate::store::{StepRef, Store};
use benchrig_wire::messages::{ErrorCode, Event, LogLevel, Reply, Request, StepRequest};
use benchrig_wire::steps::{Action, StepOutput, UnmountArgs};
use tokio::sync::watch;

#[derive(Clone, Debug, PartialEq)]
pub enum CellOutcome {
    Ok,
    Failed(String),
    Unsupported(String),
    /// Not run to the end because the run was interrupted.
    Skipped(String),
    /// The agent or the link died: this host is unreachable from here on.
    HostLost {
        host: String,
        reason: String,
    },
}

impl CellOutcome {
    pub fn status(&self) -> &'static str {
        match self {
            CellOutcome::Ok => "ok",
            CellOutcome::Failed(_) | CellOutcome::HostLost { .. } => "failed",
            CellOutcome::Unsupported(_) => "unsupported",
            CellOutcome::Skipped(_) => "skipped",
        }
    }

    pub fn reason(&self) -> Option<String> {
        match self {
            CellOutcome::Ok => None,
            CellOutcome::HostLost { host, reason } => Some(format!("host {host} unreachable: {reason}")),
            CellOutcome::Failed(r) | CellOutcome::Unsupported(r) | CellOutcome::Skipped(r) => Some(r.clone()),
        }
    }
}

pub struct CellRunner<'a> {
    /// The agent of every host the cell uses.
    pub agents: Vec<(&'a str, &'a AgentClient)>,
    pub store: &'a Store,
    pub reporter: Reporter,
    pub cancel: watch::Receiver<bool>,
}

fn classify(step: &PlannedStep, e: RequestError) -> CellOutcome {
    match e {
        RequestError::Lost(reason) => CellOutcome::HostLost { host: step.host.clone(), reason },
        RequestError::Agent(a) => {
            let msg = format!("{}: {a}", step.name);
            match a.code {
                ErrorCode::Unsupported => CellOutcome::Unsupported(msg),
                ErrorCode::Cancelled => CellOutcome::Skipped("interrupted".into()),
                _ => CellOutcome::Failed(msg),
            }
        }
    }
}

impl CellRunner<'_> {
    async fn step(&self, cell: &Cell, step: &PlannedStep, cancellable: bool) -> Result<StepOutput, RequestError> {
        let req =
            Request::Run(StepRequest { cell: cell.key.clone(), name: step.name.clone(), action: step.action.clone() });
        let host = step.host.as_str();
        let agent = self.agents.iter().find(|(h, _)| *h == host).map(|(_, a)| *a).ok_or_else(|| {
            RequestError::Lost(format!("no session to {host} (a bug: the cell's hosts were not all opened)"))
        })?;
        let reporter = self.reporter;
        let reply = agent
            .request(req, cancellable.then(|| self.cancel.clone()), |ev| {
                if let Event::Log { level, message } = ev {
                    match level {
                        LogLevel::Warn => reporter.line(host, format!("warning: {message}")),
                        LogLevel::Info => tracing::info!(host, "{message}"),
                        LogLevel::Debug => tracing::debug!(host, "{message}"),
                    }
                }
            })
            .await?;
        match reply {
            Reply::Step(out) => Ok(out),
            other => Err(RequestError::Lost(format!("unexpected answer to a step: {other:?}"))),
        }
    }

    fn interrupted(&self) -> bool {
        *self.cancel.borrow()
    }

    /// Run a cell to its end and record it; the outcome says how it ended.
    pub async fn run(&self, cell: &Cell, cell_id: i64) -> CellOutcome {
        let store_err = |e: crate::store::StoreError| CellOutcome::Failed(format!("storing results: {e}"));
        if let Err(e) = self.store.set_cell_status(cell_id, "running", None) {
            return store_err(e);
        }
        let mut outcome = CellOutcome::Ok;
        // Setup once for all repetitions, or (fresh: repetition) before each,
        // for experiments whose measured step changes the setup (add a device).
        let rounds: Vec<std::ops::RangeInclusive<u32>> =
            if cell.fresh_each_repetition { (1..=cell.repeat).map(|r| r..=r).collect() } else { vec![1..=cell.repeat] };
        let last = rounds.len() - 1;
        for (i, reps) in rounds.into_iter().enumerate() {
            outcome = self.setup_and_measure(cell, cell_id, reps).await;
            if i == last || !matches!(outcome, CellOutcome::Ok) {
                break;
            }
            self.teardown(cell, cell_id, &mut outcome).await;
            if !matches!(outcome, CellOutcome::Ok) {
                break;
            }
        }
        self.teardown(cell, cell_id, &mut outcome).await;
        if let Err(e) = self.store.set_cell_status(cell_id, outcome.status(), outcome.reason().as_deref()) {
            return store_err(e);
        }
        outcome
    }

    /// The play's teardown, then a release of whatever is still set up on
    /// each host of the cell, so the next starts on a fresh filesystem.
    async fn teardown(&self, cell: &Cell, cell_id: i64, outcome: &mut CellOutcome) {
        let release_all: Vec<PlannedStep> = self
            .agents
            .iter()
            .map(|(h, _)| PlannedStep {
                name: "release".into(),
                action: Action::Unmount(UnmountArgs { device: None }),
                host: h.to_string(),
            })
            .collect();
        for (i, s) in cell.teardown.iter().chain(&release_all).enumerate() {
            // A host that is gone cannot tear down; the others still do.
            if matches!(&outcome, CellOutcome::HostLost { host, .. } if *host == s.host) {
                continue;
            }
            match self.step(cell, s, false).await {
                Ok(out) => {
                    let _ =
                        self.store.add_cell_info(cell_id, &format!("teardown[{i}] {}@{}", s.name, s.host), &out.info);
                }
                Err(e) => {
                    let bad = classify(s, e);
                    self.reporter.line(
                        &s.host,
                        format!("teardown of {} failed: {}", cell.describe(), bad.reason().unwrap_or_default()),
                    );
                    if matches!(outcome, CellOutcome::Ok) || matches!(bad, CellOutcome::HostLost { .. }) {
                        *outcome = bad;
                    }
                }
            }
        }
    }

    async fn setup_and_measure(&self, cell: &Cell, cell_id: i64, reps: std::ops::RangeInclusive<u32>) -> CellOutcome {
        for (i, s) in cell.setup.iter().enumerate() {
            if self.interrupted() {
                return CellOutcome::Skipped("interrupted".into());
            }
            match self.step(cell, s, true).await {
                Ok(out) => {
                    if let Err(e) =
                        self.store.add_cell_info(cell_id, &format!("setup[{i}] {}@{}", s.name, s.host), &out.info)
                    {
                        return CellOutcome::Failed(format!("storing results: {e}"));
                    }
                }
                Err(e) => return classify(s, e),
            }
        }
        for rep in reps {
            for s in &cell.before_each {
                if self.interrupted() {
                    return CellOutcome::Skipped("interrupted".into());
                }
                if let Err(e) = self.step(cell, s, true).await {
                    return classify(s, e);
                }
            }
            let mut shown = Vec::new();
            for (index, s) in cell.benchmark.iter().enumerate() {
                if self.interrupted() {
                    return CellOutcome::Skipped("interrupted".into());
                }
                let out = match self.step(cell, s, true).await {
                    Ok(out) => out,
                    Err(e) => return classify(s, e),
                };
                let step = StepRef { index, name: &s.name, workload: s.action.name(), repetition: rep };
                if let Err(e) = self.store.add_samples(cell_id, &step, &out) {
                    return CellOutcome::Failed(format!("storing results: {e}"));
                }
                if let Some(m) = out.metrics.first() {
                    shown.push(format!("{} {:.1} {}", s.name, m.value, m.unit));
                }
            }
            if !shown.is_empty() {
                self.reporter
                    .line(&cell.host, format!("  {} rep {rep}/{}: {}", cell.describe(), cell.repeat, shown.join(", ")));
            }
        }
        CellOutcome::Ok
    }
}
