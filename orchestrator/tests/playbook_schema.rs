//! `benchrig schema playbook` against an independent validator,
//! check-jsonschema 0.39.0 (python-jsonschema underneath):
//!
//! - the schema is a valid draft 2020-12 schema (its metaschema);
//! - every playbook shipped (`playbooks/`, and README's example) and every
//!   playbook in the test data (found by walking `DATA`) that benchrig's
//!   parser takes passes it; a file there that is no playbook, or is broken on purpose, is
//!   named below with why (`NOT_PLAYBOOKS`, `BROKEN`), never skipped by
//!   accident;
//! - every broken playbook in `BROKEN` is refused by benchrig (`plan
//!   --syntax-check`, which plans each play, so arguments are checked
//!   too) with the message given, and by the validator where the error
//!   says, or, for a rule JSON Schema cannot say, is listed with why and
//!   must still pass the validator (so a rule the schema learns to say is
//!   moved to the refused ones, not left listed).
//!
//! Needs check-jsonschema (`BENCHRIG_CHECK_JSONSCHEMA`: its executable,
//! installed by `.ci/run`), hence `#[ignore]`; `ci/test.sh` runs it, and
//! without the validator it fails.

use serde::Deserialize;
use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::process::Command;

const INSTALL: &str = "install the validator: python3 -m venv /var/tmp/benchrig-venv && \
/var/tmp/benchrig-venv/bin/pip install check-jsonschema==0.39.0, then set \
BENCHRIG_CHECK_JSONSCHEMA=/var/tmp/benchrig-venv/bin/check-jsonschema";

/// Where playbooks live: shipped, and the tests' data (walked, with subdirectories).
const DATA: &[&str] = &[
    "playbooks",
    "orchestrator/tests/data",
    "orchestrator/tests/broken",
    "orchestrator/tests/fuzz_corpus/playbook",
    "fuzz/seeds/playbook",
];

/// YAML files under `DATA` that are not playbooks (benchrig's parser
/// refuses each as one, which the test checks), and why they are there.
const NOT_PLAYBOOKS: &[(&str, &str)] = &[
    ("orchestrator/tests/data/habits/sizes.yml", "a vars file, of habits/playbook.yml's `vars_files`"),
    ("orchestrator/tests/data/habits/group_vars/fast.yml", "an inventory's group variables"),
    ("orchestrator/tests/broken/ok-inventory.yml", "the inventory error_messages.rs plans the broken playbooks with"),
    ("orchestrator/tests/broken/inventory-host-value-string.yml", "a broken inventory (error_messages.rs)"),
    ("orchestrator/tests/broken/inventory-list-for-mapping.yml", "a broken inventory (error_messages.rs)"),
    ("orchestrator/tests/broken/inventory-number-host.yml", "a broken inventory (error_messages.rs)"),
    (
        "orchestrator/tests/fuzz_corpus/playbook/slow-alias-bomb.yml",
        "an alias bomb, refused by benchrig's YAML budget; the validator's YAML reader expands it without \
         a limit (over a minute), so it is not given to it",
    ),
];

/// A playbook benchrig refuses.
struct Broken {
    what: &'static str,
    source: Source,
    /// A fragment of benchrig's error message.
    benchrig: &'static str,
    schema: Verdict,
}

