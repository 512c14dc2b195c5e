//! `benchrig lab`: the hosts the database knows a run holds or that are
//! quarantined, and the two things a person does about them by hand —
//! release a dead run's lease, set a host aside.

use crate::cli::{LabAction, LabArgs};
use crate::exit_code;
use crate::store::Store;
use crate::terminal_table::table;

pub fn run(args: LabArgs) -> anyhow::Result<i32> {
    let store = Store::open(&args.db.db)?;
    match args.action.unwrap_or(LabAction::List) {
        LabAction::List => list(&store),
        LabAction::Release { host } => {
            if store.release_lease(&host)? {
                outln!("{host}: released")?;
            } else {
                outln!("{host}: no run holds it")?;
            }
            Ok(exit_code::OK)
        }
        LabAction::Quarantine { host, reason } => {
            store.quarantine(&host, Some(&reason))?;
            outln!("{host}: quarantined ({reason}); runs leave it out until `benchrig lab unquarantine {host}`")?;
            Ok(exit_code::OK)
        }
        LabAction::Unquarantine { host } => {
            store.quarantine(&host, None)?;
            outln!("{host}: back in the lab")?;
            Ok(exit_code::OK)
        }
    }
}

fn list(store: &Store) -> anyhow::Result<i32> {
    let now = store.unix_now()?;
    let dash = || "-".to_string();
    let rows: Vec<Vec<String>> = store
        .leases()?
        .into_iter()
        .map(|l| {
            let held = l.is_held_at(now);
            vec![
                l.host.clone(),
                if held {
                    l.describe_holder()
                } else if l.holder.is_some() {
                    "lapsed".into()
                } else {
                    dash()
                },
                l.heartbeat.clone().unwrap_or_else(dash),
                l.expires.filter(|_| held).map(|e| format!("in {} s", e - now)).unwrap_or_else(dash),
                l.quarantine.clone().unwrap_or_else(dash),
            ]
        })
        .collect();
    if rows.is_empty() {
        outln!("no host is held or quarantined")?;
    } else {
        out!("{}", table(&["HOST", "HELD BY", "HEARTBEAT", "EXPIRES", "QUARANTINED"], &rows))?;
    }
    Ok(exit_code::OK)
}
