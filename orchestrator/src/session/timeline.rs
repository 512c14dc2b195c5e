//! Where a host's start-up time went: named marks since the session began,
//! logged at `-vv` so a slow host shows which stage it was slow in.

use std::time::{Duration, Instant};

#[derive(Clone, Debug)]
pub struct Timeline {
    start: Instant,
    last: Instant,
    stages: Vec<(&'static str, Duration)>,
}

impl Timeline {
    pub fn start() -> Timeline {
        let now = Instant::now();
        Timeline { start: now, last: now, stages: Vec::new() }
    }

    /// The stage that just ended, and how long it took since the previous mark.
    pub fn mark(&mut self, stage: &'static str) {
        let now = Instant::now();
        self.stages.push((stage, now - self.last));
        self.last = now;
    }

    pub fn elapsed(&self) -> Duration {
        self.start.elapsed()
    }

    /// "master 312 ms, probe 15 ms, ..." and the total.
    pub fn describe(&self) -> String {
        let parts: Vec<String> =
            self.stages.iter().map(|(s, d)| format!("{s} {:.0} ms", d.as_secs_f64() * 1e3)).collect();
        let total = self.last - self.start;
        format!("{} (total {:.0} ms)", parts.join(", "), total.as_secs_f64() * 1e3)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stages_add_up_to_the_total() {
        let mut t = Timeline::start();
        std::thread::sleep(Duration::from_millis(5));
        t.mark("one");
        t.mark("two");
        let sum: Duration = t.stages.iter().map(|(_, d)| *d).sum();
        assert_eq!(sum, t.last - t.start);
        let text = t.describe();
        assert!(text.starts_with("one ") && text.contains(", two ") && text.contains("total"), "{text}");
    }
}
