//! Inventory + playbook + matrix (+ the host's facts, when known) → cells.
//!
//! Pure: no I/O, no clock, no randomness. `benchrig plan` and `benchrig run`
//! both call it; `run` calls it once without facts before touching any host
//! (so every error a person can fix shows up first) and again per host once
//! its facts are in.

pub mod capacity;
mod cells;
pub mod matrix;

use crate::diagnostic::{did_you_mean, ConfigError};
use crate::inventory::{Inventory, Vars};
use crate::playbook::{Assign, Fresh, Play, UnknownFresh};
use crate::template::Templates;
use benchrig_wire::facts::Facts;
use benchrig_wire::monitor::MonitorConfig;
use benchrig_wire::scratch::{ScratchDevice, ScratchKind};
use benchrig_wire::steps::Action;
use cells::PlayCtx;
use matrix::Point;
use serde_json::{json, Value as Json};

#[derive(Clone, Debug)]
pub struct Cell {
    /// Stable identity within a run: play index and parameters (a role
    /// play's parameters include which host has which role).
    pub key: String,
    /// The host the cell's results belong to: in a role play, the host of
    /// its first measured step.
    pub host: String,
    pub play_index: usize,
    pub play_name: String,
    pub params: Point,
    /// Repetitions at most (all of them unless `policy` stops early).
    pub repeat: u32,
    pub policy: RepeatPolicy,
    pub setup: Vec<PlannedStep>,
    pub before_each: Vec<PlannedStep>,
    pub benchmark: Vec<PlannedStep>,
    pub teardown: Vec<PlannedStep>,
    /// Known before running: this host cannot make the cell (and why).
    pub unsupported: Option<String>,
    /// How often its setup is made fresh (`fresh:` rendered for this cell).
    pub fresh: Fresh,
    /// What the agent samples while each measured step runs (`monitors:`
    /// rendered for this cell); `None`: `monitors: false`.
    pub monitor: Option<MonitorConfig>,
    /// The scratch devices its steps name, as the inventory gave them: so
    /// `--resume` can tell that a cell would now land on another device.
    pub devices: Vec<CellDevice>,
    /// The kernel it runs under (`kernel:` rendered for this cell); `None`:
    /// whatever the host runs.
    pub kernel: Option<crate::playbook::kernel::KernelSpec>,
}

/// A scratch device a cell uses: which host's, and the inventory's entry
/// but for `wipe` (a permission, not which device it is).
#[derive(Clone, Debug, PartialEq, serde::Serialize)]
pub struct CellDevice {
    pub host: String,
    pub name: String,
    pub path: String,
    pub kind: ScratchKind,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub serial: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub size: Option<benchrig_wire::units::ByteSize>,
}

/// When a cell may stop repeating before `repeat`, and how many unrecorded
/// warm-up repetitions open each visit.
#[derive(Clone, Debug, PartialEq)]
pub struct RepeatPolicy {
    /// Never stop before this many recorded repetitions.
    pub min: u32,
    /// Stop once the CI95 half-width of every metric (of `metrics`, when
    /// given) is under this percent of its mean.
    pub ci_pct: Option<f64>,
    pub metrics: Vec<String>,
    pub warmup: u32,
}

impl RepeatPolicy {
    pub fn fixed(n: u32) -> Self {
        RepeatPolicy { min: n, ci_pct: None, metrics: Vec::new(), warmup: 0 }
    }
}

/// `repeat` rendered for a cell: a count, or `{min, max, ci_pct, warmup}`.
fn repeat_policy(node: &crate::yaml::Node, ctx: &Json, t: &Templates) -> Result<(u32, RepeatPolicy), ConfigError> {
    let v = t.render(&node.to_json(), ctx).map_err(|e| e.at(&node.loc))?;
    let whole = |v: &Json, what: &str, least: u64| -> Result<u32, ConfigError> {
        let n = v.as_u64().or_else(|| v.as_str().and_then(|s| s.trim().parse().ok()));
        match n {
            Some(n) if (least..=u32::MAX as u64).contains(&n) => Ok(n as u32),
            _ => Err(node.error(format!("{what} must be a whole number of at least {least}, got {v}"))),
        }
    };
    let Json::Object(m) = &v else {
        let n = whole(&v, "`repeat`", 1)?;
        return Ok((n, RepeatPolicy::fixed(n)));
    };
    let max = whole(&m["max"], "`repeat.max`", 1)?;
    let min = m.get("min").map(|x| whole(x, "`repeat.min`", 1)).transpose()?.unwrap_or(2.min(max));
    if min > max {
        return Err(node.error(format!("`repeat.min` ({min}) is more than `repeat.max` ({max})")));
    }
    // A CI needs two samples: below that there is nothing to judge.
    let min = if m.contains_key("ci_pct") { min.max(2.min(max)) } else { min };
    let warmup = m.get("warmup").map(|x| whole(x, "`repeat.warmup`", 0)).transpose()?.unwrap_or(0);
    let ci_pct = m.get("ci_pct").and_then(Json::as_f64);
    let metrics = m
        .get("metrics")
        .and_then(Json::as_array)
        .map(|a| a.iter().filter_map(|x| x.as_str().map(str::to_string)).collect())
        .unwrap_or_default();
    Ok((max, RepeatPolicy { min: if ci_pct.is_some() { min } else { max }, ci_pct, metrics, warmup }))
}

/// `fresh` rendered for a cell: a policy this play can run (`Play::fresh_fits`).
fn fresh_policy(play: &Play, ctx: &Json, t: &Templates) -> Result<Fresh, ConfigError> {
    let Some(node) = &play.fresh else { return Ok(Fresh::Cell) };
    let v = t.render(&node.to_json(), ctx).map_err(|e| e.at(&node.loc))?;
    let text = v.as_str().map(str::trim).unwrap_or_default();
    let fresh: Fresh = text.parse().map_err(|_| {
        let shown = if v.is_string() { text.to_string() } else { v.to_string() };
        node.error(UnknownFresh(shown).to_string()).with_hint(did_you_mean(text, &Fresh::NAMES))
    })?;
    play.fresh_fits(fresh)?;
    Ok(fresh)
}

