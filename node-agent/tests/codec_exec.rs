//! cold_read, exec and raw through the agent's action dispatch, against real
//! files under /var/tmp (tmpfs cannot be made cold) and real loop devices.
//! The tests that need root (drop_caches, losetup) say so first.

mod common;

use benchrig_agent::dispatch;
use benchrig_agent::outbox::{Outbox, StepCtx};
use benchrig_agent::state::{HostState, Mounted};
use benchrig_agent::sysfs::SysView;
use benchrig_wire::messages::{AgentError, ErrorCode};
use benchrig_wire::scratch::{ScratchDevice, ScratchKind};
use benchrig_wire::steps::{Action, StepOutput};
use std::io::{Read, Seek, SeekFrom, Write};
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};
use std::sync::atomic::AtomicBool;
use std::sync::Mutex;

use common::{require_root, Loop};

struct Host {
    st: HostState,
    dir: tempfile::TempDir,
}

/// A host whose scratch `t` is "mounted" at a fresh directory under /var/tmp.
fn host() -> Host {
    let dir = tempfile::tempdir_in("/var/tmp").unwrap();
    let mut st = HostState::new(SysView::real());
    st.set_work_dir(dir.path().join("work"));
    std::fs::create_dir_all(&st.work_dir).unwrap();
    let mnt = dir.path().join("mnt");
    std::fs::create_dir_all(&mnt).unwrap();
    let devices = st.view.device_for_path(&mnt).into_iter().collect();
    st.mounted.push(Mounted {
        scratch: "t".into(),
        mountpoint: mnt,
        devices,
        mounted_by_us: false,
        created_dir: false,
        loop_devices: vec![],
    });
    Host { st, dir }
}

impl Host {
    fn mnt(&self) -> PathBuf {
        self.dir.path().join("mnt")
    }

    fn run(&mut self, action: serde_json::Value) -> Result<StepOutput, AgentError> {
        let action: Action = serde_json::from_value(action).expect("a valid action");
        let out = Outbox::new(Box::new(std::io::sink()));
        let cancel = AtomicBool::new(false);
        dispatch::run(&mut self.st, &StepCtx::new(1, &out, &cancel), &action)
    }
}

fn metric(out: &StepOutput, name: &str) -> f64 {
    out.metrics.iter().find(|m| m.name == name).unwrap_or_else(|| panic!("no metric {name} in {out:?}")).value
}

fn files(dir: &Path) -> Vec<String> {
    let mut v: Vec<String> =
        std::fs::read_dir(dir).unwrap().map(|e| e.unwrap().file_name().to_string_lossy().into_owned()).collect();
    v.sort();
    v
}

fn cold_read(h: &mut Host, codec: &str, tool: &str, content: &str, size: u64) -> StepOutput {
    for f in files(&h.mnt()) {
        std::fs::remove_file(h.mnt().join(f)).unwrap();
    }
    let out = h
        .run(serde_json::json!({"action": "cold_read", "args": {
            "codec": codec, "tool": tool, "content": content, "size": size, "bs": "128k", "file": "lib.so"
        }}))
        .unwrap_or_else(|e| panic!("{codec} {tool} {content}: {e:?}"));
    let ext = match codec {
        "raw" => "",
        "lzo" => ".lzo",
        "gzip" => ".gz",
        _ => ".zst",
    };
    // Only the copy that is read stays on disk, as in the experiment (with
    // the stamp that lets the next repetition reuse it).
    assert_eq!(files(&h.mnt()), vec![format!("lib.so{ext}"), format!("lib.so{ext}.stamp")], "{codec} {tool}");
    let stored = std::fs::metadata(h.mnt().join(format!("lib.so{ext}"))).unwrap().len();
    let info = &out.info;
    assert_eq!(info["bytes"], size, "{codec} {tool}");
    assert_eq!(info["compressed_bytes"], stored);
    assert_eq!(info["codec"], codec);
    assert_eq!(info["tool"], tool);
    assert_eq!(info["cold"], "drop_caches");
    assert_eq!(info["resident_pages_at_start"], 0, "{codec} {tool}: not cold");
    let ratio = info["ratio"].as_f64().unwrap();
    assert!((ratio - size as f64 / stored as f64).abs() < 1e-9);
    for m in ["time", "throughput", "user", "sys"] {
        assert!(metric(&out, m).is_finite() && metric(&out, m) >= 0.0, "{m}");
    }
    assert!(metric(&out, "time") > 0.0 && (size == 0 || metric(&out, "throughput") > 0.0));
    let usage = out.usage.as_ref().unwrap();
    assert_eq!(metric(&out, "user"), usage.user_s);
    eprintln!(
        "cold_read {codec:>4} {tool:>8} {content:>6}: ratio {ratio:7.2}  {:7.3} s  {:8.1} MB/s  user {:.3} sys {:.3}  dev {:?}",
        metric(&out, "time"),
        metric(&out, "throughput"),
        usage.user_s,
        usage.sys_s,
        usage.devices.iter().map(|d| d.read_bytes).collect::<Vec<_>>()
    );
    out
}

