//! `cold_read`: does compression make reads faster? One file of known
//! content is written (untimed), compressed by the agent or by the host's
//! tool, only the compressed copy kept, the cache emptied; then the clock
//! times reading it back to its uncompressed bytes: the agent reading (and
//! decoding) it, or `cat` / `lzop -dc` / `gzip -dc` / `zstd -dc` with their
//! output piped into the agent, which counts every byte (a tool writing to
//! /dev/null is not a read anyone does). The tool's CPU time counts: it is
//! waited for inside the timed region.

use super::{target_file, transfer_output};
use crate::cache;
use crate::compress;
use crate::content::{self, Rng};
use crate::measure::Meter;
use crate::outbox::StepCtx;
use crate::state::HostState;
use crate::supervisor::{self, Ended, StdoutTo, Supervised};
use crate::tools;
use benchrig_wire::args::{Codec, CodecTool, ColdReadArgs, ContentKind};
use benchrig_wire::messages::AgentError;
use benchrig_wire::metrics::{SYS, USER};
use benchrig_wire::steps::{Metric, StepOutput};
use serde_json::json;
use std::fs::File;
use std::io::{self, BufReader, BufWriter, Read};
use std::path::{Path, PathBuf};

pub fn run(st: &mut HostState, ctx: &StepCtx, args: &ColdReadArgs) -> Result<StepOutput, AgentError> {
    let bs = args.bs.0 as usize;
    if bs == 0 {
        return Err(AgentError::failed("cold_read needs a non-zero bs"));
    }
    let (path, devices) = target_file(st, args.target.as_deref(), &args.file)?;
    let stored = stored_path(&path, args.codec);
    let external = args.tool == CodecTool::External;
    // Every "this host cannot" comes before any I/O.
    let (compress_argv, read_argv) = if external { tool_lines(args.codec, &path, &stored) } else { (None, Vec::new()) };

    // Prepare (untimed): the content, compressed, only the compressed copy
    // left. The next repetition of the same cell reads the same file again:
    // a stamp beside it says what it holds, so it is made once (making it is
    // slow on a slow CPU, and repetitions should read the same blocks).
    let stamp_path = stored.with_extension(format!(
        "{}stamp",
        stored.extension().map(|e| format!("{}.", e.to_string_lossy())).unwrap_or_default()
    ));
    let stamp = serde_json::to_string(&json!([args.size.0, args.content, args.codec, args.tool, args.seed]))
        .unwrap_or_default();
    let t0 = std::time::Instant::now();
    let reuse = std::fs::read_to_string(&stamp_path).is_ok_and(|s| s == stamp) && stored.exists();
    if !reuse {
        let _ = std::fs::remove_file(&stamp_path);
        let _ = std::fs::remove_file(&path);
        let _ = std::fs::remove_file(&stored);
        if let Err(e) = prepare(ctx, args, &path, &stored, compress_argv.as_deref()) {
            let _ = std::fs::remove_file(&path);
            let _ = std::fs::remove_file(&stored);
            return Err(e);
        }
        std::fs::write(&stamp_path, &stamp)
            .map_err(|e| AgentError::failed(format!("{}: {e}", stamp_path.display())))?;
    }
    let prepare_s = t0.elapsed().as_secs_f64();
    let compressed_bytes =
        std::fs::metadata(&stored).map_err(|e| AgentError::failed(format!("{}: {e}", stored.display())))?.len();
    let cold = cache::make_cold(Some(&stored), &st.own_filesystems()).map_err(AgentError::failed)?;
    // The tool's own executable and libraries were just evicted too; the
    // question is how fast the data comes back, not how fast a binary
    // loads, so they are read back in (asking the version) before the clock.
    let version = external.then(|| tools::version(&read_argv[0])).flatten();
    ctx.check_cancel()?;

    let meter = Meter::start(ctx, &st.view, &devices);
    let produced = if external {
        read_external(ctx, &read_argv, bs, args.size.0)
    } else {
        read_builtin(ctx, args.codec, &stored, bs, args.size.0)
    };
    let usage = meter.stop();
    let produced = produced?;
    if produced != args.size.0 {
        return Err(AgentError::failed(format!(
            "{} gave {produced} bytes, but {} were written",
            stored.display(),
            args.size.0
        )));
    }

    let mut out = transfer_output(produced, usage.clone());
    out.metrics.push(Metric::of(&USER, usage.user_s));
    out.metrics.push(Metric::of(&SYS, usage.sys_s));
    let info = &mut out.info;
    info.insert("path".into(), stored.to_string_lossy().into_owned().into());
    info.insert("codec".into(), compress::name(args.codec).into());
    info.insert("tool".into(), if external { "external" } else { "builtin" }.into());
    info.insert("content".into(), json!(args.content));
    info.insert("compressed_bytes".into(), json!(compressed_bytes));
    let ratio = if compressed_bytes > 0 { produced as f64 / compressed_bytes as f64 } else { 0.0 };
    info.insert("ratio".into(), json!(ratio));
    info.insert("prepare_seconds".into(), json!(prepare_s));
    info.insert("prepared_earlier".into(), json!(reuse));
    info.insert("cold".into(), cold.method.into());
    info.insert("resident_pages_at_start".into(), json!(cold.resident_pages));
    if external {
        info.insert("read_command".into(), read_argv.join(" ").into());
        info.insert("tool_version".into(), json!(version));
        if let Some(c) = &compress_argv {
            info.insert("compress_command".into(), c.join(" ").into());
        }
    } else if args.codec == Codec::Zstd {
        info.insert("compress_level".into(), "ruzstd Fastest (about zstd -1)".into());
    }
    Ok(out)
}

