//! A run's recipe: what a new run is planned from (playbook, inventory,
//! limit, tags, extra vars, name) and what `--resume` plans it from again.
//! One type for both, so a flag that shapes the plan cannot be kept by one
//! and lost by the other. What each invocation gives afresh (`--forks`,
//! the connection flags, how long to wait for hosts) is `RunOptions`'.
//!
//! Stored with the run: the limit, the extra vars (redacted) and the name
//! in the run's own columns, which listings and queries read; the rest as
//! the run's `options`, under the keys runs stored before this was a type,
//! so an older run resumes as it did.

use crate::inventory::Vars;
use crate::playbook::TagFilter;
use crate::store::RunRecord;
use serde_json::Value as Json;
use std::path::{Path, PathBuf};

#[derive(Clone, Debug, Default, PartialEq, serde::Serialize, serde::Deserialize)]
#[serde(default)]
pub struct Recipe {
    /// As given; stored absolute, so a resume from another directory
    /// names the same file (a resume reads the text stored with the run).
    pub playbook: PathBuf,
    /// Inventory files (stored anchored the same way) or a list of hosts.
    pub inventory: Vec<PathBuf>,
    #[serde(flatten)]
    pub tags: TagFilter,
    #[serde(skip)]
    pub limit: Option<String>,
    #[serde(skip)]
    pub extra_vars: Vars,
    #[serde(skip)]
    pub name: Option<String>,
}

impl Recipe {
    /// The run's `options`: its paths anchored to this directory.
    pub fn stored_options(&self) -> Json {
        let here = std::env::current_dir().unwrap_or_default();
        let anchored = Recipe {
            playbook: std::path::absolute(&self.playbook).unwrap_or_else(|_| self.playbook.clone()),
            inventory: self.inventory.iter().map(|p| crate::inventory::anchored(p, &here)).collect(),
            ..self.clone()
        };
        serde_json::to_value(anchored).expect("a recipe is plain data")
    }

    /// Run `record`'s recipe as it stored it.
    pub fn of_run(record: &RunRecord) -> anyhow::Result<Recipe> {
        let run = record.id;
        let mut recipe = match &record.options {
            Some(json) => serde_json::from_value(json.clone())
                .map_err(|e| anyhow::anyhow!("run {run}: its stored options do not read as a recipe: {e}"))?,
            // Stored before options were: the sources as they were listed.
            None => Recipe {
                inventory: record.inventory.split(", ").filter(|s| !s.is_empty()).map(PathBuf::from).collect(),
                ..Recipe::default()
            },
        };
        if recipe.playbook.as_os_str().is_empty() {
            recipe.playbook = PathBuf::from(&record.playbook);
        }
        recipe.limit = record.limit.clone();
        recipe.extra_vars = record.extra_vars.as_object().cloned().unwrap_or_default();
        recipe.name = record.name.clone();
        Ok(recipe)
    }

    /// The playbook as the run names it.
    pub fn playbook_name(&self) -> String {
        Path::display(&self.playbook).to_string()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn record(options: Option<Json>) -> RunRecord {
        RunRecord {
            id: 7,
            name: Some("night".into()),
            playbook: "given.yml".into(),
            inventory: "/etc/a.ini, h1,h2,".into(),
            limit: Some("h1".into()),
            extra_vars: json!({"size": "8M"}),
            options,
            playbook_text: String::new(),
            status: crate::status::RunStatus::Ok,
            benchrig_version: String::new(),
            imported: None,
        }
    }

    #[test]
    fn a_recipe_is_stored_with_the_keys_older_runs_have_and_read_back_whole() {
        let r = Recipe {
            playbook: "/p/x.yml".into(),
            inventory: vec![PathBuf::from("/etc/lab.ini"), PathBuf::from("h1,h2,")],
            tags: TagFilter { only: vec!["t1".into()], skip: vec!["slow".into()] },
            limit: Some("h1".into()),
            extra_vars: json!({"size": "8M"}).as_object().cloned().unwrap(),
            name: Some("night".into()),
        };
        let stored = r.stored_options();
        // What `resume::options` wrote before the recipe was a type; the
        // limit, extra vars and name are the run's columns.
        assert_eq!(
            stored,
            json!({"playbook": "/p/x.yml", "inventory": ["/etc/lab.ini", "h1,h2,"], "tags": ["t1"], "skip_tags": ["slow"]})
        );
        assert_eq!(Recipe::of_run(&record(Some(stored))).unwrap(), r);
    }

    #[test]
    fn an_older_run_s_recipe_comes_from_its_columns() {
        let r = Recipe::of_run(&record(None)).unwrap();
        assert_eq!(r.playbook, PathBuf::from("given.yml"));
        assert_eq!(r.inventory, [PathBuf::from("/etc/a.ini"), PathBuf::from("h1,h2,")]);
        assert_eq!((r.limit.as_deref(), r.name.as_deref()), (Some("h1"), Some("night")));
        let partial = Recipe::of_run(&record(Some(json!({"playbook": "/p/x.yml"})))).unwrap();
        assert!(partial.tags.only.is_empty() && partial.tags.skip.is_empty() && partial.inventory.is_empty());
        let e = Recipe::of_run(&record(Some(json!({"tags": "t1"})))).unwrap_err().to_string();
        assert!(e.starts_with("run 7: its stored options do not read as a recipe"), "{e}");
    }

    #[test]
    fn a_relative_path_is_stored_anchored_and_run_as_given() {
        let r = Recipe { playbook: "pb.yml".into(), inventory: vec!["inv.ini".into()], ..Recipe::default() };
        let stored = r.stored_options();
        let here = std::env::current_dir().unwrap();
        assert_eq!(stored["playbook"], json!(here.join("pb.yml")));
        assert_eq!(stored["inventory"][0], json!(here.join("inv.ini")));
        assert_eq!(r.playbook_name(), "pb.yml");
    }
}
