//! Booting the host into a kernel once, and back (`Request::BootState`,
//! `Boot`, `BootDone`; see `benchrig_wire::boot`).
//!
//! A boot is armed, then fired when the session ends, after everything it
//! set up is released (`fire`, from `session`): the orchestrator waits for
//! the host to come back and opens a new session. Before anything is
//! changed, the boot is written down in the work dir (`record`), so the
//! next agent on the host, after a controller died or a Ctrl-C, tells the
//! orchestrator what to bring back. The default boot entry is never
//! changed: a one-shot (`grub`) or a kexec, so any reboot or power cycle
//! lands on the baseline.

pub mod grub;
pub mod package;
mod record;

use benchrig_wire::boot::{Armed, BootMeans, BootMethod, BootOrder, BootState, InstalledKernel, TOKEN_WORD};
use benchrig_wire::messages::AgentError;
use std::path::Path;
use std::process::{Command, Stdio};

/// What boots the host when the session ends.
#[derive(Clone, Debug, PartialEq)]
pub struct Firing {
    argv: Vec<String>,
}

/// The host's boot, and the record of a boot of ours under way; with
/// `means`, what it can boot with.
pub fn state(work_dir: &Path, means: bool) -> BootState {
    let release = rustix::system::uname().release().to_string_lossy().into_owned();
    let pending = record::read(work_dir, record::BOOT).unwrap_or_else(|e| {
        crate::say!("benchrig-agent: {e}");
        None
    });
    BootState {
        boot_id: crate::exports::boot_id(),
        kernels: installed("/boot", &release),
        release,
        cmdline: read_trim("/proc/cmdline"),
        means: means.then(boot_means),
        pending,
        packages: package::ours(work_dir),
    }
}

/// What the host can boot a kernel once with.
fn boot_means() -> BootMeans {
    let grub = grub::Grub::find();
    let (no_reboot, bootloader) = match &grub {
        Some(g) => {
            let cfg = std::fs::read_to_string(g.cfg()).unwrap_or_default();
            (g.why_not(&cfg), Some(grub_version(g)))
        }
        None if Path::new("/sys/firmware/efi").exists() && crate::cmd::which("bootctl").is_some() => {
            (Some("systemd-boot's one-shot entries are not supported yet (only GRUB's)".into()), None)
        }
        None => (Some("no bootloader benchrig can boot a kernel once with (GRUB's grub-reboot)".into()), None),
    };
    BootMeans { no_kexec: why_no_kexec(), no_reboot: root_first().or(no_reboot), bootloader }
}

