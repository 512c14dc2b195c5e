//! Playbooks: a list of plays, as in Ansible, each adding what a benchmark
//! needs (matrix, repetitions, setup / before_each / benchmark / teardown).
//!
//! [`parse`] checks every key against the grammar before any host is
//! touched; values stay as located YAML nodes until the planner renders them
//! for a host and a cell.

pub mod kernel;
pub mod keys;
mod parse;
pub mod reference;
pub mod reference_text;
pub mod schema;
mod tags;
pub mod tune;

use crate::diagnostic::{ConfigError, Loc};
use crate::yaml::Node;
use benchrig_wire::steps::FsProfile;

pub use parse::{load, parse};
pub use tags::TagFilter;

#[derive(Clone, Debug)]
pub struct Playbook {
    pub path: String,
    pub text: String,
    pub plays: Vec<Play>,
}

#[derive(Clone, Debug)]
pub struct Play {
    pub name: String,
    pub loc: Loc,
    /// A host pattern.
    pub hosts: String,
    /// Where `hosts:` is (the play's own location when it has none), so a
    /// bad pattern points there.
    pub hosts_loc: Loc,
    /// In order: a later var may use an earlier one. `vars_files` come
    /// after `vars`, so they win, as in Ansible.
    pub vars: Vec<(String, Node)>,
    /// Run the agent as `become_user` (root) on this play's hosts. A host's
    /// agent lives for the whole run, so it becomes for every play there.
    pub become_user: Option<String>,
    /// Hosts in batches (plain plays): each batch runs to its end before the next.
    pub serial: Vec<Batch>,
    /// Stop the play when more than this share of a batch's hosts failed.
    pub max_fail_percentage: Option<f64>,
    /// A failed cell on any host stops the play on every host (after the
    /// cells running now).
    pub any_errors_fatal: bool,
    /// Inherited by every step.
    pub tags: Vec<String>,
    pub cell_order: CellOrder,
    /// Some template reads `hostvars` (built only then: it is every host's variables).
    pub uses_hostvars: bool,
    /// Profile overrides and additions, already resolved against the built-ins.
    pub profiles: Vec<FsProfile>,
    pub matrix: Matrix,
    /// An integer or a template giving one.
    pub repeat: Option<Node>,
    /// Roles the play's hosts take (`server`, `client`); empty for a play
    /// that runs on each host on its own.
    pub roles: Vec<String>,
    pub assign: Assign,
    /// `cell`, `round`, `repetition`, or a template giving one (rendered per
    /// cell, like `repeat`); `None` is `cell`.
    pub fresh: Option<Node>,
    /// `tune:`, keys and literal values checked (`tune::check`); rendered
    /// per cell and host by `tune::render`.
    pub tune: Option<Node>,
    /// `kernel:`, keys and literal values checked (`kernel::check`);
    /// rendered per cell and host by `kernel::render`.
    pub kernel: Option<Node>,
    /// `true` (1 s), seconds between samples, `false`, or a template giving
    /// one (rendered per cell, like `fresh`); `None` is `true`.
    pub monitors: Option<Node>,
    pub setup: Vec<Step>,
    pub before_each: Vec<Step>,
    pub benchmark: Vec<Step>,
    pub teardown: Vec<Step>,
}

/// A `serial` entry: a number of hosts or a share of them.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Batch {
    Hosts(usize),
    Percent(f64),
}

/// The order a host runs a play's cells and repetitions in. Interleaved
/// (the default) runs repetition 1 of every cell, then repetition 2, ...,
/// so slow drift (a warming disk, a filling SSD, a neighbour's cron job)
/// spreads over all cells instead of passing for a difference between
/// them; shuffled does the same in a random order per round from a recorded
/// seed. Each visit has its own setup and teardown (unless `fresh: round`
/// shares one among a round's identical setups). Sequential runs each
/// cell's repetitions back to back on one setup, for a setup too costly to
/// repeat.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum CellOrder {
    Sequential,
    #[default]
    Interleaved,
    /// The seed, when the playbook fixes it; else the run picks and records one.
    Shuffled(Option<u64>),
}