#[test]
#[ignore = "needs root; ci/test.sh runs it (--ignored)"]
fn cold_read_every_codec_builtin_and_external() {
    require_root("cold reads drop the page cache");
    let mut h = host();
    // The blog's 5.5 MB library, and a size that is no multiple of any block.
    for (content, size) in [("binary", 5_500_000), ("text", 3 * 262_144 + 4097)] {
        for codec in ["raw", "lzo", "gzip", "zstd"] {
            for tool in ["builtin", "external"] {
                cold_read(&mut h, codec, tool, content, size);
            }
        }
    }
    // Each content kind compresses as it should: zeros ≫ text > binary > random ≈ 1.
    let ratio =
        |h: &mut Host, content| cold_read(h, "gzip", "builtin", content, 1 << 20).info["ratio"].as_f64().unwrap();
    let [z, t, b, r] = ["zeros", "text", "binary", "random"].map(|c| ratio(&mut h, c));
    assert!(z > 100.0 && t > b && b > r && (0.99..1.01).contains(&r), "{z} {t} {b} {r}");
    // A zero-sized file reads as zero bytes.
    cold_read(&mut h, "lzo", "builtin", "text", 0);
}

#[test]
#[ignore = "needs root; ci/test.sh runs it (--ignored)"]
fn cold_read_external_and_builtin_see_the_same_bytes() {
    require_root("cold reads drop the page cache");
    // The agent's compressed file, decoded by the tool, is the tool's own file, decoded by the agent.
    let mut h = host();
    let a = cold_read(&mut h, "zstd", "builtin", "text", 2_000_000);
    let b = cold_read(&mut h, "zstd", "external", "text", 2_000_000);
    assert_eq!(a.info["bytes"], b.info["bytes"]);
    assert!(b.info["read_command"].as_str().unwrap().starts_with("zstd -dc"));
    assert!(b.info["tool_version"].as_str().unwrap().contains("Zstandard"), "{}", b.info["tool_version"]);
}

#[test]
fn cold_read_without_a_target_fails_clearly() {
    let mut h = host();
    h.st.mounted.clear();
    let e = h.run(serde_json::json!({"action": "cold_read", "args": {"codec": "raw", "size": 10}})).unwrap_err();
    assert_eq!(e.code, ErrorCode::Failed);
    assert!(e.message.contains("filesystem"), "{}", e.message);
}

// --- exec ---------------------------------------------------------------

const FIO_LIKE: &str = r#"{"fio version": "fio-3.33", "jobs": [{"jobname": "w", "write": {"bw_bytes": 129883004, "lat_ns": {"mean": 128957951.75}, "clat_ns": {"percentile": {"99.000000": 217055232}}}}]}"#;

