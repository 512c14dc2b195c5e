//! Nights of a lab, written through the real store API (`Store`, the same
//! calls a run makes): for issue 29's scale benchmark, `ci/bench-store.sh`.
//!
//! Each night runs every given playbook on `--hosts` hosts, planned by the
//! real planner from a generated inventory (two 1 GiB by-id scratch
//! devices a host), with `--reps` repetitions of every cell's measured
//! steps, each step reporting the metrics its action declares (a fio job's
//! by direction). The cold reads carry monitor series at 1 s. Values are
//! noise (1% sd) around a level per host and cell, with a few
//! configuration splits (a kernel update on a tenth of the hosts at night
//! 120, a mkfs version on all at night 250) and two planted regressions:
//! −3% on hosts 1–7 from night 200, −10% on host 0 from night 300 (nights
//! past `--nights` are left out, scaled by `--scale-nights`).
//!
//!     cargo run --release --example nights -- --db year.db --nights 365 --hosts 100

use benchrig::plan::{self, HostInput};
use benchrig::playbook::TagFilter;
use benchrig::store::{DbLocation, NewRun, StepRef, Store};
use benchrig_wire::facts::Facts;
use benchrig_wire::monitor::{CpuSeries, DeviceSeries, MonitorSeries};
use benchrig_wire::steps::{Action, Metric, StepOutput, Usage};
use clap::Parser;
use std::path::PathBuf;
use std::time::Instant;

#[derive(Parser)]
struct Args {
    /// The database (a SQLite path or a postgres:// URL), as `--db` takes it.
    #[arg(long)]
    db: String,
    #[arg(long, default_value_t = 365)]
    nights: usize,
    #[arg(long, default_value_t = 100)]
    hosts: usize,
    #[arg(long, default_value_t = 5)]
    reps: u32,
    /// The planted events' nights are given for a year; with fewer nights
    /// they move to the same fraction of the run (night 200 of 365 is
    /// night 16 of 30).
    #[arg(long)]
    scale_nights: bool,
    /// The playbooks each night runs (default: the shipped ones a plain play plans).
    #[arg(value_name = "PLAYBOOK")]
    playbooks: Vec<PathBuf>,
}

/// A night's events, as night numbers of a year.
const KERNEL_UPDATE: usize = 120;
const MKFS_UPDATE: usize = 250;
const SMALL_REGRESSION: usize = 200;
const LARGE_REGRESSION: usize = 300;

fn main() -> anyhow::Result<()> {
    let a = Args::parse();
    let at = |night: usize| if a.scale_nights { night * a.nights / 365 } else { night };
    let repo = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("..");
    let repo = repo.canonicalize()?;
    let playbooks = if a.playbooks.is_empty() {
        ["quickstart.yml", "fio.yml", "compressed-read.yml", "volume-scaling.yml", "acl-ea.yml"]
            .iter()
            .map(|p| repo.join("playbooks").join(p))
            .collect()
    } else {
        a.playbooks.clone()
    };
    let dir = tempfile::tempdir()?;
    let inventory = dir.path().join("lab.yml");
    std::fs::write(&inventory, inventory_text(a.hosts))?;
    let store = Store::open(&DbLocation::parse(std::ffi::OsStr::new(&a.db))?)?;
    let mut samples = 0u64;
    let began = Instant::now();
    let mut night_secs = Vec::with_capacity(a.nights);
    for night in 0..a.nights {
        let night_began = Instant::now();
        for pb in &playbooks {
            let checked = benchrig::run::check(
                pb,
                std::slice::from_ref(&inventory),
                None,
                &Default::default(),
                &TagFilter::default(),
            )?;
            let text = std::fs::read_to_string(pb)?;
            let name = format!("nightly-{:03}", night + 1);
            let run = store.create_run(&NewRun {
                name: Some(&name),
                playbook: &pb.display().to_string(),
                playbook_text: &text,
                inventory: &inventory.display().to_string(),
                limit: None,
                extra_vars: &serde_json::json!({}),
                options: &serde_json::json!({}),
            })?;
            for (h, host) in checked.hosts.keys().enumerate() {
                let facts = facts(host, h, night >= at(KERNEL_UPDATE) && h % 10 == 3);
                store.set_host(run, host, benchrig::status::HostStatus::Ok, None)?;
                store.set_host_facts(Some(run), host, &facts)?;
                for (pi, play) in checked.playbook.plays.iter().enumerate() {
                    if !play.roles.is_empty() || !checked.hosts[host].contains(&pi) {
                        continue;
                    }
                    let input = HostInput {
                        inventory: &checked.inventory,
                        host,
                        extra_vars: &checked.extra,
                        facts: Some(&facts),
                    };
                    let Ok(cells) = plan::plan_play(play, pi, &input, &checked.templates) else { continue };
                    for (ci, cell) in cells.iter().enumerate() {
                        let id = store.add_cell(run, cell)?;
                        let mkfs = if night >= at(MKFS_UPDATE) { "1.47.1" } else { "1.47.0" };
                        let mut info = serde_json::Map::new();
                        info.insert("mkfs_version".into(), mkfs.into());
                        store.add_cell_info(id, &format!("setup[0] filesystem@{host}"), &info)?;
                        let mut level = 100.0 + ((h * 31 + ci * 7 + pi * 13) % 50) as f64;
                        if (1..=7).contains(&h) && night >= at(SMALL_REGRESSION) {
                            level *= 0.97;
                        }
                        if h == 0 && night >= at(LARGE_REGRESSION) {
                            level *= 0.90;
                        }
                        for rep in 1..=cell.repeat.min(a.reps).max(1) {
                            for (si, step) in cell.benchmark.iter().enumerate() {
                                // Every host, cell, night, repetition and step its own noise.
                                let seed = ((((h * 1000 + ci) * 1000 + night) * 100 + rep as usize) * 10 + si) as u64;
                                let out = output(&step.action, level, seed * 8 + pi as u64);
                                samples += out.metrics.len() as u64;
                                let step_ref = StepRef {
                                    index: si,
                                    name: &step.name,
                                    workload: step.action.name(),
                                    repetition: rep,
                                    attempt: 1,
                                };
                                store.add_samples(id, &step_ref, &out)?;
                            }
                        }
                        store.set_cell_status(id, benchrig::status::CellStatus::Ok, None)?;
                    }
                }
            }
            store.finish_run(run, benchrig::status::RunStatus::Ok)?;
        }
        night_secs.push(night_began.elapsed().as_secs_f64());
        if (night + 1) % 10 == 0 || night + 1 == a.nights {
            eprintln!("night {}/{}: {samples} samples, {:.1} s", night + 1, a.nights, began.elapsed().as_secs_f64());
        }
    }
    // What storing a night costs into a database that is empty (the first
    // nights) and into one that holds all the others (the last).
    let k = (a.nights / 10).clamp(1, 10);
    let mean = |s: &[f64]| s.iter().sum::<f64>() / s.len() as f64;
    let (first, last) = (mean(&night_secs[..k]), mean(&night_secs[a.nights - k..]));
    println!(
        "{} nights, {samples} samples in {:.1} s; storing a night: {:.3} s into the first ones, {:.3} s into the last ({:+.1}%)",
        a.nights,
        began.elapsed().as_secs_f64(),
        first,
        last,
        (last / first - 1.0) * 100.0
    );
    Ok(())
}

