//! A fio job as benchrig runs it: sections (`[global]` and the jobs, in
//! order) of `option=value` lines, from a playbook's mapping or a job file,
//! checked so that fio writes only where benchrig set up, and rendered with
//! the target's directory as fio's `directory`.
//!
//! Shared by the planner (checks and the data a job writes, before any host
//! is touched) and the agent (a job file that lives on the host). `FioArgs`
//! (in `args`) runs these checks when it is deserialized, so a refused
//! option in a playbook is a plan error at its step.

use crate::units::ByteSize;
use indexmap::IndexMap;
use serde::{Deserialize, Serialize};

/// What a `size` defaults to when no section sets `size` or `filesize`:
/// small enough for the lab's 1 GiB disks with a few jobs.
pub const DEFAULT_SIZE: &str = "64M";

/// One option's value as a playbook writes it: `~` (nothing) for a flag
/// such as `time_based`, a boolean (fio's `1`/`0`), a number or text.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
// The title is what `benchrig doc` calls it.
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema), schemars(title = "fio value"))]
#[serde(untagged)]
pub enum FioValue {
    Flag(()),
    Bool(bool),
    Int(i64),
    Float(f64),
    Text(String),
}

impl FioValue {
    /// As fio reads it in a job file; `None`: the option alone (a flag).
    pub fn render(&self) -> Option<String> {
        match self {
            FioValue::Flag(()) => None,
            FioValue::Bool(b) => Some(if *b { "1" } else { "0" }.into()),
            FioValue::Int(i) => Some(i.to_string()),
            FioValue::Float(f) => Some(f.to_string()),
            FioValue::Text(s) => Some(s.clone()),
        }
    }
}

/// The options of one section, in the order written.
pub type FioOptions = IndexMap<String, FioValue>;

/// One section's options as fio reads them: name, and value unless a flag.
pub type Lines = Vec<(String, Option<String>)>;

/// A whole job: `[global]` options, then each job's, in order (fio's
/// `stonewall` and `wait_for` depend on it).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct FioJob {
    pub global: Lines,
    pub jobs: Vec<(String, Lines)>,
}

/// Options refused whatever a step allows: they would make fio write or
/// read outside the target, run or load something that is not fio, or
/// change the host beyond the job; each with why.
const REFUSED: &[(&str, &str)] = &[
    ("directory", "benchrig sets `directory` to the target's; name files with `filename`, relative to it"),
    ("include", "a job file may not include another: benchrig checks every option it runs"),
    ("exec_prerun", "fio runs no commands here; use an `exec` step"),
    ("exec_postrun", "fio runs no commands here; use an `exec` step"),
    ("ioscheduler", "fio would switch the device's scheduler and leave it so; use the play's `tune: {scheduler: …}`, which restores it"),
    ("replay_redirect", "a replay goes to the job's own files, never to another device"),
    ("read_iolog", "an I/O log names the files it replays, which benchrig cannot check; name files with `filename`"),
    ("merge_blktrace_file", "fio would write the merged trace wherever it names; replays are refused here"),
    ("libblkio_path", "fio would open the path it names as a device"),
    ("allow_mounted_write", "fio would write to a mounted device"),
    ("cgroup", "fio would make cgroups of its own; the host's limits are the lab's"),
    ("uid", "fio would switch to another user"),
    ("gid", "fio would switch to another group"),
    ("lockmem", "fio would lock the host's memory"),
];

