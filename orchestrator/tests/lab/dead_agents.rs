//! Ways to lose a host or a night (issue 26): an agent killed mid-visit,
//! one cut off from its orchestrator by a link that dies without a word,
//! and a run whose lease on its host is gone. All on lab host `hdd`,
//! mid-way through a cell that tuned its disk's read-ahead to 16 KiB and
//! mounted a filesystem on it.

use super::{agents_in, hdd0_read_ahead_kb, tune_playbook};
use crate::common::hosts::*;
use crate::common::*;
use benchrig::status::CellStatus;
use std::time::{Duration, Instant};

const NETNS: &str = "/run/netns/brlab-hdd";

/// Start the tune playbook on hdd (its measured step sleeping `sleep` s)
/// and wait until the cell runs with the setting in effect; the run and
/// its agent's pid.
fn mid_visit(b: &Bench, sleep: u32, name: &str, more: &[&str]) -> (Running, u32) {
    let before: Vec<String> = agents_in(NETNS);
    let inv = lab_inventory();
    let pb = tune_playbook(b, sleep);
    let args =
        ["run", pb.to_str().unwrap(), "-i", inv.to_str().unwrap(), "-e", "benchrig_reconnects=0", "--name", name];
    let child = b.spawn(&[&args[..], more].concat(), &[]);
    let start = Instant::now();
    while hdd0_read_ahead_kb() != 16 {
        assert!(start.elapsed().as_secs() < 120, "tune never took effect");
        std::thread::sleep(Duration::from_millis(200));
    }
    b.wait_for_cell(name, "the cell to run", |c| c.status == CellStatus::Running);
    let ours: Vec<String> = agents_in(NETNS).into_iter().filter(|a| !before.contains(a)).collect();
    assert_eq!(ours.len(), 1, "one agent of this run on hdd: {ours:?}");
    let pid: u32 = ours[0].split_whitespace().next().unwrap().parse().unwrap();
    // The tuning comes first; the measured step runs once hdd0 is mounted too.
    while !std::fs::read_to_string(format!("/proc/{pid}/mountinfo")).unwrap_or_default().contains("/work/mnt/hdd0 ") {
        assert!(start.elapsed().as_secs() < 120, "hdd0 was never mounted");
        std::thread::sleep(Duration::from_millis(200));
    }
    (child, pid)
}

/// Mounts under benchrig's work dir in hdd's mount namespace.
fn benchrig_mounts_on_hdd() -> String {
    lab(&["ssh", "hdd", "'grep /.cache/benchrig/work/mnt/ /proc/self/mountinfo || true'"])
}

fn alive(pid: u32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat")).is_ok_and(|s| !s.contains(") Z "))
}

#[test]
#[ignore = "needs the simulated lab (ci/test.sh)"]
fn an_agent_killed_mid_visit_leaves_a_journal_the_next_start_undoes_and_says_so() {
    let _lab = uses(&[Hdd]);
    let b = Bench::new();
    let before = hdd0_read_ahead_kb();
    let (child, agent) = mid_visit(&b, 57, "killed", &[]);
    assert!(benchrig_mounts_on_hdd().contains("/work/mnt/hdd0"), "the cell's filesystem is mounted");
    // The agent and its orchestrator at once (a run that is still there
    // reconnects, and its new agent's start does what `cleanup`'s does below).
    sh(&format!("kill -9 {} {agent}", child.id()));
    let out = child.wait_with_output().unwrap();
    eprintln!("{}", stderr(&out));
    // What OOM or kill -9 leaves: the setting and the mount.
    assert_eq!(hdd0_read_ahead_kb(), 16, "the killed agent restored nothing");
    assert!(benchrig_mounts_on_hdd().contains("/work/mnt/hdd0"), "the killed agent unmounted nothing");

    // The killed run's lease holds hdd until it lapses; a person who knows
    // the run is dead lets it go (cleanup refuses a held host, as it says).
    assert_eq!(stdout(&b.run(&["lab", "release", "hdd"])).trim(), "hdd: released");
    // The next agent to start on hdd (here `cleanup`'s) undoes both, newest first, and says so.
    let inv = lab_inventory();
    let out = b.run(&["cleanup", "-i", inv.to_str().unwrap(), "-l", "hdd"]);
    let said = stdout(&out);
    eprintln!("{said}\n{}", stderr(&out));
    assert_eq!(out.status.code(), Some(0));
    assert_eq!(hdd0_read_ahead_kb(), before, "restored by the next start");
    assert_eq!(benchrig_mounts_on_hdd(), "", "unmounted by the next start");
    let unmounted = said.find("unmounted /").unwrap_or_else(|| panic!("the unmount is said: {said}"));
    let restored =
        said.find("restored read_ahead_kb of ").unwrap_or_else(|| panic!("the restored setting is said: {said}"));
    assert!(said[restored..].contains(&format!("= {before} (was 16) (left by agent pid {agent})")), "{said}");
    assert!(unmounted < restored, "newest first: the mount came after the tuning: {said}");
    // Said once: the journal is gone with what it held.
    let again = stdout(&b.run(&["cleanup", "-i", inv.to_str().unwrap(), "-l", "hdd"]));
    assert!(!again.contains("restored") && !again.contains("left by agent"), "{again}");
}