fn inventory_text(hosts: usize) -> String {
    let mut out = String::from("all:\n  hosts:\n");
    for h in 0..hosts {
        out += &format!("    h{h:03}:\n      ansible_host: 10.1.{}.{}\n      scratch_devices:\n", h / 250, h % 250 + 1);
        for d in 0..2 {
            out += &format!(
                "        - {{ path: /dev/disk/by-id/nvme-LAB_{h:03}_{d}, name: ssd{d}, serial: LAB{h:03}{d} }}\n"
            );
        }
    }
    out
}

/// A host's facts, with the kernel a tenth of them move to at night 120.
fn facts(host: &str, h: usize, updated: bool) -> Facts {
    let mut f = Facts { hostname: host.into(), arch: "x86_64".into(), ..Default::default() };
    f.kernel.release = if updated { "6.1.0-27-amd64" } else { "6.1.0-26-amd64" }.into();
    f.cpu.count = 4 + (h % 4) as u32 * 4;
    f.memory.total_bytes = 16 << 30;
    f.filesystems = ["ext4", "xfs", "btrfs"].map(String::from).to_vec();
    f
}

/// A deterministic noise in −1..1, independent for each seed (splitmix64's
/// finaliser: neighbouring seeds give unrelated values).
fn noise(seed: u64) -> f64 {
    let mut z = seed.wrapping_add(0x9e3779b97f4a7c15);
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58476d1ce4e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d049bb133111eb);
    z ^= z >> 31;
    ((z >> 11) as f64 / (1u64 << 53) as f64) * 2.0 - 1.0
}

/// What the step's action reports, around `level` with 1% noise; a cold
/// read with its monitors' series at 1 s.
fn output(action: &Action, level: f64, seed: u64) -> StepOutput {
    let decls = Action::metrics(action.name()).unwrap_or_default();
    // A time goes the other way of a speed.
    let value = |i: usize, d: &benchrig_wire::metrics::MetricDecl| {
        let v = level * (1.0 + 0.01 * noise(seed.wrapping_mul(64) + i as u64));
        if d.better == benchrig_wire::args::Better::Lower {
            1e4 / v
        } else {
            v
        }
    };
    let mut metrics: Vec<Metric> = Vec::new();
    for (i, d) in decls.iter().enumerate() {
        match d.naming {
            benchrig_wire::metrics::Naming::Fixed => metrics.push(Metric::of(d, value(i, d))),
            benchrig_wire::metrics::Naming::PerJobDirection => {
                for dir in ["read", "write"] {
                    let mut m = Metric::of(d, value(i + 32, d));
                    m.name = d.per_job("job", dir);
                    metrics.push(m);
                }
            }
        }
    }
    let cold = matches!(action, Action::SeqRead(a) if a.cold);
    let monitors = cold.then(|| {
        let n = 10;
        let v =
            |k: u64| (0..n).map(|i| 50.0 + 10.0 * noise(seed.wrapping_mul(64) + 16 + k * 16 + i)).collect::<Vec<f64>>();
        Box::new(MonitorSeries {
            interval_ms: 1000,
            t: (1..=n).map(|i| i as f64).collect(),
            devices: vec![DeviceSeries {
                device: "nvme0n1".into(),
                r_s: v(1),
                w_s: v(2),
                rmb_s: v(3),
                wmb_s: v(4),
                r_await_ms: v(5),
                w_await_ms: v(6),
                aqu_sz: v(7),
                util_pct: v(8),
            }],
            cpu: CpuSeries { user_pct: v(9), sys_pct: v(10), iowait_pct: v(11), idle_pct: v(12) },
            ..Default::default()
        })
    });
    StepOutput {
        metrics,
        usage: Some(Usage { wall_s: level / 100.0, ..Default::default() }),
        info: Default::default(),
        monitors,
    }
}
