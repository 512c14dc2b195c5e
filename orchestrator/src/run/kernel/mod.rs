//! A play's kernel on one host: boot it once before the cells that run
//! under it, verify it, and come back after them (`enter`, `leave`).
//!
//! The sequence, each step checked before the next:
//! 1. the host's boot state (`BootState`): a boot of ours still under way
//!    (a controller killed, a Ctrl-C) is brought back first; then what the
//!    host can boot with and whether the kernel is installed decide
//!    (`decide`, pure): no boot, `unsupported` with the reason, or a boot;
//! 2. the agent writes the boot down on the host, arms it (a kexec load,
//!    or a one-shot GRUB entry: the default entry never changes) and boots
//!    as its session closes;
//! 3. the host is waited for (`benchrig_boot_timeout`) while its console
//!    (`benchrig_console`) is captured; up means a new boot id, the kernel
//!    asked for and our token on its command line. Anything else is a
//!    boot that failed: the host is power-cycled (`benchrig_power_cycle`)
//!    if it does not come back, which lands it on its baseline, and the
//!    cells are `not_booted`;
//! 4. after the cells, back to the baseline the same way, verified, and
//!    the record removed: all before the host's lease goes.

mod console;
mod decide;
pub mod vars;

use console::Console;
pub use console::{console_info, panic_line};
pub use decide::{decide, verify, Decision};

use super::context::{RunContext, Slot};
use crate::playbook::kernel::KernelSpec;
use crate::session::agent_client::RequestError;
use crate::session::host::{HostError, HostSession};
use benchrig_wire::boot::{BootMethod, BootOrder, BootRecord, BootState};
use benchrig_wire::messages::ErrorCode;
use serde_json::{json, Value as Json};
use std::time::{Duration, Instant};
use vars::BootVars;

/// The kernel a host's cells ran under: stored with every cell.
#[derive(Clone, Debug, PartialEq)]
pub struct Booted {
    pub release: String,
    pub cmdline: String,
    pub image: String,
    pub sha256: String,
    pub method: Option<BootMethod>,
    /// From the boot command until SSH answered again.
    pub boot_seconds: Option<f64>,
    /// What it takes to come back; none when nothing was booted.
    pub record: Option<BootRecord>,
}

impl Booted {
    pub fn info(&self) -> serde_json::Map<String, Json> {
        let mut m = serde_json::Map::new();
        m.insert("release".into(), self.release.clone().into());
        m.insert("cmdline".into(), self.cmdline.clone().into());
        m.insert("image".into(), self.image.clone().into());
        m.insert("sha256".into(), self.sha256.clone().into());
        m.insert("boot".into(), self.method.map_or("none", BootMethod::as_str).into());
        if let Some(s) = self.boot_seconds {
            m.insert("boot_seconds".into(), json!((s * 10.0).round() / 10.0));
        }
        m
    }
}

/// How entering a kernel ended.
pub enum Entered {
    /// Up on it (or on it already): run the cells.
    Up(Booted),
    /// The host cannot: the cells are `unsupported`.
    Unsupported(String),
    /// It did not boot; the host is back on its baseline (verified).
    NotBooted { why: String, console: Vec<String> },
    /// The cells cannot run (an agent error, an interrupt): `failed` or
    /// skipped with the reason; the host is as it was.
    Failed(String),
    /// The host did not come back at all: down, and quarantined.
    Lost(String),
}

