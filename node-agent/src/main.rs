//! The `benchrig-agent` binary: `serve` (the framed protocol on
//! stdin/stdout, started by the orchestrator's start script, with
//! `--verified` when that script has checked its sha256), `--version`
//! and `--sha256`. Everything else is the library's.
//!
//! Before it serves, the protocol moves to a private descriptor and fd 1
//! points at stderr, so nothing but frames can reach the channel, not even
//! a child's output. SIGINT and SIGHUP are caught and do nothing
//! (`supervisor::outlive_interrupts`): the agent's life is tied to its
//! channel, not to a terminal.

use benchrig_agent::outbox::Outbox;
use benchrig_agent::{builds, named_sha256, self_sha256, session, sysfs::SysView};
use std::fs::File;
use std::io::BufWriter;

const USAGE: &str = "usage: benchrig-agent [serve [--verified] | --version | --sha256]

Speaks benchrig's framed protocol on stdin/stdout. It is started by
`benchrig` over SSH (or as a child for local hosts), not by hand.";

fn main() {
    let arg = std::env::args().nth(1);
    match arg.as_deref() {
        None | Some("serve") => serve(std::env::args().nth(2).as_deref() == Some("--verified")),
        Some("--version") => {
            println!("benchrig-agent {} (protocol {})", benchrig_wire::VERSION, benchrig_wire::PROTOCOL_VERSION)
        }
        Some("--sha256") => match self_sha256() {
            Ok(s) => println!("{s}"),
            Err(e) => fail(&format!("cannot read /proc/self/exe: {e}")),
        },
        Some("-h") | Some("--help") => println!("{USAGE}"),
        Some(other) => fail(&format!("unknown argument `{other}`\n{USAGE}")),
    }
}

/// `verified`: the start script has checked this file's content against
/// the sha256 its name carries (`benchrig_agent::named_sha256`).
fn serve(verified: bool) {
    // The agent's life is tied to its channel, not to a terminal: a Ctrl-C
    // meant for the orchestrator (or a hangup) must not kill it before it
    // has released its mounts. It ends when the channel closes.
    benchrig_agent::supervisor::outlive_interrupts();
    // Hashing ourselves again would cost as much as the script's check did.
    let named = named_sha256();
    let sha = named
        .clone()
        .filter(|_| verified)
        .map_or_else(self_sha256, Ok)
        .unwrap_or_else(|e| fail(&format!("cannot hash /proc/self/exe: {e}")));
    // Frames get a private descriptor; fd 1 becomes stderr, so a stray print
    // or a child that inherits stdout can never corrupt the channel.
    let proto = rustix::io::fcntl_dupfd_cloexec(rustix::stdio::stdout(), 3)
        .unwrap_or_else(|e| fail(&format!("cannot duplicate stdout: {e}")));
    rustix::stdio::dup2_stdout(rustix::stdio::stderr())
        .unwrap_or_else(|e| fail(&format!("cannot redirect stdout: {e}")));
    // Housekeeping in the dir of builds we came from (a build not under
    // its sha256's name was started by hand, from anywhere: none).
    if let (Some(own), Ok(exe)) = (&named, std::env::current_exe()) {
        if let Some(dir) = exe.parent() {
            builds::tidy(dir, own, verified, std::time::SystemTime::now(), builds::UNUSED_FOR);
        }
    }
    let out = Outbox::new(Box::new(BufWriter::new(File::from(proto))));
    session::serve(std::io::stdin(), out, SysView::real(), sha);
}

fn fail(msg: &str) -> ! {
    benchrig_agent::say!("benchrig-agent: {msg}");
    std::process::exit(2)
}
