//! `fio`: a fio job with the host's fio, `--output-format=json`, in a
//! directory of the target (fio's `directory`, so its files are only
//! there). Metrics come from walking fio's JSON, not from paths a person
//! writes: every job fio reports (a group, with `group_reporting`) and every
//! direction (read, write, trim) that did I/O gives bw, iops and the
//! completion latency's mean, p50, p99 and p99.9.
//!
//! A job file on the host is read and checked here as a playbook's mapping
//! is at plan time (`benchrig_wire::fio`). Steady state (`ss`, `ss_dur`,
//! `ss_ramp`) is fio's own; whether each job attained it goes into the
//! step's info (`steady_state`), which the reports flag. fio's whole JSON
//! goes back in the info as `fio_output`, which the action's row `keeps`:
//! the orchestrator stores it as an artifact, not in every sample's info.

use crate::measure::Meter;
use crate::outbox::StepCtx;
use crate::state::HostState;
use crate::supervisor::{self, Ended, StdoutTo, Supervised};
use crate::tools;
use benchrig_wire::args::FioArgs;
use benchrig_wire::fio::FioJob;
use benchrig_wire::messages::AgentError;
use benchrig_wire::metrics::{self, MetricDecl, FIO_DIRECTIONS};
use benchrig_wire::steps::{Metric, StepOutput};
use serde_json::{json, Value};

/// fio's JSON for a few jobs is tens of KB; this bounds a runaway, well
/// under the 16 MiB frame its reply travels in (escaped, with monitors).
const STDOUT_KEEP: usize = 4 << 20;
/// The completion-latency percentiles reported, as fio keys them, and their metrics.
const PERCENTILES: [(&str, MetricDecl); 3] = [
    ("50.000000", metrics::FIO_CLAT_P50),
    ("99.000000", metrics::FIO_CLAT_P99),
    ("99.900000", metrics::FIO_CLAT_P99_9),
];

pub fn run(st: &mut HostState, ctx: &StepCtx, args: &FioArgs) -> Result<StepOutput, AgentError> {
    let job = match args.job().map_err(|e| AgentError::bad_request(format!("fio: {e}")))? {
        Some(job) => job,
        None => {
            let path = args.job_file.as_deref().unwrap_or_default();
            let text = std::fs::read_to_string(path)
                .map_err(|e| AgentError::failed(format!("fio: cannot read job file {path}: {e}")))?;
            FioJob::parse(&text, &args.allow).map_err(|e| AgentError::bad_request(format!("fio: {path}: {e}")))?
        }
    };
    let fio = crate::needs::program("fio")?;
    let t = st.target(args.target.as_deref())?;
    let (dir, devices) = (t.mountpoint.join(&args.dir), t.devices.clone());
    std::fs::create_dir_all(&dir)
        .map_err(|e| AgentError::failed(format!("fio: cannot make {}: {e}", dir.display())))?;
    // What only the host can tell: a job file's sizes, and the room there really is.
    if let Some(why) = job.data_bytes().and_then(|bytes| no_room(&dir, bytes)) {
        return Err(AgentError::unsupported(format!("fio: {why}")));
    }
    let text = job.render(&dir.to_string_lossy());
    // The job file lives beside the agent, not on the target it measures.
    let scratch = if st.work_dir.as_os_str().is_empty() { std::env::temp_dir() } else { st.work_dir.clone() };
    let job_path = scratch.join(format!("benchrig-fio-{}.job", std::process::id()));
    std::fs::write(&job_path, &text)
        .map_err(|e| AgentError::failed(format!("fio: cannot write {}: {e}", job_path.display())))?;

    let mut command = supervisor::command(&fio);
    command.arg("--output-format=json").arg(&job_path).current_dir(&dir).env("LC_ALL", "C");
    let meter = Meter::start(ctx, &st.view, &devices);
    let spawned = Supervised::spawn(&mut command, StdoutTo::Capture(STDOUT_KEEP));
    let mut running = match spawned {
        Ok(r) => r,
        Err(e) => {
            let _ = std::fs::remove_file(&job_path);
            return Err(AgentError::failed(format!("cannot run {}: {e}", fio.display())));
        }
    };
    let waited = running.wait(Some(ctx), None);
    let usage = meter.stop();
    let captured = running.collect();
    let _ = std::fs::remove_file(&job_path);
    let (status, ended) = waited.map_err(|e| AgentError::failed(format!("wait: {e}")))?;
    match ended {
        Ended::Exited => {}
        Ended::TimedOut(t) => return Err(AgentError::failed(format!("fio timed out after {} s", t.as_secs()))),
        Ended::Cancelled => return Err(AgentError::cancelled()),
    }
    let stdout = String::from_utf8_lossy(&captured.stdout);
    let stderr = captured.stderr_text();
    if !status.success() {
        let version = tools::version("fio");
        let why = known_crash(&status, &job, version.as_deref())
            .unwrap_or_else(|| format!("fio {status}: {}", complaint(&stderr, &stdout)));
        return Err(AgentError::failed(why));
    }
    let (doc, doc_text) = document(&stdout).map_err(|e| AgentError::failed(format!("fio: {e}")))?;
    let report = Report::walk(&doc, job.group_reporting()).map_err(|e| AgentError::failed(format!("fio: {e}")))?;

    let mut out = StepOutput::default();
    out.metrics.push(Metric::of(&metrics::TIME, usage.wall_s));
    out.metrics.extend(report.metrics);
    out.usage = Some(usage);
    let info = &mut out.info;
    info.insert("fio_version".into(), json!(tools::version("fio")));
    info.insert("job_file".into(), text.into());
    info.insert("directory".into(), dir.to_string_lossy().into_owned().into());
    if !report.steady_state.is_empty() {
        info.insert("steady_state".into(), Value::Array(report.steady_state));
    }
    if !stderr.trim().is_empty() {
        info.insert("stderr".into(), stderr.trim().into());
    }
    // fio's own figures, whole: stored apart from the samples (an artifact).
    info.insert("fio_output".into(), doc_text.into());
    Ok(out)
}