#[derive(Clone, Debug, Default)]
pub struct Matrix {
    /// Axis name → a list, a scalar, or a template giving a list.
    pub axes: Vec<(String, Node)>,
    /// Partial points: a cell matching every key of one is dropped.
    pub exclude: Vec<Node>,
    /// Extra points added after the product.
    pub include: Vec<Node>,
}

/// How often a cell's setup (and teardown) runs: once per visit (`cell`,
/// the default), once per round for the visits of a round whose rendered
/// setup and teardown are identical (`round`: a filesystem made once for
/// every cell of the round that would make the same one), or before every
/// repetition (`repetition`: the measured step itself changes what setup
/// made, adding a device to a volume).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Fresh {
    #[default]
    Cell,
    Round,
    Repetition,
}

/// A `fresh:` value that is none of the policies.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("`fresh` is `cell` (a setup per visit), `round` (one per round for identical setups) or `repetition` (one before each), not `{0}`")]
pub struct UnknownFresh(pub String);

impl Fresh {
    pub const NAMES: [&'static str; 3] = ["cell", "round", "repetition"];

    pub fn as_str(self) -> &'static str {
        match self {
            Fresh::Cell => "cell",
            Fresh::Round => "round",
            Fresh::Repetition => "repetition",
        }
    }
}

impl Play {
    /// Every step of the play, in its phases' order.
    pub fn steps(&self) -> impl Iterator<Item = &Step> {
        self.setup.iter().chain(&self.before_each).chain(&self.benchmark).chain(&self.teardown)
    }

    /// Whether this play can run its cells with `fresh`: sharing a setup
    /// needs rounds (an interleaved or shuffled order) and cells that run
    /// on one host each (a role play's cells span hosts).
    pub fn fresh_fits(&self, fresh: Fresh) -> Result<(), ConfigError> {
        let Some(at) = self.fresh.as_ref().filter(|_| fresh == Fresh::Round) else { return Ok(()) };
        if self.cell_order == CellOrder::Sequential {
            return Err(at
                .error("`fresh: round` shares a setup among the cells of a round, and `cell_order: sequential` has no rounds")
                .with_hint("use `cell_order: interleaved` (the default) or `shuffled`, or `fresh: cell`"));
        }
        if !self.roles.is_empty() {
            return Err(at
                .error("`fresh: round` is for plays without roles: a role play's cells span several hosts")
                .with_hint("use `fresh: cell` (the default) here"));
        }
        Ok(())
    }
}

impl std::str::FromStr for Fresh {
    type Err = UnknownFresh;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s {
            "cell" => Ok(Fresh::Cell),
            "round" => Ok(Fresh::Round),
            "repetition" => Ok(Fresh::Repetition),
            other => Err(UnknownFresh(other.to_string())),
        }
    }
}

/// Which assignments of hosts to roles a play runs.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Assign {
    /// Every assignment: with two hosts and server/client, both directions.
    #[default]
    All,
    /// Only the first, in inventory order.
    First,
}

#[derive(Clone, Debug)]
pub struct Step {
    pub name: Option<String>,
    /// The role whose host runs this step (and where it is written); every
    /// host of the cell when absent.
    pub role: Option<String>,
    pub role_loc: Option<Loc>,
    pub action: String,
    pub args: Node,
    pub loc: Loc,
    /// Conditions (Jinja expressions without braces), all of which must hold.
    pub when: Vec<Node>,
    /// A list, or a template giving one: the step runs once per item.
    pub r#loop: Option<Node>,
    /// The name items take in templates (`loop_control.loop_var`, default `item`).
    pub loop_var: String,
    /// The step's own tags (the play's are added when selecting).
    pub tags: Vec<String>,
    pub ignore_errors: bool,
    /// Seconds; the step is cancelled and fails when it runs longer.
    pub timeout: Option<u64>,
}

impl Step {
    pub fn display_name(&self) -> String {
        self.name.clone().unwrap_or_else(|| self.action.clone())
    }
}
