//! Ansible's INI inventory: `[group]`, `[group:vars]`, `[group:children]`,
//! hosts with inline `key=value` variables, ranges, ungrouped hosts first.

use super::{ranges, Inventory};
use crate::diagnostic::{ConfigError, Loc, SourceFile};
use indexmap::IndexMap;
use regex::Regex;
use std::sync::LazyLock;

static SECTION: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"^\[([^:\]\s]+)(?::(\w+))?\]\s*(?:#.*)?$").expect("valid regex"));
use serde_json::Value as Json;
use std::sync::Arc;

enum Section {
    Hosts(String),
    Vars(String),
    Children(String),
}

pub fn load(inv: &mut Inventory, name: &str, text: &str) -> Result<(), ConfigError> {
    let src = Arc::new(SourceFile { name: name.to_string(), text: text.to_string() });
    let err = |line: usize, col: usize, msg: String| {
        ConfigError::at(&Loc { src: src.clone(), line: line as u32, col: col as u32 }, msg)
    };
    let mut section = Section::Hosts("ungrouped".into());
    // As Ansible: a `[g:children]` entry naming a group not defined yet waits
    // for that group's own section (which fixes the group order), and a
    // `[g:vars]` section needs `[g]` or `[g:children]` somewhere in the file.
    let mut pending: IndexMap<String, Pending> = IndexMap::new();
    for (i, raw) in text.lines().enumerate() {
        let lineno = i + 1;
        let line = raw.trim();
        if line.is_empty() || line.starts_with('#') || line.starts_with(';') {
            continue;
        }
        let indent = raw.len() - raw.trim_start().len() + 1;
        // Ansible's section pattern; other lines starting with `[` are hosts
        // (`[2001:db8::1]:2222`) unless they also end with `]`.
        if let Some(c) = SECTION.captures(line) {
            let g = c[1].to_string();
            section = match c.get(2).map(|m| m.as_str()) {
                None => Section::Hosts(g),
                Some("vars") => Section::Vars(g),
                Some("children") => Section::Children(g),
                Some(other) => {
                    return Err(err(
                        lineno,
                        indent,
                        format!("unknown section kind `:{other}` (expected `:vars` or `:children`)"),
                    ))
                }
            };
            let (g, is_vars) = match &section {
                Section::Hosts(g) | Section::Children(g) => (g.clone(), false),
                Section::Vars(g) => (g.clone(), true),
            };
            if !inv.groups.contains_key(&g) {
                if is_vars {
                    pending.entry(g.clone()).or_insert(Pending::Vars(lineno));
                }
                inv.ensure_group(&g);
            }
            if !is_vars {
                match pending.get(&g) {
                    Some(Pending::Children { .. }) => add_pending_children(inv, &g, &mut pending),
                    Some(Pending::Vars(_)) => {
                        pending.shift_remove(&g);
                    }
                    None => {}
                }
            }
            continue;
        }
        if line.starts_with('[') && line.ends_with(']') {
            return Err(err(
                lineno,
                indent,
                format!("`{line}` is no section header (no spaces, one `:` before vars or children)"),
            ));
        }
        match &section {
            Section::Hosts(group) => {
                let words =
                    shlex::split(strip_comment(line)).ok_or_else(|| err(lineno, indent, "unbalanced quotes".into()))?;
                let Some((pattern, rest)) = words.split_first() else { continue };
                let (pattern, port) = ranges::split_port(pattern);
                let hosts = ranges::expand(pattern).map_err(|e| err(lineno, indent, e))?;
                inv.check_room(&hosts).map_err(|e| err(lineno, indent, e))?;
                let mut vars = super::Vars::new();
                for word in rest {
                    let (k, v) = word
                        .split_once('=')
                        .ok_or_else(|| err(lineno, indent, format!("`{word}` is not key=value")))?;
                    vars.insert(k.to_string(), literal(v));
                }
                for h in hosts {
                    // The port is the host's only when this line creates it (Ansible's `Host(name, port)`).
                    if let (Some(p), false) = (port, inv.hosts.contains_key(&h)) {
                        inv.ensure_host(&h).vars.insert("ansible_port".into(), Json::from(p));
                    }
                    // Hosts before any section go to `ungrouped` at once, as Ansible's parser does.
                    inv.add_host_to_group(group, &h);
                    inv.ensure_host(&h).vars.extend(vars.clone());
                }
            }
            Section::Vars(group) => {
                let (k, v) =
                    line.split_once('=').ok_or_else(|| err(lineno, indent, format!("`{line}` is not key=value")))?;
                // Read as a Python literal too: `n=42` is an int, `s="42"` a string.
                inv.set_group_var(group, k.trim(), literal(v.trim())).map_err(|e| err(lineno, indent, e))?;
            }
            Section::Children(group) => {
                let child = line.split_whitespace().next().unwrap_or(line);
                if inv.groups.contains_key(child) {
                    inv.add_child(group, child);
                } else {
                    match pending
                        .entry(child.to_string())
                        .or_insert(Pending::Children { line: lineno, parents: vec![] })
                    {
                        Pending::Children { parents, .. } => parents.push(group.clone()),
                        Pending::Vars(_) => unreachable!("a group with a :vars section exists"),
                    }
                }
            }
        }
    }
    if let Some((g, p)) = pending.first() {
        let (line, msg) = match p {
            Pending::Vars(line) => (*line, format!("section [{g}:vars] is for a group this file does not define")),
            Pending::Children { line, parents } => (
                *line,
                format!(
                    "section [{}:children] names group `{g}`, which this file does not define",
                    parents[parents.len() - 1]
                ),
            ),
        };
        return Err(err(line, 1, msg));
    }
    Ok(())
}