/// Why `bytes` of job files do not fit in `dir`, if they do not: its
/// filesystem's free space (as a non-root user sees it) plus the files
/// already there, which fio lays out again in place (a repetition before).
fn no_room(dir: &std::path::Path, bytes: u64) -> Option<String> {
    let v = rustix::fs::statvfs(dir).ok()?;
    let free = v.f_bavail.saturating_mul(v.f_frsize);
    let existing: u64 = std::fs::read_dir(dir)
        .ok()?
        .filter_map(|e| e.ok()?.metadata().ok())
        .filter(|m| m.is_file())
        .map(|m| m.len())
        .sum();
    let room = free.saturating_add(existing);
    let mib = |b: u64| b as f64 / (1u64 << 20) as f64;
    (bytes > room).then(|| {
        format!("the job's files take {:.0} MiB and {} has {:.0} MiB free", mib(bytes), dir.display(), mib(room))
    })
}

/// What fio said went wrong: its `fio: ` lines (the option it could not
/// parse comes before "job dropped"), else its last line.
fn complaint(stderr: &str, stdout: &str) -> String {
    let said: Vec<&str> = stderr.lines().map(str::trim).filter(|l| l.starts_with("fio: ")).take(4).collect();
    if !said.is_empty() {
        return said.join("; ");
    }
    supervisor::last_line(stderr).or_else(|| supervisor::last_line(stdout)).unwrap_or("(no output)").to_string()
}

/// The first fio release whose steady-state check no longer divides by
/// the milliseconds since its last check (upstream commit 90e678ba).
const SS_DIVIDE_FIXED: (u32, u32) = (3, 35);

/// What to say when fio died of a bug of its own that benchrig knows, not
/// of the job: fio before 3.35 computes a steady-state job's rate as
/// `1000 * bytes / rate_time`, `rate_time` being whole milliseconds since
/// the job's last check (steadystate.c). When a check falls in the same
/// millisecond as the job's start, that is an integer division by zero:
/// SIGFPE, about once in a thousand steady-state jobs (3 of 4000 runs of
/// a stonewalled one here). A valid job; nothing but a run again helps.
fn known_crash(status: &std::process::ExitStatus, job: &FioJob, version: Option<&str>) -> Option<String> {
    use std::os::unix::process::ExitStatusExt;
    if status.signal() != Some(libc::SIGFPE) || !job.steady_state() {
        return None;
    }
    let release = version.and_then(release_of);
    if release.is_some_and(|r| r >= SS_DIVIDE_FIXED) {
        return None;
    }
    let which = version.unwrap_or("fio (version unknown)");
    Some(format!(
        "{which} crashed (SIGFPE) in its steady-state check: a known bug of fio before 3.35, which divides by \
         the milliseconds since a job's last check, zero when that check falls in the job's first millisecond \
         (about 1 steady-state job in 1000; fixed upstream by commit 90e678ba). The job is valid and no figures \
         were lost but this repetition's. Run the failed cells again (`benchrig run --resume RUN \
         --retry-failed`), or give the host fio 3.35 or later"
    ))
}