#[test]
fn exec_reads_json_and_regex_metrics() {
    let mut h = host();
    std::fs::write(h.mnt().join("fio.json"), format!("fio: a warning first\n{FIO_LIKE}\n")).unwrap();
    let out = h
        .run(serde_json::json!({"action": "exec", "args": {
            "command": "cat fio.json; echo 'took 12.5 ms' >&2; echo 'rate=42.0 MB/s'",
            "target": "t",
            "metrics": [
                {"name": "bw", "unit": "MB/s", "json": "jobs.0.write.bw_bytes", "scale": 1e-6},
                {"name": "lat", "unit": "ms", "better": "lower", "json": "jobs.0.write.lat_ns.mean", "scale": 1e-6},
                {"name": "p99", "unit": "ns", "better": "lower", "json": "jobs.0.write.clat_ns.percentile.99.000000"},
                {"name": "rate", "unit": "MB/s", "regex": "rate=([0-9.]+)"}
            ]
        }}))
        .unwrap();
    let names: Vec<&str> = out.metrics.iter().map(|m| m.name.as_str()).collect();
    assert_eq!(names, ["time", "bw", "lat", "p99", "rate"]);
    assert!((metric(&out, "bw") - 129.883004).abs() < 1e-9);
    assert!((metric(&out, "lat") - 128.95795175).abs() < 1e-9);
    assert_eq!(metric(&out, "p99"), 217055232.0);
    assert_eq!(metric(&out, "rate"), 42.0);
    assert_eq!(out.metrics[2].better, benchrig_wire::steps::Better::Lower);
    assert!(out.info["stderr"].as_str().unwrap().contains("took 12.5 ms"));
    assert_eq!(out.info["exit_status"], 0);
    assert_eq!(out.info["cwd"], h.mnt().to_string_lossy().as_ref());
}

#[test]
fn exec_runs_where_and_how_it_is_told() {
    let mut h = host();
    // No target: the work dir. Env is passed, stdin is empty, stdout is a pipe (never the agent's fd 1).
    let out = h
        .run(serde_json::json!({"action": "exec", "args": {
            "command": ["sh", "-c", "pwd; echo \"v=$BENCH_V\"; wc -c; readlink /proc/self/fd/1"],
            "env": {"BENCH_V": "7"},
            "metrics": [{"name": "v", "unit": "", "regex": "v=(\\d+)"}]
        }}))
        .unwrap();
    let stdout = out.info["stdout"].as_str().unwrap();
    let lines: Vec<&str> = stdout.lines().collect();
    assert_eq!(lines[0], h.st.work_dir.to_string_lossy());
    assert_eq!(metric(&out, "v"), 7.0);
    assert_eq!(lines[2].trim(), "0");
    assert!(lines[3].starts_with("pipe:"), "{stdout}");
    // The command's CPU time is the step's.
    let out = h
        .run(serde_json::json!({"action": "exec", "args": {
            "command": "i=0; while [ $i -lt 300000 ]; do i=$((i+1)); done"
        }}))
        .unwrap();
    let u = out.usage.unwrap();
    assert!(u.user_s + u.sys_s > 0.05, "{u:?}");
}

