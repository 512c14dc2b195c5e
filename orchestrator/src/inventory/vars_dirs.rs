//! `group_vars/` and `host_vars/` beside an inventory, and which files of an
//! inventory directory are inventory sources.

use super::{yaml_format, Inventory, InventoryError, Vars};
use crate::yaml;
use std::path::{Path, PathBuf};

/// Ansible skips these names in inventory directories (INVENTORY_IGNORE_EXTS
/// with REJECT_EXTS, matched against the end of the name). `.ini` is not one.
const IGNORED_ENDINGS: &[&str] =
    &[".pyc", ".pyo", ".swp", ".bak", "~", ".rpm", ".md", ".txt", ".rst", ".orig", ".cfg", ".retry"];
/// Never inventory sources in a directory (IGNORED_ALWAYS), besides hidden names.
const IGNORED_NAMES: &[&str] = &["host_vars", "group_vars", "vars_plugins"];

/// The inventory files of a directory source, in Ansible's order: names
/// sorted, subdirectories walked in place.
pub fn inventory_files_in(dir: &Path) -> Result<Vec<PathBuf>, InventoryError> {
    let mut names: Vec<String> = std::fs::read_dir(dir)
        .map_err(|e| InventoryError::Source { path: dir.display().to_string(), message: e.to_string() })?
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| !n.starts_with('.') && !IGNORED_NAMES.contains(&n.as_str()))
        .filter(|n| !IGNORED_ENDINGS.iter().any(|end| n.ends_with(end)))
        .collect();
    names.sort();
    let mut files = Vec::new();
    for n in names {
        let p = dir.join(n);
        if p.is_dir() {
            files.extend(inventory_files_in(&p)?);
        } else {
            files.push(p);
        }
    }
    Ok(files)
}

/// Merge `group_vars/<group>` and `host_vars/<host>` found in `dir`.
pub fn load_beside(inv: &mut Inventory, dir: &Path) -> Result<(), InventoryError> {
    let groups: Vec<String> = inv.groups.keys().cloned().collect();
    for g in groups {
        let vars = read_vars(&dir.join("group_vars"), &g)?;
        inv.ensure_group(&g).file_vars.extend(vars);
    }
    let hosts: Vec<String> = inv.hosts.keys().cloned().collect();
    for h in hosts {
        let vars = read_vars(&dir.join("host_vars"), &h)?;
        inv.ensure_host(&h).file_vars.extend(vars);
    }
    Ok(())
}

/// Extensions a vars file may have; a name without one is read too.
const VARS_EXTS: &[&str] = &[".yml", ".yaml", ".json"];

/// As Ansible's `find_vars_files`: the first of `<base>/<name>`, `<name>.yml`,
/// `.yaml`, `.json` that exists; a directory is read whole.
fn read_vars(base: &Path, name: &str) -> Result<Vars, InventoryError> {
    let mut files = Vec::new();
    for ext in std::iter::once("").chain(VARS_EXTS.iter().copied()) {
        let p = base.join(format!("{name}{ext}"));
        if p.is_dir() {
            files = dir_vars_files(&p);
            break;
        } else if p.exists() {
            files.push(p);
            break;
        }
    }
    let mut vars = Vars::new();
    for f in files {
        let node = yaml::parse_file(&f)?;
        let json = yaml_format::is_json(&node.loc.src.text);
        vars.extend(yaml_format::vars_of(&node, &format!("{}", f.display()), json)?);
    }
    Ok(vars)
}

/// Every vars file under `dir`, sorted by name, subdirectories (without an
/// extension) in place; hidden names, `~` backups and other extensions are skipped.
fn dir_vars_files(dir: &Path) -> Vec<PathBuf> {
    let mut names: Vec<String> = std::fs::read_dir(dir)
        .into_iter()
        .flatten()
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| !n.starts_with('.') && !n.ends_with('~'))
        .collect();
    names.sort();
    let mut files = Vec::new();
    for n in names {
        let p = dir.join(&n);
        let ext = Path::new(&n).extension().map(|e| format!(".{}", e.to_string_lossy()));
        match ext {
            None if p.is_dir() => files.extend(dir_vars_files(&p)),
            None if p.is_file() => files.push(p),
            Some(e) if p.is_file() && VARS_EXTS.contains(&e.as_str()) => files.push(p),
            _ => {}
        }
    }
    files
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn precedence_of_dirs_over_inline() {
        let d = tempfile::tempdir().unwrap();
        std::fs::write(d.path().join("hosts.yml"), "all:\n  vars: {a: inline_all}\n  children:\n    web:\n      vars: {b: inline_web, a: inline_web}\n      hosts:\n        h1: {c: inline_host}\n").unwrap();
        std::fs::create_dir_all(d.path().join("group_vars/web")).unwrap();
        std::fs::create_dir_all(d.path().join("host_vars")).unwrap();
        std::fs::write(d.path().join("group_vars/all.yml"), "a: dir_all\nb: dir_all\n").unwrap();
        std::fs::write(d.path().join("group_vars/web/x.yml"), "b: dir_web\n").unwrap();
        std::fs::write(d.path().join("host_vars/h1"), "c: dir_host\n").unwrap();
        let inv = Inventory::load(&[d.path().join("hosts.yml")]).unwrap();
        let v = inv.host_vars("h1");
        // group_vars/all beats every inline group var; group_vars/web beats it.
        assert_eq!(v["a"], json!("dir_all"));
        assert_eq!(v["b"], json!("dir_web"));
        assert_eq!(v["c"], json!("dir_host"));
    }

    #[test]
    fn directory_source_skips_ignored_and_hidden() {
        let d = tempfile::tempdir().unwrap();
        std::fs::write(d.path().join("01-lab.yml"), "all:\n  hosts: {a: }\n").unwrap();
        std::fs::write(d.path().join("02-more"), "[g]\nb\n").unwrap();
        std::fs::write(d.path().join("03.ini"), "[g]\nc\n").unwrap();
        std::fs::write(d.path().join("notes.txt"), "[g]\nignored\n").unwrap();
        std::fs::write(d.path().join("old.cfg"), "[g]\nignored\n").unwrap();
        std::fs::write(d.path().join(".hidden"), "[g]\nignored2\n").unwrap();
        std::fs::create_dir(d.path().join("04-sub")).unwrap();
        std::fs::write(d.path().join("04-sub/x.yml"), "all:\n  hosts: {d: }\n").unwrap();
        let inv = Inventory::load(&[d.path().to_path_buf()]).unwrap();
        // Ansible reads .ini files in a directory, and walks subdirectories.
        assert_eq!(inv.hosts.keys().collect::<Vec<_>>(), ["a", "b", "c", "d"]);
    }
}
