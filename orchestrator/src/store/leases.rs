//! Leases: a run holds each of its hosts in the store before it touches
//! them, so two runs sharing a database (and so a lab) never measure on one
//! host at once. A lease names its holder (run, user@machine, pid), is
//! renewed by a heartbeat and lapses at `expires`, so a killed orchestrator
//! blocks its hosts for one lease term, not forever. A host can also be
//! quarantined by hand: no run takes it until it is released.
//!
//! Every decision is one exclusive transaction (`Sql::exclusive_transaction`:
//! SQLite's BEGIN IMMEDIATE, PostgreSQL's advisory lock), so two runs that
//! start in the same second cannot both take a host. Every `expires` is
//! set and judged on the database's clock (`Sql::unix_now`), never a
//! runner's: a runner whose clock is minutes ahead would otherwise take a
//! live lease for a lapsed one.

use super::sql::Sql;
use super::{now, Store, StoreError};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

/// Who holds leases: one orchestrator process. `token` tells its leases
/// from any other's, even one with the same pid on another machine.
#[derive(Clone, Debug)]
pub struct Holder {
    pub token: String,
    /// `user@machine`.
    pub who: String,
    pub pid: u32,
}

impl Holder {
    /// This process, with a token no other holder has.
    pub fn this_process() -> Holder {
        let user = std::env::var("USER").or_else(|_| std::env::var("LOGNAME")).unwrap_or_else(|_| user_name());
        let machine = rustix::system::uname().nodename().to_string_lossy().into_owned();
        let nanos = SystemTime::now().duration_since(UNIX_EPOCH).unwrap_or_default().as_nanos();
        let pid = std::process::id();
        Holder { token: format!("{machine}:{pid}:{nanos:x}"), who: format!("{user}@{machine}"), pid }
    }
}

/// The name of this process's user in /etc/passwd (a cron job or a test
/// may have no `$USER`), else `uid N`.
fn user_name() -> String {
    let uid = rustix::process::getuid().as_raw();
    let passwd = std::fs::read_to_string("/etc/passwd").unwrap_or_default();
    passwd
        .lines()
        .map(|l| l.split(':').collect::<Vec<_>>())
        .find(|f| f.len() > 2 && f[2] == uid.to_string())
        .map(|f| f[0].to_string())
        .unwrap_or_else(|| format!("uid {uid}"))
}

/// A host's row in the lease table.
#[derive(Clone, Debug, PartialEq)]
pub struct Lease {
    pub host: String,
    pub run: Option<i64>,
    /// `user@machine` of the holder.
    pub holder: Option<String>,
    pub pid: Option<i64>,
    pub since: Option<String>,
    pub heartbeat: Option<String>,
    /// Unix seconds after which the lease no longer holds.
    pub expires: Option<i64>,
    /// Why the host is set aside, when it is.
    pub quarantine: Option<String>,
}

impl Lease {
    /// Whether a holder's lease on the host has not lapsed at unix time `at`.
    pub fn is_held_at(&self, at: i64) -> bool {
        self.holder.is_some() && self.expires.is_some_and(|e| e > at)
    }

    /// Held at `at` by a holder other than `token` (`own` is the row's token).
    fn held_against(&self, token: Option<&str>, own: Option<&str>, at: i64) -> bool {
        own.is_some() && own != token && self.is_held_at(at)
    }

    /// "run 12 (ci@lab1, pid 4242) since …" for messages.
    pub fn describe_holder(&self) -> String {
        format!(
            "{} ({}, pid {}) since {}",
            self.run.map_or("a run not started yet".to_string(), |r| format!("run {r}")),
            self.holder.as_deref().unwrap_or("?"),
            self.pid.map_or("?".to_string(), |p| p.to_string()),
            self.since.as_deref().unwrap_or("?")
        )
    }
}

/// What asking for hosts gave.
#[derive(Debug, PartialEq)]
pub enum Taken {
    /// Every host asked for that is not quarantined is now held; the
    /// quarantined ones (with their reasons) are left out.
    Held { quarantined: Vec<(String, String)> },
    /// Nothing was taken: these hosts are held by others.
    Busy(Vec<Lease>),
}

/// A run could not have its hosts: others hold them (and, with
/// `--wait-for-hosts`, still did when the wait ended).
#[derive(Debug, thiserror::Error)]
#[error("{}; wait for them with --wait-for-hosts DURATION, or see `benchrig lab`", self.holders())]
pub struct HostsBusy(pub Vec<Lease>);