enum Source {
    /// A file of the repository (one of `DATA`'s).
    File(&'static str),
    /// The playbook's text.
    Text(&'static str),
}

enum Verdict {
    /// Refused by the schema, an error at this path (check-jsonschema's
    /// JSONPath; under an `anyOf`, its alternative's deepest error's).
    Refused(&'static str),
    /// Not YAML: the validator's YAML reader refuses it, as benchrig's does.
    NotYaml,
    /// A rule JSON Schema cannot say, and why: the validator takes it.
    Inexpressible(&'static str),
}

use Source::{File, Text};
use Verdict::{Inexpressible, NotYaml, Refused};

const BROKEN: &[Broken] = &[
    // The document and the play.
    Broken {
        what: "a play that is a mapping instead of a list",
        source: Text("hosts: all\nbenchmark:\n  - noop:\n"),
        benchrig: "a playbook is a list of plays",
        schema: Refused("$"),
    },
    Broken { what: "no plays", source: Text("[]\n"), benchrig: "the playbook has no plays", schema: Refused("$") },
    Broken {
        what: "a misspelt play key",
        source: File("orchestrator/tests/broken/play-key-near-miss.yml"),
        benchrig: "unknown key `repaet` in a play",
        schema: Refused("$[0]"),
    },
    Broken {
        what: "a play without hosts",
        source: Text("- name: nowhere\n  benchmark:\n    - noop:\n"),
        benchrig: "has no `hosts`",
        schema: Refused("$[0]"),
    },
    Broken {
        what: "a list where a mapping belongs",
        source: File("orchestrator/tests/broken/wrong-type.yml"),
        benchrig: "`vars` must be a mapping, found a list",
        schema: Refused("$[0].vars"),
    },
    Broken {
        what: "a string where a boolean belongs",
        source: Text("- hosts: all\n  become: yes please\n"),
        benchrig: "`become` is `true` or `false`",
        schema: Refused("$[0].become"),
    },
    Broken {
        what: "no repetition",
        source: Text("- hosts: all\n  repeat: 0\n"),
        benchrig: "`repeat` must be a whole number of at least 1",
        schema: Refused("$[0].repeat"),
    },
    Broken {
        what: "adaptive repetitions without `max`",
        source: Text("- hosts: all\n  repeat: {min: 3, ci_pct: 2}\n"),
        benchrig: "adaptive `repeat` needs `max`",
        schema: Refused("$[0].repeat"),
    },
    Broken {
        what: "a misspelt key of an adaptive `repeat`",
        source: Text("- hosts: all\n  repeat: {max: 3, ci_pc: 2}\n"),
        benchrig: "unknown key `ci_pc` in `repeat`",
        schema: Refused("$[0].repeat"),
    },
    Broken {
        what: "a misspelt cell order",
        source: Text("- hosts: all\n  cell_order: shuffle\n"),
        benchrig: "`cell_order` is `sequential`, `interleaved` or `shuffled`",
        schema: Refused("$[0].cell_order"),
    },
    Broken {
        what: "a share of failures over 100%",
        source: Text("- hosts: all\n  max_fail_percentage: 101\n"),
        benchrig: "`max_fail_percentage` is a number from 0 to 100",
        schema: Refused("$[0].max_fail_percentage"),
    },
    Broken {
        what: "a batch of no hosts",
        source: Text("- hosts: all\n  serial: 0\n"),
        benchrig: "`serial` is a number of hosts",
        schema: Refused("$[0].serial"),
    },
    Broken {
        what: "a fresh policy that is none",
        source: File("orchestrator/tests/broken/fresh-unknown.yml"),
        benchrig: "not `rounds`",
        schema: Refused("$[0].fresh"),
    },
    Broken {
        what: "monitors sampled every 0 seconds",
        source: File("orchestrator/tests/broken/monitors-zero.yml"),
        benchrig: "`monitors` is `true` (every second), `false` or seconds, at least 0.01",
        schema: Refused("$[0].monitors"),
    },
    Broken {
        what: "a role listed twice",
        source: Text("- hosts: all\n  roles: [a, a]\n"),
        benchrig: "role `a` is listed twice",
        schema: Refused("$[0].roles"),
    },
    Broken {
        what: "an assignment that is none",
        source: Text("- hosts: all\n  assign: some\n"),
        benchrig: "`assign` is `all`",
        schema: Refused("$[0].assign"),
    },
    Broken {
        what: "a templated vars file",
        source: Text("- hosts: all\n  vars_files: [\"{{ which }}.yml\"]\n"),
        benchrig: "`vars_files` names a file, not a template",
        schema: Refused("$[0].vars_files[0]"),
    },
    Broken {
        what: "a misspelt `tune` key",
        source: File("orchestrator/tests/broken/tune-unknown-key.yml"),
        benchrig: "unknown key `read_ahead` in `tune`",
        schema: Refused("$[0].tune"),
    },
    Broken {
        what: "a `tune` value out of range",
        source: File("orchestrator/tests/broken/tune-bad-value.yml"),
        benchrig: "`tune.swappiness` is a whole number from 0 to 200",
        schema: Refused("$[0].tune.swappiness"),
    },
    Broken {
        what: "a THP word the kernel does not have",
        source: Text("- hosts: all\n  tune: {thp: sometimes}\n"),
        benchrig: "thp `sometimes` is one of always, madvise, never",
        schema: Refused("$[0].tune.thp"),
    },
    Broken {
        what: "a sysctl name that leaves /proc/sys",
        source: Text("- hosts: all\n  tune:\n    sysctl: {../../etc/passwd: 1}\n"),
        benchrig: "is a dotted name such as `vm.dirty_ratio`",
        schema: Refused("$[0].tune.sysctl"),
    },
    Broken {
        what: "a new profile without mkfs",
        source: Text("- hosts: all\n  profiles:\n    mine: {fstype: ext4}\n"),
        benchrig: "new profile `mine` needs `fstype` and `mkfs`",
        schema: Refused("$[0].profiles.mine"),
    },
    Broken {
        what: "a misspelt profile key",
        source: Text("- hosts: all\n  profiles:\n    ext4: {mkfs_options: -F}\n"),
        benchrig: "unknown key `mkfs_options` in profile `ext4`",
        schema: Refused("$[0].profiles.ext4"),
    },
    Broken {
        what: "a matrix axis that is a mapping",
        source: Text("- hosts: all\n  matrix:\n    bs: {small: 4k}\n"),
        benchrig: "axis `bs` must be a list of values",
        schema: Refused("$[0].matrix.bs"),
    },
    // Rules between a play's keys.
    Broken {
        what: "a seed without a shuffled order",
        source: Text("- hosts: all\n  seed: 3\n"),
        benchrig: "`seed` is for `cell_order: shuffled`",
        schema: Refused("$[0]"),
    },
    Broken {
        what: "batches in a role play",
        source: Text("- hosts: all\n  roles: [a]\n  serial: 1\n"),
        benchrig: "`serial` is for plays without roles",
        schema: Refused("$[0]"),
    },
    Broken {
        what: "`fresh: round` in a sequential order",
        source: Text("- hosts: all\n  fresh: round\n  cell_order: sequential\n"),
        benchrig: "`cell_order: sequential` has no rounds",
        schema: Refused("$[0]"),
    },
    Broken {
        what: "`fresh: round` in a role play",
        source: Text("- hosts: all\n  roles: [server, client]\n  fresh: round\n"),
        benchrig: "`fresh: round` is for plays without roles",
        schema: Refused("$[0]"),
    },
    // Steps.
    Broken {
        what: "a misspelt action",
        source: File("orchestrator/tests/broken/unknown-action.yml"),
        benchrig: "unknown key `seq_wirte` in a step",
        schema: Refused("$[0].benchmark[0]"),
    },
    Broken {
        what: "a misspelt step key",
        source: Text("- hosts: all\n  benchmark:\n    - noop:\n      ignore_erors: true\n"),
        benchrig: "unknown key `ignore_erors` in a step",
        schema: Refused("$[0].benchmark[0]"),
    },
    Broken {
        what: "a step without an action",
        source: Text("- hosts: all\n  benchmark:\n    - name: only a name\n"),
        benchrig: "this step has no action",
        schema: Refused("$[0].benchmark[0]"),
    },
    Broken {
        what: "a step with two actions",
        source: Text("- hosts: all\n  benchmark:\n    - {noop: , drop_caches: }\n"),
        benchrig: "a step has one action, this one has `noop` and `drop_caches`",
        schema: Refused("$[0].benchmark[0]"),
    },
    Broken {
        what: "a step that is not a mapping",
        source: Text("- hosts: all\n  benchmark:\n    - noop\n"),
        benchrig: "a step must be a mapping",
        schema: Refused("$[0].benchmark[0]"),
    },
    Broken {
        what: "a step's timeout of 0 seconds",
        source: Text("- hosts: all\n  benchmark:\n    - {noop: , timeout: 0}\n"),
        benchrig: "`timeout` is a whole number of seconds, at least 1",
        schema: Refused("$[0].benchmark[0].timeout"),
    },
    Broken {
        what: "a loop over a number",
        source: Text("- hosts: all\n  benchmark:\n    - {noop: , loop: 3}\n"),
        benchrig: "`loop` is a list, or a template giving one",
        schema: Refused("$[0].benchmark[0].loop"),
    },
    Broken {
        what: "`loop_control` without `loop`",
        source: Text("- hosts: all\n  benchmark:\n    - {noop: , loop_control: {loop_var: d}}\n"),
        benchrig: "`loop_control` without `loop`",
        schema: Refused("$[0].benchmark[0]"),
    },
    Broken {
        what: "a `when` in braces",
        source: Text("- hosts: all\n  benchmark:\n    - {noop: , when: '{{ x }}'}\n"),
        benchrig: "`when` is a bare expression",
        schema: Refused("$[0].benchmark[0].when"),
    },
    // Action arguments.
    Broken {
        what: "a misspelt action argument",
        source: File("orchestrator/tests/broken/unknown-action-argument.yml"),
        benchrig: "unknown key `bss` in the arguments of `seq_read`",
        schema: Refused("$[0].benchmark[0].seq_read"),
    },
    Broken {
        what: "arguments that are not a mapping",
        source: Text("- hosts: all\n  benchmark:\n    - seq_read: 4k\n"),
        benchrig: "the arguments of `seq_read` must be a mapping, found a string",
        schema: Refused("$[0].benchmark[0].seq_read"),
    },
    Broken {
        what: "an action that takes no arguments, given one",
        source: Text("- hosts: all\n  benchmark:\n    - noop: {x: 1}\n"),
        benchrig: "`noop` takes no arguments",
        schema: Refused("$[0].benchmark[0].noop"),
    },
    Broken {
        what: "a required argument missing",
        source: Text("- hosts: all\n  benchmark:\n    - seq_write: {bs: 4k}\n"),
        benchrig: "missing field `size`",
        schema: Refused("$[0].benchmark[0].seq_write"),
    },
    Broken {
        what: "a string where a boolean argument belongs",
        source: Text("- hosts: all\n  benchmark:\n    - seq_write: {size: 1M, direct: maybe}\n"),
        benchrig: "expected a boolean",
        schema: Refused("$[0].benchmark[0].seq_write.direct"),
    },
    Broken {
        what: "a string where a whole-number argument belongs",
        source: Text("- hosts: all\n  setup:\n    - tree: {files: many, dirs: 1, size: 4k}\n"),
        benchrig: "expected u64",
        schema: Refused("$[0].setup[0].tree.files"),
    },
    Broken {
        what: "a size that is none",
        source: Text("- hosts: all\n  benchmark:\n    - seq_write: {size: 4q}\n"),
        benchrig: "`4q` is not a size",
        schema: Refused("$[0].benchmark[0].seq_write.size"),
    },
    Broken {
        what: "a codec that is none",
        source: Text("- hosts: all\n  benchmark:\n    - cold_read: {size: 1M, codec: lz4}\n"),
        benchrig: "unknown variant `lz4`",
        schema: Refused("$[0].benchmark[0].cold_read.codec"),
    },
    Broken {
        what: "a filesystem step without a profile",
        source: Text("- hosts: all\n  setup:\n    - filesystem: {device: hdd0}\n"),
        benchrig: "`filesystem` needs a `profile`",
        schema: Refused("$[0].setup[0].filesystem"),
    },
    // Not YAML.
    Broken {
        what: "a tab in indentation",
        source: File("orchestrator/tests/broken/tab.yml"),
        benchrig: "a tab in indentation",
        schema: NotYaml,
    },
    Broken {
        what: "a step indented less than its siblings",
        source: File("orchestrator/tests/broken/bad-indentation.yml"),
        benchrig: "invalid YAML",
        schema: NotYaml,
    },
    Broken {
        what: "a key given twice",
        source: File("orchestrator/tests/broken/duplicate-key.yml"),
        benchrig: "duplicate key `repeat`",
        schema: NotYaml,
    },
    // What JSON Schema cannot say.
    Broken {
        what: "a step on a role the play does not define",
        source: File("orchestrator/tests/broken/undefined-role.yml"),
        benchrig: "runs on role `clinet`, which the play does not define",
        schema: Inexpressible("a value (a step's `role`) must be one of another part's values (the play's `roles`): JSON Schema has no reference from one value to another"),
    },
    Broken {
        what: "a filesystem profile that is none",
        source: Text("- hosts: all\n  setup:\n    - filesystem: {device: hdd0, profile: ext5}\n"),
        benchrig: "unknown filesystem profile `ext5`",
        schema: Inexpressible("the profile is a built-in or one of the play's `profiles` keys: a value checked against another part's keys"),
    },
    Broken {
        what: "an exclude entry that names no axis",
        source: Text("- hosts: all\n  matrix:\n    a: [1]\n    exclude: [{b: 1}]\n"),
        benchrig: "unknown key `b` in a matrix `exclude` entry",
        schema: Inexpressible("an entry's keys must be the matrix's other keys: keys checked against sibling keys"),
    },
    Broken {
        what: "a host pattern with a broken regex",
        source: File("orchestrator/tests/broken/bad-host-pattern.yml"),
        benchrig: "play `bad pattern`",
        schema: Inexpressible("a pattern's `~regex` must compile: a regex's own grammar is no JSON Schema pattern"),
    },
    Broken {
        what: "a `when` that is no expression",
        source: Text("- hosts: all\n  benchmark:\n    - {noop: , when: 'x =='}\n"),
        benchrig: "`when: x ==`",
        schema: Inexpressible("a condition must compile as a Jinja expression: a grammar, not a pattern"),
    },
    Broken {
        what: "a vars file that is not there",
        source: Text("- hosts: all\n  vars_files: [does-not-exist.yml]\n"),
        benchrig: "cannot read vars file",
        schema: Inexpressible("a file must exist beside the playbook: the file system is outside the document"),
    },
    Broken {
        what: "a templated `fresh: round` in a sequential order",
        source: File("orchestrator/tests/broken/fresh-round-sequential.yml"),
        benchrig: "`cell_order: sequential` has no rounds",
        schema: Inexpressible("a template is checked once rendered, per cell: the schema sees only the template"),
    },
    Broken {
        what: "a matrix product too large to build",
        source: File("orchestrator/tests/broken/matrix-too-large.yml"),
        benchrig: "the matrix has more than 100000 cells",
        schema: Inexpressible("the number of cells is the product of the axes' lengths: JSON Schema bounds one list's length, not a product"),
    },
    Broken {
        what: "a matrix product too large to build (a fuzzer's find)",
        source: File("orchestrator/tests/fuzz_corpus/playbook/regress-matrix-product-ran-out-of-memory.yml"),
        benchrig: "the matrix has more than 100000 cells",
        schema: Inexpressible("the number of cells is the product of the axes' lengths"),
    },
    Broken {
        what: "the same, among cargo-fuzz's seeds",
        source: File("fuzz/seeds/playbook/regress-matrix-product-ran-out-of-memory.yml"),
        benchrig: "the matrix has more than 100000 cells",
        schema: Inexpressible("the number of cells is the product of the axes' lengths"),
    },
    Broken {
        what: "YAML nested deeper than the limit",
        source: File("orchestrator/tests/broken/deep-nesting.yml"),
        benchrig: "nested more than 32 levels deep",
        schema: Inexpressible("the nesting limit is benchrig's YAML reader's (its stack), and a variable's value may be anything"),
    },
    Broken {
        what: "YAML nested 60 deep (a fuzzer's find)",
        source: File("orchestrator/tests/fuzz_corpus/playbook/regress-flow-nesting-60-overflowed-stack.yml"),
        benchrig: "nested more than 32 levels deep",
        schema: Inexpressible("the nesting limit is benchrig's YAML reader's"),
    },
    Broken {
        what: "the same, among cargo-fuzz's seeds",
        source: File("fuzz/seeds/playbook/regress-flow-nesting-60-overflowed-stack.yml"),
        benchrig: "nested more than 32 levels deep",
        schema: Inexpressible("the nesting limit is benchrig's YAML reader's"),
    },
    Broken {
        what: "a share of hosts over 100%",
        source: Text("- hosts: all\n  serial: '150%'\n"),
        benchrig: "`serial` is a number of hosts",
        schema: Inexpressible("the share's range (above 0, at most 100) is a number's inside a string (`\"30%\"`, `\"1e1%\"`): a pattern checks its form only"),
    },
    Broken {
        what: "a whole number written with a decimal point",
        source: Text("- hosts: all\n  repeat: 3.0\n"),
        benchrig: "`repeat` must be a whole number",
        schema: Inexpressible("JSON Schema's `integer` is any number without a fraction, 3.0 too; YAML's `3.0` is a float to benchrig"),
    },
    Broken {
        what: "an infinite sampling interval",
        source: Text("- hosts: all\n  monitors: .inf\n"),
        benchrig: "non-finite float `.inf`",
        schema: Inexpressible("benchrig's YAML reader refuses `.inf` and `.nan`; to JSON Schema they are numbers, and it has no check that one is finite"),
    },
    Broken {
        what: "a size that is a fraction of a byte",
        source: Text("- hosts: all\n  benchmark:\n    - seq_write: {size: '1.5'}\n"),
        benchrig: "`1.5` is not a size",
        schema: Inexpressible("a size must come to whole bytes within 64 bits: arithmetic on the number a pattern has matched"),
    },
    Broken {
        what: "a profile whose mkfs is no mkfs tool",
        source: Text("- hosts: all\n  profiles:\n    ext4: {mkfs: dd if=/dev/zero}\n"),
        benchrig: "is not a mkfs tool",
        schema: Inexpressible("`mkfs` is checked word by word after splitting (its first word a mkfs tool, no word a device), a string or a list alike"),
    },
    Broken {
        what: "a fio option benchrig refuses",
        source: Text("- hosts: all\n  benchmark:\n    - fio: {jobs: {r: {rw: read, directory: /etc}}}\n"),
        benchrig: "`directory`",
        schema: Inexpressible("fio's job is checked in code when it is built (`FioArgs::try_from`: exactly one of `jobs`, `job_file`, `job_text`; options fio takes, less those that reach outside), which the derived schema does not see"),
    },
];

#[derive(Deserialize)]
struct Report {
    #[serde(default)]
    errors: Vec<SchemaError>,
    #[serde(default)]
    parse_errors: Vec<ParseError>,
}

#[derive(Deserialize)]
struct SchemaError {
    filename: String,
    path: String,
    message: String,
    /// Under an `anyOf`, the alternative's own error, deeper in.
    #[serde(default)]
    best_deep_match: Option<Match>,
}

#[derive(Deserialize)]
struct Match {
    path: String,
    message: String,
}

#[derive(Deserialize)]
struct ParseError {
    filename: String,
}

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).parent().unwrap().to_path_buf()
}

fn validator() -> PathBuf {
    let v = std::env::var_os("BENCHRIG_CHECK_JSONSCHEMA")
        .map(PathBuf::from)
        .unwrap_or_else(|| panic!("BENCHRIG_CHECK_JSONSCHEMA is not set; {INSTALL}"));
    assert!(v.is_file(), "{} does not exist; {INSTALL}", v.display());
    v
}

/// Every YAML file under `DATA`, relative to the repository.
fn yaml_files() -> Vec<String> {
    fn walk(dir: &Path, root: &Path, out: &mut Vec<String>) {
        for entry in std::fs::read_dir(dir).unwrap_or_else(|e| panic!("{}: {e}", dir.display())).flatten() {
            let path = entry.path();
            if path.is_dir() {
                walk(&path, root, out);
            } else if path.extension().is_some_and(|e| e == "yml" || e == "yaml") {
                out.push(path.strip_prefix(root).unwrap().display().to_string());
            }
        }
    }
    let root = root();
    let mut out = Vec::new();
    for dir in DATA {
        walk(&root.join(dir), &root, &mut out);
    }
    out.sort();
    out
}

/// Each file's schema errors, (path, message).
type Errors = BTreeMap<PathBuf, Vec<(String, String)>>;

/// The validator's verdict on each file: its schema errors, and the files
/// it could not read at all.
fn validate(schema: &Path, files: &[PathBuf]) -> (Errors, BTreeSet<PathBuf>) {
    let v = validator();
    let out = Command::new(&v)
        .args(["--output-format", "json", "--schemafile"])
        .arg(schema)
        .args(files)
        .output()
        .unwrap_or_else(|e| panic!("cannot run {}: {e}; {INSTALL}", v.display()));
    let report: Report = serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
        panic!(
            "{} printed no report ({e}), exit {}:\n{}{}",
            v.display(),
            out.status,
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        )
    });
    let mut errors = Errors::new();
    for e in report.errors {
        let found = errors.entry(PathBuf::from(e.filename)).or_default();
        if let Some(deep) = e.best_deep_match.filter(|d| d.path != e.path) {
            found.push((deep.path, deep.message));
        }
        found.push((e.path, e.message));
    }
    let unreadable = report.parse_errors.into_iter().map(|e| PathBuf::from(e.filename)).collect();
    let failed = !errors.is_empty() || !BTreeSet::<PathBuf>::is_empty(&unreadable);
    assert_eq!(out.status.success(), !failed, "the exit status agrees with the report");
    (errors, unreadable)
}

