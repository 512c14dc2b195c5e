//! `exec`: any command, timed, with metrics read from what it prints: a
//! dotted path into the JSON document on stdout (fio's `--output-format=json`
//! is the worked example) or a regex's first capture group.
//!
//! Regexes are regex-lite's: the `regex` crate's syntax with ASCII-only
//! classes (`\d` is `[0-9]`, `(?i)` folds ASCII): the agent travels to
//! every host, and `regex` with its Unicode tables made it 740 KB larger.
//!
//! The command runs under `supervisor`, as every child a step waits on: its
//! stdin is /dev/null and its stdout and stderr are pipes the agent drains
//! (never the protocol channel); it runs in its own process group, so a
//! timeout or a cancel kills everything it started, with SIGINT and SIGHUP
//! back at their defaults. `LC_ALL=C` unless `env` says otherwise, so
//! numbers print the same on every host.

use crate::cmd;
use crate::measure::Meter;
use crate::outbox::StepCtx;
use crate::state::HostState;
use crate::supervisor::{self, Ended, StdoutTo, Supervised};
use benchrig_wire::args::{CommandLine, ExecArgs, ExecMetric};
use benchrig_wire::messages::AgentError;
use benchrig_wire::metrics::TIME;
use benchrig_wire::steps::{Metric, StepOutput};
use serde_json::{json, Value};
use std::os::unix::process::ExitStatusExt;
use std::path::PathBuf;
use std::process::ExitStatus;
use std::time::Duration;

/// Stdout kept for the metrics (the rest is drained and counted).
const STDOUT_KEEP: usize = 16 << 20;
/// How much of each stream goes into the step's info.
const INFO_STDOUT: usize = 64 << 10;
const INFO_STDERR: usize = 4 << 10;

enum Source {
    Json(String),
    Regex(regex_lite::Regex),
}

/// Every metric checked (one source each, a regex that compiles, names
/// unique) before the command runs.
fn sources(metrics: &[ExecMetric]) -> Result<Vec<Source>, AgentError> {
    let mut names = vec!["time"];
    metrics
        .iter()
        .map(|m| {
            if names.contains(&m.name.as_str()) {
                return Err(AgentError::bad_request(format!(
                    "metric name `{}` is used twice (`time` is always measured)",
                    m.name
                )));
            }
            names.push(&m.name);
            match (&m.json, &m.regex) {
                (Some(path), None) => Ok(Source::Json(path.clone())),
                (None, Some(re)) => regex_lite::Regex::new(re)
                    .map(Source::Regex)
                    .map_err(|e| AgentError::bad_request(format!("metric `{}`: bad regex: {e}", m.name))),
                _ => {
                    Err(AgentError::bad_request(format!("metric `{}` needs exactly one of `json` and `regex`", m.name)))
                }
            }
        })
        .collect()
}