/// Boot `spec` on `host` (its slot's session open), replacing the session
/// with one on the new kernel.
pub async fn enter(ctx: &RunContext, host: &str, slot: &mut Slot, spec: &KernelSpec) -> Entered {
    let vars = ctx.checked.connection_vars(host);
    let bv = match BootVars::of(host, &vars, &ctx.checked.templates) {
        Ok(b) => b,
        Err(e) => return Entered::Failed(e),
    };
    let Some(session) = slot.session.as_ref() else { return Entered::Failed("no session".into()) };
    let mut state = match session.boot_state().await {
        Ok(s) => s,
        Err(e) => return Entered::Failed(format!("reading the host's boot: {e}")),
    };
    if let Some(rec) = state.pending.clone() {
        ctx.progress.line(
            host,
            format!(
                "  a boot of benchrig's is still under way (kernel {}): back to {} first",
                rec.release, rec.baseline
            ),
        );
        if let Err(e) = come_back(ctx, host, slot, &bv, &rec, &state).await {
            return Entered::Lost(e);
        }
        let Some(session) = slot.session.as_ref() else { return Entered::Failed("no session".into()) };
        state = match session.boot_state().await {
            Ok(s) => s,
            Err(e) => return Entered::Failed(format!("reading the host's boot: {e}")),
        };
    }
    let (release, cmdline, method) = match decide(spec, &state) {
        Decision::AsItIs => {
            let k = state.kernel(&state.release);
            return Entered::Up(Booted {
                release: state.release.clone(),
                cmdline: state.cmdline.clone(),
                image: k.map(|k| k.image.clone()).unwrap_or_default(),
                sha256: k.map(|k| k.sha256.clone()).unwrap_or_default(),
                method: None,
                boot_seconds: None,
                record: None,
            });
        }
        Decision::Unsupported(why) => return Entered::Unsupported(why),
        Decision::Boot { release, cmdline, method } => (release, cmdline, method),
    };
    let token = new_token(host);
    let order = BootOrder { release: release.clone(), cmdline, method, token: token.clone(), back: false };
    let session = slot.session.as_ref().expect("checked above");
    let armed = match session.arm_boot(order).await {
        Ok(a) => a,
        Err(RequestError::Agent(e)) if e.code == ErrorCode::Unsupported => return Entered::Unsupported(e.message),
        Err(e) => return Entered::Failed(format!("arming the boot: {e}")),
    };
    let record = BootRecord {
        baseline: state.release.clone(),
        baseline_cmdline: state.cmdline.clone(),
        release: release.clone(),
        method,
        token: token.clone(),
        entry: None,
    };
    ctx.progress.line(host, format!("  booting kernel {release} by {} ({})", method.as_str(), armed.how));
    let console = Console::start(bv.console.as_deref());
    let t0 = Instant::now();
    close_for_boot(slot).await;
    let deadline = t0 + bv.timeout;
    let came = wait_for_boot(ctx, host, &state.boot_id, deadline).await;
    let (fresh, now) = match came {
        Ok(up) => up,
        Err(why) => {
            let lines = console.stop();
            return recover(ctx, host, slot, &bv, &record, &state.boot_id, why, lines).await;
        }
    };
    let boot_seconds = t0.elapsed().as_secs_f64();
    let lines = console.stop();
    slot.session = Some(fresh);
    if let Some(s) = &slot.session {
        ctx.opened(host, s);
    }
    if let Err(why) = verify(&state.boot_id, &release, Some(&token), &now) {
        // Up, but not on what was asked: back to the baseline, and the
        // kernel did not boot.
        let back = now.token().is_some();
        if back {
            if let Err(e) = come_back(ctx, host, slot, &bv, &record, &now).await {
                return Entered::Lost(e);
            }
        } else if let Err(e) = finish(ctx, host, slot, &record.baseline).await {
            return Entered::Lost(e);
        }
        return Entered::NotBooted { why, console: lines };
    }
    let image_ok = now.kernel(&release).is_some_and(|k| k.sha256 == armed.sha256);
    if !image_ok {
        ctx.progress.line(host, format!("  warning: {}'s sha256 changed during the boot", armed.image));
    }
    ctx.progress.line(host, format!("  up on kernel {release} after {boot_seconds:.1} s"));
    Entered::Up(Booted {
        release,
        cmdline: now.cmdline,
        image: armed.image,
        sha256: armed.sha256,
        method: Some(method),
        boot_seconds: Some(boot_seconds),
        record: Some(record),
    })
}