/// `<file>` for raw, `<file>.lzo|.gz|.zst` otherwise.
fn stored_path(path: &Path, codec: Codec) -> PathBuf {
    match codec {
        Codec::Raw => path.to_path_buf(),
        c => {
            let mut name = path.as_os_str().to_os_string();
            name.push(".");
            name.push(compress::extension(c));
            PathBuf::from(name)
        }
    }
}

type ArgvLine = Vec<String>;

/// The host's compress command (none for raw) and read command. Each
/// program is the codec's own ([`Codec::program`]; `gzip -dc`, not the
/// `gunzip` script), which dispatch found on this host before the step.
fn tool_lines(codec: Codec, path: &Path, stored: &Path) -> (Option<ArgvLine>, ArgvLine) {
    let p = path.to_string_lossy().into_owned();
    let s = stored.to_string_lossy().into_owned();
    let line = |program: &str, flags: &[&str], file: String| {
        std::iter::once(program.to_string()).chain(flags.iter().map(|f| f.to_string())).chain([file]).collect()
    };
    let Some(program) = codec.program() else { return (None, line("cat", &[], s)) };
    let (compress, read): (&[&str], &[&str]) = match codec {
        // Raw has no program (above).
        Codec::Lzo | Codec::Raw => (&["-c"], &["-dc"]),
        Codec::Gzip => (&["-c", "-6"], &["-dc"]),
        Codec::Zstd => (&["-c", "-3", "-q"], &["-dc", "-q"]),
    };
    (Some(line(program, compress, p)), line(program, read, s))
}

/// Deterministic content in fixed 1 MiB chunks (so the bytes depend only on
/// kind, seed and size), with progress and cancel checks along the way.
struct ContentReader<'a> {
    kind: ContentKind,
    rng: Rng,
    left: u64,
    total: u64,
    chunk: Vec<u8>,
    pos: usize,
    ctx: &'a StepCtx<'a>,
}

impl<'a> ContentReader<'a> {
    const CHUNK: usize = 1 << 20;

    fn new(ctx: &'a StepCtx<'a>, kind: ContentKind, seed: u64, size: u64) -> Self {
        ContentReader { kind, rng: Rng::new(seed), left: size, total: size, chunk: Vec::new(), pos: 0, ctx }
    }
}

