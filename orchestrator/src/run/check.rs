//! The pre-flight check: everything that can be checked without a host —
//! playbook grammar, host selection, connection variables, scratch devices,
//! and a plan of every host without facts — so a mistake is reported, with
//! its file, line and column, before any host is touched.

use crate::diagnostic::ConfigError;
use crate::inventory::{Inventory, Vars};
use crate::plan::{self, HostInput};
use crate::playbook::{self, Playbook, TagFilter};
use crate::selection;
use crate::session::transport::ConnectionSpec;
use crate::template::Templates;
use indexmap::IndexMap;
use std::path::PathBuf;

pub struct Checked {
    pub playbook: Playbook,
    pub inventory: Inventory,
    /// Host → indexes of the plays it takes part in, in inventory order.
    pub hosts: IndexMap<String, Vec<usize>>,
    /// Templates for this inventory (`plan::templates`): what every plan
    /// of the run renders with.
    pub templates: Templates,
    /// The run's extra variables: they win over a host's own, connection
    /// variables included, as `-e` does in Ansible.
    pub extra: Vars,
    /// What `--ask-become-pass` read, for hosts that name no password.
    /// The command line's `-u`, `--private-key`, `-b`, `-K`.
    pub connection: crate::session::transport::ConnectionDefaults,
}

impl Checked {
    /// The hosts of one play, in inventory order.
    pub fn hosts_of_play(&self, play: usize) -> Vec<String> {
        self.hosts.iter().filter(|(_, p)| p.contains(&play)).map(|(h, _)| h.clone()).collect()
    }

    /// The variables a host's connection is made with: its inventory
    /// variables, plus `become` when one of its plays asks for it (the
    /// agent serves every play on the host, so it starts as that user),
    /// then the command line's settings where neither says, then `-e`.
    pub fn connection_vars(&self, host: &str) -> Vars {
        let mut vars = self.inventory.host_vars(host);
        let plays = self.hosts.get(host).map(Vec::as_slice).unwrap_or_default();
        if let Some(user) = plays.iter().find_map(|&pi| self.playbook.plays[pi].become_user.as_deref()) {
            // As in Ansible, a host's own `ansible_become` wins over the play keyword.
            vars.entry("ansible_become").or_insert(true.into());
            vars.entry("ansible_become_user").or_insert_with(|| user.into());
        }
        self.connection.apply(&mut vars);
        vars.extend(self.extra.clone());
        vars
    }
}

/// Everything that can be checked without a host: playbook grammar, host
/// selection, connection variables, scratch devices, and a plan of every
/// host without facts. A template that needs facts waits for them.
pub fn check(
    playbook: &std::path::Path,
    inventory: &[PathBuf],
    limit: Option<&str>,
    extra: &Vars,
    tags: &TagFilter,
) -> anyhow::Result<Checked> {
    check_playbook(playbook::load(playbook)?, inventory, limit, extra, tags)
}

/// [`check`] of a playbook already parsed (`--resume` parses the text
/// stored with the run).
pub fn check_playbook(
    mut pb: Playbook,
    inventory: &[PathBuf],
    limit: Option<&str>,
    extra: &Vars,
    tags: &TagFilter,
) -> anyhow::Result<Checked> {
    tags.apply(&mut pb);
    let inv = selection::load_inventory(inventory)?;
    let mut hosts: IndexMap<String, Vec<usize>> = IndexMap::new();
    for (i, play) in pb.plays.iter().enumerate() {
        // A bad pattern is the play's mistake: point at its `hosts:`.
        crate::inventory::pattern::select(&inv, &play.hosts)
            .map_err(|e| ConfigError::at(&play.hosts_loc, format!("play `{}`: {e}", play.name)))?;
        let chosen = selection::select(&inv, &play.hosts, limit)?;
        if chosen.is_empty() {
            tracing::warn!("play `{}`: no hosts match `{}`", play.name, play.hosts);
        }
        for h in chosen {
            hosts.entry(h).or_default().push(i);
        }
    }
    // Hosts run in inventory order whatever the play order.
    hosts.sort_by_cached_key(|h, _| inv.hosts.get_index_of(h));
    let t = plan::templates(&inv);
    for (h, plays) in &hosts {
        let vars = inv.host_vars(h);
        plan::scratch_devices(h, &vars).map_err(anyhow::Error::msg)?;
        for &pi in plays.iter().filter(|&&pi| pb.plays[pi].roles.is_empty()) {
            let input = HostInput { inventory: &inv, host: h, extra_vars: extra, facts: None };
            match plan::plan_play(&pb.plays[pi], pi, &input, &t) {
                Ok(cells) => packages_exist(&pb, pi, &cells)?,
                Err(e) if !needs_facts(&e) => return Err(e.into()),
                Err(_) => {}
            }
        }
    }
    let checked = Checked {
        playbook: pb,
        inventory: inv,
        hosts,
        templates: t,
        extra: extra.clone(),
        connection: Default::default(),
    };
    for (h, plays) in &checked.hosts {
        let vars = checked.connection_vars(h);
        ConnectionSpec::from_vars(h, &vars).map_err(anyhow::Error::msg)?;
        // A host a play boots a kernel on: its boot settings, before any boot.
        if plays.iter().any(|&pi| checked.playbook.plays[pi].kernel.is_some()) {
            super::kernel::vars::BootVars::of(h, &vars, &checked.templates).map_err(anyhow::Error::msg)?;
        }
    }
    for (pi, play) in checked.playbook.plays.iter().enumerate().filter(|(_, p)| !p.roles.is_empty()) {
        let hosts = checked.hosts_of_play(pi);
        if let Err(e) = plan::plan_role_play(play, pi, &checked.inventory, &hosts, extra, &[], &checked.templates) {
            if !needs_facts(&e) {
                return Err(e.into());
            }
        }
    }
    Ok(checked)
}

