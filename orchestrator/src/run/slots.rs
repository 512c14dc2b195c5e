//! Host slots: one per host for the whole run. A slot is connected once at
//! the start (at most `--forks` at a time), settled after every cell (a
//! failure noted, a lost host reconnected once: its new agent cleans up
//! what the old one left) and closed at the end, when the host's status is
//! stored.

use super::cells::record_cells;
use super::context::RunContext;
use super::context::Slot;
use super::executor::CellOutcome;
use super::policy::{self, Down};
use crate::session::host::{HostError, HostSession};
use crate::status::{CellStatus, HostStatus};
use crate::store::StoreError;
use std::sync::Arc;

/// Open a host's session (at most --forks at once); a host that cannot be
/// reached is recorded and left out of every play.
pub async fn connect(ctx: Arc<RunContext>, host: String) {
    let _permit = ctx.forks.acquire().await;
    let mut slot = ctx.slots[&host].lock().await;
    connect_slot(&ctx, &host, &mut slot).await;
}

/// The first connection of a host whose slot the caller holds (with a
/// `--forks` permit); nothing when it was tried already.
pub async fn connect_slot(ctx: &RunContext, host: &str, slot: &mut Slot) {
    if std::mem::replace(&mut slot.connect_tried, true) {
        return;
    }
    if slot.down.is_some() || slot.idle {
        return; // quarantined, or nothing left to resume: left out
    }
    if ctx.interrupted() {
        slot.down = Some(Down::Interrupted);
        let _ = ctx.store.set_host(ctx.run, host, HostStatus::Skipped, Some(policy::INTERRUPTED));
        return;
    }
    if let Some(why) = ctx.lease_lost(host) {
        slot.down = Some(Down::Unreachable(why));
        return;
    }
    let _ = ctx.store.set_host(ctx.run, host, HostStatus::Running, None);
    let vars = ctx.checked.connection_vars(host);
    match HostSession::open(host, &vars, &ctx.builds, Some(ctx.cancel.clone())).await {
        Ok(s) => {
            ctx.progress.line(
                host,
                format!(
                    "{} · {} · kernel {} · agent {} ({:.1} s)",
                    s.describe(),
                    s.facts.arch,
                    s.facts.kernel.release,
                    if s.deployed.uploaded { "uploaded" } else { "already there" },
                    s.startup.as_secs_f64()
                ),
            );
            let _ = ctx.store.set_host_facts(Some(ctx.run), host, &s.facts);
            ctx.opened(host, &s);
            slot.session = Some(s);
        }
        Err(e) => {
            ctx.progress.line(host, e.to_string());
            // The cell's reason says "host … unreachable: " itself.
            slot.down = Some(match e {
                HostError::Unreachable(why) => Down::Unreachable(why),
                HostError::Failed(why) => Down::Failed(why),
            });
        }
    }
}

/// After a cell: note a failure, and reconnect once to a host that was
/// lost (its new agent cleans up what the old one left).
pub async fn settle(ctx: &RunContext, outcome: CellOutcome, slots: &mut [(&str, &mut Slot)]) {
    match outcome {
        CellOutcome::Ok | CellOutcome::Skipped(_) => {}
        CellOutcome::Unsupported(why) => {
            if let Some((h, _)) = slots.first() {
                ctx.progress.line(h, format!("  unsupported: {why}"));
            }
        }
        CellOutcome::Failed(why) => {
            for (h, s) in slots.iter_mut() {
                s.failed = true;
                ctx.progress.line(h, format!("  failed: {why}"));
            }
        }
        CellOutcome::HostLost { host, reason } => {
            // Not a failure of the host's benchmark: its cell is unreachable.
            let Some((_, slot)) = slots.iter_mut().find(|(h, _)| *h == host) else { return };
            if let Some(why) = ctx.lease_lost(&host) {
                // Not ours any more: no reconnect, now or at the end of the run.
                abandon(slot).await;
                slot.down = Some(Down::Unreachable(why));
                return;
            }
            slot.lost = true;
            if ctx.interrupted() {
                slot.down = Some(Down::Unreachable(reason));
                return;
            }
            ctx.progress.line(&host, format!("  lost the host: {reason}; reconnecting once"));
            if !reconnect(ctx, &host, slot).await {
                slot.down = Some(Down::Unreachable(reason));
            }
        }
    }
}

