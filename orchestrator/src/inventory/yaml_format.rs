//! Ansible's YAML inventory: `all: {hosts, vars, children}`, nested at will.

use super::{ranges, yaml11, Inventory};
use crate::diagnostic::ConfigError;
use crate::yaml::{self, Node};
use serde_json::Value as Json;
use std::borrow::Cow;

pub fn load(inv: &mut Inventory, name: &str, text: &str) -> Result<(), ConfigError> {
    let root = yaml::parse_str(name, text)?;
    let json = is_json(text);
    for (key, value) in root.expect_map("an inventory")? {
        load_group(inv, key, value, json)?;
    }
    Ok(())
}

/// Whether `text` is a YAML mapping (Ansible's yaml plugin then takes a file
/// without an extension; anything else goes to the ini plugin).
pub fn is_mapping(name: &str, text: &str) -> bool {
    yaml::parse_str(name, text).is_ok_and(|n| n.as_map().is_some())
}

/// The keys of a group Ansible reads; anything else is skipped with a warning.
const SECTIONS: [&str; 3] = ["vars", "children", "hosts"];

/// One group (`key: node`), as ansible-core's `_parse_group` reads it: the
/// group's name, or `None` when its value is no group definition (neither a
/// mapping nor empty), which Ansible skips with a warning.
fn load_group(inv: &mut Inventory, key: &Node, node: &Node, json: bool) -> Result<Option<String>, ConfigError> {
    let shown = key.scalar_text().unwrap_or_default();
    if node.as_map().is_none() && !node.is_null() {
        let mut w = node.error(format!("skipping `{shown}`: a group is a mapping, found {}", kind(node, json)));
        if let Some(text) = text_value(node, json) {
            w = w.with_hint(format!("hosts go under `hosts:`, as in `{shown}: {{hosts: {text}}}`"));
        }
        inv.warn(w);
        return Ok(None);
    }
    let name = group_name(key, json)?;
    inv.ensure_group(&name);
    let entries = node.as_map().unwrap_or_default();
    // Ansible checks the three sections, in this order, before reading any:
    // a string is a one-key mapping, anything else but a mapping an error.
    let mut sections: Vec<(&str, Entries)> = Vec::new();
    for section in SECTIONS {
        let Some(value) = entries.iter().find(|(k, _)| k.as_str() == Some(section)).map(|(_, v)| v) else { continue };
        sections.push((section, section_entries(value, section, &name, json)?));
    }
    for (key, value) in entries {
        let section = key.as_str().and_then(|k| sections.iter().position(|(s, _)| *s == k));
        let Some(section) = section else {
            skip_unknown_key(inv, key, value, &name, json);
            continue;
        };
        // `hosts:` with nothing under it: nothing to read (Ansible logs it at -vvv).
        if value.is_null() {
            continue;
        }
        let (section, entries) = &sections[section];
        match *section {
            "hosts" => load_hosts(inv, &name, entries, json)?,
            "vars" => {
                for (k, v) in entries.iter() {
                    let key = k.scalar_text().unwrap_or_default();
                    inv.set_group_var(&name, &key, self::value(v, json)).map_err(|e| v.error(e))?;
                }
            }
            _ => {
                for (ckey, cnode) in entries.iter() {
                    match load_group(inv, ckey, cnode, json)? {
                        Some(child) => inv.add_child(&name, &child),
                        None => adopt_known(inv, &name, ckey, json)?,
                    }
                }
            }
        }
    }
    Ok(Some(name))
}

/// A mapping's entries, or the one made from a string.
type Entries<'a> = Cow<'a, [(Node, Node)]>;

