//! `benchrig run --resume RUN`: the run planned again from what is stored
//! with it (playbook text, extra vars, limit, tags; the inventory as it is
//! today), checked against the cells it stored — a cell that would now be
//! planned differently (parameters, rendered steps, device) refuses the
//! resume, naming the difference — and which of its hosts have nothing left
//! to run. Which stored cells run again is `policy::needs_running`.

use super::check::{check_playbook, Checked};
use super::policy;
use super::recipe::Recipe;
use crate::plan::{self, Cell, HostInput};
use crate::playbook;
use crate::status::HostStatus;
use crate::store::{CellRow, RunRecord, Store};
use benchrig_wire::facts::Facts;
use serde_json::Value as Json;
use std::collections::{HashMap, HashSet};
use std::path::PathBuf;

/// Why a run cannot be resumed as stored.
#[derive(Debug, thiserror::Error)]
pub enum ResumeRefused {
    #[error("run {run} cannot be resumed: {why}; start a new run instead")]
    Hosts { run: i64, why: String },
    #[error(
        "run {run} cannot be resumed: it was imported ({when}), and resuming plans again from its stored playbook text, which whoever exported it wrote; start a new run instead"
    )]
    Imported { run: i64, when: String },
    #[error(
        "run {run} cannot be resumed: cell {cell} on {host} would now be planned differently: {what}; start a new run instead"
    )]
    Cell { run: i64, host: String, cell: String, what: String },
}

/// A run to resume, planned again.
pub struct Prepared {
    pub record: RunRecord,
    pub checked: Checked,
    pub recipe: Recipe,
    /// Hosts with nothing left to run: not leased, not connected.
    pub idle: HashSet<String>,
    /// The facts each host had in the run (what an idle host plans with).
    pub facts: Vec<(String, Facts)>,
}

/// Plan run `spec` again as it was started (with `inventory` instead of
/// the stored paths when given), and check today's plan against its cells.
pub fn prepare(store: &Store, spec: &str, inventory: &[PathBuf], retry_failed: bool) -> anyhow::Result<Prepared> {
    let record = store.run_record(store.resolve_run(spec)?.id)?;
    if let Some(when) = &record.imported {
        return Err(ResumeRefused::Imported { run: record.id, when: when.clone() }.into());
    }
    let mut recipe = Recipe::of_run(&record)?;
    if !inventory.is_empty() {
        recipe.inventory = inventory.to_vec();
    }
    let r = &recipe;
    let pb = playbook::parse(&r.playbook_name(), &record.playbook_text)?;
    let checked = check_playbook(pb, &r.inventory, r.limit.as_deref(), &r.extra_vars, &r.tags)?;

    let run = record.id;
    let stored_hosts = store.hosts(run)?;
    let names: Vec<&str> = stored_hosts.iter().map(|h| h.name.as_str()).collect();
    let stored: HashSet<&str> = names.iter().copied().collect();
    if let Some(gone) = names.iter().find(|h| !checked.hosts.contains_key(**h)) {
        let why = format!("host `{gone}` was in it and is not selected by today's inventory");
        return Err(ResumeRefused::Hosts { run, why }.into());
    }
    if let Some(new) = checked.hosts.keys().find(|h| !stored.contains(h.as_str())) {
        let why = format!("host `{new}` is selected today and was not in it");
        return Err(ResumeRefused::Hosts { run, why }.into());
    }
    let facts: Vec<(String, Facts)> = stored_hosts
        .iter()
        .filter_map(|h| Some((h.name.clone(), serde_json::from_value(h.facts.clone()?).ok()?)))
        .collect();
    let cells = store.cells(run)?;
    let idle = idle_hosts(&stored_hosts, &cells, retry_failed);
    let prepared = Prepared { record, checked, recipe, idle, facts };
    compare_plans(&prepared, &cells)?;
    Ok(prepared)
}

/// Hosts with nothing left: they ended ok (or failed, when failed cells
/// are not run again) and no cell that runs again involves them.
fn idle_hosts(hosts: &[crate::store::HostRow], cells: &[CellRow], retry_failed: bool) -> HashSet<String> {
    let busy: HashSet<&str> = cells
        .iter()
        .filter(|c| policy::needs_running(c.status, retry_failed))
        .flat_map(|c| std::iter::once(c.host.as_str()).chain(step_hosts(c)))
        .collect();
    hosts
        .iter()
        .filter(|h| h.status == HostStatus::Ok || (h.status == HostStatus::Failed && !retry_failed))
        .filter(|h| !busy.contains(h.name.as_str()))
        .map(|h| h.name.clone())
        .collect()
}

