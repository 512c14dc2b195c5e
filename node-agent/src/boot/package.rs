//! Kernel packages from the controller (`kernel.package`): installed with
//! the host's own tools (`dpkg`, `rpm`, whose hooks build the initramfs
//! and the bootloader's entries), written down in the host's record before
//! the install, and removed again once the host is back on its baseline
//! (`remove_ours`, from `done`) unless the play keeps them.
//!
//! Only a kernel the host does not have is installed: the host's own
//! packages are never upgraded, downgraded or removed. An install that
//! moved the host's default boot entry (GRUB_DEFAULT=0 boots the newest
//! kernel) is undone at once and refused: the default never changes.

use super::record;
use benchrig_wire::boot::{Installed, KernelPackage, OurPackage};
use benchrig_wire::messages::AgentError;
use std::path::Path;
use std::time::{Duration, Instant};

/// How long an install may take: its hooks build an initramfs, slow on an
/// old machine.
const INSTALL_DEADLINE: Duration = Duration::from_secs(1800);

/// The package formats, by the file's name.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Tool {
    Dpkg,
    Rpm,
}

impl Tool {
    fn of(name: &str) -> Option<Tool> {
        if name.ends_with(".deb") {
            Some(Tool::Dpkg)
        } else if name.ends_with(".rpm") {
            Some(Tool::Rpm)
        } else {
            None
        }
    }

    fn name(self) -> &'static str {
        match self {
            Tool::Dpkg => "dpkg",
            Tool::Rpm => "rpm",
        }
    }

    fn from_name(name: &str) -> Option<Tool> {
        [Tool::Dpkg, Tool::Rpm].into_iter().find(|t| t.name() == name)
    }
}

/// The packages benchrig installed here and has not removed.
pub fn ours(work_dir: &Path) -> Vec<OurPackage> {
    record::read(work_dir, record::PACKAGES)
        .unwrap_or_else(|e| {
            crate::say!("benchrig-agent: {e}");
            None
        })
        .unwrap_or_default()
}

/// Install `pkg` (a file in the agent's dir, removed afterwards).
pub fn install(work_dir: &Path, pkg: &KernelPackage, keep: bool) -> Result<Installed, AgentError> {
    let result = install_file(work_dir, pkg, keep);
    // The upload has served (only ever one of the controller's uploads).
    if Path::new(&pkg.file).file_name().is_some_and(|n| n.to_string_lossy().starts_with(".benchrig-file-")) {
        let _ = std::fs::remove_file(&pkg.file);
    }
    result
}

