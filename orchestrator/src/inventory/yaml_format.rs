//! Ansible's YAML inventory: `all: {hosts, vars, children}`, nested at will.

use super::{ranges, Inventory};
use crate::yaml::{self, unknown_key, ConfigError, Node};

pub fn load(inv: &mut Inventory, name: &str, text: &str) -> Result<(), ConfigError> {
    let root = yaml::parse_str(name, text)?;
    let json = is_json(text);
    for (key, value) in root.expect_map("an inventory")? {
        let group = key.expect_str("a group name")?;
        load_group(inv, group, value, json)?;
    }
    Ok(())
}

/// Whether `text` is a YAML mapping (Ansible's yaml plugin then takes a file
/// without an extension; anything else goes to the ini plugin).
pub fn is_mapping(name: &str, text: &str) -> bool {
    yaml::parse_str(name, text).is_ok_and(|n| n.as_map().is_some())
}

fn load_group(inv: &mut Inventory, name: &str, node: &Node, json: bool) -> Result<(), ConfigError> {
    inv.ensure_group(name);
    for (key, value) in node.expect_map(&format!("group `{name}`"))? {
        match key.as_str() {
            Some("hosts") => {
                for (hkey, hvars) in value.expect_map("`hosts`")? {
                    let text = hkey.scalar_text().unwrap_or_default();
                    let (pattern, port) = ranges::split_port(&text);
                    let hosts = ranges::expand(pattern).map_err(|e| hkey.error(e))?;
                    inv.check_room(&hosts).map_err(|e| hkey.error(e))?;
                    for host in hosts {
                        // As in INI: `web1:2222:` sets the port of a host this key creates.
                        if let (Some(p), false) = (port, inv.hosts.contains_key(&host)) {
                            inv.ensure_host(&host).vars.insert("ansible_port".into(), p.into());
                        }
                        inv.add_host_to_group(name, &host);
                        let vars = vars_of(hvars, &format!("host `{host}`"), json)?;
                        inv.ensure_host(&host).vars.extend(vars);
                    }
                }
            }
            Some("vars") => {
                for (k, v) in value.expect_map(&format!("`vars` of group `{name}`"))? {
                    let key = k.scalar_text().unwrap_or_default();
                    inv.set_group_var(name, &key, self::value(v, json)).map_err(|e| v.error(e))?;
                }
            }
            Some("children") => {
                for (ckey, cnode) in value.expect_map("`children`")? {
                    let child = ckey.expect_str("a group name")?;
                    inv.add_child(name, child);
                    load_group(inv, child, cnode, json)?;
                }
            }
            _ => return Err(unknown_key(key, &format!("group `{name}`"), &["hosts", "vars", "children"])),
        }
    }
    Ok(())
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

fn value(node: &Node, json: bool) -> serde_json::Value {
    if json {
        node.to_json()
    } else {
        super::yaml11::to_json(node)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unknown_group_key_is_located() {
        let mut inv = Inventory::default();
        let e = load(&mut inv, "lab.yml", "all:\n  children:\n    web:\n      host:\n        a:\n").unwrap_err();
        assert_eq!((e.line, e.col), (4, 7));
        assert_eq!(e.hint.as_deref(), Some("did you mean `hosts`?"));
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