/// Arm a boot: write it down, then load the kernel (kexec) or add the
/// one-shot entry (GRUB). It fires when the session ends.
pub fn arm(work_dir: &Path, order: &BootOrder) -> Result<(Armed, Firing), AgentError> {
    // The way back by a plain reboot needs nothing of the bootloader: it
    // is never refused for what a one-shot would need.
    let gate = !(order.back && order.method == BootMethod::Reboot);
    let st = state(work_dir, gate);
    let means = st.means.clone().unwrap_or_default();
    let why_not = match order.method {
        BootMethod::Kexec => means.no_kexec,
        BootMethod::Reboot => means.no_reboot,
    };
    if let (true, Some(why)) = (gate, why_not) {
        return Err(AgentError::unsupported(why));
    }
    let kernel = st.kernel(&order.release).cloned().ok_or_else(|| {
        let have: Vec<&str> = st.kernels.iter().map(|k| k.release.as_str()).collect();
        AgentError::unsupported(format!(
            "kernel {} is not installed (in /boot: {})",
            order.release,
            if have.is_empty() { "none".to_string() } else { have.join(", ") }
        ))
    })?;
    let mut rec = match (&st.pending, order.back) {
        (Some(r), true) => r.clone(),
        (None, true) => {
            return Err(AgentError::failed("no boot of benchrig's is under way on this host to come back from"))
        }
        (Some(r), false) => {
            return Err(AgentError::failed(format!(
                "a boot of benchrig's is still under way here (kernel {}, token {}): bring the host back first",
                r.release, r.token
            )))
        }
        (None, false) => benchrig_wire::boot::BootRecord {
            baseline: st.release.clone(),
            baseline_cmdline: own_words(&st.cmdline),
            release: order.release.clone(),
            method: order.method,
            token: order.token.clone(),
            entry: None,
        },
    };
    let systemd = Path::new("/run/systemd/system").is_dir();
    let (cmdline, how, argv) = match (order.method, order.back) {
        (BootMethod::Reboot, true) => {
            let argv = if systemd { vec!["systemctl", "reboot"] } else { vec!["reboot"] };
            (String::new(), "a reboot into the default entry".to_string(), argv)
        }
        (BootMethod::Reboot, false) => {
            let g = grub::Grub::find().ok_or_else(|| AgentError::unsupported("GRUB is gone"))?;
            let cfg = std::fs::read_to_string(g.cfg())
                .map_err(|e| AgentError::failed(format!("{}: {e}", g.cfg().display())))?;
            let body = grub::entry_for(&cfg, &order.release).ok_or_else(|| {
                AgentError::unsupported(format!("{} has no entry for kernel {}", g.cfg().display(), order.release))
            })?;
            let extra = words(&[&order.cmdline, &format!("{TOKEN_WORD}={}", order.token)]);
            let block = grub::one_shot(&body, &order.release, &order.token, &extra);
            rec.entry = Some(grub::entry_id(&order.token));
            record::write(work_dir, record::BOOT, &rec)?;
            let custom = g.custom();
            let mut text = std::fs::read_to_string(&custom).unwrap_or_default();
            if !text.is_empty() && !text.ends_with('\n') {
                text.push('\n');
            }
            text.push_str(&block);
            write_root_file(&custom, &text)?;
            let id = grub::entry_id(&order.token);
            crate::cmd::run_ok(&[g.reboot.to_string_lossy().as_ref(), id.as_str()]).map_err(AgentError::failed)?;
            let cmdline = words(&[&grub::entry_args(&body).unwrap_or_default(), &extra]);
            let argv = if systemd { vec!["systemctl", "reboot"] } else { vec!["reboot"] };
            (cmdline, format!("grub-reboot {id}, then a reboot"), argv)
        }
        (BootMethod::Kexec, back) => {
            let cmdline = if back {
                rec.baseline_cmdline.clone()
            } else {
                words(&[&own_words(&st.cmdline), &order.cmdline, &format!("{TOKEN_WORD}={}", order.token)])
            };
            if !back {
                record::write(work_dir, record::BOOT, &rec)?;
            }
            let mut load = vec!["kexec".to_string(), "-l".into(), kernel.image.clone()];
            if let Some(initrd) = &kernel.initrd {
                load.push(format!("--initrd={initrd}"));
            }
            load.push(format!("--command-line={cmdline}"));
            crate::cmd::run_ok(&load).map_err(AgentError::failed)?;
            let argv = if systemd { vec!["systemctl", "kexec"] } else { vec!["sh", "-c", "sync; exec kexec -e"] };
            (cmdline, "kexec".to_string(), argv)
        }
    };
    let sha256 = sha256_of(&kernel.image).ok_or_else(|| AgentError::failed(format!("cannot read {}", kernel.image)))?;
    let armed = Armed { image: kernel.image.clone(), sha256, cmdline, how };
    Ok((armed, Firing { argv: argv.into_iter().map(String::from).collect() }))
}

/// The host is back on its baseline: remove the one-shot entry (and a
/// `next_entry` of ours GRUB did not get to), unload a kernel kexec still
/// holds, and the record.
pub fn done(work_dir: &Path) -> Result<Vec<String>, AgentError> {
    let mut said = match record::read(work_dir, record::BOOT).map_err(AgentError::failed)? {
        Some(rec) => boot_undone(work_dir, &rec)?,
        None => vec![],
    };
    let running = rustix::system::uname().release().to_string_lossy().into_owned();
    // The host is back either way: a package that would not go (dpkg's lock
    // held all along) stays recorded, for the next run or `cleanup`.
    match package::remove_ours(work_dir, &running) {
        Ok(removed) => said.extend(removed),
        Err(e) => {
            said.push(format!("warning: {e}; it stays recorded, and the next run or `benchrig cleanup` removes it"))
        }
    }
    Ok(said)
}

