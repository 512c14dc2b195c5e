//! Running a cell's visits (`schedule`) through its hosts' agent sessions
//! (one host, or one per role): setup, then for each repetition the `before_each` steps and
//! the measured `benchmark` steps (every sample stored as it arrives), and
//! the teardown, which runs whatever happened before it unless a host itself
//! is gone. Each step goes to the agent of its host. The setup runs once
//! per visit, or before every repetition (`fresh: repetition`); several
//! cells' visits on one setup (`fresh: round`) are `shared`'s.

use super::policy;
use crate::plan::{Cell, PlannedStep};
use crate::playbook::Fresh;
use crate::progress::Progress;
use crate::session::agent_client::{AgentClient, RequestError};
use crate::status::CellStatus;
use crate::store::{StepRef, Store};
use benchrig_wire::kernel_log::KernelLog;
use benchrig_wire::messages::{ErrorCode, Event, LogLevel, Reply, Request, StepRequest};
use benchrig_wire::monitor::MonitorConfig;
use benchrig_wire::steps::{Action, StepOutput, UnmountArgs};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
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
    pub fn status(&self) -> CellStatus {
        match self {
            CellOutcome::Ok => CellStatus::Ok,
            CellOutcome::Failed(_) => CellStatus::Failed,
            CellOutcome::HostLost { .. } => CellStatus::Unreachable,
            CellOutcome::Unsupported(_) => CellStatus::Unsupported,
            CellOutcome::Skipped(_) => CellStatus::Skipped,
        }
    }

    /// Failed, or its host was lost: what `any_errors_fatal` and
    /// `max_fail_percentage` count, as Ansible counts unreachable hosts.
    pub fn is_failure(&self) -> bool {
        matches!(self, CellOutcome::Failed(_) | CellOutcome::HostLost { .. })
    }

    pub fn reason(&self) -> Option<String> {
        match self {
            CellOutcome::Ok => None,
            CellOutcome::HostLost { host, reason } => Some(format!("host {host} unreachable: {reason}")),
            CellOutcome::Failed(r) | CellOutcome::Unsupported(r) | CellOutcome::Skipped(r) => Some(r.clone()),
        }
    }
}

/// What a setup's steps recorded, by step (`setup[0] filesystem@hdd`).
pub(super) type SetupRecord = Vec<(String, serde_json::Map<String, serde_json::Value>)>;

/// The host an outcome lost, if it lost one.
pub(super) fn lost_host(outcome: &CellOutcome) -> Option<String> {
    match outcome {
        CellOutcome::HostLost { host, .. } => Some(host.clone()),
        _ => None,
    }
}

/// A teardown's failure `bad` over how a visit went: it counts when the
/// visit was ok, and a lost host always counts.
pub(super) fn absorb(outcome: &mut CellOutcome, bad: CellOutcome) {
    if matches!(outcome, CellOutcome::Ok) || matches!(bad, CellOutcome::HostLost { .. }) {
        *outcome = bad;
    }
}

fn store_failed(e: crate::store::StoreError) -> CellOutcome {
    CellOutcome::Failed(format!("storing results: {e}"))
}

pub struct CellRunner<'a> {
    /// The agent of every host the cell uses.
    pub agents: Vec<(&'a str, &'a AgentClient)>,
    pub store: &'a Store,
    pub progress: Progress,
    pub cancel: watch::Receiver<bool>,
    /// The attempt at the run its samples are stored under.
    pub attempt: u32,
}

fn classify(step: &PlannedStep, e: RequestError) -> CellOutcome {
    match e {
        RequestError::Lost(reason) => CellOutcome::HostLost { host: step.host.clone(), reason },
        // The agent died on the host: a failure of the host, not the network.
        RequestError::Died(reason) => CellOutcome::Failed(format!("{}: {reason}", step.name)),
        RequestError::Agent(a) => {
            let msg = format!("{}: {a}", step.name);
            match a.code {
                ErrorCode::Unsupported => CellOutcome::Unsupported(msg),
                ErrorCode::Cancelled => CellOutcome::Skipped(policy::INTERRUPTED.into()),
                _ => CellOutcome::Failed(msg),
            }
        }
    }
}

