//! The playbook grammar. Every key is checked here, with file:line:column and
//! a suggestion for a near miss; values are checked when rendered.

use super::keys::{self, Key};
use super::{Assign, Batch, CellOrder, Fresh, Matrix, Play, Playbook, Step};
use crate::diagnostic::{did_you_mean, ConfigError};
use crate::profiles;
use crate::template::Templates;
use crate::yaml::{self, unknown_key, Node, Value};
use benchrig_wire::steps::{Action, FsProfile, ACTION_NAMES};
use std::path::Path;

pub fn load(path: &Path) -> Result<Playbook, ConfigError> {
    let name = path.display().to_string();
    let text =
        std::fs::read_to_string(path).map_err(|e| ConfigError::file(&name, format!("cannot read playbook: {e}")))?;
    parse(&name, &text)
}

pub fn parse(name: &str, text: &str) -> Result<Playbook, ConfigError> {
    let root = yaml::parse_str(name, text)?;
    // `vars_files` are relative to the playbook, as in Ansible.
    let dir = Path::new(name).parent().unwrap_or(Path::new(""));
    let plays = match &root.value {
        Value::Seq(items) => items.iter().enumerate().map(|(i, p)| play(p, i, dir)).collect::<Result<Vec<_>, _>>()?,
        Value::Map(_) => {
            return Err(root
                .error("a playbook is a list of plays")
                .with_hint("start each play with `- name:` (or `- hosts:`), as in Ansible"))
        }
        _ => return Err(root.error(format!("a playbook is a list of plays, found {}", root.type_name()))),
    };
    if plays.is_empty() {
        return Err(ConfigError::file(name, "the playbook has no plays"));
    }
    Ok(Playbook { path: name.to_string(), text: text.to_string(), plays })
}

fn play(node: &Node, index: usize, dir: &Path) -> Result<Play, ConfigError> {
    let entries = match &node.value {
        Value::Map(m) => m,
        _ => return Err(node.error(format!("a play must be a mapping, found {}", node.type_name()))),
    };
    let mut p = Play {
        name: format!("play {}", index + 1),
        loc: node.loc.clone(),
        hosts: String::new(),
        hosts_loc: node.loc.clone(),
        vars: Vec::new(),
        become_user: None,
        serial: Vec::new(),
        max_fail_percentage: None,
        any_errors_fatal: false,
        tags: Vec::new(),
        cell_order: CellOrder::Sequential,
        uses_hostvars: node.to_json().to_string().contains("hostvars"),
        profiles: Vec::new(),
        matrix: Matrix::default(),
        repeat: None,
        roles: Vec::new(),
        assign: Assign::All,
        fresh: None,
        tune: None,
        kernel: None,
        monitors: None,
        setup: Vec::new(),
        before_each: Vec::new(),
        benchmark: Vec::new(),
        teardown: Vec::new(),
    };
    let mut saw_hosts = false;
    let (mut becomes, mut become_user, mut vars_files, mut seed, mut order) = (false, None, Vec::new(), None, None);
    for (k, v) in entries {
        match known(k, keys::PLAY, "a play").map_err(|e| ansible_play_key(k).unwrap_or(e))? {
            "name" => p.name = v.scalar_text().ok_or_else(|| v.error("`name` must be a string"))?,
            "hosts" => {
                saw_hosts = true;
                p.hosts_loc = v.loc.clone();
                p.hosts = match &v.value {
                    Value::Seq(items) => items
                        .iter()
                        .map(|i| i.expect_str("a host pattern").map(str::to_string))
                        .collect::<Result<Vec<_>, _>>()?
                        .join(":"),
                    _ => v.expect_str("`hosts`")?.to_string(),
                }
            }
            "vars" => {
                p.vars = v
                    .expect_map("`vars`")?
                    .iter()
                    .map(|(k, v)| Ok((k.expect_str("a variable name")?.to_string(), v.clone())))
                    .collect::<Result<_, ConfigError>>()?
            }
            "vars_files" => vars_files = v.expect_seq("`vars_files`")?.to_vec(),
            "become" => becomes = expect_bool(v, "`become`")?,
            "become_user" => become_user = Some(v.expect_str("`become_user`")?.to_string()),
            "serial" => p.serial = serial(v)?,
            "max_fail_percentage" => {
                p.max_fail_percentage = Some(match &v.value {
                    Value::Int(n) if (0..=100).contains(n) => *n as f64,
                    Value::Float(f) if (0.0..=100.0).contains(f) => *f,
                    _ => return Err(v.error("`max_fail_percentage` is a number from 0 to 100")),
                })
            }
            "any_errors_fatal" => p.any_errors_fatal = expect_bool(v, "`any_errors_fatal`")?,
            "tags" => p.tags = tags(v)?,
            "cell_order" => order = Some(v),
            "seed" => {
                seed = Some(match &v.value {
                    Value::Int(n) if *n >= 0 => *n as u64,
                    _ => return Err(v.error("`seed` is a whole number (the shuffle's seed)")),
                })
            }
            "profiles" => p.profiles = profile_overrides(v)?,
            "matrix" => p.matrix = matrix(v)?,
            "repeat" => p.repeat = Some(repeat(v)?),
            "roles" => p.roles = roles(v)?,
            "fresh" => p.fresh = Some(fresh(v)?),
            "tune" => p.tune = Some(super::tune::check(v)?),
            "kernel" => p.kernel = Some(super::kernel::check(v)?),
            "monitors" => p.monitors = Some(monitors(v)?),
            "assign" => {
                p.assign = match v.as_str() {
                    Some("all") => Assign::All,
                    Some("first") => Assign::First,
                    _ => return Err(v.error("`assign` is `all` (every assignment of hosts to roles) or `first`")),
                }
            }
            "setup" => p.setup = steps(v, "setup")?,
            "before_each" => p.before_each = steps(v, "before_each")?,
            "benchmark" => p.benchmark = steps(v, "benchmark")?,
            "teardown" => p.teardown = steps(v, "teardown")?,
            _ => return Err(unknown_key(k, "a play", &keys::names(keys::PLAY))),
        }
    }
    if becomes {
        p.become_user = Some(become_user.unwrap_or_else(|| "root".into()));
    }
    p.cell_order = cell_order(order, seed, node)?;
    // A literal policy is checked here; a template once rendered, per cell.
    if let Some(f) = p.fresh.as_ref().and_then(|v| v.as_str()).and_then(|s| s.parse::<Fresh>().ok()) {
        p.fresh_fits(f)?;
    }
    for f in &vars_files {
        p.vars.extend(vars_file(f, dir)?);
    }
    if !p.roles.is_empty() {
        if let Some(at) = node.get("serial") {
            return Err(at.error(
                "`serial` is for plays without roles; a role play runs its cells one after another across its hosts",
            ));
        }
    }
    if !saw_hosts {
        return Err(node
            .error(format!("play `{}` has no `hosts`", p.name))
            .with_hint("add `hosts: all` or a group name"));
    }
    let known: Vec<String> =
        profiles::builtin_names().map(str::to_string).chain(p.profiles.iter().map(|x| x.name.clone())).collect();
    for s in p.steps() {
        check_profile_name(s, &known)?;
        check_role(s, &p.roles)?;
    }
    Ok(p)
}

