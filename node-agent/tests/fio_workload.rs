//! The `fio` workload through the agent's dispatch, running this machine's
//! fio on a directory under /var/tmp: its metrics against fio's own JSON
//! (read back with explicit paths), where its files go, a job file on the
//! host, refusals, and a cancel that stops fio.

mod common;

use benchrig_agent::dispatch;
use benchrig_agent::outbox::{Outbox, StepCtx};
use benchrig_agent::state::{HostState, Mounted};
use benchrig_agent::sysfs::SysView;
use benchrig_wire::messages::{AgentError, ErrorCode};
use benchrig_wire::steps::{Action, StepOutput};
use serde_json::{json, Value};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

struct Host {
    _dirs: [tempfile::TempDir; 2],
    st: HostState,
}

fn host() -> Host {
    let (work, mnt) = (tempfile::tempdir_in("/var/tmp").unwrap(), tempfile::tempdir_in("/var/tmp").unwrap());
    let mut st = HostState::new(SysView::real());
    st.set_work_dir(work.path().to_path_buf());
    st.mounted.push(Mounted {
        scratch: "t".into(),
        mountpoint: mnt.path().to_path_buf(),
        devices: vec![],
        mounted_by_us: false,
        created_dir: false,
        loop_devices: vec![],
    });
    Host { _dirs: [work, mnt], st }
}

impl Host {
    fn run_with(&mut self, args: Value, cancel: &AtomicBool) -> Result<StepOutput, AgentError> {
        let action = Action::from_parts("fio", args).unwrap();
        let out = Outbox::new(Box::new(std::io::sink()));
        dispatch::run(&mut self.st, &StepCtx::new(1, &out, cancel), &action)
    }

    fn run(&mut self, args: Value) -> Result<StepOutput, AgentError> {
        self.run_with(args, &AtomicBool::new(false))
    }

    fn mnt(&self) -> std::path::PathBuf {
        self.st.target(Some("t")).unwrap().mountpoint.clone()
    }
}

fn metric(out: &StepOutput, name: &str) -> f64 {
    out.metrics.iter().find(|m| m.name == name).unwrap_or_else(|| panic!("no metric {name} in {:?}", out.metrics)).value
}

#[test]
fn a_two_job_run_gives_fios_own_figures_per_job_and_direction() {
    let mut h = host();
    let out = h
        .run(json!({
            "global": {"ioengine": "psync", "bs": "4k"},
            "jobs": {
                "rr": {"rw": "randread", "size": "4M"},
                "mix": {"rw": "randrw", "size": "4M", "bs": "16k", "stonewall": null},
            },
        }))
        .unwrap();
    // The oracle: fio's JSON as it printed it, read with explicit paths.
    let doc: Value = serde_json::from_str(out.info["fio_output"].as_str().unwrap()).unwrap();
    assert_eq!(doc["jobs"][0]["jobname"], "rr");
    assert_eq!(metric(&out, "rr.read.bw"), doc["jobs"][0]["read"]["bw_bytes"].as_f64().unwrap() / 1e6);
    assert_eq!(metric(&out, "rr.read.iops"), doc["jobs"][0]["read"]["iops"].as_f64().unwrap());
    assert_eq!(metric(&out, "mix.write.iops"), doc["jobs"][1]["write"]["iops"].as_f64().unwrap());
    let p99 = doc["jobs"][1]["read"]["clat_ns"]["percentile"]["99.000000"].as_f64().unwrap();
    assert_eq!(metric(&out, "mix.read.clat_p99"), p99 / 1e3);
    assert!(metric(&out, "rr.read.iops") > 0.0 && metric(&out, "time") > 0.0);
    assert!(!out.metrics.iter().any(|m| m.name.starts_with("rr.write")), "rr only read");
    assert!(out.info["fio_version"].as_str().unwrap().starts_with("fio-"), "{:?}", out.info["fio_version"]);
    // fio's files are in the target's `fio` directory and nowhere else.
    let dir = h.mnt().join("fio");
    assert_eq!(doc["global options"]["directory"], json!(dir.to_string_lossy()));
    let mut files: Vec<String> =
        std::fs::read_dir(&dir).unwrap().map(|e| e.unwrap().file_name().to_string_lossy().into_owned()).collect();
    files.sort();
    assert_eq!(files, ["mix.0.0", "rr.0.0"]);
    let top: Vec<_> = std::fs::read_dir(h.mnt()).unwrap().collect();
    assert_eq!(top.len(), 1, "only the fio directory on the target");
    let work: Vec<_> = std::fs::read_dir(&h.st.work_dir).unwrap().collect();
    assert!(work.is_empty(), "the job file is removed: {work:?}");
}

