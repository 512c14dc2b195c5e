//! Which agent build a host gets, and the "no" below the floor, end to end:
//! the real binary and the real start script on this machine, made to look
//! like another with what the kernel offers for that. `setarch i686` makes
//! `uname -m` say i686 (and `--uname-2.6` a 2.6 kernel); a private mount
//! namespace with a file bound over /proc/cpuinfo gives another CPU's flags,
//! as lxcfs does in containers. The start script cannot tell the difference.
//! Root (mounts); ci/test.sh runs them with `--ignored`, with the agents built.

mod common;

use common::*;
use serde_json::Value as Json;
use std::path::Path;
use std::process::{Command, Output};

const PENTIUM_III: &str = "processor\t: 0\nvendor_id\t: GenuineIntel\ncpu family\t: 6\nmodel\t\t: 8\n\
    model name\t: Pentium III (Coppermine)\n\
    flags\t\t: fpu vme de pse tsc msr pae mce cx8 apic sep mtrr pge mca cmov pat pse36 mmx fxsr sse\n\n";
const I486: &str = "processor\t: 0\nvendor_id\t: GenuineIntel\ncpu family\t: 4\nmodel\t\t: 8\n\
    model name\t: 486 DX/4\nflags\t\t: fpu vme\n\n";

/// `benchrig ARGS` as a 32-bit x86 host with `cpuinfo` as its
/// /proc/cpuinfo (the real one when `None`), `setarch` given `personality`,
/// `home` as the agent user's home (where the agent would go).
fn as_host(b: &Bench, cpuinfo: Option<&str>, personality: &[&str], home: &Path, args: &[&str]) -> Output {
    require_root("a private mount namespace with a file bound over /proc/cpuinfo");
    let bind = match cpuinfo {
        Some(text) => {
            let f = b.write("cpuinfo", text);
            format!("mount --bind '{}' /proc/cpuinfo && ", f.display())
        }
        None => String::new(),
    };
    let out = Command::new("unshare")
        .args(["--mount", "--propagation", "private", "sh", "-c"])
        .arg(format!("{bind}exec setarch \"$@\""))
        .arg("sh")
        .args(personality)
        .arg(env!("CARGO_BIN_EXE_benchrig"))
        .args(args)
        .env("HOME", home)
        .env("BENCHRIG_DB", b.db())
        .current_dir(b.dir.path())
        .output()
        .unwrap();
    transcript(args, &out);
    out
}

#[test]
#[ignore = "needs root and the agents (ci/test.sh)"]
fn a_pentium_iii_gets_the_i586_agent_and_it_runs() {
    let b = Bench::new();
    let home = tempfile::tempdir().unwrap();
    let out = as_host(&b, Some(PENTIUM_III), &["i686"], home.path(), &["facts", "--json"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let facts: Json = serde_json::from_str(&stdout(&out)).unwrap();
    let f = &facts["localhost"];
    assert_eq!(f["arch"], "i686");
    assert_eq!(f["cpu"]["model"], "Pentium III (Coppermine)");
    assert_eq!(f["agent"]["build"], "i586-unknown-linux-musl", "{}", f["agent"]);
    // The human form says it too.
    let out = as_host(&b, Some(PENTIUM_III), &["i686"], home.path(), &["facts"]);
    assert!(stdout(&out).contains("agent: i586-unknown-linux-musl build"), "{}", stdout(&out));
    // And a CPU with SSE2 (this one) under the same 32-bit kernel, the i686 build.
    let out = as_host(&b, None, &["i686"], home.path(), &["facts", "--json"]);
    let facts: Json = serde_json::from_str(&stdout(&out)).unwrap();
    assert_eq!(facts["localhost"]["agent"]["build"], "i686-unknown-linux-musl");
}

/// A 486 and a 2.6 kernel are refused, naming why, as a failure of the
/// host (exit 2, not 4: it was reached), and nothing is uploaded.
#[test]
#[ignore = "needs root and the agents (ci/test.sh)"]
fn a_486_or_a_2_6_kernel_is_refused_before_anything_is_uploaded() {
    let b = Bench::new();
    for (cpuinfo, personality, says) in [
        (
            Some(I486),
            &["i686"][..],
            "this CPU (486 DX/4) cannot run the agent: it has no CMPXCHG8B (`cx8` in /proc/cpuinfo); \
             a 32-bit x86 host needs a Pentium or later",
        ),
        (None, &["i686", "--uname-2.6"][..], "older than 3.2, the oldest kernel the agent runs on"),
    ] {
        let home = tempfile::tempdir().unwrap();
        let out = as_host(&b, cpuinfo, personality, home.path(), &["facts"]);
        assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
        assert!(stderr(&out).contains(says), "{}", stderr(&out));
        assert!(!stderr(&out).contains("unreachable"), "{}", stderr(&out));
        assert_eq!(std::fs::read_dir(home.path()).unwrap().count(), 0, "something was put in the agent user's home");
    }
}

/// An agent killed by a signal mid-step fails its cell saying so: a
/// failure of the host (exit 2), not "unreachable" (exit 4).
#[test]
#[ignore = "needs root and the agents (ci/test.sh)"]
fn an_agent_killed_by_a_signal_fails_the_host_saying_which() {
    let b = Bench::new();
    let home = tempfile::tempdir().unwrap();
    // The step's shell is the agent's child: $PPID is the agent.
    let pb = b.write(
        "die.yml",
        "- name: the agent dies\n  hosts: all\n  benchmark:\n    - name: die\n      exec: { command: \"kill -ILL $PPID; sleep 5\" }\n",
    );
    let out = as_host(&b, None, &["x86_64"], home.path(), &["run", pb.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    let said = format!("{}{}", stdout(&out), stderr(&out));
    assert!(
        said.contains(
            "die: the agent died of SIGILL (illegal instruction): this CPU lacks an instruction its x86_64-unknown-linux-musl build uses"
        ),
        "{said}"
    );
    assert!(!said.contains("unreachable"), "{said}");
}
