//! Change points in each part of each series (Apache Otava's method on the
//! points' means, `crate::changepoint`), each judged as a person needs it:
//! which run, how much (the segments' means, with an interval), how sure
//! (Otava's p-value), better or worse (against the metric's `better`), and
//! what else changed between that run and the one before; a change the
//! runs' own samples do not bear out (Welch, same p-value) is not one. A series whose
//! points scatter too much to tell a change from noise is `unstable`:
//! reported apart, never a regression.

use super::series::{Series, SeriesKey};
use super::HistoryRun;
use crate::changepoint::{self, ChangePointError};
use crate::significance::{welch_of, Moments};
use crate::stats::Summary;
use benchrig_wire::steps::Better;
use serde_json::Value as Json;

#[derive(Clone, Debug)]
pub struct Settings {
    /// Otava's window, p-value and minimum magnitude.
    pub otava: changepoint::Options,
    /// A change needs at least this many points on each side.
    pub min_points: usize,
    /// A series whose newest segment's points vary more than this (CV, %)
    /// is unstable.
    pub max_cv_pct: f64,
}

impl Default for Settings {
    fn default() -> Self {
        Settings { otava: changepoint::Options::default(), min_points: 1, max_cv_pct: 10.0 }
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize, strum::Display)]
#[serde(rename_all = "lowercase")]
#[strum(serialize_all = "lowercase")]
pub enum Direction {
    Regression,
    Improvement,
}

#[derive(Clone, Debug)]
pub struct Change {
    /// Index into the series' points: the first point after the change.
    pub at: usize,
    /// The points' means on each side, up to the neighbouring changes.
    pub before: Summary,
    pub after: Summary,
    /// After over before, in percent, with a 95% interval.
    pub change_pct: f64,
    pub ci_pct: Option<(f64, f64)>,
    pub pvalue: f64,
    pub direction: Direction,
    /// Between this run and the one before: what else differed.
    pub what_changed: Vec<String>,
    /// What this run's monitors say about the step, against the run before's.
    pub monitors: Option<String>,
    /// A regression between two runs that recorded a revision (`-e rev=…`):
    /// the `benchrig bisect` command line that finds which change made it.
    pub bisect: Option<String>,
    /// Its id, and whether it was reported or acknowledged (`alerts::attach`).
    pub reported: Reported,
}

/// A change's id and what was done about it.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Reported {
    pub id: String,
    /// When `history --alert` first reported it.
    pub alerted: Option<String>,
    /// When a person acknowledged it (`history ack`), who, and why.
    pub acked: Option<String>,
    pub acked_by: Option<String>,
    pub ack_note: Option<String>,
}

pub struct Analysis {
    pub series: Series,
    pub changes: Vec<Change>,
    /// The newest segment's CV (%), when it is too high to tell a change.
    pub unstable_cv: Option<f64>,
}

/// Every change of a stable series, with its series: what history reports
/// and judges (an unstable series' changes are never a regression).
pub fn stable_changes(all: &[Analysis]) -> impl Iterator<Item = (&Analysis, &Change)> {
    all.iter().filter(|a| a.unstable_cv.is_none()).flat_map(|a| a.changes.iter().map(move |c| (a, c)))
}

/// Whether a change in a metric where `better` is said is a regression.
pub fn direction(better: Better, change_pct: f64) -> Direction {
    if (change_pct > 0.0) == (better == Better::Lower) {
        Direction::Regression
    } else {
        Direction::Improvement
    }
}

/// Every series' changes, in the series' order. Each series is analysed
/// apart, so on every core: Otava's tests on a year's 2,400 series are
/// most of a second of one core.
pub fn analyze(all: Vec<Series>, s: &Settings) -> Result<Vec<Analysis>, ChangePointError> {
    let threads = std::thread::available_parallelism().map_or(1, |n| n.get()).min(8);
    let per = all.len().div_ceil(threads).max(1);
    let mut chunks: Vec<Vec<Series>> = Vec::new();
    let mut rest = all.into_iter();
    loop {
        let chunk: Vec<Series> = rest.by_ref().take(per).collect();
        if chunk.is_empty() {
            break;
        }
        chunks.push(chunk);
    }
    std::thread::scope(|scope| {
        let analyse = |chunk: Vec<Series>| chunk.into_iter().map(|x| analyze_one(x, s)).collect::<Result<Vec<_>, _>>();
        let running: Vec<_> = chunks.into_iter().map(|chunk| scope.spawn(move || analyse(chunk))).collect();
        let mut out = Vec::new();
        for t in running {
            out.extend(t.join().expect("a history's analysis thread")?);
        }
        Ok(out)
    })
}

