//! What `benchrig doc` prints and docs/reference.md holds, built from what
//! the parser reads: the key tables of `keys` (each level of a playbook,
//! and the rules between its keys), each action's row in the wire table
//! (`Action::about`, `Action::metrics`) and the JSON Schema of its
//! arguments (the wire types' doc comments, defaults and units), so the
//! reference cannot say other than what benchrig does. `reference_text`
//! lays it out.

use super::keys::{self, Key, Rule, Shape};
use crate::profiles;
use benchrig_wire::metrics::MetricDecl;
use benchrig_wire::schemars;
use benchrig_wire::steps::{Action, ACTION_NAMES};
use benchrig_wire::units::ByteSize;
use serde_json::Value as Json;

/// A key of a level, or an argument of an action: a row of the reference.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Entry {
    /// `bs`; an argument inside another's entries, `metrics[].unit`.
    pub name: String,
    /// What it takes: `boolean`, `size`, ``one of `a`, `b` ``.
    pub takes: String,
    pub unit: Option<String>,
    /// Its value when left out, as a playbook writes it.
    pub default: Option<String>,
    pub required: bool,
    pub about: String,
    /// The words it takes that say what they mean, with what they mean.
    pub values: Vec<(String, String)>,
}

/// A level of a playbook: its keys and the rules between them.
#[derive(Debug)]
pub struct Level {
    pub name: &'static str,
    pub title: &'static str,
    pub about: String,
    pub keys: Vec<Entry>,
    pub rules: Vec<&'static str>,
}

/// An action or a workload.
#[derive(Debug)]
pub struct ActionDoc {
    pub name: &'static str,
    pub about: String,
    pub args: Vec<Entry>,
    pub metrics: &'static [MetricDecl],
    /// The argument whose entries are metrics of the step's own (`exec`'s).
    pub own_metrics: Option<&'static str>,
    /// The filesystem the host's kernel must support, if one.
    pub kernel: Option<&'static str>,
    /// The programs it needs on the host.
    pub tools: &'static [&'static str],
    /// What its arguments add to those needs, in words.
    pub needs_by_arguments: Option<&'static str>,
    /// It may write data onto its target (weighed against the target's size).
    pub writes_data: bool,
}

impl ActionDoc {
    /// Measured: it reports metrics. The others set up and tear down.
    pub fn is_workload(&self) -> bool {
        !self.metrics.is_empty() || self.own_metrics.is_some()
    }

    /// What the plan checks before the host is touched, as sentences: the
    /// kernel support and tools it needs, and whether its data must fit
    /// its target.
    pub fn checks(&self) -> Vec<String> {
        let mut out = Vec::new();
        let needs: Vec<String> = (self.kernel.iter().map(|k| format!("the kernel's {k} support")))
            .chain(self.tools.iter().map(|t| format!("`{t}`")))
            .collect();
        if !needs.is_empty() {
            let which = if needs.len() > 1 { "any" } else { "it" };
            out.push(format!(
                "Needs {} on the host: on a host whose facts lack {which}, its cells are unsupported",
                needs.join(" and ")
            ));
        }
        if let Some(more) = self.needs_by_arguments {
            out.push(format!(
                "Needs on the host, by its arguments: {more}. On a host whose facts lack one, its cells are unsupported"
            ));
        }
        if self.writes_data {
            out.push(
                "Writes data onto its target: a cell whose data would not fit the scratch devices there (their bytes, and an ext filesystem's inodes) or the ramdisk (its size, and the host's memory) is unsupported"
                    .to_string(),
            );
        }
        out
    }
}

/// A level as the reference gives it: its table, the rules between its
/// keys, and what it is.
struct LevelDef {
    name: &'static str,
    title: &'static str,
    table: &'static [Key],
    rules: &'static [Rule],
    about: &'static str,
}

const fn level(
    name: &'static str,
    title: &'static str,
    table: &'static [Key],
    rules: &'static [Rule],
    about: &'static str,
) -> LevelDef {
    LevelDef { name, title, table, rules, about }
}

