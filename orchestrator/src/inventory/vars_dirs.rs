//! `group_vars/` and `host_vars/` beside an inventory, and which files of an
//! inventory directory are inventory sources.

use super::{yaml_format, Inventory, InventoryError, Vars};
use crate::yaml;
use std::path::{Path, PathBuf};

/// Ansible skips these in inventory directories (INVENTORY_IGNORE_EXTS).
const IGNORED_EXTS: &[&str] = &["orig", "ini", "cfg", "retry", "pyc", "pyo", "swp", "bak", "md", "txt", "rst"];

pub fn inventory_files_in(dir: &Path) -> Result<Vec<PathBuf>, InventoryError> {
    let mut files: Vec<PathBuf> = std::fs::read_dir(dir)
        .map_err(|e| InventoryError::Source { path: dir.display().to_string(), message: e.to_string() })?
        .flatten()
        .map(|e| e.path())
        .filter(|p| {
            let name = p.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
            let ext = p.extension().map(|e| e.to_string_lossy().into_owned()).unwrap_or_default();
            p.is_file() && !name.starts_with('.') && !name.ends_with('~') && !IGNORED_EXTS.contains(&ext.as_str())
        })
        .collect();
    files.sort();
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

/// `<base>/<name>`, `<name>.yml`, `.yaml`, `.json`, or a directory of such files (sorted).
fn read_vars(base: &Path, name: &str) -> Result<Vars, InventoryError> {
    let mut vars = Vars::new();
    let mut files = Vec::new();
    for ext in ["", ".yml", ".yaml", ".json"] {
        let p = base.join(format!("{name}{ext}"));
        if p.is_file() {
            files.push(p);
        } else if ext.is_empty() && p.is_dir() {
            let mut inner: Vec<PathBuf> = std::fs::read_dir(&p)
                .into_iter()
                .flatten()
                .flatten()
                .map(|e| e.path())
                .filter(|f| f.is_file() && !f.file_name().is_some_and(|n| n.to_string_lossy().starts_with('.')))
                .collect();
            inner.sort();
            files.extend(inner);
        }
    }
    for f in files {
        let node = yaml::parse_file(&f)?;
        vars.extend(yaml_format::vars_of(&node, &format!("{}", f.display()))?);
    }
    Ok(vars)
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
    fn directory_source_skips_ini_and_hidden() {
        let d = tempfile::tempdir().unwrap();
        std::fs::write(d.path().join("01-lab.yml"), "all:\n  hosts: {a: }\n").unwrap();
        std::fs::write(d.path().join("02-more"), "[g]\nb\n").unwrap();
        std::fs::write(d.path().join("notes.ini"), "[g]\nignored\n").unwrap();
        std::fs::write(d.path().join(".hidden"), "[g]\nignored2\n").unwrap();
        let inv = Inventory::load(&[d.path().to_path_buf()]).unwrap();
        assert_eq!(inv.hosts.keys().collect::<Vec<_>>(), ["a", "b"]);
    }
}