/// The options fio runs here without a step naming them in `allow:`: those
/// that shape the I/O, the files under the target, the reporting and the
/// logs (paths checked as below), and nothing that reaches elsewhere. Any
/// other is refused until the playbook names it (fio has hundreds, and a
/// denylist misses the next one that reaches outside: `include` on a line
/// of its own, an engine `.so`, a trace file to merge into).
const ALLOWED: &[&str] = &[
    // The job and its phases.
    "name",
    "description",
    "loops",
    "numjobs",
    "stonewall",
    "wait_for",
    "new_group",
    "group_reporting",
    "thread",
    "startdelay",
    "runtime",
    "time_based",
    "ramp_time",
    "steadystate",
    "ss",
    "steadystate_duration",
    "ss_dur",
    "steadystate_ramp_time",
    "ss_ramp",
    "steadystate_check_interval",
    "ss_interval",
    "exitall",
    "exitall_on_error",
    "continue_on_error",
    "ignore_error",
    "error_dump",
    "kb_base",
    "unit_base",
    "clocksource",
    "gtod_reduce",
    "gtod_cpu",
    "significant_figures",
    // I/O pattern and size.
    "rw",
    "readwrite",
    "rw_sequencer",
    "rwmixread",
    "rwmixwrite",
    "bs",
    "blocksize",
    "bsrange",
    "blocksize_range",
    "bssplit",
    "bs_unaligned",
    "blocksize_unaligned",
    "ba",
    "blockalign",
    "bs_is_seq_rand",
    "size",
    "filesize",
    "file_append",
    "fill_device",
    "fill_fs",
    "io_size",
    "io_limit",
    "offset",
    "offset_align",
    "offset_increment",
    "number_ios",
    "random_distribution",
    "random_generator",
    "percentage_random",
    "norandommap",
    "softrandommap",
    "randrepeat",
    "allrandrepeat",
    "randseed",
    "zero_buffers",
    "refill_buffers",
    "scramble_buffers",
    "buffer_pattern",
    "buffer_compress_percentage",
    "buffer_compress_chunk",
    "dedupe_percentage",
    "dedupe_mode",
    "dedupe_working_set_percentage",
    "dedupe_global",
    // How it is issued.
    "ioengine",
    "iodepth",
    "iodepth_batch",
    "iodepth_batch_submit",
    "iodepth_batch_complete",
    "iodepth_batch_complete_min",
    "iodepth_batch_complete_max",
    "iodepth_low",
    "io_submit_mode",
    "serialize_overlap",
    "direct",
    "buffered",
    "atomic",
    "sync",
    "fsync",
    "fdatasync",
    "write_barrier",
    "sync_file_range",
    "end_fsync",
    "fsync_on_close",
    "overwrite",
    "invalidate",
    "fallocate",
    "fadvise_hint",
    "pre_read",
    "hipri",
    "fixedbufs",
    "registerfiles",
    "sqthread_poll",
    "sqthread_poll_cpu",
    "nonvectored",
    "uncached",
    "nowait",
    "force_async",
    "userspace_reap",
    "cmdprio_percentage",
    "cmdprio_class",
    "cmdprio",
    // Pace.
    "rate",
    "rate_min",
    "rate_iops",
    "rate_iops_min",
    "rate_process",
    "rate_ignore_thinktime",
    "rate_cycle",
    "thinktime",
    "thinktime_spin",
    "thinktime_blocks",
    "thinktime_blocks_type",
    "thinktime_iotime",
    "latency_target",
    "latency_window",
    "latency_percentile",
    "latency_run",
    "max_latency",
    "flow",
    "flow_id",
    "flow_watermark",
    "flow_sleep",
    // Files under the target.
    "filename",
    "filename_format",
    "unique_filename",
    "opendir",
    "lockfile",
    "nrfiles",
    "openfiles",
    "file_service_type",
    "create_serialize",
    "create_fsync",
    "create_on_open",
    "create_only",
    "allow_file_create",
    "unlink",
    "unlink_each_loop",
    // Verification.
    "verify",
    "do_verify",
    "verify_offset",
    "verify_interval",
    "verify_pattern",
    "verify_fatal",
    "verify_dump",
    "verify_async",
    "verify_async_cpus",
    "verify_backlog",
    "verify_backlog_batch",
    "verify_only",
    "verify_state_save",
    "experimental_verify",
    "trim_percentage",
    "trim_verify_zero",
    "trim_backlog",
    "trim_backlog_batch",
    // Memory and CPU placement.
    "mem",
    "iomem",
    "iomem_align",
    "mem_align",
    "hugepage-size",
    "cpumask",
    "cpus_allowed",
    "cpus_allowed_policy",
    "numa_cpu_nodes",
    "numa_mem_policy",
    "nice",
    "prio",
    "prioclass",
    // What is measured and logged.
    "disable_lat",
    "disable_clat",
    "disable_slat",
    "disable_bw_measurement",
    "disable_bw",
    "clat_percentiles",
    "lat_percentiles",
    "slat_percentiles",
    "percentile_list",
    "unified_rw_reporting",
    "stats",
    "bwavgtime",
    "iopsavgtime",
    "per_job_logs",
    "write_iolog",
    "write_bw_log",
    "write_lat_log",
    "write_iops_log",
    "write_hist_log",
    "log_avg_msec",
    "log_hist_msec",
    "log_hist_coarseness",
    "log_max_value",
    "log_offset",
    "log_prio",
    "log_compression",
    "log_store_compressed",
    "log_unix_epoch",
    "log_alternate_epoch",
    "log_entries",
];

