//! The orchestrator's side of an agent session: handshake, requests matched
//! to their events by id, heartbeats watched, and a clear "lost" state when
//! the agent or the link dies.

use crate::session::transport::{ProcessExit, RemoteProcess};
use benchrig_wire::frame::{self, FrameError, HEADER_LEN};
use benchrig_wire::messages::{AgentError, AgentMsg, Envelope, Event, Hello, Reply, Request};
use benchrig_wire::PROTOCOL_VERSION;
use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use tokio::io::{AsyncBufReadExt, AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt, BufReader};
use tokio::sync::{mpsc, watch};
use tokio::task::JoinHandle;

pub use benchrig_wire::messages::HEARTBEAT_MS;
/// How long a cancelled request may take to end: past it the agent is taken
/// for stuck and the session for lost (the agent, no longer heard from,
/// stops its step and releases on its own).
pub const CANCEL_LIMIT: Duration = Duration::from_secs(60);
/// An agent silent this long (no frame, no heartbeat) is considered gone.
/// Generous: a 12%-of-a-core host under load still beats every 2 s.
pub const SILENCE_LIMIT: Duration = Duration::from_secs(30);

#[derive(Debug, thiserror::Error)]
pub enum RequestError {
    /// The agent answered with an error (unsupported, refused, failed, cancelled).
    #[error("{0}")]
    Agent(AgentError),
    /// The agent or the link to it is gone.
    #[error("agent lost: {0}")]
    Lost(String),
    /// The agent died on the host, by a signal: the host failed, the
    /// network did not.
    #[error("{0}")]
    Died(String),
}

/// How an agent that died by a signal is told: its shell exits 128+N then
/// (deploy's start script runs it as a child), and ssh passes that on.
/// `build` is the agent build's target, for what SIGILL usually means.
pub fn death(status: Option<i32>, build: &str) -> Option<String> {
    let n = status?.checked_sub(128).filter(|n| (1..=31).contains(n))?;
    let (name, what, why) = match n {
        1 => ("SIGHUP", "hangup", String::new()),
        2 => ("SIGINT", "interrupt", String::new()),
        4 => ("SIGILL", "illegal instruction", format!("this CPU lacks an instruction its {build} build uses")),
        6 => ("SIGABRT", "abort", "the agent aborted itself (its stderr above says why)".into()),
        7 => ("SIGBUS", "bus error", "a memory access the hardware refused".into()),
        8 => ("SIGFPE", "arithmetic exception", String::new()),
        9 => ("SIGKILL", "killed", "by the kernel's out-of-memory killer (see the host's dmesg) or by a user".into()),
        11 => ("SIGSEGV", "segmentation fault", "a bug in the agent: please report it".into()),
        13 => ("SIGPIPE", "broken pipe", String::new()),
        15 => ("SIGTERM", "terminated", "by a user or a service manager on the host".into()),
        _ => return Some(format!("the agent died of signal {n}")),
    };
    Some(match why.is_empty() {
        true => format!("the agent died of {name} ({what})"),
        false => format!("the agent died of {name} ({what}): {why}"),
    })
}

/// The agent's process exit, taken by whichever needs it first: the reader
/// when the agent's output ends, or the shutdown.
type SharedExit = Arc<Mutex<Option<Box<dyn ProcessExit>>>>;

/// Whether the agent died by a signal, once its output ended: its exit
/// status, waited for a little (it follows the end of output closely).
async fn died(exit: &SharedExit, build: &str) -> Option<String> {
    let exit = exit.lock().unwrap_or_else(|e| e.into_inner()).take()?;
    let status = tokio::time::timeout(Duration::from_secs(10), exit.wait()).await.ok()?;
    death(status, build)
}

#[derive(Default)]
struct Routes {
    open: HashMap<u64, mpsc::UnboundedSender<Event>>,
    /// Why the session ended, once it has.
    closed: Option<String>,
    /// It ended because the agent died by a signal.
    died: bool,
}

type Writer = Arc<tokio::sync::Mutex<Box<dyn AsyncWrite + Send + Unpin>>>;

/// Ends an agent session from outside it ([`AgentClient::closer`]).
#[derive(Clone)]
pub struct Closer(Arc<Mutex<Routes>>);

impl Closer {
    pub fn close(&self, why: String) {
        close(&self.0, why)
    }
}