/// Every level, in the reference's order.
const LEVELS: &[LevelDef] = &[
    level("play", "Play", keys::PLAY, keys::PLAY_RULES, "A play; a playbook is a list of them, as in Ansible."),
    level(
        "step",
        "Step",
        keys::STEP,
        keys::STEP_RULES,
        "A step of `setup`, `before_each`, `benchmark` or `teardown`: exactly one action or workload (`seq_write: {size: 1G}`) and these.",
    ),
    level("loop_control", "A step's loop_control", keys::LOOP_CONTROL, &[], "How a step's `loop` names its items."),
    level(
        "matrix",
        "A play's matrix",
        keys::MATRIX,
        &[],
        "Axes by name, each with its values; the play runs once per point of their product.",
    ),
    level(
        "repeat",
        "An adaptive repeat",
        keys::REPEAT,
        &[],
        "A `repeat` that runs a cell until the confidence interval of its metrics is narrow enough.",
    ),
    level(
        "profile",
        "A filesystem profile",
        keys::PROFILE,
        &[],
        "An entry of a play's `profiles`: for a built-in profile, what replaces its own; a new one needs `fstype` and `mkfs`.",
    ),
    level("tune", "A play's tune", keys::TUNE, &[], "Kernel settings for each visit of a host, restored after it."),
    level(
        "kernel",
        "A play's kernel",
        keys::KERNEL,
        &[],
        "The kernel a play's cells run under on each host, booted once before them and left after them, the host verified back on its own kernel before its lease goes. The host's variables `benchrig_boot_timeout` (seconds, 300 by default), `benchrig_power_cycle` and `benchrig_console` (commands run on the controller, templated with the host's variables) say how long a boot may take, how to power-cycle a host that does not come back, and where its console is. A kernel that does not boot makes its cells `not_booted` (exit code 6).",
    ),
];

/// Every level of a playbook with its keys.
pub fn levels() -> Vec<Level> {
    LEVELS
        .iter()
        .map(|&LevelDef { name, title, table, rules, about }| {
            let mut keys: Vec<Entry> = table.iter().map(key_entry).collect();
            if let Some((others, about_others)) = others_of(table) {
                keys.push(Entry {
                    name: "(any other name)".into(),
                    takes: shape_text(others),
                    about: about_others.into(),
                    ..Entry::default()
                });
            }
            let mut about = about.to_string();
            if name == "profile" {
                let builtin: Vec<String> = profiles::builtin_names().map(|n| format!("`{n}`")).collect();
                about += &format!(" The built-in profiles: {}.", builtin.join(", "));
            }
            Level { name, title, about, keys, rules: rules.iter().map(|r| r.about).collect() }
        })
        .collect()
}

/// A host's `scratch_devices` entry in the inventory, from the type the
/// inventory's entries are read into (`ScratchDevice`).
pub fn scratch_devices() -> Level {
    let mut generator = schemars::generate::SchemaSettings::draft2020_12().into_generator();
    let schema = generator.subschema_for::<benchrig_wire::scratch::ScratchDevice>().to_value();
    let defs = Json::Object(generator.take_definitions(true));
    let mut keys = Vec::new();
    fields(resolve(&schema, &defs), "", &defs, &mut keys);
    Level {
        name: SCRATCH_DEVICES,
        title: "An inventory host's scratch device",
        about: "An entry of a host's `scratch_devices` (an inventory variable): the only storage benchrig may \
                format on that host, and what playbooks call it."
            .into(),
        keys,
        rules: Vec::new(),
    }
}

/// `scratch_devices`' name in the reference and in `benchrig doc`.
pub const SCRATCH_DEVICES: &str = "scratch_devices";

/// Every action and workload, in the action table's order.
pub fn actions() -> Vec<ActionDoc> {
    ACTION_NAMES.iter().filter_map(|name| action(name)).collect()
}

