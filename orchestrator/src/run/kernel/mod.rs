//! A play's kernel on one host: boot it once before the cells that run
//! under it, verify it, and come back after them (`Booter::enter`,
//! `Booter::leave`).
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
//!
//! A Ctrl-C does not cut a boot short: as a teardown, the host is waited
//! for and brought back first (a second Ctrl-C quits at once, leaving the
//! host's record for `--resume` or `benchrig cleanup`, which bring it back
//! through `Booter::bring_back`).

mod console;
mod decide;
pub mod vars;

use console::Console;
pub use console::{console_info, panic_line};
pub use decide::{decide, verify, Decision};

use super::context::RunContext;
use crate::inventory::Vars;
use crate::playbook::kernel::KernelSpec;
use crate::progress::Progress;
use crate::session::agent_client::RequestError;
use crate::session::deploy::AgentBuilds;
use crate::session::host::{HostError, HostSession};
use benchrig_wire::boot::{BootMethod, BootOrder, BootRecord, BootState, Installed};
use benchrig_wire::facts::Facts;
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
    /// From the boot command until the host was ready again.
    pub boot_seconds: Option<f64>,
    /// Of that, benchrig's own part: from SSH answering to ready (the
    /// agent started, its handshake, facts and boot state).
    pub ready_seconds: Option<f64>,
    /// What it takes to come back; none when nothing was booted.
    pub record: Option<BootRecord>,
    /// The package it came from, when the play installed one.
    pub installed: Option<Installed>,
}

impl Booted {
    pub fn info(&self) -> serde_json::Map<String, Json> {
        let mut m = serde_json::Map::new();
        m.insert("release".into(), self.release.clone().into());
        m.insert("cmdline".into(), self.cmdline.clone().into());
        m.insert("image".into(), self.image.clone().into());
        m.insert("sha256".into(), self.sha256.clone().into());
        m.insert("boot".into(), self.method.map_or("none", BootMethod::as_str).into());
        if let Some(i) = &self.installed {
            m.insert("package".into(), format!("{} {}", i.package.package, i.package.version).into());
            m.insert("installed_now".into(), i.installed_now.into());
        }
        let install = self.installed.as_ref().filter(|i| i.installed_now).map(|i| i.seconds);
        for (key, secs) in
            [("install_seconds", install), ("boot_seconds", self.boot_seconds), ("ready_seconds", self.ready_seconds)]
        {
            if let Some(s) = secs {
                m.insert(key.into(), json!((s * 100.0).round() / 100.0));
            }
        }
        m
    }
}

/// How entering a kernel ended.
pub enum Entered {
    /// Up on it (or on it already): run the cells.
    Up(Box<Booted>),
    /// The host cannot: the cells are `unsupported`.
    Unsupported(String),
    /// It did not boot; the host is back on its baseline (verified).
    NotBooted { why: String, console: Vec<String> },
    /// The cells cannot run (an agent error): `failed` with the reason;
    /// the host is as it was.
    Failed(String),
    /// The host did not come back at all: down, and quarantined.
    Lost(String),
}

/// One host's boots and what they need: its connection variables (to
/// reconnect after each boot), its boot settings, and, in a run, the run
/// (a lost lease ends the wait; each new session's closer is kept). The
/// host's session is the caller's, replaced at each boot.
pub struct Booter<'a> {
    host: &'a str,
    vars: Vars,
    bv: BootVars,
    builds: &'a AgentBuilds,
    progress: Progress,
    run: Option<&'a RunContext>,
    /// What a relative `kernel.package` is relative to: the playbook's dir.
    playbook_dir: std::path::PathBuf,
    /// The facts of the last session closed for a boot (a host lost on its
    /// way is still planned with them).
    pub facts: Option<Facts>,
}

