//! One module per subcommand; each returns the process exit code.

pub mod cleanup;
pub mod compare;
pub mod facts;
pub mod history;
pub mod inventory;
pub mod lab;
pub mod ping;
pub mod plan;
pub mod run;
pub mod runs;

use crate::session::host::HostError;

/// UNREACHABLE when any host was unreachable, CELL_FAILED when any failed otherwise.
pub fn exit_code_for<T>(results: &[(String, Result<T, HostError>)]) -> i32 {
    let unreachable = results.iter().any(|(_, r)| matches!(r, Err(HostError::Unreachable(_))));
    crate::run::policy::run_outcome(false, unreachable, results.iter().any(|(_, r)| r.is_err())).1
}
