//! What a cell's info says that a reader must see beside its numbers: the
//! kernel settings `tune` applied on each host (with the values they
//! replaced), and the kernel log lines the agent flagged during its visits
//! (in the info of each visit's release). Every report reads them here.

use benchrig_wire::kernel_log::{KernelLog, KernelLogLine};
use serde_json::Value as Json;

/// The host a cell-info key names ("setup[0] tune@hdd" → hdd).
fn host_of(key: &str) -> &str {
    key.rsplit_once('@').map_or("?", |(_, h)| h)
}

/// "hdd: read_ahead_kb of loop3 = 16 (was 128)", per setting tuned.
pub fn tuned(info: Option<&Json>) -> Vec<String> {
    let Some(info) = info.and_then(Json::as_object) else { return Vec::new() };
    let mut out = Vec::new();
    for (key, v) in info {
        for t in v.get("tune").and_then(Json::as_array).into_iter().flatten() {
            let s = |k: &str| t.get(k).and_then(Json::as_str).unwrap_or("?");
            let line = format!("{}: {} = {} (was {})", host_of(key), s("setting"), s("applied"), s("previous"));
            if !out.contains(&line) {
                out.push(line);
            }
        }
    }
    out
}

/// The flagged kernel log lines of every visit, with their host, once each.
pub fn kernel_log(info: Option<&Json>) -> Vec<(String, KernelLogLine)> {
    let Some(info) = info.and_then(Json::as_object) else { return Vec::new() };
    let mut out: Vec<(String, KernelLogLine)> = Vec::new();
    for (key, v) in info {
        let Some(log) = v.get("kernel_log").and_then(|l| serde_json::from_value::<KernelLog>(l.clone()).ok()) else {
            continue;
        };
        for line in log.lines {
            let host = host_of(key).to_string();
            if !out.iter().any(|(h, l)| *h == host && l.seq == line.seq) {
                out.push((host, line));
            }
        }
    }
    out
}

/// "hdd: I/O error: critical space allocation error, dev loop0, …".
pub fn kernel_log_text((host, line): &(String, KernelLogLine)) -> String {
    format!("{host}: {}: {}", line.kind.word(), line.text)
}

#[cfg(test)]
mod tests {
    use super::*;
    use benchrig_wire::kernel_log::KernelLogKind;
    use serde_json::json;

    #[test]
    fn tuning_and_flagged_lines_are_read_from_a_cells_info() {
        let info = json!({
            "setup[0] tune@hdd": {"tune": [{"setting": "read_ahead_kb of loop3", "path": "/sys/x", "previous": "128", "applied": "16"}]},
            "setup[1] filesystem@hdd": {"mkfs_command": "mkfs.ext4"},
            "teardown[0] release@hdd": {"released": [], "kernel_log": {"lines": [
                {"kind": "io_error", "usec": 5, "seq": 9, "text": "critical space allocation error, dev loop3, sector 8"}],
                "lost_records": 0}},
            "teardown[1] release@hdd": {"released": [], "kernel_log": {"lines": [], "lost_records": 0}},
        });
        assert_eq!(tuned(Some(&info)), ["hdd: read_ahead_kb of loop3 = 16 (was 128)"]);
        let log = kernel_log(Some(&info));
        assert_eq!(log.len(), 1);
        assert_eq!(log[0].1.kind, KernelLogKind::IoError);
        assert_eq!(kernel_log_text(&log[0]), "hdd: I/O error: critical space allocation error, dev loop3, sector 8");
        assert!(tuned(None).is_empty() && kernel_log(Some(&json!({"a@b": {"released": []}}))).is_empty());
    }
}
