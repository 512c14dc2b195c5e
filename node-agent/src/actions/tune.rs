//! `tune`: a play's `tune:` on this host, applied at the start of a visit.
//! Every file is found, checked and read before any is written, so a
//! setting the host cannot take fails the step with nothing changed; what
//! is written goes into `HostState::tuned` with its previous value, and a
//! release of everything (the end of every visit, shutdown, a lost
//! orchestrator) writes those back. Never a silent no-op: not root, a file
//! absent (no cpufreq in a VM) or a value the host does not offer is
//! `unsupported` with the setting and the reason.

use crate::kernel_settings::{self as ks, bracketed};
use crate::scratch;
use crate::state::{HostState, Tuned};
use benchrig_wire::messages::AgentError;
use benchrig_wire::steps::{StepOutput, TuneArgs};
use std::path::{Path, PathBuf};

/// One file to write: the setting, the value asked for and the one it had.
#[derive(Clone, Debug, PartialEq)]
pub struct Write {
    pub setting: String,
    pub path: PathBuf,
    pub value: String,
    pub previous: String,
    /// Written only to be restored after a later write that changes it too:
    /// a scheduler switch resets the queue's `nr_requests`, so its value
    /// goes in before the scheduler and comes back after it.
    pub guard: bool,
}

pub fn run(st: &mut HostState, args: &TuneArgs) -> Result<StepOutput, AgentError> {
    if !rustix::process::geteuid().is_root() {
        return Err(AgentError::unsupported(format!(
            "tune: the agent runs as uid {}, not root, and kernel settings are root's to change",
            rustix::process::geteuid().as_raw()
        )));
    }
    let writes = plan(st, args)?;
    apply(st, writes)
}

fn absent(setting: &str, path: &Path) -> AgentError {
    AgentError::unsupported(format!("tune {setting}: {} absent", path.display()))
}

/// The file's current value (a choice list's bracketed word), or why not.
fn current(setting: &str, path: &Path, choice: bool) -> Result<String, AgentError> {
    let text = std::fs::read_to_string(path).map_err(|_| absent(setting, path))?;
    Ok(if choice { bracketed(&text) } else { text.trim().to_string() })
}

/// A value must be one of the words a choice file (or its list) offers.
fn offered(setting: &str, value: &str, words: &str, path: &Path) -> Result<(), AgentError> {
    let words: Vec<&str> = words.split_whitespace().map(|w| w.trim_matches(|c| c == '[' || c == ']')).collect();
    if words.contains(&value) {
        return Ok(());
    }
    Err(AgentError::unsupported(format!(
        "tune {setting}: `{value}` is not offered by {} (it offers {})",
        path.display(),
        words.join(", ")
    )))
}