fn install_file(work_dir: &Path, pkg: &KernelPackage, keep: bool) -> Result<Installed, AgentError> {
    if let Some(why) = super::root_first() {
        return Err(AgentError::unsupported(why.replace("booting a kernel", "installing a kernel package")));
    }
    let tool = Tool::of(&pkg.name)
        .ok_or_else(|| AgentError::unsupported(format!("{}: a kernel package is a .deb or an .rpm", pkg.name)))?;
    let needs: &[&str] = match tool {
        Tool::Dpkg => &["dpkg", "dpkg-deb", "dpkg-query"],
        Tool::Rpm => &["rpm"],
    };
    if let Some(missing) = needs.iter().find(|t| crate::cmd::which(t).is_none()) {
        return Err(AgentError::unsupported(format!("{}: this host has no {missing} to install it with", pkg.name)));
    }
    let sha = super::sha256_of(&pkg.file).ok_or_else(|| AgentError::failed(format!("cannot read {}", pkg.file)))?;
    if sha != pkg.sha256 {
        return Err(AgentError::failed(format!(
            "{} arrived altered: its sha256 is {sha}, not {}",
            pkg.name, pkg.sha256
        )));
    }
    let (head, listing) = match tool {
        Tool::Dpkg => (
            query(&["dpkg-deb", "--show", "--showformat=${Package}\t${Version}", &pkg.file])?,
            query(&["dpkg-deb", "--contents", &pkg.file])?,
        ),
        Tool::Rpm => (
            query(&["rpm", "-qp", "--queryformat", "%{NAME}\t%{VERSION}-%{RELEASE}", &pkg.file])?,
            query(&["rpm", "-qlp", &pkg.file])?,
        ),
    };
    let (package, version) = head
        .trim()
        .split_once('\t')
        .map(|(n, v)| (n.to_string(), v.to_string()))
        .ok_or_else(|| AgentError::failed(format!("{}: no name and version in {head:?}", pkg.name)))?;
    let release = release_in(&listing).ok_or_else(|| {
        AgentError::unsupported(format!(
            "{}: not a kernel package (no boot/vmlinuz-* or modules/*/vmlinuz in it)",
            pkg.name
        ))
    })?;
    let ours = OurPackage {
        package: package.clone(),
        version: version.clone(),
        release: release.clone(),
        tool: tool.name().into(),
        keep,
    };
    match installed_version(tool, &package, &version) {
        Have::This => return Ok(Installed { package: ours, installed_now: false, seconds: 0.0 }),
        Have::Other(v) => {
            return Err(AgentError::unsupported(format!(
                "{package} {v} is installed on this host: benchrig installs only kernels a host does not have \
                 (it never upgrades, downgrades or removes the host's own)"
            )))
        }
        Have::None => {}
    }
    if Path::new(&format!("/boot/vmlinuz-{release}")).exists() {
        return Err(AgentError::unsupported(format!(
            "kernel {release} is installed already, from another package than {package}: boot it by its release"
        )));
    }
    let default_before = default_boot();
    let mut all = self::ours(work_dir);
    all.push(ours.clone());
    record::write(work_dir, record::PACKAGES, &all)?;
    let t0 = Instant::now();
    let argv: Vec<&str> = match tool {
        Tool::Dpkg => vec!["env", "DEBIAN_FRONTEND=noninteractive", "dpkg", "--install", &pkg.file],
        Tool::Rpm => vec!["rpm", "--install", &pkg.file],
    };
    let done = run_waiting_for_lock(&argv);
    let seconds = t0.elapsed().as_secs_f64();
    let why = match done {
        Err(e) => Some(AgentError::failed(format!("installing {}: {e}", pkg.name))),
        Ok(_) if !Path::new(&format!("/boot/vmlinuz-{release}")).exists() => {
            Some(AgentError::failed(format!("{} installed, but /boot/vmlinuz-{release} is not there", pkg.name)))
        }
        Ok(_) => {
            let after = default_boot();
            (after != default_before).then(|| {
                AgentError::unsupported(format!(
                    "installing {} changed the host's default boot entry ({} → {}), which benchrig never does: \
                     it was removed again. Pin the default (GRUB_DEFAULT=saved and grub-set-default, or an entry id) \
                     or install the kernel beforehand and name its release",
                    pkg.name,
                    default_before.as_deref().unwrap_or("?"),
                    after.as_deref().unwrap_or("?")
                ))
            })
        }
    };
    if let Some(mut why) = why {
        match remove_one(&ours) {
            Ok(()) => keep_record(work_dir, without(self::ours(work_dir), &ours))?,
            // Still recorded: the next run or `cleanup` tries again.
            Err(e) => why = AgentError::failed(format!("{}; removing it again failed too: {e}", why.message)),
        }
        return Err(why);
    }
    Ok(Installed { package: ours, installed_now: true, seconds })
}

/// The packages benchrig installed, removed (the host back on its
/// baseline, running `running`), but those kept, which become the host's.
pub fn remove_ours(work_dir: &Path, running: &str) -> Result<Vec<String>, AgentError> {
    let all = record::read::<Vec<OurPackage>>(work_dir, record::PACKAGES).map_err(AgentError::failed)?;
    let Some(all) = all else { return Ok(vec![]) };
    let mut said = vec![];
    let mut left = vec![];
    let mut failed = vec![];
    for p in all {
        if p.keep {
            said.push(format!("kept kernel package {} {} (kernel.keep)", p.package, p.version));
        } else if p.release == running {
            failed.push(format!("kernel {} that benchrig installed is the one running", p.release));
            left.push(p);
        } else {
            match remove_one(&p) {
                Ok(()) => said.push(format!("removed kernel package {} {}", p.package, p.version)),
                Err(e) => {
                    failed.push(e);
                    left.push(p);
                }
            }
        }
    }
    keep_record(work_dir, left)?;
    match failed.is_empty() {
        true => Ok(said),
        false => Err(AgentError::failed(format!("removing kernel packages: {}", failed.join("; ")))),
    }
}

