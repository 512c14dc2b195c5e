//! Differential test: `benchrig::changepoint::change_points` must find what
//! Apache Otava 0.8.0's `compute_change_points` (the oracle) finds, case by
//! case, over `tests/changepoint_corpus/` (README.md there says what each
//! case covers; `generate.py` wrote them).
//!
//! For every case: the same change point indexes, in order, and for each the
//! p-value, means, standard deviations and qhat equal within a relative
//! `TOLERANCE` (NaN equal to NaN). Means and deviations are expected to the
//! bit (both sum as numpy does); p-values differ in the last digits
//! (statrs' incomplete beta function against scipy's `stdtr`). The run
//! prints how many cases agree exactly and the largest p-value difference.
//!
//! Needs apache-otava 0.8.0 (`BENCHRIG_OTAVA_PYTHON`: a Python that has it,
//! installed by `.ci/run`), hence `#[ignore]`; `ci/test.sh` runs it, and
//! without the oracle it fails. `ci/otava-oracle.py` is the oracle's side.

use serde::Deserialize;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;

use benchrig::changepoint::{change_points, ChangePoint, Options};

const INSTALL: &str = "install the oracle: python3 -m venv /var/tmp/benchrig-venv && \
/var/tmp/benchrig-venv/bin/pip install apache-otava==0.8.0, then set \
BENCHRIG_OTAVA_PYTHON=/var/tmp/benchrig-venv/bin/python";

const TOLERANCE: f64 = 1e-9;

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Case {
    /// `null` is a missing value: NaN, as Otava's numpy makes `None`.
    series: Vec<Option<f64>>,
    window_len: usize,
    max_pvalue: f64,
    min_magnitude: f64,
}

/// A float as the oracle prints it: a number, or "nan", "inf", "-inf".
#[derive(Deserialize, Clone, Copy)]
#[serde(untagged)]
enum Num {
    Finite(f64),
    #[serde(deserialize_with = "non_finite")]
    Other(f64),
}

fn non_finite<'de, D: serde::Deserializer<'de>>(d: D) -> Result<f64, D::Error> {
    match String::deserialize(d)?.as_str() {
        "nan" => Ok(f64::NAN),
        "inf" => Ok(f64::INFINITY),
        "-inf" => Ok(f64::NEG_INFINITY),
        other => Err(serde::de::Error::custom(format!("not a float: {other:?}"))),
    }
}