/// One action or workload (`None` for an unknown name).
pub fn action(name: &str) -> Option<ActionDoc> {
    let name = *ACTION_NAMES.iter().find(|n| **n == name)?;
    Some(ActionDoc {
        name,
        about: Action::about(name)?,
        args: args(name),
        metrics: Action::metrics(name)?,
        own_metrics: Action::metrics_argument(name),
        kernel: Action::kernel_filesystem(name),
        tools: Action::tools(name),
        needs_by_arguments: Action::needs_by_arguments(name),
        writes_data: Action::writes_data(name),
    })
}

/// What a size argument takes: `ByteSize`'s own description.
pub fn sizes() -> String {
    let mut generator = schemars::generate::SchemaSettings::draft2020_12().into_generator();
    let schema = generator.subschema_for::<ByteSize>().to_value();
    let defs = Json::Object(generator.take_definitions(true));
    text_of(resolve(&schema, &defs).get("description"))
}

fn key_entry(key: &Key) -> Entry {
    Entry {
        name: key.name.into(),
        takes: shape_text(&key.shape),
        required: key.required,
        about: key.about.into(),
        ..Entry::default()
    }
}

/// The value of the other names of a mapping whose keys are `table`
/// (a `matrix`'s axes), where a shape of some level says.
fn others_of(table: &'static [Key]) -> Option<(&'static Shape, &'static str)> {
    fn find(s: &'static Shape, table: &'static [Key]) -> Option<(&'static Shape, &'static str)> {
        match s {
            Shape::Open { keys, others, about_others } if same(keys, table) => Some((*others, *about_others)),
            Shape::AnyOf(shapes) => shapes.iter().find_map(|s| find(s, table)),
            _ => None,
        }
    }
    LEVELS.iter().flat_map(|l| l.table).find_map(|k| find(&k.shape, table))
}

/// The level whose table this is.
fn level_of(table: &[Key]) -> &'static str {
    LEVELS.iter().find(|l| same(l.table, table)).map_or("its", |l| l.name)
}

/// Whether two tables are one. By their keys' names, not their address:
/// the tables are `const`s, and each use of a const may be a copy of its own.
fn same(a: &[Key], b: &[Key]) -> bool {
    a.len() == b.len() && a.iter().zip(b).all(|(x, y)| x.name == y.name)
}

/// A key's shape in words.
fn shape_text(s: &Shape) -> String {
    match s {
        Shape::Any => "any value".into(),
        Shape::Null => "nothing".into(),
        Shape::Str | Shape::StrNot(_) | Shape::Pattern(_) => "string".into(),
        Shape::Template => "template".into(),
        Shape::Scalar => "scalar".into(),
        Shape::Bool => "boolean".into(),
        Shape::Int { min, max } => bounded("integer", Some(*min as f64), false, max.map(|m| m as f64)),
        Shape::Number { min, above, max } => bounded("number", *min, *above, *max),
        Shape::Word(words) => one_of(words.iter().copied()),
        Shape::List { of: Shape::Any, .. } => "list".into(),
        Shape::List { of, .. } => format!("list of {}", plural(&shape_text(of))),
        Shape::Map(Shape::Any) => "mapping".into(),
        Shape::Map(of) | Shape::Named { of, .. } => format!("mapping of names to {}", plural(&shape_text(of))),
        Shape::Keys(table) | Shape::Open { keys: table, .. } => format!("mapping of `{}` keys", level_of(table)),
        Shape::AnyOf(shapes) => {
            fn flat<'a>(shapes: &'a [Shape], out: &mut Vec<&'a Shape>) {
                for s in shapes {
                    match s {
                        Shape::AnyOf(inner) => flat(inner, out),
                        // `key:` alone is an empty list or mapping: no choice of its own.
                        Shape::Null => {}
                        other => out.push(other),
                    }
                }
            }
            let mut all = Vec::new();
            flat(shapes, &mut all);
            alternatives(all.into_iter().map(shape_text).collect())
        }
        Shape::Steps => "list of steps".into(),
        Shape::Profiles => "mapping of profile names to `profile` keys".into(),
    }
}