fn remove_one(p: &OurPackage) -> Result<(), String> {
    // Not there (any more): nothing to remove. dpkg's leftovers of a
    // failed install (half-installed, config files) go with the purge.
    let (there, argv): (bool, Vec<String>) = match Tool::from_name(&p.tool) {
        Some(Tool::Dpkg) => (
            dpkg_state(&p.package).is_some_and(|(state, _)| state != "not-installed"),
            ["env", "DEBIAN_FRONTEND=noninteractive", "dpkg", "--purge", &p.package].map(String::from).to_vec(),
        ),
        Some(Tool::Rpm) => (
            matches!(installed_version(Tool::Rpm, &p.package, &p.version), Have::This),
            vec!["rpm".into(), "--erase".into(), format!("{}-{}", p.package, p.version)],
        ),
        None => return Err(format!("{}: installed by {}, which this agent does not know", p.package, p.tool)),
    };
    if !there {
        return Ok(());
    }
    run_waiting_for_lock(&argv).map(|_| ())
}

/// Run a package tool, waiting while another holds the package database
/// (apt's daily run, an admin's install): up to five minutes. Its error
/// is the tool's own words of what went wrong.
fn run_waiting_for_lock<S: AsRef<str>>(argv: &[S]) -> Result<crate::cmd::Output, String> {
    let since = Instant::now();
    loop {
        let out = crate::cmd::run_within(argv, INSTALL_DEADLINE)?;
        let locked = !out.ok() && (out.stderr.contains("lock") || out.stderr.contains("Lock"));
        if out.ok() {
            return Ok(out);
        }
        if !locked || since.elapsed() > Duration::from_secs(300) {
            let tool = argv.iter().map(AsRef::as_ref).find(|a| matches!(*a, "dpkg" | "rpm")).unwrap_or("the tool");
            let verb = argv.iter().map(AsRef::as_ref).find(|a| a.starts_with("--")).unwrap_or("");
            return Err(format!("{tool} {verb} failed: {}", telling(&out)));
        }
        std::thread::sleep(Duration::from_secs(5));
    }
}

/// The lines of a package tool's failure that say what went wrong (dpkg
/// ends with "Errors were encountered while processing: FILE", which
/// does not): those naming an error, at most three; else the last line.
fn telling(out: &crate::cmd::Output) -> String {
    let mut lines: Vec<&str> = vec![];
    for l in out.stderr.lines().chain(out.stdout.lines()).map(str::trim) {
        let says = l.contains("rror") || l.contains("No space") || l.contains("failed");
        if says && !l.starts_with("Errors were encountered") && !lines.contains(&l) && lines.len() < 3 {
            lines.push(l);
        }
    }
    // A line ending in ':' goes on in the next one.
    let mut said = String::new();
    for l in &lines {
        if !said.is_empty() {
            said.push_str(if said.ends_with(':') { " " } else { "; " });
        }
        said.push_str(l);
    }
    if said.is_empty() {
        out.reason()
    } else {
        said
    }
}

/// The record of what is still installed: none once nothing is.
fn keep_record(work_dir: &Path, left: Vec<OurPackage>) -> Result<(), AgentError> {
    if left.is_empty() {
        record::remove(work_dir, record::PACKAGES).map_err(AgentError::failed)
    } else {
        record::write(work_dir, record::PACKAGES, &left)
    }
}

fn without(all: Vec<OurPackage>, p: &OurPackage) -> Vec<OurPackage> {
    all.into_iter().filter(|q| q != p).collect()
}

fn query(argv: &[&str]) -> Result<String, AgentError> {
    crate::cmd::run_ok(argv).map(|o| o.stdout).map_err(AgentError::failed)
}

/// The kernel release a package's file list installs: `boot/vmlinuz-R`
/// (Debian's, older Fedora's) or `lib/modules/R/vmlinuz` (Fedora's, which
/// kernel-install copies to /boot). `dpkg-deb --contents` lines end with
/// `./boot/vmlinuz-R`; `rpm -qlp` lines are paths.
fn release_in(listing: &str) -> Option<String> {
    listing.lines().find_map(|line| {
        let path = line.split_whitespace().last()?.trim_start_matches('.');
        if let Some(r) = path.strip_prefix("/boot/vmlinuz-") {
            return Some(r.to_string());
        }
        let r = path.strip_prefix("/lib/modules/").or_else(|| path.strip_prefix("/usr/lib/modules/"))?;
        r.strip_suffix("/vmlinuz").filter(|r| !r.contains('/')).map(str::to_string)
    })
}

enum Have {
    None,
    This,
    Other(String),
}