/// Undo what arming `rec` changed (the host is back on its baseline).
fn boot_undone(work_dir: &Path, rec: &benchrig_wire::boot::BootRecord) -> Result<Vec<String>, AgentError> {
    let mut said = vec![];
    if let Some(g) = grub::Grub::find() {
        let custom = g.custom();
        if let Ok(text) = std::fs::read_to_string(&custom) {
            let (rest, found) = grub::without_block(&text, Some(&rec.token));
            if found {
                if rest.trim().is_empty() {
                    std::fs::remove_file(&custom)
                        .map_err(|e| AgentError::failed(format!("{}: {e}", custom.display())))?;
                } else {
                    write_root_file(&custom, &rest)?;
                }
                said.push(format!("removed the one-shot entry from {}", custom.display()));
            }
        }
        let env = crate::cmd::run(&[g.editenv.to_string_lossy().as_ref(), "-", "list"]).ok();
        let ours = format!("next_entry={}", grub::entry_id(&rec.token));
        if env.is_some_and(|o| o.stdout.lines().any(|l| l.trim() == ours)) {
            crate::cmd::run_ok(&[g.editenv.to_string_lossy().as_ref(), "-", "unset", "next_entry"])
                .map_err(AgentError::failed)?;
            said.push("unset GRUB's next_entry, which was still ours".into());
        }
    }
    if rec.method == BootMethod::Kexec && read_trim("/sys/kernel/kexec_loaded") == "1" {
        let _ = crate::cmd::run(&["kexec", "-u"]);
    }
    record::remove(work_dir, record::BOOT).map_err(AgentError::failed)?;
    Ok(said)
}

/// Debian's kexec-tools with `LOAD_KEXEC=true` (its default) loads
/// `/vmlinuz`, the newest kernel, as the host shuts down, and its reboot
/// becomes a kexec of that: a reboot meant for the firmware and the
/// bootloader says so with the file kexec-tools' own `coldreboot` makes.
/// (A kexec of ours is safe: kexec-load leaves a loaded kernel alone.)
fn cold_reboot() {
    let defaults = std::fs::read_to_string("/etc/default/kexec").unwrap_or_default();
    let loads = defaults.lines().any(|l| matches!(l.trim(), "LOAD_KEXEC=true" | "LOAD_KEXEC=\"true\""));
    if loads && Path::new("/etc/init.d/kexec-load").exists() {
        if let Err(e) = std::fs::write("/no-kexec-reboot", "") {
            crate::say!("benchrig-agent: /no-kexec-reboot: {e}: kexec-tools may kexec /vmlinuz instead of rebooting");
        }
    }
}

/// Boot: run the firing command in a session of its own, a second from
/// now, so that it outlives this agent and its SSH channel.
pub fn fire(f: &Firing) {
    if f.argv.last().is_some_and(|a| a == "reboot") {
        cold_reboot();
    }
    use std::os::unix::process::CommandExt;
    let script = format!("sleep 1; exec {}", f.argv.iter().map(|a| shell_quote(a)).collect::<Vec<_>>().join(" "));
    let mut cmd = Command::new("/bin/sh");
    cmd.args(["-c", &script]).stdin(Stdio::null()).stdout(Stdio::null()).stderr(Stdio::null());
    // SAFETY: setsid is async-signal-safe; nothing else runs between fork and exec.
    unsafe {
        cmd.pre_exec(|| rustix::process::setsid().map(|_| ()).map_err(std::io::Error::from));
    }
    if let Err(e) = cmd.spawn() {
        crate::say!("benchrig-agent: could not start the boot ({}): {e}", f.argv.join(" "));
    }
}

fn shell_quote(s: &str) -> String {
    format!("'{}'", s.replace('\'', r"'\''"))
}

/// Booting needs root: kexec_load and the bootloader's files.
pub(super) fn root_first() -> Option<String> {
    (!rustix::process::geteuid().is_root()).then(|| "booting a kernel needs root (`become: true`)".to_string())
}

/// Why kexec cannot boot a kernel here, or none.
fn why_no_kexec() -> Option<String> {
    if let Some(why) = root_first() {
        return Some(why);
    }
    if crate::cmd::which("kexec").is_none() {
        return Some("kexec is not installed on this host (Debian and Fedora/RHEL package kexec-tools)".into());
    }
    if !Path::new("/sys/kernel/kexec_loaded").exists() {
        return Some("the running kernel has no kexec (CONFIG_KEXEC)".into());
    }
    if read_trim("/proc/sys/kernel/kexec_load_disabled") == "1" {
        return Some("kexec is disabled (kernel.kexec_load_disabled = 1)".into());
    }
    let lockdown = read_trim("/sys/kernel/security/lockdown");
    if !lockdown.is_empty() && !lockdown.contains("[none]") {
        return Some(format!("the kernel is locked down ({lockdown}): it kexecs only signed images"));
    }
    None
}

