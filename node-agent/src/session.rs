//! One agent session: frames read on a reader thread and handled on the
//! session's own, steps on a worker thread (so `Ping` and `Cancel` are
//! answered while a step runs), and a heartbeat thread. Whatever ends the
//! session — `Shutdown`, the channel closing, a broken frame, or nothing
//! heard from the orchestrator for [`ORCHESTRATOR_SILENCE_MS`] (a half-open
//! link: no EOF ever comes) — the worker releases every mount and loop
//! device the session made before the process exits. A worker that cannot
//! finish (a step stuck in the kernel) is waited for [`RELEASE_LIMIT`] at
//! most once the orchestrator is gone.

use crate::dispatch;
use crate::facts;
use crate::monitor::Watch;
use crate::outbox::{Outbox, StepCtx};
use crate::state::HostState;
use crate::sysfs::SysView;
use benchrig_wire::facts::AgentInfo;
use benchrig_wire::frame::read_frame;
use benchrig_wire::messages::ORCHESTRATOR_SILENCE_MS;
use benchrig_wire::messages::{AgentError, AgentMsg, Envelope, Hello, Reply, Request};
use benchrig_wire::PROTOCOL_VERSION;
use std::collections::HashMap;
use std::io::Read;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{mpsc, Arc, Mutex};
use std::thread;
use std::time::Duration;

type CancelFlags = Arc<Mutex<HashMap<u64, Arc<AtomicBool>>>>;

/// Once the orchestrator is gone, how long the worker gets to stop its
/// step and release everything before the agent exits regardless (what it
/// could not release is in the journal for the next agent).
pub const RELEASE_LIMIT: Duration = Duration::from_secs(120);

struct Job {
    id: u64,
    request: Request,
}

pub fn hello(sha256: &str) -> Hello {
    Hello {
        protocol: PROTOCOL_VERSION,
        // With the commit, as `--version` says it: facts and reports name the build.
        agent_version: benchrig_wire::VERSION.to_string(),
        sha256: sha256.to_string(),
        arch: rustix::system::uname().machine().to_string_lossy().into_owned(),
        pid: std::process::id(),
        uid: rustix::process::getuid().as_raw(),
    }
}

/// Serve one orchestrator until it says goodbye or goes away.
pub fn serve<R: Read + Send + 'static>(input: R, out: Outbox, view: SysView, sha256: String) {
    serve_with(input, out, view, sha256, Duration::from_millis(ORCHESTRATOR_SILENCE_MS))
}

