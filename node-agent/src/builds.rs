//! The other agent builds in the agent's own dir. Each benchrig version
//! uploads its agent under its sha256 (`benchrig-agent-<sha256>`, with an
//! `.ok` stamp once verified) and none would ever be removed: a lab that
//! upgrades benchrig every few weeks gathers megabytes per host forever.
//! So an agent marks itself used (touches its stamp) and removes the
//! builds nobody started for [`UNUSED_FOR`]. Only a verified start marks
//! (an unverified build has no stamp to vouch for it): on a host with no
//! tool to hash it, a build goes [`UNUSED_FOR`] after its upload. A build removed while an
//! older benchrig still uses it is only uploaded again by that benchrig.
//!
//! Only regular files whose whole name is a build's (or its stamp's) are
//! touched, in the dir the running agent came from, which the start
//! script has found private to this user.

use std::path::Path;
use std::time::{Duration, SystemTime};

/// How long a build nobody started stays: longer than any gap between
/// nightly runs or a release cycle of a lab's benchrig.
pub const UNUSED_FOR: Duration = Duration::from_secs(30 * 24 * 3600);

const PREFIX: &str = "benchrig-agent-";

/// The sha256 a build's file name carries: `benchrig-agent-<64 hex digits>`.
pub fn sha_of(name: &str) -> Option<&str> {
    let sha = name.strip_prefix(PREFIX)?;
    (sha.len() == 64 && sha.bytes().all(|b| b.is_ascii_hexdigit())).then_some(sha)
}

/// Mark the running build `own` used now when the start script found it
/// `verified` (by touching its stamp: the stamp says "verified, and not
/// written since", so only a verified build's may move; touching the
/// build itself would make its stamp stale), then remove
/// every other build in `dir`, with its stamp, that was neither uploaded
/// nor used within `unused_for` of `now`. Returns what it removed; a file
/// it cannot read or remove is left as it is (best effort: this is
/// housekeeping, never a reason to fail a session).
pub fn tidy(dir: &Path, own: &str, verified: bool, now: SystemTime, unused_for: Duration) -> Vec<String> {
    let own_stamp = dir.join(format!("{PREFIX}{own}.ok"));
    if verified && own_stamp.is_file() {
        let _ = std::fs::File::options().append(true).open(&own_stamp).and_then(|f| f.set_modified(now));
    }
    let Ok(entries) = std::fs::read_dir(dir) else { return vec![] };
    // Each other build's files (regular ones only) and its newest time:
    // its upload or its stamp's last use.
    let mut builds: std::collections::BTreeMap<String, (SystemTime, Vec<String>)> = Default::default();
    for e in entries.flatten() {
        let Ok(name) = e.file_name().into_string() else { continue };
        let Some(sha) = sha_of(name.strip_suffix(".ok").unwrap_or(&name)) else { continue };
        // `DirEntry::metadata` does not follow a symlink.
        let Ok(meta) = e.metadata() else { continue };
        let Ok(modified) = meta.modified() else { continue };
        if sha == own || !meta.file_type().is_file() {
            continue;
        }
        let (newest, files) = builds.entry(sha.to_string()).or_insert((modified, vec![]));
        *newest = (*newest).max(modified);
        files.push(name);
    }
    let mut removed = Vec::new();
    for (newest, files) in builds.into_values() {
        if now.duration_since(newest).is_ok_and(|age| age > unused_for) {
            removed.extend(files.into_iter().filter(|f| std::fs::remove_file(dir.join(f)).is_ok()));
        }
    }
    removed.sort();
    removed
}

#[cfg(test)]
mod tests {
    use super::*;

    const DAY: Duration = Duration::from_secs(24 * 3600);

    fn sha(c: char) -> String {
        std::iter::repeat_n(c, 64).collect()
    }

    fn file(dir: &Path, name: &str, age: Duration, now: SystemTime) {
        let p = dir.join(name);
        std::fs::write(&p, b"x").unwrap();
        std::fs::File::options().append(true).open(&p).unwrap().set_modified(now - age).unwrap();
    }