/// An Ansible play key benchrig has no such thing as, with what it has
/// instead (a near-miss suggestion would say `tasks` meant `tags`).
fn ansible_play_key(key: &Node) -> Option<ConfigError> {
    let name = key.scalar_text()?;
    let hint = match name.as_str() {
        "tasks" | "pre_tasks" | "post_tasks" => {
            "benchrig's steps go in `setup` (before the cells), `before_each`, `benchmark` (measured, in every \
             cell) and `teardown`; a step names one action such as `seq_write:` or `exec:` (`benchrig doc` lists them)"
        }
        "handlers" => {
            "benchrig has no handlers; a step that must follow another goes after it in `setup` or `teardown`"
        }
        "gather_facts" => "benchrig always gathers facts (its agent reads them); there is nothing to turn off",
        _ => return None,
    };
    Some(key.error(format!("`{name}` is Ansible's, not a benchrig play key")).with_hint(hint))
}

fn roles(v: &Node) -> Result<Vec<String>, ConfigError> {
    let mut out: Vec<String> = Vec::new();
    for r in v.expect_seq("`roles`")? {
        if !matches!(r.value, Value::Str(_)) {
            return Err(r.error("a role here is a name, such as `server` or `client`").with_hint(
                "benchrig's `roles` are the parts a play's hosts take (`roles: [server, client]`; a step picks \
                 one with `role:`), not Ansible roles, which benchrig does not run",
            ));
        }
        let name = r.expect_str("a role name")?;
        if out.iter().any(|o| o == name) {
            return Err(r.error(format!("role `{name}` is listed twice")));
        }
        out.push(name.to_string());
    }
    Ok(out)
}

/// A step's `role` must be one of the play's.
fn check_role(s: &Step, roles: &[String]) -> Result<(), ConfigError> {
    let Some(role) = &s.role else { return Ok(()) };
    if roles.iter().any(|r| r == role) {
        return Ok(());
    }
    let err = ConfigError::at(
        s.role_loc.as_ref().unwrap_or(&s.loc),
        format!("step `{}` runs on role `{role}`, which the play does not define", s.display_name()),
    );
    Err(if roles.is_empty() {
        err.with_hint("give the play `roles: [server, client]` (or drop the step's `role`)")
    } else {
        let valid: Vec<&str> = roles.iter().map(String::as_str).collect();
        err.with_hint(did_you_mean(role, &valid))
    })
}

/// `repeat: 5`, a template giving a number, or adaptive:
/// `repeat: {min: 3, max: 10, ci_pct: 2, metrics: [throughput], warmup: 1}`.
fn repeat(v: &Node) -> Result<Node, ConfigError> {
    let count = |v: &Node, what: &str, least: i64| match &v.value {
        Value::Int(n) if *n >= least => Ok(()),
        Value::Str(s) if Templates::is_template(s) => Ok(()),
        _ => Err(v.error(format!("{what} must be a whole number of at least {least} (or a template giving one)"))),
    };
    match &v.value {
        Value::Map(m) => {
            for (k, val) in m {
                match known(k, keys::REPEAT, "`repeat`")? {
                    "min" | "max" => count(val, &format!("`repeat.{}`", k.as_str().unwrap_or_default()), 1)?,
                    "warmup" => count(val, "`repeat.warmup`", 0)?,
                    "metrics" => {
                        for m in val.expect_seq("`repeat.metrics`")? {
                            m.expect_str("a metric name")?;
                        }
                    }
                    "ci_pct" => match &val.value {
                        Value::Int(n) if *n > 0 => {}
                        Value::Float(f) if *f > 0.0 => {}
                        _ => return Err(val.error("`repeat.ci_pct` is a percentage above 0 (2 = ±2% of the mean)")),
                    },
                    _ => return Err(unknown_key(k, "`repeat`", &keys::names(keys::REPEAT))),
                }
            }
            if v.get("max").is_none() {
                return Err(v.error("adaptive `repeat` needs `max` (and usually `min` and `ci_pct`)"));
            }
            Ok(v.clone())
        }
        _ => count(v, "`repeat`", 1).map(|()| v.clone()),
    }
}

/// `fresh: cell | round | repetition`, or a template giving one (checked
/// when the planner renders it for a cell).
fn fresh(v: &Node) -> Result<Node, ConfigError> {
    match &v.value {
        Value::Str(s) if Templates::is_template(s) => Ok(v.clone()),
        Value::Str(s) => match s.parse::<Fresh>() {
            Ok(_) => Ok(v.clone()),
            Err(e) => Err(v.error(e.to_string()).with_hint(did_you_mean(s, &Fresh::NAMES))),
        },
        _ => Err(v.error(format!(
            "`fresh` is `cell`, `round` or `repetition` (or a template giving one), found {}",
            v.type_name()
        ))),
    }
}