/// [`serve`], taking the orchestrator for gone after `silence` without a frame.
pub fn serve_with<R: Read + Send + 'static>(input: R, out: Outbox, view: SysView, sha256: String, silence: Duration) {
    let hello = hello(&sha256);
    let agent = AgentInfo {
        version: hello.agent_version.clone(),
        sha256,
        protocol: PROTOCOL_VERSION,
        build: benchrig_wire::TARGET.into(),
    };
    out.send(&AgentMsg::Hello(hello));

    let heartbeat = Heartbeat::start(out.clone());
    let cancels: CancelFlags = Default::default();
    let (tx, rx) = mpsc::channel::<Job>();
    let (worker_done, worker_ended) = mpsc::channel::<()>();
    {
        let (out, cancels) = (out.clone(), cancels.clone());
        thread::spawn(move || {
            work(rx, out, view, agent, cancels);
            let _ = worker_done.send(());
        });
    }
    let frames = read_frames(input);

    // Whether the orchestrator said goodbye (queued steps still run) or vanished.
    let mut orderly = false;
    loop {
        match frames.recv_timeout(silence) {
            Ok(Ok(Some(Envelope { id, request }))) => match request {
                Request::Ping => out.reply(id, Reply::Pong),
                Request::Alive => {}
                Request::Cancel { target } => {
                    if let Some(flag) = cancels.lock().unwrap_or_else(|e| e.into_inner()).get(&target) {
                        flag.store(true, Ordering::SeqCst);
                    }
                    out.reply(id, Reply::Ack);
                }
                Request::Shutdown => {
                    let _ = tx.send(Job { id, request: Request::Shutdown });
                    orderly = true;
                    break;
                }
                request => {
                    if let Request::Configure(cfg) = &request {
                        heartbeat.set_interval(cfg.heartbeat_ms);
                    }
                    cancels.lock().unwrap_or_else(|e| e.into_inner()).insert(id, Default::default());
                    let _ = tx.send(Job { id, request });
                }
            },
            Ok(Ok(None)) | Err(mpsc::RecvTimeoutError::Disconnected) => {
                crate::say!("benchrig-agent: the orchestrator closed the channel; cleaning up");
                break;
            }
            Ok(Err(e)) => {
                crate::say!("benchrig-agent: unreadable frame ({e}); cleaning up");
                break;
            }
            Err(mpsc::RecvTimeoutError::Timeout) => {
                crate::say!(
                    "benchrig-agent: nothing from the orchestrator for {} s (a lost link?); cleaning up",
                    silence.as_secs()
                );
                // Nobody reads what we write: a full channel must not block the release.
                out.close();
                break;
            }
        }
    }
    if !orderly {
        // Nobody will wait for the queued steps: stop the running one; the
        // worker drains the queue (each answers `cancelled`) and releases everything.
        for flag in cancels.lock().unwrap_or_else(|e| e.into_inner()).values() {
            flag.store(true, Ordering::SeqCst);
        }
    }
    drop(tx);
    // An orderly Shutdown's release is awaited by the orchestrator, under its own limit.
    if orderly {
        let _ = worker_ended.recv();
    } else if worker_ended.recv_timeout(RELEASE_LIMIT).is_err() {
        crate::say!(
            "benchrig-agent: the step did not stop within {} s of the orchestrator's going; exiting without it",
            RELEASE_LIMIT.as_secs()
        );
    }
    heartbeat.stop();
}

/// The frames on `input`, read on a thread of their own so the session can
/// notice silence; the thread ends at the input's end or a broken frame
/// (or with the process, blocked on a link that never ends).
fn read_frames<R: Read + Send + 'static>(
    mut input: R,
) -> mpsc::Receiver<Result<Option<Envelope>, benchrig_wire::frame::FrameError>> {
    let (tx, rx) = mpsc::channel();
    thread::spawn(move || loop {
        let frame = read_frame::<_, Envelope>(&mut input);
        let end = !matches!(frame, Ok(Some(_)));
        if tx.send(frame).is_err() || end {
            return;
        }
    });
    rx
}

fn work(rx: mpsc::Receiver<Job>, out: Outbox, view: SysView, agent: AgentInfo, cancels: CancelFlags) {
    let mut st = HostState::new(view);
    for Job { id, request } in rx {
        if let Request::Shutdown = request {
            let released = st.release(None);
            st.journal.close(released.is_ok());
            let released = released.unwrap_or_else(|e| vec![format!("error: {e}")]);
            out.reply(id, Reply::Bye { released });
            // An armed boot goes now, after the release, and only on an
            // orderly goodbye: an orchestrator that vanished waits for no boot.
            if let Some(firing) = st.armed.take() {
                crate::boot::fire(&firing);
            }
            return;
        }
        let flag = cancels.lock().unwrap_or_else(|e| e.into_inner()).get(&id).cloned().unwrap_or_default();
        // A bug in one request must not skip the cleanup below, nor leave its caller waiting.
        let result = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            handle(request, id, &mut st, &out, &flag, &agent)
        }))
        .unwrap_or_else(|p| {
            let what = p.downcast_ref::<&str>().map(|s| s.to_string()).or_else(|| p.downcast_ref::<String>().cloned());
            Err(AgentError::failed(format!("agent bug: panic: {}", what.unwrap_or_default())))
        });
        match result {
            Ok(reply) => out.reply(id, reply),
            Err(e) => out.error(id, e),
        }
        cancels.lock().unwrap_or_else(|e| e.into_inner()).remove(&id);
    }
    let released = st.release(None);
    if let Err(e) = &released {
        crate::say!("benchrig-agent: cleanup incomplete: {e}");
    }
    st.journal.close(released.is_ok());
}