pub fn run(st: &mut HostState, ctx: &StepCtx, args: &ExecArgs) -> Result<StepOutput, AgentError> {
    let sources = sources(&args.metrics)?;
    let (argv, shown): (Vec<String>, String) = match &args.command {
        CommandLine::Shell(s) => match words_without_shell(s, &args.env) {
            Some(words) => (words, s.clone()),
            None => (vec!["sh".into(), "-c".into(), s.clone()], s.clone()),
        },
        CommandLine::Argv(v) => (v.clone(), v.join(" ")),
    };
    let Some(prog) = argv.first() else { return Err(AgentError::bad_request("exec: the command is empty")) };
    let path =
        cmd::which(prog).ok_or_else(|| AgentError::unsupported(format!("{prog} is not installed on this host")))?;
    let (cwd, devices) = match args.target.as_deref() {
        Some(t) => {
            let m = st.target(Some(t))?;
            (Some(m.mountpoint.clone()), m.devices.clone())
        }
        None => ((!st.work_dir.as_os_str().is_empty()).then(|| st.work_dir.clone()), Vec::new()),
    };

    let mut command = supervisor::command(&path);
    command.args(&argv[1..]).envs(&args.env);
    if let Some(dir) = &cwd {
        command.current_dir(dir);
    }

    let meter = Meter::start(ctx, &st.view, &devices);
    let mut run = Supervised::spawn(&mut command, StdoutTo::Capture(STDOUT_KEEP))
        .map_err(|e| AgentError::failed(format!("cannot run {prog}: {e}")))?;
    let (status, ended) = run
        .wait(Some(ctx), args.timeout.map(Duration::from_secs))
        .map_err(|e| AgentError::failed(format!("wait: {e}")))?;
    let usage = meter.stop();
    let captured = run.collect();

    match ended {
        Ended::Exited => {}
        Ended::TimedOut(t) => return Err(AgentError::failed(format!("`{shown}` timed out after {} s", t.as_secs()))),
        Ended::Cancelled => return Err(AgentError::cancelled()),
    }
    let stdout = String::from_utf8_lossy(&captured.stdout);
    let stderr = String::from_utf8_lossy(&captured.stderr);
    if !status.success() && !args.ignore_status {
        let last = supervisor::last_line(&stderr);
        return Err(AgentError::failed(format!(
            "`{shown}` {}: {}",
            describe(status),
            last.unwrap_or("(no output on stderr)")
        )));
    }

    let mut out = StepOutput::default();
    out.metrics.push(Metric::of(&TIME, usage.wall_s));
    let mut doc: Option<Result<Value, String>> = None;
    for (m, source) in args.metrics.iter().zip(&sources) {
        let value = match source {
            Source::Json(path) => {
                if captured.stdout_total > captured.stdout.len() as u64 {
                    return Err(AgentError::failed(format!(
                        "metric `{}`: stdout was {} bytes, more than the {STDOUT_KEEP} kept to parse",
                        m.name, captured.stdout_total
                    )));
                }
                let doc = doc.get_or_insert_with(|| json_document(&stdout)).as_ref();
                doc.map_err(|e| e.clone()).and_then(|d| json_number(d, path))
            }
            Source::Regex(re) => regex_number(re, &stdout),
        }
        .map_err(|e| AgentError::failed(format!("metric `{}`: {e}", m.name)))?;
        // The step's own metric: its entry declares it (`Action::declares`).
        out.metrics.push(Metric {
            name: m.name.clone(),
            value: value * m.scale,
            unit: m.unit.clone(),
            better: m.better,
        });
    }
    out.usage = Some(usage);
    let info = &mut out.info;
    info.insert("command".into(), shown.into());
    info.insert("cwd".into(), json!(cwd.map(|c: PathBuf| c.to_string_lossy().into_owned())));
    info.insert("exit_status".into(), json!(status.code()));
    if let Some(sig) = status.signal() {
        info.insert("signal".into(), json!(sig));
    }
    info.insert("stdout".into(), head(&stdout, INFO_STDOUT).into());
    info.insert("stdout_bytes".into(), json!(captured.stdout_total));
    info.insert("stderr".into(), tail(&stderr, INFO_STDERR).into());
    if captured.leftovers_killed {
        info.insert("leftovers_killed".into(), true.into());
    }
    Ok(out)
}

/// Characters a shell gives no meaning to beyond separating words: a string
/// of only these (`fio --name=x --bs=4k`, `date +%s`) runs the same
/// without `sh -c`, one process fewer for every step.
fn plain(c: char) -> bool {
    c.is_ascii_alphanumeric() || " \t-_./=:,+@%".contains(c)
}

/// Shell builtins and keywords, which run differently (or only) inside a
/// shell; a command starting with one keeps its `sh -c`.
const SHELL_WORDS: &[&str] = &[
    ".", ":", "alias", "bg", "break", "case", "cd", "command", "continue", "do", "done", "elif", "else", "esac",
    "eval", "exec", "exit", "export", "fc", "fg", "fi", "for", "function", "getopts", "hash", "if", "in", "jobs",
    "kill", "local", "newgrp", "pwd", "read", "readonly", "return", "select", "set", "shift", "source", "then", "time",
    "times", "trap", "type", "ulimit", "umask", "unalias", "unset", "until", "wait", "while",
];