fn bounded(what: &str, min: Option<f64>, above: bool, max: Option<f64>) -> String {
    match (min, max) {
        (Some(lo), Some(hi)) if !above => format!("{what} {lo} to {hi}"),
        (Some(lo), None) => format!("{what} {} {lo}", if above { ">" } else { "≥" }),
        (Some(lo), Some(hi)) => format!("{what} > {lo}, ≤ {hi}"),
        (None, Some(hi)) => format!("{what} ≤ {hi}"),
        (None, None) => what.into(),
    }
}

fn one_of<'a>(words: impl Iterator<Item = &'a str>) -> String {
    format!("one of {}", words.map(|w| format!("`{w}`")).collect::<Vec<_>>().join(", "))
}

/// `a`, `a or b`, `a, b or c`, each once.
fn alternatives(mut texts: Vec<String>) -> String {
    let mut seen = std::collections::HashSet::new();
    texts.retain(|t| seen.insert(t.clone()));
    match texts.split_last() {
        None => "any value".into(),
        Some((last, [])) => last.clone(),
        Some((last, rest)) => format!("{} or {last}", rest.join(", ")),
    }
}

/// `strings`, or a longer description in parentheses.
fn plural(text: &str) -> String {
    let simple = text.split(' ').count() <= 2 && !text.contains(['`', '≥', '>', ',']);
    if simple {
        format!("{text}s")
    } else {
        format!("({text})")
    }
}

/// An action's arguments as a playbook writes them: its wire type's
/// fields, except `filesystem`'s, whose profile a playbook names (as
/// `parse` and `schema` read it).
fn args(name: &str) -> Vec<Entry> {
    if name == "filesystem" {
        return keys::FILESYSTEM.iter().map(key_entry).collect();
    }
    let mut generator = schemars::generate::SchemaSettings::draft2020_12().into_generator();
    let Some(schema) = Action::arg_schema(name, &mut generator) else { return Vec::new() };
    let schema = schema.to_value();
    let defs = Json::Object(generator.take_definitions(true));
    let mut out = Vec::new();
    fields(resolve(&schema, &defs), "", &defs, &mut out);
    out
}

/// The entries of an object schema's properties, and of the objects inside them.
fn fields(object: &Json, prefix: &str, defs: &Json, out: &mut Vec<Entry>) {
    let required: Vec<&str> =
        object.get("required").and_then(Json::as_array).into_iter().flatten().filter_map(Json::as_str).collect();
    for (name, p) in object.get("properties").and_then(Json::as_object).into_iter().flatten() {
        let path = format!("{prefix}{name}");
        let unit = unit_of(p, defs);
        out.push(Entry {
            name: path.clone(),
            takes: schema_text(p, defs),
            default: p.get("default").filter(|d| !d.is_null()).map(|d| default_text(d, unit.as_deref())),
            unit,
            required: required.contains(&name.as_str()),
            about: text_of(p.get("description").or_else(|| resolve(p, defs).get("description"))),
            values: described_values(p, defs),
        });
        if let Some((inner, joint)) = nested(p, defs) {
            fields(inner, &format!("{path}{joint}"), defs, out);
        }
    }
}

/// A `$ref` followed to its definition.
fn resolve<'a>(s: &'a Json, defs: &'a Json) -> &'a Json {
    match s.get("$ref").and_then(Json::as_str).and_then(|r| r.strip_prefix("#/$defs/")) {
        Some(name) => defs.get(name).map_or(s, |d| resolve(d, defs)),
        None => s,
    }
}

/// The alternatives of a schema that are not null.
fn non_null(s: &Json) -> Vec<&Json> {
    let alts = s.get("anyOf").or_else(|| s.get("oneOf")).and_then(Json::as_array);
    alts.map(|a| a.iter().filter(|x| x.get("type") != Some(&Json::from("null"))).collect()).unwrap_or_default()
}

/// An object with properties inside a property: itself (`.`), its items
/// (`[].`), or its one alternative besides null.
fn nested<'a>(p: &'a Json, defs: &'a Json) -> Option<(&'a Json, &'static str)> {
    let s = resolve(p, defs);
    if s.get("properties").is_some() {
        return Some((s, "."));
    }
    if let Some(items) = s.get("items") {
        let items = resolve(items, defs);
        return items.get("properties").is_some().then_some((items, "[]."));
    }
    match non_null(s).as_slice() {
        [one] => nested(one, defs),
        _ => None,
    }
}