/// Each change's notes from the runs on either side of it (with their
/// details: `history::annotate` reads them a few runs at a time).
pub fn annotate(runs: &[HistoryRun], all: &mut [Analysis]) {
    for a in all {
        for c in &mut a.changes {
            let (prev, this) = (&runs[a.series.points[c.at - 1].run], &runs[a.series.points[c.at].run]);
            annotate_change(prev, this, &a.series.key, c);
        }
    }
}

/// A change's notes: what else changed that night, and what its run's
/// monitors say about the step against the run before's (`compare::explain_step`).
pub fn annotate_change(prev: &HistoryRun, this: &HistoryRun, k: &SeriesKey, c: &mut Change) {
    c.what_changed = what_changed(prev, this, &k.host);
    c.monitors = crate::compare::explain_step(&prev.data, &this.data, (&k.host, &k.play, &k.cell, &k.step));
    c.bisect = (c.direction == Direction::Regression).then(|| bisect_command(prev, this, k)).flatten();
}

/// `benchrig bisect` between the revisions two runs recorded as their
/// `rev` extra var (and their `repo`, when they name one), measuring with
/// the playbook the runs ran, the series' metric on its host; none unless
/// both recorded a revision, and different ones.
fn bisect_command(prev: &HistoryRun, this: &HistoryRun, k: &SeriesKey) -> Option<String> {
    let var = |r: &HistoryRun, name: &str| r.record.extra_vars.get(name)?.as_str().map(str::to_string);
    let (good, bad) = (var(prev, "rev")?, var(this, "rev")?);
    if good == bad {
        return None;
    }
    let repo = var(this, "repo").unwrap_or_else(|| "PATH".into());
    let words = [
        "benchrig",
        "bisect",
        "--good",
        &good,
        "--bad",
        &bad,
        "--repo",
        &repo,
        "--measure",
        &this.record.playbook,
        "--metric",
        &k.metric,
        "-l",
        &k.host,
    ];
    Some(words.iter().map(|w| crate::human::shell_word(w)).collect::<Vec<_>>().join(" "))
}

fn analyze_one(series: Series, s: &Settings) -> Result<Analysis, ChangePointError> {
    let means: Vec<f64> = series.points.iter().map(|p| p.summary.mean).collect();
    let mut changes = Vec::new();
    let mut newest = 0..0;
    for part in series.parts() {
        let found = changepoint::change_points(&means[part.clone()], &s.otava)?;
        let cuts: Vec<usize> = std::iter::once(part.start)
            .chain(found.iter().map(|c| part.start + c.index))
            .chain(std::iter::once(part.end))
            .collect();
        newest = cuts[cuts.len() - 2]..part.end;
        for (i, cp) in found.iter().enumerate() {
            let (before, after) = (cuts[i]..cuts[i + 1], cuts[i + 1]..cuts[i + 2]);
            if before.len() < s.min_points || after.len() < s.min_points {
                continue;
            }
            let (Some(b), Some(a)) = (Summary::of(&means[before.clone()]), Summary::of(&means[after.clone()])) else {
                continue;
            };
            if b.mean == 0.0 || within_the_runs_noise(&series, before.clone(), after.clone(), s.otava.max_pvalue) {
                continue;
            }
            let change_pct = (a.mean / b.mean - 1.0) * 100.0;
            let ci_pct = crate::compare::ratio_ci(&b, &a).map(|(lo, hi)| ((lo - 1.0) * 100.0, (hi - 1.0) * 100.0));
            let at = after.start;
            changes.push(Change {
                at,
                before: b,
                after: a,
                change_pct,
                ci_pct,
                pvalue: cp.stats.pvalue,
                direction: direction(series.better, change_pct),
                // Both `annotate`'s, once the runs around the changes are read again.
                what_changed: Vec::new(),
                monitors: None,
                bisect: None,
                reported: Default::default(),
            });
        }
    }
    let cv = Summary::of(&means[newest]).filter(|x| x.n >= 3).and_then(|x| x.cv).map(|cv| cv * 100.0);
    let unstable_cv = cv.filter(|&cv| cv > s.max_cv_pct);
    Ok(Analysis { series, changes, unstable_cv })
}