/// `ioengine` values that run something other than fio's own I/O.
const REFUSED_ENGINES: &[(&str, &str)] =
    &[("exec", "fio runs no commands here; use an `exec` step"), ("external", "fio loads no engine from a file here")];

/// The engines fio runs here without `allow: [ioengine=NAME]`: its own,
/// on files (an engine for devices, or one loaded from a file, is not).
const ALLOWED_ENGINES: &[&str] = &[
    "sync",
    "psync",
    "vsync",
    "pvsync",
    "pvsync2",
    "libaio",
    "io_uring",
    "posixaio",
    "mmap",
    "splice",
    "null",
    "falloc",
    "ftruncate",
    "filecreate",
    "filestat",
    "filedelete",
    "dircreate",
    "dirstat",
    "dirdelete",
    "cpuio",
];

/// Options naming paths fio writes (or reads) under `directory` or its
/// working directory: relative, never with `..`.
const PATHS: &[&str] = &[
    "filename",
    "filename_format",
    "opendir",
    "write_iolog",
    "write_bw_log",
    "write_lat_log",
    "write_iops_log",
    "write_hist_log",
];

fn check_name(name: &str, what: &str) -> Result<(), String> {
    if name.is_empty() || !name.chars().all(|c| c.is_ascii_alphanumeric() || "_-+".contains(c)) {
        return Err(format!(
            "{what} `{name}` is not a fio name (letters, digits, `_-+`: a metric is `job.direction.figure`)"
        ));
    }
    Ok(())
}