/// What a schema takes, in words.
fn schema_text(s: &Json, defs: &Json) -> String {
    if let Some(title) = s.get("title").and_then(Json::as_str) {
        return title.into();
    }
    if s.get("$ref").is_some() {
        return schema_text(resolve(s, defs), defs);
    }
    if let Some(words) = enum_words(s, defs) {
        return one_of(words.iter().map(String::as_str));
    }
    if s.get("anyOf").is_some() || s.get("oneOf").is_some() {
        return alternatives(non_null(s).into_iter().map(|a| schema_text(a, defs)).collect());
    }
    let types: Vec<&str> = match s.get("type") {
        Some(Json::String(t)) => vec![t.as_str()],
        Some(Json::Array(ts)) => ts.iter().filter_map(Json::as_str).filter(|t| *t != "null").collect(),
        _ => Vec::new(),
    };
    let one = |t: &str| match t {
        "array" => match s.get("items") {
            Some(items) => format!("list of {}", plural(&schema_text(items, defs))),
            None => "list".into(),
        },
        "object" if s.get("properties").is_some() => "mapping".into(),
        "object" => match s.get("additionalProperties").filter(|a| a.is_object()) {
            Some(values) => format!("mapping of names to {}", plural(&schema_text(values, defs))),
            None => "mapping".into(),
        },
        other => other.into(),
    };
    alternatives(types.into_iter().map(one).collect())
}

/// The words an enum takes (`enum`, or alternatives each a `const`).
fn enum_words(s: &Json, defs: &Json) -> Option<Vec<String>> {
    let s = resolve(s, defs);
    if let Some(words) = s.get("enum").and_then(Json::as_array) {
        return Some(words.iter().map(word).collect());
    }
    let alts = non_null(s);
    let words: Vec<String> = alts
        .iter()
        .map(|a| resolve(a, defs))
        .flat_map(|a| match (a.get("const"), a.get("enum").and_then(Json::as_array)) {
            (Some(c), _) => vec![Some(word(c))],
            (None, Some(e)) => e.iter().map(|w| Some(word(w))).collect(),
            (None, None) => vec![None],
        })
        .collect::<Option<_>>()?;
    (!words.is_empty()).then_some(words)
}

/// Of the words a schema takes, those with a description of their own.
fn described_values(p: &Json, defs: &Json) -> Vec<(String, String)> {
    let mut out = Vec::new();
    for a in non_null(resolve(p, defs)) {
        for a in std::iter::once(a).chain(non_null(resolve(a, defs))) {
            let a = resolve(a, defs);
            if let (Some(c), Some(d)) = (a.get("const"), a.get("description")) {
                out.push((word(c), text_of(Some(d))));
            }
        }
    }
    out
}

fn word(v: &Json) -> String {
    v.as_str().map_or_else(|| v.to_string(), str::to_string)
}

/// The unit a schema declares (`x-unit`), on it or on what it refers to.
fn unit_of(s: &Json, defs: &Json) -> Option<String> {
    if let Some(u) = s.get("x-unit").and_then(Json::as_str) {
        return Some(u.into());
    }
    let r = resolve(s, defs);
    if !std::ptr::eq(r, s) {
        return unit_of(r, defs);
    }
    non_null(s).into_iter().find_map(|a| unit_of(a, defs))
}

/// A default as a playbook writes it: a size with its suffix, a word bare.
fn default_text(d: &Json, unit: Option<&str>) -> String {
    match d {
        Json::Number(n) if unit == Some("bytes") => {
            n.as_u64().map_or_else(|| n.to_string(), |b| ByteSize(b).to_string())
        }
        Json::String(s) if !s.is_empty() => s.clone(),
        other => serde_json::to_string(other).unwrap_or_default().replace(',', ", "),
    }
}

