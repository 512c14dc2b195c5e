//! `-t/--tags` and `--skip-tags`, with Ansible's rules: a step's tags are
//! its own plus its play's; `all` (the default) selects every step not
//! tagged `never`; `tagged` and `untagged` select by having tags; a step
//! tagged `always` runs unless `always` is skipped; a `never` step runs only
//! when one of its tags is asked for by name. Skipping wins over selecting.

use super::{Playbook, Step};

/// Stored with a run (`run::recipe`) under the flags' names.
#[derive(Clone, Debug, Default, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct TagFilter {
    /// Empty means `all`.
    #[serde(default, rename = "tags")]
    pub only: Vec<String>,
    #[serde(default, rename = "skip_tags")]
    pub skip: Vec<String>,
}

impl TagFilter {
    /// From the command line: each flag may repeat and hold `a,b`.
    pub fn new(only: &[String], skip: &[String]) -> Self {
        let split = |v: &[String]| -> Vec<String> {
            v.iter().flat_map(|t| t.split(',')).map(str::trim).filter(|t| !t.is_empty()).map(str::to_string).collect()
        };
        TagFilter { only: split(only), skip: split(skip) }
    }

    /// Whether a step with these (own + play) tags runs.
    pub fn selects(&self, tags: &[String]) -> bool {
        let has = |t: &str| tags.iter().any(|x| x == t);
        let asked = |list: &[String], t: &str| list.iter().any(|x| x == t);
        let skipped = self.skip.iter().any(|s| match s.as_str() {
            "all" => true,
            "tagged" => !tags.is_empty(),
            "untagged" => tags.is_empty(),
            s => has(s),
        });
        if skipped {
            return false;
        }
        if has("always") {
            return true;
        }
        let only: &[String] = &self.only;
        // A `never` step runs only when asked for by one of its tags.
        if has("never") {
            return tags.iter().any(|t| asked(only, t));
        }
        if only.is_empty() || asked(only, "all") {
            return true;
        }
        (asked(only, "tagged") && !tags.is_empty())
            || (asked(only, "untagged") && tags.is_empty())
            || tags.iter().any(|t| asked(only, t))
    }

    fn keeps(&self, play_tags: &[String], step: &Step) -> bool {
        let all: Vec<String> = play_tags.iter().chain(&step.tags).cloned().collect();
        self.selects(&all)
    }

    /// Drop the steps the filter does not select (with no flags: `never`
    /// ones), and the plays left with no step: `-t table7` plans no empty
    /// cells for the other plays.
    pub fn apply(&self, pb: &mut Playbook) {
        for p in &mut pb.plays {
            let tags = p.tags.clone();
            for list in [&mut p.setup, &mut p.before_each, &mut p.benchmark, &mut p.teardown] {
                list.retain(|s| self.keeps(&tags, s));
            }
        }
        pb.plays.retain(|p| [&p.setup, &p.before_each, &p.benchmark, &p.teardown].iter().any(|l| !l.is_empty()));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tags(t: &[&str]) -> Vec<String> {
        t.iter().map(|s| s.to_string()).collect()
    }

    fn f(only: &[&str], skip: &[&str]) -> TagFilter {
        TagFilter::new(&tags(only), &tags(skip))
    }

    #[test]
    fn default_runs_all_but_never() {
        let all = f(&[], &[]);
        assert!(all.selects(&[]));
        assert!(all.selects(&tags(&["x"])));
        assert!(!all.selects(&tags(&["never"])));
        assert!(!all.selects(&tags(&["never", "debug"])));
    }

    #[test]
    fn only_and_skip() {
        let t = f(&["write,read"], &[]);
        assert!(t.selects(&tags(&["read"])));
        assert!(!t.selects(&tags(&["other"])));
        assert!(!t.selects(&[]));
        assert!(t.selects(&tags(&["always"])));
        assert!(t.selects(&tags(&["never", "read"])), "asked for by name");
        let s = f(&[], &["slow"]);
        assert!(!s.selects(&tags(&["slow", "x"])));
        assert!(s.selects(&tags(&["x"])));
        assert!(!f(&["x"], &["x"]).selects(&tags(&["x"])), "skipping wins");
        assert!(!f(&[], &["always"]).selects(&tags(&["always"])));
    }

    #[test]
    fn tagged_and_untagged() {
        assert!(f(&["tagged"], &[]).selects(&tags(&["a"])));
        assert!(!f(&["tagged"], &[]).selects(&[]));
        assert!(f(&["untagged"], &[]).selects(&[]));
        assert!(!f(&["untagged"], &[]).selects(&tags(&["a"])));
        assert!(!f(&[], &["untagged"]).selects(&[]));
    }

    #[test]
    fn play_tags_reach_steps() {
        let text = "- hosts: all\n  tags: [nightly]\n  benchmark:\n    - noop:\n    - {noop: , tags: quick}\n- hosts: all\n  benchmark:\n    - {noop: , tags: [quick, x]}\n    - noop:\n";
        let mut pb = super::super::parse("t.yml", text).unwrap();
        f(&["quick"], &[]).apply(&mut pb);
        assert_eq!(pb.plays[0].benchmark.len(), 1);
        assert_eq!(pb.plays[1].benchmark.len(), 1);
        let mut pb = super::super::parse("t.yml", text).unwrap();
        f(&["nightly"], &[]).apply(&mut pb);
        // The second play has no step left: it is gone.
        assert_eq!(pb.plays.len(), 1);
        assert_eq!(pb.plays[0].benchmark.len(), 2);
    }
}
