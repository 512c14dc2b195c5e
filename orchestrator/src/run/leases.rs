//! The run's hold on its hosts: taken in the store before any host is
//! touched (waiting up to `--wait-for-hosts` for another run to let go),
//! renewed by a heartbeat while the run lasts, released when it ends. A run
//! killed outright leaves its leases to lapse after one term. A host whose
//! lease the heartbeat finds released or taken over is reported on
//! [`Held::lost`]: the run stops touching it.

use crate::progress::Progress;
use crate::store::{Holder, HostsBusy, Store, StoreError, Taken};
use std::collections::BTreeMap;
use std::time::{Duration, Instant};
use tokio::sync::watch;

/// How long a lease holds without a heartbeat by default (`--lease-term`):
/// how long a killed orchestrator keeps its hosts from the next run.
pub const DEFAULT_TERM: Duration = Duration::from_secs(120);

/// How often the heartbeat renews the run's leases: six times a term, so a
/// slow database or a busy machine does not let one lapse.
fn heartbeat(term: Duration) -> Duration {
    (term / 6).max(Duration::from_millis(500))
}

/// How often a waiting run asks again.
const POLL: Duration = Duration::from_secs(2);

/// The run's leases: held while this lives, released when it is dropped
/// (however the run ends, short of the process being killed).
pub struct Held {
    store: Store,
    pub holder: Holder,
    /// The hosts asked for (quarantined ones among them).
    pub hosts: Vec<String>,
    /// Hosts set aside by hand, with why: the run leaves them out.
    pub quarantined: Vec<(String, String)>,
    term: Duration,
    heartbeat: tokio::task::JoinHandle<()>,
    /// Hosts whose lease the heartbeat found gone, with why.
    pub lost: watch::Receiver<BTreeMap<String, String>>,
}

/// Where the hold is taken.
pub struct Ask<'a> {
    pub hosts: &'a [String],
    /// How long to wait for other runs (`--wait-for-hosts`).
    pub wait: Duration,
    /// How long each lease holds without a heartbeat (`--lease-term`).
    pub term: Duration,
    /// What is being resumed: its own leases, left by an orchestrator
    /// that was killed, are waited out whatever `wait` says.
    pub resuming: Option<Resumed<'a>>,
}

/// A run resumed, or a bisect (whose leases name the run it was in).
#[derive(Clone, Copy)]
pub struct Resumed<'a> {
    /// As people read it: "run 7", "bisect 3".
    pub what: &'a str,
    /// Its runs: a lease held for one of them is its own.
    pub runs: &'a [i64],
}

/// Take `ask.hosts` for this process, waiting up to `ask.wait` while
/// another run holds any of them (all or none: a run never holds half its
/// hosts while it waits for the rest, so two waiting runs cannot block each
/// other). Resuming, the run's own leases are waited for until they lapse;
/// renewed meanwhile, their orchestrator is alive and the resume gives up.
pub async fn hold(store: &Store, ask: &Ask<'_>, progress: Progress) -> anyhow::Result<Held> {
    let holder = Holder::this_process();
    let mut deadline = Instant::now() + ask.wait;
    let mut said = false;
    let mut own_lapse: Option<Instant> = None;
    let quarantined = loop {
        match store.take_leases(ask.hosts, &holder, ask.term)? {
            Taken::Held { quarantined } => break quarantined,
            Taken::Busy(busy) => {
                // The database's clock is asked only for a resume's own leases.
                if let (None, Some(resumed)) = (own_lapse, ask.resuming) {
                    if let Some(lapse) = own_leases_lapse(&busy, resumed.runs, store.unix_now()?) {
                        let at = Instant::now() + lapse + POLL;
                        progress.note(format!(
                            "{}'s own leases are still held ({}): its orchestrator was killed, or is still running; waiting {} s for them to lapse",
                            resumed.what,
                            HostsBusy(busy.clone()).holders(),
                            lapse.as_secs()
                        ));
                        (own_lapse, said) = (Some(at), true);
                        deadline = deadline.max(at);
                    }
                }
                if Instant::now() >= deadline {
                    return Err(HostsBusy(busy).into());
                }
                if !said {
                    progress.note(format!(
                        "waiting up to {}: {}",
                        humantime::format_duration(ask.wait),
                        HostsBusy(busy).holders()
                    ));
                    said = true;
                }
                tokio::time::sleep(POLL.min(deadline.saturating_duration_since(Instant::now()))).await;
            }
        }
    };
    let held: Vec<String> = ask.hosts.iter().filter(|h| !quarantined.iter().any(|(q, _)| q == *h)).cloned().collect();
    let (lost_tx, lost) = watch::channel(BTreeMap::new());
    let heartbeat = tokio::spawn(renew(store.clone(), holder.clone(), held, ask.term, progress, lost_tx));
    let hosts = ask.hosts.to_vec();
    Ok(Held { store: store.clone(), holder, hosts, quarantined, term: ask.term, heartbeat, lost })
}

