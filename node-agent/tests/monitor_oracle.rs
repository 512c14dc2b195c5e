//! The monitors' formulas against `iostat -x` (sysstat, installed by
//! `.ci/run`) on the same two captured snapshots.
//!
//! iostat reads /proc/uptime, /proc/stat and then (with `-p ALL`) /proc/diskstats
//! each interval (iostat.c's main loop). In a private mount namespace the
//! test binds files holding the first snapshots over those three, starts
//! `iostat -x -p ALL -o JSON 2 2`, and halfway through the two seconds
//! writes the second snapshots into the same files: iostat's second report
//! is then exactly the interval between the two captures, and every figure
//! it prints must be ours, rounded as it prints them (two decimals). Needs
//! root (unshare -m, mount --bind) and iostat; without either it fails.

mod common;

use benchrig_agent::monitor::cpu::{CpuShares, CpuTimes};
use benchrig_agent::monitor::diskstats::{self, DiskFigures};
use std::path::Path;
use std::process::Command;

/// iostat's second report for the snapshots in `dir`.
fn iostat_on(dir: &Path) -> serde_json::Value {
    let work = tempfile::tempdir().unwrap();
    let w = work.path().display();
    let s = dir.display();
    for f in ["uptime", "stat", "diskstats"] {
        std::fs::copy(dir.join(format!("{f}.1")), work.path().join(f)).unwrap();
    }
    let script = format!(
        "set -e
         mount --make-rprivate /
         for f in uptime stat diskstats; do mount --bind {w}/$f /proc/$f; done
         iostat -x -p ALL -o JSON 2 2 > {w}/out.json &
         pid=$!
         sleep 1
         for f in uptime stat diskstats; do cat {s}/$f.2 > {w}/$f; done
         wait $pid"
    );
    let out = Command::new("unshare").args(["-m", "sh", "-c", &script]).output().expect("run unshare");
    assert!(out.status.success(), "iostat under unshare failed: {}", String::from_utf8_lossy(&out.stderr));
    let json: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(work.path().join("out.json")).unwrap()).unwrap();
    let reports = json["sysstat"]["hosts"][0]["statistics"].as_array().expect("iostat's statistics").clone();
    assert_eq!(reports.len(), 2, "{json}");
    reports[1].clone()
}

fn uptime(p: &Path) -> f64 {
    std::fs::read_to_string(p).unwrap().split_whitespace().next().unwrap().parse().unwrap()
}

/// Printed with two decimals: ours rounds to what it printed.
fn close(ours: f64, printed: f64) -> bool {
    (ours - printed).abs() <= 0.005 + 1e-9 * printed.abs()
}

fn check(arch: &str, busy_device: &str) {
    common::require_root("it binds snapshots over /proc files in a private mount namespace");
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/monitor").join(arch);
    let report = iostat_on(&dir);
    let secs = uptime(&dir.join("uptime.2")) - uptime(&dir.join("uptime.1"));
    let read = |n: u8| std::fs::read_to_string(dir.join(format!("diskstats.{n}"))).unwrap();
    let (before, after) = (diskstats::parse(&read(1)), diskstats::parse(&read(2)));

    let mut bad = vec![];
    let mut compared = 0;
    for d in report["disk"].as_array().expect("iostat's disks") {
        let name = d["disk_device"].as_str().unwrap();
        let p = before.iter().find(|(n, _)| n == name).unwrap_or_else(|| panic!("{name} not in the first snapshot")).1;
        let c = after.iter().find(|(n, _)| n == name).unwrap().1;
        let f = DiskFigures::between(&p, &c, secs);
        let kb = |mb: f64| mb * 1e6 / 1024.0;
        for (key, ours) in [
            ("r/s", f.r_s),
            ("w/s", f.w_s),
            ("rkB/s", kb(f.rmb_s)),
            ("wkB/s", kb(f.wmb_s)),
            ("r_await", f.r_await_ms),
            ("w_await", f.w_await_ms),
            ("aqu-sz", f.aqu_sz),
            ("util", f.util_pct),
        ] {
            let printed = d[key].as_f64().unwrap_or_else(|| panic!("{name}: no {key} in {d}"));
            if !close(ours, printed) {
                bad.push(format!("{name} {key}: ours {ours}, iostat {printed}"));
            }
            compared += 1;
        }
        // So that the comparison is not one of zeros. (`old`'s %util stays
        // low: its blkio throttle holds requests before the device's queue.)
        if name == busy_device {
            assert!(f.r_s > 100.0 && f.rmb_s > 1.0 && f.r_await_ms > 0.0, "{arch}: {name} was being read, yet {f:?}");
        }
    }
    assert!(
        report["disk"].as_array().unwrap().iter().any(|d| d["disk_device"] == busy_device),
        "{busy_device} not reported"
    );

    let cpu = |n: u8| CpuTimes::parse(&std::fs::read_to_string(dir.join(format!("stat.{n}"))).unwrap()).unwrap();
    let sh = CpuShares::between(&cpu(1), &cpu(2));
    let avg = &report["avg-cpu"];
    for (key, ours) in [("user", sh.user_pct), ("system", sh.sys_pct), ("iowait", sh.iowait_pct), ("idle", sh.idle_pct)]
    {
        let printed = avg[key].as_f64().unwrap();
        if !close(ours, printed) {
            bad.push(format!("cpu {key}: ours {ours}, iostat {printed}"));
        }
        compared += 1;
    }
    assert!(bad.is_empty(), "{arch}: {} of {compared} figures differ from iostat -x:\n{}", bad.len(), bad.join("\n"));
    eprintln!("{arch}: {compared} figures equal to iostat -x's");
}

#[test]
#[ignore = "needs root; ci/test.sh runs it (--ignored)"]
fn disk_and_cpu_figures_are_iostat_s_on_the_x86_64_snapshots() {
    check("x86_64-6.18", "loop0");
}

#[test]
#[ignore = "needs root; ci/test.sh runs it (--ignored)"]
fn disk_and_cpu_figures_are_iostat_s_on_the_i686_snapshots() {
    check("i686-old", "loop0");
}