/// After the cells: back to the baseline, verified, the record removed.
/// An error means the host is not back: it is down and quarantined.
pub async fn leave(ctx: &RunContext, host: &str, slot: &mut Slot, booted: &Booted) -> Result<(), String> {
    let Some(rec) = &booted.record else { return Ok(()) };
    let vars = ctx.checked.connection_vars(host);
    let bv = BootVars::of(host, &vars, &ctx.checked.templates)?;
    let state = match slot.session.as_ref() {
        Some(s) => s.boot_state().await.map_err(|e| format!("reading the host's boot: {e}"))?,
        None => return Err("the host was lost on its test kernel".into()),
    };
    come_back(ctx, host, slot, &bv, rec, &state).await
}

/// Boot back to the baseline from `state` (on the test kernel) and verify.
async fn come_back(
    ctx: &RunContext,
    host: &str,
    slot: &mut Slot,
    bv: &BootVars,
    rec: &BootRecord,
    state: &BootState,
) -> Result<(), String> {
    if state.release == rec.baseline && state.token().is_none() {
        // Never booted, or back already (a power cycle): only the record goes.
        return finish(ctx, host, slot, &rec.baseline).await;
    }
    let order = BootOrder {
        release: rec.baseline.clone(),
        cmdline: String::new(),
        method: rec.method,
        token: rec.token.clone(),
        back: true,
    };
    let session = slot.session.as_ref().ok_or("no session")?;
    let armed = session.arm_boot(order).await;
    let console = Console::start(bv.console.as_deref());
    let t0 = Instant::now();
    let came = match armed {
        Ok(a) => {
            ctx.progress.line(host, format!("  back to kernel {} ({})", rec.baseline, a.how));
            close_for_boot(slot).await;
            wait_for_boot(ctx, host, &state.boot_id, t0 + bv.timeout).await
        }
        Err(e) => Err(format!("arming the way back: {e}")),
    };
    let lines = console.stop();
    match came {
        Ok((fresh, now)) => {
            ctx.opened(host, &fresh);
            slot.session = Some(fresh);
            if let Err(why) = verify(&state.boot_id, &rec.baseline, None, &now) {
                return power_cycle_back(ctx, host, slot, bv, rec, &now.boot_id, why, &lines).await;
            }
            ctx.progress
                .line(host, format!("  back on kernel {} after {:.1} s", rec.baseline, t0.elapsed().as_secs_f64()));
            finish(ctx, host, slot, &rec.baseline).await
        }
        Err(why) => power_cycle_back(ctx, host, slot, bv, rec, &state.boot_id, why, &lines).await,
    }
}

/// The host is verified on its baseline: the agent removes the record and
/// the one-shot entry.
async fn finish(ctx: &RunContext, host: &str, slot: &mut Slot, baseline: &str) -> Result<(), String> {
    let session = slot.session.as_ref().ok_or("no session")?;
    let now = session.boot_state().await.map_err(|e| e.to_string())?;
    if now.release != baseline {
        return Err(format!("the host runs kernel {}, not its baseline {baseline}", now.release));
    }
    let removed = session.boot_done().await.map_err(|e| e.to_string())?;
    if !removed.is_empty() {
        ctx.progress.line(host, format!("  {}", removed.join("; ")));
    }
    Ok(())
}

/// A boot that did not come back in time: power-cycle the host, which
/// lands it on its baseline (the default entry never changed), verify it,
/// and report the kernel as not booted. `Lost` when it does not come back.
#[allow(clippy::too_many_arguments)]
async fn recover(
    ctx: &RunContext,
    host: &str,
    slot: &mut Slot,
    bv: &BootVars,
    rec: &BootRecord,
    boot_id: &str,
    why: String,
    console: Vec<String>,
) -> Entered {
    match power_cycle_back(ctx, host, slot, bv, rec, boot_id, why.clone(), &console).await {
        Ok(()) => Entered::NotBooted { why, console },
        Err(e) => Entered::Lost(e),
    }
}

