//! Inventory + playbook + matrix (+ the host's facts, when known) → cells.
//!
//! Pure: no I/O, no clock, no randomness. `benchrig plan` and `benchrig run`
//! both call it; `run` calls it once without facts before touching any host
//! (so every error a person can fix shows up first) and again per host once
//! its facts are in.

use crate::capacity;
use crate::diagnostic::{did_you_mean, ConfigError};
use crate::inventory::{Inventory, Vars};
use crate::matrix::{self, Point};
use crate::playbook::{Assign, Fresh, Play, Step, UnknownFresh};
use crate::profiles;
use crate::template::Templates;
use benchrig_wire::facts::{Facts, KNOWN_TOOLS};
use benchrig_wire::monitor::MonitorConfig;
use benchrig_wire::scratch::{ScratchDevice, ScratchKind};
use benchrig_wire::steps::{Action, FilesystemArgs, FsProfile};
use serde_json::{json, Value as Json};
use std::collections::HashMap;

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

/// What planning a play needs, whichever hosts it runs on.
struct PlayCtx<'a> {
    play: &'a Play,
    play_index: usize,
    inventory: &'a Inventory,
    extra_vars: &'a Vars,
    /// Known facts by host (none before hosts are reached).
    facts: HashMap<&'a str, &'a Facts>,
    t: &'a Templates,
    /// `hostvars`, built for the first host that needs it: every host's
    /// variables, the same for every cell and host of this plan.
    hostvars: std::cell::OnceCell<Json>,
}

/// One host's part in a cell: its template context and scratch devices.
struct Member<'a> {
    role: Option<&'a str>,
    host: &'a str,
    ctx: Json,
    scratch: Vec<ScratchDevice>,
    facts: Option<&'a Facts>,
}

impl<'a> PlayCtx<'a> {
    fn new(
        play: &'a Play,
        play_index: usize,
        inventory: &'a Inventory,
        extra_vars: &'a Vars,
        facts: &[(&'a str, &'a Facts)],
        t: &'a Templates,
    ) -> Self {
        // The first a host is listed with, as a scan of the list finds.
        let mut by_host = HashMap::new();
        for &(h, f) in facts {
            by_host.entry(h).or_insert(f);
        }
        PlayCtx { play, play_index, inventory, extra_vars, facts: by_host, t, hostvars: Default::default() }
    }