    fn names(dir: &Path) -> Vec<String> {
        let mut n: Vec<String> =
            std::fs::read_dir(dir).unwrap().map(|e| e.unwrap().file_name().into_string().unwrap()).collect();
        n.sort();
        n
    }

    #[test]
    fn builds_unused_for_the_term_go_with_their_stamps_and_nothing_else_does() {
        let d = tempfile::tempdir().unwrap();
        let now = SystemTime::now();
        let (own, old, used, fresh) = (sha('a'), sha('b'), sha('c'), sha('d'));
        // The running build, uploaded long ago: it stays, and is marked used.
        file(d.path(), &format!("{PREFIX}{own}"), 90 * DAY, now);
        file(d.path(), &format!("{PREFIX}{own}.ok"), 89 * DAY, now);
        // Unused for 60 days: goes, stamp and all.
        file(d.path(), &format!("{PREFIX}{old}"), 61 * DAY, now);
        file(d.path(), &format!("{PREFIX}{old}.ok"), 60 * DAY, now);
        // Uploaded long ago, its stamp touched by a start last week: stays.
        file(d.path(), &format!("{PREFIX}{used}"), 200 * DAY, now);
        file(d.path(), &format!("{PREFIX}{used}.ok"), 7 * DAY, now);
        // Uploaded yesterday, never verified (no stamp): stays.
        file(d.path(), &format!("{PREFIX}{fresh}"), DAY, now);
        // Not builds, however old: a name that only starts like one, the
        // tool-version cache, an upload's temporary file, a directory.
        file(d.path(), &format!("{PREFIX}{}", &old[..63]), 400 * DAY, now);
        file(d.path(), "tool-versions.json", 400 * DAY, now);
        file(d.path(), &format!("{PREFIX}{old}.tmp.123"), 400 * DAY, now);
        std::fs::create_dir(d.path().join(format!("{PREFIX}{}", sha('e')))).unwrap();

        // Started unverified (a stale stamp, no tool to hash): its stamp stays.
        assert!(tidy(d.path(), &own, false, now, UNUSED_FOR).len() == 2);
        let unmoved = std::fs::metadata(d.path().join(format!("{PREFIX}{own}.ok"))).unwrap().modified().unwrap();
        assert!(unmoved < now - 88 * DAY);
        file(d.path(), &format!("{PREFIX}{old}"), 61 * DAY, now);
        file(d.path(), &format!("{PREFIX}{old}.ok"), 60 * DAY, now);
        let removed = tidy(d.path(), &own, true, now, UNUSED_FOR);
        assert_eq!(removed, [format!("{PREFIX}{old}"), format!("{PREFIX}{old}.ok")]);
        let left = names(d.path());
        assert_eq!(left.len(), 9, "{left:?}");
        assert!(!left.iter().any(|n| n.contains(&old) && !n.ends_with(".tmp.123")), "{left:?}");
        let stamp = std::fs::metadata(d.path().join(format!("{PREFIX}{own}.ok"))).unwrap().modified().unwrap();
        assert!(stamp >= now - Duration::from_secs(1), "the running build's stamp is touched");
        // So a month on, another build's tidy finds it used a month ago, not 89 days.
        assert!(tidy(d.path(), &used, true, now + 29 * DAY, UNUSED_FOR).is_empty());
    }

    #[test]
    fn a_symlink_named_like_a_build_is_left_alone() {
        let d = tempfile::tempdir().unwrap();
        let now = SystemTime::now();
        let target = d.path().join("elsewhere");
        file(d.path(), "elsewhere", 400 * DAY, now);
        std::os::unix::fs::symlink(&target, d.path().join(format!("{PREFIX}{}", sha('b')))).unwrap();
        assert!(tidy(d.path(), &sha('a'), true, now, UNUSED_FOR).is_empty());
        assert_eq!(names(d.path()).len(), 2);
    }
}
