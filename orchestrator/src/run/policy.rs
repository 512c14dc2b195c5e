//! The run's decisions, as pure functions of what happened: which cells do
//! not run and what they are stored as, when a batch's failures stop the
//! playbook, what a host and the whole run end as. (`schedule` holds the
//! rest: the order of visits and the `serial` batches.)

use crate::exit_code;
use crate::status::{CellStatus, HostStatus, RunStatus};

/// The reason stored with what an interrupt (Ctrl-C) kept from running.
pub const INTERRUPTED: &str = "interrupted";

/// Why a host is out of the run.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Down {
    /// It could not be reached, or was lost and did not come back.
    Unreachable(String),
    /// It was reached, but its session could not be opened (deploy, handshake).
    Failed(String),
    /// The run was interrupted before it connected.
    Interrupted,
    /// Set aside by hand (`benchrig lab quarantine`), with the reason: the
    /// run leaves it out, and that is no failure.
    Quarantined(String),
}

/// What the cells of a host that is down are stored as, and why.
pub fn cells_of_down_host(host: &str, down: &Down) -> (CellStatus, String) {
    match down {
        Down::Interrupted => (CellStatus::Skipped, INTERRUPTED.into()),
        Down::Quarantined(why) => (CellStatus::Skipped, format!("host {host} is quarantined: {why}")),
        Down::Unreachable(why) => (CellStatus::Unreachable, format!("host {host} unreachable: {why}")),
        Down::Failed(why) => (CellStatus::Failed, format!("host {host} unreachable: {why}")),
    }
}

/// Whether a stored cell runs again when its run is resumed (or a lost
/// host comes back): not when it has a result (ok) or a verdict that does
/// not change by trying again (unsupported); a failed cell only when asked
/// (`--retry-failed`), as a kernel that did not boot is; every other cell is missing: never started,
/// skipped by an interrupt or a stop, cut off by a kill (`running`), or its
/// host was lost (`unreachable`).
pub fn needs_running(status: CellStatus, retry_failed: bool) -> bool {
    match status {
        CellStatus::Ok | CellStatus::Unsupported => false,
        CellStatus::Failed | CellStatus::NotBooted => retry_failed,
        CellStatus::Pending | CellStatus::Running | CellStatus::Skipped | CellStatus::Unreachable => true,
    }
}

/// Why a cell does not run, and what it is stored as: one of its hosts is
/// down, the run was interrupted or stopped, or the host visibly cannot make
/// it. `None`: run it.
pub fn skip_reason(
    down: Option<(&str, &Down)>,
    interrupted: bool,
    halted: Option<String>,
    unsupported: Option<&str>,
) -> Option<(CellStatus, String)> {
    if let Some((host, down)) = down {
        return Some(cells_of_down_host(host, down));
    }
    if interrupted {
        return Some((CellStatus::Skipped, INTERRUPTED.into()));
    }
    if let Some(why) = halted {
        return Some((CellStatus::Skipped, why));
    }
    unsupported.map(|u| (CellStatus::Unsupported, u.to_string()))
}

/// What the cells a stop or an interrupt left unrun are stored as: skipped,
/// with the stop's reason (`halted`), else "interrupted".
pub fn left_unrun(halted: Option<String>) -> (CellStatus, String) {
    (CellStatus::Skipped, halted.unwrap_or_else(|| INTERRUPTED.into()))
}

/// Why the playbook stops after a failure: the play has
/// `any_errors_fatal` and `failure` (what failed, and where) happened.
pub fn fatal_stop(play: &str, any_errors_fatal: bool, failure: Option<String>) -> Option<String> {
    let failure = failure.filter(|_| any_errors_fatal)?;
    Some(format!("play `{play}` has any_errors_fatal and {failure}"))
}

/// Why the playbook stops after a `serial` batch in which `failed` of
/// `batch` hosts failed: more than `max_fail_percentage` of them did.
pub fn max_fail_stop(play: &str, failed: usize, batch: usize, max_fail_percentage: Option<f64>) -> Option<String> {
    let max = max_fail_percentage?;
    let pct = failed as f64 * 100.0 / batch as f64;
    (pct > max).then(|| {
        format!("play `{play}`: {failed} of {batch} host(s) in the batch failed ({pct:.0}%), over max_fail_percentage {max}%")
    })
}