/// The default `monitors: true`: one sample a second.
pub const MONITOR_INTERVAL_MS: u64 = 1000;

/// `monitors` rendered for a cell: `true` (1 s), `false`, or seconds above
/// 0 (kept to the millisecond, at least 1 ms).
fn monitor_policy(play: &Play, ctx: &Json, t: &Templates) -> Result<Option<MonitorConfig>, ConfigError> {
    let Some(node) = &play.monitors else { return Ok(Some(MonitorConfig { interval_ms: MONITOR_INTERVAL_MS })) };
    let v = t.render(&node.to_json(), ctx).map_err(|e| e.at(&node.loc))?;
    let text = v.as_str().map(str::trim);
    let seconds = match (&v, text) {
        (Json::Bool(false), _) | (_, Some("false")) => return Ok(None),
        (Json::Bool(true), _) | (_, Some("true")) => {
            return Ok(Some(MonitorConfig { interval_ms: MONITOR_INTERVAL_MS }))
        }
        (Json::Number(n), _) => n.as_f64(),
        (_, Some(t)) => t.parse::<f64>().ok(),
        _ => None,
    };
    match seconds {
        // The agent samples no faster than every 10 ms (`monitor::sampler::MIN_INTERVAL_MS`).
        Some(s) if s >= 0.01 && s.is_finite() => Ok(Some(MonitorConfig { interval_ms: (s * 1000.0).round() as u64 })),
        _ => Err(node.error(format!("`monitors` is `true`, `false` or seconds, at least 0.01, got {v}"))),
    }
}

#[derive(Clone, Debug, serde::Serialize)]
pub struct PlannedStep {
    pub name: String,
    pub action: Action,
    /// The host whose agent runs it (in a role play, its role's host).
    pub host: String,
    /// A failure is reported and the cell goes on.
    pub ignore_errors: bool,
    /// Cancelled and failed when it runs longer (stored in seconds).
    #[serde(serialize_with = "seconds")]
    pub timeout: Option<std::time::Duration>,
}

impl capacity::HostStep for PlannedStep {
    fn host(&self) -> &str {
        &self.host
    }

    fn action(&self) -> &Action {
        &self.action
    }
}

fn seconds<S: serde::Serializer>(d: &Option<std::time::Duration>, s: S) -> Result<S::Ok, S::Error> {
    s.serialize_some(&d.map(|d| d.as_secs_f64()))
}

impl PlannedStep {
    /// A step benchrig adds itself (the release after a cell).
    pub fn internal(name: &str, action: Action, host: &str) -> Self {
        PlannedStep { name: name.into(), action, host: host.into(), ignore_errors: false, timeout: None }
    }
}

impl Cell {
    /// Every step by phase, as stored with the cell.
    pub fn steps_json(&self) -> Json {
        json!({
            "setup": self.setup,
            "before_each": self.before_each,
            "benchmark": self.benchmark,
            "teardown": self.teardown,
            "devices": self.devices,
            "fresh": self.fresh,
            "monitors": self.monitor,
        })
    }

    /// What a `fresh: round` cell's setup is, to tell which cells may share
    /// one: its setup and teardown steps as rendered (action arguments with
    /// device, profile, mkfs argv and mount options, and the host of each
    /// step), never their names. `None`: this cell never shares.
    pub fn shared_setup(&self) -> Option<Json> {
        (self.fresh == Fresh::Round).then(|| {
            let rendered = |steps: &[PlannedStep]| -> Vec<Json> {
                steps
                    .iter()
                    .map(|s| json!([s.host, s.action, s.ignore_errors, s.timeout.map(|d| d.as_secs_f64())]))
                    .collect()
            };
            json!({"setup": rendered(&self.setup), "teardown": rendered(&self.teardown)})
        })
    }

    pub fn describe(&self) -> String {
        if self.params.is_empty() {
            "(no parameters)".into()
        } else {
            matrix::describe(&self.params)
        }
    }
}

/// Templates for planning on `inventory`: its `groups` (every group's
/// hosts, the same on every host) built and converted once and seen by every
/// host's templates, rather than copied into each host's context, which made
/// planning every host quadratic in hosts.
pub fn templates(inventory: &Inventory) -> Templates {
    let mut shared = serde_json::Map::new();
    shared.insert("groups".into(), inventory.groups_var());
    Templates::with_shared(shared)
}

/// What the planner knows about one host.
pub struct HostInput<'a> {
    pub inventory: &'a Inventory,
    pub host: &'a str,
    pub extra_vars: &'a Vars,
    pub facts: Option<&'a Facts>,
}

/// The host's `scratch_devices`, checked: the only devices benchrig may format.
pub fn scratch_devices(host: &str, vars: &Vars) -> Result<Vec<ScratchDevice>, String> {
    let Some(list) = vars.get("scratch_devices") else { return Ok(Vec::new()) };
    let devices: Vec<ScratchDevice> =
        serde_json::from_value(list.clone()).map_err(|e| format!("host `{host}`: scratch_devices: {e}"))?;
    for (i, d) in devices.iter().enumerate() {
        // The name becomes a mount point's last component on the host.
        let good = |c: char| c.is_ascii_alphanumeric() || "._-".contains(c);
        if d.name.is_empty() || d.name.starts_with('.') || !d.name.chars().all(good) {
            return Err(format!(
                "host `{host}`: scratch_devices: name `{}` must be letters, digits, `.`, `_` or `-` (not starting with `.`)",
                d.name
            ));
        }
        if devices[..i].iter().any(|o| o.name == d.name) {
            return Err(format!("host `{host}`: scratch_devices: the name `{}` is used twice", d.name));
        }
        if devices[..i].iter().any(|o| o.path == d.path) {
            return Err(format!("host `{host}`: scratch_devices: the path `{}` is listed twice", d.path));
        }
        if d.kind == ScratchKind::Block && !d.path.starts_with('/') {
            return Err(format!("host `{host}`: scratch_devices: `{}` must be an absolute device path", d.path));
        }
    }
    Ok(devices)
}