impl HostsBusy {
    /// "host fast2 is held by run 12 (…) since …; host …".
    pub fn holders(&self) -> String {
        self.0
            .iter()
            .map(|l| format!("host {} is held by {}", l.host, l.describe_holder()))
            .collect::<Vec<_>>()
            .join("; ")
    }
}

const COLUMNS: &str = "host, run_id, holder, pid, since, heartbeat, expires, quarantine, token";

/// Forget the holder of the rows `which` (`token = ?1`, `host = ?1`) picks
/// with `key`: a row kept only for its lease goes, a quarantine stays.
fn let_go(db: &mut impl Sql, which: &str, key: &str) -> Result<(), StoreError> {
    db.execute(&format!("DELETE FROM leases WHERE {which} AND quarantine IS NULL"), &[key.into()])?;
    db.execute(
        &format!(
            "UPDATE leases SET token = NULL, run_id = NULL, holder = NULL, pid = NULL, since = NULL,
                 heartbeat = NULL, expires = NULL WHERE {which}"
        ),
        &[key.into()],
    )?;
    Ok(())
}

fn lease_of(r: &super::value::Row) -> (Lease, Option<String>) {
    let lease = Lease {
        host: r.text(0),
        run: r.opt_int(1),
        holder: r.opt_text(2),
        pid: r.opt_int(3),
        since: r.opt_text(4),
        heartbeat: r.opt_text(5),
        expires: r.opt_int(6),
        quarantine: r.opt_text(7),
    };
    (lease, r.opt_text(8))
}

impl Store {
    /// Hold every host of `hosts` for `holder` (for `term`, renewed by
    /// [`Store::renew_leases`]), all or none: when one is held by another
    /// holder whose lease has not lapsed, nothing is taken. A lapsed lease
    /// is taken over. Quarantined hosts are not taken and are listed.
    pub fn take_leases(&self, hosts: &[String], holder: &Holder, term: Duration) -> Result<Taken, StoreError> {
        let mut db = self.db();
        db.exclusive_transaction(|db| {
            let (at, stamp) = (db.unix_now()?, now());
            let mut busy = Vec::new();
            let mut quarantined = Vec::new();
            for host in hosts {
                let row = db.query_one(&format!("SELECT {COLUMNS} FROM leases WHERE host = ?1"), &[host.as_str().into()])?;
                let Some((lease, token)) = row.as_ref().map(lease_of) else { continue };
                if let Some(why) = &lease.quarantine {
                    quarantined.push((host.clone(), why.clone()));
                } else if lease.held_against(Some(&holder.token), token.as_deref(), at) {
                    busy.push(lease);
                }
            }
            if !busy.is_empty() {
                return Ok(Taken::Busy(busy));
            }
            let expires = at + term.as_secs() as i64;
            for host in hosts.iter().filter(|h| !quarantined.iter().any(|(q, _)| q == *h)) {
                db.execute(
                    "INSERT INTO leases (host, token, holder, pid, since, heartbeat, expires) VALUES (?1, ?2, ?3, ?4, ?5, ?5, ?6)
                     ON CONFLICT (host) DO UPDATE SET
                         run_id = CASE WHEN leases.token = excluded.token THEN leases.run_id END,
                         since = CASE WHEN leases.token = excluded.token THEN leases.since ELSE excluded.since END,
                         token = excluded.token, holder = excluded.holder, pid = excluded.pid,
                         heartbeat = excluded.heartbeat, expires = excluded.expires",
                    &[
                        host.as_str().into(),
                        holder.token.as_str().into(),
                        holder.who.as_str().into(),
                        (holder.pid as i64).into(),
                        stamp.as_str().into(),
                        expires.into(),
                    ],
                )?;
            }
            Ok(Taken::Held { quarantined })
        })
    }

    /// Name the run that `holder`'s leases are for, once it is created.
    pub fn lease_for_run(&self, holder: &Holder, run: i64) -> Result<(), StoreError> {
        self.db()
            .execute("UPDATE leases SET run_id = ?2 WHERE token = ?1", &[holder.token.as_str().into(), run.into()])?;
        Ok(())
    }