/// `monitors: true | false | <seconds, at least 0.01>`, or a template giving one
/// (checked when the planner renders it for a cell).
fn monitors(v: &Node) -> Result<Node, ConfigError> {
    match &v.value {
        Value::Bool(_) => Ok(v.clone()),
        Value::Int(n) if *n > 0 => Ok(v.clone()),
        Value::Float(f) if *f >= 0.01 && f.is_finite() => Ok(v.clone()),
        Value::Str(s) if Templates::is_template(s) => Ok(v.clone()),
        _ => {
            let found = match &v.value {
                Value::Int(_) | Value::Float(_) | Value::Str(_) => format!("`{}`", v.scalar_text().unwrap_or_default()),
                _ => v.type_name().to_string(),
            };
            Err(v
                .error(format!("`monitors` is `true` (every second), `false` or seconds, at least 0.01, found {found}"))
                .with_hint("e.g. `monitors: 0.5` samples twice a second"))
        }
    }
}

fn matrix(v: &Node) -> Result<Matrix, ConfigError> {
    let mut m = Matrix::default();
    for (k, val) in v.expect_map("`matrix`")? {
        let name = k.expect_str("an axis name")?;
        match name {
            _ if keys::has(keys::MATRIX, name) => {
                let entries = val.expect_seq(&format!("`matrix.{name}`"))?;
                for e in entries {
                    e.as_map().ok_or_else(|| e.error(format!("each `{name}` entry is a mapping of axis values")))?;
                }
                if name == "exclude" {
                    m.exclude = entries.to_vec();
                } else {
                    m.include = entries.to_vec();
                }
            }
            _ => {
                if let Value::Map(_) = val.value {
                    return Err(val.error(format!("axis `{name}` must be a list of values (or a template giving one)")));
                }
                m.axes.push((name.to_string(), val.clone()));
            }
        }
    }
    let axes: Vec<&str> = m.axes.iter().map(|(n, _)| n.as_str()).collect();
    for e in &m.exclude {
        for (k, _) in e.as_map().unwrap_or_default() {
            let key = k.scalar_text().unwrap_or_default();
            if !axes.contains(&key.as_str()) {
                return Err(unknown_key(k, "a matrix `exclude` entry (not an axis)", &axes));
            }
        }
    }
    Ok(m)
}

fn steps(v: &Node, phase: &str) -> Result<Vec<Step>, ConfigError> {
    v.expect_seq(&format!("`{phase}`"))?.iter().map(step).collect()
}

fn step(node: &Node) -> Result<Step, ConfigError> {
    let entries = node.as_map().ok_or_else(|| {
        node.error(format!("a step must be a mapping like `- seq_write: {{size: 64M}}`, found {}", node.type_name()))
    })?;
    let mut name = None;
    let mut role = None;
    let mut role_loc = None;
    let mut action: Option<(&Node, &Node)> = None;
    let (mut when, mut lp, mut loop_var, mut tag_list) = (Vec::new(), None, "item".to_string(), Vec::new());
    let (mut ignore_errors, mut timeout) = (false, None);
    for (k, v) in entries {
        let key = k.as_str().unwrap_or_default();
        if !keys::has(keys::STEP, key) && !ACTION_NAMES.contains(&key) {
            let valid: Vec<&str> = ACTION_NAMES.iter().copied().chain(keys::names(keys::STEP)).collect();
            return Err(unknown_key(k, "a step (not an action or step key)", &valid));
        }
        if key == "name" {
            name = Some(v.scalar_text().ok_or_else(|| v.error("a step's `name` must be a string"))?);
        } else if key == "role" {
            role = Some(v.expect_str("a step's `role`")?.to_string());
            role_loc = Some(v.loc.clone());
        } else if key == "when" {
            when = conditions(v)?;
        } else if key == "loop" {
            match &v.value {
                Value::Seq(_) => {}
                Value::Str(s) if Templates::is_template(s) => {}
                _ => return Err(v.error("`loop` is a list, or a template giving one (`{{ devices }}`)")),
            }
            lp = Some(v.clone());
        } else if key == "loop_control" {
            for (ck, cv) in v.expect_map("`loop_control`")? {
                match known(ck, keys::LOOP_CONTROL, "`loop_control`")? {
                    "loop_var" => loop_var = cv.expect_str("`loop_var`")?.to_string(),
                    _ => return Err(unknown_key(ck, "`loop_control`", &keys::names(keys::LOOP_CONTROL))),
                }
            }
        } else if key == "tags" {
            tag_list = tags(v)?;
        } else if key == "ignore_errors" {
            ignore_errors = expect_bool(v, "`ignore_errors`")?;
        } else if key == "timeout" {
            timeout = Some(match &v.value {
                Value::Int(n) if *n >= 1 => *n as u64,
                _ => return Err(v.error("`timeout` is a whole number of seconds, at least 1")),
            });
        } else if ACTION_NAMES.contains(&key) {
            if let Some((first, _)) = action {
                return Err(k.error(format!(
                    "a step has one action, this one has `{}` and `{key}`",
                    first.as_str().unwrap_or_default()
                )));
            }
            action = Some((k, v));
        } else {
            // A key of `keys::STEP` that no branch above reads.
            return Err(k.error(format!("`{key}` is a step key that benchrig does not read")));
        }
    }
    let (k, args) = action.ok_or_else(|| {
        node.error("this step has no action").with_hint(format!("one of: {}", ACTION_NAMES.join(", ")))
    })?;
    let action = k.as_str().unwrap_or_default().to_string();
    let valid =
        if action == "filesystem" { keys::names(keys::FILESYSTEM) } else { Action::arg_names(&action).to_vec() };
    match &args.value {
        Value::Null => {}
        Value::Map(m) => {
            for (ak, _) in m {
                let an = ak.scalar_text().unwrap_or_default();
                if !valid.contains(&an.as_str()) {
                    return Err(if valid.is_empty() {
                        ak.error(format!("`{action}` takes no arguments"))
                    } else {
                        unknown_key(ak, &format!("the arguments of `{action}`"), &valid)
                    });
                }
            }
        }
        _ => {
            return Err(args.error(format!("the arguments of `{action}` must be a mapping, found {}", args.type_name())))
        }
    }
    if lp.is_none() && entries.iter().any(|(k, _)| k.as_str() == Some("loop_control")) {
        return Err(node.error("`loop_control` without `loop`"));
    }
    Ok(Step {
        name,
        role,
        role_loc,
        action,
        args: args.clone(),
        loc: k.loc.clone(),
        when,
        r#loop: lp,
        loop_var,
        tags: tag_list,
        ignore_errors,
        timeout,
    })
}

