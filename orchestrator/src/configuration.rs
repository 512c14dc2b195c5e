//! What a cell ran on, as far as its results compare with another cell's:
//! the host's kernel, limits and system state (from its facts) and the
//! cell's mkfs, device and `tune:` (from what its setup recorded).
//! `compare` calls two cells not comparable, and `history` splits a
//! series, where these differ ([`difference`]). Typed, and read once: a
//! year of `history` holds each distinct configuration once and compares
//! them as values, not a night's kilobytes of JSON for every pair of
//! neighbouring points.

use crate::store::CellRow;
use crate::system_state::SystemState;
use serde_json::Value as Json;
use std::collections::BTreeMap;

/// Of a host's facts, what comparability reads. Each value as a person
/// reads it; `None` where the facts did not record it (unknown, which is
/// never a difference).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct HostConfig {
    kernel: Option<String>,
    /// Memory limit, CPU quota, cpuset ("none" when there is none); `None`
    /// for facts from before limits were recorded.
    limits: Option<[String; 3]>,
    /// `None` when the host has no facts.
    system: Option<SystemState>,
}

impl HostConfig {
    pub fn of(facts: Option<&Json>) -> HostConfig {
        let Some(f) = facts else { return HostConfig::default() };
        let kernel = f.pointer("/kernel/release").and_then(Json::as_str).map(str::to_string);
        let limits = f.get("limits").filter(|l| l.is_object()).map(|l| {
            let shown = |key: &str, show: fn(&Json) -> Option<String>| {
                l.get(key).and_then(show).unwrap_or_else(|| "none".into())
            };
            [
                shown("memory_bytes", |v| v.as_u64().map(crate::human::mem)),
                shown("cpu_quota", |v| v.as_f64().map(|q| format!("{} CPU", crate::human::cpus(q)))),
                shown("cpuset", |v| v.as_str().map(str::to_string)),
            ]
        });
        HostConfig { kernel, limits, system: Some(SystemState::of(f)) }
    }
}

/// Of a cell, what comparability reads: what its setup recorded of mkfs
/// and the device, its scratch devices' names (whose queues count), and
/// what its `tune:` applied.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct CellConfig {
    mkfs: Option<String>,
    mkfs_version: Option<String>,
    device: Option<String>,
    scratch: Vec<String>,
    tuned: BTreeMap<String, String>,
}

impl CellConfig {
    pub fn of(c: &CellRow) -> CellConfig {
        CellConfig::from_parts(&c.host, c.info.as_ref(), c.steps.as_ref())
    }

    /// From a cell's host, its `info` and its steps (or their outline:
    /// only `devices` is read).
    pub fn from_parts(host: &str, info: Option<&Json>, steps: Option<&Json>) -> CellConfig {
        let setups: Vec<&Json> = info
            .and_then(Json::as_object)
            .into_iter()
            .flatten()
            .filter(|(k, _)| k.starts_with("setup["))
            .map(|(_, v)| v)
            .collect();
        CellConfig {
            mkfs: setup_value(&setups, "mkfs_command"),
            mkfs_version: setup_value(&setups, "mkfs_version"),
            device: device_identity(&setups),
            scratch: cell_scratch(host, steps),
            tuned: tuned(&setups),
        }
    }
}

