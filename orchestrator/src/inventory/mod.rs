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
use indexmap::{IndexMap, IndexSet};
use serde_json::{Map, Value as Json};
use std::collections::{HashMap, HashSet};
use std::path::{Path, PathBuf};

pub use localhost::{embedded_localhost, notice as localhost_notice};

pub type Vars = Map<String, Json>;

/// The most hosts an inventory may have. Far past any lab; without it a few
/// lines of large ranges (`a[0:9999]`, `b[0:9999]`, ...) made millions of
/// hosts, each as costly to plan as a real one.
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
    /// Sets, in the order the sources named them: a host or group named
    /// again is found in constant time, not by a scan of the group. Changed
    /// only through [`Inventory::add_host_to_group`] and
    /// [`Inventory::add_child`], which keep the inventory's indexes.
    pub hosts: IndexSet<String>,
    pub children: IndexSet<String>,
    pub parents: IndexSet<String>,
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
            hosts: IndexSet::new(),
            children: IndexSet::new(),
            parents: IndexSet::new(),
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
    /// Host → the groups that list it directly, so a host's groups are not
    /// found by scanning every group (which made grouping quadratic).
    direct_groups: HashMap<String, IndexSet<String>>,
}

/// What an `-i` value is.
#[derive(Debug, PartialEq)]
enum Source {
    Path(PathBuf),
    /// `web1,web2:2222,`: hosts, not a file.
    Hosts(String),
}

/// As Ansible reads `-i`: an existing path is a file or directory; a value
/// that is none but has a comma is a list of hosts (its host_list plugin),
/// except that when every comma-separated part is an existing path, they
/// are those paths (`-i a.yml,b.yml`, benchrig's own, as
/// `BENCHRIG_INVENTORY` is written); anything else is a path, which
/// `load` reports missing. Paths are looked up from `base` (none: the
/// working directory) and returned joined to it.
fn classify(src: &Path, base: Option<&Path>) -> Vec<Source> {
    let at = |p: &Path| base.map_or_else(|| p.to_path_buf(), |b| b.join(p));
    let text = src.to_string_lossy();
    if at(src).exists() || !text.contains(',') {
        return vec![Source::Path(at(src))];
    }
    let parts: Vec<&str> = text.split(',').map(str::trim).filter(|p| !p.is_empty()).collect();
    if !parts.is_empty() && parts.iter().all(|p| at(Path::new(p)).exists()) {
        return parts.into_iter().map(|p| Source::Path(at(Path::new(p)))).collect();
    }
    vec![Source::Hosts(text.into_owned())]
}

fn expand_source(src: &Path) -> Vec<Source> {
    classify(src, None)
}