pub struct AgentClient {
    writer: Writer,
    routes: Arc<Mutex<Routes>>,
    next_id: AtomicU64,
    pub hello: Hello,
    tasks: Vec<JoinHandle<()>>,
    exit: SharedExit,
}

impl AgentClient {
    /// Read the agent's hello and check it: our protocol, and the binary we
    /// pushed (`expected_sha`, of the `build` target).
    pub async fn handshake(proc: RemoteProcess, label: &str, expected_sha: &str, build: &str) -> Result<Self, String> {
        let RemoteProcess { stdin, mut stdout, stderr, exit } = proc;
        let exit: SharedExit = Arc::new(Mutex::new(Some(exit)));
        let stderr_task = tokio::spawn(forward_stderr(stderr, label.to_string()));
        let first = tokio::time::timeout(Duration::from_secs(60), read_msg(&mut stdout))
            .await
            .map_err(|_| "the agent did not say hello within 60 s".to_string())?;
        let gone = match first {
            Ok(Some(AgentMsg::Hello(h))) => Ok(h),
            Ok(Some(other)) => return Err(format!("the agent spoke before saying hello: {other:?}")),
            Ok(None) => Err("the agent exited before saying hello (see its stderr above)".to_string()),
            Err(e) => Err(format!("the agent did not start: {e}")),
        };
        let hello = match gone {
            Ok(h) => h,
            Err(otherwise) => {
                return Err(died(&exit, build).await.map(|d| format!("{d}, before saying hello")).unwrap_or(otherwise))
            }
        };
        if hello.protocol != PROTOCOL_VERSION {
            return Err(format!(
                "the agent speaks protocol {}, this benchrig speaks {PROTOCOL_VERSION}",
                hello.protocol
            ));
        }
        if hello.sha256 != expected_sha {
            return Err(format!(
                "the running agent's sha256 is {} but benchrig pushed {expected_sha}: the upload was corrupted or replaced",
                hello.sha256
            ));
        }
        let routes: Arc<Mutex<Routes>> = Default::default();
        let last_seen = Arc::new(Mutex::new(Instant::now()));
        let agent = AgentExit { exit: exit.clone(), build: build.to_string() };
        let reader = tokio::spawn(read_loop(stdout, routes.clone(), last_seen.clone(), agent));
        let watchdog = tokio::spawn(watchdog(routes.clone(), last_seen.clone()));
        let writer: Writer = Arc::new(tokio::sync::Mutex::new(stdin));
        let beat = tokio::spawn(beat(writer.clone()));
        Ok(AgentClient {
            writer,
            routes,
            next_id: AtomicU64::new(1),
            hello,
            tasks: vec![reader, watchdog, beat, stderr_task],
            exit,
        })
    }

    /// A handle that ends the session from elsewhere (the run, when the
    /// host's lease is gone): every request then ends as lost, with `why`.
    pub fn closer(&self) -> Closer {
        Closer(self.routes.clone())
    }

    /// Why the session is over, if it is.
    pub fn lost(&self) -> Option<String> {
        self.routes.lock().unwrap_or_else(|e| e.into_inner()).closed.clone()
    }

    async fn send(&self, id: u64, request: Request) -> Result<(), RequestError> {
        send(&self.writer, id, request).await
    }

    /// Send a request and wait for its answer, passing progress and log
    /// events to `on_event`. If `cancel` turns true meanwhile, the agent is
    /// asked to stop the request (which then ends as `cancelled`).
    pub async fn request(
        &self,
        request: Request,
        cancel: Option<watch::Receiver<bool>>,
        mut on_event: impl FnMut(&Event),
    ) -> Result<Reply, RequestError> {
        let id = self.next_id.fetch_add(1, Ordering::SeqCst);
        let (tx, mut rx) = mpsc::unbounded_channel();
        {
            let mut r = self.routes.lock().unwrap_or_else(|e| e.into_inner());
            if r.closed.is_some() {
                return Err(ended(&r));
            }
            r.open.insert(id, tx);
        }
        if let Err(e) = self.send(id, request).await {
            return Err(self.why_unwritable(e).await);
        }
        let mut cancel = cancel;
        // When the cancel was sent: the request must end within CANCEL_LIMIT of it.
        let mut cancel_sent: Option<tokio::time::Instant> = None;
        loop {
            let event = match (cancel.as_mut(), cancel_sent) {
                (_, Some(at)) => match tokio::time::timeout_at(at + CANCEL_LIMIT, rx.recv()).await {
                    Ok(ev) => ev,
                    Err(_) => {
                        let why = format!(
                            "the agent did not stop the step within {} s of its cancel",
                            CANCEL_LIMIT.as_secs()
                        );
                        close(&self.routes, why.clone());
                        return Err(RequestError::Lost(why));
                    }
                },
                (Some(c), None) => tokio::select! {
                    ev = rx.recv() => ev,
                    changed = c.changed() => {
                        match changed {
                            Ok(()) if *c.borrow() => {
                                cancel_sent = Some(tokio::time::Instant::now());
                                let cid = self.next_id.fetch_add(1, Ordering::SeqCst);
                                self.send(cid, Request::Cancel { target: id }).await?;
                            }
                            Ok(()) => {}
                            // Nobody can cancel any more: stop watching, do not cancel.
                            Err(_) => cancel = None,
                        }
                        continue;
                    }
                },
                (None, None) => rx.recv().await,
            };
            match event {
                Some(Event::Result { reply }) => return Ok(reply),
                Some(Event::Error(e)) => return Err(RequestError::Agent(e)),
                Some(other) => on_event(&other),
                None => return Err(ended(&self.routes.lock().unwrap_or_else(|e| e.into_inner()))),
            }
        }
    }