#[test]
fn exec_failures_say_why() {
    let mut h = host();
    let e = h
        .run(serde_json::json!({"action": "exec", "args": {"command": "echo first >&2; echo 'disk full' >&2; exit 3"}}))
        .unwrap_err();
    assert_eq!(e.code, ErrorCode::Failed);
    assert!(e.message.contains("status 3") && e.message.contains("disk full"), "{}", e.message);
    // ignore_status: the step succeeds and records the status.
    let out = h
        .run(serde_json::json!({"action": "exec", "args": {"command": "echo 5; exit 3", "ignore_status": true,
            "metrics": [{"name": "n", "unit": "", "regex": "(\\d)"}]}}))
        .unwrap();
    assert_eq!((metric(&out, "n"), out.info["exit_status"].as_i64()), (5.0, Some(3)));
    // A metric that is not there names itself.
    let e = h
        .run(serde_json::json!({"action": "exec", "args": {"command": "echo '{\"a\": 1}'",
            "metrics": [{"name": "bw", "unit": "", "json": "jobs.0.bw"}]}}))
        .unwrap_err();
    assert!(e.message.contains("metric `bw`") && e.message.contains("no key `jobs`"), "{}", e.message);
    let e = h
        .run(serde_json::json!({"action": "exec", "args": {"command": "echo nothing",
            "metrics": [{"name": "iops", "unit": "", "regex": "iops=(\\d+)"}]}}))
        .unwrap_err();
    assert!(e.message.contains("metric `iops`"), "{}", e.message);
    // A program the host lacks makes the cell unsupported, not failed.
    let e = h.run(serde_json::json!({"action": "exec", "args": {"command": ["no-such-benchmark-tool"]}})).unwrap_err();
    assert_eq!(e.code, ErrorCode::Unsupported);
    // A bad regex is refused before anything runs.
    let marker = h.mnt().join("ran");
    let e = h
        .run(serde_json::json!({"action": "exec", "args": {"command": format!("touch {}", marker.display()),
            "metrics": [{"name": "x", "unit": "", "regex": "("}]}}))
        .unwrap_err();
    assert_eq!(e.code, ErrorCode::BadRequest);
    assert!(!marker.exists());
}

#[test]
fn exec_timeout_kills_the_command_and_what_it_started() {
    let mut h = host();
    let pidfile = h.mnt().join("bg.pid");
    let t0 = std::time::Instant::now();
    let e = h
        .run(serde_json::json!({"action": "exec", "args": {
            "command": format!("sleep 60 & echo $! > {}; sleep 60", pidfile.display()),
            "timeout": 1
        }}))
        .unwrap_err();
    assert!(t0.elapsed().as_secs_f64() < 10.0, "{:?}", t0.elapsed());
    assert_eq!(e.code, ErrorCode::Failed);
    assert!(e.message.contains("timed out after 1 s"), "{}", e.message);
    let bg: i32 = std::fs::read_to_string(&pidfile).unwrap().trim().parse().unwrap();
    std::thread::sleep(std::time::Duration::from_millis(200));
    // Gone, or a zombie its new parent (init here, which may be slow to reap) has not collected.
    let state = std::fs::read_to_string(format!("/proc/{bg}/stat")).unwrap_or_default();
    let state = state.rsplit(')').next().unwrap_or("").split_whitespace().next().unwrap_or("gone").to_string();
    assert!(state == "gone" || state == "Z", "the background sleep {bg} survived (state {state})");
}

#[test]
fn exec_does_not_wait_forever_for_what_the_command_left_running() {
    let mut h = host();
    let t0 = std::time::Instant::now();
    let out = h.run(serde_json::json!({"action": "exec", "args": {"command": "sleep 60 & echo started"}})).unwrap();
    assert!(t0.elapsed().as_secs_f64() < 10.0);
    // The timed region is the command itself, not the grace period.
    assert!(metric(&out, "time") < 1.0, "{out:?}");
    assert_eq!(out.info["leftovers_killed"], true);
    assert!(out.info["stdout"].as_str().unwrap().contains("started"));
}

// --- raw ------------------------------------------------------------------

/// losetup's search for a free device races with a parallel one: one test at a time.
static LOOPS: Mutex<()> = Mutex::new(());

impl Loop {
    fn head(&self, n: usize) -> Vec<u8> {
        let mut f = std::fs::File::open(&self.dev).unwrap();
        let mut v = vec![0u8; n];
        f.read_exact(&mut v).unwrap();
        v
    }

    fn write_at(&self, off: u64, data: &[u8]) {
        let mut f = std::fs::OpenOptions::new().write(true).open(&self.dev).unwrap();
        f.seek(SeekFrom::Start(off)).unwrap();
        f.write_all(data).unwrap();
        f.sync_all().unwrap();
    }

