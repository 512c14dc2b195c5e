//! Inventory + playbook + matrix (+ the host's facts, when known) → cells.
//!
//! Pure: no I/O, no clock, no randomness. `benchrig plan` and `benchrig run`
//! both call it; `run` calls it once without facts before touching any host
//! (so every error a person can fix shows up first) and again per host once
//! its facts are in.

use crate::inventory::{Inventory, Vars};
use crate::matrix::{self, Point};
use crate::playbook::{Play, Step};
use crate::profiles;
use crate::template::Templates;
use crate::yaml::{did_you_mean, ConfigError};
use benchrig_wire::facts::{Facts, KNOWN_TOOLS};
use benchrig_wire::scratch::{ScratchDevice, ScratchKind};
use benchrig_wire::steps::{Action, FilesystemArgs, FsProfile};
use serde_json::{json, Value as Json};

#[derive(Clone, Debug)]
pub struct Cell {
    /// Stable identity within a run: play index and parameters.
    pub key: String,
    pub host: String,
    pub play_index: usize,
    pub play_name: String,
    pub params: Point,
    pub repeat: u32,
    pub setup: Vec<PlannedStep>,
    pub before_each: Vec<PlannedStep>,
    pub benchmark: Vec<PlannedStep>,
    pub teardown: Vec<PlannedStep>,
    /// Known before running: this host cannot make the cell (and why).
    pub unsupported: Option<String>,
}

#[derive(Clone, Debug)]
pub struct PlannedStep {
    pub name: String,
    pub action: Action,
}

