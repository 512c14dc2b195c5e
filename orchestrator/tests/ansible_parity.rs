//! Differential test: `benchrig inventory` must print what `ansible-inventory`
//! (ansible-core, the oracle) prints, case by case, over
//! `tests/inventory_corpus/` (README.md there says what each case covers).
//!
//! A case is a directory. Every entry whose name starts with `inventory` is an
//! `-i` source (a file or a directory; `group_vars/` and `host_vars/` sit
//! beside it); `patterns.txt` lists host patterns, one a line. Both programs
//! run in the case directory (so `@file` limits are relative to it) with the
//! same arguments:
//!
//! - `--list`, `--graph`, `--graph G` for every group with children, and
//!   `--host H` for every host;
//! - per pattern P: `--list --limit P`, and the hosts P selects, in order:
//!   `benchrig inventory --list-hosts P` against `ansible -i … P --list-hosts`
//!   (`all --limit P` on both sides for an `@file` P, which only `--limit`
//!   reads in Ansible).
//!
//! JSON is compared parsed (key order is incidental); the graph and host lists
//! as text. Nothing else is normalized: a difference is a bug in benchrig.
//! Needs ansible-core, hence `#[ignore]`; `ci/test.sh` runs it with
//! `BENCHRIG_ANSIBLE_INVENTORY` set, and without the oracle it fails.
//!
//! What benchrig does on purpose beyond Ansible, and so what the corpus does
//! not exercise: `--list-hosts` is benchrig's own flag (`ansible-inventory`
//! has none), compared with `ansible P --list-hosts`; benchrig refuses, with
//! file:line:column, a source no plugin can parse (which Ansible only warns
//! about), and checks `scratch_devices` when planning, not here. What the
//! yaml plugin skips with a warning (an unknown key in a group, a group that
//! is no mapping) benchrig skips too, with a located warning on stderr. Where Ansible's own order is arbitrary (hosts of
//! groups two or more levels below the one a pattern names: Python set
//! order), cases avoid depending on it.

use serde_json::Value;
use std::io::{BufRead, Write};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

const INSTALL: &str = "install the oracle: python3 -m venv /var/tmp/benchrig-venv && \
/var/tmp/benchrig-venv/bin/pip install ansible-core==2.19.14, then set \
BENCHRIG_ANSIBLE_INVENTORY=/var/tmp/benchrig-venv/bin/ansible-inventory (or put it on PATH)";

/// The Python that runs `ansible-inventory` (from the environment or PATH):
/// its script's `#!` line. `ansible` must be installed beside it.
fn oracle_python() -> PathBuf {
    let inv = match std::env::var_os("BENCHRIG_ANSIBLE_INVENTORY") {
        Some(p) => PathBuf::from(p),
        None => std::env::var_os("PATH")
            .and_then(|paths| std::env::split_paths(&paths).map(|d| d.join("ansible-inventory")).find(|p| p.is_file()))
            .unwrap_or_else(|| panic!("ansible-inventory not found; {INSTALL}")),
    };
    assert!(inv.is_file(), "{} does not exist; {INSTALL}", inv.display());
    let ansible = inv.with_file_name("ansible");
    assert!(ansible.is_file(), "{} does not exist (it comes with ansible-core); {INSTALL}", ansible.display());
    let script = std::fs::read_to_string(&inv).unwrap_or_else(|e| panic!("cannot read {}: {e}", inv.display()));
    let python = script
        .lines()
        .next()
        .and_then(|l| l.strip_prefix("#!"))
        .map(|l| PathBuf::from(l.trim()))
        .unwrap_or_else(|| panic!("{} has no #! line naming its Python; {INSTALL}", inv.display()));
    assert!(python.is_file(), "{} (the Python of {}) does not exist; {INSTALL}", python.display(), inv.display());
    python
}

/// `ci/ansible-oracle.py` for one case: ansible-core's entry points run in one
/// Python in the case directory, a request a line (a process per run spent
/// five minutes importing ansible-core).
struct Oracle {
    child: std::process::Child,
    requests: std::process::ChildStdin,
    replies: std::io::BufReader<std::process::ChildStdout>,
}

