//! `/proc/meminfo`: the dirty, writeback and page cache sizes, in kB.

#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Memory {
    pub dirty_kb: u64,
    pub writeback_kb: u64,
    pub cached_kb: u64,
}

impl Memory {
    /// `None` unless all three lines are there.
    pub fn parse(text: &str) -> Option<Memory> {
        let (mut dirty, mut writeback, mut cached) = (None, None, None);
        for l in text.lines() {
            let Some((key, rest)) = l.split_once(':') else { continue };
            let slot = match key {
                "Dirty" => &mut dirty,
                "Writeback" => &mut writeback,
                "Cached" => &mut cached,
                _ => continue,
            };
            *slot = rest.split_whitespace().next().and_then(|v| v.parse().ok());
        }
        Some(Memory { dirty_kb: dirty?, writeback_kb: writeback?, cached_kb: cached? })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_three_sizes_and_not_their_look_alikes() {
        let m = Memory::parse(
            "MemTotal:  100 kB\nCached:   2048 kB\nSwapCached: 9 kB\nDirty:  12 kB\nWritebackTmp: 7 kB\nWriteback: 3 kB\n",
        )
        .unwrap();
        assert_eq!(m, Memory { dirty_kb: 12, writeback_kb: 3, cached_kb: 2048 });
        assert_eq!(Memory::parse("Dirty: 1 kB\n"), None);
    }

    #[test]
    fn captured_snapshots() {
        for arch in ["x86_64-6.18", "i686-old"] {
            for n in 1..=2 {
                let p = format!("{}/tests/data/monitor/{arch}/meminfo.{n}", env!("CARGO_MANIFEST_DIR"));
                let m = Memory::parse(&std::fs::read_to_string(&p).unwrap()).unwrap_or_else(|| panic!("{p}"));
                assert!(m.cached_kb > 0, "{p}: {m:?}");
            }
        }
    }
}
