//! docs/reference.md is what `benchrig doc --format md` prints now: the
//! reference is generated from the tables the parser reads, and checked
//! in current. And `benchrig doc` as a user meets it: one workload in
//! full, an unknown name refused with the nearest ones.

use std::path::Path;
use std::process::{Command, Output};

const REGENERATE: &str = "cargo run -p benchrig -- doc --format md > docs/reference.md";

fn benchrig(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_benchrig")).args(args).output().unwrap()
}

fn stdout(args: &[&str]) -> String {
    let out = benchrig(args);
    assert!(out.status.success(), "benchrig {args:?}: {}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8(out.stdout).unwrap()
}

#[test]
fn docs_reference_md_is_what_benchrig_doc_prints_now() {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../docs/reference.md");
    let checked_in = std::fs::read_to_string(&path).unwrap_or_default();
    let generated = stdout(&["doc", "--format", "md"]);
    if checked_in != generated {
        let first = checked_in.lines().zip(generated.lines()).position(|(a, b)| a != b);
        let line = first.unwrap_or_else(|| checked_in.lines().count().min(generated.lines().count()));
        panic!(
            "docs/reference.md is not what `benchrig doc --format md` prints now (first difference at line {}:\n  \
             checked in: {:?}\n  generated:  {:?});\nregenerate it with `{REGENERATE}`",
            line + 1,
            checked_in.lines().nth(line).unwrap_or("(end of file)"),
            generated.lines().nth(line).unwrap_or("(end of output)"),
        );
    }
}

#[test]
fn one_workload_in_full_names_its_arguments_and_metrics() {
    let text = stdout(&["doc", "seq_read"]);
    for want in ["bs", "size (bytes); default 1M", "cold", "throughput", "MB/s, higher is better", "s, lower is better"]
    {
        assert!(text.contains(want), "`{want}` not in:\n{text}");
    }
}

#[test]
fn an_unknown_name_exits_1_with_a_did_you_mean() {
    let out = benchrig(&["doc", "seq_reed"]);
    assert_eq!(out.status.code(), Some(1));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("`seq_reed` is no action, workload, `play` or `scratch_devices`: did you mean `seq_read`?"),
        "{err}"
    );
    assert!(out.stdout.is_empty());
}
