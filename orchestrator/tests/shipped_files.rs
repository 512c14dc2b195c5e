//! Every playbook and inventory in the repository loads and plans as shipped
//! (no host is touched: this is the check `benchrig run` does first).

use std::path::{Path, PathBuf};

fn files(dir: &str) -> Vec<PathBuf> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..").join(dir);
    let mut v: Vec<PathBuf> = std::fs::read_dir(root).unwrap().map(|e| e.unwrap().path()).collect();
    v.sort();
    v
}

#[test]
fn every_inventory_loads() {
    for inv in files("inventories") {
        let i = benchrig::inventory::Inventory::load(std::slice::from_ref(&inv))
            .unwrap_or_else(|e| panic!("{}: {e}", inv.display()));
        assert!(!i.hosts.is_empty(), "{}", inv.display());
        for h in i.hosts.keys() {
            benchrig::plan::scratch_devices(h, &i.host_vars(h)).unwrap();
        }
    }
}

#[test]
fn every_playbook_plans_on_every_inventory() {
    let extra = benchrig::inventory::Vars::new();
    for pb in files("playbooks") {
        for inv in files("inventories").into_iter().filter(|p| p.extension().is_some_and(|e| e == "yml")) {
            match benchrig::run::check(&pb, std::slice::from_ref(&inv), None, &extra, &Default::default()) {
                Ok(checked) => assert!(!checked.hosts.is_empty()),
                // A play with two roles cannot run on a one-host inventory; it must say so.
                Err(e) if e.to_string().contains("roles") && e.to_string().contains("only 1 host") => {}
                Err(e) => panic!("{} on {}: {e:#}", pb.display(), inv.display()),
            }
        }
        // And on the embedded default (this machine).
        if let Err(e) = benchrig::run::check(&pb, &[], None, &extra, &Default::default()) {
            assert!(e.to_string().contains("only 1 host"), "{} on localhost: {e:#}", pb.display());
        }
    }
}

/// The playbook README.md shows under "Writing playbooks" parses as it is.
#[test]
fn the_readme_playbook_example_parses() {
    let readme = std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("../README.md")).unwrap();
    let section = readme.split("## Writing playbooks").nth(1).expect("the section");
    let example = section.split("```yaml\n").nth(1).and_then(|b| b.split("```").next()).expect("a yaml block");
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("sizes.yml"), "size: 2G\n").unwrap();
    let pb = dir.path().join("example.yml");
    std::fs::write(&pb, example).unwrap();
    let parsed = benchrig::playbook::load(&pb).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(parsed.plays[0].benchmark.len(), 2);
}

/// The build and measure playbooks README.md shows for `bisect` parse as
/// they are, each with the one play and step it shows.
#[test]
fn the_readme_bisect_playbooks_parse() {
    let readme = std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("../README.md")).unwrap();
    let section = readme.split("### Finding the change").nth(1).expect("the section");
    let end = ["\n## ", "\n### "].iter().filter_map(|h| section.find(h)).min().unwrap_or(section.len());
    let section = &section[..end];
    let blocks: Vec<&str> =
        section.split("```yaml\n").skip(1).map(|b| b.split("```").next().expect("a closed block")).collect();
    assert_eq!(blocks.len(), 2, "build.yml and measure.yml");
    let dir = tempfile::tempdir().unwrap();
    for (name, text) in ["build.yml", "measure.yml"].into_iter().zip(blocks) {
        let pb = dir.path().join(name);
        std::fs::write(&pb, text).unwrap();
        let parsed = benchrig::playbook::load(&pb).unwrap_or_else(|e| panic!("{name}: {e}"));
        assert_eq!((parsed.plays.len(), parsed.plays[0].benchmark.len()), (1, 1), "{name}");
    }
}

/// The simulated lab's inventories (the netns hosts, the guests, arm1, the
/// shaped hosts) share one bridge: an address held by two of them makes
/// the second host's sshd unreachable (arm1 once failed to come up on the
/// address `users` had taken). Within one inventory two entries may name
/// one host (two logins of `users`).
#[test]
fn no_two_simulated_lab_inventories_give_one_address() {
    let mut owner: std::collections::BTreeMap<String, String> = Default::default();
    for inv in files("inventories") {
        let name = inv.file_name().unwrap().to_string_lossy().into_owned();
        if !name.starts_with("simlab") {
            continue;
        }
        let i = benchrig::inventory::Inventory::load(std::slice::from_ref(&inv)).unwrap();
        for h in i.hosts.keys() {
            let Some(addr) = i.host_vars(h).get("ansible_host").and_then(|v| v.as_str()).map(str::to_string) else {
                continue;
            };
            if let Some(other) = owner.insert(addr.clone(), name.clone()) {
                assert_eq!(other, name, "{addr} is given by both {other} and {name}");
            }
        }
    }
    assert!(owner.len() >= 10, "the lab's inventories went missing: {owner:?}");
}
