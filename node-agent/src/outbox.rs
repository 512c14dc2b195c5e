//! The agent's only way to speak: frames on the protocol channel.

use crate::monitor::Watch;
use benchrig_wire::frame;
use benchrig_wire::messages::{AgentError, AgentMsg, Event, LogLevel, Reply};
use std::io::Write;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// Shared by the reader, the worker and the heartbeat thread; one frame at a time.
#[derive(Clone)]
pub struct Outbox {
    w: Arc<Mutex<Box<dyn Write + Send>>>,
    gone: Arc<AtomicBool>,
}

impl Outbox {
    pub fn new(w: Box<dyn Write + Send>) -> Self {
        Outbox { w: Arc::new(Mutex::new(w)), gone: Arc::new(AtomicBool::new(false)) }
    }

    pub fn send(&self, msg: &AgentMsg) {
        match frame::encode(msg) {
            Ok(bytes) => self.write(&bytes),
            Err(e) => crate::say!("benchrig-agent: cannot encode a message: {e}"),
        }
    }

    fn write(&self, bytes: &[u8]) {
        // A broken channel carries no more frames (half a frame may be in it).
        if self.gone.load(Ordering::SeqCst) {
            return;
        }
        let mut w = self.w.lock().unwrap_or_else(|e| e.into_inner());
        if let Err(e) = w.write_all(bytes).and_then(|()| w.flush()) {
            // The orchestrator is gone; the reader sees EOF and cleans up.
            if !self.gone.swap(true, Ordering::SeqCst) {
                crate::say!("benchrig-agent: cannot write to the orchestrator: {e}");
            }
        }
    }

    /// Write nothing more: nobody reads the channel (the orchestrator went
    /// silent), and a write into a full one would block forever.
    pub fn close(&self) {
        self.gone.store(true, Ordering::SeqCst);
    }

    /// An answer that cannot be encoded (too large, say) becomes an error
    /// for the same request, so its caller is never left waiting.
    pub fn event(&self, id: u64, event: Event) {
        let done = matches!(event, Event::Result { .. } | Event::Error(_));
        match frame::encode(&AgentMsg::Event { id, event }) {
            Ok(bytes) => self.write(&bytes),
            Err(e) if done => self.send(&AgentMsg::Event {
                id,
                event: Event::Error(AgentError::failed(format!("the agent could not send its answer: {e}"))),
            }),
            Err(e) => crate::say!("benchrig-agent: dropped an event it could not encode: {e}"),
        }
    }

    pub fn reply(&self, id: u64, reply: Reply) {
        self.event(id, Event::Result { reply });
    }

    pub fn error(&self, id: u64, err: AgentError) {
        self.event(id, Event::Error(err));
    }
}

/// What a running step may use: its id, the outbox, its cancel flag and
/// whether monitors watch its timed region.
pub struct StepCtx<'a> {
    pub id: u64,
    pub out: &'a Outbox,
    pub cancel: &'a AtomicBool,
    pub watch: Watch,
    last_progress: std::cell::Cell<Option<Instant>>,
}

impl<'a> StepCtx<'a> {
    pub fn new(id: u64, out: &'a Outbox, cancel: &'a AtomicBool) -> Self {
        StepCtx { id, out, cancel, watch: Watch::default(), last_progress: Default::default() }
    }

    /// Monitors for the step's timed region (`measure::Meter`), as its request asked.
    pub fn with_watch(mut self, watch: Watch) -> Self {
        self.watch = watch;
        self
    }

    /// `Err(cancelled)` once the orchestrator asked this step to stop.
    pub fn check_cancel(&self) -> Result<(), AgentError> {
        if self.cancel.load(Ordering::Relaxed) {
            Err(AgentError::cancelled())
        } else {
            Ok(())
        }
    }

    /// At most two progress events a second, so a fast loop does not flood a slow link.
    pub fn progress(&self, done: u64, total: u64, message: &str) {
        let now = Instant::now();
        if self.last_progress.get().is_some_and(|t| now - t < Duration::from_millis(500)) {
            return;
        }
        self.last_progress.set(Some(now));
        self.out.event(self.id, Event::Progress { done, total, message: message.to_string() });
    }

    pub fn log(&self, level: LogLevel, message: impl Into<String>) {
        self.out.event(self.id, Event::Log { level, message: message.into() });
    }
}