/// When every lease in the way is the resumed run's own: how long until
/// the last of them lapses, unless renewed (`now`: the database's time).
fn own_leases_lapse(busy: &[crate::store::Lease], runs: &[i64], now: i64) -> Option<Duration> {
    if busy.is_empty() || busy.iter().any(|l| !l.run.is_some_and(|r| runs.contains(&r))) {
        return None;
    }
    let last = busy.iter().filter_map(|l| l.expires).max()?;
    Some(Duration::from_secs((last - now).max(0) as u64))
}

async fn renew(
    store: Store,
    holder: Holder,
    held: Vec<String>,
    term: Duration,
    progress: Progress,
    lost: watch::Sender<BTreeMap<String, String>>,
) {
    loop {
        tokio::time::sleep(heartbeat(term)).await;
        let still = match store.renew_leases(&holder, term) {
            Ok(still) => still,
            Err(e) => {
                progress.note(format!("renewing the run's host leases: {e}"));
                continue;
            }
        };
        let gone: Vec<&String> =
            held.iter().filter(|h| !still.contains(h) && !lost.borrow().contains_key(h.as_str())).collect();
        if gone.is_empty() {
            continue;
        }
        let leases = store.leases().unwrap_or_default();
        lost.send_modify(|lost| {
            for h in gone {
                let now = leases.iter().find(|l| &l.host == h && l.holder.is_some());
                lost.insert(h.clone(), lease_lost(now));
            }
        });
    }
}

/// Why a host's lease is no longer the run's, from what holds it now.
fn lease_lost(now: Option<&crate::store::Lease>) -> String {
    match now {
        Some(l) => format!("its lease was taken over by {}; this run no longer touches it", l.describe_holder()),
        None => "its lease was released (`benchrig lab release`) or lapsed; this run no longer touches it".into(),
    }
}

impl Held {
    /// Name the run the leases are for, once it is stored.
    pub fn for_run(&self, run: i64) -> Result<(), StoreError> {
        self.store.lease_for_run(&self.holder, run)
    }
}

impl Drop for Held {
    fn drop(&mut self) {
        self.heartbeat.abort();
        if let Err(e) = self.store.release_leases(&self.holder) {
            tracing::warn!("releasing the run's host leases: {e} (they lapse in {} s)", self.term.as_secs());
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::Lease;

    fn lease(run: i64, expires_in: i64) -> Lease {
        Lease {
            host: "h".into(),
            run: Some(run),
            holder: Some("ci@lab".into()),
            pid: Some(1),
            since: None,
            heartbeat: None,
            expires: Some(NOW + expires_in),
            quarantine: None,
        }
    }

    const NOW: i64 = 1_764_800_000;

    #[test]
    fn only_the_resumed_runs_own_leases_are_waited_out() {
        let own = [lease(7, 30), lease(7, 50)];
        let lapse = own_leases_lapse(&own, &[7], NOW).unwrap();
        assert_eq!(lapse.as_secs(), 50, "the last of them");
        assert_eq!(own_leases_lapse(&own, &[], NOW), None, "a new run waits as --wait-for-hosts says");
        assert_eq!(
            own_leases_lapse(&[lease(7, 30), lease(8, 30)], &[7], NOW),
            None,
            "another run's lease is in the way"
        );
        assert_eq!(own_leases_lapse(&[lease(7, -5)], &[7], NOW), Some(Duration::ZERO));
        // A bisect's leases name the run it was in: any of its runs is its own.
        assert_eq!(own_leases_lapse(&[lease(7, 30), lease(8, 40)], &[7, 8], NOW), Some(Duration::from_secs(40)));
    }

    #[test]
    fn the_heartbeat_beats_several_times_a_term() {
        assert_eq!(heartbeat(DEFAULT_TERM), Duration::from_secs(20));
        assert_eq!(humantime::parse_duration(crate::cli::LEASE_TERM).unwrap(), DEFAULT_TERM, "one default");
        assert_eq!(heartbeat(Duration::from_secs(1)), Duration::from_millis(500));
    }
}