impl Read for ContentReader<'_> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        if self.pos == self.chunk.len() {
            if self.left == 0 || buf.is_empty() {
                return Ok(0);
            }
            if self.ctx.check_cancel().is_err() {
                return Err(io::Error::other("cancelled"));
            }
            self.ctx.progress(self.total - self.left, self.total, "preparing");
            let n = self.left.min(Self::CHUNK as u64) as usize;
            self.chunk.resize(n, 0);
            content::fill(self.kind, &mut self.rng, &mut self.chunk);
            self.left -= n as u64;
            self.pos = 0;
        }
        let n = buf.len().min(self.chunk.len() - self.pos);
        buf[..n].copy_from_slice(&self.chunk[self.pos..self.pos + n]);
        self.pos += n;
        Ok(n)
    }
}

/// Cancellation beats whatever error it caused.
fn io_failed(ctx: &StepCtx, what: String, e: io::Error) -> AgentError {
    ctx.check_cancel().err().unwrap_or_else(|| AgentError::failed(format!("{what}: {e}")))
}

fn prepare(
    ctx: &StepCtx,
    args: &ColdReadArgs,
    path: &Path,
    stored: &Path,
    compress_argv: Option<&[String]>,
) -> Result<(), AgentError> {
    let mut src = ContentReader::new(ctx, args.content, args.seed, args.size.0);
    let builtin = args.tool == CodecTool::Builtin && args.codec != Codec::Raw;
    // The agent's codec writes the compressed file straight from the content;
    // the host's tool compresses the plain file, which is then removed.
    let first = if builtin { stored } else { path };
    let f = File::create(first).map_err(|e| AgentError::failed(format!("create {}: {e}", first.display())))?;
    let mut w = BufWriter::with_capacity(1 << 20, f);
    let codec = if builtin { args.codec } else { Codec::Raw };
    compress::encode(codec, &mut src, &mut w).map_err(|e| io_failed(ctx, format!("write {}", first.display()), e))?;
    let f = w.into_inner().map_err(|e| AgentError::failed(format!("write {}: {}", first.display(), e.error())))?;
    drop(f);
    if let Some(argv) = compress_argv {
        let out = File::create(stored).map_err(|e| AgentError::failed(format!("create {}: {e}", stored.display())))?;
        let mut run = spawn(argv, StdoutTo::File(out))?;
        let (status, ended) = run.wait(Some(ctx), None).map_err(|e| AgentError::failed(format!("wait: {e}")))?;
        if let Ended::Cancelled = ended {
            return Err(AgentError::cancelled());
        }
        let stderr = run.collect().stderr_text();
        if !status.success() {
            return Err(AgentError::failed(format!("`{}` failed: {}", argv.join(" "), last_line(&stderr, status))));
        }
        std::fs::remove_file(path).map_err(|e| AgentError::failed(format!("remove {}: {e}", path.display())))?;
    }
    Ok(())
}

fn spawn(argv: &[String], stdout: StdoutTo) -> Result<Supervised, AgentError> {
    let prog = crate::needs::program(&argv[0])?;
    Supervised::spawn(supervisor::command(&prog).args(&argv[1..]), stdout)
        .map_err(|e| AgentError::failed(format!("cannot run {}: {e}", argv[0])))
}

/// What a failed tool said last, or how it ended.
fn last_line(stderr: &str, status: std::process::ExitStatus) -> String {
    supervisor::last_line(stderr).map(str::to_string).unwrap_or_else(|| status.to_string())
}

/// The timed region of the agent's own reader: the file in `bs` reads,
/// decoded on the way, counted and dropped.
fn read_builtin(ctx: &StepCtx, codec: Codec, stored: &Path, bs: usize, total: u64) -> Result<u64, AgentError> {
    let f = File::open(stored).map_err(|e| AgentError::failed(format!("open {}: {e}", stored.display())))?;
    let what = || format!("read {}", stored.display());
    let mut dec = compress::decoder(codec, BufReader::with_capacity(bs, f)).map_err(|e| io_failed(ctx, what(), e))?;
    let mut buf = vec![0u8; bs];
    let mut produced = 0u64;
    loop {
        ctx.check_cancel()?;
        let n = match dec.read(&mut buf) {
            Ok(n) => n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(io_failed(ctx, what(), e)),
        };
        if n == 0 {
            return Ok(produced);
        }
        produced += n as u64;
        ctx.progress(produced, total, "reading");
    }
}

