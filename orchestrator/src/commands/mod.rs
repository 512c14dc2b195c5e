//! One module per subcommand; each returns the process exit code.

pub mod cleanup;
pub mod compare;
pub mod config;
pub mod facts;
pub mod generate;
pub mod history;
pub mod inventory;
pub mod lab;
pub mod ping;
pub mod plan;
pub mod run;
pub mod runs;
pub mod schema;

use crate::session::host::HostError;

/// UNREACHABLE when any host was unreachable, CELL_FAILED when any failed otherwise.
pub fn exit_code_for<T>(results: &[(String, Result<T, HostError>)]) -> i32 {
    let unreachable = results.iter().any(|(_, r)| matches!(r, Err(HostError::Unreachable(_))));
    crate::run::policy::run_outcome(false, unreachable, results.iter().any(|(_, r)| r.is_err())).1
}

/// What `facts`, `ping` and `cleanup` work on: the inventory, its hosts
/// that `--limit` selects, and the become password when `-K` asks for one
/// (asked here, before any host is timed or touched).
pub fn selected_hosts(
    args: &crate::cli::HostsArgs,
) -> anyhow::Result<(crate::inventory::Inventory, Vec<String>, Option<crate::session::transport::Secret>)> {
    let inv = crate::selection::load_inventory(&args.inventory)?;
    let hosts = crate::selection::select(&inv, "all", args.limit.as_deref())?;
    Ok((inv, hosts, become_password(args.ask_become_pass)?))
}

/// The password `--ask-become-pass` asks for: at the terminal without echo
/// (Ansible's prompt), or, with no terminal (a script, CI), the first line
/// of stdin.
pub fn become_password(ask: bool) -> anyhow::Result<Option<crate::session::transport::Secret>> {
    use std::io::IsTerminal;
    if !ask {
        return Ok(None);
    }
    let typed = if std::io::stdin().is_terminal() {
        rpassword::prompt_password("BECOME password: ")?
    } else {
        let mut line = String::new();
        std::io::stdin().read_line(&mut line)?;
        line.trim_end_matches(['\r', '\n']).to_string()
    };
    anyhow::ensure!(!typed.is_empty(), "--ask-become-pass: no password given");
    Ok(Some(crate::session::transport::Secret::new(typed)))
}