#[test]
#[ignore = "needs the simulated lab (ci/test.sh)"]
fn an_agent_cut_off_by_a_dead_link_releases_everything_and_exits_on_its_own() {
    let _lab = uses(&[Hdd]);
    let b = Bench::new();
    let before = hdd0_read_ahead_kb();
    let (child, agent) = mid_visit(&b, 56, "cut", &[]);
    // The link dies without a word: no FIN, no RST, the TCP connection half-open.
    sh("ip link set vbr-hdd down");
    let cut = Instant::now();
    let _up = scopeguard(|| {
        let _ = std::process::Command::new("ip").args(["link", "set", "vbr-hdd", "up"]).status();
    });
    let limit = Duration::from_millis(benchrig_wire::messages::ORCHESTRATOR_SILENCE_MS);
    while alive(agent) && cut.elapsed() < limit + Duration::from_secs(60) {
        std::thread::sleep(Duration::from_millis(200));
    }
    let took = cut.elapsed();
    let restored_then = hdd0_read_ahead_kb();
    sh("ip link set vbr-hdd up");
    // It has lost the host by now, or is about to: not what this test is about.
    sh(&format!("kill -9 {}", child.id()));
    let out = child.wait_with_output().unwrap();
    eprintln!("the agent exited {:.1} s after the link died\n{}", took.as_secs_f64(), stderr(&out));
    assert!(!alive(agent), "the agent was still running {} s after its link died", took.as_secs());
    // It waited for the silence (not a closed channel: none came), then released and went.
    assert!(took >= limit - Duration::from_secs(3), "exited after {took:?}, before the silence limit");
    assert!(took <= limit + Duration::from_secs(20), "exited {took:?} after the link died");
    assert_eq!(restored_then, before, "the agent restored the read-ahead before it exited");
    assert_eq!(benchrig_mounts_on_hdd(), "", "the agent unmounted its filesystem before it exited");
}

#[test]
#[ignore = "needs the simulated lab (ci/test.sh)"]
fn a_run_whose_lease_is_gone_stops_touching_the_host_and_cleanup_refuses_a_held_one() {
    let _lab = uses(&[Hdd]);
    let b = Bench::new();
    let inv = lab_inventory();
    let before = hdd0_read_ahead_kb();
    // A short term: the run renews its leases every half second.
    let (child, agent) = mid_visit(&b, 55, "released", &["--lease-term", "3s"]);

    // The host is held: cleanup must not take the run's mount for a leftover.
    let out = b.run(&["cleanup", "-i", inv.to_str().unwrap(), "-l", "hdd"]);
    let err = stderr(&out);
    assert_ne!(out.status.code(), Some(0), "{err}");
    assert!(err.contains("host hdd is held by run ") && err.contains("nothing was touched"), "{err}");
    assert_eq!(hdd0_read_ahead_kb(), 16, "cleanup restored the running cell's tuning");
    assert!(benchrig_mounts_on_hdd().contains("/work/mnt/hdd0"), "cleanup unmounted the running cell's filesystem");

    // Released by hand (as for a run believed dead): the run lets go of hdd at once.
    let released = Instant::now();
    assert_eq!(stdout(&b.run(&["lab", "release", "hdd"])).trim(), "hdd: released");
    let out = child.wait_with_output().unwrap();
    let took = released.elapsed();
    eprintln!("the run ended {:.1} s after the release\n{}\n{}", took.as_secs_f64(), stdout(&out), stderr(&out));
    assert!(
        took < Duration::from_secs(30),
        "the step (55 s) was not stopped: the run ended {took:?} after the release"
    );
    let s = b.store();
    let cells = s.cells(s.resolve_run("released").unwrap().id).unwrap();
    assert_eq!(cells.len(), 1);
    assert_eq!(cells[0].status, CellStatus::Unreachable);
    let why = cells[0].reason.clone().unwrap_or_default();
    assert!(why.contains("host hdd unreachable: its lease was released"), "{why}");
    assert!(
        stdout(&out).contains("this run no longer touches it")
            || stderr(&out).contains("this run no longer touches it")
    );
    // Its agent, cut off, released what it had set up and went.
    let start = Instant::now();
    while alive(agent) && start.elapsed() < Duration::from_secs(20) {
        std::thread::sleep(Duration::from_millis(200));
    }
    assert!(!alive(agent), "the agent outlived its session");
    assert_eq!(hdd0_read_ahead_kb(), before);
    assert_eq!(benchrig_mounts_on_hdd(), "");
}