/// Otava sees one mean per run, so two steady nights whose means agree
/// closely make any third look like a step, however much each night's own
/// samples scatter (a disk whose 4k writes come at 433 or 356 MB/s, by
/// repetition). A change counts only when the samples themselves differ:
/// Welch's test on all the samples of each side (pooled from the points'
/// summaries) at the same p-value.
fn within_the_runs_noise(
    series: &Series,
    before: std::ops::Range<usize>,
    after: std::ops::Range<usize>,
    max_pvalue: f64,
) -> bool {
    let side = |r: std::ops::Range<usize>| {
        let parts: Vec<Moments> = series.points[r]
            .iter()
            .map(|p| Moments { n: p.summary.n, mean: p.summary.mean, var: p.summary.sd.powi(2) })
            .collect();
        Moments::pooled(&parts)
    };
    match (side(before), side(after)) {
        (Some(b), Some(a)) => welch_of(b, a).is_some_and(|t| t.p > max_pvalue),
        // Too few samples to tell: Otava's word stands.
        _ => false,
    }
}

/// What differed between two runs beside the configuration that splits a
/// series: benchrig, the playbook, its extra vars, and on `host` the
/// distribution, CPU, memory and tools.
pub fn what_changed(prev: &HistoryRun, this: &HistoryRun, host: &str) -> Vec<String> {
    let mut out = Vec::new();
    let (a, b) = (&prev.record, &this.record);
    if a.benchrig_version != b.benchrig_version {
        out.push(format!("benchrig {} → {}", a.benchrig_version, b.benchrig_version));
    }
    if a.playbook_text != b.playbook_text {
        out.push("the playbook's text".into());
    }
    if a.extra_vars != b.extra_vars {
        out.push(format!("extra vars {} → {}", a.extra_vars, b.extra_vars));
    }
    let facts = |r: &HistoryRun| r.data.hosts.iter().find(|h| h.name == host).and_then(|h| h.facts.clone());
    let (Some(fa), Some(fb)) = (facts(prev), facts(this)) else { return out };
    for (what, pointer) in [
        ("distribution", "/distribution/pretty_name"),
        ("CPU", "/cpu/model"),
        ("CPUs", "/cpu/count"),
        ("memory", "/memory/total_bytes"),
    ] {
        let (x, y) = (fa.pointer(pointer), fb.pointer(pointer));
        if x != y {
            let shown =
                |v: Option<&Json>| v.map_or("?".to_string(), |v| v.as_str().map_or(v.to_string(), str::to_string));
            out.push(format!("{what} {} → {}", shown(x), shown(y)));
        }
    }
    let tools = |f: &Json| -> Vec<(String, String)> {
        let list = f["tools"].as_array().cloned().unwrap_or_default();
        list.iter()
            .map(|t| (t["name"].as_str().unwrap_or("?").to_string(), t["version"].as_str().unwrap_or("-").to_string()))
            .collect()
    };
    let (ta, tb) = (tools(&fa), tools(&fb));
    for (name, version) in &tb {
        match ta.iter().find(|(n, _)| n == name) {
            Some((_, old)) if old != version => out.push(format!("{name} {old} → {version}")),
            None => out.push(format!("{name} {version} (new)")),
            _ => {}
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::super::{made_up, series};
    use super::*;

    /// A night's three samples around `mean` (±0.5%).
    fn night(kernel: &'static str, mean: f64) -> (&'static str, Vec<f64>) {
        (kernel, vec![mean * 0.995, mean, mean * 1.005])
    }

    /// Ten nights at ~100 with ±0.3% wobble, then the rest as given.
    fn steady_then(rest: &[(&'static str, f64)]) -> Vec<(&'static str, Vec<f64>)> {
        let wobble = [0.0, 0.3, -0.2, 0.1, -0.3, 0.2, 0.0, -0.1, 0.3, -0.2];
        wobble.iter().map(|w| night("6.1", 100.0 + w)).chain(rest.iter().map(|&(k, m)| night(k, m))).collect()
    }

    fn run_it(nights: &[(&'static str, Vec<f64>)], s: &Settings) -> (Vec<HistoryRun>, Vec<Analysis>) {
        let runs = made_up(nights);
        let mut all = analyze(series::build(&runs), s).unwrap();
        annotate(&runs, &mut all);
        (runs, all)
    }

    #[test]
    fn a_regression_between_two_recorded_revisions_gets_its_bisect_command() {
        let nights = steady_then(&[("6.1", 80.0), ("6.1", 80.4), ("6.1", 79.6)]);
        let mut runs = made_up(&nights);
        for (i, r) in runs.iter_mut().enumerate() {
            r.record.extra_vars = serde_json::json!({"rev": format!("abc{i}"), "repo": "/src/my tool"});
        }
        let mut all = analyze(series::build(&runs), &Settings::default()).unwrap();
        annotate(&runs, &mut all);
        let c = &all[0].changes[0];
        assert_eq!(c.direction, Direction::Regression);
        let at = all[0].series.points[c.at].run;
        assert_eq!(
            c.bisect.as_deref(),
            Some(
                format!(
                    "benchrig bisect --good abc{} --bad abc{at} --repo '/src/my tool' --measure pb.yml --metric m -l h",
                    at - 1
                )
                .as_str()
            )
        );
        // Without a recorded revision, no command.
        let plain = made_up(&nights);
        let mut all = analyze(series::build(&plain), &Settings::default()).unwrap();
        annotate(&plain, &mut all);
        assert_eq!(all[0].changes[0].bisect, None);
    }

    #[test]
    fn a_step_is_found_at_the_run_it_arrived_with_and_judged_against_better() {
        let (runs, all) = run_it(&steady_then(&[("6.1", 90.0), ("6.1", 90.2), ("6.1", 89.8)]), &Settings::default());
        assert_eq!(all.len(), 1);
        let c = &all[0].changes;
        assert_eq!(c.len(), 1, "{:?}", c);
        assert_eq!(runs[all[0].series.points[c[0].at].run].row.name.as_deref(), Some("night-11"));
        assert_eq!(c[0].direction, Direction::Regression, "throughput down");
        assert!((c[0].change_pct + 10.0).abs() < 0.3, "{}", c[0].change_pct);
        let (lo, hi) = c[0].ci_pct.unwrap();
        assert!(lo < c[0].change_pct && c[0].change_pct < hi);
        assert!(c[0].pvalue < 0.001);
        assert!(all[0].unstable_cv.is_none());
    }

    #[test]
    fn a_change_carries_what_the_monitors_saw_against_the_run_before() {
        let nights = steady_then(&[("6.1", 90.0), ("6.1", 90.2), ("6.1", 89.8)]);
        let mut runs = made_up(&nights);
        for (i, r) in runs.iter_mut().enumerate() {
            let (util, await_ms) = if i < 10 { (60.0, 10.0) } else { (99.0, 14.0) };
            for (name, v) in [("%util sdb", util), ("w_await sdb", await_ms)] {
                r.data.monitors.push(crate::store::SampleRow {
                    kind: crate::monitors::MetricKind::Monitor,
                    ..crate::store::testing::sample_row(r.row.id, 1, name, v)
                });
            }
        }
        let mut all = analyze(series::build(&runs), &Settings::default()).unwrap();
        assert_eq!(all.len(), 1, "the monitor metrics are no series of their own");
        annotate(&runs, &mut all);
        let c = &all[0].changes;
        assert_eq!(c.len(), 1);
        assert_eq!(c[0].monitors.as_deref(), Some("w_await +40%, %util 60→99% → disk-bound"));
    }

    #[test]
    fn noise_is_no_change_and_a_step_at_a_split_is_not_read_as_one() {
        let (_, all) = run_it(&steady_then(&[]), &Settings::default());
        assert!(all[0].changes.is_empty(), "{:?}", all[0].changes);
        // The same step, but the kernel changed with it: a split, no change.
        let (runs, all) = run_it(&steady_then(&[("6.2", 90.0), ("6.2", 90.2), ("6.2", 89.8)]), &Settings::default());
        assert!(all[0].changes.is_empty(), "{:?}", all[0].changes);
        let split = &all[0].series.splits;
        assert_eq!(split.len(), 1);
        assert_eq!(split[0].why, "kernel differs: 6.1 → 6.2");
        assert_eq!(runs[all[0].series.points[split[0].at].run].row.id, 11);
    }

    #[test]
    fn a_changed_io_scheduler_on_the_cells_device_splits_the_series_with_its_reason() {
        let mut runs = made_up(&steady_then(&[("6.1", 90.0), ("6.1", 90.2), ("6.1", 89.8)]));
        for (i, r) in runs.iter_mut().enumerate() {
            let scheduler = if i < 10 { "mq-deadline" } else { "none" };
            for h in &mut r.data.hosts {
                let f = h.facts.get_or_insert(serde_json::json!({}));
                f["tuning"] = serde_json::json!({"swappiness": 60});
                f["scratch"] =
                    serde_json::json!([{"name": "d", "queues": [{"device": "loop3", "scheduler": scheduler}]}]);
            }
            for c in &mut r.data.cells {
                c.steps = Some(serde_json::json!({"devices": [{"host": c.host, "name": "d"}]}));
            }
        }
        let all = analyze(series::build(&runs), &Settings::default()).unwrap();
        let split = &all[0].series.splits;
        assert_eq!(split.len(), 1, "{split:?}");
        assert_eq!(split[0].why, "io scheduler mq-deadline → none on loop3");
        assert!(all[0].changes.is_empty(), "a split, not a change: {:?}", all[0].changes);
    }

    /// The nightly lab test's false alarm: two nights whose means agree to
    /// 0.1% and a third 6% lower, every night's 4k writes at 433 or 356 MB/s
    /// by repetition. Otava alone calls the third a step (p < 0.01); its
    /// samples do not differ from the others', so it is not a change. The
    /// same three nights with a tenfold slower disk on the third are.
    #[test]
    fn a_step_in_the_means_that_the_samples_do_not_bear_out_is_no_change() {
        let mut s = Settings::default();
        s.otava.max_pvalue = 0.01;
        let bimodal = vec![("6.1", vec![433.0, 433.1, 355.0]), ("6.1", vec![433.5, 433.3, 355.1])];
        let mut nights = bimodal.clone();
        nights.push(("6.1", vec![431.4, 356.0, 356.7]));
        let means: Vec<f64> = nights.iter().map(|(_, v)| v.iter().sum::<f64>() / 3.0).collect();
        let otava = crate::changepoint::change_points(&means, &s.otava).unwrap();
        assert_eq!(otava.len(), 1, "Otava on the means alone sees a step: {otava:?}");
        let (_, all) = run_it(&nights, &s);
        assert!(all[0].changes.is_empty(), "{:?}", all[0].changes);
        let mut slower = bimodal;
        slower.push(("6.1", vec![43.1, 35.6, 35.7]));
        let (_, all) = run_it(&slower, &s);
        assert_eq!(all[0].changes.len(), 1, "a disk ten times slower is a change");
        assert_eq!(all[0].changes[0].direction, Direction::Regression);
    }

    #[test]
    fn a_series_too_noisy_to_judge_is_unstable_and_small_changes_can_be_ignored() {
        let noisy: Vec<(&'static str, Vec<f64>)> =
            [100.0, 130.0, 80.0, 120.0, 90.0, 125.0].iter().map(|&m| night("6.1", m)).collect();
        let (_, all) = run_it(&noisy, &Settings::default());
        assert!(all[0].unstable_cv.is_some_and(|cv| cv > 10.0), "{:?}", all[0].unstable_cv);
        let small = steady_then(&[("6.1", 98.0), ("6.1", 98.1), ("6.1", 97.9)]);
        let (_, all) = run_it(&small, &Settings::default());
        assert_eq!(all[0].changes.len(), 1, "a 2% step at 0.3% noise is real");
        let mut s = Settings::default();
        s.otava.min_magnitude = 0.05;
        let (_, all) = run_it(&small, &s);
        assert!(all[0].changes.is_empty(), "but under --min-change 5");
        let s = Settings { min_points: 4, ..Settings::default() };
        let (_, all) = run_it(&small, &s);
        assert!(all[0].changes.is_empty(), "three nights after it are fewer than --min-points 4");
    }

    #[test]
    fn what_else_changed_that_night_is_named() {
        let mut runs = made_up(&steady_then(&[("6.1", 90.0)]));
        let last = runs.len() - 1;
        runs[last].record.extra_vars = serde_json::json!({"size": "2G"});
        runs[last].record.benchrig_version = "1.1".into();
        runs[last].data.hosts[0].facts.as_mut().unwrap()["tools"][0]["version"] = "3.36".into();
        let seen = what_changed(&runs[last - 1], &runs[last], "h");
        assert_eq!(seen, ["benchrig 1.0 → 1.1", "extra vars {} → {\"size\":\"2G\"}", "fio 3.33 → 3.36"]);
        assert!(what_changed(&runs[0], &runs[1], "h").is_empty());
    }

    #[test]
    fn a_change_is_a_regression_when_it_goes_against_better() {
        assert_eq!(direction(Better::Higher, -5.0), Direction::Regression);
        assert_eq!(direction(Better::Higher, 5.0), Direction::Improvement);
        assert_eq!(direction(Better::Lower, 5.0), Direction::Regression);
        assert_eq!(direction(Better::Lower, -5.0), Direction::Improvement);
    }
}