    fn facts_of(&self, host: &str) -> Option<&'a Facts> {
        self.facts.get(host).copied()
    }

    /// As Ansible's hostvars: every host's variables, and its facts once known.
    fn hostvars(&self) -> &Json {
        self.hostvars.get_or_init(|| {
            let all = self.inventory.hosts.keys().map(|h| {
                let mut v = self.inventory.host_vars(h);
                if let Some(f) = self.facts_of(h) {
                    v.insert("facts".into(), json!(f));
                }
                (h.to_string(), Json::Object(v))
            });
            Json::Object(all.collect())
        })
    }

    /// Cells for one assignment of hosts (one host and no role, for a plain play).
    fn cells(&self, members: &[(Option<&str>, &str)]) -> Result<Vec<Cell>, ConfigError> {
        let (play, t) = (self.play, self.t);
        let roles: serde_json::Map<String, Json> =
            members.iter().filter_map(|(r, h)| Some(((*r)?.to_string(), Json::from(*h)))).collect();
        let mut hosts = Vec::new();
        for &(role, host) in members {
            let vars = self.inventory.host_vars(host);
            // An inventory problem, not the playbook's: no playbook location.
            let scratch =
                scratch_devices(host, &vars).map_err(|e| ConfigError::file(&self.inventory.sources.join(", "), e))?;
            let input =
                HostInput { inventory: self.inventory, host, extra_vars: self.extra_vars, facts: self.facts_of(host) };
            let mut play_level = serde_json::Map::new();
            if !roles.is_empty() {
                play_level.insert("roles".into(), Json::Object(roles.clone()));
            }
            if play.uses_hostvars {
                play_level.insert("hostvars".into(), self.hostvars().clone());
            }
            let ctx = host_context(play, &input, &play_level, t)?;
            hosts.push(Member { role, host, ctx, scratch, facts: input.facts });
        }
        let primary = &hosts[0].ctx;
        let axes = play
            .matrix
            .axes
            .iter()
            .map(|(name, node)| Ok((name.clone(), t.render(&node.to_json(), primary).map_err(|e| e.at(&node.loc))?)))
            .collect::<Result<Vec<_>, ConfigError>>()?;
        let render_all = |nodes: &[crate::yaml::Node]| -> Result<Vec<Json>, ConfigError> {
            nodes.iter().map(|n| t.render(&n.to_json(), primary).map_err(|e| e.at(&n.loc))).collect()
        };
        let points = matrix::expand(&axes, &render_all(&play.matrix.exclude)?, &render_all(&play.matrix.include)?)
            .map_err(|e| ConfigError::at(play.matrix.axes.first().map_or(&play.loc, |(_, n)| &n.loc), e))?;

        let mut cells = Vec::with_capacity(points.len());
        for point in points {
            // A role play's parameters start with who has which role.
            let mut params: Point = roles.iter().map(|(r, h)| (r.clone(), h.clone())).collect();
            params.extend(point);
            let cell_ctx: Vec<Json> = hosts
                .iter()
                .map(|m| {
                    let mut c = m.ctx.clone();
                    for (k, v) in &params {
                        c[k] = v.clone();
                    }
                    c
                })
                .collect();
            let (repeat, policy) = match &play.repeat {
                None => (1, RepeatPolicy::fixed(1)),
                Some(node) => repeat_policy(node, &cell_ctx[0], t)?,
            };
            let fresh = fresh_policy(play, &cell_ctx[0], t)?;
            let monitor = monitor_policy(play, &cell_ctx[0], t)?;
            let mut unsupported = None;
            let mut steps = |list: &[Step]| -> Result<Vec<PlannedStep>, ConfigError> {
                let mut out = Vec::new();
                for s in list {
                    for (m, ctx) in hosts.iter().zip(&cell_ctx) {
                        if s.role.as_deref().is_some_and(|r| Some(r) != m.role) {
                            continue;
                        }
                        for (name, ctx) in loop_items(s, ctx, t)? {
                            if !conditions_hold(s, &ctx, t)? {
                                continue;
                            }
                            let (mut action, why) = build_action(s, &ctx, m, play, t)?;
                            if let Action::NfsExport(e) = &mut action {
                                default_export_clients(e, s, m.host, &hosts, self.inventory)?;
                            }
                            if unsupported.is_none() {
                                unsupported = why;
                            }
                            out.push(PlannedStep {
                                name,
                                action,
                                host: m.host.to_string(),
                                ignore_errors: s.ignore_errors,
                                timeout: s.timeout.map(std::time::Duration::from_secs),
                            });
                        }
                    }
                }
                Ok(out)
            };
            let setup = steps(&play.setup)?;
            let before_each = steps(&play.before_each)?;
            let benchmark = steps(&play.benchmark)?;
            let teardown = steps(&play.teardown)?;
            if unsupported.is_none() {
                let size = |h: &str, d: &str| hosts.iter().find(|m| m.host == h)?.facts?.scratch_size(d);
                unsupported =
                    capacity::shortfall(setup.iter().chain(&before_each).chain(&benchmark).chain(&teardown), size);
            }
            let host = benchmark.first().map(|s| s.host.clone()).unwrap_or_else(|| hosts[0].host.to_string());
            let devices = cell_devices(setup.iter().chain(&before_each).chain(&benchmark).chain(&teardown), &hosts);
            let mut setup = setup;
            if let Some(node) = &play.tune {
                let (tunes, why) = tune_steps(node, &hosts, &cell_ctx, &devices, t)?;
                setup.splice(0..0, tunes);
                unsupported = unsupported.or(why);
            }
            cells.push(Cell {
                key: format!("{}:{}", self.play_index, matrix::describe(&params)),
                host,
                play_index: self.play_index,
                play_name: play.name.clone(),
                params,
                repeat,
                policy,
                setup,
                before_each,
                benchmark,
                teardown,
                unsupported,
                fresh,
                monitor,
                devices,
            });
        }
        Ok(cells)
    }
}

