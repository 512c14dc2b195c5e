//! `benchrig compare BASE NEW`: pair the cells of two runs by host, play and
//! parameters, and say per metric whether NEW is better, worse or the same
//! as BASE — only when the difference is beyond noise (a significance test)
//! and beyond a threshold, and only when the two were made on the same
//! configuration (kernel, memory and CPU limits, mkfs, device). Pure: the
//! runs come in loaded.

use crate::configuration::{CellConfig, HostConfig};
use crate::human::describe_params;
use crate::monitors::explain;
use crate::monitors::summary::{self, MonitorMetric};
use crate::significance::{mann_whitney, welch};
use crate::stats::{skewness, Summary};
use crate::store::{CellRow, HostRow, SampleRow};
use benchrig_wire::steps::Better;
use indexmap::IndexMap;
use statrs::distribution::{ContinuousCDF, StudentsT};

/// One run, as the store gives it.
#[derive(Clone, Default)]
pub struct RunData {
    pub hosts: Vec<HostRow>,
    pub cells: Vec<CellRow>,
    pub samples: Vec<SampleRow>,
    /// Its monitor metrics (`Store::monitor_samples`): never judged, read
    /// into `Row::monitors` beside a metric that changed.
    pub monitors: Vec<SampleRow>,
}

#[derive(Clone, Copy, Debug)]
pub struct Options {
    /// Changes smaller than this (percent of BASE's mean) are `unchanged`.
    pub threshold_pct: f64,
    /// Significance level of the two-sided test.
    pub alpha: f64,
}

impl Default for Options {
    fn default() -> Self {
        Options { threshold_pct: 0.0, alpha: 0.05 }
    }
}

#[derive(Clone, Debug, PartialEq)]
pub enum Verdict {
    Improved,
    Regressed,
    Unchanged,
    /// Not the same configuration, too few samples, or only in one run.
    NotComparable(String),
}

impl Verdict {
    pub fn word(&self) -> &'static str {
        match self {
            Verdict::Improved => "improved",
            Verdict::Regressed => "regressed",
            Verdict::Unchanged => "unchanged",
            Verdict::NotComparable(_) => "not comparable",
        }
    }
}

#[derive(Clone, Debug)]
pub struct Row {
    pub host: String,
    pub play: String,
    pub cell: String,
    pub step: String,
    pub metric: String,
    pub unit: String,
    pub better: Better,
    pub base: Option<Summary>,
    pub new: Option<Summary>,
    /// NEW mean / BASE mean, with a 95% interval.
    pub ratio: Option<f64>,
    pub ratio_ci: Option<(f64, f64)>,
    pub welch_p: Option<f64>,
    pub mwu_p: Option<f64>,
    /// Which test the verdict rests on.
    pub test: &'static str,
    pub verdict: Verdict,
    /// Shown beside the verdict, which it does not change: how the two
    /// runs' setups were made differs (`fresh: cell → round`), which is
    /// what comparing them may be about.
    pub note: Option<String>,
    /// What NEW's monitors say about a regressed or improved metric's step,
    /// against BASE's ("w_await +40%, %util 99% → disk-bound").
    pub monitors: Option<String>,
}

type Key = (String, String, String, String, String);

/// One metric of one cell in one run: its samples, what it is, where from.
struct Metric {
    values: Vec<f64>,
    unit: String,
    better: Better,
    cell: i64,
}

/// Metrics by (host, play, cell parameters, step, metric).
fn index(run: &RunData) -> IndexMap<Key, Metric> {
    let mut out: IndexMap<Key, Metric> = IndexMap::new();
    // A sample's cell by id, not by a scan of the cells for every sample.
    let cell_of: std::collections::HashMap<i64, _> = run.cells.iter().rev().map(|c| (c.id, c)).collect();
    for s in &run.samples {
        let Some(&c) = cell_of.get(&s.cell_id) else { continue };
        let key = (c.host.clone(), c.play.clone(), describe_params(&c.params), s.step.clone(), s.metric.clone());
        out.entry(key)
            .or_insert_with(|| Metric { values: Vec::new(), unit: s.unit.clone(), better: s.better, cell: c.id })
            .values
            .push(s.value);
    }
    out
}

