//! Ansible-style inventories: hosts, groups, variables and their precedence.
//!
//! Loading is I/O; everything after ([`Inventory::host_vars`], patterns) is
//! pure, so the planner can use it without touching anything.

mod ini;
mod localhost;
pub mod pattern;
pub mod pyliteral;
pub mod ranges;
mod vars_dirs;
mod yaml11;
mod yaml_format;

use crate::diagnostic::ConfigError;
use indexmap::IndexMap;
use serde_json::{Map, Value as Json};
use std::path::{Path, PathBuf};

pub use localhost::embedded_localhost;

pub type Vars = Map<String, Json>;

/// The most hosts an inventory may have. Far past any lab; without it a few
/// lines of large ranges (`a[0:9999]`, `b[0:9999]`, ...) made millions of
/// hosts, and grouping them is quadratic.
pub const MAX_HOSTS: usize = 10_000;

impl Inventory {
    /// An error when adding `names` would take the inventory past [`MAX_HOSTS`].
    fn check_room(&self, names: &[String]) -> Result<(), String> {
        let new = names.iter().filter(|h| !self.hosts.contains_key(*h)).count();
        if self.hosts.len() + new > MAX_HOSTS {
            return Err(format!(
                "an inventory may have at most {MAX_HOSTS} hosts; this line would make it {}",
                self.hosts.len() + new
            ));
        }
        Ok(())
    }
}

#[derive(Clone, Debug, Default)]
pub struct Host {
    pub name: String,
    /// Variables set on the host in the inventory source.
    pub vars: Vars,
    /// `host_vars/<name>` beside the inventory.
    pub file_vars: Vars,
}

#[derive(Clone, Debug)]
pub struct Group {
    pub name: String,
    pub vars: Vars,
    /// `group_vars/<name>` beside the inventory.
    pub file_vars: Vars,
    pub hosts: Vec<String>,
    pub children: Vec<String>,
    pub parents: Vec<String>,
    /// `ansible_group_priority`: orders groups of one depth (higher wins).
    /// Ansible keeps it out of the variables, so do we.
    pub priority: i64,
}

impl Default for Group {
    fn default() -> Self {
        Group {
            name: String::new(),
            vars: Vars::new(),
            file_vars: Vars::new(),
            hosts: vec![],
            children: vec![],
            parents: vec![],
            priority: 1,
        }
    }
}

#[derive(Clone, Debug, Default)]
pub struct Inventory {
    /// In the order the sources defined them (which is the order `hosts:` runs in).
    pub hosts: IndexMap<String, Host>,
    pub groups: IndexMap<String, Group>,
    /// Where it came from (`embedded localhost` when no `-i` was given).
    pub sources: Vec<String>,
    /// What Ansible warns about and skips while reading the sources (a YAML
    /// group that is no mapping, an unexpected key), located; logged as found.
    pub warnings: Vec<ConfigError>,
}

#[derive(Debug, thiserror::Error)]
pub enum InventoryError {
    // Transparent: with `{0}` and `#[from]` anyhow's `{:#}` printed the error twice.
    #[error(transparent)]
    Config(#[from] ConfigError),
    #[error("inventory {path}: {message}")]
    Source { path: String, message: String },
}

impl Inventory {
    /// Load and merge every `-i` source (files or directories), then the
    /// `group_vars/` and `host_vars/` beside each.
    pub fn load(sources: &[PathBuf]) -> Result<Inventory, InventoryError> {
        let mut inv = Inventory::empty();
        // group_vars/ and host_vars/ apply to groups and hosts of every source,
        // so they are read once all sources are.
        let mut beside = Vec::new();
        for src in sources {
            inv.sources.push(src.display().to_string());
            let meta = std::fs::metadata(src).map_err(|e| InventoryError::Source {
                path: src.display().to_string(),
                message: format!("cannot read: {e}"),
            })?;
            if meta.is_dir() {
                for file in vars_dirs::inventory_files_in(src)? {
                    inv.load_file(&file)?;
                }
                beside.push(src.clone());
            } else {
                inv.load_file(src)?;
                beside.push(src.parent().unwrap_or(Path::new(".")).to_path_buf());
            }
        }
        inv.finish();
        inv.check_no_loops(&inv.sources.join(", "))?;
        for dir in &beside {
            vars_dirs::load_beside(&mut inv, dir)?;
        }
        Ok(inv)
    }

