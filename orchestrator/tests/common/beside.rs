//! The parts the lab's scripts add beside its netns hosts (`ci/vm.sh`'s
//! guests, `ci/arm.sh`'s aarch64 host): `-i` for the lab and the part's
//! inventory, a `benchrig` run over both, and a command on one of its hosts
//! over the same ssh the lab uses.

use super::{lab_inventory, repo, sh, Bench};
use std::path::Path;
use std::process::Output;

/// A part of the lab beside the netns hosts.
pub struct Part {
    /// Its inventory, from the repository's top (`inventories/simlab-vm.yml`).
    pub inventory: &'static str,
    /// A file that exists while it is up, and the command that brings it up.
    pub up_marker: &'static str,
    pub up: &'static str,
    /// The script whose `ssh HOST CMD` reaches its hosts (`ci/vm.sh`).
    pub script: &'static str,
}

/// The guests of `ci/vm.sh`.
pub const GUESTS: Part = Part {
    inventory: "inventories/simlab-vm.yml",
    up_marker: "/var/tmp/benchrig-vm/known_hosts",
    up: "`ci/vm.sh up` after `ci/lab.sh up`",
    script: "ci/vm.sh",
};

/// The aarch64 host of `ci/arm.sh`.
pub const ARM: Part = Part {
    inventory: "inventories/simlab-arm.yml",
    up_marker: "/var/tmp/benchrig-arm/known_hosts",
    up: "`ci/arm.sh up` after `ci/lab.sh up`",
    script: "ci/arm.sh",
};

impl Part {
    /// `-i` for the lab and this part.
    pub fn inventories(&self) -> Vec<String> {
        let lab = lab_inventory();
        assert!(Path::new(self.up_marker).exists(), "not up: run {} (ci/test.sh does both)", self.up);
        let mine = repo().join(self.inventory);
        ["-i", lab.to_str().unwrap(), "-i", mine.to_str().unwrap()].map(String::from).to_vec()
    }

    /// `benchrig HEAD… -i LAB -i PART TAIL…`.
    pub fn run(&self, b: &Bench, head: &[&str], tail: &[&str]) -> Output {
        let inv = self.inventories();
        let args: Vec<&str> =
            head.iter().copied().chain(inv.iter().map(String::as_str)).chain(tail.iter().copied()).collect();
        b.run(&args)
    }

    /// A command's output on one of its hosts.
    pub fn on(&self, host: &str, cmd: &str) -> String {
        sh(&format!("{} ssh {host} '{cmd}'", repo().join(self.script).display()))
    }
}