/// A play's `tune:` as the first setup step on each host of a cell (so it
/// is applied at the start of every visit, and restored by the release
/// that ends it), its queue settings for that host's scratch devices of the
/// cell. Queue settings in a cell that names no scratch device are an error.
/// With facts, what a host cannot take is known before it is touched: the
/// reason the cell is unsupported.
fn tune_steps(
    node: &crate::yaml::Node,
    hosts: &[Member],
    cell_ctx: &[Json],
    devices: &[CellDevice],
    t: &Templates,
) -> Result<(Vec<PlannedStep>, Option<String>), ConfigError> {
    let mut out = Vec::new();
    let mut why = None;
    for (m, ctx) in hosts.iter().zip(cell_ctx) {
        let mine: Vec<String> = devices.iter().filter(|d| d.host == m.host).map(|d| d.name.clone()).collect();
        let mut args = crate::playbook::tune::render(node, ctx, t, mine)?;
        if args.tunes_queues() && args.devices.is_empty() {
            if devices.is_empty() {
                return Err(node.error(
                    "`tune` sets a queue setting (scheduler, read_ahead_kb, nr_requests) of the cell's scratch devices, and its steps name none",
                ));
            }
            // Another host's devices: this one takes only the host-wide settings.
            (args.scheduler, args.read_ahead_kb, args.nr_requests) = (None, None, None);
        }
        if args == benchrig_wire::steps::TuneArgs::default() {
            continue;
        }
        if let (None, Some(f)) = (&why, m.facts) {
            let no_cpufreq = f.tuning.as_ref().is_some_and(|t| t.cpufreq_driver.is_none() && t.governor.is_none());
            why = if !f.user.root {
                Some(format!("tune: the agent on {} runs as {}, not root (add `become: true`)", m.host, f.user.name))
            } else if args.governor.is_some() && no_cpufreq {
                Some(format!("tune governor: {} has no cpufreq (/sys/devices/system/cpu/cpufreq absent)", m.host))
            } else {
                None
            };
        }
        out.push(PlannedStep::internal("tune", Action::Tune(args), m.host));
    }
    Ok((out, why))
}

/// Every scratch device `steps` name, once each, in the order first named.
fn cell_devices<'s>(steps: impl Iterator<Item = &'s PlannedStep>, hosts: &[Member]) -> Vec<CellDevice> {
    let mut out: Vec<CellDevice> = Vec::new();
    for s in steps {
        let Some(m) = hosts.iter().find(|m| m.host == s.host) else { continue };
        for name in s.action.scratch_names() {
            let Some(d) = m.scratch.iter().find(|d| d.name == name) else { continue };
            if out.iter().any(|c| c.host == s.host && c.name == name) {
                continue;
            }
            out.push(CellDevice {
                host: s.host.clone(),
                name: d.name.clone(),
                path: d.path.clone(),
                kind: d.kind,
                serial: d.serial.clone(),
                size: d.size,
            });
        }
    }
    out
}

/// A step's runs: once, or once per `loop` item with the item in the
/// context under `loop_var`; each with the name it is reported under.
fn loop_items(s: &Step, ctx: &Json, t: &Templates) -> Result<Vec<(String, Json)>, ConfigError> {
    let Some(node) = &s.r#loop else { return Ok(vec![(s.display_name(), ctx.clone())]) };
    let items = match t.render(&node.to_json(), ctx).map_err(|e| e.at(&node.loc))? {
        Json::Array(items) => items,
        other => return Err(node.error(format!("`loop` must give a list, got {other}"))),
    };
    Ok(items
        .into_iter()
        .map(|item| {
            let label = match &item {
                Json::String(text) => text.clone(),
                other => other.to_string(),
            };
            let mut c = ctx.clone();
            c[s.loop_var.as_str()] = item;
            (format!("{} ({label})", s.display_name()), c)
        })
        .collect())
}

