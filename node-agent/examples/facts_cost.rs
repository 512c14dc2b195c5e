//! What gathering facts costs on this host: `cargo run --release -p
//! benchrig-agent --example facts_cost -- [rounds]` gathers them `rounds`
//! times (200 by default) and prints the mean wall and CPU time of one.
use benchrig_agent::{facts, sysfs::SysView};
use benchrig_wire::facts::AgentInfo;
use std::time::Instant;

fn cpu_s() -> f64 {
    let u = rustix::time::clock_gettime(rustix::time::ClockId::ProcessCPUTime);
    u.tv_sec as f64 + u.tv_nsec as f64 / 1e9
}

fn main() {
    let rounds: u32 = std::env::args().nth(1).and_then(|a| a.parse().ok()).unwrap_or(200);
    let view = SysView::real();
    let agent = AgentInfo { version: String::new(), sha256: String::new(), protocol: 0, build: String::new() };
    let (wall, cpu) = (Instant::now(), cpu_s());
    for _ in 0..rounds {
        std::hint::black_box(facts::gather(&view, agent.clone()));
    }
    let n = f64::from(rounds);
    println!(
        "facts: {rounds} gathers, {:.2} ms wall and {:.2} ms CPU each",
        wall.elapsed().as_secs_f64() * 1e3 / n,
        (cpu_s() - cpu) * 1e3 / n
    );
}