/// The variables templates see on a host, before the cell's parameters:
/// inventory vars < play vars < extra vars, plus `groups`, `facts` and, in
/// a role play, `roles` and `hostvars` (`play_level`), which play vars may use.
pub fn host_context(
    play: &Play,
    input: &HostInput,
    play_level: &serde_json::Map<String, Json>,
    t: &Templates,
) -> Result<Json, ConfigError> {
    let mut ctx = input.inventory.host_vars(input.host);
    if t.shares("groups") {
        // `t` holds it (`templates`); a host variable of that name must not
        // hide it, as the magic variable set here would have overwritten it.
        ctx.shift_remove("groups");
    } else {
        ctx.insert("groups".into(), input.inventory.groups_var());
    }
    if let Some(f) = input.facts {
        ctx.insert("facts".into(), json!(f));
    }
    ctx.extend(play_level.clone());
    ctx.extend(input.extra_vars.clone());
    for (name, node) in &play.vars {
        if input.extra_vars.contains_key(name) {
            continue; // -e always wins
        }
        let ctx_json = Json::Object(ctx.clone());
        let v = t.render(&node.to_json(), &ctx_json).map_err(|e| e.at(&node.loc))?;
        ctx.insert(name.clone(), v);
    }
    Ok(Json::Object(ctx))
}

/// The cells of a play on one host (a play without roles).
pub fn plan_play(play: &Play, play_index: usize, input: &HostInput, t: &Templates) -> Result<Vec<Cell>, ConfigError> {
    let facts: Vec<(&str, &Facts)> = input.facts.map(|f| (input.host, f)).into_iter().collect();
    let ctx = PlayCtx::new(play, play_index, input.inventory, input.extra_vars, &facts, t);
    ctx.cells(&[(None, input.host)])
}

/// The cells of a play with roles, over every assignment of its hosts to
/// its roles (or only the first, with `assign: first`). Each cell's
/// parameters start with the assignment (`server=fast1 client=fast2`).
pub fn plan_role_play(
    play: &Play,
    play_index: usize,
    inventory: &Inventory,
    hosts: &[String],
    extra_vars: &Vars,
    facts: &[(&str, &Facts)],
    t: &Templates,
) -> Result<Vec<Cell>, ConfigError> {
    if hosts.len() < play.roles.len() {
        return Err(ConfigError::at(
            &play.loc,
            format!(
                "play `{}` has {} roles ({}) but only {} host(s) to give them",
                play.name,
                play.roles.len(),
                play.roles.join(", "),
                hosts.len()
            ),
        ));
    }
    let mut assignments = assignments(hosts, play.roles.len());
    if play.assign == Assign::First {
        assignments.truncate(1);
    }
    let ctx = PlayCtx::new(play, play_index, inventory, extra_vars, facts, t);
    let mut cells = Vec::new();
    for a in assignments {
        let pairs: Vec<(Option<&str>, &str)> =
            play.roles.iter().zip(&a).map(|(r, h)| (Some(r.as_str()), h.as_str())).collect();
        cells.extend(ctx.cells(&pairs)?);
    }
    Ok(cells)
}