/// Open a fresh session to a host whose session was lost (or is down)
/// and clean up what the old agent left; true when it is back. Either
/// way the old session is abandoned and its facts kept for planning.
pub async fn reconnect(ctx: &RunContext, host: &str, slot: &mut Slot) -> bool {
    abandon(slot).await;
    if ctx.lease_lost(host).is_some() {
        return false;
    }
    let vars = ctx.checked.connection_vars(host);
    match HostSession::open(host, &vars, &ctx.builds, Some(ctx.cancel.clone())).await {
        Ok(fresh) => {
            match fresh.cleanup().await {
                Ok(done) => ctx.progress.line(host, format!("  reconnected; cleaned up {done}")),
                Err(e) => ctx.progress.line(host, format!("  reconnected; cleanup failed: {e}")),
            }
            ctx.opened(host, &fresh);
            slot.session = Some(fresh);
            true
        }
        Err(e) => {
            ctx.progress.line(host, format!("  {e}"));
            false
        }
    }
}

/// Drop a host's session without waiting for its agent (which releases
/// what it set up when its channel closes), keeping its facts for planning.
async fn abandon(slot: &mut Slot) {
    if let Some(old) = slot.session.take() {
        slot.stored_facts = Some(old.facts.clone());
        old.abandon().await;
    }
}

/// End a host's part: its agent releases what it set up; record how it went.
pub async fn close(ctx: Arc<RunContext>, host: String) {
    let mut slot = ctx.slots[&host].lock().await;
    if slot.idle {
        return; // as the run stored it
    }
    if let Some(session) = slot.session.take() {
        if let Err(e) = session.close().await {
            ctx.progress.line(&host, format!("closing the session: {e}"));
        }
    }
    // A cell that failed in an earlier attempt (and was not tried again) still failed.
    let failed = slot.failed || ctx.store.has_failed_cell(ctx.run, &host).unwrap_or(false);
    if let Some((status, reason)) = policy::host_status(slot.down.as_ref(), ctx.interrupted(), failed) {
        let _ = ctx.store.set_host(ctx.run, &host, status, reason.as_deref());
    }
    // A host that is down now has no session; if it never ran a cell, its
    // cells are stored as a down host's cells are (`policy`).
    if slot.down.is_some() {
        record_unrun_cells(&ctx, &host, &slot);
    }
}

/// A host that is down: its cells not yet settled (planned with the facts
/// it had, or without) are recorded as what a down host's cells become, so
/// reports and `--resume` know they are missing.
fn record_unrun_cells(ctx: &RunContext, host: &str, slot: &Slot) {
    let Some(down) = &slot.down else { return };
    let (status, reason) = policy::cells_of_down_host(host, down);
    for &pi in &ctx.checked.hosts[host] {
        record_cells(ctx, host, pi, slot, status, &reason);
    }
}

/// Whether any host ended up unreachable, whether any failed, and whether
/// a kernel did not boot.
pub async fn tally(ctx: &RunContext) -> Result<(bool, bool, bool), StoreError> {
    let (mut unreachable, mut failed) = (false, false);
    for slot in ctx.slots.values() {
        let slot = slot.lock().await;
        unreachable |= matches!(slot.down, Some(Down::Unreachable(_)));
        failed |= slot.failed || policy::counts_as_failed(slot.down.as_ref());
    }
    let cells = ctx.store.cells(ctx.run)?;
    failed |= cells.iter().any(|c| c.status == CellStatus::Failed);
    // A host lost mid-run and back at once still lost that cell.
    unreachable |= cells.iter().any(|c| c.status == CellStatus::Unreachable);
    Ok((unreachable, failed, cells.iter().any(|c| c.status == CellStatus::NotBooted)))
}
