//! The end of a run for a host lost during it: if it is still down (the
//! reconnect right after the loss failed), a bounded number of reconnect
//! rounds with a pause before each; once it is back (or if it was back at
//! once), its missing cells run — the cells of its plain plays the store
//! does not have settled (`policy::needs_running`), so the cell that was cut
//! off too. Cells of a role play wait for `--resume`. A host still gone
//! keeps its cells `unreachable`.

use super::context::RunContext;
use super::plays;
use super::policy::Down;
use super::slots;
use std::sync::Arc;
use std::time::Duration;

/// Reconnect rounds at the end of the run, unless the host's variables
/// (or `-e`) say otherwise with `benchrig_reconnects`.
pub const DEFAULT_ROUNDS: u64 = 2;

/// The pause before round N is N times this: a rebooting machine gets
/// time to come back.
const PAUSE: Duration = Duration::from_secs(10);

/// Try every host lost during the run again, each on its own.
pub async fn recover_lost_hosts(ctx: &Arc<RunContext>) {
    let mut lost = Vec::new();
    for (h, slot) in &ctx.slots {
        let slot = slot.lock().await;
        if slot.lost && (slot.session.is_some() || matches!(slot.down, Some(Down::Unreachable(_)))) {
            lost.push(h.clone());
        }
    }
    super::join_all(lost.into_iter().map(|h| recover(ctx.clone(), h))).await;
}

/// How many rounds a host gets: `-e benchrig_reconnects=N` wins over its own variable.
fn rounds(ctx: &RunContext, host: &str) -> u64 {
    let vars = ctx.checked.inventory.host_vars(host);
    let value = ctx.extra.get("benchrig_reconnects").or_else(|| vars.get("benchrig_reconnects"));
    value.and_then(|v| v.as_u64().or_else(|| v.as_str()?.trim().parse().ok())).unwrap_or(DEFAULT_ROUNDS)
}

async fn recover(ctx: Arc<RunContext>, host: String) {
    let rounds = rounds(&ctx, &host);
    let mut back = ctx.slots[&host].lock().await.session.is_some();
    let mut round = 0;
    while !back && round < rounds {
        round += 1;
        if ctx.interrupted() || ctx.halted().is_some() {
            return;
        }
        let pause = PAUSE * round as u32;
        ctx.progress.line(
            &host,
            format!("lost earlier: reconnecting in {} s for its missing cells ({round} of {rounds})", pause.as_secs()),
        );
        let mut cancel = ctx.cancel.clone();
        tokio::select! {
            _ = tokio::time::sleep(pause) => {}
            _ = cancel.wait_for(|c| *c) => return,
        }
        let mut slot = ctx.slots[&host].lock().await;
        if slots::reconnect(&ctx, &host, &mut slot).await {
            (slot.down, back) = (None, true);
        }
    }
    if !back || ctx.interrupted() || ctx.halted().is_some() {
        return;
    }
    ctx.progress.line(&host, "running the cells it lost");
    for &pi in &ctx.checked.hosts[&host] {
        let play = &ctx.checked.playbook.plays[pi];
        if play.roles.is_empty() {
            let seed = plays::play_seed(&ctx, play);
            plays::run_plain_play(ctx.clone(), pi, host.clone(), seed).await;
        }
    }
}