#[test]
fn a_job_file_on_the_host_is_checked_like_a_mapping() {
    let mut h = host();
    let file = h.st.work_dir.join("seq.fio");
    std::fs::write(&file, "[global]\nsize=2M\n[seq]\nrw=write\nbs=64k\nss=iops:50%\nss_dur=1\n").unwrap();
    let out = h.run(json!({"job_file": file})).unwrap();
    assert!(metric(&out, "seq.write.bw") > 0.0);
    let ss = &out.info["steady_state"][0];
    assert_eq!((ss["job"].as_str(), ss["attained"].is_boolean()), (Some("seq"), true), "{ss}");
    std::fs::write(&file, "[seq]\nrw=write\nfilename=/dev/null\n").unwrap();
    let e = h.run(json!({"job_file": file})).unwrap_err();
    assert_eq!(e.code, ErrorCode::BadRequest);
    assert!(e.message.contains("`/dev/null` is absolute"), "{}", e.message);
    let e = h.run(json!({"job_file": "/nonexistent/x.fio"})).unwrap_err();
    assert!(e.message.contains("cannot read job file /nonexistent/x.fio"), "{}", e.message);
}

#[test]
fn fios_own_error_is_the_failure_message() {
    let mut h = host();
    let e = h.run(json!({"jobs": {"x": {"rw": "sideways"}}})).unwrap_err();
    assert_eq!(e.code, ErrorCode::Failed);
    assert!(e.message.contains("failed parsing rw=sideways; fio: job x dropped"), "{}", e.message);
}

#[test]
fn a_cancel_stops_fio() {
    let mut h = host();
    let cancel = AtomicBool::new(false);
    let started = Instant::now();
    let got = std::thread::scope(|s| {
        s.spawn(|| {
            std::thread::sleep(Duration::from_millis(1500));
            cancel.store(true, Ordering::SeqCst);
        });
        h.run_with(json!({"jobs": {"long": {"rw": "read", "size": "1M", "time_based": null, "runtime": 60}}}), &cancel)
    });
    assert_eq!(got.unwrap_err().code, ErrorCode::Cancelled);
    assert!(started.elapsed() < Duration::from_secs(20), "fio was stopped, not waited for: {:?}", started.elapsed());
}

#[test]
#[ignore = "needs root; ci/test.sh runs it (--ignored)"]
fn on_a_host_without_fio_the_step_is_unsupported_with_the_reason() {
    common::require_root("it binds a file over fio in a mount namespace of its own");
    let mut h = host();
    let fio = std::fs::canonicalize("/usr/bin/fio").expect("this machine has fio");
    let empty = h.st.work_dir.join("not-installed");
    std::fs::write(&empty, "").unwrap();
    let got = std::thread::spawn(move || {
        use rustix::mount::{mount_bind, mount_change, MountPropagationFlags};
        use rustix::thread::{unshare_unsafe, UnshareFlags};
        // This thread alone gets a private copy of the mount namespace, as a
        // lab host does (ci/lab.sh's `lacks`), and fio is bound away in it.
        // SAFETY: no file-descriptor table is unshared (no FILES).
        unsafe { unshare_unsafe(UnshareFlags::NEWNS | UnshareFlags::FS) }.unwrap();
        mount_change("/", MountPropagationFlags::PRIVATE | MountPropagationFlags::REC).unwrap();
        mount_bind(&empty, &fio).unwrap();
        h.run(json!({"jobs": {"r": {"rw": "read", "size": "1M"}}}))
    })
    .join()
    .unwrap();
    let e = got.unwrap_err();
    assert_eq!((e.code, e.message.as_str()), (ErrorCode::Unsupported, "fio is not installed on this host"));
    let meta = std::fs::metadata("/usr/bin/fio").unwrap();
    assert!(meta.len() > 0, "the bind stayed in the thread's namespace");
}

#[test]
fn files_that_cannot_fit_make_the_step_unsupported_before_fio_runs() {
    let mut h = host();
    // A job file on the host: nothing could check its sizes before it got here.
    let file = h.st.work_dir.join("huge.fio");
    std::fs::write(&file, "[huge]\nrw=write\nsize=64T\n").unwrap();
    let e = h.run(json!({"job_file": file})).unwrap_err();
    assert_eq!(e.code, ErrorCode::Unsupported, "{}", e.message);
    assert!(e.message.starts_with("fio: the job's files take 67108864 MiB and "), "{}", e.message);
    let dir = h.mnt().join("fio");
    assert_eq!(std::fs::read_dir(&dir).unwrap().count(), 0, "fio never ran");
}