/// An `-i` value made to mean the same from any directory: its files
/// joined to `base` (a config file's directory, or where a run started,
/// for `--resume`), a list of hosts as it was given.
pub fn anchored(src: &Path, base: &Path) -> PathBuf {
    let parts: Vec<String> = classify(src, Some(base))
        .into_iter()
        .map(|s| match s {
            Source::Path(p) => std::path::absolute(&p).unwrap_or(p).display().to_string(),
            Source::Hosts(list) => list,
        })
        .collect();
    PathBuf::from(parts.join(","))
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
        for src in sources.iter().flat_map(|s| expand_source(s)) {
            let src = match src {
                Source::Path(p) => p,
                Source::Hosts(list) => {
                    inv.sources.push(list.clone());
                    inv.add_host_list(&list);
                    continue;
                }
            };
            let src = &src;
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

    /// Ansible's host_list plugin: each name (a port after it, as
    /// `web1:2222` or `[2001:db8::1]:2222`) into `ungrouped`, unless an
    /// earlier source has it; no ranges, no variables.
    fn add_host_list(&mut self, list: &str) {
        for h in list.split(',').map(str::trim).filter(|h| !h.is_empty()) {
            let (name, port) = ranges::split_port(h);
            if self.hosts.contains_key(name) {
                continue;
            }
            let host = self.ensure_host(name);
            if let Some(p) = port {
                host.vars.insert("ansible_port".into(), Json::from(p));
            }
            self.add_host_to_group("ungrouped", name);
        }
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
        if self.ensure_group(group).hosts.insert(host.to_string()) {
            self.direct_groups.entry(host.to_string()).or_default().insert(group.to_string());
        }
    }

    pub fn add_child(&mut self, parent: &str, child: &str) {
        self.ensure_group(child);
        self.ensure_group(parent).children.insert(child.to_string());
        self.ensure_group(child).parents.insert(parent.to_string());
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
        let mut drop_from_ungrouped = HashSet::new();
        for h in &hosts {
            let direct = self.direct_groups.get(h);
            let in_ungrouped = direct.is_some_and(|gs| gs.contains("ungrouped"));
            let grouped = direct.is_some_and(|gs| gs.iter().any(|g| g != "all" && g != "ungrouped"));
            if in_ungrouped {
                // Named under `ungrouped` and in a real group: Ansible drops the former.
                if grouped {
                    drop_from_ungrouped.insert(h.clone());
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
        // Once, not a scan of `ungrouped` per host; the order of the rest stays.
        if !drop_from_ungrouped.is_empty() {
            self.ensure_group("ungrouped").hosts.retain(|h| !drop_from_ungrouped.contains(h));
            for h in &drop_from_ungrouped {
                if let Some(gs) = self.direct_groups.get_mut(h) {
                    gs.shift_remove("ungrouped");
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
            done: &mut HashSet<&'a str>,
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
            done.insert(g);
            None
        }
        let mut done = HashSet::new();
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

    /// Every group a host belongs to, directly or through a parent: a walk
    /// up from the groups that list it, taken in the inventory's group order.
    pub fn groups_of(&self, host: &str) -> Vec<String> {
        let mut direct: Vec<usize> = self
            .direct_groups
            .get(host)
            .map(|gs| gs.iter().filter_map(|g| self.groups.get_index_of(g)).collect())
            .unwrap_or_default();
        direct.sort_unstable();
        let mut stack: Vec<&str> = direct.iter().map(|&i| self.groups[i].name.as_str()).collect();
        let mut out: Vec<String> = Vec::new();
        let mut seen: HashSet<&str> = HashSet::new();
        while let Some(g) = stack.pop() {
            if !seen.insert(g) {
                continue;
            }
            if let Some(group) = self.groups.get(g) {
                stack.extend(group.parents.iter().map(String::as_str));
            }
            out.push(g.to_string());
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
        let mut seen: HashSet<&str> = HashSet::from([group]);
        let mut level: Vec<&Group> = vec![start];
        while !level.is_empty() {
            let mut next = Vec::new();
            for g in level {
                for c in g.children.iter().filter_map(|c| self.groups.get(c)) {
                    if seen.insert(&c.name) {
                        order.push(c);
                        next.push(c);
                    }
                }
            }
            level = next;
        }
        // First occurrence wins, as a scan of the list so far did.
        let hosts: IndexSet<&String> = order.iter().flat_map(|g| &g.hosts).collect();
        hosts.into_iter().cloned().collect()
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

    #[test]
    fn an_i_value_is_a_path_a_list_of_paths_or_a_list_of_hosts_as_ansible_reads_it() {
        let dir = tempfile::tempdir().unwrap();
        let (a, b) = (dir.path().join("a.yml"), dir.path().join("b.ini"));
        std::fs::write(&a, "all: {hosts: {h1: }}\n").unwrap();
        std::fs::write(&b, "h2\n").unwrap();
        assert_eq!(expand_source(&a), [Source::Path(a.clone())]);
        let both = PathBuf::from(format!("{},{}", a.display(), b.display()));
        assert_eq!(expand_source(&both), [Source::Path(a.clone()), Source::Path(b.clone())]);
        assert_eq!(expand_source(Path::new("web1,web2:22,")), [Source::Hosts("web1,web2:22,".into())]);
        // One part no file: hosts, as Ansible would have it.
        let mixed = PathBuf::from(format!("{},nosuch.yml", a.display()));
        assert!(matches!(&expand_source(&mixed)[..], [Source::Hosts(_)]));
        assert_eq!(expand_source(Path::new("nosuch.yml")), [Source::Path("nosuch.yml".into())]);
        // Anchored (a config file's directory, a resume's start): files
        // joined to it, hosts as given, and read back the same.
        let both_rel = PathBuf::from("a.yml,b.ini");
        let anchored_both = anchored(&both_rel, dir.path());
        assert_eq!(expand_source(&anchored_both), [Source::Path(a.clone()), Source::Path(b.clone())]);
        assert_eq!(anchored(Path::new("web1,web2:22,"), dir.path()), PathBuf::from("web1,web2:22,"));
        assert_eq!(anchored(Path::new("a.yml"), dir.path()), a);
        let inv = Inventory::load(&[both, PathBuf::from("h1:2200, web3:2222,")]).unwrap();
        assert_eq!(inv.hosts.keys().collect::<Vec<_>>(), ["h1", "h2", "web3"]);
        assert!(!inv.hosts["h1"].vars.contains_key("ansible_port"), "h1 was the file's: left as it was");
        assert_eq!(inv.hosts["web3"].vars["ansible_port"], json!(2222));
    }

    fn inv(text: &str) -> Inventory {
        let mut inv = Inventory::empty();
        yaml_format::load(&mut inv, "t.yml", text).unwrap();
        inv.finish();
        inv
    }

    /// Inventories to hold the indexed lookups against the scans they
    /// replaced: every case of tests/inventory_corpus/ (with the patterns it
    /// lists), and inventories whose hosts join groups in a shuffled order,
    /// groups of the same depth, `ungrouped` named by hand, hosts named like
    /// groups.
    pub(crate) fn inventories_to_compare() -> Vec<(String, Inventory, Vec<String>)> {
        let corpus = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/inventory_corpus");
        let mut out = Vec::new();
        let mut cases: Vec<PathBuf> = std::fs::read_dir(&corpus).unwrap().map(|e| e.unwrap().path()).collect();
        cases.sort();
        for dir in cases.into_iter().filter(|d| d.is_dir()) {
            let mut sources: Vec<PathBuf> = std::fs::read_dir(&dir)
                .unwrap()
                .map(|e| e.unwrap().path())
                .filter(|p| p.file_name().unwrap().to_string_lossy().starts_with("inventory"))
                .collect();
            sources.sort();
            let patterns = std::fs::read_to_string(dir.join("patterns.txt")).unwrap_or_default();
            let patterns = patterns.lines().map(str::trim).filter(|l| !l.is_empty()).map(String::from).collect();
            let inv = Inventory::load(&sources).unwrap_or_else(|e| panic!("{}: {e}", dir.display()));
            out.push((dir.display().to_string(), inv, patterns));
        }
        // xorshift: the same "random" inventories on every run.
        let mut seed = 0x9e37_79b9_7f4a_7c15_u64;
        let mut next = move |n: usize| {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            (seed % n as u64) as usize
        };
        let patterns: Vec<String> = [
            "all",
            "ungrouped",
            "g1:g2",
            "g2:g1",
            "g1:&g2",
            "g*:!g3",
            "h1*",
            "~h[0-9]$",
            "g2[1:3]",
            "g4[-1]",
            "!g4",
            "g5,h3,g1",
            "&g0",
            "g0:h7:g0",
            "*",
            "g3:!h2",
        ]
        .map(String::from)
        .to_vec();
        for case in 0..40 {
            let mut inv = Inventory::empty();
            let groups: Vec<String> = (0..8).map(|g| format!("g{g}")).collect();
            for _ in 0..next(10) {
                let (p, c) = (next(8), next(8));
                // Parents before children in the list, so no loop.
                if p < c {
                    inv.add_child(&groups[p], &groups[c]);
                }
            }
            for _ in 0..next(60) + 5 {
                let h = format!("h{}", next(25));
                match next(10) {
                    0 => inv.add_host_to_group("ungrouped", &h),
                    1 => inv.add_host_to_group("all", &h),
                    2 => inv.add_host_to_group(&h, "g1"), // a host named like a group, or a group named like a host
                    _ => inv.add_host_to_group(&groups[next(8)], &h),
                }
            }
            for g in &groups {
                if next(3) == 0 {
                    inv.ensure_group(g).priority = next(3) as i64;
                }
            }
            inv.finish();
            out.push((format!("shuffled {case}"), inv, patterns.clone()));
        }
        out
    }

    /// `groups_of` as it was: a scan of every group for the host.
    fn groups_of_by_scan(inv: &Inventory, host: &str) -> Vec<String> {
        let mut out: Vec<String> = Vec::new();
        let mut stack: Vec<String> =
            inv.groups.values().filter(|g| g.hosts.iter().any(|h| h == host)).map(|g| g.name.clone()).collect();
        while let Some(g) = stack.pop() {
            if out.contains(&g) {
                continue;
            }
            if let Some(group) = inv.groups.get(&g) {
                stack.extend(group.parents.iter().cloned());
            }
            out.push(g);
        }
        if inv.hosts.contains_key(host) && !out.iter().any(|g| g == "all") {
            out.push("all".into());
        }
        out
    }

    /// `hosts_of_group` as it was: lists, scanned for what they hold.
    fn hosts_of_group_by_scan(inv: &Inventory, group: &str) -> Vec<String> {
        let Some(start) = inv.groups.get(group) else { return vec![] };
        let mut order: Vec<&Group> = vec![start];
        let mut seen: Vec<&str> = vec![group];
        let mut level: Vec<&Group> = vec![start];
        while !level.is_empty() {
            let mut next = Vec::new();
            for g in level {
                for c in g.children.iter().filter_map(|c| inv.groups.get(c)) {
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

    #[test]
    fn indexed_grouping_gives_what_the_scans_gave_in_the_same_order() {
        for (name, inv, _) in inventories_to_compare() {
            for h in inv.hosts.keys() {
                assert_eq!(inv.groups_of(h), groups_of_by_scan(&inv, h), "{name}: groups of {h}");
                assert_eq!(inv.host_vars(h), inv.clone().host_vars(h), "{name}: a clone keeps the index");
            }
            for g in inv.groups.keys() {
                assert_eq!(inv.hosts_of_group(g), hosts_of_group_by_scan(&inv, g), "{name}: hosts of {g}");
            }
            assert_eq!(inv.groups_of("no such host"), Vec::<String>::new());
        }
    }

    #[test]
    fn ten_thousand_hosts_are_grouped_and_selected_in_linear_time() {
        // Quadratic, this took minutes in a debug build; linear, well under a
        // second. No timing is asserted (a loaded machine must not fail it):
        // a regression shows as a test that takes minutes.
        let text: String = (0..100).map(|g| format!("[g{g}]\nh{g}x[0:99]\n[lab:children]\ng{g}\n")).collect();
        let inv = Inventory::parse_str("big.ini", &text).unwrap();
        assert_eq!(inv.hosts.len(), 10_000);
        let all = pattern::select(&inv, "all").unwrap();
        assert_eq!((all.len(), all[0].as_str(), all[9_999].as_str()), (10_000, "h0x0", "h99x99"));
        assert_eq!(pattern::select(&inv, "lab:!g0:&all").unwrap().len(), 9_900);
        assert_eq!(inv.groups_var()["lab"].as_array().unwrap().len(), 10_000);
        let groups = inv.hosts.keys().map(|h| inv.groups_of(h).len()).sum::<usize>();
        assert_eq!(groups, 10_000 * 3, "its group, lab, all");
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