/// benchrig's verdict: `plan --syntax-check`'s exit code and stderr.
fn benchrig_check(playbook: &Path) -> (Option<i32>, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_benchrig"))
        .args(["plan"])
        .arg(playbook)
        .args(["-i"])
        .arg(root().join("orchestrator/tests/broken/ok-inventory.yml"))
        .args(["--syntax-check", "--db", "/nonexistent/benchrig.db"])
        .env_remove("RUST_LOG")
        .env("NO_COLOR", "1")
        .output()
        .expect("run benchrig");
    (out.status.code(), String::from_utf8_lossy(&out.stderr).into_owned())
}

#[test]
#[ignore = "needs check-jsonschema (BENCHRIG_CHECK_JSONSCHEMA); ci/test.sh runs it"]
fn the_schema_takes_every_playbook_and_refuses_broken_ones_as_benchrig_does() {
    let root = root();
    let dir = tempfile::tempdir().unwrap();
    let schema = dir.path().join("benchrig-playbook.schema.json");
    let out = Command::new(env!("CARGO_BIN_EXE_benchrig")).args(["schema", "playbook"]).output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    std::fs::write(&schema, &out.stdout).unwrap();
    println!("schema: {} bytes", out.stdout.len());

    let meta = Command::new(validator()).arg("--check-metaschema").arg(&schema).output().unwrap();
    assert!(meta.status.success(), "not a valid JSON Schema:\n{}", String::from_utf8_lossy(&meta.stdout));

    // Which files are which: every YAML file is a playbook to validate,
    // a broken case, or no playbook, and each named one exists.
    let files = yaml_files();
    let broken_files: Vec<&str> =
        BROKEN.iter().filter_map(|b| if let File(f) = b.source { Some(f) } else { None }).collect();
    for named in broken_files.iter().chain(NOT_PLAYBOOKS.iter().map(|(f, _)| f)) {
        assert!(files.iter().any(|f| f == named), "{named} is named here but is no YAML file under {DATA:?}");
    }
    let mut not_playbooks = Vec::new();
    for (f, why) in NOT_PLAYBOOKS {
        let e = benchrig::playbook::load(&root.join(f)).err();
        assert!(e.is_some(), "{f} is listed as no playbook ({why}), but benchrig's parser takes it");
        not_playbooks.push(*f);
    }
    let playbooks: Vec<&String> =
        files.iter().filter(|f| !broken_files.contains(&f.as_str()) && !not_playbooks.contains(&f.as_str())).collect();
    for f in &playbooks {
        if let Err(e) = benchrig::playbook::load(&root.join(f)) {
            panic!("{f}: benchrig's parser refuses it, and it is listed neither in BROKEN nor in NOT_PLAYBOOKS: {e}");
        }
    }
    assert!(playbooks.len() >= 20, "the walk found the playbooks: {playbooks:?}");

    // The broken cases, each a file benchrig refuses as the case says.
    let mut broken_paths = Vec::new();
    for (i, b) in BROKEN.iter().enumerate() {
        let path = match b.source {
            File(f) => root.join(f),
            Text(text) => {
                let p = dir.path().join(format!("case-{i:02}.yml"));
                std::fs::write(&p, text).unwrap();
                p
            }
        };
        let (code, stderr) = benchrig_check(&path);
        assert!(
            code == Some(1) && stderr.contains(b.benchrig),
            "{}: benchrig should refuse it saying {:?}; exit {code:?}:\n{stderr}",
            b.what,
            b.benchrig
        );
        broken_paths.push(path);
    }

    // The example README.md shows under "Writing playbooks" is a playbook too
    // (its `vars_files` beside it, as tests/shipped_files.rs does).
    let readme = std::fs::read_to_string(root.join("README.md")).unwrap();
    let section = readme.split("## Writing playbooks").nth(1).expect("the section");
    let example = section.split("```yaml\n").nth(1).and_then(|b| b.split("```").next()).expect("a yaml block");
    let example_path = dir.path().join("readme-example.yml");
    std::fs::write(dir.path().join("sizes.yml"), "size: 2G\n").unwrap();
    std::fs::write(&example_path, example).unwrap();
    benchrig::playbook::load(&example_path).unwrap_or_else(|e| panic!("README's example: {e}"));

    // One run of the validator over everything.
    let valid_paths: Vec<PathBuf> = playbooks.iter().map(|f| root.join(f)).chain([example_path]).collect();
    let all: Vec<PathBuf> = valid_paths.iter().chain(&broken_paths).cloned().collect();
    let (errors, unreadable) = validate(&schema, &all);

    let mut failures = Vec::new();
    for p in &valid_paths {
        if let Some(e) = errors.get(p) {
            failures.push(format!("{}: benchrig takes it, the schema refuses it: {e:?}", p.display()));
        }
        if unreadable.contains(p) {
            failures.push(format!("{}: benchrig takes it, the validator cannot read it", p.display()));
        }
    }
    let (mut refused, mut not_yaml, mut inexpressible) = (0, 0, Vec::new());
    for (b, p) in BROKEN.iter().zip(&broken_paths) {
        let errs = errors.get(p).map(Vec::as_slice).unwrap_or_default();
        match b.schema {
            Refused(at) => {
                refused += 1;
                if !errs.iter().any(|(path, _)| path == at) {
                    failures.push(format!("{}: the schema should refuse it at {at}, it says {errs:?}", b.what));
                }
            }
            NotYaml => {
                not_yaml += 1;
                if !unreadable.contains(p) {
                    failures.push(format!("{}: the validator should not read it as YAML ({errs:?})", b.what));
                }
            }
            Inexpressible(why) => {
                inexpressible.push(format!("{} ({why})", b.what));
                if !errs.is_empty() || unreadable.contains(p) {
                    failures.push(format!(
                        "{}: listed as a rule the schema cannot say ({why}), but it refuses it: {errs:?}; \
                         make it a refused case",
                        b.what
                    ));
                }
            }
        }
    }
    println!(
        "{} playbooks valid; {} broken: {refused} refused by the schema, {not_yaml} not YAML, {} that JSON Schema cannot say:",
        valid_paths.len(),
        BROKEN.len(),
        inexpressible.len()
    );
    for i in &inexpressible {
        println!("  - {i}");
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}