/// The kernels in `dir` (`vmlinuz-<release>`, with `initrd.img-<release>`
/// or `initramfs-<release>.img`), newest first; the sha256 of `running`'s.
fn installed(dir: &str, running: &str) -> Vec<InstalledKernel> {
    let mut out: Vec<InstalledKernel> = std::fs::read_dir(dir)
        .into_iter()
        .flatten()
        .flatten()
        .filter_map(|e| {
            let name = e.file_name().into_string().ok()?;
            let release = name.strip_prefix("vmlinuz-")?.to_string();
            let image = format!("{dir}/{name}");
            let initrd = [format!("{dir}/initrd.img-{release}"), format!("{dir}/initramfs-{release}.img")]
                .into_iter()
                .find(|p| Path::new(p).is_file());
            let sha256 = (release == running).then(|| sha256_of(&image)).flatten();
            Some(InstalledKernel { sha256, release, image, initrd })
        })
        .collect();
    out.sort_by_key(|k| std::cmp::Reverse(natural(&k.release)));
    out
}

/// A release as its numbers and words, so `6.12` sorts after `6.9`.
fn natural(release: &str) -> Vec<(u64, String)> {
    let mut parts = Vec::new();
    let mut rest = release;
    while !rest.is_empty() {
        let digits = rest.len() - rest.trim_start_matches(|c: char| c.is_ascii_digit()).len();
        let (num, tail) = rest.split_at(digits);
        let word_len = tail.len() - tail.trim_start_matches(|c: char| !c.is_ascii_digit()).len();
        let (word, tail) = tail.split_at(word_len);
        parts.push((num.parse().unwrap_or(0), word.to_string()));
        rest = tail;
    }
    parts
}

pub(super) fn sha256_of(path: &str) -> Option<String> {
    use sha2::{Digest, Sha256};
    Some(benchrig_wire::hex(&Sha256::digest(std::fs::read(path).ok()?)))
}

fn grub_version(g: &grub::Grub) -> String {
    let out = crate::cmd::run(&[g.reboot.to_string_lossy().as_ref(), "--version"]).ok();
    out.and_then(|o| o.stdout.split_whitespace().last().map(|v| format!("GRUB {v}"))).unwrap_or_else(|| "GRUB".into())
}

/// The words of a running command line that are the host's own: without
/// what the bootloader adds (`BOOT_IMAGE=`, `initrd=`) and benchrig's token.
fn own_words(cmdline: &str) -> String {
    cmdline
        .split_whitespace()
        .filter(|w| {
            !w.starts_with("BOOT_IMAGE=") && !w.starts_with("initrd=") && !w.starts_with(&format!("{TOKEN_WORD}="))
        })
        .collect::<Vec<_>>()
        .join(" ")
}

fn words(parts: &[&str]) -> String {
    parts.iter().map(|s| s.trim()).filter(|s| !s.is_empty()).collect::<Vec<_>>().join(" ")
}

fn read_trim(path: &str) -> String {
    std::fs::read_to_string(path).map(|s| s.trim().to_string()).unwrap_or_default()
}

/// Replace a bootloader file whole: a new file beside it, synced, renamed
/// over it, so a crash leaves the old text or the new, never half.
fn write_root_file(path: &Path, text: &str) -> Result<(), AgentError> {
    use std::io::Write;
    let tmp = path.with_extension(format!("benchrig.{}", std::process::id()));
    let result = (|| {
        let mut f = std::fs::File::create(&tmp)?;
        f.write_all(text.as_bytes())?;
        f.sync_all()?;
        std::fs::rename(&tmp, path)
    })();
    result.map_err(|e| {
        let _ = std::fs::remove_file(&tmp);
        AgentError::failed(format!("{}: {e}", path.display()))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_hosts_own_command_line_has_no_bootloader_words_and_no_old_token() {
        assert_eq!(
            own_words("BOOT_IMAGE=/boot/vmlinuz-6.1 root=UUID=1 ro quiet benchrig.boot=old initrd=\\x"),
            "root=UUID=1 ro quiet"
        );
        assert_eq!(words(&[" a ", "", "b c"]), "a b c");
    }

    #[test]
    fn releases_sort_by_their_numbers() {
        let mut r = vec!["6.9.0-1-amd64", "6.12.9+bpo-amd64", "6.1.0-28-amd64", "6.1.0-9-amd64"];
        r.sort_by_key(|k| std::cmp::Reverse(natural(k)));
        assert_eq!(r, ["6.12.9+bpo-amd64", "6.9.0-1-amd64", "6.1.0-28-amd64", "6.1.0-9-amd64"]);
    }
}
