//! `benchrig plan`: the cells each host would run, touching nothing.
//! Facts come from the database when a host was seen before, and so does
//! each cell's estimated time (`estimate`).

use crate::cli::{PlanArgs, PlaybookArgs};
use crate::diagnostic::ConfigError;
use crate::estimate::{self, Estimates};
use crate::exit_code;
use crate::extra_vars;
use crate::plan::{self, HostInput};
use crate::playbook::{Fresh, TagFilter};
use crate::run::{self, check::needs_facts};
use crate::store::Store;
use crate::terminal_table::table;
use benchrig_wire::facts::Facts;
use std::collections::HashMap;
use std::path::Path;

/// `--syntax-check`, `--list-hosts`, `--list-tasks` (for `run` as for
/// `plan`, as ansible-playbook has them): `None` when none is asked for.
pub fn listing(playbook: &Path, pa: &PlaybookArgs) -> Option<anyhow::Result<i32>> {
    if !(pa.syntax_check || pa.list_hosts || pa.list_tasks || pa.list_tags) {
        return None;
    }
    Some(checked(playbook, pa).and_then(|(checked, _)| {
        if pa.syntax_check {
            outln!("playbook: {} ({} plays): OK", playbook.display(), checked.playbook.plays.len())?;
            return Ok(exit_code::OK);
        }
        for (i, play) in checked.playbook.plays.iter().enumerate() {
            let hosts = checked.hosts_of_play(i);
            outln!("play #{} ({}): {}  TAGS: [{}]", i + 1, play.hosts, play.name, play.tags.join(","))?;
            if pa.list_hosts {
                outln!("  hosts ({}):", hosts.len())?;
                for h in &hosts {
                    outln!("    {h}")?;
                }
            }
            if pa.list_tags {
                let mut tags: Vec<&str> = play.tags.iter().map(String::as_str).collect();
                tags.extend(play.steps().flat_map(|s| s.tags.iter().map(String::as_str)));
                tags.sort_unstable();
                tags.dedup();
                outln!("  TASK TAGS: [{}]", tags.join(", "))?;
            }
            if pa.list_tasks {
                outln!("  steps:")?;
                for (phase, steps) in [
                    ("setup", &play.setup),
                    ("before_each", &play.before_each),
                    ("benchmark", &play.benchmark),
                    ("teardown", &play.teardown),
                ] {
                    for s in steps {
                        let tags: Vec<&str> = play.tags.iter().chain(&s.tags).map(String::as_str).collect();
                        outln!("    {phase}: {}  TAGS: [{}]", s.display_name(), tags.join(","))?;
                    }
                }
            }
        }
        Ok(exit_code::OK)
    }))
}

fn checked(playbook: &Path, pa: &PlaybookArgs) -> anyhow::Result<(run::Checked, crate::inventory::Vars)> {
    let extra = extra_vars::parse(&pa.extra_vars).map_err(anyhow::Error::msg)?;
    let tags = TagFilter::new(&pa.tags, &pa.skip_tags);
    let checked = run::check(playbook, &pa.hosts.inventory, pa.hosts.limit.as_deref(), &extra, &tags)?;
    Ok((checked, extra))
}

pub fn run(args: PlanArgs) -> anyhow::Result<i32> {
    let pa = args.play;
    if let Some(done) = listing(&args.playbook, &pa) {
        return done;
    }
    let (checked, extra) = checked(&args.playbook, &pa)?;
    // A missing database just means no cached facts. Only a SQLite file is
    // looked for: `plan` has never opened a PostgreSQL URL.
    let db = &pa.hosts.db.db;
    let store = db.sqlite_path().is_some_and(|p| p.exists()).then(|| Store::open(db)).transpose()?;
    let t = &checked.templates;
    let cached: Vec<(String, Facts)> =
        checked.hosts.keys().filter_map(|h| Some((h.clone(), store.as_ref()?.cached_facts(h).ok()??))).collect();
    let facts: Vec<(&str, &Facts)> = cached.iter().map(|(h, f)| (h.as_str(), f)).collect();
    let facts_by_host: HashMap<&str, &Facts> = facts.iter().copied().collect();
    let facts_of = |h: &str| facts_by_host.get(h).copied();
    let estimates =
        Estimates::from_rows(&store.as_ref().map(Store::newest_cell_times).transpose()?.unwrap_or_default());
    let mut per_cell = Vec::new();
    let mut rows = Vec::new();
    let mut total = 0;
    for (pi, play) in checked.playbook.plays.iter().enumerate() {
        let hosts = checked.hosts_of_play(pi);
        // A plain play per host; a role play over all its hosts at once.
        let planned: Vec<(String, Result<Vec<plan::Cell>, ConfigError>)> = if play.roles.is_empty() {
            hosts
                .iter()
                .map(|h| {
                    let input =
                        HostInput { inventory: &checked.inventory, host: h, extra_vars: &extra, facts: facts_of(h) };
                    (h.clone(), plan::plan_play(play, pi, &input, t))
                })
                .collect()
        } else {
            let label = hosts.join(",");
            vec![(label, plan::plan_role_play(play, pi, &checked.inventory, &hosts, &extra, &facts, t))]
        };
        for (host, result) in planned {
            match result {
                Ok(cells) => {
                    for c in cells {
                        total += 1;
                        let steps: Vec<String> =
                            c.setup
                                .iter()
                                .chain(&c.before_each)
                                .chain(&c.benchmark)
                                .chain(&c.teardown)
                                .map(|s| {
                                    if play.roles.is_empty() {
                                        s.name.clone()
                                    } else {
                                        format!("{}@{}", s.name, s.host)
                                    }
                                })
                                .collect();
                        let fresh = (c.fresh != Fresh::Cell).then(|| format!("fresh: {}", c.fresh.as_str()));
                        let unsupported = c.unsupported.as_ref().map(|u| format!("unsupported: {u}"));
                        let note = fresh.into_iter().chain(unsupported).collect::<Vec<_>>().join("; ");
                        let est =
                            c.unsupported.is_none().then(|| estimates.cell(&c.host, &play.name, &c.key, c.repeat));
                        if let Some(est) = est {
                            per_cell.push((c.host.clone(), est));
                        }
                        rows.push(vec![
                            c.host.clone(),
                            play.name.clone(),
                            c.describe(),
                            c.repeat.to_string(),
                            est.flatten().map_or_else(|| "-".into(), estimate::to_the_second),
                            steps.join(", "),
                            note,
                        ]);
                    }
                }
                Err(e) if needs_facts(&e) => rows.push(vec![
                    host,
                    play.name.clone(),
                    "?".into(),
                    "-".into(),
                    "-".into(),
                    "-".into(),
                    "needs facts: run `benchrig facts` first".into(),
                ]),
                Err(e) => return Err(e.into()),
            }
        }
    }
    out!("{}", table(&["HOST", "PLAY", "CELL", "REPEAT", "EST.", "STEPS", "NOTE"], &rows))?;
    outln!("{total} cells on {} hosts", checked.hosts.len())?;
    let totals = estimate::per_host(per_cell.iter().map(|(h, e)| (h.as_str(), *e)));
    if totals.iter().any(|(_, t)| !t.known.is_zero()) {
        outln!("estimated time per host (each cell's newest stored run, at the planned repetitions):")?;
        for (host, t) in totals {
            let unknown = match t.unknown_cells {
                0 => String::new(),
                n => format!(" + {n} cell(s) never run here"),
            };
            outln!("  {host}: {}{unknown}", estimate::to_the_second(t.known))?;
        }
    }
    Ok(exit_code::OK)
}