/// `command` split into its words when `sh -c` would run exactly those as
/// one program: nothing but plain characters, a first word that is no
/// assignment and no shell word, and no `PATH` of the step's own (the shell
/// would look the program up in it).
fn words_without_shell(command: &str, env: &std::collections::BTreeMap<String, String>) -> Option<Vec<String>> {
    if !command.chars().all(plain) || env.contains_key("PATH") {
        return None;
    }
    let words: Vec<String> = command.split_ascii_whitespace().map(str::to_string).collect();
    let first = words.first()?;
    (!first.contains('=') && !SHELL_WORDS.contains(&first.as_str())).then_some(words)
}

fn describe(status: ExitStatus) -> String {
    match (status.code(), status.signal()) {
        (Some(c), _) => format!("exited with status {c}"),
        (None, Some(s)) => format!("was killed by signal {s}"),
        _ => status.to_string(),
    }
}

fn head(s: &str, n: usize) -> String {
    let mut cut = s.len().min(n);
    while !s.is_char_boundary(cut) {
        cut -= 1;
    }
    s[..cut].to_string()
}

fn tail(s: &str, n: usize) -> String {
    let mut cut = s.len().saturating_sub(n);
    while !s.is_char_boundary(cut) {
        cut += 1;
    }
    s[cut..].to_string()
}

/// The JSON document on stdout: the first line that starts one and parses
/// (fio may print warnings before it); anything after it is ignored.
fn json_document(stdout: &str) -> Result<Value, String> {
    let mut first_err = None;
    let mut offset = 0;
    for line in stdout.split_inclusive('\n') {
        let trimmed = line.trim_start();
        if trimmed.starts_with('{') || trimmed.starts_with('[') {
            let at = offset + (line.len() - trimmed.len());
            match serde_json::Deserializer::from_str(&stdout[at..]).into_iter::<Value>().next() {
                Some(Ok(v)) => return Ok(v),
                Some(Err(e)) => {
                    first_err.get_or_insert_with(|| e.to_string());
                }
                None => {}
            }
        }
        offset += line.len();
    }
    Err(match first_err {
        Some(e) => format!("stdout holds no valid JSON document ({e})"),
        None => "stdout holds no JSON document".to_string(),
    })
}

/// A value by dotted path: object keys, array indices (`jobs.0.write.bw_bytes`).
/// Keys may themselves contain dots (fio's percentiles: `clat_ns.percentile.99.000000`):
/// at an object, the shortest run of segments that is a key is taken, and a
/// longer one is tried if the rest of the path does not resolve after it.
pub(crate) fn json_lookup<'a>(doc: &'a Value, path: &str) -> Result<&'a Value, String> {
    let segs: Vec<&str> = path.split('.').collect();
    walk(doc, &segs, 0)
}

fn walk<'a>(v: &'a Value, segs: &[&str], i: usize) -> Result<&'a Value, String> {
    if i == segs.len() {
        return Ok(v);
    }
    let at = if i == 0 { "the document".to_string() } else { format!("`{}`", segs[..i].join(".")) };
    match v {
        Value::Array(a) => {
            let idx: usize = segs[i].parse().map_err(|_| format!("{at} is an array; `{}` is not an index", segs[i]))?;
            let x = a.get(idx).ok_or_else(|| format!("{at} has {} elements, no index {idx}", a.len()))?;
            walk(x, segs, i + 1)
        }
        Value::Object(m) => {
            let mut deeper = None;
            for j in i + 1..=segs.len() {
                if let Some(x) = m.get(&segs[i..j].join(".")) {
                    match walk(x, segs, j) {
                        Ok(r) => return Ok(r),
                        Err(e) => {
                            deeper.get_or_insert(e);
                        }
                    }
                }
            }
            Err(deeper.unwrap_or_else(|| {
                let keys: Vec<&str> = m.keys().map(String::as_str).take(12).collect();
                let more = if m.len() > keys.len() { ", ..." } else { "" };
                format!("{at} has no key `{}` (keys: {}{more})", segs[i], keys.join(", "))
            }))
        }
        other => Err(format!("{at} is {}, not an object or array", kind(other))),
    }
}