impl Num {
    fn get(self) -> f64 {
        match self {
            Num::Finite(x) | Num::Other(x) => x,
        }
    }
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct OracleCase {
    case: String,
    change_points: Vec<OraclePoint>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct OraclePoint {
    index: usize,
    qhat: Num,
    pvalue: Num,
    mean_before: Num,
    mean_after: Num,
    std_before: Num,
    std_after: Num,
}

/// One change point's figures, in a fixed order, from either side.
const FIELDS: [&str; 6] = ["pvalue", "mean_before", "mean_after", "std_before", "std_after", "qhat"];

fn ours(c: &ChangePoint) -> (usize, [f64; 6]) {
    let s = &c.stats;
    (c.index, [s.pvalue, s.mean_before, s.mean_after, s.std_before, s.std_after, c.qhat])
}

fn theirs(c: &OraclePoint) -> (usize, [f64; 6]) {
    let f = [c.pvalue, c.mean_before, c.mean_after, c.std_before, c.std_after, c.qhat];
    (c.index, f.map(Num::get))
}

/// 0 for equal values (NaN equals NaN, inf equals inf), else the difference
/// relative to the larger magnitude (inf when only one is NaN or infinite).
fn rel_diff(a: f64, b: f64) -> f64 {
    if a == b || (a.is_nan() && b.is_nan()) {
        0.0
    } else if !a.is_finite() || !b.is_finite() {
        f64::INFINITY
    } else {
        (a - b).abs() / a.abs().max(b.abs())
    }
}

/// The corpus, or the directory `BENCHRIG_CHANGEPOINT_CORPUS` names (to run
/// the comparison over other series, such as a batch of random ones).
fn corpus() -> PathBuf {
    match std::env::var_os("BENCHRIG_CHANGEPOINT_CORPUS") {
        Some(dir) => PathBuf::from(dir),
        None => Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/changepoint_corpus"),
    }
}

fn cases() -> BTreeMap<String, Case> {
    let mut cases = BTreeMap::new();
    for entry in std::fs::read_dir(corpus()).unwrap() {
        let path = entry.unwrap().path();
        if path.extension().is_some_and(|e| e == "json") {
            let name = path.file_stem().unwrap().to_string_lossy().into_owned();
            let text = std::fs::read_to_string(&path).unwrap();
            let case = serde_json::from_str(&text).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
            cases.insert(name, case);
        }
    }
    cases
}

/// Otava's answer for every case, from `ci/otava-oracle.py` run by the
/// oracle's Python on the given case files.
fn oracle(files: &[PathBuf]) -> BTreeMap<String, OracleCase> {
    let python = std::env::var_os("BENCHRIG_OTAVA_PYTHON")
        .map(PathBuf::from)
        .unwrap_or_else(|| panic!("BENCHRIG_OTAVA_PYTHON is not set; {INSTALL}"));
    assert!(python.is_file(), "{} does not exist; {INSTALL}", python.display());
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("../ci/otava-oracle.py");
    let out = Command::new(&python)
        .arg(&script)
        .args(files)
        .output()
        .unwrap_or_else(|e| panic!("cannot run {}: {e}; {INSTALL}", python.display()));
    assert!(
        out.status.success(),
        "{} {} exited {}: {}\n{INSTALL}",
        python.display(),
        script.display(),
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout)
        .unwrap()
        .lines()
        .map(|line| {
            let c: OracleCase = serde_json::from_str(line).unwrap_or_else(|e| panic!("oracle printed {line:?}: {e}"));
            (c.case.clone(), c)
        })
        .collect()
}

fn show(points: &[(usize, [f64; 6])]) -> String {
    if points.is_empty() {
        return "    (none)".into();
    }
    points
        .iter()
        .map(|(i, f)| {
            let figures: Vec<String> = FIELDS.iter().zip(f).map(|(n, v)| format!("{n} {v:e}")).collect();
            format!("    @{i}: {}", figures.join(", "))
        })
        .collect::<Vec<_>>()
        .join("\n")
}

#[test]
#[ignore = "needs apache-otava 0.8.0; ci/test.sh runs it with BENCHRIG_OTAVA_PYTHON set"]
fn change_points_match_apache_otava() {
    // BENCHRIG_CHANGEPOINT_CASES=a,b runs only those cases (while fixing one).
    let only: Option<Vec<String>> =
        std::env::var("BENCHRIG_CHANGEPOINT_CASES").ok().map(|v| v.split(',').map(String::from).collect());
    let cases: BTreeMap<String, Case> =
        cases().into_iter().filter(|(n, _)| only.as_ref().is_none_or(|o| o.contains(n))).collect();
    assert!(!cases.is_empty(), "no case to run (BENCHRIG_CHANGEPOINT_CASES={only:?})");
    let files: Vec<PathBuf> = cases.keys().map(|n| corpus().join(format!("{n}.json"))).collect();
    let answers = oracle(&files);

    let (mut exact, mut failures) = (0, Vec::new());
    // The largest relative difference of each figure over the corpus, and where.
    let mut largest: [(f64, String); 6] = Default::default();
    for (name, case) in &cases {
        let series: Vec<f64> = case.series.iter().map(|v| v.unwrap_or(f64::NAN)).collect();
        let opts =
            Options { window_len: case.window_len, max_pvalue: case.max_pvalue, min_magnitude: case.min_magnitude };
        let got: Vec<_> =
            change_points(&series, &opts).unwrap_or_else(|e| panic!("case {name}: {e}")).iter().map(ours).collect();
        let Some(answer) = answers.get(name) else {
            failures.push(format!("case {name}: the oracle printed nothing for it"));
            continue;
        };
        let want: Vec<_> = answer.change_points.iter().map(theirs).collect();
        let same_indexes = got.iter().map(|g| g.0).eq(want.iter().map(|w| w.0));
        let mut worst = [0.0f64; 6];
        for ((_, g), (_, w)) in got.iter().zip(&want) {
            for k in 0..6 {
                worst[k] = worst[k].max(rel_diff(g[k], w[k]));
            }
        }
        for (l, &d) in largest.iter_mut().zip(&worst) {
            if d > l.0 {
                *l = (d, name.clone());
            }
        }
        if same_indexes && worst.iter().all(|&d| d == 0.0) {
            exact += 1;
        } else if !same_indexes || worst.iter().any(|&d| d > TOLERANCE) {
            let why = if same_indexes {
                let off: Vec<String> = FIELDS
                    .iter()
                    .zip(worst)
                    .filter(|(_, d)| *d > TOLERANCE)
                    .map(|(n, d)| format!("{n} {d:e}"))
                    .collect();
                format!("relative differences above {TOLERANCE:e}: {}", off.join(", "))
            } else {
                "different change points".to_string()
            };
            failures.push(format!("case {name}: {why}\n  benchrig:\n{}\n  otava:\n{}", show(&got), show(&want)));
        }
    }
    let largest: Vec<String> = FIELDS
        .iter()
        .zip(&largest)
        .map(|(n, (d, case))| if *d > 0.0 { format!("{n} {d:e} ({case})") } else { format!("{n} 0") })
        .collect();
    eprintln!(
        "{} cases: {} agree exactly, {} within {TOLERANCE:e}, {} differ; largest relative differences: {}",
        cases.len(),
        exact,
        cases.len() - exact - failures.len(),
        failures.len(),
        largest.join(", ")
    );
    assert!(failures.is_empty(), "benchrig differs from Otava:\n\n{}", failures.join("\n\n"));
}