    fn kernel_name(&self) -> String {
        self.dev.file_name().unwrap().to_string_lossy().into_owned()
    }
}

fn scratch(name: &str, dev: &Path, wipe: bool) -> ScratchDevice {
    ScratchDevice {
        path: dev.to_string_lossy().into_owned(),
        name: name.into(),
        serial: None,
        wipe,
        kind: ScratchKind::Block,
        size: None,
    }
}

fn raw(h: &mut Host, args: serde_json::Value) -> Result<StepOutput, AgentError> {
    h.run(serde_json::json!({"action": "raw", "args": args}))
}

#[test]
#[ignore = "needs root; ci/test.sh runs it (--ignored)"]
fn raw_write_read_and_copy_on_loop_devices() {
    require_root("it attaches loop devices");
    let _one = LOOPS.lock().unwrap_or_else(|e| e.into_inner());
    let (a, b) = (Loop::new(64), Loop::new(64));
    let mut h = host();
    h.st.scratch = vec![scratch("a", &a.dev, true), scratch("b", &b.dev, true)];

    let out = raw(&mut h, serde_json::json!({"op": "write", "device": "a", "size": "32M", "bs": "1M"})).unwrap();
    assert_eq!(out.info["bytes"], 32 << 20);
    assert!(metric(&out, "throughput") > 0.0);
    let io = &out.usage.as_ref().unwrap().devices;
    assert_eq!(io.len(), 1);
    assert_eq!(io[0].device, a.kernel_name());
    assert!(io[0].write_bytes >= 32 << 20, "{io:?}");
    let written = a.head(32 << 20);
    assert!(written[..4096].iter().any(|&x| x != 0), "nothing written");
    assert!(written[(32 << 20) - 4096..].iter().any(|&x| x != 0), "the end was not written");

    let out = raw(&mut h, serde_json::json!({"op": "read", "device": "a", "size": "32M", "bs": "256k"})).unwrap();
    assert_eq!(out.info["bytes"], 32 << 20);
    let io = &out.usage.as_ref().unwrap().devices;
    assert!(io[0].read_bytes >= 32 << 20, "O_DIRECT reads reach the device: {io:?}");
    assert_eq!(out.info["from"]["scratch"], "a");

    let out = raw(&mut h, serde_json::json!({"op": "copy", "device": "a", "to": "b", "size": "32M"})).unwrap();
    assert_eq!(out.usage.as_ref().unwrap().devices.len(), 2);
    assert!(b.head(32 << 20) == written, "the copy differs from its source");

    // Bigger than the device, unaligned, or a copy onto itself: refused before any I/O.
    let e = raw(&mut h, serde_json::json!({"op": "read", "device": "a", "size": "128M"})).unwrap_err();
    assert!(e.message.contains("holds"), "{}", e.message);
    assert!(raw(&mut h, serde_json::json!({"op": "read", "device": "a", "size": 1000})).is_err());
    let e = raw(&mut h, serde_json::json!({"op": "copy", "device": "a", "to": "a", "size": "1M"})).unwrap_err();
    assert_eq!(e.code, ErrorCode::BadRequest);
}

