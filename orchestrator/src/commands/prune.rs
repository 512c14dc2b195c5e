//! `benchrig prune`: old runs emptied of their samples, monitor series and
//! artifacts (`retention` decides which, the store does it run by run),
//! each run's summaries kept so history still reads it; then the space
//! given back and how much. `benchrig mark RUN --baseline`: a run prune
//! keeps whole.

use crate::cli::{MarkArgs, PruneArgs};
use crate::exit_code;
use crate::human::fmt_num;
use crate::retention::{self, Decision, Keep, Policy};
use crate::store::{Reclaimed, Removed, Store};
use crate::terminal_table::table;
use std::collections::{BTreeMap, HashSet};

pub fn run(args: PruneArgs) -> anyhow::Result<i32> {
    if args.older_than.is_none() && args.keep_last.is_none() {
        anyhow::bail!("prune needs --older-than DURATION, --keep-last N or both: it never guesses what to delete");
    }
    let store = Store::open(&args.db.db)?;
    let runs = store.runs()?;
    let now = time::OffsetDateTime::now_utc();
    // A lease that has run out holds nothing (its run is gone or will be resumed).
    let leased: HashSet<i64> = store
        .leases()?
        .into_iter()
        .filter(|l| l.expires.is_some_and(|e| e > now.unix_timestamp()))
        .filter_map(|l| l.run)
        .collect();
    let policy = Policy { older_than: args.older_than, keep_last: args.keep_last };
    let decisions = retention::decide(&runs, &leased, now, &policy);
    let mut kept: BTreeMap<Keep, usize> = BTreeMap::new();
    let mut chosen = Vec::new();
    for (r, d) in runs.iter().zip(&decisions) {
        match d {
            Decision::Prune => chosen.push(r),
            Decision::Keep(why) => *kept.entry(*why).or_default() += 1,
        }
    }
    let kept_line = kept.iter().map(|(why, n)| format!("{n} {}", why.describe())).collect::<Vec<_>>().join(", ");
    let kept_line = if kept_line.is_empty() { String::new() } else { format!("; kept whole: {kept_line}") };
    if chosen.is_empty() {
        outln!("nothing to prune{kept_line}")?;
        return Ok(exit_code::OK);
    }
    let before = store.size_bytes()?;
    let mut total = Removed::default();
    let mut rows = Vec::new();
    for r in &chosen {
        let removed = if args.dry_run { store.prunable(r.id)? } else { store.prune_run(r.id)? };
        total.add(removed);
        rows.push(vec![
            r.id.to_string(),
            r.name.clone().unwrap_or_else(|| "-".into()),
            r.playbook.clone(),
            crate::human::stamp_to_the_second(&r.started),
            removed.samples.to_string(),
            removed.series.to_string(),
            removed.artifacts.to_string(),
        ]);
    }
    out!("{}", table(&["ID", "NAME", "PLAYBOOK", "STARTED", "SAMPLES", "SERIES", "ARTIFACTS"], &rows))?;
    let what = format!(
        "{} run(s): {} samples, {} monitor series, {} artifacts{kept_line}",
        chosen.len(),
        total.samples,
        total.series,
        total.artifacts
    );
    if args.dry_run {
        outln!("would prune {what} (--dry-run: nothing changed; each run's summaries would stay for history)")?;
        return Ok(exit_code::OK);
    }
    outln!("pruned {what}; their summaries stay for history")?;
    let space = match store.reclaim()? {
        Reclaimed::Incremental | Reclaimed::Vacuum => {
            let after = store.size_bytes()?;
            format!("database {} → {} (freed {})", bytes(before), bytes(after), bytes(before.saturating_sub(after)))
        }
        Reclaimed::Busy(why) => {
            format!("the database is busy ({why}): the space is reused by new runs, and the next prune gives it back")
        }
        Reclaimed::Reusable => format!(
            "PostgreSQL ({}): VACUUM made the space reusable by new rows; to return it to the system, \
             `VACUUM FULL samples, monitor_series, artifacts` (it locks those tables while it runs)",
            bytes(before)
        ),
    };
    outln!("{space}")?;
    Ok(exit_code::OK)
}

/// 1.2 GB, 340 MB, 12 kB (decimal, as `du --si` and disk makers count).
fn bytes(b: u64) -> String {
    match b {
        b if b >= 1_000_000_000 => format!("{} GB", fmt_num(b as f64 / 1e9)),
        b if b >= 1_000_000 => format!("{} MB", fmt_num(b as f64 / 1e6)),
        b => format!("{} kB", fmt_num(b as f64 / 1e3)),
    }
}

pub fn mark(args: MarkArgs) -> anyhow::Result<i32> {
    let store = Store::open(&args.db.db)?;
    let r = store.resolve_run(&args.run)?;
    store.mark_baseline(r.id, args.baseline)?;
    let what = if args.baseline { "a baseline: prune keeps it whole" } else { "no longer a baseline" };
    outln!("run {}{} is {what}", r.id, r.name.map(|n| format!(" ({n})")).unwrap_or_default())?;
    Ok(exit_code::OK)
}
