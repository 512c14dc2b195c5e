//! What a run, a host and a cell came to: the words the store keeps and
//! every report shows, as types, so that no decision matches a string.
//! The words are the schema's: stored runs read back the same, and a word
//! the store does not know is an error (`import` refuses one). So a new
//! word is a schema change: add it with a migration, and an older benchrig
//! refuses the database as "written by a newer benchrig" instead of
//! misreading it.

use serde::{Deserialize, Serialize};
use strum::{Display, EnumString, IntoStaticStr, VariantNames};

/// A cell (one parameter point on its hosts).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Display, EnumString, IntoStaticStr, Serialize, Deserialize)]
#[strum(serialize_all = "lowercase")]
#[serde(rename_all = "lowercase")]
pub enum CellStatus {
    /// Planned and stored; no visit has started it.
    Pending,
    Running,
    Ok,
    /// A step failed (the reason says which and why).
    Failed,
    /// Its host was lost, or never reached: no result, and no verdict on
    /// the benchmark (a dead machine is not a regression).
    Unreachable,
    /// The host cannot make this cell (a filesystem its kernel lacks, a
    /// device too small): known before or while it ran, never a failure.
    Unsupported,
    /// Not run: interrupted, or the playbook was stopped (the reason says why).
    Skipped,
    /// Its kernel did not boot on its host (a panic, a hang, no SSH, or the
    /// host came up on another kernel): no result, and the host was brought
    /// back on its own kernel. The cell's `kernel` info holds the console.
    #[strum(serialize = "not_booted")]
    #[serde(rename = "not_booted")]
    NotBooted,
}

/// A host within a run.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Display, EnumString, IntoStaticStr, Serialize, Deserialize)]
#[strum(serialize_all = "lowercase")]
#[serde(rename_all = "lowercase")]
pub enum HostStatus {
    /// Selected; not connected yet.
    Pending,
    Running,
    Ok,
    /// Reached, but a cell of it failed, or its session failed to open.
    Failed,
    /// Not reachable (or lost and not back).
    Unreachable,
    /// Never connected: the run was interrupted first.
    Skipped,
    /// Connected, and the run was interrupted while it ran.
    Interrupted,
}

/// A whole run, as `benchrig runs` lists it.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, Hash, Display, EnumString, IntoStaticStr, VariantNames, Serialize, Deserialize,
)]
#[strum(serialize_all = "lowercase")]
#[serde(rename_all = "lowercase")]
pub enum RunStatus {
    Running,
    Ok,
    Failed,
    Unreachable,
    Interrupted,
}

/// A bisect (`benchrig bisect`), as its record says.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Display, EnumString, IntoStaticStr, Serialize, Deserialize)]
#[strum(serialize_all = "snake_case")]
#[serde(rename_all = "snake_case")]
pub enum BisectStatus {
    /// Going on, or stopped part way (`--resume` goes on).
    Running,
    /// The first bad revision, confirmed (bad again, its parent good again).
    Found,
    /// The first bad revision is one of several (the others skipped or undecided).
    Ambiguous,
    /// A first bad revision that did not measure bad, or whose parent did
    /// not measure good, a second time.
    Unconfirmed,
    /// The bad endpoint is not worse than the good one.
    NoRegression,
    /// An endpoint failed to build or to measure.
    Failed,
}

/// What a bisect made of one revision.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Display, EnumString, IntoStaticStr, Serialize, Deserialize)]
#[strum(serialize_all = "lowercase")]
#[serde(rename_all = "lowercase")]
pub enum BisectVerdict {
    Good,
    Bad,
    /// Its build failed: not measured.
    Skip,
    /// Measured up to the most repetitions allowed, and still neither.
    Undecided,
}

/// Why a bisect measured a revision.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Display, EnumString, IntoStaticStr, Serialize, Deserialize)]
#[strum(serialize_all = "lowercase")]
#[serde(rename_all = "lowercase")]
pub enum BisectPurpose {
    /// The good or the bad endpoint, measured first as the reference.
    Endpoint,
    /// A revision between them.
    Candidate,
    /// The first bad revision or its parent measured again at the end, and
    /// the endpoints too when those two do not come out as before.
    Confirm,
}

macro_rules! as_str {
    ($($t:ty),*) => {$(
        impl $t {
            /// The stored word.
            pub fn as_str(self) -> &'static str {
                self.into()
            }

            /// The status of a report model's `"status"` value; none for
            /// anything else (a model is read, never trusted).
            pub fn of_json(v: &serde_json::Value) -> Option<Self> {
                v.as_str()?.parse().ok()
            }
        }
    )*};
}
as_str!(CellStatus, HostStatus, RunStatus, BisectStatus, BisectVerdict, BisectPurpose);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_words_are_the_schemas() {
        let cells = [
            (CellStatus::Pending, "pending"),
            (CellStatus::Running, "running"),
            (CellStatus::Ok, "ok"),
            (CellStatus::Failed, "failed"),
            (CellStatus::Unreachable, "unreachable"),
            (CellStatus::Unsupported, "unsupported"),
            (CellStatus::Skipped, "skipped"),
            (CellStatus::NotBooted, "not_booted"),
        ];
        for (s, word) in cells {
            assert_eq!(s.as_str(), word);
            assert_eq!(word.parse::<CellStatus>().unwrap(), s);
            assert_eq!(serde_json::to_value(s).unwrap(), serde_json::json!(word));
            assert_eq!(CellStatus::of_json(&serde_json::json!(word)), Some(s));
        }
        assert_eq!(HostStatus::Unreachable.to_string(), "unreachable");
        assert_eq!(RunStatus::Interrupted.as_str(), "interrupted");
        assert!("Ok".parse::<CellStatus>().is_err());
        assert_eq!(CellStatus::of_json(&serde_json::json!(null)), None);
        assert_eq!(BisectStatus::NoRegression.as_str(), "no_regression");
        assert_eq!("undecided".parse::<BisectVerdict>().unwrap(), BisectVerdict::Undecided);
    }
}
