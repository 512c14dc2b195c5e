//! `benchrig runs`, `show RUN`, `report RUN`, `export RUN`, `import FILE`.

use crate::cli::{ExportArgs, ImportArgs, ReportArgs, ReportFormat, RunsArgs, ShowArgs};
use crate::exit_code;
use crate::history::select::{filter, PlaybookChoice, Selection};
use crate::store::Store;
use crate::terminal_table::table;

pub fn list(args: RunsArgs) -> anyhow::Result<i32> {
    let store = Store::open(&args.db.db)?;
    let name = args.name.as_deref().map(|g| globset::Glob::new(g).map(|g| g.compile_matcher())).transpose()?;
    let sel = Selection {
        playbook: args.playbook.map(PlaybookChoice::Named),
        name,
        status: args.status,
        since: args.from,
        until: args.to,
        last: args.last,
    };
    let runs = filter(&store.runs()?, &sel);
    if args.json {
        let list: Vec<serde_json::Value> = runs
            .iter()
            .map(|r| {
                serde_json::json!({
                    "id": r.id, "name": r.name, "playbook": r.playbook, "started": r.started,
                    "finished": r.finished, "status": r.status, "hosts": r.hosts, "cells": r.cells,
                    "pruned": r.pruned, "baseline": r.baseline,
                })
            })
            .collect();
        outln!("{}", serde_json::to_string_pretty(&list)?)?;
        return Ok(exit_code::OK);
    }
    let rows: Vec<Vec<String>> = runs
        .into_iter()
        .map(|r| {
            let note = note(&r);
            vec![
                r.id.to_string(),
                r.name.unwrap_or_else(|| "-".into()),
                r.playbook,
                crate::human::stamp_to_the_second(&r.started),
                r.hosts.to_string(),
                r.cells.to_string(),
                note,
                r.status.to_string(),
            ]
        })
        .collect();
    out!("{}", table(&["ID", "NAME", "PLAYBOOK", "STARTED", "HOSTS", "CELLS", "NOTE", "STATUS"], &rows))?;
    Ok(exit_code::OK)
}

/// "baseline", "pruned", both, or "-"; before STATUS, which scripts read
/// as the last column.
fn note(r: &crate::store::RunRow) -> String {
    match (&r.baseline, &r.pruned) {
        (Some(_), Some(_)) => "baseline,pruned".into(),
        (Some(_), None) => "baseline".into(),
        (None, Some(_)) => "pruned".into(),
        (None, None) => "-".into(),
    }
}

pub fn show(args: ShowArgs) -> anyhow::Result<i32> {
    let store = Store::open(&args.db.db)?;
    let r = store.resolve_run(&args.run)?;
    outln!(
        "run {} · {} · {} · started {}{}",
        r.id,
        r.playbook,
        r.status,
        r.started,
        r.finished.map(|f| format!(", finished {f}")).unwrap_or_default()
    )?;
    if let Some(when) = &r.pruned {
        outln!("pruned on {when}: its samples are gone; `benchrig history` still has its means")?;
    }
    out!("{}", crate::terminal_table::render(&store, r.id)?)?;
    Ok(exit_code::OK)
}

pub fn report(args: ReportArgs) -> anyhow::Result<i32> {
    let store = Store::open(&args.db.db)?;
    let r = store.resolve_run(&args.run)?;
    super::unpruned(&r)?;
    let text = match args.format {
        ReportFormat::Json => serde_json::to_string_pretty(&crate::report::json::build(&store, r.id)?)? + "\n",
        ReportFormat::Md => crate::report::md::render(&crate::report::json::build(&store, r.id)?),
        ReportFormat::Html => crate::report::html::render(&crate::report::json::build(&store, r.id)?),
        ReportFormat::Csv => crate::report::csv::build(&store, r.id)?,
        ReportFormat::Junit => {
            // `auto`: the run's automatic baseline, if it has one (a first night has none).
            let base = match args.baseline.as_deref() {
                Some("auto") => match crate::commands::compare::automatic_baseline(&store, r.id)? {
                    Some(id) => Some(id.to_string()),
                    None => {
                        let why = crate::commands::compare::no_baseline(&store, r.id);
                        eprintln!("{why}: the JUnit report judges no regression");
                        None
                    }
                },
                other => other.map(str::to_string),
            };
            let rows = match &base {
                Some(base) => {
                    let base = crate::commands::compare::load(&store, base)?.1;
                    let new = crate::commands::compare::load(&store, &r.id.to_string())?.1;
                    let opts = crate::compare::Options { threshold_pct: args.threshold, alpha: args.alpha };
                    crate::compare::compare(&base, &new, opts)
                }
                None => Vec::new(),
            };
            crate::report::junit::build(&store, r.id, &rows)?
        }
    };
    super::write_out(args.output.as_deref(), &text)
}

pub fn export(args: ExportArgs) -> anyhow::Result<i32> {
    let store = Store::open(&args.db.db)?;
    let r = store.resolve_run(&args.run)?;
    super::write_out(args.output.as_deref(), &(serde_json::to_string(&store.export_run(r.id)?)? + "\n"))
}

/// An export's text, refused past `max` bytes (`transfer::MAX_BYTES`) without reading on.
fn read_bounded(f: &std::path::Path, max: u64) -> anyhow::Result<String> {
    use std::io::Read;
    let source: Box<dyn Read> = if f.as_os_str() == "-" {
        Box::new(std::io::stdin())
    } else {
        Box::new(std::fs::File::open(f).map_err(|e| anyhow::anyhow!("cannot read {}: {e}", f.display()))?)
    };
    let mut text = String::new();
    source.take(max + 1).read_to_string(&mut text).map_err(|e| anyhow::anyhow!("cannot read {}: {e}", f.display()))?;
    if text.len() as u64 > max {
        anyhow::bail!("{}: larger than the {max} bytes an import reads", f.display());
    }
    Ok(text)
}

pub fn import(args: ImportArgs) -> anyhow::Result<i32> {
    let store = Store::open(&args.db.db)?;
    for f in &args.files {
        let text = read_bounded(f, crate::store::transfer::MAX_BYTES)?;
        let doc: serde_json::Value =
            serde_json::from_str(&text).map_err(|e| anyhow::anyhow!("{}: not JSON: {e}", f.display()))?;
        let id = store.import_run(&doc).map_err(|e| anyhow::anyhow!("{}: {e}", f.display()))?;
        outln!("{}: imported as run {id}", f.display())?;
    }
    Ok(exit_code::OK)
}

#[cfg(test)]
mod tests {
    #[test]
    fn an_export_past_the_bound_is_refused_unread() {
        let dir = tempfile::tempdir().unwrap();
        let f = dir.path().join("run.json");
        std::fs::write(&f, "{\"benchrig_export\": 1}").unwrap();
        assert!(super::read_bounded(&f, 64).is_ok());
        let e = super::read_bounded(&f, 8).unwrap_err().to_string();
        assert!(e.ends_with("run.json: larger than the 8 bytes an import reads"), "{e}");
    }
}