/// Every ordered choice of `k` distinct hosts (k-permutations), in inventory order.
fn assignments(hosts: &[String], k: usize) -> Vec<Vec<String>> {
    if k == 0 {
        return vec![Vec::new()];
    }
    let mut out = Vec::new();
    for (i, h) in hosts.iter().enumerate() {
        let rest: Vec<String> = hosts.iter().enumerate().filter(|(j, _)| *j != i).map(|(_, x)| x.clone()).collect();
        for mut tail in assignments(&rest, k - 1) {
            tail.insert(0, h.clone());
            out.push(tail);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::playbook;

    fn inv() -> Inventory {
        let mut inv = Inventory::default();
        inv.add_host_to_group("lab", "h1");
        inv.ensure_host("h1").vars.insert(
            "scratch_devices".into(),
            json!([{"path": "/dev/sdb", "name": "hdd0"}, {"path": "/dev/sdc", "name": "hdd1"}]),
        );
        inv.ensure_group("lab").vars.insert("size".into(), json!("8M"));
        inv
    }

    const PB: &str = r#"
- name: q
  hosts: all
  vars: {reps: 2, label: "{{ size }}-run"}
  matrix:
    fs: "{{ fss | default(['ext4', 'xfs']) }}"
    bs: [4k, 1M]
    exclude: [{fs: xfs, bs: 4k}]
  repeat: "{{ reps }}"
  setup:
    - filesystem: {device: "{{ scratch_devices[0].name }}", profile: "{{ fs }}"}
  benchmark:
    - seq_write: {size: "{{ size }}", bs: "{{ bs }}"}
  teardown:
    - unmount:
"#;

    fn plan(pb: &str, extra: Vars, facts: Option<&Facts>) -> Result<Vec<Cell>, ConfigError> {
        let pb = playbook::parse("pb.yml", pb).unwrap();
        let inv = inv();
        let input = HostInput { inventory: &inv, host: "h1", extra_vars: &extra, facts };
        plan_play(&pb.plays[0], 0, &input, &templates(&inv))
    }

    #[test]
    fn tune_is_the_first_setup_step_with_the_cells_devices_and_rendered_per_cell() {
        let pb = PB.replace(
            "  repeat:",
            "  tune: {read_ahead_kb: \"{{ 16 if bs == '4k' else 128 }}\", swappiness: 10}\n  repeat:",
        );
        let cells = plan(&pb, Vars::new(), None).unwrap();
        let Action::Tune(t) = &cells[0].setup[0].action else { panic!("{:?}", cells[0].setup[0].action) };
        assert_eq!((t.read_ahead_kb, t.swappiness), (Some(16), Some(10)));
        assert_eq!(t.devices, [cells[0].devices[0].name.clone()], "the cell's scratch device");
        assert!(matches!(cells[0].setup[1].action, Action::Filesystem(_)));
        let Action::Tune(t) = &cells[1].setup[0].action else { panic!() };
        assert_eq!(t.read_ahead_kb, Some(128));
        // A queue setting in a cell that names no device is an error at `tune`.
        let pb = "- hosts: all\n  tune: {nr_requests: 4}\n  benchmark:\n    - noop:\n";
        let e = plan(pb, Vars::new(), None).unwrap_err();
        assert_eq!((e.line, e.col), (2, 9));
        assert!(e.message.ends_with("its steps name none"), "{e}");
        // Host-wide settings alone need no device.
        let pb = "- hosts: all\n  tune: {swappiness: 1}\n  benchmark:\n    - noop:\n";
        assert!(matches!(plan(pb, Vars::new(), None).unwrap()[0].setup[0].action, Action::Tune(_)));
        // With facts, what the host cannot take is known before it is touched.
        let root = Facts {
            user: benchrig_wire::facts::User { root: true, ..Default::default() },
            tuning: Some(benchrig_wire::facts::HostTuning::default()),
            ..Default::default()
        };
        assert_eq!(plan(pb, Vars::new(), Some(&root)).unwrap()[0].unsupported, None);
        let user =
            Facts { user: benchrig_wire::facts::User { name: "bob".into(), ..Default::default() }, ..root.clone() };
        assert_eq!(
            plan(pb, Vars::new(), Some(&user)).unwrap()[0].unsupported.as_deref(),
            Some("tune: the agent on h1 runs as bob, not root (add `become: true`)")
        );
        let gov = "- hosts: all\n  tune: {governor: performance}\n  benchmark:\n    - noop:\n";
        assert_eq!(
            plan(gov, Vars::new(), Some(&root)).unwrap()[0].unsupported.as_deref(),
            Some("tune governor: h1 has no cpufreq (/sys/devices/system/cpu/cpufreq absent)")
        );
    }

    #[test]
    fn cells_from_matrix_vars_and_inventory() {
        let cells = plan(PB, Vars::new(), None).unwrap();
        let shown: Vec<String> = cells.iter().map(Cell::describe).collect();
        assert_eq!(shown, ["fs=ext4 bs=4k", "fs=ext4 bs=1M", "fs=xfs bs=1M"]);
        let c = &cells[2];
        assert_eq!(c.repeat, 2);
        assert_eq!(c.key, "0:fs=xfs bs=1M");
        let Action::Filesystem(f) = &c.setup[0].action else { panic!() };
        assert_eq!((f.device.as_str(), f.profile.name.as_str()), ("hdd0", "xfs"));
        assert_eq!(f.profile.mkfs[0], "mkfs.xfs");
        let Action::SeqWrite(w) = &c.benchmark[0].action else { panic!() };
        assert_eq!(w.size.0, 8 << 20);
        assert!(c.unsupported.is_none());
    }

    #[test]
    fn extra_vars_beat_play_and_inventory_vars() {
        let mut extra = Vars::new();
        extra.insert("size".into(), json!("16M"));
        extra.insert("reps".into(), json!("5"));
        extra.insert("fss".into(), json!(["btrfs"]));
        let cells = plan(PB, extra, None).unwrap();
        assert_eq!(cells.len(), 2);
        assert_eq!(cells[0].repeat, 5);
        let Action::SeqWrite(w) = &cells[0].benchmark[0].action else { panic!() };
        assert_eq!(w.size.0, 16 << 20);
    }

    #[test]
    fn missing_tool_in_facts_makes_the_cell_unsupported() {
        let facts = Facts {
            tools: vec![benchrig_wire::facts::Tool {
                name: "mkfs.ext4".into(),
                path: "/sbin/mkfs.ext4".into(),
                version: None,
            }],
            ..Default::default()
        };
        let cells = plan(PB, Vars::new(), Some(&facts)).unwrap();
        assert!(cells[0].unsupported.is_none());
        assert_eq!(cells[2].unsupported.as_deref(), Some("mkfs.xfs is not installed on h1 (Debian package xfsprogs)"));
    }

    const FIO_PB: &str = r#"
- name: f
  hosts: all
  setup:
    - filesystem: {device: hdd0, profile: ext4}
  benchmark:
    - fio:
        jobs:
          rr: {rw: randread, bs: 4k, size: "{{ size }}"}
"#;

    #[test]
    fn a_host_whose_facts_lack_fio_has_its_fio_cells_unsupported() {
        let tool = |name: &str| benchrig_wire::facts::Tool {
            name: name.into(),
            path: format!("/usr/bin/{name}"),
            version: None,
        };
        let without = Facts { tools: vec![tool("mkfs.ext4")], ..Default::default() };
        let cells = plan(FIO_PB, Vars::new(), Some(&without)).unwrap();
        assert_eq!(cells[0].unsupported.as_deref(), Some("fio is not installed on h1"));
        let with = Facts { tools: vec![tool("mkfs.ext4"), tool("fio")], ..Default::default() };
        assert_eq!(plan(FIO_PB, Vars::new(), Some(&with)).unwrap()[0].unsupported, None);
        assert_eq!(plan(FIO_PB, Vars::new(), None).unwrap()[0].unsupported, None, "without facts the agent tells");
    }

    #[test]
    fn every_tool_an_action_s_row_needs_is_looked_for_in_the_facts() {
        let pb = r#"
- name: v
  hosts: all
  setup:
    - volume: {devices: [hdd0, hdd1]}
  benchmark:
    - volume_remove: {device: hdd1}
"#;
        let tool =
            |name: &str| benchrig_wire::facts::Tool { name: name.into(), path: format!("/sbin/{name}"), version: None };
        let with = |names: &[&str]| Facts { tools: names.iter().map(|n| tool(n)).collect(), ..Default::default() };
        let why = |facts: Facts| plan(pb, Vars::new(), Some(&facts)).unwrap()[0].unsupported.clone();
        assert_eq!(
            why(with(&["btrfs"])).as_deref(),
            Some("mkfs.btrfs is not installed on h1 (Debian package btrfs-progs)")
        );
        assert_eq!(
            why(with(&["mkfs.btrfs"])).as_deref(),
            Some("btrfs is not installed on h1 (Debian package btrfs-progs)")
        );
        assert_eq!(why(with(&["mkfs.btrfs", "btrfs"])), None);
        // The kernel first, as the agent asks: a tool would not help without it.
        let mut no_btrfs = with(&[]);
        no_btrfs.kernel.release = "6.1.0".into();
        no_btrfs.filesystems = vec!["ext4".into()];
        assert_eq!(why(no_btrfs).as_deref(), Some("the kernel (6.1.0) of h1 has no btrfs support"));
    }

    #[test]
    fn a_program_a_step_s_arguments_name_is_looked_for_in_the_facts_too() {
        let pb = r#"
- name: c
  hosts: all
  matrix:
    codec: [raw, zstd]
    tool: [builtin, external]
  setup:
    - filesystem: {device: hdd0, profile: ext4}
  benchmark:
    - cold_read: {size: 1M, codec: "{{ codec }}", tool: "{{ tool }}"}
"#;
        let tool =
            |name: &str| benchrig_wire::facts::Tool { name: name.into(), path: format!("/sbin/{name}"), version: None };
        let facts = Facts { tools: vec![tool("mkfs.ext4")], ..Default::default() };
        let cells = plan(pb, Vars::new(), Some(&facts)).unwrap();
        let why: Vec<(String, Option<&str>)> = cells
            .iter()
            .map(|c| (format!("{}/{}", c.params["codec"], c.params["tool"]), c.unsupported.as_deref()))
            .collect();
        // Only zstd run by the host's own program needs it there.
        assert_eq!(
            why,
            [
                (r#""raw"/"builtin""#.into(), None),
                (r#""raw"/"external""#.into(), None),
                (r#""zstd"/"builtin""#.into(), None),
                (r#""zstd"/"external""#.into(), Some("zstd is not installed on h1")),
            ]
        );
        let nfs = "- name: n\n  hosts: all\n  setup:\n    - mount: {name: r, source: 's:/x', fstype: nfs4}\n  benchmark:\n    - noop: {}\n";
        let mut old_kernel = facts.clone();
        old_kernel.kernel.release = "5.10.0".into();
        old_kernel.filesystems = vec!["ext4".into(), "nfs4".into()];
        let why = plan(nfs, Vars::new(), Some(&old_kernel)).unwrap()[0].unsupported.clone();
        assert_eq!(why.as_deref(), Some("mount.nfs is not installed on h1 (Debian package nfs-common)"));
        // A Rocky host is named the package dnf would install.
        let mut rocky = old_kernel.clone();
        rocky.distribution.id = "rocky".into();
        rocky.distribution.id_like = "rhel centos fedora".into();
        let why = plan(nfs, Vars::new(), Some(&rocky)).unwrap()[0].unsupported.clone();
        assert_eq!(why.as_deref(), Some("mount.nfs is not installed on h1 (Fedora/RHEL package nfs-utils)"));
        old_kernel.filesystems = vec!["ext4".into()];
        let why = plan(nfs, Vars::new(), Some(&old_kernel)).unwrap()[0].unsupported.clone();
        assert_eq!(why.as_deref(), Some("the kernel (5.10.0) of h1 has no nfs4 support"));
    }

    #[test]
    fn a_fio_option_that_would_write_elsewhere_is_an_error_at_its_step() {
        let pb = FIO_PB.replace("size: \"{{ size }}\"", "filename: /dev/sda");
        let e = plan(&pb, Vars::new(), None).unwrap_err().to_string();
        assert!(
            e.contains("pb.yml:7:") && e.contains("[rr] fio option `filename=/dev/sda`: `/dev/sda` is absolute"),
            "{e}"
        );
    }

    #[test]
    fn a_kernel_without_the_filesystem_is_the_reason_before_a_missing_tool() {
        let mut facts = Facts {
            kernel: benchrig_wire::facts::Kernel { release: "6.18.4".into(), version: String::new() },
            filesystems: vec!["ext4".into(), "btrfs".into()],
            ..Default::default()
        };
        // A kernel without modules: what it lists is all it has. Where the
        // kernel has the filesystem, the tool is looked at next.
        let cells = plan(PB, Vars::new(), Some(&facts)).unwrap();
        assert_eq!(
            cells[0].unsupported.as_deref(),
            Some("mkfs.ext4 is not installed on h1 (Debian package e2fsprogs)")
        );
        assert_eq!(cells[2].unsupported.as_deref(), Some("the kernel (6.18.4) of h1 has no xfs support"));
        // With modules but no readable list, only the agent can tell.
        facts.loadable_modules = true;
        let xfs = plan(PB, Vars::new(), Some(&facts)).unwrap()[2].unsupported.clone();
        assert_eq!(xfs.as_deref(), Some("mkfs.xfs is not installed on h1 (Debian package xfsprogs)"));
        // XFS as a module not yet loaded is support.
        facts.module_filesystems = vec!["xfs".into()];
        let xfs = plan(PB, Vars::new(), Some(&facts)).unwrap()[2].unsupported.clone();
        assert_eq!(xfs.as_deref(), Some("mkfs.xfs is not installed on h1 (Debian package xfsprogs)"));
    }

    #[test]
    fn unknown_device_and_undefined_variable_are_located_errors() {
        let e = plan(&PB.replace("scratch_devices[0].name", "'hdd9'"), Vars::new(), None).unwrap_err();
        assert!(e.message.contains("no scratch device `hdd9`"), "{e}");
        assert_eq!(e.line, 11);
        let e = plan(&PB.replace("{{ size }}\", bs", "{{ sise }}\", bs"), Vars::new(), None).unwrap_err();
        assert!(e.message.contains("undefined variable `sise`"), "{e}");
        let e = plan(&PB.replace("{size: \"{{ size }}\"", "{size: \"lots\""), Vars::new(), None).unwrap_err();
        assert!(e.message.contains("`lots` is not a size"), "{e}");
        // The error points at the argument, not only at the step.
        assert_eq!((e.line, e.col), (13, 25), "{e}");
    }

    #[test]
    fn role_plays_cover_every_assignment_and_send_steps_to_their_role() {
        let mut inv = inv();
        inv.add_host_to_group("lab", "h2");
        inv.ensure_host("h2").vars.insert("ansible_host".into(), json!("10.0.0.2"));
        inv.ensure_host("h2").vars.insert("scratch_devices".into(), json!([{"path": "/dev/sdx", "name": "x"}]));
        let pb = playbook::parse(
            "r.yml",
            r#"
- hosts: all
  roles: [server, client]
  matrix:
    variant: [a, b]
  setup:
    - {role: server, exec: {command: "serve {{ variant }} on {{ inventory_hostname }}"}}
    - {role: client, exec: {command: "mount {{ hostvars[roles.server].ansible_host | default(roles.server) }}"}}
  benchmark:
    - {role: client, noop: }
  teardown:
    - noop:
"#,
        )
        .unwrap();
        let hosts = vec!["h1".to_string(), "h2".to_string()];
        let cells = plan_role_play(&pb.plays[0], 0, &inv, &hosts, &Vars::new(), &[], &templates(&inv)).unwrap();
        let shown: Vec<String> = cells.iter().map(|c| format!("{} @{}", c.describe(), c.host)).collect();
        assert_eq!(
            shown,
            [
                "server=h1 client=h2 variant=a @h2",
                "server=h1 client=h2 variant=b @h2",
                "server=h2 client=h1 variant=a @h1",
                "server=h2 client=h1 variant=b @h1"
            ]
        );
        let c = &cells[0];
        let cmd = |s: &PlannedStep| match &s.action {
            Action::Exec(e) => format!("{:?}@{}", e.command, s.host),
            _ => panic!(),
        };
        assert_eq!(cmd(&c.setup[0]), "Shell(\"serve a on h1\")@h1");
        assert_eq!(cmd(&c.setup[1]), "Shell(\"mount h1\")@h2");
        assert_eq!(cells[2].setup[1].host, "h1");
        // A step without a role runs on every host of the cell.
        let hosts_of: Vec<&str> = c.teardown.iter().map(|s| s.host.as_str()).collect();
        assert_eq!(hosts_of, ["h1", "h2"]);
        // Two roles need two hosts.
        let e = plan_role_play(&pb.plays[0], 0, &inv, &hosts[..1], &Vars::new(), &[], &templates(&inv)).unwrap_err();
        assert!(e.message.contains("only 1 host"), "{e}");
    }

    #[test]
    fn an_export_without_clients_goes_to_the_cells_other_hosts_and_a_plain_play_must_name_them() {
        let mut inv = inv();
        inv.add_host_to_group("lab", "h2");
        inv.ensure_host("h2").vars.insert("ansible_host".into(), json!("10.0.0.2"));
        let pb = playbook::parse(
            "r.yml",
            "- hosts: all\n  roles: [server, client]\n  setup:\n    - {role: server, nfs_export: {target: x}}\n",
        )
        .unwrap();
        let hosts = vec!["h1".to_string(), "h2".to_string()];
        let cells = plan_role_play(&pb.plays[0], 0, &inv, &hosts, &Vars::new(), &[], &templates(&inv)).unwrap();
        let clients = |c: &Cell| match &c.setup[0].action {
            Action::NfsExport(e) => format!("{}@{}", e.clients, c.setup[0].host),
            other => panic!("{other:?}"),
        };
        // h2 by its ansible_host; h1, which has none, by its name.
        assert_eq!(clients(&cells[0]), "10.0.0.2@h1");
        assert_eq!(clients(&cells[1]), "h1@h2");
        let e = plan("- hosts: all\n  setup:\n    - nfs_export: {target: x}\n", Vars::new(), None).unwrap_err();
        assert!(e.to_string().contains("pb.yml:3:7") && e.message.contains("`nfs_export` needs `clients` here"), "{e}");
    }

    #[test]
    fn k_permutations() {
        let h: Vec<String> = ["a", "b", "c"].iter().map(|s| s.to_string()).collect();
        assert_eq!(assignments(&h, 2).len(), 6);
        assert_eq!(assignments(&h, 1).len(), 3);
        assert_eq!(assignments(&h, 0), vec![Vec::<String>::new()]);
    }

    #[test]
    fn scratch_device_entries_are_checked() {
        let mut v = Vars::new();
        v.insert("scratch_devices".into(), json!([{"path": "/dev/sdb", "name": "a", "wipe": true, "serail": "x"}]));
        assert!(scratch_devices("h", &v).unwrap_err().contains("unknown field `serail`"));
        v.insert(
            "scratch_devices".into(),
            json!([{"path": "/dev/sdb", "name": "a"}, {"path": "/dev/sdc", "name": "a"}]),
        );
        assert!(scratch_devices("h", &v).unwrap_err().contains("used twice"));
        v.insert("scratch_devices".into(), json!([{"path": "sdb", "name": "a"}]));
        assert!(scratch_devices("h", &v).unwrap_err().contains("absolute"));
        for bad in ["../../etc", ".hidden", "a/b", ""] {
            v.insert("scratch_devices".into(), json!([{"path": "/dev/sdb", "name": bad}]));
            assert!(scratch_devices("h", &v).unwrap_err().contains("must be letters"), "{bad}");
        }
    }

    const LOOPS: &str = r#"
- hosts: all
  matrix:
    fs: [ext4, xfs]
  benchmark:
    - name: read
      seq_read: {target: "{{ item }}"}
      loop: "{{ scratch_devices | map(attribute='name') | list }}"
      when: fs == 'xfs'
    - name: write
      seq_write: {size: "{{ sz }}", target: "{{ d }}"}
      loop: [hdd1]
      loop_control: {loop_var: d}
      when:
        - true
        - "sz != '1M'"
      ignore_errors: true
      timeout: 5
      vars_are_not_step_keys_so_this_is_removed: 0
"#;

    #[test]
    fn loop_and_when_expand_and_filter_steps() {
        let pb = LOOPS.replace("      vars_are_not_step_keys_so_this_is_removed: 0\n", "");
        let mut extra = Vars::new();
        extra.insert("sz".into(), json!("4M"));
        let cells = plan(&pb, extra, None).unwrap();
        let names = |c: &Cell| c.benchmark.iter().map(|s| s.name.clone()).collect::<Vec<_>>();
        assert_eq!(names(&cells[0]), ["write (hdd1)"], "fs=ext4: the read's `when` is false");
        assert_eq!(names(&cells[1]), ["read (hdd0)", "read (hdd1)", "write (hdd1)"]);
        let w = &cells[1].benchmark[2];
        assert!(w.ignore_errors);
        assert_eq!(w.timeout, Some(std::time::Duration::from_secs(5)));
        let Action::SeqRead(r) = &cells[1].benchmark[1].action else { panic!() };
        assert_eq!(r.target.as_deref(), Some("hdd1"));
        let mut extra = Vars::new();
        extra.insert("sz".into(), json!("1M"));
        let cells = plan(&pb, extra, None).unwrap();
        assert!(cells[0].benchmark.is_empty(), "every `when` must hold");
    }

    #[test]
    fn an_undefined_variable_in_when_or_loop_is_an_error_naming_it() {
        let pb = LOOPS.replace("      vars_are_not_step_keys_so_this_is_removed: 0\n", "");
        let e = plan(&pb, Vars::new(), None).unwrap_err();
        assert!(e.message.contains("undefined variable `sz`"), "{e}");
        let e = plan("- hosts: all\n  benchmark:\n    - {noop: , when: nofs == 1}\n", Vars::new(), None).unwrap_err();
        assert!(e.message.contains("`nofs`") && e.message.contains("when: nofs == 1"), "{e}");
        assert_eq!(e.line, 3);
        let e = plan("- hosts: all\n  benchmark:\n    - {noop: , loop: '{{ 3 }}'}\n", Vars::new(), None).unwrap_err();
        assert!(e.message.contains("must give a list"), "{e}");
    }

    #[test]
    fn hostvars_and_groups_reach_templates() {
        let pb = "- hosts: all\n  benchmark:\n    - seq_write: {size: \"{{ hostvars['h1'].size }}\"}\n      when: \"'h1' in groups['lab']\"\n";
        let cells = plan(pb, Vars::new(), None).unwrap();
        let Action::SeqWrite(w) = &cells[0].benchmark[0].action else { panic!() };
        assert_eq!(w.size.0, 8 << 20);
    }

    #[test]
    fn groups_shared_by_templates_mean_what_groups_in_each_context_meant() {
        // A host variable named `groups` is hidden by the magic variable, a
        // play variable of that name hides it, either way.
        let mut inv = inv();
        inv.ensure_host("h1").vars.insert("groups".into(), json!({"lab": []}));
        let plan_with = |pb: &str, t: &Templates| {
            let pb = playbook::parse("pb.yml", pb).unwrap();
            let input = HostInput { inventory: &inv, host: "h1", extra_vars: &Vars::new(), facts: None };
            let cells = plan_play(&pb.plays[0], 0, &input, t).map_err(|e| e.message)?;
            Ok::<_, String>(
                cells.iter().map(|c| format!("{} {:?}", c.describe(), c.benchmark[0].action)).collect::<Vec<_>>(),
            )
        };
        let magic = "- hosts: all\n  matrix: {n: \"{{ groups.lab }}\"}\n  benchmark:\n    - {noop: , when: \"'h1' in groups.lab\"}\n";
        let own = "- hosts: all\n  vars: {groups: {lab: [x, y]}}\n  matrix: {n: \"{{ groups.lab }}\"}\n  benchmark: [{noop: }]\n";
        let typo = "- hosts: all\n  matrix: {n: \"{{ groups.nope }}\"}\n  benchmark: [{noop: }]\n";
        for pb in [magic, own, typo] {
            let (shared, copied) = (plan_with(pb, &templates(&inv)), plan_with(pb, &Templates::new()));
            assert_eq!(shared, copied, "{pb}");
        }
        assert_eq!(plan_with(magic, &templates(&inv)).unwrap()[0], "n=h1 Noop(NoArgs)");
        assert_eq!(plan_with(own, &templates(&inv)).unwrap().len(), 2);
        assert!(plan_with(typo, &templates(&inv)).unwrap_err().contains("`groups.nope`"));
    }

    #[test]
    fn adaptive_repeat_policies() {
        let pb = |r: &str| format!("- hosts: all\n  repeat: {r}\n  benchmark:\n    - noop:\n");
        let one = |r: &str| {
            let c = plan(&pb(r), Vars::new(), None).unwrap();
            (c[0].repeat, c[0].policy.clone())
        };
        assert_eq!(one("4"), (4, RepeatPolicy::fixed(4)));
        let p = |min, ci_pct, metrics: &[&str], warmup| RepeatPolicy {
            min,
            ci_pct,
            metrics: metrics.iter().map(|m| m.to_string()).collect(),
            warmup,
        };
        assert_eq!(
            one("{min: 3, max: 10, ci_pct: 2.5, metrics: [speed], warmup: 1}"),
            (10, p(3, Some(2.5), &["speed"], 1))
        );
        assert_eq!(one("{max: 10, ci_pct: 1}"), (10, p(2, Some(1.0), &[], 0)));
        assert_eq!(one("{max: 6, warmup: 2}"), (6, p(6, None, &[], 2)), "no target: all of them");
        let e = plan(&pb("{min: 5, max: 3, ci_pct: 1}"), Vars::new(), None).unwrap_err();
        assert!(e.message.contains("more than `repeat.max`"), "{e}");
    }

    /// PB with a templated `fresh` (and the given cell order).
    fn with_fresh(order: &str) -> String {
        PB.replace(
            "  repeat:",
            &format!("  fresh: \"{{{{ fresh | default('round') }}}}\"\n  cell_order: {order}\n  repeat:"),
        )
    }

    fn extra(k: &str, v: Json) -> Vars {
        let mut e = Vars::new();
        e.insert(k.into(), v);
        e
    }

    #[test]
    fn fresh_is_rendered_per_cell_and_stored_with_its_steps() {
        let cells = plan(&with_fresh("interleaved"), Vars::new(), None).unwrap();
        assert!(cells.iter().all(|c| c.fresh == Fresh::Round));
        assert_eq!(cells[0].steps_json()["fresh"], "round");
        let cells = plan(&with_fresh("interleaved"), extra("fresh", json!("cell")), None).unwrap();
        assert!(cells.iter().all(|c| c.fresh == Fresh::Cell), "-e fresh=cell");
        assert_eq!(plan(PB, Vars::new(), None).unwrap()[0].steps_json()["fresh"], "cell", "no key: cell");
        // Sequential has no rounds: fine unless the policy renders as `round`.
        let cells = plan(&with_fresh("sequential"), extra("fresh", json!("repetition")), None).unwrap();
        assert!(cells.iter().all(|c| c.fresh == Fresh::Repetition));
    }

    #[test]
    fn monitors_are_rendered_per_cell_and_stored_with_its_steps() {
        let with = |v: &str| PB.replace("  repeat:", &format!("  monitors: {v}\n  repeat:"));
        let interval = |pb: &str, e: Vars| plan(pb, e, None).unwrap()[0].monitor.map(|m| m.interval_ms);
        assert_eq!(interval(PB, Vars::new()), Some(1000), "no key: every second");
        assert_eq!(interval(&with("true"), Vars::new()), Some(1000));
        assert_eq!(interval(&with("0.25"), Vars::new()), Some(250));
        assert_eq!(interval(&with("false"), Vars::new()), None);
        let t = with("\"{{ every | default(2) }}\"");
        assert_eq!(interval(&t, Vars::new()), Some(2000));
        assert_eq!(interval(&t, extra("every", json!(false))), None, "-e every=false");
        assert_eq!(interval(&t, extra("every", json!("0.5"))), Some(500));
        assert_eq!(
            plan(&with("0.25"), Vars::new(), None).unwrap()[0].steps_json()["monitors"],
            json!({"interval_ms": 250})
        );
        assert_eq!(plan(&with("false"), Vars::new(), None).unwrap()[0].steps_json()["monitors"], Json::Null);
        let e = plan(&t, extra("every", json!("often")), None).unwrap_err();
        assert!(e.message.contains("seconds, at least 0.01, got \"often\""), "{e}");
        assert_eq!(e.line, 9, "{e}");
    }

    #[test]
    fn a_rendered_fresh_that_is_no_policy_or_does_not_fit_is_a_located_error() {
        let e = plan(&with_fresh("interleaved"), extra("fresh", json!("rounds")), None).unwrap_err();
        assert_eq!((e.file.as_str(), e.line, e.col), ("pb.yml", 9, 10), "{e}");
        assert!(e.message.contains("not `rounds`"), "{e}");
        assert_eq!(e.hint.as_deref(), Some("did you mean `round`?"));
        let e = plan(&with_fresh("interleaved"), extra("fresh", json!(3)), None).unwrap_err();
        assert!(e.message.contains("not `3`"), "{e}");
        let e = plan(&with_fresh("sequential"), Vars::new(), None).unwrap_err();
        assert_eq!((e.line, e.col), (9, 10), "{e}");
        assert!(e.message.contains("has no rounds"), "{e}");
    }

    #[test]
    fn cells_share_a_setup_only_when_its_rendered_steps_are_identical() {
        let cells = plan(&with_fresh("interleaved"), Vars::new(), None).unwrap();
        let key = |i: usize| cells[i].shared_setup().unwrap();
        // fs=ext4 bs=4k and fs=ext4 bs=1M: one ext4 setup; fs=xfs bs=1M: another.
        assert_eq!(key(0), key(1));
        assert_ne!(key(0), key(2));
        // A step's name is not what it does.
        let mut renamed = cells[1].clone();
        renamed.setup[0].name = "make it".into();
        assert_eq!(renamed.shared_setup(), cells[0].shared_setup());
        // Other mount options (same device and mkfs) are another setup, as is another teardown.
        let mut remounted = cells[1].clone();
        let Action::Filesystem(f) = &mut remounted.setup[0].action else { panic!() };
        f.profile.mount_options = vec!["noatime".into()];
        assert_ne!(remounted.shared_setup(), cells[0].shared_setup());
        let mut other_teardown = cells[1].clone();
        other_teardown.teardown.clear();
        assert_ne!(other_teardown.shared_setup(), cells[0].shared_setup());
        // `fresh: cell` never shares.
        let cells = plan(&with_fresh("interleaved"), extra("fresh", json!("cell")), None).unwrap();
        assert!(cells.iter().all(|c| c.shared_setup().is_none()));
    }
}