/// Is this option allowed, with this value? (`Err`: why not.) `allow`:
/// what the step's `allow:` adds (option names, or `ioengine=NAME`), never
/// a refused option, an engine from a path, `exec` or `external`.
pub fn check_option(name: &str, value: Option<&str>, allow: &[String]) -> Result<(), String> {
    check_name(name, "option")?;
    if let Some((_, why)) = REFUSED.iter().find(|(n, _)| *n == name) {
        return Err(format!("fio option `{name}` is refused: {why}"));
    }
    if !ALLOWED.contains(&name) && !allow.iter().any(|a| a == name) {
        return Err(format!(
            "fio option `{name}` is not one benchrig runs unasked (README: `fio`); if it writes only under \
             the target, name it in the step's `allow: [{name}]`"
        ));
    }
    let value = value.unwrap_or("");
    if value.contains(['\n', '\r']) {
        return Err(format!("fio option `{name}`: a value is one line"));
    }
    // fio replaces `${VAR}` with the environment's VAR in every value, which
    // no check here could follow (`filename=${HOME}/x`).
    if value.contains("${") {
        return Err(format!(
            "fio option `{name}={value}`: `${{…}}` is fio's environment substitution; write the value out"
        ));
    }
    if name == "ioengine" {
        let engine = value.split(':').next().unwrap_or_default();
        if let Some((_, why)) = REFUSED_ENGINES.iter().find(|(e, _)| *e == engine) {
            return Err(format!("fio `ioengine={value}` is refused: {why}"));
        }
        if value.contains('/') {
            return Err(format!("fio `ioengine={value}` is refused: fio loads no engine from a file here"));
        }
        if !ALLOWED_ENGINES.contains(&engine) && !allow.iter().any(|a| *a == format!("ioengine={engine}")) {
            return Err(format!(
                "fio `ioengine={engine}` is not one benchrig runs unasked ({}); if it works on the target's files \
                 only, name it in the step's `allow: [ioengine={engine}]`",
                ALLOWED_ENGINES.join(", ")
            ));
        }
    }
    // `mem=mmap:FILE` / `mmaphuge:FILE` back the buffers with a file.
    let paths: Option<&str> = match name {
        "mem" | "iomem" => value.split_once(':').map(|(_, file)| file),
        n if PATHS.contains(&n) => Some(value),
        _ => None,
    };
    if let Some(paths) = paths {
        if paths.contains('$') {
            return Err(format!("fio option `{name}={value}`: a path with `$` is expanded by fio; write it out"));
        }
        // fio splits `filename` at `:`; every part is a path.
        for part in paths.split(':') {
            if part.starts_with('/') {
                return Err(format!(
                    "fio option `{name}={value}`: `{part}` is absolute; paths are relative to the target's directory \
                     (fio puts every file under `directory`, which benchrig sets: a device or another filesystem is never reached)"
                ));
            }
            if part.split('/').any(|c| c == "..") {
                return Err(format!("fio option `{name}={value}`: `..` would leave the target's directory"));
            }
        }
    }
    Ok(())
}

fn lines(options: &FioOptions) -> Lines {
    options.iter().map(|(k, v)| (k.clone(), v.render())).collect()
}

impl FioJob {
    /// From a playbook's mapping: global options and jobs by name.
    pub fn from_options(
        global: &FioOptions,
        jobs: &IndexMap<String, FioOptions>,
        allow: &[String],
    ) -> Result<FioJob, String> {
        let job = FioJob { global: lines(global), jobs: jobs.iter().map(|(n, o)| (n.clone(), lines(o))).collect() };
        job.check(allow)?;
        Ok(job)
    }

    /// A job file's text (INI as fio reads it: `;` and `#` comments), its
    /// options checked against `allow` as [`check_option`] does.
    pub fn parse(text: &str, allow: &[String]) -> Result<FioJob, String> {
        let mut job = FioJob::default();
        let mut current: Option<&mut Lines> = None;
        for (i, raw) in text.lines().enumerate() {
            let at = |m: String| format!("job file line {}: {m}", i + 1);
            let line = raw.trim();
            if line.is_empty() || line.starts_with(';') || line.starts_with('#') {
                continue;
            }
            if let Some(rest) = line.strip_prefix('[') {
                let name = rest.strip_suffix(']').ok_or_else(|| at(format!("`{line}` is not a section")))?.trim();
                current = Some(if name == "global" {
                    &mut job.global
                } else {
                    check_name(name, "job").map_err(at)?;
                    job.jobs.push((name.to_string(), Lines::new()));
                    &mut job.jobs.last_mut().expect("just pushed").1
                });
                continue;
            }
            let section = current.as_deref_mut().ok_or_else(|| at("an option before any section".into()))?;
            let (name, value) = match line.split_once('=') {
                Some((n, v)) => (n.trim(), Some(v.trim().to_string())),
                None => (line, None),
            };
            // fio takes any line that starts with `include` for one
            // (`include-x`, `includefile`), before it reads it as an option.
            if line.starts_with("include") {
                return Err(at(format!("fio option `include` is refused: {}", REFUSED[1].1)));
            }
            section.push((name.to_string(), value));
        }
        job.check(allow)?;
        Ok(job)
    }