/// The first difference between two cells' configurations, as "kernel
/// differs: 6.1 → 6.6": the host's kernel, its memory limit, CPU quota or
/// cpuset, the mkfs command or version, the device, then the system state
/// (of the base cell's scratch devices), then `tune:`.
pub fn difference(base: (&HostConfig, &CellConfig), new: (&HostConfig, &CellConfig)) -> Option<String> {
    let ((bh, bc), (nh, nc)) = (base, new);
    let checks: [(&str, Option<&str>, Option<&str>); 7] = [
        ("kernel", bh.kernel.as_deref(), nh.kernel.as_deref()),
        ("memory limit", limit(bh, 0), limit(nh, 0)),
        ("CPU quota", limit(bh, 1), limit(nh, 1)),
        ("cpuset", limit(bh, 2), limit(nh, 2)),
        ("mkfs", bc.mkfs.as_deref(), nc.mkfs.as_deref()),
        ("mkfs version", bc.mkfs_version.as_deref(), nc.mkfs_version.as_deref()),
        ("device", bc.device.as_deref(), nc.device.as_deref()),
    ];
    checks
        .into_iter()
        .find_map(|(what, a, b)| match (a, b) {
            (Some(a), Some(b)) if a != b => Some(format!("{what} differs: {a} → {b}")),
            _ => None,
        })
        .or_else(|| match (&bh.system, &nh.system) {
            (Some(a), Some(b)) => a.difference(b, &bc.scratch),
            _ => None,
        })
        .or_else(|| tune_difference(&bc.tuned, &nc.tuned))
}

fn limit(h: &HostConfig, i: usize) -> Option<&str> {
    h.limits.as_ref().map(|l| l[i].as_str())
}

/// A value the cell's setup steps recorded (the first that has it).
fn setup_value(setups: &[&Json], key: &str) -> Option<String> {
    setups.iter().find_map(|v| match v.get(key)? {
        Json::String(s) => Some(s.clone()),
        Json::Null => None,
        other => Some(other.to_string()),
    })
}

/// Which physical device a cell's filesystem was on: serial or WWN of the
/// disk, else model and size, else a loop device's backing file.
fn device_identity(setups: &[&Json]) -> Option<String> {
    let facts =
        setups.iter().find_map(|v| v.get("disk_facts").or_else(|| v.get("device_facts")).filter(|f| !f.is_null()))?;
    let text = |k: &str| facts.get(k).and_then(Json::as_str).map(str::to_string);
    text("serial")
        .or_else(|| text("wwn"))
        .or_else(|| Some(format!("{} {}", text("model")?, facts.get("size_bytes")?)))
        .or_else(|| text("backing_file"))
}

/// What a cell's `tune` step applied, by setting without its device or
/// policy ("read_ahead_kb of loop3" is "read_ahead_kb": loop numbers change
/// between labs' starts), each setting's values joined. Facts are read
/// before a visit tunes anything, so this is the only record of it.
fn tuned(setups: &[&Json]) -> BTreeMap<String, String> {
    let mut out: BTreeMap<String, Vec<String>> = Default::default();
    for t in setups.iter().filter_map(|v| v.get("tune")).filter_map(Json::as_array).flatten() {
        let (Some(setting), Some(applied)) = (t["setting"].as_str(), t["applied"].as_str()) else { continue };
        let setting = setting.split(" of ").next().unwrap_or(setting).to_string();
        let values = out.entry(setting).or_default();
        if !values.iter().any(|v| v == applied) {
            values.push(applied.to_string());
        }
    }
    out.into_iter().map(|(k, v)| (k, v.join(","))).collect()
}

/// The first setting one cell's `tune:` set otherwise than the other's.
fn tune_difference(bt: &BTreeMap<String, String>, nt: &BTreeMap<String, String>) -> Option<String> {
    let untuned = "not tuned";
    bt.keys().chain(nt.keys()).find_map(|k| {
        let (x, y) = (bt.get(k).map_or(untuned, String::as_str), nt.get(k).map_or(untuned, String::as_str));
        (x != y).then(|| format!("tune {k}: {x} → {y}"))
    })
}

/// The scratch devices a cell's steps name on its own host (none for a
/// cell stored before its devices were).
fn cell_scratch(host: &str, steps: Option<&Json>) -> Vec<String> {
    let devices = steps.and_then(|s| s.get("devices")).and_then(Json::as_array);
    devices
        .into_iter()
        .flatten()
        .filter(|d| d.get("host").and_then(Json::as_str) == Some(host))
        .filter_map(|d| d.get("name")?.as_str().map(str::to_string))
        .collect()
}
