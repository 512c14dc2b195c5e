//! `report --format junit`: a test suite per play, a test case per cell and host.
//! A failed cell fails; a cell whose host was lost is an error (of the lab,
//! not of the benchmark); an unsupported or skipped one is skipped; with a
//! baseline, a cell with a regressed metric fails too, naming the metric.

use crate::compare::{Row, Verdict};
use crate::human::describe_params;
use crate::status::CellStatus;
use crate::store::{CellRow, Store, StoreError};
use quick_junit::{NonSuccessKind, Report, TestCase, TestCaseStatus, TestSuite};

pub fn build(store: &Store, run: i64, regressions: &[Row]) -> Result<String, StoreError> {
    let r = store.resolve_run(&run.to_string())?;
    let mut report = Report::new(format!("benchrig run {}", r.name.unwrap_or_else(|| run.to_string())));
    let cells = store.cells(run)?;
    let kernel_log = store.kernel_log(run)?;
    let mut plays: Vec<&str> = Vec::new();
    for c in &cells {
        if !plays.contains(&c.play.as_str()) {
            plays.push(&c.play);
        }
    }
    for play in plays {
        let mut suite = TestSuite::new(play);
        for c in cells.iter().filter(|c| c.play == play) {
            suite.add_test_case(case(c, regressions, &super::cell_notes::kernel_log(&kernel_log, c.id)));
        }
        report.add_test_suite(suite);
    }
    Ok(report.to_string().unwrap_or_default())
}

fn case(c: &CellRow, regressions: &[Row], logged: &[(String, benchrig_wire::kernel_log::KernelLogLine)]) -> TestCase {
    let cell = describe_params(&c.params);
    let regressed: Vec<String> = regressions
        .iter()
        .filter(|r| r.verdict == Verdict::Regressed && r.host == c.host && r.play == c.play && r.cell == cell)
        .map(|r| format!("{} {}: {:+.1}%", r.step, r.metric, (r.ratio.unwrap_or(1.0) - 1.0) * 100.0))
        .collect();
    let logged: Vec<String> = logged.iter().map(super::cell_notes::kernel_log_text).collect();
    let status = match c.status {
        // The kernel reporting an I/O error or a BUG during the cell fails it: its numbers are suspect.
        CellStatus::Ok if !logged.is_empty() => {
            let mut s = TestCaseStatus::non_success(NonSuccessKind::Failure);
            s.set_type("kernel_log").set_message(format!("kernel log: {}", logged.join(" | ")));
            s
        }
        CellStatus::Ok if regressed.is_empty() => TestCaseStatus::success(),
        CellStatus::Ok => {
            let mut s = TestCaseStatus::non_success(NonSuccessKind::Failure);
            s.set_type("regression").set_message(format!("regressed: {}", regressed.join(", ")));
            s
        }
        CellStatus::Unsupported | CellStatus::Skipped => {
            let mut s = TestCaseStatus::skipped();
            s.set_message(format!("{}: {}", c.status, c.reason.clone().unwrap_or_default()));
            s
        }
        // A lost host measured nothing: an error of the lab, not a failure of the benchmark.
        CellStatus::Unreachable => {
            let mut s = TestCaseStatus::non_success(NonSuccessKind::Error);
            s.set_type("unreachable").set_message(c.reason.clone().unwrap_or_else(|| "host unreachable".into()));
            s
        }
        // The kernel under test is the finding: a failure, of its own type.
        CellStatus::NotBooted => {
            let mut s = TestCaseStatus::non_success(NonSuccessKind::Failure);
            s.set_type("not_booted").set_message(c.reason.clone().unwrap_or_else(|| "the kernel did not boot".into()));
            s
        }
        other @ (CellStatus::Failed | CellStatus::Pending | CellStatus::Running) => {
            let mut s = TestCaseStatus::non_success(NonSuccessKind::Failure);
            s.set_type(other.as_str()).set_message(c.reason.clone().unwrap_or_else(|| other.to_string()));
            s
        }
    };
    let mut t = TestCase::new(format!("{} {cell}", c.host), status);
    if !logged.is_empty() {
        t.set_system_err(logged.join("\n"));
    }
    t.set_classname(format!("{}.{}", c.play, c.host));
    t
}