impl Oracle {
    fn start(python: &Path, case: &Case) -> Self {
        let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("../ci/ansible-oracle.py");
        let mut child = Command::new(python)
            .arg(&script)
            .current_dir(&case.dir)
            // The oracle must not pick up an ansible.cfg or colours from the environment.
            .env("ANSIBLE_CONFIG", empty_config())
            .env("ANSIBLE_NOCOLOR", "1")
            .env("ANSIBLE_LOCALHOST_WARNING", "false")
            .env("ANSIBLE_INVENTORY_UNPARSED_WARNING", "false")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .spawn()
            .unwrap_or_else(|e| panic!("cannot run {} {}: {e}", python.display(), script.display()));
        let requests = child.stdin.take().unwrap();
        let replies = std::io::BufReader::new(child.stdout.take().unwrap());
        Oracle { child, requests, replies }
    }

    /// `program args` (`ansible-inventory` or `ansible`); stdout, or why it failed.
    fn run(&mut self, program: &str, args: &[String]) -> Result<String, String> {
        let request = serde_json::json!({ "program": program, "args": args });
        writeln!(self.requests, "{request}").map_err(|e| format!("ansible-oracle.py: {e}"))?;
        let mut line = String::new();
        self.replies.read_line(&mut line).map_err(|e| format!("ansible-oracle.py: {e}"))?;
        let reply: Value =
            serde_json::from_str(&line).map_err(|e| format!("ansible-oracle.py replied no JSON ({e}): {line:?}"))?;
        let text = |k: &str| reply[k].as_str().unwrap_or_default().to_string();
        match reply["rc"].as_i64() {
            Some(0) => Ok(text("stdout")),
            rc => Err(format!("{program} exited {rc:?}: {}{}", text("stdout"), text("stderr"))),
        }
    }
}

impl Drop for Oracle {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

struct Case {
    name: String,
    dir: PathBuf,
    sources: Vec<String>,
    patterns: Vec<String>,
}

fn cases() -> Vec<Case> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/inventory_corpus");
    let mut dirs: Vec<PathBuf> =
        std::fs::read_dir(&root).unwrap().map(|e| e.unwrap().path()).filter(|p| p.is_dir()).collect();
    dirs.sort();
    dirs.into_iter()
        .map(|dir| {
            let mut sources: Vec<String> = std::fs::read_dir(&dir)
                .unwrap()
                .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
                .filter(|n| n.starts_with("inventory"))
                .collect();
            sources.sort();
            // `-i` values that are no file (host lists), after the files.
            if let Ok(t) = std::fs::read_to_string(dir.join("sources.txt")) {
                sources.extend(t.lines().filter(|l| !l.trim().is_empty() && !l.starts_with('#')).map(String::from));
            }
            let name = dir.file_name().unwrap().to_string_lossy().into_owned();
            assert!(!sources.is_empty(), "case {name}: no entry named inventory*, no sources.txt");
            let patterns = std::fs::read_to_string(dir.join("patterns.txt"))
                .map(|t| {
                    t.lines()
                        .map(str::trim)
                        .filter(|l| !l.is_empty() && !l.starts_with('#'))
                        .map(String::from)
                        .collect()
                })
                .unwrap_or_default();
            Case { name, dir, sources, patterns }
        })
        .collect()
}

/// An empty ansible.cfg: the oracle runs on its defaults.
fn empty_config() -> PathBuf {
    let p = std::env::temp_dir().join("benchrig-parity-ansible.cfg");
    if !p.exists() {
        std::fs::write(&p, "").unwrap();
    }
    p
}

/// `benchrig ARGS` in the case directory; stdout, or why it failed.
fn run(program: &Path, case: &Case, args: &[String]) -> Result<String, String> {
    let out = Command::new(program)
        .current_dir(&case.dir)
        .args(args)
        .output()
        .map_err(|e| format!("cannot run {}: {e}", program.display()))?;
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    if out.status.success() {
        Ok(stdout)
    } else {
        Err(format!("{} exited {}: {}{}", program.display(), out.status, stdout, String::from_utf8_lossy(&out.stderr)))
    }
}

