//! A host's console during a boot (`benchrig_console`, run on the
//! controller), and what a cell keeps of it when the boot failed: the
//! panic line first, then the tail.

use serde_json::{json, Value as Json};
use std::collections::VecDeque;
use std::sync::{Arc, Mutex};

/// The console lines kept: the tail a person reads after a failed boot.
const CONSOLE_KEEP: usize = 200;

/// The console's worst line: a panic, an oops, a BUG.
pub fn panic_line(lines: &[String]) -> Option<&str> {
    const MARKS: [&str; 6] =
        ["Kernel panic", "BUG:", "Oops", "Unable to mount root", "Gave up waiting for root", "Dropping to a shell"];
    lines.iter().map(String::as_str).find(|l| MARKS.iter().any(|m| l.contains(m)))
}

/// What a cell stores of a boot that failed: the panic line first, then
/// the console's tail.
pub fn console_info(why: &str, console: &[String]) -> serde_json::Map<String, Json> {
    let mut m = serde_json::Map::new();
    m.insert("not_booted".into(), why.into());
    if let Some(p) = panic_line(console) {
        m.insert("panic".into(), p.into());
    }
    let tail: Vec<&String> = console.iter().rev().take(60).collect::<Vec<_>>().into_iter().rev().collect();
    m.insert("console".into(), json!(tail));
    m
}

/// The host's console for the length of a boot: `benchrig_console` run on
/// the controller, its output kept (the last `CONSOLE_KEEP` lines).
pub struct Console {
    lines: Arc<Mutex<VecDeque<String>>>,
    task: Option<tokio::task::JoinHandle<()>>,
}

impl Console {
    pub fn start(cmd: Option<&str>) -> Console {
        let lines: Arc<Mutex<VecDeque<String>>> = Default::default();
        let task = cmd.map(|cmd| {
            let (cmd, lines) = (cmd.to_string(), lines.clone());
            tokio::spawn(async move {
                use tokio::io::AsyncBufReadExt;
                let child = tokio::process::Command::new("/bin/sh")
                    .args(["-c", &cmd])
                    .stdin(std::process::Stdio::null())
                    .stdout(std::process::Stdio::piped())
                    .stderr(std::process::Stdio::null())
                    .kill_on_drop(true)
                    .spawn();
                let Ok(mut child) = child else { return };
                let Some(out) = child.stdout.take() else { return };
                let mut reader = tokio::io::BufReader::new(out).lines();
                while let Ok(Some(line)) = reader.next_line().await {
                    let clean: String = line.chars().filter(|c| !c.is_control() || *c == '\t').collect();
                    let mut l = lines.lock().unwrap_or_else(|e| e.into_inner());
                    if l.len() == CONSOLE_KEEP {
                        l.pop_front();
                    }
                    l.push_back(clean);
                }
                let _ = child.wait().await;
            })
        });
        Console { lines, task }
    }

    /// Stop the console command; the lines it gave.
    pub fn stop(mut self) -> Vec<String> {
        if let Some(t) = self.task.take() {
            t.abort();
        }
        self.lines.lock().unwrap_or_else(|e| e.into_inner()).iter().cloned().collect()
    }
}

impl Drop for Console {
    fn drop(&mut self) {
        if let Some(t) = self.task.take() {
            t.abort();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_panic_line_comes_first_and_the_console_tail_is_kept() {
        let console: Vec<String> = [
            "[    0.9] VFS: Cannot open root device",
            "[    1.0] Kernel panic - not syncing: VFS: Unable to mount root fs",
            "[    1.1] ---[ end Kernel panic",
        ]
        .map(String::from)
        .to_vec();
        let info = console_info("no SSH", &console);
        assert_eq!(info["panic"], "[    1.0] Kernel panic - not syncing: VFS: Unable to mount root fs");
        assert_eq!(info["console"].as_array().unwrap().len(), 3);
    }
}
