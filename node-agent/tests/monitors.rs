//! Monitors through the agent: a step whose request asks for them returns
//! series for its target's devices, one entry per interval.

mod common;

use benchrig_agent::dispatch;
use benchrig_agent::monitor::Watch;
use benchrig_agent::outbox::{Outbox, StepCtx};
use benchrig_agent::state::HostState;
use benchrig_agent::sysfs::SysView;
use benchrig_wire::monitor::MonitorConfig;
use benchrig_wire::scratch::{ScratchDevice, ScratchKind};
use benchrig_wire::steps::{Action, StepOutput};
use common::Loop;
use std::sync::atomic::AtomicBool;

fn step(st: &mut HostState, monitor: Option<MonitorConfig>, action: &str, args: serde_json::Value) -> StepOutput {
    let action = Action::from_parts(action, args.clone()).unwrap();
    let out = Outbox::new(Box::new(std::io::sink()));
    let cancel = AtomicBool::new(false);
    let ctx = StepCtx::new(1, &out, &cancel).with_watch(Watch::new(monitor));
    dispatch::run(st, &ctx, &action).unwrap_or_else(|e| panic!("{args}: {e:?}"))
}

#[test]
#[ignore = "needs root; ci/test.sh runs it (--ignored)"]
fn a_seq_read_on_a_loop_device_has_its_reads_in_every_interval_s_entry() {
    common::require_root("it attaches a loop device, makes ext4 and mounts it");
    let lp = Loop::new(512);
    let work = tempfile::tempdir().unwrap();
    let mut st = HostState::new(SysView::real());
    st.set_work_dir(work.path().to_path_buf());
    st.scratch = vec![ScratchDevice {
        path: lp.dev.display().to_string(),
        name: "d".into(),
        serial: None,
        wipe: true,
        kind: ScratchKind::Block,
        size: None,
    }];
    let profile = serde_json::json!({"name": "ext4", "fstype": "ext4", "mkfs": ["mkfs.ext4", "-q", "-F"]});
    step(&mut st, None, "filesystem", serde_json::json!({"device": "d", "profile": profile}));
    step(&mut st, None, "seq_write", serde_json::json!({"size": "192M", "bs": "1M"}));

    let cfg = MonitorConfig { interval_ms: 100 };
    let out = step(&mut st, Some(cfg), "seq_read", serde_json::json!({"bs": "16k", "direct": true}));
    let unmonitored = step(&mut st, None, "seq_read", serde_json::json!({"bs": "1M"}));
    st.release(None).unwrap();

    assert_eq!(unmonitored.monitors, None, "no monitors unless asked");
    let m = out.monitors.expect("monitors asked for, none returned");
    let usage = out.usage.unwrap();
    let loop_name = lp.dev.file_name().unwrap().to_string_lossy().into_owned();
    eprintln!("wall {} s, t = {:?}", usage.wall_s, m.t);
    let expected = (usage.wall_s / 0.1).ceil() as usize;
    assert!(expected >= 2, "the read took {} s: too short to test intervals", usage.wall_s);
    assert!(m.t.len().abs_diff(expected) <= 1, "{} entries over {} s at 100 ms", m.t.len(), usage.wall_s);
    assert!(m.t.windows(2).all(|w| w[0] < w[1]), "{:?}", m.t);
    let d = m.devices.iter().find(|d| d.device == loop_name).unwrap_or_else(|| panic!("no {loop_name} in {m:?}"));
    for s in [&d.r_s, &d.rmb_s, &d.util_pct, &d.r_await_ms, &m.cpu.idle_pct, &m.memory.cached_kb, &m.vm.pgpgin_kb_s] {
        assert_eq!(s.len(), m.t.len());
    }
    // Every full interval read something (the last may be a sliver).
    assert!(d.r_s[..m.t.len() - 1].iter().all(|&r| r > 0.0), "{:?}", d.r_s);
    // The MB the series add up to are the bytes the device counters saw
    // (the same kernel counters, read over the same region).
    let mut prev = 0.0;
    let mut mb = 0.0;
    for (i, &t) in m.t.iter().enumerate() {
        mb += d.rmb_s[i] * (t - prev);
        prev = t;
    }
    let counted = usage.devices.iter().find(|x| x.device == loop_name).unwrap().read_bytes as f64 / 1e6;
    assert!((mb - counted).abs() <= counted * 0.02, "series add up to {mb} MB, the counters to {counted} MB");
    assert!(counted >= 190.0, "{counted} MB read");
    // Writes are not asserted: ext4's lazy inode-table init and journal
    // commits write to a fresh filesystem while it is read.
}

#[test]
fn a_step_without_a_target_gets_host_wide_series_through_the_session() {
    use benchrig_wire::frame::{read_frame, write_frame};
    use benchrig_wire::messages::*;
    let exec = Action::from_parts("exec", serde_json::json!({"command": "sleep 0.35"})).unwrap();
    let mut input = Vec::new();
    for (id, request) in [
        (
            1,
            Request::Run(StepRequest {
                cell: "c".into(),
                name: "e".into(),
                action: exec,
                monitor: Some(MonitorConfig { interval_ms: 100 }),
            }),
        ),
        (2, Request::Shutdown),
    ] {
        write_frame(&mut input, &Envelope { id, request }).unwrap();
    }
    let (r, w) = std::io::pipe().unwrap();
    let reader = std::thread::spawn(move || {
        let mut r = std::io::BufReader::new(r);
        let mut msgs = vec![];
        while let Ok(Some(m)) = read_frame::<_, AgentMsg>(&mut r) {
            msgs.push(m);
        }
        msgs
    });
    benchrig_agent::session::serve(std::io::Cursor::new(input), Outbox::new(Box::new(w)), SysView::real(), "x".into());
    let msgs = reader.join().unwrap();
    let reply = msgs.iter().find_map(|m| match m {
        AgentMsg::Event { id: 1, event: Event::Result { reply: Reply::Step(o) } } => Some(o.clone()),
        _ => None,
    });
    let m = reply.expect("the exec step's result").monitors.expect("monitors asked for in the request");
    assert!((3..=5).contains(&m.t.len()), "{:?}", m.t);
    assert!(m.devices.is_empty(), "no target, no devices: {:?}", m.devices);
    assert_eq!(m.cpu.idle_pct.len(), m.t.len());
    assert_eq!(m.memory.dirty_kb.len(), m.t.len());
}

#[test]
fn a_cancelled_step_stops_at_once_though_its_monitor_ticks_only_every_minute() {
    let mut st = HostState::new(SysView::real());
    let action = Action::from_parts("exec", serde_json::json!({"command": "sleep 30"})).unwrap();
    let out = Outbox::new(Box::new(std::io::sink()));
    let cancel = AtomicBool::new(false);
    let ctx = StepCtx::new(1, &out, &cancel).with_watch(Watch::new(Some(MonitorConfig { interval_ms: 60_000 })));
    let t0 = std::time::Instant::now();
    let r = std::thread::scope(|s| {
        s.spawn(|| {
            std::thread::sleep(std::time::Duration::from_millis(300));
            cancel.store(true, std::sync::atomic::Ordering::SeqCst);
        });
        dispatch::run(&mut st, &ctx, &action)
    });
    let took = t0.elapsed();
    let e = r.expect_err("a cancelled step succeeded");
    assert_eq!(e.code, benchrig_wire::messages::ErrorCode::Cancelled, "{e:?}");
    assert!(took < std::time::Duration::from_secs(5), "cancelling took {took:?}");
}
