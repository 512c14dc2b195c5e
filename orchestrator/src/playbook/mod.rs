//! Playbooks: a list of plays, as in Ansible, each adding what a benchmark
//! needs (matrix, repetitions, setup / before_each / benchmark / teardown).
//!
//! [`parse`] checks every key against the grammar before any host is
//! touched; values stay as located YAML nodes until the planner renders them
//! for a host and a cell.

mod parse;

use crate::yaml::{Loc, Node};
use benchrig_wire::steps::FsProfile;

pub use parse::{load, parse};

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
    /// In order: a later var may use an earlier one.
    pub vars: Vec<(String, Node)>,
    /// Profile overrides and additions, already resolved against the built-ins.
    pub profiles: Vec<FsProfile>,
    pub matrix: Matrix,
    /// An integer or a template giving one.
    pub repeat: Option<Node>,
    /// Roles the play's hosts take (`server`, `client`); empty for a play
    /// that runs on each host on its own.
    pub roles: Vec<String>,
    pub assign: Assign,
    pub fresh: Fresh,
    pub setup: Vec<Step>,
    pub before_each: Vec<Step>,
    pub benchmark: Vec<Step>,
    pub teardown: Vec<Step>,
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

/// How often a cell's setup runs: once (the default: a fresh filesystem per
/// cell), or before every repetition, when the measured step itself changes
/// what setup made (adding a device to a volume).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Fresh {
    #[default]
    Cell,
    Repetition,
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
    /// The role whose host runs this step; every host of the cell when absent.
    pub role: Option<String>,
    pub action: String,
    pub args: Node,
    pub loc: Loc,
}

impl Step {
    pub fn display_name(&self) -> String {
        self.name.clone().unwrap_or_else(|| self.action.clone())
    }
}
