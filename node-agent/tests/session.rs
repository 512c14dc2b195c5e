//! The agent's session loop in-process: frames in, frames out, through pipes.

use benchrig_agent::outbox::Outbox;
use benchrig_agent::session;
use benchrig_agent::sysfs::SysView;
use benchrig_wire::frame::{read_frame, write_frame};
use benchrig_wire::messages::*;
use benchrig_wire::steps::{Action, NoArgs, SeqReadArgs};
use std::io::Write;
use std::sync::{Arc, Mutex};

/// A Write that collects everything into a shared buffer.
#[derive(Clone, Default)]
struct Sink(Arc<Mutex<Vec<u8>>>);
impl Write for Sink {
    fn write(&mut self, b: &[u8]) -> std::io::Result<usize> {
        self.0.lock().unwrap().extend_from_slice(b);
        Ok(b.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

fn run(requests: &[Envelope]) -> Vec<AgentMsg> {
    let mut input = Vec::new();
    for r in requests {
        write_frame(&mut input, r).unwrap();
    }
    let sink = Sink::default();
    session::serve(std::io::Cursor::new(input), Outbox::new(Box::new(sink.clone())), SysView::real(), "cafe".into());
    let bytes = sink.0.lock().unwrap().clone();
    let mut r = &bytes[..];
    let mut out = Vec::new();
    while let Some(m) = read_frame::<_, AgentMsg>(&mut r).unwrap() {
        if !matches!(m, AgentMsg::Heartbeat { .. }) {
            out.push(m);
        }
    }
    out
}

fn reply_of(msgs: &[AgentMsg], id: u64) -> Event {
    msgs.iter()
        .find_map(|m| match m {
            AgentMsg::Event { id: i, event } if *i == id && matches!(event, Event::Result { .. } | Event::Error(_)) => {
                Some(event.clone())
            }
            _ => None,
        })
        .unwrap_or_else(|| panic!("no answer to request {id} in {msgs:?}"))
}

#[test]
fn hello_first_then_one_answer_per_request() {
    let work = tempfile::tempdir().unwrap();
    let cfg =
        SessionConfig { work_dir: work.path().join("w").display().to_string(), scratch: vec![], heartbeat_ms: 100 };
    let step = |id, action| Envelope {
        id,
        request: Request::Run(StepRequest { cell: "c".into(), name: "s".into(), action, monitor: None }),
    };
    let msgs = run(&[
        Envelope { id: 1, request: Request::Configure(cfg) },
        Envelope { id: 2, request: Request::Ping },
        step(3, Action::Noop(NoArgs {})),
        // No filesystem was set up: a clear failure, not a panic.
        step(4, Action::SeqRead(serde_json::from_str::<SeqReadArgs>("{}").unwrap())),
        Envelope { id: 5, request: Request::Shutdown },
    ]);
    let AgentMsg::Hello(h) = &msgs[0] else { panic!("first message must be hello: {msgs:?}") };
    assert_eq!((h.protocol, h.sha256.as_str()), (benchrig_wire::PROTOCOL_VERSION, "cafe"));
    assert_eq!(reply_of(&msgs, 1), Event::Result { reply: Reply::Configured { restored: vec![] } });
    assert!(work.path().join("w").is_dir());
    assert_eq!(reply_of(&msgs, 2), Event::Result { reply: Reply::Pong });
    assert!(matches!(reply_of(&msgs, 3), Event::Result { reply: Reply::Step(_) }));
    let Event::Error(e) = reply_of(&msgs, 4) else { panic!() };
    assert_eq!(e.code, ErrorCode::Failed);
    assert!(e.message.contains("filesystem"), "{}", e.message);
    assert_eq!(reply_of(&msgs, 5), Event::Result { reply: Reply::Bye { released: vec![] } });
}

#[test]
fn a_device_not_in_the_session_list_is_refused() {
    let work = tempfile::tempdir().unwrap();
    let cfg = SessionConfig { work_dir: work.path().display().to_string(), scratch: vec![], heartbeat_ms: 100 };
    let fs: benchrig_wire::steps::FilesystemArgs = serde_json::from_value(serde_json::json!({
        "device": "sda", "profile": {"name": "ext4", "fstype": "ext4", "mkfs": ["mkfs.ext4"]}
    }))
    .unwrap();
    let msgs = run(&[
        Envelope { id: 1, request: Request::Configure(cfg) },
        Envelope {
            id: 2,
            request: Request::Run(StepRequest {
                cell: "c".into(),
                name: "fs".into(),
                action: Action::Filesystem(fs),
                monitor: None,
            }),
        },
        Envelope { id: 3, request: Request::Shutdown },
    ]);
    let Event::Error(e) = reply_of(&msgs, 2) else { panic!() };
    assert_eq!((e.code, e.rule.as_deref()), (ErrorCode::Refused, Some("not_listed")));
}

#[test]
fn a_closed_channel_ends_the_session_and_still_answers_what_was_queued() {
    // No Shutdown at all: EOF alone must end serve() (the test would hang otherwise).
    let noop = Request::Run(StepRequest {
        cell: "c".into(),
        name: "n".into(),
        action: Action::Noop(NoArgs {}),
        monitor: None,
    });
    let msgs = run(&[Envelope { id: 1, request: Request::Ping }, Envelope { id: 2, request: noop }]);
    assert_eq!(reply_of(&msgs, 1), Event::Result { reply: Reply::Pong });
    // Answered either way (done before EOF was seen, or cancelled after): never dropped.
    match reply_of(&msgs, 2) {
        Event::Result { reply: Reply::Step(_) } => {}
        Event::Error(e) => assert_eq!(e.code, ErrorCode::Cancelled),
        other => panic!("{other:?}"),
    }
}

#[test]
fn garbage_on_stdin_ends_the_session() {
    let sink = Sink::default();
    session::serve(&b"not a frame at all"[..], Outbox::new(Box::new(sink.clone())), SysView::real(), "x".into());
    let bytes = sink.0.lock().unwrap().clone();
    let first: AgentMsg = read_frame(&mut &bytes[..]).unwrap().unwrap();
    assert!(matches!(first, AgentMsg::Hello(_)));
}

#[test]
fn frames_are_all_the_agent_writes() {
    // Everything in the sink parses as frames: nothing else reached the channel.
    let sink = Sink::default();
    let mut input = Vec::new();
    write_frame(&mut input, &Envelope { id: 1, request: Request::Facts }).unwrap();
    session::serve(std::io::Cursor::new(input), Outbox::new(Box::new(sink.clone())), SysView::real(), "x".into());
    let bytes = sink.0.lock().unwrap().clone();
    let mut r = &bytes[..];
    let mut n = 0;
    while let Some(_m) = read_frame::<_, AgentMsg>(&mut r).unwrap() {
        n += 1;
    }
    assert!(n >= 2 && r.is_empty());
    let _ = std::io::stdout().flush();
}

/// An input that never ends and never delivers: a link gone half-open.
struct Silent(std::sync::mpsc::Receiver<()>);
impl std::io::Read for Silent {
    fn read(&mut self, _: &mut [u8]) -> std::io::Result<usize> {
        let _ = self.0.recv();
        Ok(0)
    }
}

#[test]
fn an_orchestrator_gone_silent_ends_the_session_and_its_step() {
    let work = tempfile::tempdir().unwrap();
    let marker = work.path().join("sleeping");
    let cfg = SessionConfig { work_dir: work.path().display().to_string(), scratch: vec![], heartbeat_ms: 100 };
    let exec: benchrig_wire::steps::ExecArgs = serde_json::from_value(serde_json::json!({
        "command": ["sh", "-c", format!("echo $$ > {}; exec sleep 300", marker.display())]
    }))
    .unwrap();
    let mut frames = Vec::new();
    write_frame(&mut frames, &Envelope { id: 1, request: Request::Configure(cfg) }).unwrap();
    let step = StepRequest { cell: "c".into(), name: "sleep".into(), action: Action::Exec(exec), monitor: None };
    write_frame(&mut frames, &Envelope { id: 2, request: Request::Run(step) }).unwrap();
    // The two frames, then a link that stays open and says nothing.
    let (_keep_open, never) = std::sync::mpsc::channel();
    let input = std::io::Read::chain(std::io::Cursor::new(frames), Silent(never));
    let t0 = std::time::Instant::now();
    session::serve_with(
        input,
        Outbox::new(Box::new(Sink::default())),
        SysView::real(),
        "x".into(),
        std::time::Duration::from_millis(1500),
    );
    let took = t0.elapsed();
    assert!(took < std::time::Duration::from_secs(10), "the session lasted {took:?}");
    // The step's command was started, and is gone with the session.
    let pid = std::fs::read_to_string(&marker).expect("the step ran").trim().to_string();
    let state = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
    assert!(state.is_empty() || state.contains(") Z "), "the step's sleep {pid} outlived the session: {state}");
}

/// When the connection dies, the agent's stderr goes with its stdin: what
/// it says on the way out must not kill it before it has released what it
/// set up (`eprintln!` panics on a closed stderr; on the main before this
/// test, the agent exited 101 and left its mounts and tuning).
#[test]
fn the_agent_ends_cleanly_when_its_stderr_is_gone_too() {
    use std::process::{Command, Stdio};
    let (err_read, err_write) = std::io::pipe().unwrap();
    drop(err_read);
    let out = Command::new(env!("CARGO_BIN_EXE_benchrig-agent"))
        .arg("serve")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(err_write)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "the agent died: {:?}", out.status);
    let first: AgentMsg = read_frame(&mut &out.stdout[..]).unwrap().unwrap();
    assert!(matches!(first, AgentMsg::Hello(_)));
}
