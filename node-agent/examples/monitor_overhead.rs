//! What monitors cost a measured step: a cold seq_read of one file on an
//! ext4 loop device, run with monitors at 1 s and without, interleaved
//! (ABBA, so a drift in the machine's load falls on both), through
//! `dispatch::run` as the agent runs it. Prints figures, asserts nothing.
//! Also prints the sampler's own CPU time per tick, at a 10 ms interval
//! for two seconds, which bounds its cost at any interval.
//!
//! As root: `cargo run --release -p benchrig-agent --example monitor_overhead -- [pairs] [MiB] [bs] [direct]`
//! (defaults: 12 pairs, a 1024 MiB file, bs 1M, through the page cache).

use benchrig_agent::dispatch;
use benchrig_agent::monitor::{Sampler, Watch};
use benchrig_agent::outbox::{Outbox, StepCtx};
use benchrig_agent::state::HostState;
use benchrig_agent::sysfs::SysView;
use benchrig_wire::monitor::MonitorConfig;
use benchrig_wire::scratch::{ScratchDevice, ScratchKind};
use benchrig_wire::steps::{Action, StepOutput};
use std::sync::atomic::AtomicBool;

fn step(st: &mut HostState, monitor: Option<MonitorConfig>, action: &str, args: serde_json::Value) -> StepOutput {
    let action = Action::from_parts(action, args.clone()).unwrap();
    let out = Outbox::new(Box::new(std::io::sink()));
    let cancel = AtomicBool::new(false);
    let ctx = StepCtx::new(1, &out, &cancel).with_watch(Watch::new(monitor));
    dispatch::run(st, &ctx, &action).unwrap_or_else(|e| panic!("{args}: {e:?}"))
}

fn throughput(o: &StepOutput) -> f64 {
    o.metrics.iter().find(|m| m.name == "throughput").unwrap().value
}

fn mean_sd(v: &[f64]) -> (f64, f64) {
    let m = v.iter().sum::<f64>() / v.len() as f64;
    let var = v.iter().map(|x| (x - m).powi(2)).sum::<f64>() / (v.len() as f64 - 1.0).max(1.0);
    (m, var.sqrt())
}

/// The process's CPU time: the sampler's thread is all that runs meanwhile.
fn process_cpu_s() -> f64 {
    let t = rustix::time::clock_gettime(rustix::time::ClockId::ProcessCPUTime);
    t.tv_sec as f64 + t.tv_nsec as f64 / 1e9
}

fn main() {
    let mut a = std::env::args().skip(1);
    let pairs: usize = a.next().map(|s| s.parse().unwrap()).unwrap_or(12);
    let mib: u64 = a.next().map(|s| s.parse().unwrap()).unwrap_or(1024);
    let bs = a.next().unwrap_or_else(|| "1M".into());
    let direct = a.next().as_deref() == Some("direct");
    assert!(rustix::process::geteuid().is_root(), "run as root: it attaches a loop device and mounts it");

    let dir = tempfile::tempdir_in("/var/tmp").unwrap();
    let img = dir.path().join("disk.img");
    std::fs::File::create(&img).unwrap().set_len((mib + 256) << 20).unwrap();
    let out = std::process::Command::new("losetup").args(["--find", "--show"]).arg(&img).output().unwrap();
    let dev = String::from_utf8(out.stdout).unwrap().trim().to_string();
    assert!(!dev.is_empty(), "losetup: {}", String::from_utf8_lossy(&out.stderr));
    let mut st = HostState::new(SysView::real());
    st.set_work_dir(dir.path().join("work"));
    std::fs::create_dir_all(&st.work_dir).unwrap();
    st.scratch = vec![ScratchDevice {
        path: dev.clone(),
        name: "d".into(),
        serial: None,
        wipe: true,
        kind: ScratchKind::Block,
        size: None,
    }];
    let profile = serde_json::json!({"name": "ext4", "fstype": "ext4", "mkfs": ["mkfs.ext4", "-q", "-F", "-E", "lazy_itable_init=0,lazy_journal_init=0"]});
    step(&mut st, None, "filesystem", serde_json::json!({"device": "d", "profile": profile}));
    step(&mut st, None, "seq_write", serde_json::json!({"size": format!("{mib}M"), "bs": "1M"}));

    let on = Some(MonitorConfig { interval_ms: 1000 });
    let read = serde_json::json!({"bs": bs, "direct": direct});
    let (mut with, mut without, mut ratios) = (vec![], vec![], vec![]);
    for i in 0..pairs {
        let order = if i % 2 == 0 { [on, None] } else { [None, on] };
        let mut got = [0.0; 2];
        for cfg in order {
            let o = step(&mut st, cfg, "seq_read", read.clone());
            assert_eq!(o.monitors.is_some(), cfg.is_some());
            got[cfg.is_none() as usize] = throughput(&o);
        }
        println!("pair {i:2}: monitors 1 s {:8.1} MB/s, off {:8.1} MB/s", got[0], got[1]);
        with.push(got[0]);
        without.push(got[1]);
        ratios.push(got[0] / got[1]);
    }
    // The sampler's own cost, ticking every 10 ms over the same device.
    let cpu0 = process_cpu_s();
    let s = Sampler::start(
        std::path::Path::new("/proc"),
        &[dev.trim_start_matches("/dev/").to_string()],
        MonitorConfig { interval_ms: 10 },
    );
    std::thread::sleep(std::time::Duration::from_secs(2));
    let series = s.finish().unwrap();
    let per_tick = (process_cpu_s() - cpu0) / series.t.len() as f64;
    st.release(None).unwrap();
    let _ = std::process::Command::new("losetup").arg("-d").arg(&dev).status();

    let (mw, sw) = mean_sd(&with);
    let (mo, so) = mean_sd(&without);
    let mut sorted = ratios.clone();
    sorted.sort_by(f64::total_cmp);
    let median = sorted[sorted.len() / 2];
    let (mr, sr) = mean_sd(&ratios);
    let how = if direct { ", O_DIRECT" } else { "" };
    println!("{pairs} pairs, cold seq_read of {mib} MiB, bs {bs}{how}, ext4 on {dev}:");
    println!("  monitors at 1 s: {mw:.1} ± {sw:.1} MB/s; off: {mo:.1} ± {so:.1} MB/s");
    println!(
        "  throughput with / without, per pair: mean {mr:.4} ± {:.4} (95% CI of the mean), median {median:.4}",
        1.96 * sr / (pairs as f64).sqrt()
    );
    println!(
        "  sampler: {} ticks in 2 s at 10 ms, {:.0} µs of CPU a tick: {:.3}% of one CPU at a 1 s interval",
        series.t.len(),
        per_tick * 1e6,
        per_tick * 100.0
    );
}
