//! What every task of a run shares: the checked playbook and inventory, the
//! store, run id and attempt, the agent builds, the cancel signal, the
//! `--forks` bound, every host's slot (its session, whether it is down,
//! whether a cell failed on it), and why the playbook stopped, if it did.

use super::check::Checked;
use super::policy::Down;
use crate::inventory::Vars;
use crate::progress::Progress;
use crate::session::agent_client::Closer;
use crate::session::deploy::AgentBuilds;
use crate::session::host::HostSession;
use crate::store::Store;
use benchrig_wire::facts::Facts;
use indexmap::IndexMap;
use std::collections::{BTreeMap, HashMap};
use tokio::sync::{watch, Mutex, Semaphore};

pub struct RunContext {
    pub checked: Checked,
    pub extra: Vars,
    pub store: Store,
    pub run: i64,
    pub builds: AgentBuilds,
    pub progress: Progress,
    pub cancel: watch::Receiver<bool>,
    pub forks: Semaphore,
    /// Every host's session, in inventory order (the order role plays lock them).
    pub slots: IndexMap<String, Mutex<Slot>>,
    /// Why the playbook stopped early (`any_errors_fatal`, `max_fail_percentage`).
    pub halt: std::sync::Mutex<Option<String>>,
    /// Which attempt at the run this is (1, then one per `--resume`).
    pub attempt: u32,
    /// Stored failed cells run again (`--retry-failed`).
    pub retry_failed: bool,
    /// Hosts whose lease the run lost, with why (`leases::Held::lost`).
    pub lost_leases: watch::Receiver<BTreeMap<String, String>>,
    /// What ends each open session from outside it, by host: a lost lease
    /// stops the step running there at once.
    pub closers: std::sync::Mutex<HashMap<String, Closer>>,
    /// Each cell's time from its newest stored run: the progress line's ETA.
    pub estimates: crate::estimate::Estimates,
}

impl RunContext {
    pub fn interrupted(&self) -> bool {
        *self.cancel.borrow()
    }

    pub fn halted(&self) -> Option<String> {
        self.halt.lock().unwrap_or_else(|e| e.into_inner()).clone()
    }

    /// Why the run may no longer touch `host`: its lease is gone.
    pub fn lease_lost(&self, host: &str) -> Option<String> {
        self.lost_leases.borrow().get(host).cloned()
    }

    /// Keep what ends `host`'s new session, and end it at once if the
    /// host's lease is gone already.
    pub fn opened(&self, host: &str, session: &HostSession) {
        let closer = session.agent.closer();
        if let Some(why) = self.lease_lost(host) {
            closer.close(why);
        }
        self.closers.lock().unwrap_or_else(|e| e.into_inner()).insert(host.to_string(), closer);
    }

    /// End the session of every host in `lost` (new ones: a host is
    /// closed once).
    pub fn close_lost(&self, lost: &BTreeMap<String, String>, closed: &mut std::collections::BTreeSet<String>) {
        for (host, why) in lost {
            if closed.insert(host.clone()) {
                self.progress.line(host, why.clone());
                if let Some(c) = self.closers.lock().unwrap_or_else(|e| e.into_inner()).get(host) {
                    c.close(why.clone());
                }
            }
        }
    }

    /// Stop the playbook after the cells running now; the first reason stays.
    pub fn halt(&self, why: String) {
        let mut h = self.halt.lock().unwrap_or_else(|e| e.into_inner());
        if h.is_none() {
            self.progress.note(format!("stopping: {why}"));
            *h = Some(why);
        }
    }
}

/// One host across the whole run.
#[derive(Default)]
pub struct Slot {
    pub session: Option<HostSession>,
    /// Why the host is out of the run, once it is.
    pub down: Option<Down>,
    /// Some cell or play failed on it.
    pub failed: bool,
    /// Resuming, it has nothing left to run: not connected, left as stored.
    pub idle: bool,
    /// It was lost during the run, back at once or not: the end of the run
    /// runs the cells that lost (reconnecting first if it is still down, `recovery`).
    pub lost: bool,
    /// The facts the run stored for it, for a host not connected in this
    /// attempt (an idle host still plans its part of a role play).
    pub stored_facts: Option<Facts>,
    /// Its first connection was attempted (by the run's start, or by its
    /// first play when that came first).
    pub connect_tried: bool,
}

impl Slot {
    /// Its facts: from its session, else as the run stored them.
    pub fn facts(&self) -> Option<&Facts> {
        self.session.as_ref().map(|s| &s.facts).or(self.stored_facts.as_ref())
    }
}