fn kind(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

fn finite(x: f64, what: &str) -> Result<f64, String> {
    if x.is_finite() {
        Ok(x)
    } else {
        Err(format!("{what} is not a finite number"))
    }
}

pub(crate) fn json_number(doc: &Value, path: &str) -> Result<f64, String> {
    match json_lookup(doc, path)? {
        Value::Number(n) => finite(n.as_f64().unwrap_or(f64::NAN), &format!("`{path}` ({n})")),
        Value::String(s) => match s.trim().parse::<f64>() {
            Ok(x) => finite(x, &format!("`{path}` ({s:?})")),
            Err(_) => Err(format!("`{path}` is the string {s:?}, not a number")),
        },
        other => Err(format!("`{path}` is {}, not a number", kind(other))),
    }
}

/// The first capture group of the first match (the whole match when the regex has no group).
pub(crate) fn regex_number(re: &regex_lite::Regex, text: &str) -> Result<f64, String> {
    let caps = re.captures(text).ok_or_else(|| format!("/{re}/ matches nothing on stdout"))?;
    let m =
        caps.get(1).or_else(|| caps.get(0)).ok_or_else(|| format!("/{re}/: group 1 did not take part in the match"))?;
    let s = m.as_str().trim();
    match s.parse::<f64>() {
        Ok(x) => finite(x, &format!("/{re}/ captured {s:?}, which")),
        Err(_) => Err(format!("/{re}/ captured {s:?}, not a number")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use benchrig_wire::args::Better;
    use benchrig_wire::messages::ErrorCode;

    /// The split agrees with the shell's own (the oracle: `sh` splitting the
    /// same text into `$@`); anything the shell would read otherwise keeps it.
    #[test]
    fn a_command_runs_without_a_shell_only_when_the_shell_would_split_it_alone() {
        let none = std::collections::BTreeMap::new();
        for plain in
            ["true", "fio --name=x --bs=4k --size=1G", "date +%s", " /usr/bin/env  A=1\tprintenv A ", "a,b:c@d"]
        {
            let words = words_without_shell(plain, &none).unwrap_or_else(|| panic!("`{plain}` needs no shell"));
            let out = std::process::Command::new("sh")
                .args(["-c", &format!("set -- {plain}; printf '%s\\0' \"$@\"")])
                .output()
                .unwrap();
            let shell: Vec<String> =
                String::from_utf8(out.stdout).unwrap().split_terminator('\0').map(str::to_string).collect();
            assert_eq!(words, shell, "`{plain}`");
        }
        for shell in [
            "",
            "  ",
            "echo $HOME",
            "ls *.img",
            "a && b",
            "a | b",
            "a > f",
            "x=1 cmd",
            "cd /tmp",
            "exit 3",
            "echo 'a b'",
            "echo \"a\"",
            "a; b",
            "a\nb",
            "~/bin/x",
            "kill %1",
            "exec foo",
            "(a)",
            "a # c",
            "a\\ b",
        ] {
            assert_eq!(words_without_shell(shell, &none), None, "`{shell}` keeps its shell");
        }
        let path = std::collections::BTreeMap::from([("PATH".to_string(), "/opt/bin".to_string())]);
        assert_eq!(words_without_shell("true", &path), None, "the step's PATH is the shell's to search");
    }

    /// An excerpt of `fio --output-format=json` (fio 3.33, one job writing
    /// sequentially with libaio), cut down but shaped as fio prints it,
    /// warnings before the document included.
    const FIO: &str = r#"fio: this platform does not support process shared mutexes, forcing use of threads. Use the 'thread' option to get rid of this warning.
{
  "fio version" : "fio-3.33",
  "timestamp" : 1718030400,
  "timestamp_ms" : 1718030400123,
  "time" : "Mon Jun 10 14:40:00 2024",
  "global options" : {
    "ioengine" : "libaio",
    "direct" : "1",
    "size" : "1G"
  },
  "jobs" : [
    {
      "jobname" : "seqwrite",
      "groupid" : 0,
      "error" : 0,
      "eta" : 0,
      "elapsed" : 9,
      "job options" : {
        "rw" : "write",
        "bs" : "1M",
        "iodepth" : "16"
      },
      "read" : {
        "io_bytes" : 0,
        "io_kbytes" : 0,
        "bw_bytes" : 0,
        "bw" : 0,
        "iops" : 0.000000,
        "runtime" : 0,
        "total_ios" : 0,
        "short_ios" : 0,
        "drop_ios" : 0,
        "slat_ns" : { "min" : 0, "max" : 0, "mean" : 0.000000, "stddev" : 0.000000, "N" : 0 },
        "clat_ns" : { "min" : 0, "max" : 0, "mean" : 0.000000, "stddev" : 0.000000, "N" : 0 },
        "lat_ns" : { "min" : 0, "max" : 0, "mean" : 0.000000, "stddev" : 0.000000, "N" : 0 },
        "bw_min" : 0,
        "bw_max" : 0,
        "bw_agg" : 0.000000,
        "bw_mean" : 0.000000,
        "bw_dev" : 0.000000,
        "bw_samples" : 0,
        "iops_min" : 0,
        "iops_max" : 0,
        "iops_mean" : 0.000000,
        "iops_stddev" : 0.000000,
        "iops_samples" : 0
      },
      "write" : {
        "io_bytes" : 1073741824,
        "io_kbytes" : 1048576,
        "bw_bytes" : 129883004,
        "bw" : 126838,
        "iops" : 123.866263,
        "runtime" : 8267,
        "total_ios" : 1024,
        "short_ios" : 0,
        "drop_ios" : 0,
        "slat_ns" : {
          "min" : 41320,
          "max" : 1012785,
          "mean" : 96542.417969,
          "stddev" : 52109.770422,
          "N" : 1024
        },
        "clat_ns" : {
          "min" : 12403411,
          "max" : 297613844,
          "mean" : 128861409.338867,
          "stddev" : 21794023.004512,
          "N" : 1024,
          "percentile" : {
            "1.000000" : 80216064,
            "50.000000" : 126353408,
            "99.000000" : 217055232,
            "99.900000" : 283115520
          }
        },
        "lat_ns" : {
          "min" : 12481264,
          "max" : 297712312,
          "mean" : 128957951.756836,
          "stddev" : 21793615.102791,
          "N" : 1024
        },
        "bw_min" : 98304,
        "bw_max" : 165888,
        "bw_agg" : 100.000000,
        "bw_mean" : 127125.647059,
        "bw_dev" : 14162.361813,
        "bw_samples" : 17,
        "iops_min" : 96,
        "iops_max" : 162,
        "iops_mean" : 124.117647,
        "iops_stddev" : 13.830234,
        "iops_samples" : 17
      },
      "usr_cpu" : 1.391385,
      "sys_cpu" : 2.129083,
      "ctx" : 2121,
      "majf" : 0,
      "minf" : 14,
      "iodepth_level" : { "1" : 0.100000, "2" : 0.200000, "4" : 0.400000, "8" : 0.800000, "16" : 98.535156, "32" : 0.000000, ">=64" : 0.000000 },
      "latency_ms" : { "2" : 0.000000, "4" : 0.000000, "10" : 0.000000, "20" : 0.097656, "50" : 0.390625, "100" : 4.589844, "250" : 94.628906, "500" : 0.292969 }
    }
  ],
  "disk_util" : [
    {
      "name" : "sdb",
      "read_ios" : 0,
      "write_ios" : 2052,
      "read_merges" : 0,
      "write_merges" : 0,
      "read_ticks" : 0,
      "write_ticks" : 262144,
      "in_queue" : 262144,
      "util" : 98.765432
    }
  ]
}
"#;

    #[test]
    fn fio_json_paths() {
        let doc = json_document(FIO).unwrap();
        assert_eq!(json_number(&doc, "jobs.0.write.bw_bytes"), Ok(129883004.0));
        assert_eq!(json_number(&doc, "jobs.0.write.lat_ns.mean"), Ok(128957951.756836));
        // Keys with dots and spaces, numeric keys, a string that holds a number.
        assert_eq!(json_number(&doc, "jobs.0.write.clat_ns.percentile.99.000000"), Ok(217055232.0));
        assert_eq!(json_number(&doc, "jobs.0.latency_ms.250"), Ok(94.628906));
        assert_eq!(json_number(&doc, "jobs.0.job options.iodepth"), Ok(16.0));
        assert_eq!(json_number(&doc, "disk_util.0.util"), Ok(98.765432));
        // What cannot be found says where the path stopped.
        let e = json_number(&doc, "jobs.1.write.bw_bytes").unwrap_err();
        assert!(e.contains("`jobs` has 1 elements"), "{e}");
        let e = json_number(&doc, "jobs.0.writes.bw_bytes").unwrap_err();
        assert!(e.contains("`jobs.0` has no key `writes`"), "{e}");
        let e = json_number(&doc, "jobs.0.jobname").unwrap_err();
        assert!(e.contains("not a number"), "{e}");
        let e = json_number(&doc, "jobs.x").unwrap_err();
        assert!(e.contains("not an index"), "{e}");
    }

    #[test]
    fn json_document_is_found_or_explained() {
        assert!(json_document("no json here\n").unwrap_err().contains("no JSON"));
        assert!(json_document("{ broken\n").unwrap_err().contains("no valid JSON"));
        let v = json_document("warning: x\n  [1, 2]\ntrailing words\n").unwrap();
        assert_eq!(json_number(&v, "1"), Ok(2.0));
    }

    #[test]
    fn regex_metrics() {
        let text = "copied 1048576 bytes in 0.25 s, 4.2 MB/s\nrate: inf\n";
        let re = |s: &str| regex_lite::Regex::new(s).unwrap();
        assert_eq!(regex_number(&re(r"([\d.]+) MB/s"), text), Ok(4.2));
        assert_eq!(regex_number(&re(r"in ([\d.]+) s"), text), Ok(0.25));
        assert_eq!(regex_number(&re(r"\d+"), text), Ok(1048576.0));
        assert_eq!(regex_number(&re(r"(?i)COPIED (\d+)"), text), Ok(1048576.0));
        assert!(regex_number(&re(r"(\d+) GB/s"), text).unwrap_err().contains("matches nothing"));
        assert!(regex_number(&re(r"(copied)"), text).unwrap_err().contains("not a number"));
        assert!(regex_number(&re(r"rate: (\w+)"), text).unwrap_err().contains("not a finite"));
    }

    #[test]
    fn metric_definitions_are_checked_first() {
        let m = |name: &str, json: Option<&str>, regex: Option<&str>| ExecMetric {
            name: name.into(),
            unit: "x".into(),
            better: Better::Higher,
            json: json.map(Into::into),
            regex: regex.map(Into::into),
            scale: 1.0,
        };
        assert!(sources(&[m("a", Some("x"), None), m("b", None, Some("(\\d+)"))]).is_ok());
        for bad in [
            vec![m("a", None, None)],
            vec![m("a", Some("x"), Some("y"))],
            vec![m("a", None, Some("(unclosed"))],
            vec![m("time", Some("x"), None)],
            vec![m("a", Some("x"), None), m("a", Some("y"), None)],
        ] {
            let e = sources(&bad).err().expect("refused");
            assert_eq!(e.code, ErrorCode::BadRequest, "{}", e.message);
        }
    }

    #[test]
    fn head_and_tail_cut_on_char_boundaries() {
        assert_eq!(head("héllo", 2), "h");
        assert_eq!(tail("héllo", 4), "llo");
        assert_eq!(tail("ab", 10), "ab");
    }
}