    /// The heartbeat: `holder`'s leases hold for another `term`. The hosts
    /// still held, by name (one released by hand or taken over is missing).
    pub fn renew_leases(&self, holder: &Holder, term: Duration) -> Result<Vec<String>, StoreError> {
        let mut db = self.db();
        db.exclusive_transaction(|db| {
            let expr = db.unix_now_expr();
            db.execute(
                &format!("UPDATE leases SET heartbeat = ?2, expires = {expr} + ?3 WHERE token = ?1"),
                &[holder.token.as_str().into(), now().into(), (term.as_secs() as i64).into()],
            )?;
            let rows =
                db.query("SELECT host FROM leases WHERE token = ?1 ORDER BY host", &[holder.token.as_str().into()])?;
            Ok(rows.iter().map(|r| r.text(0)).collect())
        })
    }

    /// The database's time in unix seconds, the clock leases are judged on.
    pub fn unix_now(&self) -> Result<i64, StoreError> {
        self.db().unix_now()
    }

    /// Let go of everything `holder` holds (quarantines stay).
    pub fn release_leases(&self, holder: &Holder) -> Result<(), StoreError> {
        self.db().exclusive_transaction(|db| let_go(db, "token = ?1", &holder.token))
    }

    /// Every host with a lease or a quarantine, by name.
    pub fn leases(&self) -> Result<Vec<Lease>, StoreError> {
        let rows = self.db().query(&format!("SELECT {COLUMNS} FROM leases ORDER BY host"), &[])?;
        Ok(rows.iter().map(|r| lease_of(r).0).collect())
    }

    /// Release `host`'s lease by hand (its holder is gone, say); true when
    /// there was one. A quarantine stays.
    pub fn release_lease(&self, host: &str) -> Result<bool, StoreError> {
        let mut db = self.db();
        db.exclusive_transaction(|db| {
            let held =
                db.query_one("SELECT token FROM leases WHERE host = ?1 AND token IS NOT NULL", &[host.into()])?;
            let_go(db, "host = ?1", host)?;
            Ok(held.is_some())
        })
    }