/// Whether every `when` of a step holds in this context.
fn conditions_hold(s: &Step, ctx: &Json, t: &Templates) -> Result<bool, ConfigError> {
    for c in &s.when {
        let holds = match &c.value {
            crate::yaml::Value::Bool(b) => *b,
            _ => t.condition(c.as_str().unwrap_or_default(), ctx).map_err(|e| e.at(&c.loc))?,
        };
        if !holds {
            return Ok(false);
        }
    }
    Ok(true)
}

/// Render a step's arguments for a cell and build its action; for a
/// `filesystem` step, also say whether this host visibly cannot make it.
fn build_action(
    s: &Step,
    ctx: &Json,
    m: &Member,
    play: &Play,
    t: &Templates,
) -> Result<(Action, Option<String>), ConfigError> {
    let err = |m: String| ConfigError::at(&s.loc, m);
    let args = t.render(&s.args.to_json(), ctx).map_err(|e| e.at(&s.loc))?;
    if s.action != "filesystem" {
        let action = Action::from_parts(&s.action, args.clone()).map_err(|e| {
            // Point at the argument serde complains about, not just the step.
            let field = arg_in_error(&s.action, &args);
            let node = field.as_deref().and_then(|f| s.args.get(f));
            let msg = format!("`{}`: {e}", s.action);
            match node {
                Some(n) => n.error(msg),
                None => err(msg),
            }
        })?;
        for name in action.scratch_names() {
            find_scratch(s, &m.scratch, m.host, name)?;
        }
        // The agent says so too; facts tell before the host is touched.
        let no_fio = matches!(action, Action::Fio(_)) && m.facts.is_some_and(|f| f.tool("fio").is_none());
        return Ok((action, no_fio.then(|| format!("fio not found on the host ({})", m.host))));
    }
    let text = |key: &str| -> Result<String, ConfigError> {
        match args.get(key) {
            Some(Json::String(v)) => Ok(v.clone()),
            Some(other) => Err(err(format!("`filesystem`: `{key}` must be a string, got {other}"))),
            None => Err(err(format!("`filesystem` needs `{key}`"))),
        }
    };
    let (device, profile_name) = (text("device")?, text("profile")?);
    let entry = find_scratch(s, &m.scratch, m.host, &device)?;
    let profile = resolve_profile(&profile_name, &play.profiles).ok_or_else(|| {
        let known: Vec<String> =
            profiles::builtin_names().map(str::to_string).chain(play.profiles.iter().map(|p| p.name.clone())).collect();
        let known: Vec<&str> = known.iter().map(String::as_str).collect();
        err(format!("unknown filesystem profile `{profile_name}`")).with_hint(did_you_mean(&profile_name, &known))
    })?;
    let why = unsupported_reason(entry, &profile, m.host, m.facts);
    Ok((Action::Filesystem(FilesystemArgs { device, profile }), why))
}

/// An `nfs_export` without `clients` in a role play exports to the cell's
/// other hosts (by `ansible_host`, as they reach the server), never to
/// anyone; in a play without roles there is nobody to default to.
fn default_export_clients(
    e: &mut benchrig_wire::args::NfsExportArgs,
    s: &Step,
    host: &str,
    members: &[Member],
    inventory: &Inventory,
) -> Result<(), ConfigError> {
    if !e.clients.trim().is_empty() {
        return Ok(());
    }
    let others: Vec<String> = members
        .iter()
        .filter(|m| m.host != host)
        .map(|m| {
            let vars = inventory.host_vars(m.host);
            let address = vars.get("ansible_host").or_else(|| vars.get("ansible_ssh_host"));
            address.and_then(|a| a.as_str()).unwrap_or(m.host).to_string()
        })
        .collect();
    if others.is_empty() {
        return Err(ConfigError::at(
            &s.loc,
            "`nfs_export` needs `clients` here: the play has no other hosts (roles) to export to; name who may mount it (exports(5): a host, a network such as 10.77.0.0/24, or `*`)".to_string(),
        ));
    }
    e.clients = others.join(" ");
    Ok(())
}

