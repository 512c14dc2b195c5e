//! `benchrig plan`: the cells each host would run, touching nothing.
//! Facts come from the database when a host was seen before.

use crate::cli::PlanArgs;
use crate::extra_vars;
use crate::planner::{self, HostInput};
use crate::run::{self, needs_facts};
use crate::store::Store;
use crate::summary::table;
use crate::template::Templates;
use crate::yaml::ConfigError;
use benchrig_wire::facts::Facts;

pub fn run(args: PlanArgs) -> anyhow::Result<i32> {
    let PlanArgs { play: pa, list_hosts, syntax_check } = args;
    let extra = extra_vars::parse(&pa.extra_vars).map_err(anyhow::Error::msg)?;
    let checked = run::check(&pa.playbook, &pa.hosts.inventory, pa.hosts.limit.as_deref(), &extra)?;
    if syntax_check {
        println!("playbook: {} ({} plays): OK", pa.playbook.display(), checked.playbook.plays.len());
        return Ok(0);
    }
    if list_hosts {
        for (i, play) in checked.playbook.plays.iter().enumerate() {
            let hosts: Vec<&String> = checked.hosts.iter().filter(|(_, p)| p.contains(&i)).map(|(h, _)| h).collect();
            println!("play #{} ({}): {}  hosts ({})", i + 1, play.hosts, play.name, hosts.len());
            for h in hosts {
                println!("    {h}");
            }
        }
        return Ok(0);
    }
    // A missing database just means no cached facts.
    let store = pa.hosts.db.exists().then(|| Store::open(&pa.hosts.db)).transpose()?;
    let t = Templates::new();
    let cached: Vec<(String, Facts)> =
        checked.hosts.keys().filter_map(|h| Some((h.clone(), store.as_ref()?.cached_facts(h).ok()??))).collect();
    let facts: Vec<(&str, &Facts)> = cached.iter().map(|(h, f)| (h.as_str(), f)).collect();
    let facts_of = |h: &str| facts.iter().find(|(x, _)| *x == h).map(|(_, f)| *f);
    let mut rows = Vec::new();
    let mut total = 0;
    for (pi, play) in checked.playbook.plays.iter().enumerate() {
        let hosts = checked.hosts_of_play(pi);
        // A plain play per host; a role play over all its hosts at once.
        let planned: Vec<(String, Result<Vec<planner::Cell>, ConfigError>)> = if play.roles.is_empty() {
            hosts
                .iter()
                .map(|h| {
                    let input =
                        HostInput { inventory: &checked.inventory, host: h, extra_vars: &extra, facts: facts_of(h) };
                    (h.clone(), planner::plan_play(play, pi, &input, &t))
                })
                .collect()
        } else {
            let label = hosts.join(",");
            vec![(label, planner::plan_role_play(play, pi, &checked.inventory, &hosts, &extra, &facts, &t))]
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
                        let note = c.unsupported.clone().map(|u| format!("unsupported: {u}")).unwrap_or_default();
                        rows.push(vec![
                            c.host.clone(),
                            play.name.clone(),
                            c.describe(),
                            c.repeat.to_string(),
                            steps.join(", "),
                            note,
                        ]);
                    }
                }
                Err(e) if needs_facts(&e.message) => rows.push(vec![
                    host,
                    play.name.clone(),
                    "?".into(),
                    "-".into(),
                    "-".into(),
                    "needs facts: run `benchrig facts` first".into(),
                ]),
                Err(e) => return Err(e.into()),
            }
        }
    }
    print!("{}", table(&["HOST", "PLAY", "CELL", "REPEAT", "STEPS", "NOTE"], &rows));
    println!("{total} cells on {} hosts", checked.hosts.len());
    Ok(0)
}
