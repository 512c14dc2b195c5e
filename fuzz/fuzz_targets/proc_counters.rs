//! The monitor's /proc files: the first byte picks the parser, the rest is
//! the file (`w` /proc/swaps, `d` /proc/diskstats, then `DiskFigures::between`
//! on each disk, `s` /proc/stat, `m` /proc/meminfo, `v` /proc/vmstat, `p`
//! /proc/pressure/*; any other byte: all of them on the rest, as
//! `proc_files_parse_or_are_left_out` in
//! node-agent/tests/fuzz_host_parsers.rs does). The seeds are this
//! machine's files behind their letter.
#![no_main]

use benchrig_agent::monitor::{cpu, diskstats, meminfo, pressure, vmstat};
use benchrig_agent::sysfs;
use libfuzzer_sys::fuzz_target;

fn diskstats(text: &str) {
    let stats = diskstats::parse(text);
    for (_, s) in &stats {
        let _ = diskstats::DiskFigures::between(s, s, 0.0);
    }
    // Two readings of one file: a counter may go down (a wrap, a device
    // replaced under the same name) or jump.
    for pair in stats.windows(2) {
        let _ = diskstats::DiskFigures::between(&pair[0].1, &pair[1].1, 1.0);
        let _ = diskstats::DiskFigures::between(&pair[1].1, &pair[0].1, 0.5);
    }
}

fuzz_target!(|data: &[u8]| {
    if data.len() > 64 << 10 {
        return;
    }
    let Some((&which, rest)) = data.split_first() else { return };
    let text = String::from_utf8_lossy(rest);
    match which {
        b'w' => drop(sysfs::parse_swaps(&text)),
        b'd' => diskstats(&text),
        b's' => drop(cpu::CpuTimes::parse(&text)),
        b'm' => drop(meminfo::Memory::parse(&text)),
        b'v' => drop(vmstat::Vm::parse(&text)),
        b'p' => drop(pressure::Stall::parse(&text)),
        _ => {
            let _ = sysfs::parse_mountinfo(&text);
            let _ = sysfs::parse_swaps(&text);
            diskstats(&text);
            let _ = cpu::CpuTimes::parse(&text);
            let _ = meminfo::Memory::parse(&text);
            let _ = vmstat::Vm::parse(&text);
            let _ = pressure::Stall::parse(&text);
        }
    }
});