/// A key of `table` (its name, for a `match`), or the unknown-key error
/// with the table's did-you-mean: the table, not the `match`, decides
/// which keys exist, and the schema is made from the same table.
fn known(k: &Node, table: &[Key], context: &str) -> Result<&'static str, ConfigError> {
    let name = k.as_str().unwrap_or_default();
    table
        .iter()
        .find(|key| key.name == name)
        .map(|key| key.name)
        .ok_or_else(|| unknown_key(k, context, &keys::names(table)))
}

fn expect_bool(v: &Node, what: &str) -> Result<bool, ConfigError> {
    match &v.value {
        Value::Bool(b) => Ok(*b),
        _ => Err(v.error(format!("{what} is `true` or `false`, found {}", v.type_name()))),
    }
}

/// `tags: a`, `tags: a,b` or `tags: [a, b]`, as Ansible takes them.
fn tags(v: &Node) -> Result<Vec<String>, ConfigError> {
    let items: Vec<String> = match &v.value {
        Value::Seq(items) => items
            .iter()
            .map(|i| i.scalar_text().ok_or_else(|| i.error("a tag is a string")))
            .collect::<Result<_, _>>()?,
        _ => vec![v.scalar_text().ok_or_else(|| v.error("`tags` is a list of strings or a string"))?],
    };
    Ok(items.iter().flat_map(|t| t.split(',')).map(str::trim).filter(|t| !t.is_empty()).map(str::to_string).collect())
}

/// `when`: one expression, a boolean, or a list of them (all must hold).
/// Expressions are bare Jinja (`fs == 'xfs'`), as in Ansible.
fn conditions(v: &Node) -> Result<Vec<Node>, ConfigError> {
    let items = match &v.value {
        Value::Seq(items) => items.to_vec(),
        _ => vec![v.clone()],
    };
    for i in &items {
        match &i.value {
            Value::Bool(_) => {}
            Value::Str(s) if s.trim().starts_with("{{") && s.trim().ends_with("}}") => {
                return Err(i.error("`when` is a bare expression").with_hint(format!(
                    "write `when: {}`, without the braces, as in Ansible",
                    s.trim().trim_start_matches("{{").trim_end_matches("}}").trim()
                )))
            }
            Value::Str(s) => {
                minijinja::Environment::new()
                    .compile_expression(s)
                    .map_err(|e| i.error(format!("`when: {s}`: {}", e.detail().unwrap_or("not an expression"))))?;
            }
            _ => {
                return Err(
                    i.error(format!("a `when` condition is an expression or a boolean, found {}", i.type_name()))
                )
            }
        }
    }
    Ok(items)
}

/// `serial: 2`, `serial: "30%"` or a list of them (the last repeats).
fn serial(v: &Node) -> Result<Vec<Batch>, ConfigError> {
    let one = |n: &Node| -> Result<Batch, ConfigError> {
        let bad = || n.error("`serial` is a number of hosts (`2`), a share (`\"30%\"`), or a list of them");
        match &n.value {
            Value::Int(k) if *k >= 1 => Ok(Batch::Hosts(*k as usize)),
            Value::Str(s) => {
                let pct: f64 = s.trim().strip_suffix('%').ok_or_else(bad)?.trim().parse().map_err(|_| bad())?;
                if pct > 0.0 && pct <= 100.0 {
                    Ok(Batch::Percent(pct))
                } else {
                    Err(bad())
                }
            }
            _ => Err(bad()),
        }
    };
    match &v.value {
        Value::Seq(items) if !items.is_empty() => items.iter().map(one).collect(),
        _ => Ok(vec![one(v)?]),
    }
}

fn cell_order(order: Option<&Node>, seed: Option<u64>, play: &Node) -> Result<CellOrder, ConfigError> {
    let order = match order.map(|o| (o, o.as_str())) {
        None => CellOrder::default(),
        Some((_, Some("sequential"))) => CellOrder::Sequential,
        Some((_, Some("interleaved"))) => CellOrder::Interleaved,
        Some((_, Some("shuffled"))) => CellOrder::Shuffled(seed),
        Some((o, _)) => {
            return Err(o
                .error("`cell_order` is `sequential`, `interleaved` or `shuffled`")
                .with_hint(did_you_mean(o.as_str().unwrap_or_default(), &["sequential", "interleaved", "shuffled"])))
        }
    };
    if seed.is_some() && !matches!(order, CellOrder::Shuffled(_)) {
        let at = play.get("seed").unwrap_or(play);
        return Err(at.error("`seed` is for `cell_order: shuffled`"));
    }
    Ok(order)
}