/// Every write `args` asks for, checked and with the value it replaces.
pub fn plan(st: &HostState, args: &TuneArgs) -> Result<Vec<Write>, AgentError> {
    let view = &st.view;
    let mut out: Vec<Write> = Vec::new();
    let add = |out: &mut Vec<Write>, setting: String, path: PathBuf, value: String, choice: bool| {
        let previous = current(&setting, &path, choice)?;
        if !out.iter().any(|w| w.path == path && !w.guard) {
            out.push(Write { setting, path, value, previous, guard: false });
        }
        Ok::<(), AgentError>(())
    };
    if let Some(g) = &args.governor {
        let policies = ks::cpufreq_policies(view);
        if policies.is_empty() {
            return Err(absent("governor", &ks::cpufreq_dir(view)));
        }
        for p in policies {
            let name = p.file_name().unwrap_or_default().to_string_lossy().into_owned();
            let list = p.join("scaling_available_governors");
            if let Some(words) = view.read(&list) {
                offered("governor", g, &words, &list)?;
            }
            add(&mut out, format!("governor of {name}"), p.join("scaling_governor"), g.clone(), false)?;
        }
    }
    if let Some(on) = args.boost {
        let generic = ks::cpufreq_dir(view).join("boost");
        let pstate = view.sys.join("devices/system/cpu/intel_pstate/no_turbo");
        if generic.exists() {
            add(&mut out, "boost".into(), generic, if on { "1" } else { "0" }.into(), false)?;
        } else if pstate.exists() {
            add(&mut out, "boost (intel_pstate no_turbo)".into(), pstate, if on { "0" } else { "1" }.into(), false)?;
        } else {
            return Err(AgentError::unsupported(format!(
                "tune boost: neither {} nor {} exists",
                generic.display(),
                pstate.display()
            )));
        }
    }
    if let Some(thp) = &args.thp {
        let (enabled, defrag) = TuneArgs::thp_parts(thp).map_err(AgentError::bad_request)?;
        for (file, value) in [("enabled", Some(enabled)), ("defrag", defrag)] {
            let Some(value) = value else { continue };
            let path = ks::thp_dir(view).join(file);
            let words = std::fs::read_to_string(&path).map_err(|_| absent("thp", &path))?;
            offered(&format!("thp {file}"), value, &words, &path)?;
            add(&mut out, format!("thp {file}"), path, value.to_string(), true)?;
        }
    }
    if let Some(s) = args.swappiness {
        add(&mut out, "vm.swappiness".into(), ks::vm_sysctl(view, "swappiness"), s.to_string(), false)?;
    }
    for (name, value) in &args.sysctl {
        TuneArgs::check_sysctl_name(name).map_err(AgentError::bad_request)?;
        add(&mut out, name.clone(), ks::sysctl_path(view, name), value.clone(), false)?;
    }
    if args.tunes_queues() {
        if args.devices.is_empty() {
            return Err(AgentError::bad_request("tune: queue settings need scratch devices, and none was given"));
        }
        for name in &args.devices {
            let dev = queue_device(st, name)?;
            let q = ks::queue_dir(view, &dev);
            if let Some(s) = &args.scheduler {
                let path = q.join("scheduler");
                let words = std::fs::read_to_string(&path).map_err(|_| absent("scheduler", &path))?;
                offered(&format!("scheduler of {dev}"), s, &words, &path)?;
                let nr = q.join("nr_requests");
                if let Some(n) = view.read(&nr).map(|t| t.trim().to_string()) {
                    let setting = format!("nr_requests of {dev} (reset by a scheduler switch)");
                    if !out.iter().any(|w| w.path == nr) {
                        out.push(Write { setting, path: nr, value: n.clone(), previous: n, guard: true });
                    }
                }
                add(&mut out, format!("scheduler of {dev}"), path, s.clone(), true)?;
            }
            if let Some(r) = args.read_ahead_kb {
                add(&mut out, format!("read_ahead_kb of {dev}"), q.join("read_ahead_kb"), r.to_string(), false)?;
            }
            if let Some(n) = args.nr_requests {
                add(&mut out, format!("nr_requests of {dev}"), q.join("nr_requests"), n.to_string(), false)?;
            }
        }
    }
    Ok(out)
}

/// The device whose request queue serves scratch `name`: a block device's
/// own (a partition's disk), an image's or a directory's filesystem's.
fn queue_device(st: &HostState, name: &str) -> Result<String, AgentError> {
    let entry = scratch::listed(st, name)?;
    let dev = match scratch::place(st, &entry) {
        Ok(p) => p
            .holder(&st.view)
            .ok_or_else(|| format!("no block device holds {}", scratch::expand_home(&entry.path).display())),
        Err(e) => Err(e.to_string()),
    }
    .map_err(|e| AgentError::unsupported(format!("tune: scratch `{name}`: {e}")))?;
    Ok(ks::queue_owner(&st.view, &dev))
}