    /// Every section's options allowed, at least one job.
    pub fn check(&self, allow: &[String]) -> Result<(), String> {
        if self.jobs.is_empty() {
            return Err("a fio workload needs at least one job".into());
        }
        for (name, _) in &self.jobs {
            check_name(name, "job")?;
            if name == "global" {
                return Err("a job may not be called `global`: put global options under `global`".into());
            }
        }
        let sections = std::iter::once(("global", &self.global)).chain(self.jobs.iter().map(|(n, l)| (n.as_str(), l)));
        for (name, lines) in sections {
            for (k, v) in lines {
                check_option(k, v.as_deref(), allow).map_err(|e| format!("[{name}] {e}"))?;
            }
        }
        Ok(())
    }

    fn global_sets(&self, names: &[&str]) -> bool {
        self.global.iter().any(|(k, _)| names.contains(&k.as_str()))
    }

    /// Whether any section sets `size` or `filesize`.
    fn sized(&self) -> bool {
        self.global_sets(&["size", "filesize"])
            || self.jobs.iter().any(|(_, l)| l.iter().any(|(k, _)| k == "size" || k == "filesize"))
    }

    /// The job file fio runs: `directory` first, then `size` when nothing
    /// sets one ([`DEFAULT_SIZE`]), then what was written.
    pub fn render(&self, directory: &str) -> String {
        let mut out = format!("[global]\ndirectory={directory}\n");
        if !self.sized() {
            out += &format!("size={DEFAULT_SIZE}\n");
        }
        let section = |out: &mut String, lines: &Lines| {
            for (k, v) in lines {
                match v {
                    Some(v) => *out += &format!("{k}={v}\n"),
                    None => *out += &format!("{k}\n"),
                }
            }
        };
        section(&mut out, &self.global);
        for (name, lines) in &self.jobs {
            out += &format!("\n[{name}]\n");
            section(&mut out, lines);
        }
        out
    }

    /// Whether any section turns `group_reporting` on (fio then reports a
    /// group under its first job's name).
    pub fn group_reporting(&self) -> bool {
        let on =
            |l: &Lines| l.iter().any(|(k, v)| k == "group_reporting" && !matches!(v.as_deref(), Some("0" | "false")));
        on(&self.global) || self.jobs.iter().any(|(_, l)| on(l))
    }

    /// Whether any section turns fio's steady-state check on: a duration
    /// (`ss_dur`, alias `steadystate_duration`) other than fio's default 0;
    /// `ss` alone only names the criterion.
    pub fn steady_state(&self) -> bool {
        let on = |l: &Lines| {
            l.iter().any(|(k, v)| {
                matches!(k.as_str(), "ss_dur" | "steadystate_duration")
                    && v.as_deref()
                        .is_some_and(|v| !v.trim_start_matches('0').trim_end_matches(char::is_alphabetic).is_empty())
            })
        };
        on(&self.global) || self.jobs.iter().any(|(_, l)| on(l))
    }