    fn load_file(&mut self, path: &Path) -> Result<(), InventoryError> {
        let text = std::fs::read_to_string(path).map_err(|e| InventoryError::Source {
            path: path.display().to_string(),
            message: format!("cannot read: {e}"),
        })?;
        self.load_text(&path.display().to_string(), path.extension().and_then(|e| e.to_str()), text.as_str())
    }

    /// One source's text, given its name and its extension.
    fn load_text(&mut self, name: &str, extension: Option<&str>, text: &str) -> Result<(), InventoryError> {
        // As Ansible's plugin chain: the yaml plugin takes .yml/.yaml/.json and
        // names without an extension; what it cannot read as a YAML mapping
        // goes to the ini plugin, as does every other extension.
        match extension {
            Some("yml" | "yaml" | "json") => yaml_format::load(self, name, text)?,
            None if yaml_format::is_mapping(name, text) => yaml_format::load(self, name, text)?,
            _ => ini::load(self, name, text)?,
        }
        Ok(())
    }

    /// Note something Ansible would warn about and skip, and log it now:
    /// an error later in the same source must not hide it.
    fn warn(&mut self, warning: ConfigError) {
        tracing::warn!("{warning}");
        self.warnings.push(warning);
    }

    /// `all` with its first child `ungrouped`, as Ansible starts every inventory.
    pub fn empty() -> Inventory {
        let mut inv = Inventory::default();
        inv.add_child("all", "ungrouped");
        inv
    }

    /// Set a group variable as Ansible's `Group.set_variable` does:
    /// `ansible_group_priority` becomes the priority (read with `int()`).
    /// The error is the message; the caller knows where the value was.
    pub fn set_group_var(&mut self, group: &str, key: &str, value: Json) -> Result<(), String> {
        let g = self.ensure_group(group);
        if key != "ansible_group_priority" {
            g.vars.insert(key.to_string(), value);
            return Ok(());
        }
        let n = match &value {
            Json::Number(n) => n.as_i64().or_else(|| n.as_f64().map(|f| f.trunc() as i64)),
            Json::String(s) => s.trim().parse().ok(),
            Json::Bool(b) => Some(*b as i64),
            _ => None,
        };
        g.priority = n.ok_or_else(|| format!("ansible_group_priority must be an integer, not {value}"))?;
        Ok(())
    }

    /// One inventory source given as text, read as [`Inventory::load`] reads a
    /// file of that name (the yaml plugin for .yml/.yaml/.json and for a YAML
    /// mapping without an extension, INI otherwise), without `group_vars/` or
    /// `host_vars/`. Pure: for tests and fuzzing.
    pub fn parse_str(name: &str, text: &str) -> Result<Inventory, InventoryError> {
        let mut inv = Inventory::empty();
        inv.sources.push(name.to_string());
        inv.load_text(name, Path::new(name).extension().and_then(|e| e.to_str()), text)?;
        inv.finish();
        inv.check_no_loops(name)?;
        Ok(inv)
    }

    pub fn ensure_group(&mut self, name: &str) -> &mut Group {
        self.groups.entry(name.to_string()).or_insert_with(|| Group { name: name.to_string(), ..Default::default() })
    }

    pub fn ensure_host(&mut self, name: &str) -> &mut Host {
        self.hosts.entry(name.to_string()).or_insert_with(|| Host { name: name.to_string(), ..Default::default() })
    }

    pub fn add_host_to_group(&mut self, group: &str, host: &str) {
        self.ensure_host(host);
        let g = self.ensure_group(group);
        if !g.hosts.iter().any(|h| h == host) {
            g.hosts.push(host.to_string());
        }
    }

    pub fn add_child(&mut self, parent: &str, child: &str) {
        self.ensure_group(child);
        let p = self.ensure_group(parent);
        if !p.children.iter().any(|c| c == child) {
            p.children.push(child.to_string());
        }
        let c = self.ensure_group(child);
        if !c.parents.iter().any(|p| p == parent) {
            c.parents.push(parent.to_string());
        }
    }