impl<'a> Booter<'a> {
    /// The boots of `host` in a run.
    pub fn in_run(ctx: &'a RunContext, host: &'a str) -> Result<Booter<'a>, String> {
        let vars = ctx.checked.connection_vars(host);
        let bv = BootVars::of(host, &vars, &ctx.checked.templates)?;
        let playbook_dir = std::path::Path::new(&ctx.checked.playbook.path).parent().map(|p| p.to_path_buf());
        Ok(Booter {
            host,
            vars,
            bv,
            builds: &ctx.builds,
            progress: ctx.progress,
            run: Some(ctx),
            playbook_dir: playbook_dir.unwrap_or_default(),
            facts: None,
        })
    }

    /// The boots of `host` outside a run (`benchrig cleanup`).
    pub fn alone(
        host: &'a str,
        vars: Vars,
        templates: &crate::template::Templates,
        builds: &'a AgentBuilds,
        progress: Progress,
    ) -> Result<Booter<'a>, String> {
        let bv = BootVars::of(host, &vars, templates)?;
        Ok(Booter { host, vars, bv, builds, progress, run: None, playbook_dir: Default::default(), facts: None })
    }

    fn say(&self, line: String) {
        self.progress.line(self.host, line);
    }

    /// Keep what ends a new session from outside (a run's lost lease).
    fn opened(&self, s: &HostSession) {
        if let Some(ctx) = self.run {
            ctx.opened(self.host, s);
        }
    }

    /// Boot `spec` (the session open), replacing the session with one on
    /// the new kernel.
    pub async fn enter(&mut self, session: &mut Option<HostSession>, spec: &KernelSpec) -> Entered {
        let mut state = match boot_state(session, true).await {
            Ok(s) => s,
            Err(e) => return Entered::Failed(e),
        };
        if let Some(rec) = state.pending.clone() {
            self.say(format!(
                "  a boot of benchrig's is still under way (kernel {}): back to {} first",
                rec.release, rec.baseline
            ));
            if let Err(e) = self.come_back(session, &rec, &state).await {
                return Entered::Lost(e);
            }
            state = match boot_state(session, true).await {
                Ok(s) => s,
                Err(e) => return Entered::Failed(e),
            };
        }
        if let Some(p) = state.packages.iter().find(|p| p.release == state.release) {
            // Never measured as if it were the host's own.
            return Entered::Failed(format!(
                "the host runs kernel {}, from package {} that a killed run of benchrig installed:                  reboot it into its own kernel, then `benchrig cleanup` removes the package",
                p.release, p.package
            ));
        }
        if !state.packages.is_empty() {
            // Packages a killed run installed: removed before anything else.
            if let Err(e) = self.finish(session, &state.release, &state).await {
                return Entered::Failed(e);
            }
        }
        let installed = match &spec.package {
            None => None,
            Some(file) => match self.install(session, file, spec.keep).await {
                Ok(i) => Some(i),
                Err(e) => return e,
            },
        };
        if installed.as_ref().is_some_and(|i| i.installed_now) {
            // /boot has one kernel more.
            state = match boot_state(session, true).await {
                Ok(s) => s,
                Err(e) => return self.undo_install(session, &installed, Entered::Failed(e)).await,
            };
        }
        let (release, cmdline, method) =
            match decide(spec, installed.as_ref().map(|i| i.package.release.as_str()), &state) {
                Decision::AsItIs => {
                    let mut booted = Booted::as_it_is(&state);
                    booted.installed = installed;
                    return Entered::Up(Box::new(booted));
                }
                Decision::Unsupported(why) => {
                    return self.undo_install(session, &installed, Entered::Unsupported(why)).await;
                }
                Decision::Boot { release, cmdline, method } => (release, cmdline, method),
            };
        let token = new_token(self.host);
        let order = BootOrder { release: release.clone(), cmdline, method, token: token.clone(), back: false };
        let armed = match session.as_ref().expect("read above").arm_boot(order).await {
            Ok(a) => a,
            Err(RequestError::Agent(e)) if e.code == ErrorCode::Unsupported => {
                return self.undo_install(session, &installed, Entered::Unsupported(e.message)).await
            }
            Err(e) => {
                return self.undo_install(session, &installed, Entered::Failed(format!("arming the boot: {e}"))).await
            }
        };
        let record = BootRecord {
            baseline: state.release.clone(),
            baseline_cmdline: state.cmdline.clone(),
            release: release.clone(),
            method,
            token: token.clone(),
            entry: None,
        };
        self.say(format!("  booting kernel {release} by {} ({})", method.as_str(), armed.how));
        let console = Console::start(self.bv.console.as_deref());
        let t0 = Instant::now();
        self.close_for_boot(session).await;
        let (fresh, now) = match self.wait_for_boot(&state.boot_id, t0).await {
            Ok(up) => up,
            Err(why) => {
                let lines = console.stop();
                return match self.power_cycle_back(session, &record, &state.boot_id, why.clone(), &lines).await {
                    Ok(()) => Entered::NotBooted { why, console: lines },
                    Err(e) => Entered::Lost(e),
                };
            }
        };
        let boot_seconds = t0.elapsed().as_secs_f64();
        // benchrig's own part of the switch: from SSH answering (the new
        // session's connection) to the host ready for its first cell.
        let ready_seconds = fresh.timeline.elapsed().as_secs_f64();
        let lines = console.stop();
        *session = Some(fresh);
        if let Err(why) = verify(&state.boot_id, &release, Some(&token), &now) {
            // Up, but not on what was asked: back to the baseline, and the
            // kernel did not boot.
            let back = if now.token().is_some() {
                self.come_back(session, &record, &now).await
            } else {
                self.finish(session, &record.baseline, &now).await
            };
            return match back {
                Ok(()) => Entered::NotBooted { why, console: lines },
                Err(e) => Entered::Lost(e),
            };
        }
        if now.kernel(&release).and_then(|k| k.sha256.as_deref()) != Some(armed.sha256.as_str()) {
            self.say(format!("  warning: {}'s sha256 changed during the boot", armed.image));
        }
        self.say(format!(
            "  up on kernel {release} after {boot_seconds:.1} s ({ready_seconds:.1} s of it benchrig's, from SSH to ready)"
        ));
        Entered::Up(Box::new(Booted {
            release,
            cmdline: now.cmdline,
            image: armed.image,
            sha256: armed.sha256,
            method: Some(method),
            boot_seconds: Some(boot_seconds),
            ready_seconds: Some(ready_seconds),
            record: Some(record),
            installed,
        }))
    }

    /// Put `file` (relative to the playbook) on the host and install it.
    async fn install(&self, session: &Option<HostSession>, file: &str, keep: bool) -> Result<Installed, Entered> {
        let path = self.playbook_dir.join(file);
        let s = session.as_ref().ok_or_else(|| Entered::Failed("no session".into()))?;
        self.say(format!("  installing {}", path.display()));
        match s.install_kernel(&path, keep).await {
            Ok(i) => {
                let p = &i.package;
                self.say(match i.installed_now {
                    true => {
                        format!("  installed {} {} (kernel {}) in {:.1} s", p.package, p.version, p.release, i.seconds)
                    }
                    false => format!("  {} {} is the host's already: used, and left as it is", p.package, p.version),
                });
                Ok(i)
            }
            Err(RequestError::Agent(e)) if e.code == ErrorCode::Unsupported => Err(Entered::Unsupported(e.message)),
            // The agent's words name the package already.
            Err(RequestError::Agent(e)) => Err(Entered::Failed(e.message)),
            Err(e) => Err(Entered::Failed(format!("installing {}: {e}", path.display()))),
        }
    }

    /// Nothing was booted (`outcome` says why): a package installed for
    /// it is removed again, the host being on its baseline.
    async fn undo_install(
        &self,
        session: &mut Option<HostSession>,
        installed: &Option<Installed>,
        outcome: Entered,
    ) -> Entered {
        if !installed.as_ref().is_some_and(|i| i.installed_now) {
            return outcome;
        }
        let removed = match session.as_ref() {
            Some(s) => s.boot_done().await.map_err(|e| e.to_string()),
            None => Err("no session".into()),
        };
        match removed {
            Ok(said) => {
                for line in said {
                    self.say(format!("  {line}"));
                }
                outcome
            }
            Err(e) => Entered::Failed(format!("removing the kernel package again: {e}")),
        }
    }

    /// After the cells: back to the baseline, verified, the record
    /// removed. An error means the host is not back.
    pub async fn leave(&mut self, session: &mut Option<HostSession>, booted: &Booted) -> Result<(), String> {
        let Some(rec) = &booted.record else { return Ok(()) };
        if session.is_none() {
            return Err("the host was lost on its test kernel".into());
        }
        let state = boot_state(session, false).await?;
        self.come_back(session, rec, &state).await
    }

    /// A boot of benchrig's a killed or interrupted run left (the host's
    /// record says which): back to the baseline and verified. What was
    /// done, or none when there was nothing to bring back.
    pub async fn bring_back(&mut self, session: &mut Option<HostSession>) -> Result<Option<String>, String> {
        let state = boot_state(session, false).await?;
        let Some(rec) = state.pending.clone() else {
            if state.packages.is_empty() {
                return Ok(None);
            }
            self.finish(session, &state.release, &state).await?;
            return Ok(Some("removed the kernel packages benchrig had installed".into()));
        };
        self.come_back(session, &rec, &state).await?;
        Ok(Some(format!("back on kernel {} from benchrig's boot of {}", rec.baseline, rec.release)))
    }

    /// Boot back to the baseline from `state` and verify.
    async fn come_back(
        &mut self,
        session: &mut Option<HostSession>,
        rec: &BootRecord,
        state: &BootState,
    ) -> Result<(), String> {
        if state.release == rec.baseline && state.token().is_none() {
            // Never booted, or back already (a power cycle): only the record goes.
            return self.finish(session, &rec.baseline, state).await;
        }
        let order = BootOrder {
            release: rec.baseline.clone(),
            cmdline: String::new(),
            method: rec.method,
            token: rec.token.clone(),
            back: true,
        };
        let armed = session.as_ref().ok_or("no session")?.arm_boot(order).await;
        let console = Console::start(self.bv.console.as_deref());
        let t0 = Instant::now();
        let came = match armed {
            Ok(a) => {
                self.say(format!("  back to kernel {} ({})", rec.baseline, a.how));
                self.close_for_boot(session).await;
                self.wait_for_boot(&state.boot_id, t0).await
            }
            Err(e) => Err(format!("arming the way back: {e}")),
        };
        let lines = console.stop();
        match came {
            Ok((fresh, now)) => {
                *session = Some(fresh);
                if let Err(why) = verify(&state.boot_id, &rec.baseline, None, &now) {
                    return self.power_cycle_back(session, rec, &now.boot_id, why, &lines).await;
                }
                self.say(format!("  back on kernel {} after {:.1} s", rec.baseline, t0.elapsed().as_secs_f64()));
                self.finish(session, &rec.baseline, &now).await
            }
            Err(why) => self.power_cycle_back(session, rec, &state.boot_id, why, &lines).await,
        }
    }

    /// The host, in the state `now` it was just read in, is on its
    /// baseline: the agent removes the record and the one-shot entry.
    async fn finish(&self, session: &mut Option<HostSession>, baseline: &str, now: &BootState) -> Result<(), String> {
        if now.release != baseline {
            return Err(format!("the host runs kernel {}, not its baseline {baseline}", now.release));
        }
        let removed = session.as_ref().ok_or("no session")?.boot_done().await.map_err(|e| e.to_string())?;
        if !removed.is_empty() {
            self.say(format!("  {}", removed.join("; ")));
        }
        Ok(())
    }

    /// A boot that did not come back (`why`): power-cycle the host, which
    /// lands it on its baseline (the default entry never changed), and
    /// verify it. An error when it does not come back.
    async fn power_cycle_back(
        &mut self,
        session: &mut Option<HostSession>,
        rec: &BootRecord,
        boot_id: &str,
        why: String,
        console: &[String],
    ) -> Result<(), String> {
        if let Some(panic) = panic_line(console) {
            self.say(format!("  console: {panic}"));
        }
        let Some(cmd) = self.bv.power_cycle.clone() else {
            return Err(format!("{why}; the host has no benchrig_power_cycle to bring it back"));
        };
        self.say(format!("  {why}: power-cycling it (`{cmd}`)"));
        run_power_cycle(&cmd).await.map_err(|e| format!("{why}; the power cycle failed: {e}"))?;
        let (fresh, now) = self
            .wait_for_boot(boot_id, Instant::now())
            .await
            .map_err(|e| format!("{why}; after a power cycle: {e}"))?;
        *session = Some(fresh);
        verify(boot_id, &rec.baseline, None, &now).map_err(|e| format!("{why}; after a power cycle: {e}"))?;
        self.say(format!("  back on kernel {} after the power cycle", rec.baseline));
        self.finish(session, &rec.baseline, &now).await
    }

    /// Close the session so the agent fires the boot (its goodbye),
    /// keeping the host's facts.
    async fn close_for_boot(&mut self, session: &mut Option<HostSession>) {
        if let Some(old) = session.take() {
            self.facts = Some(old.facts.clone());
            let _ = old.close().await;
        }
    }

    /// Wait until the host answers on a boot other than `old_boot`: a new
    /// session and its boot state; or why not, `benchrig_boot_timeout`
    /// after `since`. A Ctrl-C does not end the wait (the host is brought
    /// back first); a lost lease does.
    async fn wait_for_boot(&self, old_boot: &str, since: Instant) -> Result<(HostSession, BootState), String> {
        let mut vars = self.vars.clone();
        vars.insert("ansible_ssh_retries".into(), 0.into());
        vars.entry("ansible_ssh_timeout").or_insert(5.into());
        let mut last;
        loop {
            if let Some(why) = self.run.and_then(|ctx| ctx.lease_lost(self.host)) {
                return Err(why);
            }
            match HostSession::open(self.host, &vars, self.builds, None).await {
                Ok(s) => match s.boot_state(false).await {
                    Ok(st) if st.boot_id != old_boot => {
                        self.opened(&s);
                        return Ok((s, st));
                    }
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
            if since.elapsed() >= self.bv.timeout {
                return Err(format!(
                    "the host did not come back within {} s (benchrig_boot_timeout): {last}",
                    self.bv.timeout.as_secs()
                ));
            }
            tokio::time::sleep(Duration::from_secs(2)).await;
        }
    }
}

impl Booted {
    /// The kernel the host runs, with no boot.
    fn as_it_is(state: &BootState) -> Booted {
        let k = state.kernel(&state.release);
        Booted {
            release: state.release.clone(),
            cmdline: state.cmdline.clone(),
            image: k.map(|k| k.image.clone()).unwrap_or_default(),
            sha256: k.and_then(|k| k.sha256.clone()).unwrap_or_default(),
            method: None,
            boot_seconds: None,
            ready_seconds: None,
            record: None,
            installed: None,
        }
    }
}

async fn boot_state(session: &Option<HostSession>, means: bool) -> Result<BootState, String> {
    let s = session.as_ref().ok_or("no session")?;
    s.boot_state(means).await.map_err(|e| format!("reading the host's boot: {e}"))
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
