//! One play's cells for one assignment of hosts: its matrix points, each
//! step's `loop`/`when` expanded, rendered and turned into an action with
//! its scratch device found, the `tune:` steps first, and the reason a
//! cell cannot run on a host (a filesystem its kernel lacks, a tool its
//! facts do not list). Pure, as the rest of `plan`.

use super::capacity;
use super::matrix::{self, Point};
use super::{
    fresh_policy, host_context, monitor_policy, repeat_policy, scratch_devices, Cell, CellDevice, HostInput,
    PlannedStep, RepeatPolicy,
};
use crate::diagnostic::{did_you_mean, ConfigError};
use crate::inventory::{Inventory, Vars};
use crate::playbook::{Play, Step};
use crate::profiles;
use crate::template::Templates;
use benchrig_wire::facts::{not_installed, Facts, KnownTool};
use benchrig_wire::scratch::{ScratchDevice, ScratchKind};
use benchrig_wire::steps::{Action, FilesystemArgs, FsProfile, HostNeeds};
use serde_json::{json, Value as Json};
use std::collections::HashMap;

/// What planning a play needs, whichever hosts it runs on.
pub(super) struct PlayCtx<'a> {
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
    pub(super) fn new(
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
    pub(super) fn cells(&self, members: &[(Option<&str>, &str)]) -> Result<Vec<Cell>, ConfigError> {
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
                let facts = |h: &str| hosts.iter().find(|m| m.host == h)?.facts;
                let size = |h: &str, d: &str| facts(h)?.scratch_size(d);
                let memory = |h: &str| facts(h)?.usable_memory();
                let steps = setup.iter().chain(&before_each).chain(&benchmark).chain(&teardown);
                unsupported = capacity::shortfall(steps, size, memory);
            }
            let host = benchmark.first().map(|s| s.host.clone()).unwrap_or_else(|| hosts[0].host.to_string());
            let devices = cell_devices(setup.iter().chain(&before_each).chain(&benchmark).chain(&teardown), &hosts);
            let mut setup = setup;
            if let Some(node) = &play.tune {
                let (tunes, why) = tune_steps(node, &hosts, &cell_ctx, &devices, t)?;
                setup.splice(0..0, tunes);
                unsupported = unsupported.or(why);
            }
            let kernel = match &play.kernel {
                Some(node) => Some(crate::playbook::kernel::render(node, &cell_ctx[0], t)?),
                None => None,
            };
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
                kernel,
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

/// Render a step's arguments for a cell and build its action, and say
/// whether this host visibly cannot run it (its kernel or a tool lacks what
/// [`Action::host_needs`] names, or a profile does not suit the scratch).
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
        let why = m.facts.and_then(|f| lacks(f, &action.host_needs(), m.host));
        return Ok((action, why));
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
    let mismatch = kind_mismatch(entry, &profile);
    let action = Action::Filesystem(FilesystemArgs { device, profile });
    let why = mismatch.or_else(|| m.facts.and_then(|f| lacks(f, &action.host_needs(), m.host)));
    Ok((action, why))
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

/// Why a profile cannot be used on this kind of scratch, as the inventory
/// shows: a filesystem needs a device, `existing` a directory.
fn kind_mismatch(entry: &ScratchDevice, profile: &FsProfile) -> Option<String> {
    match (entry.kind, &profile.fstype) {
        (ScratchKind::Directory, Some(_)) => Some(format!(
            "scratch `{}` is a directory: profile `{}` needs a device to format",
            entry.name, profile.name
        )),
        (ScratchKind::Block | ScratchKind::Image, None) => {
            Some(format!("profile `{}` needs a scratch directory, `{}` is a device", profile.name, entry.name))
        }
        _ => None,
    }
}

/// What a host's facts already show it lacks of a step's needs: the kernel
/// first, as the agent asks (without it, a tool would not help), then a
/// tool. Only tools the agent looks for can be missing from its facts;
/// of any other (a play's own mkfs) only the agent can tell. It checks
/// again: a kernel module can load on demand.
fn lacks(facts: &Facts, needs: &HostNeeds, host: &str) -> Option<String> {
    if let Some(why) = needs.kernel.and_then(|fs| kernel_lacks(facts, fs, host)) {
        return Some(why);
    }
    let missing = needs.tools.iter().find(|t| KnownTool::find(t).is_some() && facts.tool(t).is_none());
    missing.map(|t| not_installed(t, host, &facts.distribution))
}

/// Why `host`'s kernel visibly cannot do `fstype` (as /proc/filesystems
/// names it), if its facts say so.
fn kernel_lacks(facts: &Facts, fstype: &str, host: &str) -> Option<String> {
    facts
        .lacks_filesystem(fstype)
        .then(|| format!("the kernel ({}) of {host} has no {fstype} support", facts.kernel.release))
}