    /// Set `host` aside with `reason` (no run takes it), or, with `None`,
    /// take it back. A run holding it now keeps it until it ends.
    pub fn quarantine(&self, host: &str, reason: Option<&str>) -> Result<(), StoreError> {
        let mut db = self.db();
        db.exclusive_transaction(|db| {
            match reason {
                Some(why) => db.execute(
                    "INSERT INTO leases (host, quarantine) VALUES (?1, ?2)
                     ON CONFLICT (host) DO UPDATE SET quarantine = excluded.quarantine",
                    &[host.into(), why.into()],
                )?,
                None => {
                    db.execute("DELETE FROM leases WHERE host = ?1 AND token IS NULL", &[host.into()])?;
                    db.execute("UPDATE leases SET quarantine = NULL WHERE host = ?1", &[host.into()])?
                }
            };
            Ok(())
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::testing::places;

    fn holder(n: u32) -> Holder {
        Holder { token: format!("t{n}"), who: format!("u{n}@m"), pid: n }
    }

    fn hosts(names: &[&str]) -> Vec<String> {
        names.iter().map(|h| h.to_string()).collect()
    }

    const TERM: Duration = Duration::from_secs(120);

    #[test]
    fn a_host_is_held_by_one_run_at_a_time_all_or_nothing() {
        let places = places();
        for url in &places.urls {
            let s = Store::open(url).unwrap();
            let (a, b) = (holder(1), holder(2));
            assert_eq!(s.take_leases(&hosts(&["h1", "h2"]), &a, TERM).unwrap(), Taken::Held { quarantined: vec![] });
            s.lease_for_run(&a, 7).unwrap();
            // b wants h2 and h3: h2 is a's, so b gets neither.
            let Taken::Busy(busy) = s.take_leases(&hosts(&["h2", "h3"]), &b, TERM).unwrap() else { panic!("{url}") };
            assert_eq!(busy.len(), 1);
            assert_eq!((busy[0].host.as_str(), busy[0].run, busy[0].holder.as_deref()), ("h2", Some(7), Some("u1@m")));
            assert!(
                busy[0].describe_holder().starts_with("run 7 (u1@m, pid 1) since "),
                "{}",
                busy[0].describe_holder()
            );
            assert!(s.leases().unwrap().iter().all(|l| l.host != "h3"), "{url}: nothing taken");
            // Taking one's own hosts again is fine (a reconnect, a second play),
            // and keeps what the lease says: its run, since when.
            let before = s.leases().unwrap();
            assert!(matches!(s.take_leases(&hosts(&["h1"]), &a, TERM).unwrap(), Taken::Held { .. }));
            let after = s.leases().unwrap();
            assert_eq!((after[0].run, &after[0].since), (Some(7), &before[0].since), "{url}");
            assert_eq!(s.renew_leases(&a, TERM).unwrap(), ["h1", "h2"]);
            s.release_leases(&a).unwrap();
            assert!(s.leases().unwrap().is_empty(), "{url}");
            assert!(matches!(s.take_leases(&hosts(&["h2", "h3"]), &b, TERM).unwrap(), Taken::Held { .. }));
        }
    }

    #[test]
    fn a_lapsed_lease_is_taken_over_and_its_holder_loses_it() {
        let places = places();
        for url in &places.urls {
            let s = Store::open(url).unwrap();
            let (dead, next) = (holder(1), holder(2));
            s.take_leases(&hosts(&["h1"]), &dead, Duration::ZERO).unwrap();
            assert!(matches!(s.take_leases(&hosts(&["h1"]), &next, TERM).unwrap(), Taken::Held { .. }), "{url}");
            assert!(
                s.renew_leases(&dead, TERM).unwrap().is_empty(),
                "{url}: the dead holder's heartbeat holds nothing"
            );
            assert_eq!(s.leases().unwrap()[0].holder.as_deref(), Some("u2@m"));
        }
    }

    /// Every `expires` is the database's time plus the term, whatever the
    /// runner's clock says: a runner minutes ahead cannot take a live lease
    /// for a lapsed one. (On main, `expires` was the runner's own clock.)
    #[test]
    fn a_lease_expires_by_the_databases_clock() {
        let places = places();
        for url in &places.urls {
            let s = Store::open(url).unwrap();
            let db_now = s.unix_now().unwrap();
            let local = SystemTime::now().duration_since(UNIX_EPOCH).unwrap().as_secs() as i64;
            assert!((db_now - local).abs() <= 2, "{url}: the database's clock is this machine's here");
            s.take_leases(&hosts(&["h1"]), &holder(1), TERM).unwrap();
            let expires = s.leases().unwrap()[0].expires.unwrap();
            assert!((expires - db_now - TERM.as_secs() as i64).abs() <= 2, "{url}: {expires} vs {db_now}");
            s.renew_leases(&holder(1), Duration::from_secs(600)).unwrap();
            let renewed = s.leases().unwrap()[0].expires.unwrap();
            assert!((renewed - s.unix_now().unwrap() - 600).abs() <= 2, "{url}");
        }
    }

    #[test]
    fn a_quarantined_host_is_left_out_until_taken_back_and_can_be_released_by_hand() {
        let places = places();
        for url in &places.urls {
            let s = Store::open(url).unwrap();
            s.quarantine("h1", Some("disk replaced, not burnt in")).unwrap();
            let taken = s.take_leases(&hosts(&["h1", "h2"]), &holder(1), TERM).unwrap();
            assert_eq!(taken, Taken::Held { quarantined: vec![("h1".into(), "disk replaced, not burnt in".into())] });
            assert_eq!(
                s.leases().unwrap().iter().map(|l| (l.host.as_str(), l.holder.is_some())).collect::<Vec<_>>(),
                [("h1", false), ("h2", true)]
            );
            s.quarantine("h1", None).unwrap();
            assert!(s.release_lease("h2").unwrap(), "{url}");
            assert!(!s.release_lease("h2").unwrap(), "{url}: nothing left to release");
            assert!(s.leases().unwrap().is_empty(), "{url}");
        }
    }

    #[test]
    fn two_runs_asking_for_one_host_at_the_same_instant_get_it_once() {
        let places = places();
        for url in &places.urls {
            let barrier = std::sync::Arc::new(std::sync::Barrier::new(8));
            let winners: usize = (0..8)
                .map(|n| {
                    let (url, barrier) = (url.clone(), barrier.clone());
                    std::thread::spawn(move || {
                        let s = Store::open(&url).unwrap();
                        barrier.wait();
                        matches!(s.take_leases(&hosts(&["h1", "h2"]), &holder(n), TERM).unwrap(), Taken::Held { .. })
                    })
                })
                .collect::<Vec<_>>()
                .into_iter()
                .map(|t| usize::from(t.join().unwrap()))
                .sum();
            assert_eq!(winners, 1, "{url}");
        }
    }
}