fn find_scratch<'s>(
    s: &Step,
    scratch: &'s [ScratchDevice],
    host: &str,
    name: &str,
) -> Result<&'s ScratchDevice, ConfigError> {
    scratch.iter().find(|d| d.name == name).ok_or_else(|| {
        let names: Vec<&str> = scratch.iter().map(|d| d.name.as_str()).collect();
        let e = ConfigError::at(&s.loc, format!("host `{host}` has no scratch device `{name}`"));
        if names.is_empty() {
            e.with_hint("list the devices benchrig may format under the host's `scratch_devices`")
        } else {
            e.with_hint(did_you_mean(name, &names))
        }
    })
}

/// Which argument of an action fails to deserialize, if one does.
fn arg_in_error(action: &str, args: &Json) -> Option<String> {
    let value = json!({ "action": action, "args": args });
    let err = serde_path_to_error::deserialize::<_, Action>(value).err()?;
    let path = err.path().to_string();
    path.strip_prefix("args.").map(|f| f.split(['.', '[']).next().unwrap_or(f).to_string())
}

fn resolve_profile(name: &str, overrides: &[FsProfile]) -> Option<FsProfile> {
    overrides.iter().find(|p| p.name == name).cloned().or_else(|| profiles::builtin(name))
}

/// What the inventory and facts already show this host cannot do. The agent
/// checks again (kernel modules can load on demand, so only it can tell).
fn unsupported_reason(entry: &ScratchDevice, profile: &FsProfile, host: &str, facts: Option<&Facts>) -> Option<String> {
    match (entry.kind, &profile.fstype) {
        (ScratchKind::Directory, Some(_)) => {
            return Some(format!(
                "scratch `{}` is a directory: profile `{}` needs a device to format",
                entry.name, profile.name
            ))
        }
        (ScratchKind::Block | ScratchKind::Image, None) => {
            return Some(format!("profile `{}` needs a scratch directory, `{}` is a device", profile.name, entry.name))
        }
        _ => {}
    }
    let facts = facts?;
    // The kernel first: without it, installing the tool would not help.
    if let Some(fstype) = profile.fstype.as_deref().filter(|f| facts.lacks_filesystem(f)) {
        return Some(format!("the kernel ({}) of {host} has no {fstype} support", facts.kernel.release));
    }
    let tool = profile.mkfs.first()?;
    let known = KNOWN_TOOLS.iter().any(|(t, _)| t == tool);
    (known && facts.tool(tool).is_none()).then(|| format!("{tool} is not installed on {host}"))
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
        assert_eq!(cells[2].unsupported.as_deref(), Some("mkfs.xfs is not installed on h1"));
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
        assert_eq!(cells[0].unsupported.as_deref(), Some("fio not found on the host (h1)"));
        let with = Facts { tools: vec![tool("mkfs.ext4"), tool("fio")], ..Default::default() };
        assert_eq!(plan(FIO_PB, Vars::new(), Some(&with)).unwrap()[0].unsupported, None);
        assert_eq!(plan(FIO_PB, Vars::new(), None).unwrap()[0].unsupported, None, "without facts the agent tells");
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
        assert_eq!(cells[0].unsupported.as_deref(), Some("mkfs.ext4 is not installed on h1"));
        assert_eq!(cells[2].unsupported.as_deref(), Some("the kernel (6.18.4) of h1 has no xfs support"));
        // With modules but no readable list, only the agent can tell.
        facts.loadable_modules = true;
        let xfs = plan(PB, Vars::new(), Some(&facts)).unwrap()[2].unsupported.clone();
        assert_eq!(xfs.as_deref(), Some("mkfs.xfs is not installed on h1"));
        // XFS as a module not yet loaded is support.
        facts.module_filesystems = vec!["xfs".into()];
        let xfs = plan(PB, Vars::new(), Some(&facts)).unwrap()[2].unsupported.clone();
        assert_eq!(xfs.as_deref(), Some("mkfs.xfs is not installed on h1"));
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
