//! What a bisect was asked, kept with its record as it is (JSON), so that
//! `bisect --resume` goes on with exactly the same: where the revisions
//! come from, the endpoints, the playbooks, the metrics, the hosts and the
//! limits of the statistics.

use serde::{Deserialize, Serialize};
use std::path::PathBuf;

/// Where the revisions come from.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "lowercase")]
pub enum Source {
    /// A git repository on the orchestrator's machine (its first-parent line).
    Git { repo: PathBuf },
    /// A file of versions, oldest first.
    Versions { file: PathBuf },
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Recipe {
    pub source: Source,
    pub good: String,
    pub bad: String,
    /// Run once per revision before it is measured (`-e rev=…`); a failed
    /// run skips the revision.
    pub build: Option<PathBuf>,
    /// Run per revision (`-e rev=…`), again for more repetitions.
    pub measure: PathBuf,
    /// Globs of the metrics followed (`write throughput`, `*time`).
    pub metrics: Vec<String>,
    pub inventory: Vec<PathBuf>,
    pub limit: Option<String>,
    /// `-e` given to both playbooks, beside `rev`.
    pub extra_vars: serde_json::Map<String, serde_json::Value>,
    /// The most samples a series of one revision gets before it is undecided.
    pub max_reps: usize,
    /// A regression smaller than this many percent is not one.
    pub threshold_pct: f64,
}

impl Recipe {
    /// The extra vars of a run for revision `rev`: the recipe's and `rev`.
    pub fn vars_for(&self, rev: &str) -> serde_json::Map<String, serde_json::Value> {
        let mut vars = self.extra_vars.clone();
        vars.insert("rev".into(), rev.into());
        vars
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_recipe_reads_back_as_it_was_stored() {
        let r = Recipe {
            source: Source::Git { repo: "/src/tool".into() },
            good: "v1.0".into(),
            bad: "main".into(),
            build: Some("build.yml".into()),
            measure: "measure.yml".into(),
            metrics: vec!["write throughput".into()],
            inventory: vec!["lab.ini".into()],
            limit: Some("hdd".into()),
            extra_vars: serde_json::json!({"size": "64M"}).as_object().unwrap().clone(),
            max_reps: 40,
            threshold_pct: 5.0,
        };
        let text = serde_json::to_string(&r).unwrap();
        assert!(text.contains(r#""source":{"kind":"git","repo":"/src/tool"}"#), "{text}");
        assert_eq!(serde_json::from_str::<Recipe>(&text).unwrap(), r);
        let vars = r.vars_for("abc123");
        assert_eq!((vars["rev"].as_str(), vars["size"].as_str()), (Some("abc123"), Some("64M")));
    }
}