/// What a host is stored as at the end, with why; `None` keeps what it
/// has (a host interrupted before it connected stays `skipped`).
pub fn host_status(down: Option<&Down>, interrupted: bool, failed: bool) -> Option<(HostStatus, Option<String>)> {
    Some(match down {
        Some(Down::Interrupted) => return None,
        Some(Down::Quarantined(why)) => (HostStatus::Skipped, Some(format!("quarantined: {why}"))),
        Some(Down::Unreachable(why)) => (HostStatus::Unreachable, Some(why.clone())),
        Some(Down::Failed(why)) => (HostStatus::Failed, Some(why.clone())),
        None if interrupted => (HostStatus::Interrupted, None),
        None if failed => (HostStatus::Failed, None),
        None => (HostStatus::Ok, None),
    })
}

/// Whether a host being down makes the run failed: not when it was set aside.
pub fn counts_as_failed(down: Option<&Down>) -> bool {
    down.is_some_and(|d| !matches!(d, Down::Quarantined(_)))
}

/// What went wrong in a run, or a command over hosts, as it ended.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Trouble {
    pub interrupted: bool,
    /// A host could not be reached or was lost.
    pub unreachable: bool,
    /// A cell (or a host's command) failed.
    pub failed: bool,
    /// A cell's kernel did not boot.
    pub not_booted: bool,
}