/// Whether the host has `package`: this very version installed, another
/// (or one half installed), or none. rpm keeps several kernels of one
/// name side by side, so only this version counts there.
fn installed_version(tool: Tool, package: &str, version: &str) -> Have {
    match tool {
        Tool::Dpkg => match dpkg_state(package) {
            Some((state, v)) if state == "installed" && v == version => Have::This,
            Some((state, v)) if !matches!(state.as_str(), "not-installed" | "config-files") => {
                Have::Other(format!("{v} ({state})"))
            }
            _ => Have::None,
        },
        Tool::Rpm => match crate::cmd::run(&["rpm", "-q", &format!("{package}-{version}")]) {
            Ok(o) if o.ok() => Have::This,
            _ => Have::None,
        },
    }
}

/// dpkg's state of `package` (`installed`, `half-installed`,
/// `config-files`, …) and its version; none when dpkg does not know it.
fn dpkg_state(package: &str) -> Option<(String, String)> {
    let out = crate::cmd::run(&["dpkg-query", "--show", "--showformat=${Status}\t${Version}", package]).ok()?;
    let text = out.ok().then_some(out.stdout)?;
    let (status, version) = text.trim().split_once('\t')?;
    Some((status.split_whitespace().last()?.to_string(), version.to_string()))
}

/// The kernel image the host boots by default: grubby's word where it is
/// (Fedora, RHEL), else GRUB's configuration read; none when neither says.
fn default_boot() -> Option<String> {
    if crate::cmd::which("grubby").is_some() {
        if let Ok(o) = crate::cmd::run(&["grubby", "--default-kernel"]) {
            if o.ok() && !o.stdout.trim().is_empty() {
                return Some(o.stdout.trim().to_string());
            }
        }
    }
    let g = super::grub::Grub::find()?;
    let cfg = std::fs::read_to_string(g.cfg()).ok()?;
    let env = crate::cmd::run(&[g.editenv.to_string_lossy().as_ref(), "-", "list"])
        .ok()
        .map(|o| o.stdout)
        .unwrap_or_default();
    let saved = env.lines().find_map(|l| l.strip_prefix("saved_entry=")).map(str::to_string);
    super::grub::default_image(&cfg, saved.as_deref())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_release_is_read_from_a_debs_and_an_rpms_file_list() {
        let deb = "drwxr-xr-x root/root 0 2025-01-01 00:00 ./boot/\n\
                   -rw-r--r-- root/root 9442112 2025-01-01 00:00 ./boot/System.map-6.12.12+bpo-amd64\n\
                   -rw-r--r-- root/root 9442112 2025-01-01 00:00 ./boot/vmlinuz-6.12.12+bpo-amd64\n";
        assert_eq!(release_in(deb).as_deref(), Some("6.12.12+bpo-amd64"));
        let rpm = "/lib/modules/6.11.4-301.fc41.x86_64/modules.order\n/lib/modules/6.11.4-301.fc41.x86_64/vmlinuz\n";
        assert_eq!(release_in(rpm).as_deref(), Some("6.11.4-301.fc41.x86_64"));
        assert_eq!(release_in("./usr/share/doc/linux-base/copyright\n"), None);
        assert_eq!(release_in("/lib/modules/6.1/kernel/vmlinuz\n"), None, "a file deeper down is no kernel image");
    }

    #[test]
    fn a_failure_is_said_in_the_tools_own_words() {
        let out = crate::cmd::Output {
            status: 1,
            stdout: String::new(),
            stderr: "Selecting previously unselected package linux-image-6.12.95+deb12-cloud-amd64.\n\
                     dpkg: error processing archive /x/.benchrig-file-1 (--install):\n \
                     cannot copy extracted data for './boot/vmlinuz-6.12' to '/boot/vmlinuz-6.12.dpkg-new': \
                     failed to write (No space left on device)\n\
                     Errors were encountered while processing:\n /x/.benchrig-file-1\n"
                .into(),
        };
        let said = telling(&out);
        assert!(said.starts_with("dpkg: error processing archive"), "{said}");
        assert!(said.contains("No space left on device") && !said.contains("Errors were"), "{said}");
        assert!(said.contains("(--install): cannot copy"), "a line ending in ':' goes on: {said}");
        let bare = crate::cmd::Output { status: 2, stdout: String::new(), stderr: "something odd\n".into() };
        assert_eq!(telling(&bare), "something odd");
    }

    #[test]
    fn packages_are_told_apart_by_their_names() {
        assert_eq!(Tool::of("kernels/linux-image-6.12.12_amd64.deb"), Some(Tool::Dpkg));
        assert_eq!(Tool::of("kernel-core-6.11.4-301.fc41.x86_64.rpm"), Some(Tool::Rpm));
        assert_eq!(Tool::of("bzImage"), None);
        assert_eq!(Tool::from_name("rpm"), Some(Tool::Rpm));
    }
}