/// A section's entries: its mapping, nothing, or (as Ansible converts a
/// string) the one key `value` with no value, so `hosts: 192.168.0.2` is
/// that host and `vars: x` the variable `x`, null.
fn section_entries<'a>(value: &'a Node, section: &str, group: &str, json: bool) -> Result<Entries<'a>, ConfigError> {
    if let Some(m) = value.as_map() {
        return Ok(Cow::Borrowed(m));
    }
    if value.is_null() {
        return Ok(Cow::Borrowed(&[]));
    }
    if let Some(text) = text_value(value, json) {
        let key = Node { value: yaml::Value::Str(text), loc: value.loc.clone() };
        let none = Node { value: yaml::Value::Null, loc: value.loc.clone() };
        return Ok(Cow::Owned(vec![(key, none)]));
    }
    let found = kind(value, json);
    let e = value.error(format!("`{section}` of group `{group}` must be a mapping or a string, found {found}"));
    // The usual slip: a list of names, which Ansible refuses too.
    let first = value.as_seq().and_then(|s| s.first()).and_then(Node::scalar_text).unwrap_or_else(|| "a".into());
    Err(match (section, value.as_seq()) {
        ("hosts" | "children", Some(_)) => {
            let what = if section == "hosts" { "host" } else { "group" };
            e.with_hint(format!("write each {what} as a key (`{first}:`), not as a list item (`- {first}`)"))
        }
        _ => e,
    })
}

fn load_hosts(inv: &mut Inventory, group: &str, hosts: &[(Node, Node)], json: bool) -> Result<(), ConfigError> {
    for (hkey, hvars) in hosts {
        let text = hkey.scalar_text().unwrap_or_default();
        if let Some(kind) = (!json).then(|| yaml11::key_not_text(hkey)).flatten() {
            return Err(not_a_string(hkey, "host", &text, kind));
        }
        let (pattern, port) = ranges::split_port(&text);
        let names = ranges::expand(pattern).map_err(|e| hkey.error(e))?;
        if names.iter().any(String::is_empty) {
            return Err(hkey.error("a host name cannot be empty"));
        }
        let vars = host_vars(hvars, &text, json)?;
        inv.check_room(&names).map_err(|e| hkey.error(e))?;
        for host in names {
            // As in INI: `web1:2222:` sets the port of a host this key creates.
            if let (Some(p), false) = (port, inv.hosts.contains_key(&host)) {
                inv.ensure_host(&host).vars.insert("ansible_port".into(), p.into());
            }
            inv.add_host_to_group(group, &host);
            inv.ensure_host(&host).vars.extend(vars.clone());
        }
    }
    Ok(())
}

/// A host's value: its variables. Ansible reads it with `or {}`, so any
/// empty value (`""`, `0`, `false`, `[]`) is no variables too.
fn host_vars(node: &Node, host: &str, json: bool) -> Result<super::Vars, ConfigError> {
    if node.as_map().is_some() {
        return vars_of(node, &format!("host `{host}`"), json);
    }
    let falsy = match value(node, json) {
        Json::Null => true,
        Json::Bool(b) => !b,
        Json::Number(n) => n.as_f64() == Some(0.0),
        Json::String(s) => s.is_empty(),
        Json::Array(a) => a.is_empty(),
        Json::Object(o) => o.is_empty(),
    };
    if falsy {
        return Ok(super::Vars::new());
    }
    // `web1: 192.0.2.11` most likely meant the address.
    let example = node.scalar_text().unwrap_or_else(|| "192.0.2.1".into());
    Err(node
        .error(format!("host `{host}` must be a mapping of its variables, found {}", kind(node, json)))
        .with_hint(format!("as in `{host}: {{ansible_host: {example}}}`")))
}

/// A scalar that Ansible's loader reads as a string, as that string
/// (`y` and `192.168.0.2` are; `42`, `yes` and `2024-01-01` are not).
fn text_value(node: &Node, json: bool) -> Option<String> {
    if json {
        return node.as_str().map(str::to_string);
    }
    match (yaml11::not_text(node), yaml11::to_json(node)) {
        (None, Json::String(s)) => Some(s),
        _ => None,
    }
}

/// What a value is, in words, as Ansible's loader types it.
fn kind(node: &Node, json: bool) -> &'static str {
    if json {
        node.type_name()
    } else {
        yaml11::not_text(node).unwrap_or("a string")
    }
}

/// A group's name: text, and not empty (Ansible's `add_group` refuses both).
fn group_name(key: &Node, json: bool) -> Result<String, ConfigError> {
    let text = key.scalar_text().unwrap_or_default();
    if let Some(kind) = (!json).then(|| yaml11::key_not_text(key)).flatten() {
        return Err(not_a_string(key, "group", &text, kind));
    }
    if text.is_empty() {
        return Err(key.error("a group name cannot be empty"));
    }
    Ok(text)
}