/// Every kernel package the cells of play `pi` install is a file on the
/// controller (relative to the playbook): said before any host is touched.
fn packages_exist(pb: &Playbook, pi: usize, cells: &[plan::Cell]) -> Result<(), ConfigError> {
    let dir = std::path::Path::new(&pb.path).parent().unwrap_or(std::path::Path::new(""));
    for file in cells.iter().filter_map(|c| c.kernel.as_ref()?.package.as_deref()) {
        let path = dir.join(file);
        // Opened, as the copy will: a file there but unreadable is said now too.
        let why = match std::fs::File::open(&path).and_then(|f| f.metadata()) {
            Ok(m) if m.is_file() => continue,
            Ok(_) => "not a file".to_string(),
            Err(e) => e.to_string(),
        };
        let node = pb.plays[pi].kernel.as_ref().expect("a cell's kernel is its play's");
        let loc = node.get("package").map_or(&node.loc, |n| &n.loc);
        return Err(ConfigError::at(loc, format!("kernel package {}: {why}", path.display())));
    }
    Ok(())
}

/// A plan error that only says "facts are not known yet": a template's
/// undefined value, in a template that names `facts` (as a word:
/// `facts_size` is a typo, not that).
pub fn needs_facts(e: &ConfigError) -> bool {
    e.undefined.as_ref().is_some_and(|u| u.names("facts"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_play_that_becomes_makes_its_hosts_agents_become_unless_the_host_says_otherwise() {
        let dir = tempfile::tempdir().unwrap();
        let inv = dir.path().join("inv.yml");
        std::fs::write(
            &inv,
            "all:\n  hosts:\n    a: {ansible_connection: local}\n    b: {ansible_connection: local, ansible_become: false}\n    c: {ansible_connection: local}\n",
        )
        .unwrap();
        let pb = dir.path().join("pb.yml");
        std::fs::write(
            &pb,
            "- hosts: a:b\n  become: true\n  benchmark: [{noop: }]\n- hosts: c\n  benchmark: [{noop: }]\n",
        )
        .unwrap();
        let checked = check(&pb, &[inv], None, &Vars::new(), &TagFilter::default()).unwrap();
        let a = checked.connection_vars("a");
        assert_eq!((a["ansible_become"].clone(), a["ansible_become_user"].clone()), (true.into(), "root".into()));
        assert_eq!(checked.connection_vars("b")["ansible_become"], false, "the host's own variable wins");
        assert!(!checked.connection_vars("c").contains_key("ansible_become"));
    }

    #[test]
    fn only_templates_that_name_facts_wait_for_them() {
        let dir = tempfile::tempdir().unwrap();
        let inv = dir.path().join("inv.yml");
        std::fs::write(&inv, "all:\n  hosts:\n    a: {ansible_connection: local}\n").unwrap();
        let check_play = |matrix: &str| {
            let pb = dir.path().join("pb.yml");
            std::fs::write(&pb, format!("- hosts: a\n  matrix: {{n: {matrix}}}\n  benchmark: [{{noop: }}]\n")).unwrap();
            check(&pb, std::slice::from_ref(&inv), None, &Vars::new(), &TagFilter::default()).map(|_| ())
        };
        assert!(check_play("\"{{ [facts.cpus] }}\"").is_ok(), "facts are known once the host is");
        let typo = check_play("\"{{ [fact.cpus] }}\"").unwrap_err().to_string();
        assert!(typo.contains("undefined variable `fact.cpus`"), "{typo}");
        let lookalike = check_play("\"{{ [facts_cpus + 1] }}\"").unwrap_err().to_string();
        assert!(lookalike.contains("`facts_cpus`"), "{lookalike}");
    }
}
