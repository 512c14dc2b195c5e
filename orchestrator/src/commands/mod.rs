//! One module per subcommand; each returns the process exit code.

pub mod bisect;
pub mod cleanup;
pub mod compare;
pub mod config;
pub mod doc;
pub mod facts;
pub mod generate;
pub mod history;
pub mod inventory;
pub mod lab;
pub mod ping;
pub mod plan;
pub mod prune;
pub mod run;
pub mod runs;
pub mod schema;
pub mod site;

use crate::session::host::HostError;
use crate::session::transport::ConnectionDefaults;

/// UNREACHABLE when any host was unreachable, CELL_FAILED when any failed otherwise.
pub fn exit_code_for<T>(results: &[(String, Result<T, HostError>)]) -> i32 {
    let unreachable = results.iter().any(|(_, r)| matches!(r, Err(HostError::Unreachable(_))));
    let failed = results.iter().any(|(_, r)| r.is_err());
    crate::run::policy::run_outcome(crate::run::policy::Trouble {
        interrupted: false,
        unreachable,
        failed,
        not_booted: false,
    })
    .1
}

/// What `facts`, `ping` and `cleanup` work on: the inventory, its hosts
/// that `--limit` selects, and the connection settings of the command line.
pub fn selected_hosts(
    args: &crate::cli::HostsArgs,
) -> anyhow::Result<(crate::inventory::Inventory, Vec<String>, ConnectionDefaults)> {
    let inv = crate::selection::load_inventory(&args.inventory)?;
    let hosts = crate::selection::select(&inv, "all", args.limit.as_deref())?;
    Ok((inv, hosts, connection_defaults(args)?))
}

/// `-u`, `--private-key`, `-b`/`--become-user` and `-K` (the password is
/// asked here, before any host is timed or touched).
pub fn connection_defaults(args: &crate::cli::HostsArgs) -> anyhow::Result<ConnectionDefaults> {
    Ok(ConnectionDefaults {
        user: args.user.clone(),
        private_key: args.private_key.as_ref().map(|p| p.display().to_string()),
        become_user: (args.r#become || args.become_user.is_some())
            .then(|| args.become_user.clone().unwrap_or_else(|| "root".into())),
        become_password: become_password(args.ask_become_pass)?,
    })
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

/// `-o FILE`'s text written there, or to standard output without it.
pub fn write_out(output: Option<&std::path::Path>, text: &str) -> anyhow::Result<i32> {
    match output {
        Some(path) => {
            std::fs::write(path, text).map_err(|e| anyhow::anyhow!("cannot write {}: {e}", path.display()))?
        }
        None => out!("{text}")?,
    }
    Ok(crate::exit_code::OK)
}

/// A run that still has its samples: `compare` and `report` need them;
/// a pruned run has only its summaries, which `history` reads.
pub fn unpruned(r: &crate::store::RunRow) -> anyhow::Result<()> {
    match &r.pruned {
        Some(when) => anyhow::bail!(
            "run {} was pruned on {when}: its samples are gone (`benchrig history` still has its means; \
             `benchrig mark RUN --baseline` keeps a run whole)",
            r.id
        ),
        None => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use crate::cli::{Cli, Command};
    use clap::Parser;

    fn defaults(args: &[&str]) -> super::ConnectionDefaults {
        match Cli::try_parse_from(args).unwrap().command {
            Command::Facts(a) => super::connection_defaults(&a.hosts).unwrap(),
            _ => unreachable!(),
        }
    }

    #[test]
    fn ansible_s_connection_flags_become_connection_defaults() {
        let d = defaults(&["benchrig", "facts", "-u", "bench", "--private-key", "k", "-b"]);
        assert_eq!((d.user.as_deref(), d.private_key.as_deref()), (Some("bench"), Some("k")));
        assert_eq!(d.become_user.as_deref(), Some("root"));
        let d = defaults(&["benchrig", "facts", "--key-file", "k2", "--become-user", "postgres"]);
        assert_eq!((d.private_key.as_deref(), d.become_user.as_deref()), (Some("k2"), Some("postgres")));
        let d = defaults(&["benchrig", "facts"]);
        assert!(d.user.is_none() && d.private_key.is_none() && d.become_user.is_none() && d.become_password.is_none());
    }
}