/// A unified-style diff (longest common subsequence): `-` benchrig, `+` Ansible.
fn diff(ours: &str, theirs: &str) -> String {
    let (a, b): (Vec<&str>, Vec<&str>) = (ours.lines().collect(), theirs.lines().collect());
    // lcs[i][j]: length of the common subsequence of a[i..] and b[j..].
    let mut lcs = vec![vec![0usize; b.len() + 1]; a.len() + 1];
    for i in (0..a.len()).rev() {
        for j in (0..b.len()).rev() {
            lcs[i][j] = if a[i] == b[j] { lcs[i + 1][j + 1] + 1 } else { lcs[i + 1][j].max(lcs[i][j + 1]) };
        }
    }
    let (mut i, mut j, mut out) = (0, 0, String::new());
    while i < a.len() || j < b.len() {
        if i < a.len() && j < b.len() && a[i] == b[j] {
            out += &format!("  {}\n", a[i]);
            (i, j) = (i + 1, j + 1);
        } else if j == b.len() || (i < a.len() && lcs[i + 1][j] >= lcs[i][j + 1]) {
            out += &format!("- {}\n", a[i]);
            i += 1;
        } else {
            out += &format!("+ {}\n", b[j]);
            j += 1;
        }
    }
    out
}

#[derive(Clone, Copy)]
enum Kind {
    Json,
    Text,
}

struct Checker {
    benchrig: PathBuf,
    comparisons: usize,
    failures: Vec<String>,
}

impl Checker {
    /// Compare `benchrig <ours>` with `<program> <theirs>` run by the oracle.
    #[allow(clippy::too_many_arguments)]
    fn check(
        &mut self,
        case: &Case,
        kind: Kind,
        ours: Vec<String>,
        oracle: &mut Oracle,
        program: &str,
        theirs: Vec<String>,
    ) {
        self.comparisons += 1;
        let what = format!("case {}: benchrig {}  vs  {program} {}", case.name, ours.join(" "), theirs.join(" "));
        let (a, b) = match (run(&self.benchrig, case, &ours), oracle.run(program, &theirs)) {
            (Ok(a), Ok(b)) => (a, b),
            (a, b) => {
                // Both refusing is agreement; one refusing is a difference.
                if a.is_err() && b.is_err() {
                    return;
                }
                self.failures.push(format!("{what}\n  benchrig: {a:?}\n  ansible:  {b:?}"));
                return;
            }
        };
        let (a, b) = match kind {
            Kind::Text => (a, b),
            Kind::Json => {
                let parse = |s: &str, who: &str| -> Result<Value, String> {
                    serde_json::from_str(s).map_err(|e| format!("{who} printed no JSON ({e}):\n{s}"))
                };
                match (parse(&a, "benchrig"), parse(&b, "ansible")) {
                    (Ok(x), Ok(y)) if x == y => return,
                    (Ok(x), Ok(y)) => (pretty(&x), pretty(&y)),
                    (x, y) => {
                        self.failures.push(format!("{what}\n  {x:?}\n  {y:?}"));
                        return;
                    }
                }
            }
        };
        if a != b {
            self.failures.push(format!("{what}\n{}", diff(&a, &b)));
        }
    }
}

/// Pretty JSON with object keys sorted, so a diff lines up.
fn pretty(v: &Value) -> String {
    fn sort(v: &Value) -> Value {
        match v {
            Value::Object(m) => {
                let mut keys: Vec<&String> = m.keys().collect();
                keys.sort();
                Value::Object(keys.into_iter().map(|k| (k.clone(), sort(&m[k]))).collect())
            }
            Value::Array(a) => Value::Array(a.iter().map(sort).collect()),
            other => other.clone(),
        }
    }
    serde_json::to_string_pretty(&sort(v)).unwrap()
}

fn strings(args: &[&str]) -> Vec<String> {
    args.iter().map(|s| s.to_string()).collect()
}

/// Every host the oracle's `--list` names, in groups or in `_meta.hostvars`.
fn hosts_of(list: &Value) -> Vec<String> {
    let mut hosts: Vec<String> = Vec::new();
    let obj = list.as_object().expect("--list is an object");
    let named = obj
        .values()
        .filter_map(|g| g.get("hosts")?.as_array())
        .flatten()
        .filter_map(|h| h.as_str())
        .chain(list["_meta"]["hostvars"].as_object().into_iter().flat_map(|m| m.keys().map(String::as_str)));
    for h in named {
        if !hosts.iter().any(|x| x == h) {
            hosts.push(h.to_string());
        }
    }
    hosts
}