/// A host or group name YAML reads as a number, a boolean, a date or null:
/// Ansible refuses it ("Enclose integers/floats in quotation marks").
fn not_a_string(key: &Node, what: &str, text: &str, kind: &str) -> ConfigError {
    if kind == "null" {
        return key.error(format!("a {what} name must be a string, found null"));
    }
    key.error(format!("{what} name `{text}` must be a string, found {kind}"))
        .with_hint(format!("enclose it in quotation marks: `\"{text}\"`"))
}

/// A child that is no group definition: Ansible skipped it, then still adds
/// a group or host of that name, if one is known by now, to the parent.
fn adopt_known(inv: &mut Inventory, parent: &str, key: &Node, json: bool) -> Result<(), ConfigError> {
    let name = key.scalar_text().unwrap_or_default();
    let text = json || yaml11::key_not_text(key).is_none();
    if text && inv.groups.contains_key(&name) {
        inv.add_child(parent, &name);
    } else if text && inv.hosts.contains_key(&name) {
        inv.add_host_to_group(parent, &name);
    } else {
        return Err(key.error(format!(
            "`{name}` is no group definition, and no group or host of that name is known to add to `{parent}`"
        )));
    }
    Ok(())
}

/// A key of a group that is none of [`SECTIONS`]: Ansible warns and skips
/// it (silently when it has no value).
fn skip_unknown_key(inv: &mut Inventory, key: &Node, value: &Node, group: &str, json: bool) {
    if value.is_null() {
        return;
    }
    let name = key.scalar_text().unwrap_or_default();
    let message = if value.as_map().is_some() {
        format!("skipping unexpected key `{name}` in group `{group}`")
    } else {
        format!("skipping key `{name}` in group `{group}`: not a mapping but {}", kind(value, json))
    };
    inv.warn(key.error(message).with_hint(crate::diagnostic::did_you_mean(&name, &SECTIONS)));
}

/// A mapping of variables (or nothing) as JSON values, typed as Ansible's
/// YAML loader types them; `json` when the whole file is JSON (see [`is_json`]).
pub fn vars_of(node: &Node, what: &str, json: bool) -> Result<super::Vars, ConfigError> {
    Ok(node.expect_map(what)?.iter().map(|(k, v)| (k.scalar_text().unwrap_or_default(), value(v, json))).collect())
}

/// Ansible's loader tries JSON first: a JSON file is read as JSON, which the
/// parser's own typing already matches; YAML gets YAML 1.1 typing.
pub fn is_json(text: &str) -> bool {
    serde_json::from_str::<serde::de::IgnoredAny>(text).is_ok()
}