impl Cell {
    pub fn describe(&self) -> String {
        if self.params.is_empty() {
            "(no parameters)".into()
        } else {
            matrix::describe(&self.params)
        }
    }
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
/// inventory vars < play vars < extra vars, plus `groups` and `facts`.
pub fn host_context(play: &Play, input: &HostInput, t: &Templates) -> Result<Json, ConfigError> {
    let mut ctx = input.inventory.host_vars(input.host);
    ctx.insert("groups".into(), input.inventory.groups_var());
    if let Some(f) = input.facts {
        ctx.insert("facts".into(), json!(f));
    }
    ctx.extend(input.extra_vars.clone());
    for (name, node) in &play.vars {
        if input.extra_vars.contains_key(name) {
            continue; // -e always wins
        }
        let ctx_json = Json::Object(ctx.clone());
        let v = t.render(&node.to_json(), &ctx_json).map_err(|e| node.error(e))?;
        ctx.insert(name.clone(), v);
    }
    Ok(Json::Object(ctx))
}

pub fn plan_play(play: &Play, play_index: usize, input: &HostInput, t: &Templates) -> Result<Vec<Cell>, ConfigError> {
    let vars = input.inventory.host_vars(input.host);
    // An inventory problem, not the playbook's: no playbook location.
    let scratch =
        scratch_devices(input.host, &vars).map_err(|e| ConfigError::file(&input.inventory.sources.join(", "), e))?;
    let ctx = host_context(play, input, t)?;

    let axes = play
        .matrix
        .axes
        .iter()
        .map(|(name, node)| Ok((name.clone(), t.render(&node.to_json(), &ctx).map_err(|e| node.error(e))?)))
        .collect::<Result<Vec<_>, ConfigError>>()?;
    let render_all = |nodes: &[crate::yaml::Node]| -> Result<Vec<Json>, ConfigError> {
        nodes.iter().map(|n| t.render(&n.to_json(), &ctx).map_err(|e| n.error(e))).collect()
    };
    let points = matrix::expand(&axes, &render_all(&play.matrix.exclude)?, &render_all(&play.matrix.include)?);

    let mut cells = Vec::with_capacity(points.len());
    for params in points {
        let mut cell_ctx = ctx.clone();
        for (k, v) in &params {
            cell_ctx[k] = v.clone();
        }
        let repeat = match &play.repeat {
            None => 1,
            Some(node) => {
                let v = t.render(&node.to_json(), &cell_ctx).map_err(|e| node.error(e))?;
                let n = v.as_u64().or_else(|| v.as_str().and_then(|s| s.trim().parse().ok()));
                match n {
                    Some(n) if (1..=u32::MAX as u64).contains(&n) => n as u32,
                    _ => return Err(node.error(format!("`repeat` must be a whole number of at least 1, got {v}"))),
                }
            }
        };
        let mut unsupported = None;
        let mut steps = |list: &[Step]| -> Result<Vec<PlannedStep>, ConfigError> {
            list.iter()
                .map(|s| {
                    let (action, why) = build_action(s, &cell_ctx, &scratch, play, input, t)?;
                    if unsupported.is_none() {
                        unsupported = why;
                    }
                    Ok(PlannedStep { name: s.display_name(), action })
                })
                .collect()
        };
        let setup = steps(&play.setup)?;
        let before_each = steps(&play.before_each)?;
        let benchmark = steps(&play.benchmark)?;
        let teardown = steps(&play.teardown)?;
        let key = format!("{play_index}:{}", matrix::describe(&params));
        cells.push(Cell {
            key,
            host: input.host.to_string(),
            play_index,
            play_name: play.name.clone(),
            params,
            repeat,
            setup,
            before_each,
            benchmark,
            teardown,
            unsupported,
        });
    }
    Ok(cells)
}

/// Render a step's arguments for a cell and build its action; for a
/// `filesystem` step, also say whether this host visibly cannot make it.
fn build_action(
    s: &Step,
    ctx: &Json,
    scratch: &[ScratchDevice],
    play: &Play,
    input: &HostInput,
    t: &Templates,
) -> Result<(Action, Option<String>), ConfigError> {
    let err = |m: String| ConfigError::at(&s.loc, m);
    let args = t.render(&s.args.to_json(), ctx).map_err(err)?;
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
        return Ok((action, None));
    }
    let text = |key: &str| -> Result<String, ConfigError> {
        match args.get(key) {
            Some(Json::String(v)) => Ok(v.clone()),
            Some(other) => Err(err(format!("`filesystem`: `{key}` must be a string, got {other}"))),
            None => Err(err(format!("`filesystem` needs `{key}`"))),
        }
    };
    let (device, profile_name) = (text("device")?, text("profile")?);
    let entry = scratch.iter().find(|d| d.name == device).ok_or_else(|| {
        let names: Vec<&str> = scratch.iter().map(|d| d.name.as_str()).collect();
        let e = err(format!("host `{}` has no scratch device `{device}`", input.host));
        if names.is_empty() {
            e.with_hint("list the devices benchrig may format under the host's `scratch_devices`")
        } else {
            e.with_hint(did_you_mean(&device, &names))
        }
    })?;
    let profile = resolve_profile(&profile_name, &play.profiles).ok_or_else(|| {
        let known: Vec<String> =
            profiles::builtin_names().map(str::to_string).chain(play.profiles.iter().map(|p| p.name.clone())).collect();
        let known: Vec<&str> = known.iter().map(String::as_str).collect();
        err(format!("unknown filesystem profile `{profile_name}`")).with_hint(did_you_mean(&profile_name, &known))
    })?;
    let why = unsupported_reason(entry, &profile, input);
    Ok((Action::Filesystem(FilesystemArgs { device, profile }), why))
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
fn unsupported_reason(entry: &ScratchDevice, profile: &FsProfile, input: &HostInput) -> Option<String> {
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
    let facts = input.facts?;
    let tool = profile.mkfs.first()?;
    let known = KNOWN_TOOLS.iter().any(|(t, _)| t == tool);
    (known && facts.tool(tool).is_none()).then(|| format!("{tool} is not installed on {}", input.host))
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
        plan_play(&pb.plays[0], 0, &input, &Templates::new())
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
}