    /// Ansible's implicit structure: top-level groups are children of `all`;
    /// hosts in no group but `all` are `ungrouped`.
    fn finish(&mut self) {
        let names: Vec<String> = self.groups.keys().cloned().collect();
        for g in &names {
            if g != "all" && self.groups[g].parents.is_empty() {
                self.add_child("all", g);
            }
        }
        let hosts: Vec<String> = self.hosts.keys().cloned().collect();
        for h in &hosts {
            let in_group = |name: &str| self.groups.get(name).is_some_and(|g| g.hosts.contains(h));
            let grouped = self.groups.values().any(|g| g.name != "all" && g.name != "ungrouped" && g.hosts.contains(h));
            if in_group("ungrouped") {
                // Named under `ungrouped` and in a real group: Ansible drops the former.
                if grouped {
                    self.ensure_group("ungrouped").hosts.retain(|x| x != h);
                }
            } else if !grouped {
                // Ansible's `add_child('ungrouped', name)` takes a group before a
                // host of that name: a host named like a group makes that group
                // a child of `ungrouped` and stays in `all` alone (Ansible warns).
                if self.groups.contains_key(h) {
                    self.add_child("ungrouped", h);
                } else {
                    self.add_host_to_group("ungrouped", h);
                }
            }
        }
    }

    /// A group may not be its own ancestor; Ansible refuses that inventory
    /// ("recursive dependency loop") and so do we, naming the loop.
    fn check_no_loops(&self, source: &str) -> Result<(), InventoryError> {
        fn walk<'a>(
            inv: &'a Inventory,
            g: &'a str,
            path: &mut Vec<&'a str>,
            done: &mut Vec<&'a str>,
        ) -> Option<String> {
            if let Some(i) = path.iter().position(|p| *p == g) {
                let mut lp: Vec<&str> = path[i..].to_vec();
                lp.push(g);
                return Some(lp.join(" → "));
            }
            if done.contains(&g) {
                return None;
            }
            path.push(g);
            for c in inv.groups.get(g).map(|x| x.children.as_slice()).unwrap_or_default() {
                if let Some(found) = walk(inv, c, path, done) {
                    return Some(found);
                }
            }
            path.pop();
            done.push(g);
            None
        }
        let mut done = Vec::new();
        for g in self.groups.keys() {
            if let Some(lp) = walk(self, g, &mut Vec::new(), &mut done) {
                return Err(InventoryError::Source {
                    path: source.to_string(),
                    message: format!("groups form a loop ({lp}): a group cannot be its own child"),
                });
            }
        }
        Ok(())
    }

    /// Every group a host belongs to, directly or through a parent.
    pub fn groups_of(&self, host: &str) -> Vec<String> {
        let mut out: Vec<String> = Vec::new();
        let mut stack: Vec<String> =
            self.groups.values().filter(|g| g.hosts.iter().any(|h| h == host)).map(|g| g.name.clone()).collect();
        while let Some(g) = stack.pop() {
            if out.contains(&g) {
                continue;
            }
            if let Some(group) = self.groups.get(&g) {
                stack.extend(group.parents.iter().cloned());
            }
            out.push(g);
        }
        if self.hosts.contains_key(host) && !out.iter().any(|g| g == "all") {
            out.push("all".into());
        }
        out
    }

    /// Distance from `all` along the longest parent chain (Ansible's `depth`).
    fn depth(&self, group: &str, seen: &mut Vec<String>) -> usize {
        if group == "all" || seen.iter().any(|s| s == group) {
            return 0;
        }
        seen.push(group.to_string());
        let d = self
            .groups
            .get(group)
            .map(|g| g.parents.iter().map(|p| self.depth(p, seen) + 1).max().unwrap_or(1))
            .unwrap_or(1);
        seen.pop();
        d
    }

    /// All hosts of a group, its descendants' included, in Ansible's order
    /// (`Group.get_hosts`): the group's own hosts, then its children's, then
    /// their children's, level by level, each host once. Ansible walks the
    /// levels below the children in set order, which is arbitrary; here they
    /// go in the order their parents were listed.
    pub fn hosts_of_group(&self, group: &str) -> Vec<String> {
        let Some(start) = self.groups.get(group) else { return vec![] };
        let mut order: Vec<&Group> = vec![start];
        let mut seen: Vec<&str> = vec![group];
        let mut level: Vec<&Group> = vec![start];
        while !level.is_empty() {
            let mut next = Vec::new();
            for g in level {
                for c in g.children.iter().filter_map(|c| self.groups.get(c)) {
                    if !seen.contains(&c.name.as_str()) {
                        seen.push(&c.name);
                        order.push(c);
                        next.push(c);
                    }
                }
            }
            level = next;
        }
        let mut hosts: Vec<String> = Vec::new();
        for h in order.iter().flat_map(|g| &g.hosts) {
            if !hosts.contains(h) {
                hosts.push(h.clone());
            }
        }
        hosts
    }