fn handle(
    request: Request,
    id: u64,
    st: &mut HostState,
    out: &Outbox,
    cancel: &AtomicBool,
    agent: &AgentInfo,
) -> Result<Reply, AgentError> {
    match request {
        Request::Configure(cfg) => {
            // What a killed agent left: its journal's changes, and exports
            // (of a dead session, or one from before a reboot) the host
            // serves to the lab network until someone removes them.
            let mut restored = st.set_work_dir(cfg.work_dir.into());
            if rustix::process::geteuid().is_root() {
                match crate::exports::remove_stale() {
                    Ok(gone) => restored.extend(gone.iter().map(|g| format!("removed the stale export {g}"))),
                    Err(e) => restored.push(format!("stale exports left: {e}")),
                }
            }

            st.scratch = cfg.scratch;
            st.located = crate::scratch::locate_all(&st.view, &st.scratch, &st.located);
            // The first visit's kernel log starts here.
            st.kmsg = crate::kmsg::Reader::open_at_end().map_err(|e| format!("cannot read /dev/kmsg: {e}"));
            std::fs::create_dir_all(&st.work_dir)
                .map_err(|e| AgentError::failed(format!("cannot create {}: {e}", st.work_dir.display())))?;
            Ok(Reply::Configured { restored })
        }
        Request::Facts => {
            let mut f = facts::gather(&st.view, agent.clone());
            f.work_dir = st.work_dir.to_string_lossy().into_owned();
            f.scratch = facts::scratch(st);
            Ok(Reply::Facts(Box::new(f)))
        }
        Request::Run(step) => {
            let ctx = StepCtx::new(id, out, cancel).with_watch(Watch::new(step.monitor));
            dispatch::run(st, &ctx, &step.action).map(Reply::Step)
        }
        Request::BootState { means } => Ok(Reply::BootState(Box::new(crate::boot::state(&st.work_dir, means)))),
        Request::Boot(order) => {
            let (armed, firing) = crate::boot::arm(&st.work_dir, &order)?;
            st.armed = Some(firing);
            Ok(Reply::Armed(armed))
        }
        Request::InstallKernel { package, keep } => {
            crate::boot::package::install(&st.work_dir, &package, keep).map(Reply::Installed)
        }
        Request::BootDone => crate::boot::done(&st.work_dir).map(|removed| Reply::BootDone { removed }),
        // Answered by the reader thread; never queued.
        Request::Ping | Request::Alive | Request::Cancel { .. } | Request::Shutdown => {
            Err(AgentError::bad_request("not a worker request"))
        }
    }
}

/// Proof of life at a steady rate, from its own thread so a long step does
/// not silence it. The thread waits on a channel, not in short sleeps: it
/// costs no wake-ups between beats and ends the moment it is told to (the
/// session's end used to wait out a 50 ms nap on every host).
struct Heartbeat {
    interval_ms: Arc<AtomicU64>,
    wake: mpsc::Sender<()>,
    handle: thread::JoinHandle<()>,
}

impl Heartbeat {
    fn start(out: Outbox) -> Self {
        let interval_ms = Arc::new(AtomicU64::new(benchrig_wire::messages::HEARTBEAT_MS));
        let (wake, woken) = mpsc::channel::<()>();
        let handle = {
            let interval_ms = interval_ms.clone();
            thread::spawn(move || {
                let mut seq = 0;
                loop {
                    let interval = Duration::from_millis(interval_ms.load(Ordering::SeqCst));
                    match woken.recv_timeout(interval) {
                        Err(mpsc::RecvTimeoutError::Timeout) => {
                            seq += 1;
                            out.send(&AgentMsg::Heartbeat { seq });
                        }
                        // A new interval: wait again with it.
                        Ok(()) => {}
                        Err(mpsc::RecvTimeoutError::Disconnected) => break,
                    }
                }
            })
        };
        Heartbeat { interval_ms, wake, handle }
    }

    fn set_interval(&self, ms: u64) {
        self.interval_ms.store(ms.max(100), Ordering::SeqCst);
        let _ = self.wake.send(());
    }

    fn stop(self) {
        let Heartbeat { wake, handle, .. } = self;
        drop(wake);
        let _ = handle.join();
    }
}
