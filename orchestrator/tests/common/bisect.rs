//! What the bisect tests share: a git repository of a small tool, one
//! commit per version of it, and a bisect's record as `bisect show
//! --format json` gives it.

use super::{stderr, stdout, Bench};
use serde_json::Value as Json;
use std::path::{Path, PathBuf};
use std::process::Command;

pub fn git(repo: &Path, args: &[&str]) {
    let out = Command::new("git")
        .arg("-C")
        .arg(repo)
        .args(["-c", "user.name=A U Thor", "-c", "user.email=a@example.org"])
        .args(args)
        .output()
        .unwrap();
    assert!(out.status.success(), "git {args:?}: {}", String::from_utf8_lossy(&out.stderr));
}

/// A repository at `dir/repo` whose commit `i` (0..=40, subject "change
/// i", tagged `ci`) holds `tool(i)` as tool.sh.
pub fn repository(dir: &Path, tool: impl Fn(usize) -> String) -> PathBuf {
    let repo = dir.join("repo");
    std::fs::create_dir(&repo).unwrap();
    git(&repo, &["init", "-q", "-b", "main"]);
    for i in 0..=40 {
        std::fs::write(repo.join("tool.sh"), tool(i)).unwrap();
        git(&repo, &["add", "tool.sh"]);
        git(&repo, &["commit", "-q", "-m", &format!("change {i}")]);
        git(&repo, &["tag", &format!("c{i}")]);
    }
    repo
}

/// The bisect's record as `bisect show --format json` gives it.
pub fn record(b: &Bench, name: &str) -> Json {
    let out = b.run(&["bisect", "show", name, "--format", "json"]);
    assert!(out.status.success(), "{}", stderr(&out));
    serde_json::from_str(&stdout(&out)).unwrap()
}

/// (subject, purpose, verdict) of every step.
pub fn steps(r: &Json) -> Vec<(String, String, String)> {
    let text = |v: &Json| v.as_str().unwrap_or("-").to_string();
    r["steps"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| (text(&s["revision"]["subject"]), text(&s["purpose"]), text(&s["verdict"])))
        .collect()
}

/// The candidates measured, in turn (a revision once however many rounds).
pub fn candidates(r: &Json) -> Vec<String> {
    let mut c: Vec<String> = steps(r).into_iter().filter(|s| s.1 == "candidate").map(|s| s.0).collect();
    c.dedup();
    c
}

/// Every step with its first series' figures, for the test's log (and
/// the note that reports it).
pub fn print_steps(r: &Json) {
    for s in r["steps"].as_array().unwrap() {
        let f = &s["figures"][0];
        eprintln!(
            "  {} {:<9} {:<9} mean {:.4} s (n {}) p vs good {:.2e} p vs bad {:.2e}",
            s["revision"]["subject"].as_str().unwrap(),
            s["purpose"].as_str().unwrap(),
            s["verdict"].as_str().unwrap_or("-"),
            f["mean"].as_f64().unwrap_or(f64::NAN),
            f["n"],
            f["vs_good"]["p"].as_f64().unwrap_or(f64::NAN),
            f["vs_bad"]["p"].as_f64().unwrap_or(f64::NAN),
        );
    }
}