/// The hosts a stored cell's steps go to (a role play's cell has several).
fn step_hosts(c: &CellRow) -> impl Iterator<Item = &str> {
    let phases = ["setup", "before_each", "benchmark", "teardown"];
    let steps = c.steps.as_ref();
    phases.into_iter().filter_map(move |p| steps?.get(p)?.as_array()).flatten().filter_map(|s| s.get("host")?.as_str())
}

/// Today's plan of every host with something left, with the facts each
/// had in the run, against the cells the run stored.
fn compare_plans(p: &Prepared, cells: &[CellRow]) -> Result<(), ResumeRefused> {
    let t = &p.checked.templates;
    // Indexes rather than a scan per host and per cell (both grow with the
    // hosts); the first of each, as a scan finds it.
    let mut facts_by_host: HashMap<&str, &Facts> = HashMap::new();
    for (h, f) in &p.facts {
        facts_by_host.entry(h.as_str()).or_insert(f);
    }
    let facts_of = |h: &str| facts_by_host.get(h).copied();
    let mut stored_cells: HashMap<(&str, &str), &CellRow> = HashMap::new();
    for c in cells {
        stored_cells.entry((c.host.as_str(), c.key.as_str())).or_insert(c);
    }
    for (pi, play) in p.checked.playbook.plays.iter().enumerate() {
        let hosts = p.checked.hosts_of_play(pi);
        let planned: Vec<Cell> = if play.roles.is_empty() {
            let mut all = Vec::new();
            for h in hosts.iter().filter(|h| !p.idle.contains(*h)) {
                let input = HostInput {
                    inventory: &p.checked.inventory,
                    host: h,
                    extra_vars: &p.recipe.extra_vars,
                    facts: facts_of(h),
                };
                // A plan that needs facts the run never got is checked once they are in.
                all.extend(plan::plan_play(play, pi, &input, t).unwrap_or_default());
            }
            all
        } else {
            let facts: Vec<(&str, &Facts)> = p.facts.iter().map(|(h, f)| (h.as_str(), f)).collect();
            plan::plan_role_play(play, pi, &p.checked.inventory, &hosts, &p.recipe.extra_vars, &facts, t)
                .unwrap_or_default()
        };
        for cell in &planned {
            let stored = stored_cells.get(&(cell.host.as_str(), cell.key.as_str()));
            if let Some(what) = stored.and_then(|s| difference(s, cell)) {
                let (host, cell) = (cell.host.clone(), cell.describe());
                return Err(ResumeRefused::Cell { run: p.record.id, host, cell, what });
            }
        }
        let planned_here = |c: &&CellRow| c.play_index == pi as i64 && !p.idle.contains(&c.host);
        let planned_keys: HashSet<(&str, &str)> = planned.iter().map(|x| (x.host.as_str(), x.key.as_str())).collect();
        for c in cells.iter().filter(planned_here) {
            if !planned_keys.contains(&(c.host.as_str(), c.key.as_str())) && !planned.is_empty() {
                let cell = crate::plan::matrix::describe(&serde_json::from_value(c.params.clone()).unwrap_or_default());
                let what = "today's plan has no such cell".to_string();
                return Err(ResumeRefused::Cell { run: p.record.id, host: c.host.clone(), cell, what });
            }
        }
    }
    Ok(())
}

/// Where a stored cell and today's plan of it first differ, for a person:
/// its parameters, a device, or a rendered step. `None`: the same cell.
pub fn difference(stored: &CellRow, cell: &Cell) -> Option<String> {
    let params = serde_json::to_value(&cell.params).unwrap_or_default();
    if stored.params != params {
        return Some(format!("parameters were {}, now {params}", stored.params));
    }
    // Runs stored before steps were have nothing more to compare.
    let before = stored.steps.as_ref()?;
    let mut now = cell.steps_json();
    // Stored before `fresh` was: it was a literal then, in the stored
    // playbook text this plan comes from, so it cannot have changed.
    if before.get("fresh").is_none() {
        now.as_object_mut().map(|m| m.remove("fresh"));
    }
    // Likewise `monitors`, stored since issue 16.
    if before.get("monitors").is_none() {
        now.as_object_mut().map(|m| m.remove("monitors"));
    }
    let (path, was, is) = first_difference(before, &now, String::new())?;
    let shown = |v: Option<&Json>| v.map_or("nothing".to_string(), Json::to_string);
    if let Some(rest) = path.strip_prefix("devices[") {
        let i: usize = rest.split(']').next().and_then(|n| n.parse().ok()).unwrap_or(0);
        let dev = |j: &Json| j["devices"].get(i).map(|d| format!("`{}` of host {}", d["name"], d["host"]));
        let which = dev(&now).or_else(|| dev(before)).unwrap_or_default().replace('"', "");
        return Some(format!("scratch device {which}: {path} was {}, now {}", shown(was.as_ref()), shown(is.as_ref())));
    }
    Some(format!("{path} was {}, now {}", shown(was.as_ref()), shown(is.as_ref())))
}