/// Write each in order, recording it to be restored; on the first the
/// kernel refuses, write back what was written and say which and why.
pub fn apply(st: &mut HostState, writes: Vec<Write>) -> Result<StepOutput, AgentError> {
    let mut info = Vec::new();
    let first = st.tuned.len();
    for w in &writes {
        let tuned = Tuned { setting: w.setting.clone(), path: w.path.clone(), previous: w.previous.clone() };
        if let Err(e) = st.journal.record(&tuned.change()) {
            let undone = st.restore_tuning_since(first);
            return Err(AgentError::failed(match undone {
                Ok(_) => format!("tune {}: {e}", w.setting),
                Err(u) => format!("tune {}: {e}; {u}", w.setting),
            }));
        }
        if let Err(e) = std::fs::write(&w.path, &w.value) {
            let undone = st.restore_tuning_since(first);
            let why = match e.kind() {
                std::io::ErrorKind::PermissionDenied | std::io::ErrorKind::ReadOnlyFilesystem => "is not writable",
                _ => "was refused",
            };
            let mut msg = format!("tune {}: {} {why} ({e}) for `{}`", w.setting, w.path.display(), w.value);
            if let Err(u) = undone {
                msg += &format!("; {u}");
            }
            return Err(AgentError::unsupported(msg));
        }
        st.tuned.push(tuned);
        if w.guard {
            continue;
        }
        info.push(serde_json::json!({
            "setting": w.setting, "path": w.path.to_string_lossy(), "previous": w.previous, "applied": w.value,
        }));
    }
    let mut out = StepOutput::default();
    out.info.insert("tune".into(), info.into());
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sysfs::SysView;
    use benchrig_wire::messages::ErrorCode;
    use std::fs;

    fn host() -> (tempfile::TempDir, HostState) {
        let dir = tempfile::tempdir().unwrap();
        let mut st = HostState::new(SysView::at(dir.path()));
        st.journal = crate::journal::Journal::in_dir(&dir.path().join("work"));
        let write = |rel: &str, text: &str| {
            let p = dir.path().join(rel);
            fs::create_dir_all(p.parent().unwrap()).unwrap();
            fs::write(p, text).unwrap();
        };
        write("proc/sys/vm/swappiness", "60\n");
        write("proc/sys/vm/dirty_ratio", "20\n");
        write("sys/kernel/mm/transparent_hugepage/enabled", "always [madvise] never\n");
        write("sys/kernel/mm/transparent_hugepage/defrag", "always defer defer+madvise [madvise] never\n");
        (dir, st)
    }

    fn read(d: &tempfile::TempDir, rel: &str) -> String {
        fs::read_to_string(d.path().join(rel)).unwrap().trim().to_string()
    }

    fn args(json: serde_json::Value) -> TuneArgs {
        serde_json::from_value(json).unwrap()
    }

    #[test]
    fn settings_are_applied_and_a_release_restores_each_previous_value() {
        let (d, mut st) = host();
        let a = args(serde_json::json!({"swappiness": 10, "thp": "never/defer", "sysctl": {"vm.dirty_ratio": "5"}}));
        let writes = plan(&st, &a).unwrap();
        let previous: Vec<(&str, &str)> = writes.iter().map(|w| (w.setting.as_str(), w.previous.as_str())).collect();
        assert_eq!(
            previous,
            [("thp enabled", "madvise"), ("thp defrag", "madvise"), ("vm.swappiness", "60"), ("vm.dirty_ratio", "20")]
        );
        let out = apply(&mut st, writes).unwrap();
        assert_eq!(out.info["tune"].as_array().unwrap().len(), 4);
        assert_eq!(read(&d, "proc/sys/vm/swappiness"), "10");
        assert_eq!(read(&d, "proc/sys/vm/dirty_ratio"), "5");
        assert_eq!(read(&d, "sys/kernel/mm/transparent_hugepage/enabled"), "never");
        // Each write was journaled with the value to write back, should the agent be killed now.
        let pending: Vec<String> = st.journal.pending().iter().map(|c| format!("{c:?}")).collect();
        assert_eq!(pending.len(), 4, "{pending:?}");
        assert!(pending[2].contains("proc/sys/vm/swappiness\", previous: \"60\""), "{pending:?}");
        // Releasing one scratch's mount leaves tuning alone; releasing everything restores it.
        st.release(Some("x")).unwrap();
        assert_eq!(st.tuned.len(), 4);
        let released = st.release(None).unwrap();
        assert!(released.iter().any(|r| r == "restored vm.swappiness = 60"), "{released:?}");
        assert_eq!(read(&d, "proc/sys/vm/swappiness"), "60");
        assert_eq!(read(&d, "proc/sys/vm/dirty_ratio"), "20");
        assert_eq!(read(&d, "sys/kernel/mm/transparent_hugepage/enabled"), "madvise");
        assert_eq!(read(&d, "sys/kernel/mm/transparent_hugepage/defrag"), "madvise");
        assert!(st.tuned.is_empty());
        assert!(st.journal.pending().is_empty(), "every restore is journaled too");
    }

    #[test]
    fn a_setting_tuned_twice_is_restored_to_its_value_before_the_first() {
        let (d, mut st) = host();
        for s in [10, 30] {
            let w = plan(&st, &args(serde_json::json!({"swappiness": s}))).unwrap();
            apply(&mut st, w).unwrap();
        }
        assert_eq!(read(&d, "proc/sys/vm/swappiness"), "30");
        st.release(None).unwrap();
        assert_eq!(read(&d, "proc/sys/vm/swappiness"), "60");
    }

    #[test]
    fn what_the_host_lacks_is_unsupported_with_the_setting_and_nothing_is_written() {
        let (d, st) = host();
        let e = plan(&st, &args(serde_json::json!({"swappiness": 1, "governor": "performance"}))).unwrap_err();
        assert_eq!(e.code, ErrorCode::Unsupported);
        assert!(
            e.message.starts_with("tune governor: ") && e.message.ends_with("sys/devices/system/cpu/cpufreq absent"),
            "{e:?}"
        );
        assert_eq!(read(&d, "proc/sys/vm/swappiness"), "60");
        let e = plan(&st, &args(serde_json::json!({"boost": true}))).unwrap_err();
        assert!(e.message.starts_with("tune boost: neither "), "{e:?}");
        let e = plan(&st, &args(serde_json::json!({"sysctl": {"vm.no_such_knob": "1"}}))).unwrap_err();
        assert!(e.message.starts_with("tune vm.no_such_knob: ") && e.message.ends_with("absent"), "{e:?}");
        let e = plan(&st, &args(serde_json::json!({"read_ahead_kb": 16}))).unwrap_err();
        assert_eq!(e.code, ErrorCode::BadRequest, "{e:?}");
        // A governor the policy does not offer.
        let p = d.path().join("sys/devices/system/cpu/cpufreq/policy0");
        fs::create_dir_all(&p).unwrap();
        fs::write(p.join("scaling_governor"), "schedutil\n").unwrap();
        fs::write(p.join("scaling_available_governors"), "performance schedutil\n").unwrap();
        let e = plan(&st, &args(serde_json::json!({"governor": "ondemand"}))).unwrap_err();
        assert!(
            e.message.contains("`ondemand` is not offered") && e.message.contains("performance, schedutil"),
            "{e:?}"
        );
        let w = plan(&st, &args(serde_json::json!({"governor": "performance"}))).unwrap();
        assert_eq!((w[0].setting.as_str(), w[0].previous.as_str()), ("governor of policy0", "schedutil"));
    }

    #[test]
    fn a_write_the_kernel_refuses_undoes_the_writes_before_it() {
        let (d, mut st) = host();
        let mut writes = plan(&st, &args(serde_json::json!({"swappiness": 5}))).unwrap();
        // A directory in place of a file: writing it fails, as a refused sysfs write does.
        let bad = d.path().join("proc/sys/vm/bad");
        fs::create_dir_all(&bad).unwrap();
        writes.push(Write {
            setting: "vm.bad".into(),
            path: bad,
            value: "1".into(),
            previous: "0".into(),
            guard: false,
        });
        let e = apply(&mut st, writes).unwrap_err();
        assert_eq!(e.code, ErrorCode::Unsupported);
        assert!(e.message.starts_with("tune vm.bad: "), "{e:?}");
        assert_eq!(read(&d, "proc/sys/vm/swappiness"), "60");
        assert!(st.tuned.is_empty());
    }
}