#[test]
#[ignore = "needs root; ci/test.sh runs it (--ignored)"]
fn raw_write_refuses_what_mkfs_would_refuse_and_changes_nothing() {
    require_root("it attaches loop devices");
    let _one = LOOPS.lock().unwrap_or_else(|e| e.into_inner());
    let (listed, unlisted) = (Loop::new(16), Loop::new(16));
    listed.write_at(0, b"LUKS\xba\xbe some header");
    unlisted.write_at(0, b"precious data");
    let before = (listed.head(1 << 20), unlisted.head(1 << 20));
    let mut h = host();
    h.st.scratch = vec![scratch("s", &listed.dev, false)];

    // Not in scratch_devices: neither written nor read, whatever its path.
    for (op, to) in [("write", None), ("read", None), ("copy", Some("other"))] {
        let dev = if to.is_some() { "s" } else { "other" };
        let mut args = serde_json::json!({"op": op, "device": dev, "size": "1M"});
        if let Some(t) = to {
            args["to"] = t.into();
        }
        let e = raw(&mut h, args).unwrap_err();
        assert_eq!((e.code, e.rule.as_deref()), (ErrorCode::Refused, Some("not_listed")), "{op}: {}", e.message);
    }
    // Listed, but carrying a signature without `wipe`: the mkfs rule.
    let e = raw(&mut h, serde_json::json!({"op": "write", "device": "s", "size": "1M"})).unwrap_err();
    assert_eq!((e.code, e.rule.as_deref()), (ErrorCode::Refused, Some("signature")), "{}", e.message);
    // Reading it is fine.
    raw(&mut h, serde_json::json!({"op": "read", "device": "s", "size": "1M"})).unwrap();
    // Listed under a path that is no block device.
    h.st.scratch.push(scratch("f", &h.mnt(), true));
    let e = raw(&mut h, serde_json::json!({"op": "write", "device": "f", "size": "1M"})).unwrap_err();
    assert_eq!(e.rule.as_deref(), Some("not_block_device"), "{}", e.message);
    // Held by something else (here: an O_EXCL open, as a mount holds it): in use.
    h.st.scratch[0].wipe = true;
    let held = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(rustix::fs::OFlags::EXCL.bits() as i32)
        .open(&listed.dev)
        .unwrap();
    let e = raw(&mut h, serde_json::json!({"op": "write", "device": "s", "size": "1M"})).unwrap_err();
    assert_eq!(e.rule.as_deref(), Some("in_use"), "{}", e.message);
    drop(held);

    assert!(listed.head(1 << 20) == before.0, "a refused write changed the listed device");
    assert!(unlisted.head(1 << 20) == before.1, "a refused write changed the unlisted device");
}

#[test]
#[ignore = "needs root; ci/test.sh runs it (--ignored)"]
fn raw_on_an_image_scratch_attaches_and_detaches_it() {
    require_root("the agent attaches the image to a loop device");
    let _one = LOOPS.lock().unwrap_or_else(|e| e.into_inner());
    let mut h = host();
    let img = h.dir.path().join("raw.img");
    h.st.scratch = vec![ScratchDevice {
        path: img.to_string_lossy().into_owned(),
        name: "img".into(),
        serial: None,
        wipe: false,
        kind: ScratchKind::Image,
        size: Some(benchrig_wire::units::ByteSize(32 << 20)),
    }];
    // benchrig creates the image (with its marker), so it is its own to overwrite.
    raw(&mut h, serde_json::json!({"op": "write", "device": "img", "size": "8M"})).unwrap();
    let out = raw(&mut h, serde_json::json!({"op": "read", "device": "img", "size": "8M"})).unwrap();
    assert_eq!(out.info["bytes"], 8 << 20);
    let data = std::fs::read(&img).unwrap();
    assert!(data[..4096].iter().any(|&x| x != 0));
    let out = std::process::Command::new("losetup").arg("-j").arg(&img).output().unwrap();
    assert!(out.stdout.is_empty(), "still attached: {}", String::from_utf8_lossy(&out.stdout));
}

#[test]
fn a_repetition_reads_the_file_made_for_the_first() {
    let mut h = host();
    let args = |content: &str| serde_json::json!({"action": "cold_read", "args": {"codec": "gzip", "content": content, "size": 300_000, "file": "r.dat"}});
    let first = h.run(args("text")).unwrap();
    let again = h.run(args("text")).unwrap();
    let other = h.run(args("binary")).unwrap();
    assert_eq!(first.info["prepared_earlier"], false);
    assert_eq!(again.info["prepared_earlier"], true);
    assert_eq!(other.info["prepared_earlier"], false, "different content, made anew");
    assert_eq!(first.info["compressed_bytes"], again.info["compressed_bytes"]);
}