    /// The bytes the job's files take: per job, `numjobs` clones each with
    /// `filesize` × `nrfiles`, else `size` (fio lays files out before it
    /// reads them, so a read job writes them too). `None` when a size is
    /// not a plain number of bytes (`50%`, `fill_device`).
    pub fn data_bytes(&self) -> Option<u64> {
        let mut total = 0u64;
        for (_, lines) in &self.jobs {
            let get = |name: &str| {
                lines.iter().rev().chain(self.global.iter().rev()).find(|(k, _)| k == name).map(|(_, v)| v.as_deref())
            };
            if get("fill_device").or_else(|| get("fill_fs")).is_some_and(|v| !matches!(v, Some("0"))) {
                return None;
            }
            let count = |name: &str| -> Option<u64> {
                match get(name) {
                    None => Some(1),
                    Some(v) => v?.trim().parse().ok(),
                }
            };
            // A range (`1M-4M`) takes its upper end.
            let size = |v: Option<&str>| ByteSize::parse(v?.rsplit(['-', ':']).next()?).ok().map(|b| b.0);
            let per_clone = match get("filesize") {
                Some(v) => size(v)?.checked_mul(count("nrfiles")?)?,
                None => size(get("size").unwrap_or(Some(DEFAULT_SIZE)))?,
            };
            total = total.checked_add(per_clone.checked_mul(count("numjobs")?)?)?;
        }
        Some(total)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn opts(pairs: &[(&str, FioValue)]) -> FioOptions {
        pairs.iter().map(|(k, v)| (k.to_string(), v.clone())).collect()
    }

    #[test]
    fn a_mapping_renders_as_a_job_file_with_the_directory_first() {
        let global = opts(&[("ioengine", FioValue::Text("psync".into())), ("direct", FioValue::Bool(true))]);
        let mut jobs = IndexMap::new();
        jobs.insert(
            "rr".to_string(),
            opts(&[("rw", FioValue::Text("randread".into())), ("time_based", FioValue::Flag(()))]),
        );
        jobs.insert("sw".to_string(), opts(&[("rw", FioValue::Text("write".into())), ("numjobs", FioValue::Int(2))]));
        let job = FioJob::from_options(&global, &jobs, &[]).unwrap();
        assert_eq!(
            job.render("/mnt/hdd0/fio"),
            "[global]\ndirectory=/mnt/hdd0/fio\nsize=64M\nioengine=psync\ndirect=1\n\n[rr]\nrw=randread\ntime_based\n\n[sw]\nrw=write\nnumjobs=2\n"
        );
        // 64 MiB for rr, twice that for sw's two clones.
        assert_eq!(job.data_bytes(), Some(3 * (64 << 20)));
        assert!(!job.group_reporting());
    }

    #[test]
    fn steady_state_is_on_with_a_duration_other_than_zero() {
        let on = |text: &str| FioJob::parse(text, &[]).unwrap().steady_state();
        assert!(on("[j]\nrw=read\nss=iops:1%\nss_dur=3\n"));
        assert!(on("[global]\nsteadystate_duration=30s\n[j]\nrw=read\n"));
        assert!(!on("[j]\nrw=read\nss=iops:1%\n"), "ss alone: fio's ss_dur is 0");
        assert!(!on("[j]\nrw=read\nss_dur=0\n") && !on("[j]\nrw=read\nss_dur=0s\n"));
    }

    #[test]
    fn a_job_file_parses_in_order_with_comments() {
        let text = "; a comment\n[global]\nsize=16M\ngroup_reporting\n# another\n[b]\nrw=read\nnumjobs=3\n[a]\nrw=write\nfilesize=1M-2M\nnrfiles=4\n";
        let job = FioJob::parse(text, &[]).unwrap();
        assert_eq!(job.jobs.iter().map(|(n, _)| n.as_str()).collect::<Vec<_>>(), ["b", "a"]);
        assert_eq!(job.global, vec![("size".into(), Some("16M".into())), ("group_reporting".into(), None)]);
        assert!(job.group_reporting());
        assert_eq!(job.data_bytes(), Some(3 * (16 << 20) + 4 * (2 << 20)));
        assert!(!job.render("/d").contains("size=64M"), "a size is set");
        assert_eq!(FioJob::parse("[global]\nsize=50%\n[x]\nrw=read\n", &[]).unwrap().data_bytes(), None);
    }

    #[test]
    fn options_that_would_write_elsewhere_are_refused_with_why() {
        let refused = |text: &str| FioJob::parse(text, &[]).unwrap_err();
        assert!(refused("[x]\ndirectory=/tmp\n").contains("benchrig sets `directory`"));
        assert!(refused("[x]\nfilename=/dev/sdb\n").contains("`/dev/sdb` is absolute"));
        assert!(refused("[x]\nfilename=a:/etc/passwd\n").contains("`/etc/passwd` is absolute"));
        assert!(refused("[x]\nfilename=../../x\n").contains("`..` would leave"));
        assert!(refused("[x]\nwrite_bw_log=/var/log/bw\n").contains("absolute"));
        assert!(refused("[x]\nexec_prerun=rm -rf /\n").contains("use an `exec` step"));
        assert!(refused("[global]\ninclude other.fio\n[x]\n").contains("`include` is refused"));
        assert!(refused("size=1M\n[x]\n").contains("line 1: an option before any section"));
        assert!(refused("[global]\nsize=1M\n").contains("at least one job"));
        assert!(refused("[bad name]\n").contains("not a fio name"));
        // fio's environment substitution, engines and options that reach elsewhere.
        assert!(refused("[x]\nfilename=${HOME}/x\n").contains("environment substitution"));
        assert!(refused("[x]\nrw=${RW}\n").contains("environment substitution"));
        assert!(refused("[x]\nwrite_bw_log=$HOME/bw\n").contains("with `$`"));
        assert!(refused("[x]\nioengine=exec\nprogram=/bin/sh\n").contains("runs no commands"));
        assert!(refused("[x]\nioengine=external:/tmp/e.so\n").contains("loads no engine"));
        assert!(refused("[x]\nmem=mmap:/dev/shm/buf\n").contains("`/dev/shm/buf` is absolute"));
        assert!(refused("[x]\nioscheduler=none\n").contains("tune: {scheduler"));
        assert!(refused("[x]\nread_iolog=trace\n").contains("`read_iolog` is refused"));
        assert!(refused("[x]\nreplay_redirect=/dev/sda\n").contains("refused"));
        // Relative names stay under the directory; fio's own `$` keywords stay usable.
        assert!(FioJob::parse("[x]\nfilename=a/b:c\nwrite_lat_log=lat\nmem=mmap:buf\nioengine=psync\n", &[]).is_ok());
        assert!(FioJob::parse("[x]\nsize=$mb_memory/4\n", &[]).is_ok());
        // A mapping cannot smuggle a section or a line in.
        let mut jobs = IndexMap::new();
        jobs.insert("x".to_string(), opts(&[("rw", FioValue::Text("read\n[y]".into()))]));
        assert!(FioJob::from_options(&FioOptions::new(), &jobs, &[]).unwrap_err().contains("one line"));
        jobs.insert("x".to_string(), opts(&[("rw=read\nfilename", FioValue::Text("/dev/sda".into()))]));
        assert!(FioJob::from_options(&FioOptions::new(), &jobs, &[]).unwrap_err().contains("not a fio name"));
    }

    /// The denylist's holes (issue 26): fio reads any line that starts
    /// with `include` as one, loads an engine from a path, merges traces
    /// into a file it names, opens a libblkio path. Each is refused; an
    /// option benchrig does not know is refused until the step allows it,
    /// and no `allow:` lets a refused one through.
    #[test]
    fn only_known_options_run_and_allow_adds_any_but_the_refused() {
        let refused = |text: &str, allow: &[&str]| {
            let allow: Vec<String> = allow.iter().map(|a| a.to_string()).collect();
            FioJob::parse(text, &allow).unwrap_err()
        };
        assert!(refused("[global]\ninclude-x\n[x]\n", &[]).contains("`include` is refused"));
        assert!(refused("[global]\nincludefile=/etc/x.fio\n[x]\n", &["includefile"]).contains("`include` is refused"));
        assert!(refused("[x]\nioengine=/tmp/evil.so\n", &[]).contains("from a file"));
        assert!(refused("[x]\nioengine=/tmp/evil.so\n", &["ioengine=/tmp/evil.so"]).contains("from a file"));
        assert!(refused("[x]\nmerge_blktrace_file=/etc/shadow\n", &["merge_blktrace_file"]).contains("refused"));
        assert!(refused("[x]\nlibblkio_path=/dev/sda\n", &["libblkio_path"]).contains("refused"));
        assert!(refused("[x]\nioengine=sg\n", &[]).contains("allow: [ioengine=sg]"));
        let unknown = refused("[x]\nzonemode=zbd\n", &[]);
        assert!(
            unknown.contains("`zonemode` is not one benchrig runs unasked") && unknown.contains("allow: [zonemode]"),
            "{unknown}"
        );
        // Allowed by the step: runs.
        let allow = vec!["zonemode".to_string(), "ioengine=sg".to_string()];
        assert!(FioJob::parse("[x]\nzonemode=none\nioengine=sg\n", &allow).is_ok());
        // Every option the shipped playbook and the test job files use runs unasked.
        for text in [
            "[global]\nioengine=psync\nsize=32M\n[randread]\nrw=randread\nbs=4k\ntime_based\nruntime=6\nss=iops_slope:10%\nss_dur=2\nss_ramp=1\n[seqwrite]\nrw=write\nbs=1M\nstonewall\nend_fsync=1\n",
            "[global]\nunified_rw_reporting=mixed\ngroup_reporting\n[rw]\nrw=randrw\nbs=4k\nnumjobs=2\ndirect=1\niodepth=4\n",
        ] {
            assert!(FioJob::parse(text, &[]).is_ok(), "{text}");
        }
    }

    #[test]
    fn fio_args_take_exactly_one_form_and_are_checked_when_built() {
        use crate::steps::{Action, ActionError};
        use serde_json::json;
        let build = |args| Action::from_parts("fio", args);
        let Ok(Action::Fio(a)) =
            build(json!({"global": {"bs": "4k"}, "jobs": {"r": {"rw": "randread", "size": "8M"}}}))
        else {
            panic!("a mapping builds")
        };
        assert_eq!((a.dir.as_str(), a.target.as_deref()), ("fio", None));
        assert_eq!(a.job().unwrap().unwrap().data_bytes(), Some(8 << 20));
        // The action goes over the wire and back unchanged.
        let again: Action = serde_json::from_value(serde_json::to_value(Action::Fio(a.clone())).unwrap()).unwrap();
        assert_eq!(again, Action::Fio(a));
        assert!(matches!(build(json!({"job_file": "/etc/x.fio"})), Ok(Action::Fio(f)) if f.job() == Ok(None)));
        let refused = |args| match build(args) {
            Err(ActionError::BadArgs(m)) => m,
            other => panic!("expected BadArgs, got {other:?}"),
        };
        assert!(refused(json!({})).contains("exactly one of"));
        assert!(refused(json!({"jobs": {"r": {}}, "job_text": "[r]\n"})).contains("exactly one of"));
        assert!(refused(json!({"global": {"bs": "4k"}, "job_file": "/x"})).contains("`global` goes with `jobs`"));
        assert!(
            refused(json!({"jobs": {"r": {"filename": "/dev/sda"}}})).contains("[r] fio option `filename=/dev/sda`")
        );
        assert!(refused(json!({"job_text": "[r]\ndirectory=/\n"})).contains("refused"));
        assert!(refused(json!({"jobs": {"r": {}}, "dir": "../x"})).contains("`dir`"));
        // fio reads `directory` as a `:` list and expands `$`; a newline would add an option.
        for dir in ["x:/etc", "x\ndirectory=/etc", "${HOME}", "a b"] {
            assert!(refused(json!({"jobs": {"r": {}}, "dir": dir})).contains("`dir`"), "{dir:?}");
        }
        assert!(build(json!({"jobs": {"r": {}}, "dir": "fio/run-1.a"})).is_ok());
        assert!(refused(json!({"jobs": {"r": {}}, "bogus": 1})).contains("bogus"));
        assert_eq!(
            Action::arg_names("fio"),
            &["target", "dir", "global", "jobs", "job_file", "job_text", "allow"],
            "the planner lists these for a misspelt one"
        );
    }
}