    /// A host's variables with Ansible's precedence (later wins):
    /// `all` vars, other groups' vars by (depth, `ansible_group_priority`,
    /// name), `group_vars/all`, `group_vars/<group>` in the same order, the
    /// host's own vars, `host_vars/<host>`; plus the magic variables.
    pub fn host_vars(&self, host: &str) -> Vars {
        let mut vars = self.host_vars_plain(host);
        vars.insert("inventory_hostname".into(), host.into());
        vars.insert("inventory_hostname_short".into(), host.split('.').next().unwrap_or(host).into());
        let mut names: Vec<String> =
            self.groups_of(host).into_iter().filter(|n| n != "all" && n != "ungrouped").collect();
        names.sort();
        vars.insert("group_names".into(), names.into());
        vars
    }

    /// The merged variables alone, as `ansible-inventory --host` shows them.
    pub fn host_vars_plain(&self, host: &str) -> Vars {
        let mut groups: Vec<&Group> = self.groups_of(host).iter().filter_map(|g| self.groups.get(g)).collect();
        groups.retain(|g| g.name != "all");
        groups.sort_by_cached_key(|g| (self.depth(&g.name, &mut Vec::new()), g.priority, g.name.clone()));
        let all = self.groups.get("all");
        let mut vars = Vars::new();
        let mut apply = |m: &Vars| vars.extend(m.iter().map(|(k, v)| (k.clone(), v.clone())));
        if let Some(all) = all {
            apply(&all.vars);
        }
        for g in &groups {
            apply(&g.vars);
        }
        if let Some(all) = all {
            apply(&all.file_vars);
        }
        for g in &groups {
            apply(&g.file_vars);
        }
        if let Some(h) = self.hosts.get(host) {
            apply(&h.vars);
            apply(&h.file_vars);
        }
        vars
    }

    /// `groups` as templates see it: every group's hosts.
    pub fn groups_var(&self) -> Json {
        Json::Object(self.groups.keys().map(|g| (g.clone(), Json::from(self.hosts_of_group(g)))).collect())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn inv(text: &str) -> Inventory {
        let mut inv = Inventory::empty();
        yaml_format::load(&mut inv, "t.yml", text).unwrap();
        inv.finish();
        inv
    }

    #[test]
    fn deeper_groups_win_then_names_then_host() {
        let i = inv(r#"
all:
  vars: {x: all, y: all, z: all}
  children:
    b:
      vars: {x: b, y: b}
      children:
        c:
          vars: {x: c}
          hosts:
            h1: {z: host}
    a:
      vars: {y: a}
      hosts: {h1: }
"#);
        let v = i.host_vars("h1");
        // c (depth 2) beats b and a (depth 1); among depth 1, b beats a by name.
        assert_eq!(v["x"], json!("c"));
        assert_eq!(v["y"], json!("b"));
        assert_eq!(v["z"], json!("host"));
        assert_eq!(v["group_names"], json!(["a", "b", "c"]));
    }

    #[test]
    fn priority_overrides_name_order() {
        let i = inv("all:\n  children:\n    a:\n      vars: {x: a, ansible_group_priority: 10}\n      hosts: {h: }\n    b:\n      vars: {x: b}\n      hosts: {h: }\n");
        assert_eq!(i.host_vars("h")["x"], json!("a"));
    }

    #[test]
    fn ungrouped_and_all() {
        let i = inv("all:\n  hosts:\n    lone:\n  children:\n    g:\n      hosts: {m: }\n");
        assert_eq!(i.hosts_of_group("ungrouped"), vec!["lone"]);
        assert_eq!(i.hosts_of_group("all"), vec!["lone", "m"]);
        assert!(i.groups["all"].children.contains(&"g".to_string()));
    }

    #[test]
    fn a_loop_of_groups_is_refused_by_name() {
        let e = Inventory::parse_str("h.ini", "[top:children]\na\n[a:children]\nb\n[b:children]\na\n[b]\nh1\n")
            .unwrap_err();
        assert!(e.to_string().contains("groups form a loop (a → b → a)"), "{e}");
    }
}