impl Row {
    /// A row with its identity and summaries, before any test.
    fn new(key: &Key, what: &Metric, base: Option<Summary>, new: Option<Summary>, verdict: Verdict) -> Row {
        Row {
            host: key.0.clone(),
            play: key.1.clone(),
            cell: key.2.clone(),
            step: key.3.clone(),
            metric: key.4.clone(),
            unit: what.unit.clone(),
            better: what.better,
            base,
            new,
            ratio: None,
            ratio_ci: None,
            welch_p: None,
            mwu_p: None,
            test: "-",
            verdict,
            note: None,
            monitors: None,
        }
    }
}

pub fn compare(base: &RunData, new: &RunData, opts: Options) -> Vec<Row> {
    let (b, n) = (index(base), index(new));
    let mut rows = Vec::new();
    for (key, bm) in &b {
        let Some(nm) = n.get(key) else {
            rows.push(Row::new(key, bm, Summary::of(&bm.values), None, Verdict::NotComparable("not in NEW".into())));
            continue;
        };
        let (bs, ns) = (Summary::of(&bm.values), Summary::of(&nm.values));
        let note = fresh_change(base, bm.cell, new, nm.cell);
        let with_note = |r: Row| Row { note: note.clone(), ..r };
        if let Some(why) = config_difference(base, bm.cell, new, nm.cell) {
            rows.push(with_note(Row::new(key, bm, bs, ns, Verdict::NotComparable(why))));
            continue;
        }
        if bm.values.len() < 2 || nm.values.len() < 2 {
            rows.push(with_note(Row::new(key, bm, bs, ns, Verdict::NotComparable("fewer than 2 samples".into()))));
            continue;
        }
        let mut r = with_note(Row::new(key, bm, bs, ns, Verdict::Unchanged));
        judge(&mut r, &bm.values, &nm.values, opts);
        if matches!(r.verdict, Verdict::Regressed | Verdict::Improved) {
            r.monitors = explain_step(base, new, (&key.0, &key.1, &key.2, &key.3));
        }
        rows.push(r);
    }
    for (key, nm) in n.iter().filter(|(k, _)| !b.contains_key(*k)) {
        rows.push(Row::new(key, nm, None, Summary::of(&nm.values), Verdict::NotComparable("not in BASE".into())));
    }
    rows
}

/// A step by host, play, cell parameters (described) and step name.
pub type StepKey<'a> = (&'a str, &'a str, &'a str, &'a str);

/// One step's monitor figures in a run (means over its repetitions).
fn step_monitors(run: &RunData, key: StepKey) -> Vec<MonitorMetric> {
    let cell_of: std::collections::HashMap<i64, &CellRow> = run.cells.iter().map(|c| (c.id, c)).collect();
    let mut values: IndexMap<&str, Vec<f64>> = IndexMap::new();
    for s in &run.monitors {
        let Some(c) = cell_of.get(&s.cell_id) else { continue };
        if c.host == key.0 && c.play == key.1 && s.step == key.3 && describe_params(&c.params) == key.2 {
            values.entry(s.metric.as_str()).or_default().push(s.value);
        }
    }
    summary::from_stored(values.iter().map(|(k, v)| (*k, v.as_slice())))
}

/// What NEW's monitors say about a step, against BASE's (`compare`
/// beside a changed metric; `history` beside a change point).
pub fn explain_step(base: &RunData, new: &RunData, key: StepKey) -> Option<String> {
    let n = step_monitors(new, key);
    if n.is_empty() {
        return None;
    }
    let b = step_monitors(base, key);
    let facts = new.hosts.iter().find(|h| h.name == key.0).and_then(|h| h.facts.as_ref());
    explain::explain(&n, (!b.is_empty()).then_some(b.as_slice()), explain::cpu_share_of_facts(facts))
}