/// The run's status (as stored) and exit code; the most serious wins.
pub fn run_outcome(t: Trouble) -> (RunStatus, i32) {
    let code = exit_code::most_serious([
        if t.interrupted { exit_code::INTERRUPTED } else { exit_code::OK },
        if t.unreachable { exit_code::UNREACHABLE } else { exit_code::OK },
        if t.failed { exit_code::CELL_FAILED } else { exit_code::OK },
        if t.not_booted { exit_code::NOT_BOOTED } else { exit_code::OK },
    ]);
    let status = match code {
        exit_code::INTERRUPTED => RunStatus::Interrupted,
        exit_code::UNREACHABLE => RunStatus::Unreachable,
        exit_code::CELL_FAILED | exit_code::NOT_BOOTED => RunStatus::Failed,
        _ => RunStatus::Ok,
    };
    (status, code)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_resume_runs_what_is_missing_and_failed_cells_only_when_asked() {
        use CellStatus::*;
        let runs = |retry| {
            [Pending, Running, Ok, Failed, Unreachable, Unsupported, Skipped, NotBooted]
                .into_iter()
                .filter(|&s| needs_running(s, retry))
                .collect::<Vec<_>>()
        };
        assert_eq!(runs(false), [Pending, Running, Unreachable, Skipped]);
        assert_eq!(runs(true), [Pending, Running, Failed, Unreachable, Skipped, NotBooted]);
    }

    #[test]
    fn a_lost_hosts_cells_are_unreachable_one_that_would_not_start_failed() {
        let lost = Down::Unreachable("ssh: connection refused".into());
        assert_eq!(
            cells_of_down_host("old", &lost),
            (CellStatus::Unreachable, "host old unreachable: ssh: connection refused".into())
        );
        let no_session = Down::Failed("handshake: protocol 3, want 4".into());
        assert_eq!(cells_of_down_host("old", &no_session).0, CellStatus::Failed);
        assert_eq!(cells_of_down_host("old", &Down::Interrupted), (CellStatus::Skipped, "interrupted".into()));
        let aside = Down::Quarantined("disk swap".into());
        assert_eq!(
            cells_of_down_host("old", &aside),
            (CellStatus::Skipped, "host old is quarantined: disk swap".into())
        );
        assert_eq!(
            host_status(Some(&aside), false, false),
            Some((HostStatus::Skipped, Some("quarantined: disk swap".into())))
        );
        assert!(!counts_as_failed(Some(&aside)) && counts_as_failed(Some(&no_session)) && !counts_as_failed(None));
    }

    #[test]
    fn skip_reasons_come_in_order_down_interrupted_halted_unsupported() {
        let down = Down::Unreachable("gone".into());
        let all = skip_reason(Some(("h", &down)), true, Some("stop".into()), Some("no jfs"));
        assert_eq!(all, Some((CellStatus::Unreachable, "host h unreachable: gone".into())));
        assert_eq!(
            skip_reason(None, true, Some("stop".into()), Some("no jfs")),
            Some((CellStatus::Skipped, "interrupted".into()))
        );
        assert_eq!(
            skip_reason(None, false, Some("stop".into()), Some("no jfs")),
            Some((CellStatus::Skipped, "stop".into()))
        );
        assert_eq!(skip_reason(None, false, None, Some("no jfs")), Some((CellStatus::Unsupported, "no jfs".into())));
        assert_eq!(skip_reason(None, false, None, None), None);
    }

    #[test]
    fn what_a_stop_leaves_is_skipped_with_its_reason() {
        assert_eq!(left_unrun(Some("stopping: x".into())), (CellStatus::Skipped, "stopping: x".into()));
        assert_eq!(left_unrun(None), (CellStatus::Skipped, "interrupted".into()));
    }

    #[test]
    fn any_errors_fatal_stops_on_a_failure_only_when_set() {
        let failed = || Some("a cell failed on old".to_string());
        assert_eq!(
            fatal_stop("p", true, failed()).as_deref(),
            Some("play `p` has any_errors_fatal and a cell failed on old")
        );
        assert_eq!(fatal_stop("p", false, failed()), None);
        assert_eq!(fatal_stop("p", true, None), None);
    }

    #[test]
    fn max_fail_percentage_stops_only_when_exceeded() {
        assert_eq!(max_fail_stop("p", 1, 4, None), None, "no limit");
        assert_eq!(max_fail_stop("p", 1, 4, Some(25.0)), None, "25% is not over 25%");
        assert_eq!(
            max_fail_stop("p", 2, 4, Some(25.0)).as_deref(),
            Some("play `p`: 2 of 4 host(s) in the batch failed (50%), over max_fail_percentage 25%")
        );
        assert!(max_fail_stop("p", 1, 3, Some(0.0)).is_some(), "0: any failure stops");
        assert_eq!(max_fail_stop("p", 0, 3, Some(0.0)), None);
    }

    #[test]
    fn a_host_ends_as_what_happened_to_it() {
        let gone = Down::Unreachable("gone".into());
        assert_eq!(host_status(Some(&gone), true, true), Some((HostStatus::Unreachable, Some("gone".into()))));
        let broken = Down::Failed("deploy".into());
        assert_eq!(host_status(Some(&broken), false, false), Some((HostStatus::Failed, Some("deploy".into()))));
        assert_eq!(host_status(Some(&Down::Interrupted), true, false), None, "stays skipped");
        assert_eq!(host_status(None, true, true), Some((HostStatus::Interrupted, None)));
        assert_eq!(host_status(None, false, true), Some((HostStatus::Failed, None)));
        assert_eq!(host_status(None, false, false), Some((HostStatus::Ok, None)));
    }

    #[test]
    fn the_most_serious_outcome_wins() {
        let t = |interrupted, unreachable, failed, not_booted| {
            run_outcome(Trouble { interrupted, unreachable, failed, not_booted })
        };
        assert_eq!(t(false, false, false, false), (RunStatus::Ok, exit_code::OK));
        assert_eq!(t(false, false, true, false), (RunStatus::Failed, exit_code::CELL_FAILED));
        assert_eq!(t(false, false, true, true), (RunStatus::Failed, exit_code::NOT_BOOTED));
        assert_eq!(t(false, true, true, true), (RunStatus::Unreachable, exit_code::UNREACHABLE));
        assert_eq!(t(true, true, true, true), (RunStatus::Interrupted, exit_code::INTERRUPTED));
    }
}