#[allow(clippy::too_many_arguments)]
async fn power_cycle_back(
    ctx: &RunContext,
    host: &str,
    slot: &mut Slot,
    bv: &BootVars,
    rec: &BootRecord,
    boot_id: &str,
    why: String,
    console: &[String],
) -> Result<(), String> {
    if let Some(panic) = panic_line(console) {
        ctx.progress.line(host, format!("  console: {panic}"));
    }
    let Some(cmd) = &bv.power_cycle else {
        return Err(format!("{why}; the host has no benchrig_power_cycle to bring it back"));
    };
    if ctx.interrupted() {
        return Err(format!("{why}; interrupted before the power cycle (`benchrig cleanup` brings it back)"));
    }
    ctx.progress.line(host, format!("  {why}: power-cycling it (`{cmd}`)"));
    run_power_cycle(cmd).await.map_err(|e| format!("{why}; the power cycle failed: {e}"))?;
    let t0 = Instant::now();
    let (fresh, now) = wait_for_boot(ctx, host, boot_id, t0 + bv.timeout)
        .await
        .map_err(|e| format!("{why}; after a power cycle: {e}"))?;
    ctx.opened(host, &fresh);
    slot.session = Some(fresh);
    verify(boot_id, &rec.baseline, None, &now).map_err(|e| format!("{why}; after a power cycle: {e}"))?;
    ctx.progress.line(host, format!("  back on kernel {} after the power cycle", rec.baseline));
    finish(ctx, host, slot, &rec.baseline).await
}

/// Close the session so the agent fires the boot (its goodbye), keeping
/// the host's facts for planning.
async fn close_for_boot(slot: &mut Slot) {
    if let Some(old) = slot.session.take() {
        slot.stored_facts = Some(old.facts.clone());
        let _ = old.close().await;
    }
}

/// Wait until the host answers on a boot other than `old_boot`: a new
/// session and its boot state; or why not by `deadline`.
async fn wait_for_boot(
    ctx: &RunContext,
    host: &str,
    old_boot: &str,
    deadline: Instant,
) -> Result<(HostSession, BootState), String> {
    let mut vars = ctx.checked.connection_vars(host);
    vars.insert("ansible_ssh_retries".into(), 0.into());
    vars.entry("ansible_ssh_timeout").or_insert(5.into());
    let mut last;
    let started = Instant::now();
    loop {
        if ctx.interrupted() {
            return Err("interrupted while the host was booting (`benchrig cleanup` brings it back)".into());
        }
        if let Some(why) = ctx.lease_lost(host) {
            return Err(why);
        }
        match HostSession::open(host, &vars, &ctx.builds, Some(ctx.cancel.clone())).await {
            Ok(s) => match s.boot_state().await {
                Ok(st) if st.boot_id != old_boot => return Ok((s, st)),
                Ok(_) => {
                    last = "still on the old boot".into();
                    let _ = s.close().await;
                }
                Err(e) => {
                    last = e.to_string();
                    s.abandon().await;
                }
            },
            Err(HostError::Unreachable(e) | HostError::Failed(e)) => last = e,
        }
        if Instant::now() >= deadline {
            return Err(format!(
                "the host did not come back within {} s (benchrig_boot_timeout): {last}",
                deadline.saturating_duration_since(started).as_secs().max(1)
            ));
        }
        tokio::time::sleep(Duration::from_secs(2)).await;
    }
}

async fn run_power_cycle(cmd: &str) -> Result<(), String> {
    let child = tokio::process::Command::new("/bin/sh")
        .args(["-c", cmd])
        .stdin(std::process::Stdio::null())
        .kill_on_drop(true)
        .output();
    match tokio::time::timeout(Duration::from_secs(120), child).await {
        Err(_) => Err("it ran for 120 s".into()),
        Ok(Err(e)) => Err(e.to_string()),
        Ok(Ok(out)) if out.status.success() => Ok(()),
        Ok(Ok(out)) => {
            let err = String::from_utf8_lossy(&out.stderr);
            Err(format!("{} ({})", out.status, err.lines().last().unwrap_or("no output").trim()))
        }
    }
}

/// A token no earlier boot of this host had.
fn new_token(host: &str) -> String {
    use sha2::{Digest, Sha256};
    let nanos = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap_or_default().as_nanos();
    let digest = Sha256::digest(format!("{host} {nanos} {}", std::process::id()).as_bytes());
    benchrig_wire::hex(&digest[..6])
}