/// A description on one line (doc comments keep their line breaks).
fn text_of(d: Option<&Json>) -> String {
    d.and_then(Json::as_str).unwrap_or_default().split_whitespace().collect::<Vec<_>>().join(" ")
}

/// Where an entry, action or metric of the reference lacks a description.
pub fn undescribed(levels: &[Level], actions: &[ActionDoc]) -> Vec<String> {
    let mut missing = Vec::new();
    let mut check = |what: String, about: &str| {
        if about.trim().is_empty() {
            missing.push(what);
        }
    };
    for l in levels {
        check(format!("level {}", l.name), &l.about);
        for k in &l.keys {
            check(format!("{} key {}", l.name, k.name), &k.about);
        }
    }
    for a in actions {
        check(format!("action {}", a.name), &a.about);
        for e in &a.args {
            check(format!("{} argument {}", a.name, e.name), &e.about);
            for (value, about) in &e.values {
                check(format!("{} argument {} value {value}", a.name, e.name), about);
            }
        }
        for m in a.metrics {
            check(format!("{} metric {}", a.name, m.name), m.about);
        }
    }
    missing
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_key_argument_action_and_metric_has_a_description() {
        let (levels, actions) = (levels(), actions());
        let args: usize = actions.iter().map(|a| a.args.len()).sum();
        assert!(args > 100, "nested arguments were walked too: {args}");
        assert_eq!(undescribed(&levels, &actions), Vec::<String>::new());
    }

    #[test]
    fn a_missing_description_is_found() {
        let keys = vec![Entry { name: "k".into(), about: " ".into(), ..Entry::default() }];
        let levels = [Level { name: "l", title: "L", about: "a level".into(), keys, rules: vec![] }];
        let args = vec![Entry {
            name: "a".into(),
            about: "an argument".into(),
            values: vec![("w".into(), String::new())],
            ..Entry::default()
        }];
        let metrics: &[MetricDecl] = &[MetricDecl { about: "", ..benchrig_wire::metrics::TIME }];
        let actions = [ActionDoc {
            name: "x",
            about: String::new(),
            args,
            metrics,
            own_metrics: None,
            kernel: None,
            tools: &[],
            needs_by_arguments: None,
            writes_data: false,
        }];
        assert_eq!(undescribed(&levels, &actions), ["l key k", "action x", "x argument a value w", "x metric time"]);
    }

    #[test]
    fn every_table_the_parser_reads_is_a_level_and_every_key_is_there() {
        fn tables(s: &'static Shape, out: &mut Vec<&'static [Key]>) {
            match s {
                Shape::Keys(t) | Shape::Open { keys: t, .. } => {
                    out.push(*t);
                    t.iter().for_each(|k| tables(&k.shape, out));
                }
                Shape::AnyOf(shapes) => shapes.iter().for_each(|s| tables(s, out)),
                _ => {}
            }
        }
        let mut found = vec![keys::PLAY, keys::STEP, keys::PROFILE];
        for table in [keys::PLAY, keys::STEP] {
            table.iter().for_each(|k| tables(&k.shape, &mut found));
        }
        for t in found {
            assert!(LEVELS.iter().any(|l| same(l.table, t)), "a table not in LEVELS: {:?}", keys::names(t));
        }
        // `same` tells the tables apart by their keys' names.
        for (i, a) in LEVELS.iter().enumerate() {
            assert!(LEVELS[i + 1..].iter().all(|b| !same(a.table, b.table)), "{}", a.name);
        }
        for (level, def) in levels().iter().zip(LEVELS) {
            let table = def.table;
            let names: Vec<&str> = level.keys.iter().map(|k| k.name.as_str()).filter(|n| !n.starts_with('(')).collect();
            assert_eq!(names, keys::names(table), "{}", level.name);
        }
        let matrix = levels().into_iter().find(|l| l.name == "matrix").unwrap();
        assert!(matrix.keys.iter().any(|k| k.name == "(any other name)" && k.about.contains("axis")), "{matrix:?}");
    }

    #[test]
    fn every_action_has_the_arguments_a_playbook_may_write() {
        let actions = actions();
        assert_eq!(actions.iter().map(|a| a.name).collect::<Vec<_>>(), ACTION_NAMES);
        for a in &actions {
            let top: Vec<&str> = a.args.iter().map(|e| e.name.as_str()).filter(|n| !n.contains('.')).collect();
            let expected =
                if a.name == "filesystem" { keys::names(keys::FILESYSTEM) } else { Action::arg_names(a.name).to_vec() };
            assert_eq!(top, expected, "{}", a.name);
            assert_eq!(a.is_workload(), !Action::metrics(a.name).unwrap().is_empty() || a.name == "exec");
        }
    }

    #[test]
    fn an_argument_says_its_type_unit_default_values_and_whether_it_is_required() {
        let arg = |action: &str, name: &str| {
            self::action(action).unwrap().args.into_iter().find(|e| e.name == name).unwrap_or_else(|| panic!("{name}"))
        };
        let bs = arg("seq_read", "bs");
        assert_eq!((bs.takes.as_str(), bs.unit.as_deref(), bs.default.as_deref()), ("size", Some("bytes"), Some("1M")));
        assert!(!bs.required && bs.about == "The size of each read.");
        let size = arg("seq_write", "size");
        assert!(size.required && size.default.is_none());
        assert_eq!(arg("seq_write", "fsync_every").unit.as_deref(), Some("bytes"), "through Option's anyOf");
        assert_eq!(arg("exec", "timeout").unit.as_deref(), Some("s"));
        assert_eq!(arg("tune", "read_ahead_kb").unit.as_deref(), Some("KiB"));
        assert_eq!(arg("exec", "command").takes, "string or list of strings");
        assert_eq!(arg("exec", "metrics").takes, "list of mappings");
        let better = arg("exec", "metrics[].better");
        assert_eq!((better.takes.as_str(), better.default.as_deref()), ("one of `higher`, `lower`", Some("higher")));
        assert!(arg("exec", "metrics[].unit").required);
        assert_eq!(arg("fio", "global").takes, "mapping of names to fio values");
        assert_eq!(
            arg("nfs_export", "options").default.as_deref(),
            Some(r#"["rw", "sync", "no_subtree_check", "root_squash"]"#)
        );
        let content = arg("tree", "content");
        assert_eq!(content.takes, "one of `zeros`, `text`, `binary`, `random`");
        assert_eq!(content.default.as_deref(), Some("text"));
        assert!(content.values.iter().any(|(w, about)| w == "random" && about == "Incompressible."), "{content:?}");
        assert_eq!(arg("filesystem", "profile").takes, "string");
    }

    #[test]
    fn a_key_says_what_it_takes() {
        let levels = levels();
        let key = |level: &str, name: &str| {
            let l = levels.iter().find(|l| l.name == level).unwrap();
            l.keys.iter().find(|k| k.name == name).unwrap().clone()
        };
        assert_eq!(key("play", "cell_order").takes, "one of `sequential`, `interleaved`, `shuffled`");
        assert_eq!(key("play", "repeat").takes, "integer ≥ 1, template or mapping of `repeat` keys");
        assert_eq!(key("play", "max_fail_percentage").takes, "number 0 to 100");
        assert_eq!(key("repeat", "ci_pct").takes, "number > 0");
        assert_eq!(key("play", "vars").takes, "mapping", "null (`vars:` alone) is no choice of its own");
        assert_eq!(key("play", "profiles").takes, "mapping of profile names to `profile` keys");
        let profile = levels.iter().find(|l| l.name == "profile").unwrap();
        assert!(
            profile.about.contains("built-in profiles: `ext2`") && profile.about.contains("`existing`"),
            "{profile:?}"
        );
        assert!(key("play", "hosts").required && !key("play", "name").required);
        assert_eq!(levels[0].rules.len(), keys::PLAY_RULES.len());
    }

    #[test]
    fn sizes_are_explained_by_bytesize_itself() {
        assert!(sizes().contains("powers of 1024"), "{}", sizes());
    }
}