/// The ratio, its interval, both tests and the verdict for one metric.
fn judge(r: &mut Row, bv: &[f64], nv: &[f64], opts: Options) {
    let (Some(bs), Some(ns)) = (&r.base, &r.new) else { return };
    if bs.mean == 0.0 {
        r.verdict = Verdict::NotComparable("BASE mean is 0".into());
        return;
    }
    let ratio = ns.mean / bs.mean;
    r.ratio = Some(ratio);
    r.ratio_ci = ratio_ci(bs, ns);
    r.welch_p = welch(bv, nv).map(|t| t.p);
    r.mwu_p = mann_whitney(bv, nv).map(|t| t.p);
    // Skewed samples (a long tail of slow repetitions) break the t-test's
    // assumption; the rank test does not care.
    let skewed = [bv, nv].iter().any(|v| v.len() >= 4 && skewness(v).is_some_and(|s| s.abs() > 1.0));
    let (test, p) = if skewed { ("mann-whitney", r.mwu_p) } else { ("welch", r.welch_p) };
    r.test = test;
    let change_pct = (ratio - 1.0) * 100.0;
    let significant = p.is_some_and(|p| p < opts.alpha) && change_pct.abs() >= opts.threshold_pct;
    r.verdict = if !significant {
        Verdict::Unchanged
    } else if (change_pct > 0.0) == (r.better == Better::Higher) {
        Verdict::Improved
    } else {
        Verdict::Regressed
    };
}

/// A 95% interval of NEW's mean over BASE's, by the delta method on its
/// logarithm with Welch's degrees of freedom (fine while both CVs are
/// small); none for a zero or negative ratio, or fewer than 2 samples a side.
pub fn ratio_ci(bs: &Summary, ns: &Summary) -> Option<(f64, f64)> {
    if bs.mean == 0.0 || bs.n < 2 || ns.n < 2 {
        return None;
    }
    let ratio = ns.mean / bs.mean;
    let (vb, vn) = (
        (bs.sd / bs.mean).powi(2) / bs.n as f64,
        if ns.mean == 0.0 { 0.0 } else { (ns.sd / ns.mean).powi(2) / ns.n as f64 },
    );
    let se = (vb + vn).sqrt();
    let df = if se > 0.0 {
        (vb + vn).powi(2) / (vb.powi(2) / (bs.n - 1) as f64 + vn.powi(2) / (ns.n - 1) as f64)
    } else {
        1.0
    };
    (ratio > 0.0).then(|| {
        let t = StudentsT::new(0.0, 1.0, df.max(1.0)).map(|d| d.inverse_cdf(0.975)).unwrap_or(f64::NAN);
        (ratio * (-t * se).exp(), ratio * (t * se).exp())
    })
}

/// A run's cell by id: the store lists them by id, so a binary search
/// (a year of history asks this for every pair of neighbouring points);
/// a list in another order is searched through.
fn find_cell(cells: &[CellRow], id: i64) -> Option<&CellRow> {
    match cells.binary_search_by_key(&id, |c| c.id) {
        Ok(i) => Some(&cells[i]),
        Err(_) => cells.iter().find(|c| c.id == id),
    }
}

/// What differs between the configurations two cells ran on, if anything
/// (`configuration::difference`): kernel, limits, mkfs, device, system
/// state, `tune:`.
pub fn config_difference(base: &RunData, bcell: i64, new: &RunData, ncell: i64) -> Option<String> {
    let of = |run: &RunData, id: i64| {
        let c = find_cell(&run.cells, id)?;
        let facts = run.hosts.iter().find(|h| h.name == c.host).and_then(|h| h.facts.as_ref());
        Some((HostConfig::of(facts), CellConfig::of(c)))
    };
    let ((bh, bc), (nh, nc)) = (of(base, bcell)?, of(new, ncell)?);
    crate::configuration::difference((&bh, &bc), (&nh, &nc))
}