/// `fio-3.33` (what `fio --version` prints) as (3, 33).
fn release_of(version: &str) -> Option<(u32, u32)> {
    let digits = version.trim().trim_start_matches("fio-");
    let mut parts = digits.split(|c: char| !c.is_ascii_digit());
    Some((parts.next()?.parse().ok()?, parts.next()?.parse().ok()?))
}

/// The JSON document fio printed (the first line that opens one; fio may
/// warn before it) and its text.
fn document(stdout: &str) -> Result<(Value, String), String> {
    let start = stdout
        .match_indices('\n')
        .map(|(i, _)| i + 1)
        .chain([0])
        .filter(|&i| stdout[i..].starts_with('{'))
        .min()
        .ok_or("no JSON document on stdout")?;
    let mut stream = serde_json::Deserializer::from_str(&stdout[start..]).into_iter::<Value>();
    match stream.next() {
        Some(Ok(v)) => {
            let end = start + stream.byte_offset();
            Ok((v, stdout[start..end].to_string()))
        }
        Some(Err(e)) => Err(format!("its JSON does not parse: {e}")),
        None => Err("no JSON document on stdout".into()),
    }
}

/// What a walk over fio's JSON found.
#[derive(Debug, Default)]
pub struct Report {
    pub metrics: Vec<Metric>,
    /// Per job with `ss`: its criterion and whether it was attained.
    pub steady_state: Vec<Value>,
}