/// The first path (`setup[1].action.filesystem.profile.mkfs`) at which two
/// JSON values differ, with the value on each side (`None`: absent).
fn first_difference(a: &Json, b: &Json, path: String) -> Option<(String, Option<Json>, Option<Json>)> {
    let join = |key: &str| if path.is_empty() { key.to_string() } else { format!("{path}.{key}") };
    match (a, b) {
        (Json::Object(x), Json::Object(y)) => {
            let keys: Vec<&String> = x.keys().chain(y.keys().filter(|k| !x.contains_key(*k))).collect();
            keys.into_iter().find_map(|k| match (x.get(k), y.get(k)) {
                (Some(v), Some(w)) => first_difference(v, w, join(k)),
                (v, w) => Some((join(k), v.cloned(), w.cloned())),
            })
        }
        (Json::Array(x), Json::Array(y)) => {
            let found =
                x.iter().zip(y).enumerate().find_map(|(i, (v, w))| first_difference(v, w, format!("{path}[{i}]")));
            found.or_else(|| {
                let i = x.len().min(y.len());
                (x.len() != y.len()).then(|| (format!("{path}[{i}]"), x.get(i).cloned(), y.get(i).cloned()))
            })
        }
        _ if a == b => None,
        _ => Some((path, Some(a.clone()), Some(b.clone()))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::inventory::Vars;
    use crate::playbook::TagFilter;
    use crate::status::CellStatus;
    use serde_json::json;

    fn cell(device_path: &str, size: &str) -> Cell {
        let inv_dir = tempfile::tempdir().unwrap();
        let inv = inv_dir.path().join("inv.yml");
        std::fs::write(
            &inv,
            format!("all:\n  hosts:\n    a:\n      ansible_connection: local\n      scratch_devices: [{{name: d, path: {device_path}}}]\n"),
        )
        .unwrap();
        let pb = playbook::parse(
            "pb.yml",
            &format!(
                "- hosts: a\n  matrix: {{fs: [ext4]}}\n  setup:\n    - filesystem: {{device: d, profile: \"{{{{ fs }}}}\"}}\n  benchmark:\n    - seq_write: {{size: {size}}}\n"
            ),
        )
        .unwrap();
        let checked = check_playbook(pb, &[inv], None, &Vars::new(), &TagFilter::default()).unwrap();
        let input = HostInput { inventory: &checked.inventory, host: "a", extra_vars: &Vars::new(), facts: None };
        plan::plan_play(&checked.playbook.plays[0], 0, &input, &checked.templates).unwrap().remove(0)
    }

    fn stored(c: &Cell) -> CellRow {
        CellRow {
            key: c.key.clone(),
            play: c.play_name.clone(),
            params: serde_json::to_value(&c.params).unwrap(),
            status: CellStatus::Skipped,
            steps: Some(c.steps_json()),
            ..crate::store::testing::cell_row(1, &c.host)
        }
    }

    /// Resuming plans again from the stored playbook text: an imported
    /// run's is whoever exported it's, so it is never resumed.
    #[test]
    fn an_imported_run_is_not_resumed() {
        let places = crate::store::testing::places();
        let here = Store::open(&places.urls[0]).unwrap();
        let made = crate::store::testing::new_run(&here, Some("n"));
        let doc = here.export_run(made).unwrap();
        let dir = tempfile::tempdir().unwrap();
        let central = Store::open(&crate::store::DbLocation::Sqlite(dir.path().join("c.db"))).unwrap();
        let id = central.import_run(&doc).unwrap();
        let e = prepare(&central, &id.to_string(), &[], false).err().expect("refused").to_string();
        assert!(e.contains(&format!("run {id} cannot be resumed: it was imported (")), "{e}");
        assert!(e.contains("which whoever exported it wrote"), "{e}");
    }

    #[test]
    fn the_same_cell_planned_again_is_no_difference() {
        let c = cell("/dev/loop3", "64M");
        assert_eq!(difference(&stored(&c), &c), None);
        let mut old = stored(&c);
        old.steps = None;
        assert_eq!(difference(&old, &c), None, "a run stored before steps were compares parameters only");
    }

    #[test]
    fn a_moved_device_and_a_changed_step_are_named() {
        let was = stored(&cell("/dev/loop3", "64M"));
        let moved = difference(&was, &cell("/dev/loop5", "64M")).unwrap();
        assert_eq!(moved, "scratch device `d` of host a: devices[0].path was \"/dev/loop3\", now \"/dev/loop5\"");
        let bigger = difference(&was, &cell("/dev/loop3", "128M")).unwrap();
        assert!(
            bigger.starts_with("benchmark[0].action") && bigger.contains("was") && bigger.contains("now"),
            "{bigger}"
        );
        let mut other = stored(&cell("/dev/loop3", "64M"));
        other.params = json!({"fs": "xfs"});
        assert_eq!(
            difference(&other, &cell("/dev/loop3", "64M")).unwrap(),
            "parameters were {\"fs\":\"xfs\"}, now {\"fs\":\"ext4\"}"
        );
    }

    #[test]
    fn a_changed_fresh_policy_is_a_difference_unless_the_run_predates_it() {
        let mut c = cell("/dev/loop3", "64M");
        let was = stored(&c);
        c.fresh = crate::playbook::Fresh::Round;
        assert_eq!(difference(&was, &c).unwrap(), "fresh was \"cell\", now \"round\"");
        let mut old = stored(&cell("/dev/loop3", "64M"));
        old.steps.as_mut().unwrap().as_object_mut().unwrap().remove("fresh");
        assert_eq!(difference(&old, &c), None, "stored before the policy was: nothing to compare");
    }

    #[test]
    fn a_changed_monitor_interval_is_a_difference_unless_the_run_predates_monitors() {
        let mut c = cell("/dev/loop3", "64M");
        c.monitor = Some(benchrig_wire::monitor::MonitorConfig { interval_ms: 1000 });
        let was = stored(&c);
        c.monitor = Some(benchrig_wire::monitor::MonitorConfig { interval_ms: 500 });
        assert_eq!(difference(&was, &c).unwrap(), "monitors.interval_ms was 1000, now 500");
        let mut old = stored(&cell("/dev/loop3", "64M"));
        old.steps.as_mut().unwrap().as_object_mut().unwrap().remove("monitors");
        assert_eq!(difference(&old, &c), None, "stored before monitors were: nothing to compare");
    }

    #[test]
    fn the_first_difference_is_found_at_any_depth_and_in_lists_of_other_lengths() {
        let a = json!({"x": [1, {"y": 2}], "z": 1});
        assert_eq!(first_difference(&a, &a, String::new()), None);
        let b = json!({"x": [1, {"y": 3}], "z": 1});
        assert_eq!(first_difference(&a, &b, String::new()), Some(("x[1].y".into(), Some(json!(2)), Some(json!(3)))));
        let c = json!({"x": [1], "z": 1});
        assert_eq!(first_difference(&a, &c, String::new()), Some(("x[1]".into(), Some(json!({"y": 2})), None)));
        let d = json!({"x": [1, {"y": 2}], "z": 1, "new": true});
        assert_eq!(first_difference(&a, &d, String::new()), Some(("new".into(), None, Some(json!(true)))));
    }

    #[test]
    fn hosts_with_nothing_left_are_idle() {
        use crate::store::HostRow;
        let host = |name: &str, status| HostRow { name: name.into(), status, reason: None, facts: None };
        let c = cell("/dev/loop3", "64M");
        let with = |status, on: &str| CellRow { status, host: on.into(), steps: None, ..stored(&c) };
        let hosts = [host("a", HostStatus::Ok), host("b", HostStatus::Failed), host("c", HostStatus::Unreachable)];
        let cells = [with(CellStatus::Ok, "a"), with(CellStatus::Failed, "b"), with(CellStatus::Unreachable, "c")];
        let idle = |retry| {
            let mut v: Vec<String> = idle_hosts(&hosts, &cells, retry).into_iter().collect();
            v.sort();
            v
        };
        assert_eq!(idle(false), ["a", "b"]);
        assert_eq!(idle(true), ["a"], "--retry-failed runs b's failed cell again");
        // A role cell's other host is not idle while the cell runs again ("a" is in its steps).
        let cells = [CellRow { status: CellStatus::Skipped, host: "c".into(), ..stored(&c) }];
        assert!(!idle_hosts(&hosts, &cells, false).contains("a"));
    }
}