/// One `vars_files` entry: a YAML mapping of variables, relative to the playbook.
fn vars_file(entry: &Node, dir: &Path) -> Result<Vec<(String, Node)>, ConfigError> {
    let name = entry.expect_str("a `vars_files` entry")?;
    if Templates::is_template(name) {
        return Err(entry.error("`vars_files` names a file, not a template"));
    }
    let path = dir.join(name);
    let cannot = |e: std::io::Error| entry.error(format!("cannot read vars file {}: {e}", path.display()));
    // Only files under the playbook's own directory (after links): a
    // playbook from a shared repository cannot pull `~/.ssh` or another
    // user's file into vars that are stored with the run and exported.
    let base = std::fs::canonicalize(if dir.as_os_str().is_empty() { Path::new(".") } else { dir }).map_err(cannot)?;
    let real = std::fs::canonicalize(&path).map_err(cannot)?;
    if !real.starts_with(&base) {
        return Err(entry
            .error(format!("vars file {} is outside the playbook's directory {}", real.display(), base.display()))
            .with_hint("keep vars files beside the playbook, or pass one from elsewhere with `-e @PATH`"));
    }
    let text = std::fs::read_to_string(&real).map_err(cannot)?;
    let root = yaml::parse_str(&path.display().to_string(), &text)?;
    if root.is_null() {
        return Ok(Vec::new());
    }
    root.expect_map("a vars file")?
        .iter()
        .map(|(k, v)| Ok((k.expect_str("a variable name")?.to_string(), v.clone())))
        .collect()
}

/// A literal profile name in a `filesystem` step must exist; templated ones are checked per cell.
fn check_profile_name(s: &Step, known: &[String]) -> Result<(), ConfigError> {
    if s.action != "filesystem" {
        return Ok(());
    }
    let Some(p) = s.args.get("profile") else {
        return Err(ConfigError::at(&s.loc, "`filesystem` needs a `profile` (ext4, xfs, btrfs, ...)"));
    };
    if s.args.get("device").is_none() {
        return Err(ConfigError::at(&s.loc, "`filesystem` needs a `device` (a scratch device name)"));
    }
    if let Some(name) = p.as_str().filter(|n| !Templates::is_template(n)) {
        if !known.iter().any(|k| k == name) {
            let known: Vec<&str> = known.iter().map(String::as_str).collect();
            return Err(p.error(format!("unknown filesystem profile `{name}`")).with_hint(did_you_mean(name, &known)));
        }
    }
    Ok(())
}

fn profile_overrides(v: &Node) -> Result<Vec<FsProfile>, ConfigError> {
    let mut out = Vec::new();
    for (k, body) in v.expect_map("`profiles`")? {
        let name = k.expect_str("a profile name")?.to_string();
        let base = profiles::builtin(&name);
        let mut p =
            base.clone().unwrap_or(FsProfile { name: name.clone(), fstype: None, mkfs: vec![], mount_options: vec![] });
        for (fk, fv) in body.expect_map(&format!("profile `{name}`"))? {
            match known(fk, keys::PROFILE, &format!("profile `{name}`"))? {
                "fstype" => p.fstype = Some(fv.expect_str("`fstype`")?.to_string()),
                "mkfs" => p.mkfs = words(fv, "`mkfs`", char::is_whitespace)?,
                "mount_options" => p.mount_options = words(fv, "`mount_options`", |c| c == ',')?,
                _ => return Err(unknown_key(fk, &format!("profile `{name}`"), &keys::names(keys::PROFILE))),
            }
        }
        if base.is_none() && (p.fstype.is_none() || p.mkfs.is_empty()) {
            return Err(k.error(format!("new profile `{name}` needs `fstype` and `mkfs`")));
        }
        check_mkfs(&p, body)?;
        out.push(p);
    }
    Ok(out)
}

/// A profile's mkfs is a mkfs tool and nothing else: the agent appends the
/// checked scratch device, and a device named here would escape every rule.
fn check_mkfs(p: &FsProfile, body: &Node) -> Result<(), ConfigError> {
    let at = body.get("mkfs").unwrap_or(body);
    let Some(tool) = p.mkfs.first() else { return Ok(()) };
    let base = tool.rsplit('/').next().unwrap_or(tool);
    if !(base.starts_with("mkfs.") || base == "mke2fs" || base == "mkfs") {
        return Err(at.error(format!("profile `{}`: `{tool}` is not a mkfs tool (mkfs.<type> or mke2fs)", p.name)));
    }
    if let Some(arg) = p.mkfs.iter().skip(1).find(|a| a.starts_with("/dev/") || a.contains("=/dev/")) {
        return Err(at
            .error(format!(
                "profile `{}`: `{arg}` names a device; benchrig gives mkfs the scratch device itself",
                p.name
            ))
            .with_hint("devices are named only in the inventory's `scratch_devices`"));
    }
    Ok(())
}