/// The timed region of a host tool: its stdout drained by the agent, the
/// tool waited for (so its CPU time is in the children's rusage).
fn read_external(ctx: &StepCtx, argv: &[String], bs: usize, total: u64) -> Result<u64, AgentError> {
    let mut run = spawn(argv, StdoutTo::Pipe)?;
    let mut pipe = run.take_stdout().expect("stdout is piped");
    // A bigger pipe means fewer switches between the tool and the agent, as
    // a shell pipeline into a reader with a large buffer would have.
    let _ = rustix::pipe::fcntl_setpipe_size(&pipe, bs.clamp(64 << 10, 1 << 20));
    let mut buf = vec![0u8; bs];
    let mut produced = 0u64;
    let drained = loop {
        if ctx.check_cancel().is_err() {
            break Err(AgentError::cancelled());
        }
        match pipe.read(&mut buf) {
            Ok(0) => break Ok(()),
            Ok(n) => {
                produced += n as u64;
                ctx.progress(produced, total, "reading");
            }
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => break Err(AgentError::failed(format!("read from {}: {e}", argv[0]))),
        }
    };
    if let Err(e) = drained {
        run.stop();
        return Err(e);
    }
    drop(pipe);
    // The tool closed its output: it is exiting. Waited for without a
    // cancel check: its exit wakes the wait, so the clock stops when it is
    // gone and not at a poll.
    let (status, _) = run.wait(None, None).map_err(|e| AgentError::failed(format!("wait for {}: {e}", argv[0])))?;
    let stderr = run.collect().stderr_text();
    if !status.success() {
        return Err(AgentError::failed(format!("`{}` failed: {}", argv.join(" "), last_line(&stderr, status))));
    }
    Ok(produced)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_host_s_tools_are_the_codec_s_own_program() {
        let (p, s) = (Path::new("/m/f"), Path::new("/m/f.gz"));
        assert_eq!(tool_lines(Codec::Raw, p, s), (None, vec!["cat".to_string(), "/m/f.gz".into()]));
        assert_eq!(
            tool_lines(Codec::Gzip, p, s),
            (
                Some(["gzip", "-c", "-6", "/m/f"].map(String::from).to_vec()),
                ["gzip", "-dc", "/m/f.gz"].map(String::from).to_vec()
            )
        );
        for codec in [Codec::Lzo, Codec::Gzip, Codec::Zstd] {
            let (compress, read) = tool_lines(codec, p, s);
            assert_eq!(compress.unwrap()[0], codec.program().unwrap());
            assert_eq!(read[0], codec.program().unwrap());
        }
    }

    #[test]
    fn compressed_copies_get_the_codec_extension() {
        let p = Path::new("/m/cold.dat");
        assert_eq!(stored_path(p, Codec::Raw), p);
        assert_eq!(stored_path(p, Codec::Lzo), Path::new("/m/cold.dat.lzo"));
        assert_eq!(stored_path(p, Codec::Gzip), Path::new("/m/cold.dat.gz"));
        assert_eq!(stored_path(p, Codec::Zstd), Path::new("/m/cold.dat.zst"));
    }

    #[test]
    fn content_does_not_depend_on_how_it_is_read() {
        let out = crate::outbox::Outbox::new(Box::new(io::sink()));
        let cancel = std::sync::atomic::AtomicBool::new(false);
        let ctx = StepCtx::new(1, &out, &cancel);
        let size = 3 * ContentReader::CHUNK as u64 + 5;
        let mut a = Vec::new();
        ContentReader::new(&ctx, ContentKind::Text, 4, size).read_to_end(&mut a).unwrap();
        let mut b = Vec::new();
        let mut r = ContentReader::new(&ctx, ContentKind::Text, 4, size);
        let mut small = [0u8; 777];
        loop {
            let n = r.read(&mut small).unwrap();
            if n == 0 {
                break;
            }
            b.extend_from_slice(&small[..n]);
        }
        assert_eq!(a.len() as u64, size);
        assert!(a == b);
    }
}
