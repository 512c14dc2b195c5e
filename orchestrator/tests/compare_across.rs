//! `compare BASE A B`: every later run against BASE in one table (as
//! mmtests' compare-kernels), in table, markdown, JSON and HTML, and exit 3 on a
//! regression in any of them when asked; from the real binary.

mod common;

use common::{export_doc, transcript};
use std::process::{Command, Output};

#[test]
fn several_runs_against_one_base_in_one_table() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let benchrig = |args: &[&str]| -> Output {
        let out = Command::new(env!("CARGO_BIN_EXE_benchrig"))
            .args(args)
            .current_dir(d)
            .env_remove("BENCHRIG_DB")
            .env("NO_COLOR", "1")
            .output()
            .unwrap();
        transcript(args, &out);
        out
    };
    for (name, mean) in [("base", 100.0), ("same", 100.0), ("slower", 80.0)] {
        let f = d.join(format!("{name}.json"));
        std::fs::write(&f, export_doc(name, mean).to_string()).unwrap();
        assert_eq!(benchrig(&["import", f.to_str().unwrap()]).status.code(), Some(0));
    }
    let text = |o: &Output| String::from_utf8_lossy(&o.stdout).into_owned();
    let t = benchrig(&["compare", "base", "same", "slower"]);
    assert_eq!(t.status.code(), Some(0), "no --fail-on-regression");
    let t = text(&t);
    let header = t.lines().next().unwrap();
    assert!(header.contains("base (1)") && header.contains("same (2)") && header.contains("slower (3)"), "{t}");
    let speed = t.lines().find(|l| l.contains("speed")).unwrap();
    assert!(
        speed.contains("100.0 MB/s") && speed.contains("unchanged") && speed.contains("(-20.0%, regressed)"),
        "{t}"
    );
    assert!(t.contains("2 runs against base (1): 1 metric(s) regressed"), "{t}");

    let fail = benchrig(&["compare", "base", "same", "slower", "--fail-on-regression"]);
    assert_eq!(fail.status.code(), Some(3));
    let fine = benchrig(&["compare", "base", "same", "same", "--fail-on-regression"]);
    assert_eq!(fine.status.code(), Some(0));

    let md = text(&benchrig(&["compare", "base", "same", "slower", "--format", "md"]));
    assert!(md.contains("| HOST | PLAY | CELL | STEP | METRIC | base (1) | same (2) | slower (3) |"), "{md}");
    let json: serde_json::Value =
        serde_json::from_str(&text(&benchrig(&["compare", "base", "same", "slower", "--format", "json"]))).unwrap();
    let row = &json["rows"][0];
    assert_eq!(row["metric"], "speed");
    let verdicts: Vec<&str> =
        row["against_base"].as_array().unwrap().iter().map(|c| c["verdict"].as_str().unwrap()).collect();
    assert_eq!(verdicts, ["unchanged", "regressed"]);
    assert!((row["against_base"][1]["ratio"].as_f64().unwrap() - 0.8).abs() < 1e-9);
    // As a page: a chart per metric with a bar per run, the regression marked.
    let page = d.join("compare.html");
    let out = benchrig(&["compare", "base", "same", "slower", "--format", "html", "-o", page.to_str().unwrap()]);
    assert_eq!((out.status.code(), out.stdout.len()), (Some(0), 0), "written to -o, nothing on stdout");
    let html = std::fs::read_to_string(&page).unwrap();
    assert!(html.contains("<h1>benchrig compare — same (2), slower (3) against base (1)</h1>"), "{html}");
    assert!(html.contains("measure: speed (MB/s) — mean with CI95 per run, 1 regressed"), "{html}");
    assert_eq!(html.matches("<svg").count(), 1, "one metric, one chart");
    assert_eq!(html.matches("class=\"n bad\"").count(), 1, "{html}");
    // Two runs as before, now also as JSON.
    let two: serde_json::Value =
        serde_json::from_str(&text(&benchrig(&["compare", "base", "slower", "--format", "json"]))).unwrap();
    assert_eq!((two["base"].as_i64(), two["new"].as_i64()), (Some(1), Some(3)));
    assert_eq!(two["rows"][0]["verdict"], "regressed");
}