/// "fresh: cell → round" when the two cells' setups were made fresh
/// differently; nothing when they were not, or one was stored before the
/// policy was (unknown is not a difference).
fn fresh_change(base: &RunData, bcell: i64, new: &RunData, ncell: i64) -> Option<String> {
    let policy = |run: &RunData, id: i64| {
        let c = run.cells.iter().find(|c| c.id == id)?;
        c.steps.as_ref()?.get("fresh")?.as_str().map(str::to_string)
    };
    let (b, n) = (policy(base, bcell)?, policy(new, ncell)?);
    (b != n).then(|| format!("fresh: {b} → {n}"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::{RngExt, SeedableRng};
    use serde_json::{json, Value as Json};

    /// A run with one host, `cells` cells of one metric each, `n` samples
    /// drawn around `mean` with a 2% spread (Box-Muller from a seeded RNG).
    fn run(seed: u64, means: &[f64], n: usize, kernel: &str, better: &str) -> RunData {
        let mut rng = rand::rngs::ChaCha8Rng::seed_from_u64(seed);
        let mut normal = || {
            let (u1, u2): (f64, f64) = (rng.random::<f64>().max(1e-12), rng.random());
            (-2.0 * u1.ln()).sqrt() * (2.0 * std::f64::consts::PI * u2).cos()
        };
        let mut cells = Vec::new();
        let mut samples = Vec::new();
        for (i, m) in means.iter().enumerate() {
            cells.push(CellRow {
                key: format!("0:c={i}"),
                params: json!({"c": i}),
                repeat: n as i64,
                info: Some(
                    json!({"setup[0] filesystem@h": {"mkfs_command": "mkfs.ext4 -F", "mkfs_version": "1.47.0"}}),
                ),
                ..crate::store::testing::cell_row(i as i64, "h")
            });
            for rep in 0..n {
                let value = m * (1.0 + 0.02 * normal());
                samples.push(SampleRow {
                    better: better.parse().unwrap(),
                    attempt: None,
                    ..crate::store::testing::sample_row(i as i64, rep as i64 + 1, "throughput", value)
                });
            }
        }
        let hosts = vec![HostRow {
            name: "h".into(),
            status: crate::status::HostStatus::Ok,
            reason: None,
            facts: Some(json!({"kernel": {"release": kernel}})),
        }];
        RunData { hosts, cells, samples, monitors: Vec::new() }
    }

    fn verdicts(rows: &[Row]) -> Vec<&'static str> {
        rows.iter().map(|r| r.verdict.word()).collect()
    }

    /// Monitor metrics of cell `cell`'s step `read`, one sample per repetition.
    fn with_monitors(mut run: RunData, cell: i64, figures: &[(&str, f64)]) -> RunData {
        for rep in 1..=3 {
            for (name, value) in figures {
                run.monitors.push(SampleRow {
                    kind: crate::monitors::MetricKind::Monitor,
                    unit: "x".into(),
                    ..crate::store::testing::sample_row(cell, rep, name, *value)
                });
            }
        }
        run
    }

    #[test]
    fn a_regressed_metric_is_shown_with_what_the_monitors_saw_and_they_are_never_judged() {
        let base = with_monitors(
            run(1, &[100.0, 200.0], 5, "6.18", "higher"),
            1,
            &[("%util loop3", 97.0), ("r_await loop3", 10.0), ("%user", 2.0)],
        );
        let new = with_monitors(
            run(2, &[100.0, 160.0], 5, "6.18", "higher"),
            1,
            &[("%util loop3", 99.0), ("r_await loop3", 14.0), ("%user", 2.0)],
        );
        let (base, new) =
            (with_monitors(base, 0, &[("%util loop3", 50.0)]), with_monitors(new, 0, &[("%util loop3", 90.0)]));
        let rows = compare(&base, &new, Options::default());
        assert_eq!(verdicts(&rows), ["unchanged", "regressed"], "one row per result, none per monitor metric");
        assert_eq!(rows[1].monitors.as_deref(), Some("r_await +40%, %util 99% → disk-bound"));
        assert_eq!(rows[0].monitors, None, "an unchanged metric needs no explanation");
    }

    #[test]
    fn a_planted_ten_percent_regression_is_found() {
        let base = run(1, &[100.0, 200.0, 300.0], 5, "6.18", "higher");
        let new = run(2, &[100.0, 180.0, 300.0], 5, "6.18", "higher");
        let rows = compare(&base, &new, Options::default());
        assert_eq!(verdicts(&rows), ["unchanged", "regressed", "unchanged"]);
        let (lo, hi) = rows[1].ratio_ci.unwrap();
        assert!((rows[1].ratio.unwrap() - 0.9).abs() < 0.03 && lo < hi && hi < 1.0, "{lo} {hi}");
        // Lower is better: the same drop is an improvement.
        let (base, new) = (run(1, &[200.0], 5, "6.18", "lower"), run(2, &[180.0], 5, "6.18", "lower"));
        assert_eq!(verdicts(&compare(&base, &new, Options::default())), ["improved"]);
        // A threshold above the change hides it.
        let (base, new) = (run(1, &[200.0], 5, "6.18", "higher"), run(2, &[180.0], 5, "6.18", "higher"));
        assert_eq!(verdicts(&compare(&base, &new, Options { threshold_pct: 15.0, alpha: 0.05 })), ["unchanged"]);
    }

    #[test]
    fn the_ratio_interval_covers_the_true_ratio_about_95_percent_of_the_time() {
        let trials = 400;
        let covered = (0..trials)
            .filter(|&i| {
                let rows = compare(
                    &run(1000 + i, &[100.0], 5, "k", "higher"),
                    &run(5000 + i, &[90.0], 5, "k", "higher"),
                    Options::default(),
                );
                let (lo, hi) = rows[0].ratio_ci.unwrap();
                lo <= 0.9 && 0.9 <= hi
            })
            .count();
        let share = covered as f64 / trials as f64;
        assert!((0.91..=0.99).contains(&share), "coverage {share}");
    }

    #[test]
    fn pure_noise_is_not_flagged() {
        // 40 cells with the same mean in both runs: at alpha 0.05 a couple
        // could cross by chance; a 5% threshold (above 2% noise) keeps them out.
        let means: Vec<f64> = (1..=40).map(|i| i as f64 * 10.0).collect();
        let rows = compare(
            &run(3, &means, 5, "6.18", "higher"),
            &run(4, &means, 5, "6.18", "higher"),
            Options { threshold_pct: 5.0, alpha: 0.05 },
        );
        assert!(rows.iter().all(|r| r.verdict == Verdict::Unchanged), "{:?}", verdicts(&rows));
    }

    #[test]
    fn another_kernel_or_mkfs_is_not_comparable() {
        let base = run(1, &[100.0], 5, "6.1.0", "higher");
        let new = run(2, &[80.0], 5, "6.18", "higher");
        let rows = compare(&base, &new, Options::default());
        assert_eq!(rows[0].verdict, Verdict::NotComparable("kernel differs: 6.1.0 → 6.18".into()));
        let mut new = run(2, &[80.0], 5, "6.1.0", "higher");
        new.cells[0].info = Some(json!({"setup[0] filesystem@h": {"mkfs_command": "mkfs.ext4 -F -I 128"}}));
        let rows = compare(&base, &new, Options::default());
        assert!(matches!(&rows[0].verdict, Verdict::NotComparable(w) if w.starts_with("mkfs differs")));
        // Cells only in one run are reported, not dropped.
        let rows =
            compare(&run(1, &[1.0, 2.0], 3, "k", "higher"), &run(1, &[1.0], 3, "k", "higher"), Options::default());
        assert_eq!(rows[1].verdict, Verdict::NotComparable("not in NEW".into()));
    }

    #[test]
    fn another_fresh_policy_is_judged_and_noted() {
        let with = |seed: u64, mean: f64, fresh: Option<&str>| {
            let mut r = run(seed, &[mean], 5, "6.18", "higher");
            r.cells[0].steps = fresh.map(|f| json!({"fresh": f}));
            r
        };
        let rows = compare(&with(1, 100.0, Some("cell")), &with(2, 80.0, Some("round")), Options::default());
        assert_eq!(rows[0].verdict, Verdict::Regressed, "comparing the policies is the point");
        assert_eq!(rows[0].note.as_deref(), Some("fresh: cell → round"));
        let rows = compare(&with(1, 100.0, Some("round")), &with(2, 100.0, Some("round")), Options::default());
        assert_eq!(rows[0].note, None);
        let rows = compare(&with(1, 100.0, None), &with(2, 100.0, Some("round")), Options::default());
        assert_eq!(rows[0].note, None, "stored before the policy was: unknown, not a difference");
    }

    #[test]
    fn another_memory_limit_or_cpu_quota_is_not_comparable() {
        let with = |limits: Json| {
            let mut r = run(1, &[100.0], 5, "6.18", "higher");
            r.hosts[0].facts = Some(json!({"kernel": {"release": "6.18"}, "limits": limits}));
            r
        };
        let old = json!({"memory_bytes": 536870912, "cpu_quota": 0.12, "effective_cpus": 0.12});
        let verdict = |a: &RunData, b: &RunData| compare(a, b, Options::default())[0].verdict.clone();
        // The same limits: judged as usual.
        assert_eq!(verdict(&with(old.clone()), &with(old.clone())), Verdict::Unchanged);
        let bigger = json!({"memory_bytes": 1073741824u64, "cpu_quota": 0.12});
        assert_eq!(
            verdict(&with(old.clone()), &with(bigger)),
            Verdict::NotComparable("memory limit differs: 512 MiB → 1.0 GiB".into())
        );
        let faster = json!({"memory_bytes": 536870912, "cpu_quota": 0.4});
        assert_eq!(
            verdict(&with(old.clone()), &with(faster)),
            Verdict::NotComparable("CPU quota differs: 0.12 CPU → 0.4 CPU".into())
        );
        let unlimited = json!({"online_cpus": 2, "effective_cpus": 2.0});
        assert_eq!(
            verdict(&with(unlimited.clone()), &with(old.clone())),
            Verdict::NotComparable("memory limit differs: none → 512 MiB".into())
        );
        let pinned = json!({"cpuset": "0", "cpuset_cpus": 1});
        assert_eq!(
            verdict(&with(unlimited.clone()), &with(pinned)),
            Verdict::NotComparable("cpuset differs: none → 0".into())
        );
        assert_eq!(verdict(&with(unlimited.clone()), &with(unlimited)), Verdict::Unchanged);
        // Facts from before limits were recorded say nothing either way.
        assert_eq!(verdict(&run(1, &[100.0], 5, "6.18", "higher"), &with(old)), Verdict::Unchanged);
    }

    #[test]
    fn another_io_scheduler_on_the_cells_device_or_governor_is_not_comparable() {
        let with = |scheduler: &str, governor: Option<&str>, devices: bool| {
            let mut r = run(1, &[100.0], 5, "6.18", "higher");
            r.hosts[0].facts = Some(json!({"kernel": {"release": "6.18"},
                "tuning": {"governor": governor, "cpufreq_driver": "acpi-cpufreq"},
                "scratch": [{"name": "hdd0", "queues": [{"device": "loop3", "scheduler": scheduler}]}]}));
            r.cells[0].steps = devices.then(|| json!({"devices": [{"host": "h", "name": "hdd0"}]}));
            r
        };
        let verdict = |a: &RunData, b: &RunData| compare(a, b, Options::default())[0].verdict.clone();
        let perf = Some("performance");
        assert_eq!(verdict(&with("mq-deadline", perf, true), &with("mq-deadline", perf, true)), Verdict::Unchanged);
        assert_eq!(
            verdict(&with("mq-deadline", perf, true), &with("none", perf, true)),
            Verdict::NotComparable("io scheduler mq-deadline → none on loop3".into())
        );
        // A device the cell does not use says nothing about it.
        assert_eq!(verdict(&with("mq-deadline", perf, false), &with("none", perf, false)), Verdict::Unchanged);
        assert_eq!(
            verdict(&with("none", perf, true), &with("none", Some("powersave"), true)),
            Verdict::NotComparable("governor performance → powersave".into())
        );
        // Facts from before these were recorded: unknown, judged as usual.
        assert_eq!(verdict(&run(1, &[100.0], 5, "6.18", "higher"), &with("none", perf, true)), Verdict::Unchanged);
    }

    #[test]
    fn another_tune_is_not_comparable_whatever_the_devices_are_called() {
        let with = |tune: Option<(String, &str)>| {
            let mut r = run(1, &[100.0], 5, "6.18", "higher");
            r.cells[0].info = tune
                .map(|(s, v)| json!({"setup[0] tune@h": {"tune": [{"setting": s, "applied": v, "previous": "128"}]}}));
            r
        };
        let verdict = |a: &RunData, b: &RunData| compare(a, b, Options::default())[0].verdict.clone();
        let ra = |dev: &str, v: &'static str| with(Some((format!("read_ahead_kb of {dev}"), v)));
        assert_eq!(verdict(&ra("loop3", "16"), &ra("loop8", "16")), Verdict::Unchanged, "the same tune, renumbered");
        assert_eq!(
            verdict(&with(None), &ra("loop3", "16")),
            Verdict::NotComparable("tune read_ahead_kb: not tuned → 16".into())
        );
        assert_eq!(
            verdict(&ra("loop3", "16"), &ra("loop3", "4096")),
            Verdict::NotComparable("tune read_ahead_kb: 16 → 4096".into())
        );
    }
}
