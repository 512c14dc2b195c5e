//! Ansible's INI inventory: `[group]`, `[group:vars]`, `[group:children]`,
//! hosts with inline `key=value` variables, ranges, ungrouped hosts first.

use super::{ranges, Inventory};
use crate::yaml::{ConfigError, Loc, SourceFile};
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
    for (i, raw) in text.lines().enumerate() {
        let lineno = i + 1;
        let line = raw.trim();
        if line.is_empty() || line.starts_with('#') || line.starts_with(';') {
            continue;
        }
        let indent = raw.len() - raw.trim_start().len() + 1;
        if let Some(header) = line.strip_prefix('[') {
            let header = header
                .strip_suffix(']')
                .ok_or_else(|| err(lineno, indent, "section header has no closing `]`".into()))?;
            section = match header.split_once(':') {
                None => Section::Hosts(header.to_string()),
                Some((g, "vars")) => Section::Vars(g.to_string()),
                Some((g, "children")) => Section::Children(g.to_string()),
                Some((_, other)) => {
                    return Err(err(
                        lineno,
                        indent,
                        format!("unknown section kind `:{other}` (expected `:vars` or `:children`)"),
                    ))
                }
            };
            let g = match &section {
                Section::Hosts(g) | Section::Vars(g) | Section::Children(g) => g.clone(),
            };
            inv.ensure_group(&g);
            continue;
        }
        match &section {
            Section::Hosts(group) => {
                let words = shlex::split(line).ok_or_else(|| err(lineno, indent, "unbalanced quotes".into()))?;
                let (pattern, rest) = words.split_first().expect("non-empty line");
                let (pattern, port) = split_port(pattern);
                let hosts = ranges::expand(pattern).map_err(|e| err(lineno, indent, e))?;
                inv.check_room(&hosts).map_err(|e| err(lineno, indent, e))?;
                let mut vars = super::Vars::new();
                if let Some(p) = port {
                    vars.insert("ansible_port".into(), Json::from(p));
                }
                for word in rest {
                    let (k, v) = word
                        .split_once('=')
                        .ok_or_else(|| err(lineno, indent, format!("`{word}` is not key=value")))?;
                    vars.insert(k.to_string(), literal(v));
                }
                for h in hosts {
                    if group != "ungrouped" {
                        inv.add_host_to_group(group, &h);
                    } else {
                        inv.ensure_host(&h);
                    }
                    inv.ensure_host(&h).vars.extend(vars.clone());
                }
            }
            Section::Vars(group) => {
                let (k, v) =
                    line.split_once('=').ok_or_else(|| err(lineno, indent, format!("`{line}` is not key=value")))?;
                // In :vars sections Ansible keeps values as strings.
                inv.ensure_group(group).vars.insert(k.trim().to_string(), Json::String(unquote(v.trim()).to_string()));
            }
            Section::Children(group) => inv.add_child(group, line),
        }
    }
    Ok(())
}

/// `host:2222` or `node[01:04]:2222` sets the port; an IPv6 address keeps its colons.
fn split_port(pattern: &str) -> (&str, Option<u16>) {
    let mut depth = 0i32;
    let outside: Vec<usize> = pattern
        .char_indices()
        .filter_map(|(i, c)| {
            match c {
                '[' => depth += 1,
                ']' => depth -= 1,
                ':' if depth == 0 => return Some(i),
                _ => {}
            }
            None
        })
        .collect();
    if let [i] = outside[..] {
        if let Ok(port) = pattern[i + 1..].parse() {
            return (&pattern[..i], Some(port));
        }
    }
    (pattern, None)
}

fn unquote(s: &str) -> &str {
    for q in ['"', '\''] {
        if s.len() >= 2 && s.starts_with(q) && s.ends_with(q) {
            return &s[1..s.len() - 1];
        }
    }
    s
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
        let mut inv = Inventory::default();
        inv.ensure_group("all");
        inv.ensure_group("ungrouped");
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
        assert_eq!(v["count"], json!("3"), ":vars values stay strings");
        assert_eq!(inv.hosts_of_group("prod"), vec!["web1", "web2", "db1", "node1", "node2", "fe80::1"]);
        assert_eq!(inv.hosts_of_group("ungrouped"), vec!["lonely"]);
    }

    #[test]
    fn errors_name_the_line() {
        let mut inv = Inventory::default();
        let e = load(&mut inv, "hosts.ini", "[web]\nh1 novalue\n").unwrap_err();
        assert_eq!((e.file.as_str(), e.line), ("hosts.ini", 2));
        let e = load(&mut inv, "hosts.ini", "[web:bogus]\n").unwrap_err();
        assert!(e.message.contains(":bogus"));
    }

    #[test]
    fn many_large_ranges_are_refused_not_ground_through() {
        // 100 lines of 10 000 hosts each used to make a million hosts, and
        // grouping them took quadratic time.
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
