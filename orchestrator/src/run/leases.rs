//! The run's hold on its hosts: taken in the store before any host is
//! touched (waiting up to `--wait-for-hosts` for another run to let go),
//! renewed by a heartbeat while the run lasts, released when it ends. A run
//! killed outright leaves its leases to lapse after one term.

use crate::progress::Progress;
use crate::store::{Holder, HostsBusy, Store, StoreError, Taken};
use std::time::{Duration, Instant};

/// How long a lease holds without a heartbeat: how long a killed
/// orchestrator keeps its hosts from the next run.
pub const TERM: Duration = Duration::from_secs(120);

/// How often the heartbeat renews the run's leases (a few per term, so a
/// slow database or a busy machine does not let one lapse).
const HEARTBEAT: Duration = Duration::from_secs(20);

/// How often a waiting run asks again.
const POLL: Duration = Duration::from_secs(2);

/// The run's leases: held while this lives, released when it is dropped
/// (however the run ends, short of the process being killed).
pub struct Held {
    store: Store,
    pub holder: Holder,
    /// Hosts set aside by hand, with why: the run leaves them out.
    pub quarantined: Vec<(String, String)>,
    heartbeat: tokio::task::JoinHandle<()>,
}

/// Take `hosts` for this process, waiting up to `wait` while another run
/// holds any of them (all or none: a run never holds half its hosts while
/// it waits for the rest, so two waiting runs cannot block each other).
pub async fn hold(store: &Store, hosts: &[String], wait: Duration, progress: Progress) -> anyhow::Result<Held> {
    let holder = Holder::this_process();
    let deadline = Instant::now() + wait;
    let mut said = false;
    let quarantined = loop {
        match store.take_leases(hosts, &holder, TERM)? {
            Taken::Held { quarantined } => break quarantined,
            Taken::Busy(busy) if Instant::now() < deadline => {
                if !said {
                    progress.note(format!(
                        "waiting up to {}: {}",
                        humantime::format_duration(wait),
                        HostsBusy(busy).holders()
                    ));
                    said = true;
                }
                tokio::time::sleep(POLL.min(deadline.saturating_duration_since(Instant::now()))).await;
            }
            Taken::Busy(busy) => return Err(HostsBusy(busy).into()),
        }
    };
    let heartbeat = tokio::spawn(renew(store.clone(), holder.clone(), progress));
    Ok(Held { store: store.clone(), holder, quarantined, heartbeat })
}

async fn renew(store: Store, holder: Holder, progress: Progress) {
    loop {
        tokio::time::sleep(HEARTBEAT).await;
        match store.renew_leases(&holder, TERM) {
            Ok(0) => progress.note("the run's host leases were released or taken over (see `benchrig lab`)"),
            Ok(_) => {}
            Err(e) => progress.note(format!("renewing the run's host leases: {e}")),
        }
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
            tracing::warn!("releasing the run's host leases: {e} (they lapse in {} s)", TERM.as_secs());
        }
    }
}
