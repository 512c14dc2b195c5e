//! `benchrig plan`: the cells each host would run, touching nothing.
//! Facts come from the database when a host was seen before.

use crate::cli::PlanArgs;
use crate::extra_vars;
use crate::planner::{self, HostInput};
use crate::run::{self, needs_facts};
use crate::store::Store;
use crate::summary::table;
use crate::template::Templates;

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
    let mut rows = Vec::new();
    let mut total = 0;
    for (host, plays) in &checked.hosts {
        let facts = store.as_ref().and_then(|s| s.cached_facts(host).ok().flatten());
        for &pi in plays {
            let play = &checked.playbook.plays[pi];
            let input = HostInput { inventory: &checked.inventory, host, extra_vars: &extra, facts: facts.as_ref() };
            match planner::plan_play(play, pi, &input, &t) {
                Ok(cells) => {
                    for c in cells {
                        total += 1;
                        let steps: Vec<&str> = c
                            .setup
                            .iter()
                            .chain(&c.before_each)
                            .chain(&c.benchmark)
                            .chain(&c.teardown)
                            .map(|s| s.name.as_str())
                            .collect();
                        let note = c.unsupported.clone().map(|u| format!("unsupported: {u}")).unwrap_or_default();
                        rows.push(vec![
                            host.clone(),
                            play.name.clone(),
                            c.describe(),
                            c.repeat.to_string(),
                            steps.join(", "),
                            note,
                        ]);
                    }
                }
                Err(e) if needs_facts(&e.message) => {
                    rows.push(vec![
                        host.clone(),
                        play.name.clone(),
                        "?".into(),
                        "-".into(),
                        "-".into(),
                        "needs facts: run `benchrig facts` first".into(),
                    ]);
                }
                Err(e) => return Err(e.into()),
            }
        }
    }
    print!("{}", table(&["HOST", "PLAY", "CELL", "REPEAT", "STEPS", "NOTE"], &rows));
    println!("{total} cells on {} hosts", checked.hosts.len());
    Ok(0)
}