/// A list of strings, or one string split on `sep`.
fn words(v: &Node, what: &str, sep: fn(char) -> bool) -> Result<Vec<String>, ConfigError> {
    match &v.value {
        Value::Seq(items) => items
            .iter()
            .map(|i| i.scalar_text().ok_or_else(|| i.error(format!("{what} items must be strings"))))
            .collect(),
        Value::Str(s) => Ok(s.split(sep).map(str::trim).filter(|w| !w.is_empty()).map(str::to_string).collect()),
        _ => Err(v.error(format!("{what} must be a list of strings or a string"))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const GOOD: &str = r#"
- name: q
  hosts: all
  vars: {size: 64M}
  profiles:
    ext4-nojournal: {fstype: ext4, mkfs: "mkfs.ext4 -F -O ^has_journal"}
    btrfs: {mount_options: "compress=zstd:1,noatime"}
  matrix:
    fs: [ext4, ext4-nojournal]
    bs: [4k, 1M]
    exclude:
      - {fs: ext4-nojournal, bs: 4k}
  repeat: 3
  setup:
    - filesystem: {device: "{{ scratch_devices[0].name }}", profile: "{{ fs }}"}
  before_each:
    - drop_caches:
  benchmark:
    - name: write
      seq_write: {size: "{{ size }}", bs: "{{ bs }}"}
    - seq_read: {bs: "{{ bs }}"}
  teardown:
    - unmount: {}
"#;

    #[test]
    fn a_full_play_parses() {
        let pb = parse("q.yml", GOOD).unwrap();
        let p = &pb.plays[0];
        assert_eq!((p.name.as_str(), p.hosts.as_str()), ("q", "all"));
        assert_eq!(p.matrix.axes.len(), 2);
        assert_eq!(p.matrix.exclude.len(), 1);
        assert_eq!(p.benchmark[0].display_name(), "write");
        assert_eq!(p.benchmark[1].display_name(), "seq_read");
        assert_eq!(p.profiles[0].mkfs, ["mkfs.ext4", "-F", "-O", "^has_journal"]);
        assert_eq!(p.profiles[1].mount_options, ["compress=zstd:1", "noatime"]);
        assert_eq!(p.profiles[1].mkfs, ["mkfs.btrfs", "-f", "-q"], "an override keeps what it does not set");
    }

    fn err(text: &str) -> ConfigError {
        parse("bad.yml", text).unwrap_err()
    }

    /// A value the parser takes for a key of `keys`' tables; a key added
    /// to a table needs one here.
    fn sample(key: &str) -> &'static str {
        match key {
            "name" | "role" | "hosts" | "become_user" | "fstype" | "loop_var" | "device" => "x",
            "vars" => "{a: 1}",
            "vars_files" | "roles" | "exclude" | "include" | "setup" | "before_each" | "benchmark" | "teardown" => "[]",
            "become" | "any_errors_fatal" | "ignore_errors" | "boost" => "true",
            "serial" | "max_fail_percentage" | "repeat" | "min" | "max" | "ci_pct" | "warmup" | "timeout" => "2",
            "read_ahead_kb" | "nr_requests" | "swappiness" => "2",
            "tags" | "metrics" => "[a]",
            "cell_order" => "shuffled",
            "seed" => "7",
            "profiles" => "{ext4: {mount_options: noatime}}",
            "matrix" => "{a: [1]}",
            "assign" => "first",
            "fresh" => "cell",
            "tune" | "loop_control" | "sysctl" => "{}",
            "monitors" => "0.5",
            "when" => "a == 1",
            "loop" => "[1]",
            "mkfs" => "mkfs.ext4 -F",
            "mount_options" => "noatime",
            "profile" => "ext4",
            "governor" | "scheduler" => "none",
            "thp" => "never",
            "kernel" => "{release: baseline}",
            "release" => "6.1.0-28-amd64",
            "cmdline" => "panic=10",
            "boot" => "kexec",
            "package" => "kernels/linux-image.deb",
            "keep" => "true",
            other => panic!("no sample value for `{other}`: add one"),
        }
    }

    #[test]
    fn every_key_in_the_tables_is_read_by_the_parser() {
        let parses = |text: String| parse("k.yml", &text).map(|_| ()).map_err(|e| format!("{e}\n{text}"));
        let play = |extra: &str| format!("- hosts: all\n  cell_order: shuffled\n  {extra}\n");
        for k in keys::PLAY.iter().filter(|k| k.name != "cell_order" && k.name != "hosts") {
            parses(play(&format!("{}: {}", k.name, sample(k.name)))).unwrap();
        }
        for k in keys::STEP.iter().filter(|k| k.name != "loop_control") {
            let step = format!("roles: [x]\n  benchmark:\n    - noop:\n      {}: {}", k.name, sample(k.name));
            parses(play(&step)).unwrap();
        }
        parses(play("benchmark:\n    - {noop: , loop: [1], loop_control: {loop_var: d}}")).unwrap();
        // Each key with the level's required ones, then all at once.
        let pair = |k: &Key| format!("{}: {}", k.name, sample(k.name));
        for (table, wrap) in [
            (keys::PROFILE, "profiles: {ext4: {%}}"),
            (keys::REPEAT, "repeat: {%}"),
            (keys::LOOP_CONTROL, "benchmark: [{noop: , loop: [1], loop_control: {%}}]"),
            (keys::MATRIX, "matrix: {a: [1], %}"),
            (keys::FILESYSTEM, "setup: [{filesystem: {%}}]"),
            (keys::TUNE, "tune: {%}"),
            (keys::KERNEL, "kernel: {%}"),
        ] {
            // `kernel` needs `release` or `package`, which no table marks required.
            let needed = |r: &Key| r.required || (wrap.starts_with("kernel") && r.name == "release");
            for k in table {
                let with: Vec<String> =
                    table.iter().filter(|r| needed(r) && r.name != k.name).chain([k]).map(pair).collect();
                parses(play(&wrap.replace('%', &with.join(", ")))).unwrap();
            }
            parses(play(&wrap.replace('%', &table.iter().map(pair).collect::<Vec<_>>().join(", ")))).unwrap();
        }
        // And a key no table has is refused.
        assert!(parses(play("repaet: 2")).is_err());
    }

    #[test]
    fn misspelt_keys_get_suggestions_with_positions() {
        let e = err("- hosts: all\n  repaet: 3\n");
        assert_eq!((e.line, e.col), (2, 3));
        assert_eq!(e.hint.as_deref(), Some("did you mean `repeat`?"));
        let e = err("- hosts: all\n  benchmark:\n    - seq_wirte: {size: 1M}\n");
        assert_eq!((e.line, e.col, e.hint.as_deref()), (3, 7, Some("did you mean `seq_write`?")));
        let e = err("- hosts: all\n  benchmark:\n    - seq_read: {bss: 4k}\n");
        assert_eq!((e.line, e.hint.as_deref()), (3, Some("did you mean `bs`?")));
        let e = err("- hosts: all\n  setup:\n    - filesystem: {device: d, profile: ext5}\n");
        assert!(e.message.contains("ext5"), "{e}");
        assert_eq!(e.hint.as_deref(), Some("did you mean one of `ext2`, `ext3`, `ext4`?"));
    }

    #[test]
    fn structural_errors() {
        assert!(err("hosts: all\n").hint.unwrap().contains("- name:"));
        assert!(err("- name: x\n").message.contains("no `hosts`"));
        assert!(err("- hosts: all\n  repeat: 0\n").message.contains("at least 1"));
        assert!(err("- hosts: all\n  benchmark:\n    - name: only a name\n").message.contains("no action"));
        assert!(err("- hosts: all\n  benchmark:\n    - {noop: , seq_read: }\n").message.contains("one action"));
        assert!(err("- hosts: all\n  benchmark:\n    - noop: {x: 1}\n").message.contains("takes no arguments"));
        assert!(err("- hosts: all\n  matrix:\n    a: [1]\n    exclude: [{b: 1}]\n").message.contains("`b`"));
        assert!(err("- hosts: all\n  profiles:\n    mine: {mkfs: mkfs.foo}\n").message.contains("needs `fstype`"));
        assert!(err("- hosts: all\n  profiles:\n    ext4: {mkfs: dd if=/dev/zero}\n")
            .message
            .contains("not a mkfs tool"));
        let e = err("- hosts: all\n  profiles:\n    btrfs: {mkfs: mkfs.btrfs -f /dev/sdc}\n");
        assert!(e.message.contains("`/dev/sdc` names a device"), "{e}");
        assert!(err("- hosts: all\n  setup:\n    - filesystem: {device: d}\n").message.contains("needs a `profile`"));
        let e = err("- hosts: all\n  roles: [server, client]\n  benchmark:\n    - {role: clinet, noop: }\n");
        assert_eq!((e.line, e.hint.as_deref()), (4, Some("did you mean `client`?")));
        assert!(err("- hosts: all\n  benchmark:\n    - {role: server, noop: }\n").hint.unwrap().contains("roles:"));
        assert!(err("- hosts: all\n  roles: [a, a]\n").message.contains("twice"));
        assert!(err("- hosts: all\n  assign: some\n").message.contains("`assign`"));
    }

    #[test]
    fn ansible_play_and_step_keywords() {
        let text = "- hosts: all\n  become: true\n  serial: [1, '50%']\n  max_fail_percentage: 25\n  any_errors_fatal: true\n  tags: nightly,slow\n  cell_order: shuffled\n  seed: 7\n  benchmark:\n    - noop:\n      tags: [a]\n      ignore_errors: true\n      timeout: 30\n      when: x == 1\n";
        let p = &parse("k.yml", text).unwrap().plays[0];
        assert_eq!(p.become_user.as_deref(), Some("root"));
        assert_eq!(p.serial, [Batch::Hosts(1), Batch::Percent(50.0)]);
        assert_eq!(p.max_fail_percentage, Some(25.0));
        assert!(p.any_errors_fatal);
        assert_eq!(p.tags, ["nightly", "slow"]);
        assert_eq!(p.cell_order, CellOrder::Shuffled(Some(7)));
        let s = &p.benchmark[0];
        assert_eq!(
            (s.tags.clone(), s.ignore_errors, s.timeout, s.when.len()),
            (vec!["a".to_string()], true, Some(30), 1)
        );
    }

    #[test]
    fn an_ansible_users_tasks_and_roles_get_what_benchrig_means_instead() {
        let e = err("- hosts: all\n  tasks:\n    - noop:\n");
        assert_eq!((e.line, e.col), (2, 3));
        assert_eq!(e.message, "`tasks` is Ansible's, not a benchrig play key");
        let hint = e.hint.unwrap();
        assert!(hint.contains("`benchmark`") && hint.contains("`setup`") && !hint.contains("tags"), "{hint}");
        let e = err("- hosts: all\n  roles:\n    - role: common\n  benchmark:\n    - noop:\n");
        assert_eq!(e.line, 3);
        assert!(e.hint.unwrap().contains("not Ansible roles"));
    }

    #[test]
    fn monitors_is_a_boolean_seconds_or_a_template() {
        let play = |extra: &str| format!("- hosts: all\n{extra}  benchmark:\n    - noop:\n");
        let monitors =
            |extra: &str| parse("m.yml", &play(extra)).unwrap().plays[0].monitors.as_ref().map(|n| n.to_json());
        assert_eq!(monitors(""), None, "no key: on, every second");
        assert_eq!(monitors("  monitors: false\n"), Some(serde_json::json!(false)));
        assert_eq!(monitors("  monitors: 0.5\n"), Some(serde_json::json!(0.5)));
        assert_eq!(monitors("  monitors: 2\n"), Some(serde_json::json!(2)));
        assert!(monitors("  monitors: \"{{ every | default(1) }}\"\n").is_some(), "checked once rendered");
        for (bad, found) in
            [("0", "`0`"), ("0.001", "`0.001`"), ("-1", "`-1`"), ("often", "`often`"), ("[1]", "a list")]
        {
            let e = err(&play(&format!("  monitors: {bad}\n")));
            assert_eq!((e.line, e.col), (2, 13), "{bad}: {e}");
            assert!(e.message.ends_with(&format!("seconds, at least 0.01, found {found}")), "{bad}: {e}");
        }
    }

    #[test]
    fn fresh_is_a_policy_or_a_template_and_round_needs_rounds() {
        let play = |extra: &str| format!("- hosts: all\n{extra}  benchmark:\n    - noop:\n");
        let fresh = |extra: &str| parse("f.yml", &play(extra)).unwrap().plays[0].fresh.as_ref().map(|n| n.to_json());
        assert_eq!(fresh(""), None, "no key: `cell`");
        assert_eq!(fresh("  fresh: round\n"), Some(serde_json::json!("round")));
        assert_eq!(fresh("  fresh: repetition\n  cell_order: sequential\n"), Some(serde_json::json!("repetition")));
        let t = "  fresh: \"{{ fresh | default('round') }}\"\n  cell_order: sequential\n";
        assert!(fresh(t).is_some(), "a template is checked once rendered, per cell");
        let e = err(&play("  fresh: rounds\n"));
        assert_eq!((e.line, e.col), (2, 10));
        assert!(e.message.contains("not `rounds`"), "{e}");
        assert_eq!(e.hint.as_deref(), Some("did you mean `round`?"));
        let e = err(&play("  fresh: [cell]\n"));
        assert!(e.message.contains("found a list") || e.message.contains("found"), "{e}");
        let e = err(&play("  fresh: round\n  cell_order: sequential\n"));
        assert_eq!((e.line, e.col), (2, 10), "points at the policy: {e}");
        assert!(e.message.contains("`cell_order: sequential` has no rounds"), "{e}");
        let e = err(&play("  roles: [server, client]\n  fresh: round\n"));
        assert_eq!(e.line, 3);
        assert!(e.message.contains("plays without roles"), "{e}");
    }

    #[test]
    fn keyword_errors_say_what_is_expected() {
        let e = err("- hosts: all\n  benchmark:\n    - {noop: , when: '{{ x }}'}\n");
        assert_eq!(e.hint.as_deref(), Some("write `when: x`, without the braces, as in Ansible"));
        let e = err("- hosts: all\n  benchmark:\n    - {noop: , when: 'x =='}\n");
        assert_eq!(e.line, 3, "{e}");
        let e = err("- hosts: all\n  benchmark:\n    - {noop: , ignore_erors: true}\n");
        assert_eq!(e.hint.as_deref(), Some("did you mean `ignore_errors`?"));
        assert!(err("- hosts: all\n  serial: 0\n").message.contains("`serial`"));
        assert_eq!(err("- hosts: all\n  repeat: {max: 3, ci_pc: 2}\n").hint.as_deref(), Some("did you mean `ci_pct`?"));
        assert!(err("- hosts: all\n  repeat: {min: 3}\n").message.contains("needs `max`"));
        assert!(err("- hosts: all\n  repeat: {max: 3, ci_pct: 0}\n").message.contains("above 0"));
        assert!(err("- hosts: all\n  serial: '150%'\n").message.contains("`serial`"));
        assert!(err("- hosts: all\n  become: yes please\n").message.contains("`true` or `false`"));
        assert!(err("- hosts: all\n  max_fail_percentage: 101\n").message.contains("0 to 100"));
        assert_eq!(err("- hosts: all\n  cell_order: shuffle\n").hint.as_deref(), Some("did you mean `shuffled`?"));
        assert!(err("- hosts: all\n  seed: 3\n").message.contains("shuffled"));
        assert!(err("- hosts: all\n  roles: [a]\n  serial: 1\n").message.contains("without roles"));
        assert!(err("- hosts: all\n  benchmark:\n    - {noop: , timeout: 0}\n").message.contains("seconds"));
        assert!(err("- hosts: all\n  benchmark:\n    - {noop: , loop: 3}\n").message.contains("`loop` is a list"));
        assert!(err("- hosts: all\n  benchmark:\n    - {noop: , loop_control: {loop_var: d}}\n")
            .message
            .contains("without `loop`"));
        let e = err("- hosts: all\n  vars_files: [does-not-exist.yml]\n");
        assert!(e.message.contains("does-not-exist.yml") && e.line == 2, "{e}");
    }

    #[test]
    fn a_vars_file_outside_the_playbooks_directory_is_refused_naming_it() {
        let outer = tempfile::tempdir().unwrap();
        let dir = outer.path().join("pbs");
        std::fs::create_dir(&dir).unwrap();
        std::fs::write(outer.path().join("secret.yml"), "key: s3cret\n").unwrap();
        std::os::unix::fs::symlink(outer.path().join("secret.yml"), dir.join("link.yml")).unwrap();
        std::fs::create_dir(dir.join("vars")).unwrap();
        std::fs::write(dir.join("vars/ok.yml"), "size: 1G\n").unwrap();
        for (entry, what) in [("../secret.yml", "../"), ("/etc/hostname", "absolute"), ("link.yml", "a link out")] {
            let pb = dir.join("pb.yml");
            std::fs::write(&pb, format!("- hosts: all\n  vars_files: [{entry}]\n")).unwrap();
            let e = load(&pb).unwrap_err().to_string();
            assert!(e.contains("is outside the playbook's directory") && e.contains("-e @PATH"), "{what}: {e}");
            assert!(e.contains("pb.yml:2:"), "{what}: names the entry's line: {e}");
        }
        std::fs::write(dir.join("pb.yml"), "- hosts: all\n  vars_files: [vars/ok.yml]\n").unwrap();
        assert!(load(&dir.join("pb.yml")).is_ok());
    }

    #[test]
    fn vars_files_are_read_beside_the_playbook_and_win_over_vars() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("sizes.yml"), "size: 1G\ncount: 3\n").unwrap();
        std::fs::write(dir.path().join("bad.yml"), "- not a mapping\n").unwrap();
        let pb = dir.path().join("pb.yml");
        std::fs::write(&pb, "- hosts: all\n  vars: {size: 1M}\n  vars_files: [sizes.yml]\n").unwrap();
        let p = &load(&pb).unwrap().plays[0];
        let names: Vec<&str> = p.vars.iter().map(|(k, _)| k.as_str()).collect();
        assert_eq!(names, ["size", "size", "count"], "later entries win when the context is built");
        assert_eq!(p.vars[1].1.loc.src.name, dir.path().join("sizes.yml").display().to_string());
        std::fs::write(&pb, "- hosts: all\n  vars_files: [bad.yml]\n").unwrap();
        let e = load(&pb).unwrap_err();
        assert!(e.to_string().contains("bad.yml:1:1"), "{e}");
    }
}