    /// A write to the agent failed: when its output has ended too, the
    /// reader is telling how (a signal is the host's failure, not a lost
    /// link), which takes it up to the wait for the exit status.
    async fn why_unwritable(&self, e: RequestError) -> RequestError {
        for _ in 0..240 {
            {
                let r = self.routes.lock().unwrap_or_else(|e| e.into_inner());
                if r.closed.is_some() {
                    return ended(&r);
                }
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        e
    }

    /// Round trip of a bare ping.
    pub async fn ping(&self) -> Result<Duration, RequestError> {
        let t = Instant::now();
        self.request(Request::Ping, None, |_| {}).await?;
        Ok(t.elapsed())
    }

    /// Ask the agent to release what it set up and exit; wait for it to go.
    pub async fn shutdown(self) -> Result<Vec<String>, RequestError> {
        let released = tokio::time::timeout(Duration::from_secs(120), self.request(Request::Shutdown, None, |_| {}))
            .await
            .map_err(|_| RequestError::Lost("the agent did not shut down within 120 s".into()))?;
        let exit = self.exit.lock().unwrap_or_else(|e| e.into_inner()).take();
        if let Some(exit) = exit {
            let _ = tokio::time::timeout(Duration::from_secs(10), exit.wait()).await;
        }
        match released? {
            Reply::Bye { released } => Ok(released),
            other => Err(RequestError::Lost(format!("unexpected answer to shutdown: {other:?}"))),
        }
    }
}

impl Drop for AgentClient {
    fn drop(&mut self) {
        for t in &self.tasks {
            t.abort();
        }
    }
}

async fn send(writer: &Writer, id: u64, request: Request) -> Result<(), RequestError> {
    let bytes = frame::encode(&Envelope { id, request }).map_err(|e| RequestError::Lost(e.to_string()))?;
    let mut w = writer.lock().await;
    w.write_all(&bytes).await.map_err(|e| RequestError::Lost(format!("cannot write to the agent: {e}")))?;
    w.flush().await.map_err(|e| RequestError::Lost(format!("cannot write to the agent: {e}")))
}

/// Our side of the heartbeat: the agent takes our silence for a lost link
/// (`ORCHESTRATOR_SILENCE_MS`) and cleans up on its own. Id 0: never answered.
async fn beat(writer: Writer) {
    let period = Duration::from_millis(HEARTBEAT_MS);
    let mut every = tokio::time::interval_at(tokio::time::Instant::now() + period, period);
    every.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        every.tick().await;
        if send(&writer, 0, Request::Alive).await.is_err() {
            return;
        }
    }
}

async fn read_msg<R: AsyncRead + Unpin>(r: &mut R) -> Result<Option<AgentMsg>, FrameError> {
    let mut header = [0u8; HEADER_LEN];
    match r.read_exact(&mut header).await {
        Ok(_) => {}
        Err(e) if e.kind() == std::io::ErrorKind::UnexpectedEof => return Ok(None),
        Err(e) => return Err(e.into()),
    }
    let mut body = vec![0u8; frame::body_len(header)?];
    r.read_exact(&mut body).await.map_err(|e| match e.kind() {
        std::io::ErrorKind::UnexpectedEof => FrameError::Truncated,
        _ => FrameError::Io(e),
    })?;
    frame::decode(&body).map(Some)
}

/// The error a request gets from a session that is over.
fn ended(r: &Routes) -> RequestError {
    let why = r.closed.clone().unwrap_or_else(|| "the agent went away".into());
    if r.died {
        RequestError::Died(why)
    } else {
        RequestError::Lost(why)
    }
}

fn close(routes: &Mutex<Routes>, why: String) {
    close_as(routes, why, false)
}

fn close_as(routes: &Mutex<Routes>, why: String, died: bool) {
    let mut r = routes.lock().unwrap_or_else(|e| e.into_inner());
    if r.closed.is_none() {
        r.closed = Some(why);
        r.died = died;
    }
    // Dropping the senders wakes every waiting request with "lost".
    r.open.clear();
}

/// What the reader needs to tell how the agent ended.
struct AgentExit {
    exit: SharedExit,
    build: String,
}

/// Close a session whose agent's output ended: as a death when a signal
/// killed it, else with `otherwise`.
async fn close_ended(routes: &Mutex<Routes>, agent: &AgentExit, otherwise: String) {
    match died(&agent.exit, &agent.build).await {
        Some(death) => close_as(routes, death, true),
        None => close(routes, otherwise),
    }
}

async fn read_loop(
    mut stdout: Box<dyn AsyncRead + Send + Unpin>,
    routes: Arc<Mutex<Routes>>,
    last_seen: Arc<Mutex<Instant>>,
    agent: AgentExit,
) {
    loop {
        let msg = read_msg(&mut stdout).await;
        *last_seen.lock().unwrap_or_else(|e| e.into_inner()) = Instant::now();
        match msg {
            Ok(Some(AgentMsg::Event { id, event })) => {
                let done = matches!(event, Event::Result { .. } | Event::Error(_));
                let mut r = routes.lock().unwrap_or_else(|e| e.into_inner());
                if let Some(tx) = r.open.get(&id) {
                    let _ = tx.send(event);
                }
                if done {
                    r.open.remove(&id);
                }
            }
            Ok(Some(AgentMsg::Heartbeat { .. })) | Ok(Some(AgentMsg::Hello(_))) => {}
            Ok(None) => {
                let otherwise = "the agent's channel closed (agent exited or connection lost)";
                return close_ended(&routes, &agent, otherwise.into()).await;
            }
            Err(e) => return close_ended(&routes, &agent, format!("broken frame from the agent: {e}")).await,
        }
    }
}

async fn watchdog(routes: Arc<Mutex<Routes>>, last_seen: Arc<Mutex<Instant>>) {
    loop {
        tokio::time::sleep(Duration::from_secs(1)).await;
        let silent = last_seen.lock().unwrap_or_else(|e| e.into_inner()).elapsed();
        if silent > SILENCE_LIMIT {
            return close(&routes, format!("no heartbeat from the agent for {} s", silent.as_secs()));
        }
        if routes.lock().unwrap_or_else(|e| e.into_inner()).closed.is_some() {
            return;
        }
    }
}

/// The agent's stderr is for people: into our log, line by line.
async fn forward_stderr(stderr: Box<dyn AsyncRead + Send + Unpin>, label: String) {
    let mut lines = BufReader::new(stderr).lines();
    while let Ok(Some(line)) = lines.next_line().await {
        tracing::warn!(host = %label, "agent: {line}");
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::session::transport::ProcessExit;
    use async_trait::async_trait;
    use benchrig_wire::messages::{AgentError, ErrorCode};
    use tokio::io::{duplex, DuplexStream};

    struct NoExit;
    #[async_trait]
    impl ProcessExit for NoExit {
        async fn wait(self: Box<Self>) -> Option<i32> {
            Some(0)
        }
    }

    /// The exit of a process that ended with this status.
    struct ExitedWith(Option<i32>);
    #[async_trait]
    impl ProcessExit for ExitedWith {
        async fn wait(self: Box<Self>) -> Option<i32> {
            self.0
        }
    }

    #[test]
    fn a_shells_status_above_128_is_the_signal_that_killed_the_agent() {
        assert_eq!(
            death(Some(132), "i686-unknown-linux-musl").as_deref(),
            Some(
                "the agent died of SIGILL (illegal instruction): this CPU lacks an instruction its i686-unknown-linux-musl build uses"
            )
        );
        assert!(death(Some(139), "x").unwrap().starts_with("the agent died of SIGSEGV (segmentation fault)"));
        assert_eq!(death(Some(128 + 30), "x").as_deref(), Some("the agent died of signal 30"));
        // Not a signal: an exit of its own, ssh's 255, or no status at all.
        for status in [Some(0), Some(1), Some(128), Some(255), None] {
            assert_eq!(death(status, "x"), None, "{status:?}");
        }
    }

    /// An agent killed by a signal is said to have died of it, before its
    /// hello and after: a failure of the host, not a lost link.
    #[tokio::test]
    async fn an_agent_killed_by_a_signal_is_said_to_have_died_not_lost() {
        let (mut proc, fake) = pair();
        proc.exit = Box::new(ExitedWith(Some(132)));
        drop(fake);
        let e = AgentClient::handshake(proc, "h", "abc", "i686-unknown-linux-musl").await.err().unwrap();
        assert!(
            e.starts_with("the agent died of SIGILL (illegal instruction)") && e.ends_with("before saying hello"),
            "{e}"
        );

        let (mut proc, mut fake) = pair();
        proc.exit = Box::new(ExitedWith(Some(128 + 11)));
        fake.say(&hello(PROTOCOL_VERSION, "abc")).await;
        let client = AgentClient::handshake(proc, "h", "abc", "x86_64-unknown-linux-musl").await.unwrap();
        drop(fake);
        match client.request(Request::Ping, None, |_| {}).await {
            Err(RequestError::Died(why)) => assert!(why.contains("SIGSEGV"), "{why}"),
            other => panic!("{other:?}"),
        }
        assert!(matches!(client.request(Request::Ping, None, |_| {}).await, Err(RequestError::Died(_))));
    }

    /// A fake agent on the other end of in-memory pipes.
    struct Fake {
        from_client: DuplexStream,
        to_client: DuplexStream,
    }

    impl Fake {
        async fn say(&mut self, msg: &AgentMsg) {
            self.to_client.write_all(&frame::encode(msg).unwrap()).await.unwrap();
        }
        /// The next request, past the client's heartbeats.
        async fn hear(&mut self) -> Envelope {
            loop {
                let e = self.hear_any().await;
                if e.request != Request::Alive {
                    return e;
                }
            }
        }
        async fn hear_any(&mut self) -> Envelope {
            let mut h = [0u8; HEADER_LEN];
            self.from_client.read_exact(&mut h).await.unwrap();
            let mut body = vec![0u8; frame::body_len(h).unwrap()];
            self.from_client.read_exact(&mut body).await.unwrap();
            frame::decode(&body).unwrap()
        }
    }

    fn pair() -> (RemoteProcess, Fake) {
        let (client_in, from_client) = duplex(1 << 16);
        let (to_client, client_out) = duplex(1 << 16);
        let (_, err) = duplex(64);
        let proc = RemoteProcess {
            stdin: Box::new(client_in),
            stdout: Box::new(client_out),
            stderr: Box::new(err),
            exit: Box::new(NoExit),
        };
        (proc, Fake { from_client, to_client })
    }

    fn hello(protocol: u32, sha: &str) -> AgentMsg {
        AgentMsg::Hello(Hello {
            protocol,
            agent_version: "t".into(),
            sha256: sha.into(),
            arch: "i686".into(),
            pid: 1,
            uid: 0,
        })
    }

    /// A client that has shaken hands with a fake agent.
    async fn connected() -> (AgentClient, Fake) {
        let (proc, mut fake) = pair();
        fake.say(&hello(PROTOCOL_VERSION, "abc")).await;
        (AgentClient::handshake(proc, "h", "abc", "x86_64-unknown-linux-musl").await.unwrap(), fake)
    }

    #[tokio::test]
    async fn handshake_refuses_another_protocol_or_another_binary() {
        let (proc, mut fake) = pair();
        fake.say(&hello(PROTOCOL_VERSION + 1, "abc")).await;
        let e = AgentClient::handshake(proc, "h", "abc", "x86_64-unknown-linux-musl").await.err().unwrap();
        assert!(e.contains("protocol"), "{e}");

        let (proc, mut fake) = pair();
        fake.say(&hello(PROTOCOL_VERSION, "evil")).await;
        let e = AgentClient::handshake(proc, "h", "abc", "x86_64-unknown-linux-musl").await.err().unwrap();
        assert!(e.contains("sha256") && e.contains("evil"), "{e}");

        let (proc, fake) = pair();
        drop(fake);
        let e = AgentClient::handshake(proc, "h", "abc", "x86_64-unknown-linux-musl").await.err().unwrap();
        assert!(e.contains("exited before saying hello"), "{e}");
    }

    #[tokio::test]
    async fn replies_reach_their_request_and_a_closed_channel_is_lost() {
        let (client, mut fake) = connected().await;
        assert_eq!(client.hello.arch, "i686");
        let agent = tokio::spawn(async move {
            let a = fake.hear().await;
            let b = fake.hear().await;
            // Answer out of order, with progress first and a heartbeat between.
            fake.say(&AgentMsg::Event { id: b.id, event: Event::Progress { done: 1, total: 2, message: "x".into() } })
                .await;
            fake.say(&AgentMsg::Heartbeat { seq: 1 }).await;
            fake.say(&AgentMsg::Event {
                id: b.id,
                event: Event::Error(AgentError::new(ErrorCode::Unsupported, "no jfs")),
            })
            .await;
            fake.say(&AgentMsg::Event { id: a.id, event: Event::Result { reply: Reply::Pong } }).await;
            // Then the agent dies.
            drop(fake);
        });
        let mut progress = 0;
        let (a, b) = tokio::join!(
            client.request(Request::Ping, None, |_| {}),
            client.request(Request::Facts, None, |_| progress += 1)
        );
        assert!(matches!(a, Ok(Reply::Pong)));
        assert!(matches!(b, Err(RequestError::Agent(ref e)) if e.code == ErrorCode::Unsupported));
        assert_eq!(progress, 1);
        agent.await.unwrap();
        let c = client.request(Request::Ping, None, |_| {}).await;
        assert!(matches!(c, Err(RequestError::Lost(_))), "{c:?}");
        assert!(client.lost().unwrap().contains("closed"));
    }

    #[tokio::test]
    async fn cancel_is_sent_for_the_running_request() {
        let (client, mut fake) = connected().await;
        let (tx, rx) = watch::channel(false);
        let agent = tokio::spawn(async move {
            let run = fake.hear().await;
            let cancel = fake.hear().await;
            assert_eq!(cancel.request, Request::Cancel { target: run.id });
            fake.say(&AgentMsg::Event {
                id: run.id,
                event: Event::Error(AgentError::new(ErrorCode::Cancelled, "cancelled")),
            })
            .await;
            fake
        });
        let req = client.request(Request::Facts, Some(rx), |_| {});
        let _ = tx.send(true);
        let r = req.await;
        assert!(matches!(r, Err(RequestError::Agent(ref e)) if e.code == ErrorCode::Cancelled), "{r:?}");
        let _fake = agent.await.unwrap();
    }

    #[tokio::test(start_paused = true)]
    async fn the_client_tells_an_idle_agent_it_is_still_there() {
        let t0 = tokio::time::Instant::now();
        let (_client, mut fake) = connected().await;
        for _ in 0..3 {
            assert_eq!(fake.hear_any().await, Envelope { id: 0, request: Request::Alive });
        }
        // One every HEARTBEAT_MS, with no request in between.
        assert_eq!(t0.elapsed(), 3 * Duration::from_millis(HEARTBEAT_MS));
    }

    #[tokio::test(start_paused = true)]
    async fn a_cancel_the_agent_never_ends_loses_the_session_after_the_limit() {
        let (client, mut fake) = connected().await;
        let (tx, rx) = watch::channel(false);
        // An agent that beats (so it is not silent) but never ends the step.
        let agent = tokio::spawn(async move {
            let run = fake.hear().await;
            assert_eq!(fake.hear().await.request, Request::Cancel { target: run.id });
            for seq in 0.. {
                tokio::time::sleep(Duration::from_millis(HEARTBEAT_MS)).await;
                fake.say(&AgentMsg::Heartbeat { seq }).await;
            }
        });
        let req = client.request(Request::Facts, Some(rx), |_| {});
        let _ = tx.send(true);
        let t0 = tokio::time::Instant::now();
        let r = req.await;
        assert!(
            matches!(r, Err(RequestError::Lost(ref why)) if why.contains("did not stop the step within 60 s")),
            "{r:?}"
        );
        assert_eq!(t0.elapsed(), CANCEL_LIMIT);
        // The session is over: nothing else is sent to an agent that may be stuck.
        assert!(matches!(client.request(Request::Ping, None, |_| {}).await, Err(RequestError::Lost(_))));
        agent.abort();
    }
}