impl CellRunner<'_> {
    /// Send one step to its host's agent; a failure comes back classified.
    /// `monitor` is the cell's for a measured step, `None` for any other:
    /// setup and teardown are not what the samples describe.
    async fn step(
        &self,
        cell: &Cell,
        step: &PlannedStep,
        cancellable: bool,
        monitor: Option<MonitorConfig>,
    ) -> Result<StepOutput, CellOutcome> {
        let req = Request::Run(StepRequest {
            cell: cell.key.clone(),
            name: step.name.clone(),
            action: step.action.clone(),
            monitor,
        });
        let host = step.host.as_str();
        let Some(agent) = self.agents.iter().find(|(h, _)| *h == host).map(|(_, a)| *a) else {
            return Err(CellOutcome::HostLost {
                host: host.into(),
                reason: format!("no session to {host} (a bug: the cell's hosts were not all opened)"),
            });
        };
        let (cancel, timed_out) = self.cancel_for(step, cancellable);
        let progress = self.progress;
        let reply = agent
            .request(req, cancel, |ev| {
                if let Event::Log { level, message } = ev {
                    match level {
                        LogLevel::Warn => progress.line(host, format!("warning: {message}")),
                        LogLevel::Info => tracing::info!(host, "{message}"),
                        LogLevel::Debug => tracing::debug!(host, "{message}"),
                    }
                }
            })
            .await;
        match reply {
            Ok(Reply::Step(out)) => Ok(out),
            Ok(other) => Err(classify(step, RequestError::Lost(format!("unexpected answer to a step: {other:?}")))),
            Err(RequestError::Agent(a)) if a.code == ErrorCode::Cancelled && timed_out.load(Ordering::SeqCst) => {
                let secs = step.timeout.unwrap_or_default().as_secs();
                Err(CellOutcome::Failed(format!("{}: timed out after {secs} s (cancelled)", step.name)))
            }
            Err(e) => Err(classify(step, e)),
        }
    }

    /// What cancels a step: the run's Ctrl-C (when `cancellable`) and the
    /// step's `timeout`, which also raises the returned flag.
    fn cancel_for(&self, step: &PlannedStep, cancellable: bool) -> (Option<watch::Receiver<bool>>, Arc<AtomicBool>) {
        let timed_out = Arc::new(AtomicBool::new(false));
        let Some(limit) = step.timeout else { return (cancellable.then(|| self.cancel.clone()), timed_out) };
        let (tx, rx) = watch::channel(false);
        let mut run_cancel = self.cancel.clone();
        let flag = timed_out.clone();
        tokio::spawn(async move {
            let interrupted = async {
                while cancellable && run_cancel.changed().await.is_ok() {
                    if *run_cancel.borrow() {
                        return;
                    }
                }
                std::future::pending::<()>().await
            };
            tokio::select! {
                _ = tokio::time::sleep(limit) => {
                    flag.store(true, Ordering::SeqCst);
                    let _ = tx.send(true);
                }
                _ = interrupted => { let _ = tx.send(true); }
                // The step ended first: nothing to cancel.
                _ = tx.closed() => {}
            }
        });
        (Some(rx), timed_out)
    }

    /// A failed step marked `ignore_errors` is reported and the cell goes
    /// on (`None`); any other ending (and a lost host, always) stops it.
    fn tolerate(&self, s: &PlannedStep, bad: CellOutcome) -> Option<CellOutcome> {
        match bad {
            CellOutcome::Failed(why) if s.ignore_errors => {
                self.progress.line(&s.host, format!("  ignored: {why}"));
                None
            }
            other => Some(other),
        }
    }

    fn interrupted(&self) -> bool {
        *self.cancel.borrow()
    }

    /// Mark a cell as running (before its first visit).
    pub fn start(&self, cell_id: i64) -> Result<(), CellOutcome> {
        self.store.set_cell_status(cell_id, CellStatus::Running, None).map_err(store_failed)
    }

    /// Record how a cell ended (after its last visit, or a failed one).
    pub fn finish(&self, cell_id: i64, outcome: CellOutcome) -> CellOutcome {
        match self.store.set_cell_status(cell_id, outcome.status(), outcome.reason().as_deref()) {
            Ok(()) => outcome,
            Err(e) => store_failed(e),
        }
    }

    /// One visit of a scheduled cell: marked running at its first, its
    /// status recorded at its last or when it does not end ok. The flag
    /// says whether the cell has ended.
    pub async fn run_visit(
        &self,
        cell: &Cell,
        cell_id: i64,
        first: bool,
        reps: std::ops::RangeInclusive<u32>,
    ) -> (CellOutcome, bool) {
        if first {
            if let Err(bad) = self.start(cell_id) {
                return (self.finish(cell_id, bad), true);
            }
        }
        let (outcome, enough) = self.visit(cell, cell_id, reps.clone()).await;
        self.conclude(cell, cell_id, &reps, outcome, enough)
    }

    /// How a visit of `reps` leaves its cell: going on (ok, with visits to
    /// come and not enough yet), or ended with its status recorded.
    pub(super) fn conclude(
        &self,
        cell: &Cell,
        cell_id: i64,
        reps: &std::ops::RangeInclusive<u32>,
        outcome: CellOutcome,
        enough: bool,
    ) -> (CellOutcome, bool) {
        let last = *reps.end() >= cell.repeat;
        if matches!(outcome, CellOutcome::Ok) && !last && !enough {
            return (outcome, false);
        }
        (self.finish(cell_id, outcome), true)
    }

    /// Some of a cell's repetitions between a setup and a teardown: all of
    /// them at once, or (`cell_order: interleaved`) one per visit. The flag
    /// says an adaptive cell has enough repetitions.
    pub async fn visit(&self, cell: &Cell, cell_id: i64, reps: std::ops::RangeInclusive<u32>) -> (CellOutcome, bool) {
        let (mut outcome, mut enough) = (CellOutcome::Ok, false);
        // Setup once for these repetitions, or (fresh: repetition) before each,
        // for experiments whose measured step changes the setup (add a device).
        let rounds: Vec<std::ops::RangeInclusive<u32>> =
            if cell.fresh == Fresh::Repetition { reps.map(|r| r..=r).collect() } else { vec![reps] };
        let last = rounds.len().saturating_sub(1);
        for (i, reps) in rounds.into_iter().enumerate() {
            (outcome, enough) = self.setup_and_measure(cell, cell_id, reps).await;
            if i == last || enough || !matches!(outcome, CellOutcome::Ok) {
                break;
            }
            self.teardown(cell, cell_id, &mut outcome).await;
            if !matches!(outcome, CellOutcome::Ok) {
                break;
            }
        }
        self.teardown(cell, cell_id, &mut outcome).await;
        (outcome, enough)
    }

    /// The play's teardown, then a release of whatever is still set up on
    /// each host of the cell, so the next starts on a fresh filesystem.
    async fn teardown(&self, cell: &Cell, cell_id: i64, outcome: &mut CellOutcome) {
        let lost: Vec<String> = lost_host(outcome).into_iter().collect();
        if let Some(bad) = self.tear_down(cell, &[cell_id], lost, &cell.describe()).await {
            absorb(outcome, bad);
        }
    }

    /// The teardown steps of `cell` and the release, each step's info
    /// recorded with every cell of `ids` (those that ran on this setup);
    /// steps on a host in `lost` are passed over (it cannot tear down).
    /// The failure that counts, if any: the first, or a lost host.
    pub(super) async fn tear_down(
        &self,
        cell: &Cell,
        ids: &[i64],
        mut lost: Vec<String>,
        what: &str,
    ) -> Option<CellOutcome> {
        let release_all: Vec<PlannedStep> = self
            .agents
            .iter()
            .map(|(h, _)| PlannedStep::internal("release", Action::Unmount(UnmountArgs { device: None }), h))
            .collect();
        let mut worst: Option<CellOutcome> = None;
        for (i, s) in cell.teardown.iter().chain(&release_all).enumerate() {
            // A host that is gone cannot tear down; the others still do.
            if lost.contains(&s.host) {
                continue;
            }
            match self.step(cell, s, false, None).await {
                Ok(mut out) => {
                    // The visit's kernel log goes to its own table, with every cell that ran on this setup.
                    let log = out.info.remove("kernel_log").and_then(|l| serde_json::from_value::<KernelLog>(l).ok());
                    for id in ids {
                        let _ =
                            self.store.add_cell_info(*id, &format!("teardown[{i}] {}@{}", s.name, s.host), &out.info);
                        if let Some(log) = &log {
                            let _ = self.store.add_kernel_log(*id, &s.host, &log.lines);
                        }
                    }
                    if let Some(log) = log.filter(|l| !l.lines.is_empty() || l.lost_records > 0) {
                        let lost = match log.lost_records {
                            0 => String::new(),
                            n => format!(" ({n} records overwritten before they were read)"),
                        };
                        self.progress.line(
                            &s.host,
                            format!("the kernel logged {} flagged line(s) during {what}{lost}", log.lines.len()),
                        );
                    }
                }
                Err(bad) => {
                    let Some(bad) = self.tolerate(s, bad) else { continue };
                    self.progress
                        .line(&s.host, format!("teardown of {what} failed: {}", bad.reason().unwrap_or_default()));
                    lost.extend(lost_host(&bad));
                    match &mut worst {
                        None => worst = Some(bad),
                        Some(w) => absorb(w, bad),
                    }
                }
            }
        }
        worst
    }

    /// Store as the cell's artifacts, named `{name}: {key}`, the long text
    /// `action`'s row keeps (a filesystem's dump, fio's whole output),
    /// taking it out of `info`.
    fn keep_artifacts(
        &self,
        cell_id: i64,
        action: &Action,
        name: &str,
        info: &mut serde_json::Map<String, serde_json::Value>,
    ) -> Result<(), crate::store::StoreError> {
        for key in Action::kept_keys(action.name()) {
            if let Some(serde_json::Value::String(text)) = info.remove(*key) {
                self.store.add_artifact(cell_id, &format!("{name}: {key}"), &text)?;
            }
        }
        Ok(())
    }

    /// What a setup step said, with the cell: what its row keeps as
    /// artifacts, the rest as the cell's info (returned).
    fn record_setup(
        &self,
        cell_id: i64,
        action: &Action,
        step: &str,
        mut info: serde_json::Map<String, serde_json::Value>,
    ) -> Result<serde_json::Map<String, serde_json::Value>, crate::store::StoreError> {
        self.keep_artifacts(cell_id, action, step, &mut info)?;
        self.store.add_cell_info(cell_id, step, &info)?;
        Ok(info)
    }

    /// Setup, the warm-up repetitions, then the recorded ones. The flag
    /// says the cell's policy is satisfied (its intervals are narrow enough).
    async fn setup_and_measure(
        &self,
        cell: &Cell,
        cell_id: i64,
        reps: std::ops::RangeInclusive<u32>,
    ) -> (CellOutcome, bool) {
        match self.setup(cell, cell_id).await {
            Ok(_) => self.measure(cell, cell_id, reps).await,
            Err(bad) => (bad, false),
        }
    }

    /// The play's setup for `cell`, each step's info recorded with it as it
    /// comes; that info (without artifacts) by step, for cells that share
    /// this setup.
    pub(super) async fn setup(&self, cell: &Cell, cell_id: i64) -> Result<SetupRecord, CellOutcome> {
        let mut made = Vec::new();
        for (i, s) in cell.setup.iter().enumerate() {
            if self.interrupted() {
                return Err(CellOutcome::Skipped(policy::INTERRUPTED.into()));
            }
            match self.step(cell, s, true, None).await {
                Ok(out) => {
                    let key = format!("setup[{i}] {}@{}", s.name, s.host);
                    let info = self.record_setup(cell_id, &s.action, &key, out.info).map_err(store_failed)?;
                    made.push((key, info));
                }
                Err(bad) => {
                    if let Some(bad) = self.tolerate(s, bad) {
                        return Err(bad);
                    }
                }
            }
        }
        Ok(made)
    }

    /// On a setup made: the warm-up repetitions, then the recorded ones.
    /// The flag says the cell's policy is satisfied.
    pub(super) async fn measure(
        &self,
        cell: &Cell,
        cell_id: i64,
        reps: std::ops::RangeInclusive<u32>,
    ) -> (CellOutcome, bool) {
        // Warm-up opens every visit (and, with `fresh: repetition`, follows
        // every setup): measured, shown, never recorded.
        for _ in 0..cell.policy.warmup {
            if let Err(bad) = self.repetition(cell, cell_id, None).await {
                return (bad, false);
            }
        }
        for rep in reps {
            if let Err(bad) = self.repetition(cell, cell_id, Some(rep)).await {
                return (bad, false);
            }
            if rep >= cell.policy.min && self.enough(cell, cell_id, rep) {
                return (CellOutcome::Ok, true);
            }
        }
        (CellOutcome::Ok, false)
    }

    /// One repetition: `before_each`, then the measured steps, whose
    /// samples are stored under `rep` (a warm-up, `None`, stores nothing).
    async fn repetition(&self, cell: &Cell, cell_id: i64, rep: Option<u32>) -> Result<(), CellOutcome> {
        for s in &cell.before_each {
            if self.interrupted() {
                return Err(CellOutcome::Skipped(policy::INTERRUPTED.into()));
            }
            if let Err(bad) = self.step(cell, s, true, None).await {
                self.tolerate(s, bad).map_or(Ok(()), Err)?;
            }
        }
        let mut shown = Vec::new();
        for (index, s) in cell.benchmark.iter().enumerate() {
            if self.interrupted() {
                return Err(CellOutcome::Skipped(policy::INTERRUPTED.into()));
            }
            let mut out = match self.step(cell, s, true, cell.monitor).await {
                Ok(out) => out,
                Err(bad) => {
                    self.tolerate(s, bad).map_or(Ok(()), Err)?;
                    continue;
                }
            };
            if let Some(rep) = rep {
                let step =
                    StepRef { index, name: &s.name, workload: s.action.name(), repetition: rep, attempt: self.attempt };
                // One per repetition, not in every sample's info.
                let name = format!("rep {rep} benchmark[{index}] {}@{}", s.name, s.host);
                self.keep_artifacts(cell_id, &s.action, &name, &mut out.info).map_err(store_failed)?;
                self.store.add_samples(cell_id, &step, &out).map_err(store_failed)?;
            }
            if let Some(m) = out.metrics.first() {
                shown.push(format!("{} {:.1} {}", s.name, m.value, m.unit));
            }
        }
        if let Some(rep) = rep {
            // Complete: a resume goes on after it.
            self.store.set_reps_done(cell_id, rep).map_err(store_failed)?;
        }
        if !shown.is_empty() {
            let which = rep.map(|r| format!("rep {r}/{}", cell.repeat)).unwrap_or_else(|| "warm-up".into());
            self.progress.line(&cell.host, format!("  {} {which}: {}", cell.describe(), shown.join(", ")));
        }
        Ok(())
    }

    /// Whether an adaptive cell may stop after `rep`: every metric's CI95
    /// half-width is under `ci_pct` of its mean. Recorded with the cell
    /// when it stops, and when `max` comes first.
    fn enough(&self, cell: &Cell, cell_id: i64, rep: u32) -> bool {
        let Some(target) = cell.policy.ci_pct else { return false };
        let Ok(samples) = self.store.cell_samples(cell_id) else { return false };
        let wanted = |metric: &str| cell.policy.metrics.is_empty() || cell.policy.metrics.iter().any(|m| m == metric);
        let widest = crate::terminal_table::group(&samples)
            .iter()
            .filter(|(k, _)| wanted(&k.3))
            .map(|(_, v)| v)
            .map(|v| {
                crate::stats::Summary::of(v).and_then(|s| if s.sd == 0.0 { Some(0.0) } else { s.ci_half_width_pct() })
            })
            .try_fold(0.0f64, |w, x| x.map(|x| w.max(x)));
        let done = widest.is_some_and(|w| w < target);
        if done || rep >= cell.repeat {
            let why = match widest {
                Some(w) if done => format!("every metric's CI95 within ±{w:.2}% < ±{target}%"),
                Some(w) => format!("max reached; widest CI95 ±{w:.2}%, target ±{target}%"),
                None => "max reached; no interval yet".into(),
            };
            let info = serde_json::json!({"recorded": rep, "why": why});
            let _ = self.store.add_cell_info(cell_id, "repetitions", info.as_object().expect("an object"));
        }
        done
    }
}
