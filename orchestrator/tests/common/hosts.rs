//! Which parts of the lab a test uses, so that tests on disjoint hosts run at
//! once: `ci/test.sh` runs `tests/lab/` with more threads than tests, so
//! libtest starts every test at once and this table decides which run.
//!
//! Every lab test begins with `let _lab = uses(&[..])` or `alone("why")`.
//! `uses` waits until no running test holds any of its hosts; `alone` waits
//! until nothing else runs, and holds everything, for a test that changes
//! the lab under the others (`lab.sh throttle`, a crash whose `up` races a
//! run) or whose figures another test's load would move (a rate within some
//! percent, a steady night that must not look regressed, a lease term).
//! The waiting tests start in the order they asked (libtest's, by name)
//! wherever their hosts are free, at most `RUNNING` at once: two cores are
//! shared by the orchestrators, the agents and the hosts' throttles. An
//! `alone` test starts once no other test runs or waits, so the lone ones
//! run at the end, one by one, and the rest are packed before them.
//!
//! Within one test process: each stage of ci/test.sh runs one test binary.
//! With `--test-threads=1` the tests simply run one by one.

use std::collections::BTreeSet;
use std::sync::{Condvar, Mutex, MutexGuard};
use std::time::{Duration, Instant};

/// A part of the lab a test can hold: one of the simulated hosts, or this
/// machine (the controller as a host: `ansible_connection: local` or no
/// inventory, its loop devices, its agent directory and ledger).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Lab {
    Old,
    Hdd,
    Soc,
    Fast1,
    Fast2,
    /// The hosts of `inventories/simlab-real.yml` and `simlab-bastion.yml`.
    Users,
    Jump,
    Behind,
    Tiny,
    ThisMachine,
}

pub use Lab::*;

/// The five hosts of `inventories/simlab.yml`.
pub const EVERY_HOST: [Lab; 5] = [Old, Hdd, Soc, Fast1, Fast2];

/// How many tests run at once at most.
pub const RUNNING: usize = 3;

/// How long the table gathers the tests libtest starts at once before it
/// lets the first one run (so the first to arrive is not taken alone while
/// the others are still being spawned).
const GATHER: Duration = Duration::from_millis(300);

/// What a test asked for.
#[derive(Clone, Debug, PartialEq)]
pub enum Claim {
    Parts(Vec<Lab>),
    Alone,
}

struct Table {
    opened: Option<Instant>,
    next_ticket: u64,
    waiting: Vec<(u64, Claim)>,
    running: Vec<Claim>,
}

/// The waiting tests (ticket, claim; in ticket order) that start now beside
/// `running`: each, in turn, where it can on top of those that run and
/// those before it that start; a lone test only once no other is left
/// running or waiting. Pure, so that every waiting thread comes to the same
/// answer.
pub fn starting(running: &[Claim], waiting: &[(u64, Claim)]) -> Vec<u64> {
    let mut busy = Busy::default();
    running.iter().for_each(|c| busy.take(c));
    let others_waiting = waiting.iter().any(|(_, c)| *c != Claim::Alone);
    let mut starts = vec![];
    for (t, c) in waiting {
        let free = match c {
            Claim::Parts(p) => !busy.alone && busy.count < RUNNING && p.iter().all(|x| !busy.held.contains(x)),
            Claim::Alone => busy.count == 0 && !others_waiting,
        };
        if free {
            busy.take(c);
            starts.push(*t);
        }
    }
    starts
}

/// What the running tests (and those `starting` lets start) hold.
#[derive(Default)]
struct Busy {
    held: BTreeSet<Lab>,
    count: usize,
    alone: bool,
}

impl Busy {
    fn take(&mut self, c: &Claim) {
        match c {
            Claim::Parts(p) => self.held.extend(p.iter().copied()),
            Claim::Alone => self.alone = true,
        }
        self.count += 1;
    }
}

static TABLE: Mutex<Table> = Mutex::new(Table { opened: None, next_ticket: 0, waiting: vec![], running: vec![] });
static CHANGED: Condvar = Condvar::new();

/// What a test holds until it ends (dropped on a panic too).
pub struct Held(Claim);

fn table() -> MutexGuard<'static, Table> {
    // A test that panicked while holding the lock left nothing half-done.
    TABLE.lock().unwrap_or_else(|e| e.into_inner())
}

/// Hold `parts` of the lab for the rest of the test.
pub fn uses(parts: &[Lab]) -> Held {
    assert!(!parts.is_empty(), "a lab test names what it uses (or is alone)");
    take(Claim::Parts(parts.to_vec()), &format!("{parts:?}"))
}

/// Hold the whole lab, with no other test running, for the rest of the test.
pub fn alone(why: &str) -> Held {
    take(Claim::Alone, &format!("the whole lab ({why})"))
}

fn take(claim: Claim, what: &str) -> Held {
    let since = Instant::now();
    let mut t = table();
    let opened = *t.opened.get_or_insert(since);
    let ticket = t.next_ticket;
    t.next_ticket += 1;
    t.waiting.push((ticket, claim.clone()));
    loop {
        let gathering = GATHER.saturating_sub(opened.elapsed());
        if gathering.is_zero() && starting(&t.running, &t.waiting).contains(&ticket) {
            break;
        }
        let timeout = if gathering.is_zero() { Duration::from_secs(3600) } else { gathering };
        t = CHANGED.wait_timeout(t, timeout).unwrap_or_else(|e| e.into_inner()).0;
    }
    t.waiting.retain(|(w, _)| *w != ticket);
    t.running.push(claim.clone());
    drop(t);
    // The others' view changed: one fewer waits.
    CHANGED.notify_all();
    let waited = since.elapsed().as_secs_f64();
    if waited >= 1.0 {
        eprintln!("lab: waited {waited:.1} s for {what}");
    }
    Held(claim)
}

impl Drop for Held {
    fn drop(&mut self) {
        let mut t = table();
        if let Some(i) = t.running.iter().position(|c| *c == self.0) {
            t.running.remove(i);
        }
        drop(t);
        CHANGED.notify_all();
    }
}