impl Report {
    /// Every job fio reports, in its order, named by `jobname` (a name fio
    /// reports more than once, as clones of `numjobs` without
    /// `group_reporting`, gets `#0`, `#1`, ...).
    pub fn walk(doc: &Value, grouped: bool) -> Result<Report, String> {
        let jobs = doc.get("jobs").and_then(Value::as_array).ok_or("its output has no `jobs` list")?;
        let names: Vec<&str> = jobs.iter().map(|j| j.get("jobname").and_then(Value::as_str).unwrap_or("job")).collect();
        let mut seen: std::collections::HashMap<&str, usize> = Default::default();
        let mut r = Report::default();
        for (job, &base) in jobs.iter().zip(&names) {
            let k = seen.entry(base).or_default();
            let name =
                if names.iter().filter(|n| **n == base).count() > 1 { format!("{base}#{k}") } else { base.into() };
            *k += 1;
            if let Some(e) = job.get("error").and_then(Value::as_i64).filter(|e| *e != 0) {
                return Err(format!("job `{name}` ended with error {e}"));
            }
            for dir in FIO_DIRECTIONS {
                let Some(d) = job.get(dir).filter(|d| d.get("io_bytes").and_then(Value::as_u64).unwrap_or(0) > 0)
                else {
                    continue;
                };
                let num = |v: Option<&Value>, what: &str| {
                    v.and_then(Value::as_f64).ok_or_else(|| format!("job `{name}` {dir}: no `{what}`"))
                };
                let at = |decl: &MetricDecl, value: f64| Metric::per_job(decl, &name, dir, value);
                r.metrics.push(at(&metrics::FIO_BW, num(d.get("bw_bytes"), "bw_bytes")? / 1e6));
                r.metrics.push(at(&metrics::FIO_IOPS, num(d.get("iops"), "iops")?));
                let clat = d.get("clat_ns");
                let mean = num(clat.and_then(|c| c.get("mean")), "clat_ns.mean")?;
                r.metrics.push(at(&metrics::FIO_CLAT_MEAN, mean / 1e3));
                let pct = clat.and_then(|c| c.get("percentile"));
                for (key, decl) in &PERCENTILES {
                    // Absent when the job set its own `percentile_list`.
                    if let Some(ns) = pct.and_then(|p| p.get(key)).and_then(Value::as_f64) {
                        r.metrics.push(at(decl, ns / 1e3));
                    }
                }
            }
            if let Some(ss) = job.get("steadystate") {
                r.steady_state.push(json!({
                    "job": name,
                    "ss": ss.get("ss"),
                    "duration_s": ss.get("duration"),
                    "attained": ss.get("attained").and_then(Value::as_i64).is_some_and(|a| a != 0),
                    "criterion": ss.get("criterion"),
                }));
            }
        }
        if r.metrics.is_empty() {
            let how = if grouped { " (with group_reporting)" } else { "" };
            return Err(format!("no job did any I/O{how}"));
        }
        Ok(r)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use benchrig_wire::args::Better;
    use benchrig_wire::metrics::Naming;
    use benchrig_wire::steps::Action;

    /// fio 3.33 on this project's build machine: `randread` (4k random
    /// reads) and `mixed` (64k randrw), psync, 16 MiB each.
    const TWO_JOBS: &str = include_str!("../../tests/data/fio/two-jobs.json");
    /// One job with `ss=iops_slope:20%`, `ss_dur=2`, `ss_ramp=1`: attained.
    const SS_ATTAINED: &str = include_str!("../../tests/data/fio/steady-attained.json");
    /// `ss=bw:0.01%`: not attained in its 4 s.
    const SS_NOT: &str = include_str!("../../tests/data/fio/steady-not-attained.json");
    /// `numjobs=2` with `group_reporting`: one entry for the group.
    const GROUPED: &str = include_str!("../../tests/data/fio/grouped.json");

    fn value(r: &Report, name: &str) -> f64 {
        r.metrics.iter().find(|m| m.name == name).unwrap_or_else(|| panic!("no metric {name}")).value
    }

    #[test]
    fn every_job_and_direction_with_io_gives_its_figures() {
        let (doc, _) = document(TWO_JOBS).unwrap();
        let r = Report::walk(&doc, false).unwrap();
        let names: Vec<&str> = r.metrics.iter().map(|m| m.name.as_str()).collect();
        let per = |job: &str, dir: &str| {
            ["bw", "iops", "clat_mean", "clat_p50", "clat_p99", "clat_p99_9"].map(|m| format!("{job}.{dir}.{m}"))
        };
        let want: Vec<String> =
            [per("randread", "read"), per("mixed", "read"), per("mixed", "write")].into_iter().flatten().collect();
        assert_eq!(names, want, "randread wrote nothing, so it has no write metrics");
        // Against the document read by hand (explicit paths). Compared as
        // the f64s they are stored as, bit for bit: on x87 (the i586 build)
        // a quotient still in a register has more bits than its stored copy.
        let job = |i: usize| &doc["jobs"][i];
        let same = |a: f64, b: f64| assert_eq!(a.to_bits(), b.to_bits(), "{a} vs {b}");
        same(value(&r, "randread.read.bw"), job(0)["read"]["bw_bytes"].as_f64().unwrap() / 1e6);
        same(value(&r, "mixed.write.iops"), job(1)["write"]["iops"].as_f64().unwrap());
        same(value(&r, "mixed.read.clat_mean"), job(1)["read"]["clat_ns"]["mean"].as_f64().unwrap() / 1e3);
        let p999 = job(1)["write"]["clat_ns"]["percentile"]["99.900000"].as_f64().unwrap();
        same(value(&r, "mixed.write.clat_p99_9"), p999 / 1e3);
        let m = r.metrics.iter().find(|m| m.name == "randread.read.clat_p99").unwrap();
        assert_eq!((m.unit.as_str(), m.better), ("µs", Better::Lower));
        let m = r.metrics.iter().find(|m| m.name == "mixed.read.bw").unwrap();
        assert_eq!((m.unit.as_str(), m.better), ("MB/s", Better::Higher));
        assert!(r.steady_state.is_empty());
    }

    #[test]
    fn the_walk_reports_what_fios_row_of_the_action_table_declares() {
        let unified = include_str!("../../tests/data/fio/unified.json");
        let fio = Action::from_parts("fio", json!({"jobs": {"r": {"rw": "read"}}})).unwrap();
        let mut reported = Vec::new();
        for text in [TWO_JOBS, SS_ATTAINED, SS_NOT, GROUPED, unified] {
            let (doc, _) = document(text).unwrap();
            reported.extend(Report::walk(&doc, false).unwrap().metrics);
        }
        let undeclared: Vec<&Metric> = reported.iter().filter(|m| !fio.declares(m)).collect();
        assert!(undeclared.is_empty(), "not in fio's row of the action table: {undeclared:?}");
        // And every per-job metric the row declares is one the walk reports
        // (`time` is the run's, not the walk's).
        let row = Action::metrics("fio").unwrap();
        for d in row.iter().filter(|d| d.naming == Naming::PerJobDirection) {
            assert!(reported.iter().any(|m| d.matches(&m.name, &m.unit, m.better)), "{} never reported", d.name);
        }
    }

    #[test]
    fn unified_reporting_gives_the_mixed_direction() {
        let text = include_str!("../../tests/data/fio/unified.json");
        let (doc, _) = document(text).unwrap();
        let r = Report::walk(&doc, false).unwrap();
        assert_eq!(value(&r, "rw.mixed.iops"), doc["jobs"][0]["mixed"]["iops"].as_f64().unwrap());
        assert!(!r.metrics.iter().any(|m| m.name.starts_with("rw.read")), "fio reported no read apart");
    }

    #[test]
    fn steady_state_is_reported_attained_or_not() {
        for (text, attained) in [(SS_ATTAINED, true), (SS_NOT, false)] {
            let (doc, _) = document(text).unwrap();
            let r = Report::walk(&doc, false).unwrap();
            assert_eq!(r.steady_state.len(), 1);
            assert_eq!(r.steady_state[0]["attained"], json!(attained), "{}", r.steady_state[0]);
            assert_eq!(r.steady_state[0]["ss"], doc["jobs"][0]["steadystate"]["ss"]);
        }
    }

    #[test]
    fn a_group_is_one_entry_and_clones_are_numbered() {
        let (doc, _) = document(GROUPED).unwrap();
        let r = Report::walk(&doc, true).unwrap();
        assert_eq!(r.metrics[0].name, "w.write.bw");
        // The same job reported twice, as clones without group_reporting are.
        let mut two = doc.clone();
        let first = two["jobs"][0].clone();
        two["jobs"].as_array_mut().unwrap().push(first);
        let r = Report::walk(&two, false).unwrap();
        assert!(
            r.metrics.iter().any(|m| m.name == "w#0.write.iops")
                && r.metrics.iter().any(|m| m.name == "w#1.write.iops")
        );
    }

    #[test]
    fn fios_steady_state_division_by_zero_is_named_as_its_bug_with_the_way_out() {
        use std::os::unix::process::ExitStatusExt;
        let ss = FioJob::parse("[steady]\nrw=read\nss=iops:0%\nss_dur=3\n", &[]).unwrap();
        let plain = FioJob::parse("[rr]\nrw=randread\n", &[]).unwrap();
        let fpe = std::process::ExitStatus::from_raw(libc::SIGFPE);
        let said = known_crash(&fpe, &ss, Some("fio-3.33")).expect("fio 3.33's known crash");
        assert!(said.starts_with("fio-3.33 crashed (SIGFPE) in its steady-state check: a known bug"), "{said}");
        assert!(said.contains("--retry-failed") && said.contains("fio 3.35 or later"), "{said}");
        assert!(known_crash(&fpe, &ss, None).unwrap().starts_with("fio (version unknown) crashed"));
        // Not that bug: a fixed fio, a job without steady state, another signal, an exit status.
        assert_eq!(known_crash(&fpe, &ss, Some("fio-3.35")), None);
        assert_eq!(known_crash(&fpe, &ss, Some("fio-3.39-12-gabc")), None);
        assert_eq!(known_crash(&fpe, &plain, Some("fio-3.33")), None);
        assert_eq!(known_crash(&std::process::ExitStatus::from_raw(libc::SIGSEGV), &ss, Some("fio-3.33")), None);
        assert_eq!(known_crash(&std::process::ExitStatus::from_raw(1 << 8), &ss, Some("fio-3.33")), None);
        assert_eq!(release_of("fio-3.33"), Some((3, 33)));
        assert_eq!(release_of("fio-2.2.10"), Some((2, 2)));
        assert_eq!(release_of("fio"), None);
    }

    #[test]
    fn fio_errors_and_empty_output_are_named() {
        let (mut doc, _) = document(GROUPED).unwrap();
        doc["jobs"][0]["error"] = json!(5);
        assert_eq!(Report::walk(&doc, true).unwrap_err(), "job `w` ended with error 5");
        doc["jobs"][0]["error"] = json!(0);
        doc["jobs"][0]["write"]["io_bytes"] = json!(0);
        assert!(Report::walk(&doc, true).unwrap_err().contains("no job did any I/O"));
        assert!(document("fio: bad option\n").unwrap_err().contains("no JSON"));
        let (v, text) = document("note: x\n{\"jobs\": []}\ntrailing\n").unwrap();
        assert_eq!((v["jobs"].as_array().map(Vec::len), text.as_str()), (Some(0), "{\"jobs\": []}"));
    }
}