/// Every comparison of one case, with its own oracle driver.
fn check_case(c: &mut Checker, python: &Path, case: &Case) {
    let mut oracle = Oracle::start(python, case);
    let o = &mut oracle;
    let inventory = "ansible-inventory";
    let mut i: Vec<String> = Vec::new();
    for s in &case.sources {
        i.extend(["-i".to_string(), s.clone()]);
    }
    let with = |extra: &[&str]| -> Vec<String> { i.iter().cloned().chain(strings(extra)).collect() };
    let inv_cmd =
        |extra: &[&str]| -> Vec<String> { ["inventory".to_string()].into_iter().chain(with(extra)).collect() };

    c.check(case, Kind::Json, inv_cmd(&["--list"]), o, inventory, with(&["--list"]));
    c.check(case, Kind::Text, inv_cmd(&["--graph"]), o, inventory, with(&["--graph"]));
    let list: Value = o
        .run(inventory, &with(&["--list"]))
        .and_then(|out| serde_json::from_str(&out).map_err(|e| e.to_string()))
        .unwrap_or_else(|e| panic!("case {}: ansible-inventory --list: {e}", case.name));
    // `--graph G` from every group that has children.
    let parents = list.as_object().into_iter().flatten().filter(|(g, v)| *g != "all" && v.get("children").is_some());
    for (g, _) in parents {
        c.check(case, Kind::Text, inv_cmd(&["--graph", g]), o, inventory, with(&["--graph", g]));
    }
    for h in hosts_of(&list) {
        c.check(case, Kind::Json, inv_cmd(&["--host", &h]), o, inventory, with(&["--host", &h]));
    }
    for p in &case.patterns {
        c.check(case, Kind::Json, inv_cmd(&["--list", "--limit", p]), o, inventory, with(&["--list", "--limit", p]));
        let (ours, theirs) = if p.starts_with('@') {
            (inv_cmd(&["--list-hosts", "all", "--limit", p]), with(&["all", "--limit", p, "--list-hosts"]))
        } else {
            (inv_cmd(&["--list-hosts", p]), with(&[p, "--list-hosts"]))
        };
        c.check(case, Kind::Text, ours, o, "ansible", theirs);
    }
}

#[test]
#[ignore = "needs ansible-core (ansible-inventory); ci/test.sh runs it with BENCHRIG_ANSIBLE_INVENTORY set"]
fn benchrig_inventory_matches_ansible_inventory() {
    let python = oracle_python();
    // BENCHRIG_PARITY_CASES=a,b runs only those cases (while fixing one).
    let only: Option<Vec<String>> =
        std::env::var("BENCHRIG_PARITY_CASES").ok().map(|v| v.split(',').map(String::from).collect());
    let cases: Vec<Case> = cases().into_iter().filter(|c| only.as_ref().is_none_or(|o| o.contains(&c.name))).collect();
    assert!(!cases.is_empty(), "no case to run (BENCHRIG_PARITY_CASES={only:?})");
    // Cases are independent: one worker a core, each taking the next case.
    let next = std::sync::atomic::AtomicUsize::new(0);
    let workers = std::thread::available_parallelism().map_or(2, |n| n.get()).min(cases.len());
    let checkers: Vec<Checker> = std::thread::scope(|scope| {
        let handles: Vec<_> = (0..workers)
            .map(|_| {
                scope.spawn(|| {
                    let mut c = Checker {
                        benchrig: PathBuf::from(env!("CARGO_BIN_EXE_benchrig")),
                        comparisons: 0,
                        failures: vec![],
                    };
                    while let Some(case) = cases.get(next.fetch_add(1, std::sync::atomic::Ordering::Relaxed)) {
                        check_case(&mut c, &python, case);
                    }
                    c
                })
            })
            .collect();
        handles.into_iter().map(|h| h.join().expect("a parity worker panicked")).collect()
    });
    let comparisons: usize = checkers.iter().map(|c| c.comparisons).sum();
    let failures: Vec<String> = checkers.into_iter().flat_map(|c| c.failures).collect();
    eprintln!("{} cases, {comparisons} comparisons, {} differences", cases.len(), failures.len());
    assert!(failures.is_empty(), "benchrig differs from Ansible:\n\n{}", failures.join("\n\n"));
}
