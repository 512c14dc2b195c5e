//! The revisions a bisect goes through, in order from the good one to the
//! bad one: a git repository's history between them on the orchestrator's
//! machine (first parents only, as `git bisect --first-parent`: a merge is
//! one step, and the order is a line), or the versions listed in a file
//! (a package's, a mkfs's: one a line, oldest first, `#` comments).

use std::path::{Path, PathBuf};
use std::process::Command;

/// One revision: a commit (its id, subject line and author) or a version.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Revision {
    pub id: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub subject: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub author: Option<String>,
}

impl Revision {
    fn version(id: &str) -> Revision {
        Revision { id: id.to_string(), subject: None, author: None }
    }

    /// A commit's first 12 hex digits, a version as it is.
    pub fn short(&self) -> &str {
        let hex = self.id.len() == 40 && self.id.bytes().all(|b| b.is_ascii_hexdigit());
        if hex {
            &self.id[..12]
        } else {
            &self.id
        }
    }
}

#[derive(Debug, thiserror::Error)]
pub enum RevisionsError {
    #[error("{repo}: `git {args}` failed: {why}")]
    Git { repo: PathBuf, args: String, why: String },
    #[error("{repo}: {good} is not on the first-parent line of {bad} (bisect goes along first parents: give a good revision {bad} descends from through first parents)")]
    NotOnLine { repo: PathBuf, good: String, bad: String },
    #[error("{file}: cannot read it: {why}")]
    Read { file: PathBuf, why: String },
    #[error("{file}:{line}: version {version} is listed twice (first at line {first})")]
    Twice { file: PathBuf, line: usize, first: usize, version: String },
    #[error("{file}: no version {version} is listed (--{which})")]
    NotListed { file: PathBuf, version: String, which: &'static str },
    #[error("{file}: the good version {good} (line {good_line}) must come before the bad one {bad} (line {bad_line}): the list is oldest first")]
    Order { file: PathBuf, good: String, good_line: usize, bad: String, bad_line: usize },
}

/// `repo`'s first-parent history from `good` to `bad`, both included.
pub fn from_git(repo: &Path, good: &str, bad: &str) -> Result<Vec<Revision>, RevisionsError> {
    let (good, bad) = (resolve(repo, good)?, resolve(repo, bad)?);
    // Oldest first: the commits on bad's first-parent line that good does
    // not reach; the first of them must have good as its first parent.
    let after = commits(repo, &["--first-parent", "--reverse", &bad, &format!("^{good}")])?;
    let first_parent = match after.first() {
        Some(first) => Some(resolve(repo, &format!("{}^", first.id))?),
        None => None,
    };
    if first_parent.as_deref() != Some(good.as_str()) {
        return Err(RevisionsError::NotOnLine { repo: repo.into(), good, bad });
    }
    let mut line = commits(repo, &["-1", &good])?;
    line.extend(after);
    Ok(line)
}

/// `git log`'s commits with their subjects and authors.
fn commits(repo: &Path, args: &[&str]) -> Result<Vec<Revision>, RevisionsError> {
    let mut all = vec!["log", "--format=%H%x1f%s%x1f%an <%ae>"];
    all.extend(args);
    let log = git(repo, &all)?;
    Ok(log
        .lines()
        // A line that is no commit (what a user's git config adds) is left out.
        .filter(|l| l.len() > 40 && l.as_bytes()[40] == 0x1f && l[..40].bytes().all(|b| b.is_ascii_hexdigit()))
        .map(|l| {
            let mut f = l.splitn(3, '\u{1f}');
            let id = f.next().unwrap_or_default().to_string();
            Revision { id, subject: f.next().map(str::to_string), author: f.next().map(str::to_string) }
        })
        .collect())
}

/// A revision as a full commit id.
fn resolve(repo: &Path, rev: &str) -> Result<String, RevisionsError> {
    if rev.starts_with('-') {
        let why = "a revision does not start with '-'".to_string();
        return Err(RevisionsError::Git { repo: repo.into(), args: format!("rev-parse {rev}"), why });
    }
    Ok(git(repo, &["rev-parse", "--verify", "--quiet", &format!("{rev}^{{commit}}")])?.trim().to_string())
}

fn git(repo: &Path, args: &[&str]) -> Result<String, RevisionsError> {
    let failed = |why: String| RevisionsError::Git { repo: repo.into(), args: args.join(" "), why };
    // The user's config must not change what is read (signatures shown in
    // the log, a pager, colour).
    let out = Command::new("git")
        .arg("-C")
        .arg(repo)
        .args(["-c", "log.showSignature=false", "-c", "color.ui=false", "--no-pager"])
        .args(args)
        .output()
        .map_err(|e| failed(e.to_string()))?;
    if !out.status.success() {
        let why = String::from_utf8_lossy(&out.stderr).trim().to_string();
        return Err(failed(if why.is_empty() { "no such commit".into() } else { why }));
    }
    Ok(String::from_utf8_lossy(&out.stdout).into_owned())
}

/// The versions listed in `file` from `good` to `bad`, both included.
pub fn from_versions(file: &Path, good: &str, bad: &str) -> Result<Vec<Revision>, RevisionsError> {
    let text =
        std::fs::read_to_string(file).map_err(|e| RevisionsError::Read { file: file.into(), why: e.to_string() })?;
    parse_versions(&text, file, good, bad)
}

fn parse_versions(text: &str, file: &Path, good: &str, bad: &str) -> Result<Vec<Revision>, RevisionsError> {
    // (version, line number)
    let mut listed: Vec<(&str, usize)> = Vec::new();
    for (i, raw) in text.lines().enumerate() {
        let version = raw.split('#').next().unwrap_or_default().trim();
        if version.is_empty() {
            continue;
        }
        if let Some(&(_, first)) = listed.iter().find(|(v, _)| *v == version) {
            let version = version.to_string();
            return Err(RevisionsError::Twice { file: file.into(), line: i + 1, first, version });
        }
        listed.push((version, i + 1));
    }
    let find = |version: &str, which| {
        let at = listed.iter().position(|(v, _)| *v == version);
        at.ok_or_else(|| RevisionsError::NotListed { file: file.into(), version: version.to_string(), which })
    };
    let (g, b) = (find(good, "good")?, find(bad, "bad")?);
    if g >= b {
        let (good_line, bad_line) = (listed[g].1, listed[b].1);
        let (good, bad) = (good.to_string(), bad.to_string());
        return Err(RevisionsError::Order { file: file.into(), good, good_line, bad, bad_line });
    }
    Ok(listed[g..=b].iter().map(|(v, _)| Revision::version(v)).collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_versions_file_is_read_oldest_first_between_the_two() {
        let f = Path::new("versions.txt");
        let text = "# mkfs versions\n1.46.5\n1.47.0  # the lab's\n\n1.47.1\n1.47.2\n";
        let ids = |r: Vec<Revision>| r.into_iter().map(|r| r.id).collect::<Vec<_>>();
        assert_eq!(ids(parse_versions(text, f, "1.47.0", "1.47.2").unwrap()), ["1.47.0", "1.47.1", "1.47.2"]);
        let e = parse_versions(text, f, "1.47.2", "1.46.5").unwrap_err().to_string();
        assert_eq!(
            e,
            "versions.txt: the good version 1.47.2 (line 6) must come before the bad one 1.46.5 (line 2): the list is oldest first"
        );
        let e = parse_versions(text, f, "1.40", "1.47.2").unwrap_err().to_string();
        assert_eq!(e, "versions.txt: no version 1.40 is listed (--good)");
        let e = parse_versions("1.0\n2.0\n1.0\n", f, "1.0", "2.0").unwrap_err().to_string();
        assert_eq!(e, "versions.txt:3: version 1.0 is listed twice (first at line 1)");
    }

    #[test]
    fn a_repositorys_first_parent_line_from_good_to_bad_with_subjects() {
        let dir = tempfile::tempdir().unwrap();
        let repo = dir.path();
        let run = |args: &[&str]| {
            let out = Command::new("git")
                .arg("-C")
                .arg(repo)
                .args(["-c", "user.name=A U Thor", "-c", "user.email=a@example.org"])
                .args(args)
                .output()
                .unwrap();
            assert!(out.status.success(), "git {args:?}: {}", String::from_utf8_lossy(&out.stderr));
        };
        run(&["init", "-q", "-b", "main"]);
        for i in 1..=5 {
            run(&["commit", "-q", "--allow-empty", "-m", &format!("change {i}")]);
            run(&["tag", &format!("v{i}")]);
        }
        let revs = from_git(repo, "v2", "v4").unwrap();
        let subjects: Vec<_> = revs.iter().map(|r| r.subject.clone().unwrap()).collect();
        assert_eq!(subjects, ["change 2", "change 3", "change 4"]);
        assert_eq!(revs[1].author.as_deref(), Some("A U Thor <a@example.org>"));
        assert_eq!(revs[0].id.len(), 40);
        assert!(matches!(from_git(repo, "v4", "v2"), Err(RevisionsError::NotOnLine { .. })));
        let e = from_git(repo, "nope", "v4").unwrap_err().to_string();
        assert!(e.ends_with("`git rev-parse --verify --quiet nope^{commit}` failed: no such commit"), "{e}");
        assert!(matches!(from_git(repo, "v3", "v3"), Err(RevisionsError::NotOnLine { .. })));
        let e = from_git(repo, "--all", "v4").unwrap_err().to_string();
        assert!(e.contains("a revision does not start with '-'"), "{e}");
        // Only what good does not reach: v1 is not listed.
        assert_eq!(from_git(repo, "v1", "v2").unwrap().len(), 2);
    }
}