enum Pending {
    /// The line of the first `[g:vars]`.
    Vars(usize),
    /// The line naming the child first, and every parent naming it.
    Children { line: usize, parents: Vec<String> },
}

/// `group`'s section appeared: link it to the parents that named it, and
/// theirs in turn if they were waiting too (Ansible's `_add_pending_children`).
fn add_pending_children(inv: &mut Inventory, group: &str, pending: &mut IndexMap<String, Pending>) {
    let Some(Pending::Children { parents, .. }) = pending.shift_remove(group) else { return };
    for parent in parents {
        inv.add_child(&parent, group);
        if matches!(pending.get(&parent), Some(Pending::Children { .. })) {
            add_pending_children(inv, &parent, pending);
        }
    }
}

/// Cut a host line at its first `#` outside quotes, as Python's `shlex` with
/// comments does (mid-word too: `a#b` is `a`).
fn strip_comment(line: &str) -> &str {
    let mut quote = None;
    let mut escaped = false;
    for (i, c) in line.char_indices() {
        match (quote, c) {
            _ if escaped => escaped = false,
            (None | Some('"'), '\\') => escaped = true,
            (None, '"' | '\'') => quote = Some(c),
            (None, '#') => return &line[..i],
            (Some(q), c) if c == q => quote = None,
            _ => {}
        }
    }
    line
}

/// Inline host values are read as Python literals where they are one
/// (Ansible uses `ast.literal_eval`); anything else stays a string.
fn literal(v: &str) -> Json {
    super::pyliteral::parse(v).unwrap_or_else(|| Json::String(v.to_string()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn load_str(text: &str) -> Inventory {
        let mut inv = Inventory::empty();
        load(&mut inv, "hosts.ini", text).unwrap();
        inv.finish();
        inv
    }

    #[test]
    fn sections_vars_children_ranges() {
        let inv = load_str(
            "lonely ansible_port=2200\n\n[web]\nweb[1:2] ansible_host=10.0.0.1 weight=3 debug=True\n\
             [db]\ndb1:2222\nnode[1:2]:2200\nfe80::1\n[prod:children]\nweb\ndb\n[prod:vars]\nenv=\"production\"\ncount=3\n",
        );
        assert_eq!(
            inv.hosts.keys().collect::<Vec<_>>(),
            ["lonely", "web1", "web2", "db1", "node1", "node2", "fe80::1"]
        );
        assert_eq!(inv.hosts["node2"].vars["ansible_port"], json!(2200));
        assert!(!inv.hosts["fe80::1"].vars.contains_key("ansible_port"));
        assert_eq!(inv.hosts["web2"].vars["weight"], json!(3));
        assert_eq!(inv.hosts["web2"].vars["debug"], json!(true));
        assert_eq!(inv.hosts["db1"].vars["ansible_port"], json!(2222));
        assert_eq!(inv.hosts["lonely"].vars["ansible_port"], json!(2200));
        let v = inv.host_vars("db1");
        assert_eq!(v["env"], json!("production"));
        assert_eq!(v["count"], json!(3), ":vars values are Python literals too");
        assert_eq!(inv.hosts_of_group("prod"), vec!["web1", "web2", "db1", "node1", "node2", "fe80::1"]);
        assert_eq!(inv.hosts_of_group("ungrouped"), vec!["lonely"]);
    }

    #[test]
    fn bracketed_ipv6_with_a_port_is_a_host_line() {
        let inv = load_str("[v6]\n[2001:db8::1]:2222\n[web]  # comment\nw1\n");
        assert_eq!(inv.hosts["2001:db8::1"].vars["ansible_port"], json!(2222));
        assert_eq!(inv.hosts_of_group("web"), vec!["w1"]);
    }

    #[test]
    fn errors_name_the_line() {
        let mut inv = Inventory::default();
        let e = load(&mut inv, "hosts.ini", "[web]\nh1 novalue\n").unwrap_err();
        assert_eq!((e.file.as_str(), e.line), ("hosts.ini", 2));
        let e = load(&mut inv, "hosts.ini", "[web:bogus]\n").unwrap_err();
        assert!(e.message.contains(":bogus"));
        let e = load(&mut inv, "hosts.ini", "[web one]\n").unwrap_err();
        assert!(e.message.contains("no section header"), "{}", e.message);
        let e = load(&mut inv, "hosts.ini", "[p:children]\nnever\n").unwrap_err();
        assert_eq!(e.line, 2, "a child group never defined: {}", e.message);
    }

    #[test]
    fn many_large_ranges_are_refused_not_ground_through() {
        // 100 lines of 10 000 hosts each used to make a million hosts, and
        // grouping them took quadratic time (it is linear now; the cap stays).
        let text: String = (0..100).map(|i| format!("[g{i}]\nh{i}x[0:9999]\n")).collect();
        let mut inv = Inventory::default();
        let e = load(&mut inv, "big.ini", &text).unwrap_err();
        assert_eq!((e.line, e.col), (4, 1), "{e}");
        assert!(e.message.contains("at most 10000 hosts"), "{e}");
        // Listing the same hosts again is no growth.
        let mut inv = Inventory::default();
        load(&mut inv, "big.ini", "[a]\nh[0:9999]\n[b]\nh[0:9999]\n").unwrap();
        assert_eq!(inv.hosts.len(), 10_000);
    }
}