fn value(node: &Node, json: bool) -> Json {
    if json {
        node.to_json()
    } else {
        super::yaml11::to_json(node)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The inventory `text` reads to, as `ansible-inventory` would: finished.
    fn read(text: &str) -> Inventory {
        Inventory::parse_str("lab.yml", text).unwrap_or_else(|e| panic!("{e}"))
    }

    fn refused(text: &str) -> ConfigError {
        match Inventory::parse_str("lab.yml", text) {
            Err(super::super::InventoryError::Config(e)) => e,
            other => panic!("expected a located error, got {other:?}"),
        }
    }

    fn warnings(inv: &Inventory) -> Vec<(u32, u32, &str)> {
        inv.warnings.iter().map(|w| (w.line, w.col, w.message.as_str())).collect()
    }

    #[test]
    fn an_unexpected_group_key_is_skipped_with_a_located_warning() {
        // Ansible: "Skipping unexpected key (host) in group (web)"; the hosts under it are not read.
        let inv = read("all:\n  children:\n    web:\n      host:\n        a:\n      hosts: {b: }\n");
        assert_eq!(warnings(&inv), [(4, 7, "skipping unexpected key `host` in group `web`")]);
        assert_eq!(inv.warnings[0].hint.as_deref(), Some("did you mean `hosts`?"));
        assert_eq!(inv.hosts.keys().collect::<Vec<_>>(), ["b"]);
    }

    #[test]
    fn an_unknown_key_that_is_no_mapping_is_skipped_and_an_empty_one_silently() {
        let inv = read("all:\n  foo: bar\n  baz: [1]\n  qux:\n  hosts: {a: }\n");
        assert_eq!(
            warnings(&inv),
            [
                (2, 3, "skipping key `foo` in group `all`: not a mapping but a string"),
                (3, 3, "skipping key `baz` in group `all`: not a mapping but a list")
            ]
        );
        assert_eq!(inv.hosts_of_group("ungrouped"), ["a"]);
    }

    #[test]
    fn a_string_hosts_is_one_host() {
        // The getting-started guide's `all: {hosts: 192.168.0.2}`: the host lands in `ungrouped`.
        let inv = read("all:\n  hosts: 192.168.0.2\n");
        assert_eq!(inv.hosts_of_group("ungrouped"), ["192.168.0.2"]);
        assert!(inv.hosts["192.168.0.2"].vars.is_empty());
        assert!(inv.warnings.is_empty());
        // The string is a host pattern as a key is: port and ranges.
        let inv = read("web:\n  hosts: \"w1:2222\"\ndb:\n  hosts: d[1:2]\nx:\n  hosts: y\n");
        assert_eq!(inv.hosts["w1"].vars["ansible_port"], serde_json::json!(2222));
        assert_eq!(inv.hosts_of_group("db"), ["d1", "d2"]);
        // `y` is text to PyYAML (saphyr alone would read `true`).
        assert_eq!(inv.hosts_of_group("x"), ["y"]);
    }

    #[test]
    fn a_string_vars_is_one_null_variable_and_a_string_children_one_group() {
        let inv = read("all:\n  vars: x\n  children: web\n  hosts: {a: }\n");
        assert_eq!(inv.groups["all"].vars.get("x"), Some(&serde_json::Value::Null));
        assert_eq!(inv.groups["all"].children.iter().collect::<Vec<_>>(), ["ungrouped", "web"]);
        assert!(inv.groups["web"].hosts.is_empty());
        let inv = read("g:\n  children: sub\n  hosts: h\n");
        assert_eq!(inv.groups["g"].children.iter().collect::<Vec<_>>(), ["sub"]);
        assert_eq!(inv.groups["sub"].parents.iter().collect::<Vec<_>>(), ["g"]);
        assert_eq!(inv.hosts_of_group("g"), ["h"]);
    }

    #[test]
    fn a_section_that_is_neither_mapping_nor_string_is_refused() {
        let e = refused("all:\n  hosts: [a, b]\n");
        assert_eq!((e.line, e.col), (2, 10));
        assert_eq!(e.message, "`hosts` of group `all` must be a mapping or a string, found a list");
        // Things that only look like text: an integer, a boolean, a date.
        for (text, found) in
            [("hosts: 42", "an integer"), ("vars: yes", "a boolean"), ("children: 2024-01-01", "a date")]
        {
            let e = refused(&format!("all:\n  {text}\n"));
            assert!(e.message.ends_with(&format!("must be a mapping or a string, found {found}")), "{text}: {e}");
        }
        // Ansible checks vars, children, hosts in that order, whatever the file's order.
        let e = refused("all:\n  hosts: [a]\n  vars: [b]\n");
        assert_eq!((e.line, e.message.starts_with("`vars`")), (3, true), "{e}");
    }

    #[test]
    fn a_group_that_is_no_mapping_is_skipped() {
        let inv = read("web: foo\nnum: 3\nlist: [a]\nother:\n  hosts: {a: }\n");
        assert_eq!(warnings(&inv).len(), 3);
        assert_eq!(warnings(&inv)[0], (1, 6, "skipping `web`: a group is a mapping, found a string"));
        assert_eq!(inv.warnings[0].hint.as_deref(), Some("hosts go under `hosts:`, as in `web: {hosts: foo}`"));
        assert!(!inv.groups.contains_key("web") && !inv.groups.contains_key("num") && !inv.groups.contains_key("list"));
        assert_eq!(inv.groups["all"].children.iter().collect::<Vec<_>>(), ["ungrouped", "other"]);
    }

    #[test]
    fn a_child_that_is_no_mapping_still_links_a_known_group_or_host() {
        // Ansible's `add_child` runs on the skipped child's name: a group known by then becomes a child ...
        let inv = read("all:\n  children:\n    web:\n      hosts: {a: }\n    db:\n      children:\n        web: x\n");
        assert_eq!(inv.groups["db"].children.iter().collect::<Vec<_>>(), ["web"]);
        assert_eq!(inv.warnings.len(), 1);
        // ... a known host joins the group ...
        let inv = read("all:\n  hosts: {web: }\n  children:\n    db:\n      children:\n        web: x\n");
        assert_eq!(inv.groups["db"].hosts.iter().collect::<Vec<_>>(), ["web"]);
        // ... and anything else is an error, even when defined further down.
        let e = refused("db:\n  children:\n    web: x\nweb:\n  hosts: {a: }\n");
        assert_eq!((e.line, e.col), (3, 5));
        assert!(e.message.contains("no group or host of that name is known to add to `db`"), "{e}");
    }

    #[test]
    fn an_empty_host_value_is_no_variables() {
        // `or {}` in Ansible: any falsy value will do.
        let inv =
            read("all:\n  hosts:\n    a: ''\n    b: 0\n    c: false\n    d: []\n    e: 0.0\n    f: {}\n    g: no\n");
        assert_eq!(inv.hosts.len(), 7);
        assert!(inv.hosts.values().all(|h| h.vars.is_empty()));
        for (value, found) in
            [("foo", "a string"), ("'0'", "a string"), ("5", "an integer"), ("[1]", "a list"), ("yes", "a boolean")]
        {
            let e = refused(&format!("all:\n  hosts:\n    a: {value}\n"));
            assert_eq!((e.line, e.col), (3, 8), "{value}");
            assert_eq!(e.message, format!("host `a` must be a mapping of its variables, found {found}"), "{value}");
        }
    }

    #[test]
    fn host_and_group_names_that_yaml_reads_as_no_string_are_refused() {
        for (key, found) in [
            ("42", "an integer"),
            ("1.5", "a number"),
            ("true", "a boolean"),
            ("2024-01-01", "a date"),
            ("0x10", "an integer"),
        ] {
            let e = refused(&format!("all:\n  hosts:\n    {key}:\n"));
            assert_eq!((e.line, e.col), (3, 5), "{key}");
            assert_eq!(e.message, format!("host name `{key}` must be a string, found {found}"));
            assert_eq!(e.hint, Some(format!("enclose it in quotation marks: `\"{key}\"`")));
            let e = refused(&format!("all:\n  children:\n    {key}:\n"));
            assert_eq!(e.message, format!("group name `{key}` must be a string, found {found}"));
        }
        assert_eq!(refused("all:\n  hosts:\n    ~:\n").message, "a host name must be a string, found null");
        assert_eq!(refused("~:\n  hosts: {a: }\n").message, "a group name must be a string, found null");
        assert_eq!(refused("all:\n  hosts:\n    '':\n").message, "a host name cannot be empty");
        assert_eq!(refused("all:\n  hosts: ''\n").message, "a host name cannot be empty");
        assert_eq!(refused("all:\n  children: ''\n").message, "a group name cannot be empty");
        // Quoted, they are names; a JSON file's keys are always text.
        let inv = read("all:\n  hosts:\n    '42':\n  children:\n    \"1\":\n      hosts: !!str 7\n");
        assert_eq!(inv.hosts.keys().collect::<Vec<_>>(), ["42", "7"]);
        let inv =
            Inventory::parse_str("lab.json", r#"{"all": {"hosts": {"42": null}, "children": {"1": {"hosts": "7"}}}}"#)
                .unwrap();
        assert_eq!(inv.hosts.keys().collect::<Vec<_>>(), ["42", "7"]);
    }

    #[test]
    fn an_inventory_past_max_hosts_is_refused_at_the_key() {
        let text: String =
            "all:\n  hosts:\n".to_string() + &(0..3).map(|i| format!("    h{i}x[0:4999]:\n")).collect::<String>();
        let e = load(&mut Inventory::default(), "big.yml", &text).unwrap_err();
        assert_eq!((e.line, e.col), (5, 5), "{e}");
    }

    #[test]
    fn ranges_in_yaml_keys() {
        let mut inv = Inventory::default();
        load(&mut inv, "lab.yml", "all:\n  hosts:\n    n[1:3]:\n      x: 1\n").unwrap();
        assert_eq!(inv.hosts.keys().collect::<Vec<_>>(), ["n1", "n2", "n3"]);
        assert_eq!(inv.hosts["n2"].vars["x"], serde_json::json!(1));
    }
}
