//! The full message `benchrig` prints for a broken playbook or inventory,
//! compared verbatim with `tests/broken/<case>.expected`. Every message must
//! name file:line:column and quote the line.
//!
//! `UPDATE_EXPECTED=1 cargo test -p benchrig --test error_messages` rewrites
//! the expected files from what the binary prints now (review the diff).

use std::path::Path;
use std::process::Command;

/// (file in tests/broken, what it is). Playbooks are checked with
/// `plan FILE -i ok-inventory.yml --syntax-check`, inventories with
/// `inventory -i FILE --list`.
const CASES: &[(&str, &str)] = &[
    ("play-key-near-miss.yml", "unknown play key with a near miss"),
    ("tune-unknown-key.yml", "a misspelt `tune` key, with its near miss"),
    ("tune-bad-value.yml", "a `tune` value out of range, at the value"),
    ("wrong-type.yml", "a list where a mapping belongs"),
    ("bad-indentation.yml", "a step indented less than its siblings"),
    ("tab.yml", "a tab in indentation"),
    ("duplicate-key.yml", "a key given twice"),
    ("unknown-action.yml", "a misspelt action"),
    ("unknown-action-argument.yml", "a misspelt action argument"),
    ("undefined-role.yml", "a step on a role the play does not define"),
    ("bad-host-pattern.yml", "a host pattern with a broken regex"),
    ("ini-bad-section.ini", "an INI section kind that is not vars or children"),
    ("ini-bad-range.ini", "an INI letter range that runs backwards (a numeric one is no host, as in Ansible)"),
    ("inventory-list-for-mapping.yml", "a YAML inventory with a list of hosts"),
    ("inventory-number-host.yml", "a YAML host name that YAML reads as an integer"),
    ("inventory-host-value-string.yml", "a YAML host whose value is a string, not its variables"),
    ("ini-huge-range.ini", "a host range too large to expand"),
    ("matrix-too-large.yml", "a matrix product too large to build"),
    ("deep-nesting.yml", "YAML nested deeper than the limit"),
    ("fresh-unknown.yml", "a `fresh` that is no policy, with a near miss"),
    ("fresh-round-sequential.yml", "a templated `fresh: round` with `cell_order: sequential` (no rounds)"),
    ("monitors-zero.yml", "`monitors: 0`, no interval"),
    ("kernel-package-missing.yml", "a kernel package that is not on the controller, at `kernel.package`"),
];

fn run(file: &str) -> (Option<i32>, String) {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/broken");
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_benchrig"));
    cmd.current_dir(&dir).env_remove("RUST_LOG").env("NO_COLOR", "1");
    let is_playbook = file.ends_with(".yml") && !file.starts_with("inventory-");
    if is_playbook {
        cmd.args(["plan", file, "-i", "ok-inventory.yml", "--syntax-check", "--db", "/nonexistent/benchrig.db"]);
    } else {
        cmd.args(["inventory", "-i", file, "--list"]);
    }
    let out = cmd.output().expect("run benchrig");
    (out.status.code(), String::from_utf8_lossy(&out.stderr).into_owned())
}

#[test]
fn error_messages_are_as_expected() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/broken");
    let update = std::env::var_os("UPDATE_EXPECTED").is_some();
    let mut failures = Vec::new();
    let quoted = regex::Regex::new(r"(?m)^\d+ \| .*\n +\| +\^").unwrap();
    for (file, what) in CASES {
        let (code, stderr) = run(file);
        let case = file.rsplit_once('.').map_or(*file, |(stem, _)| stem);
        let expected_path = dir.join(format!("{case}.expected"));
        if code != Some(1) {
            failures.push(format!("{file} ({what}): exit code {code:?}, expected 1\n{stderr}"));
            continue;
        }
        // file:line:column, then the quoted line under a gutter.
        let located = regex::Regex::new(&format!(r"^error: {}:\d+:\d+: ", regex::escape(file))).unwrap();
        if !located.is_match(&stderr) || !quoted.is_match(&stderr) {
            failures.push(format!("{file} ({what}): the message lacks file:line:column or the quoted line:\n{stderr}"));
        }
        if update {
            std::fs::write(&expected_path, &stderr).unwrap();
            continue;
        }
        let expected = std::fs::read_to_string(&expected_path)
            .unwrap_or_else(|e| panic!("{}: {e} (UPDATE_EXPECTED=1 writes it)", expected_path.display()));
        if stderr != expected {
            failures.push(format!("{file} ({what}):\n--- expected\n{expected}--- got\n{stderr}"));
        }
    }
    assert!(failures.is_empty(), "{}\n\n(UPDATE_EXPECTED=1 rewrites the expected files)", failures.join("\n\n"));
}
