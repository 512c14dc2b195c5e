//! What a reader must see beside a cell's numbers: the kernel settings
//! `tune` applied on each host (with the values they replaced, from the
//! cell's info), and the kernel log lines the agent flagged during its
//! visits (the `kernel_log` table). Every report reads them here.

use crate::store::KernelLogRow;
use benchrig_wire::kernel_log::KernelLogLine;
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

/// The flagged kernel log lines of cell `cell`, with their host.
pub fn kernel_log(rows: &[KernelLogRow], cell: i64) -> Vec<(String, KernelLogLine)> {
    rows.iter().filter(|r| r.cell_id == cell).map(|r| (r.host.clone(), r.line.clone())).collect()
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
    fn tuning_is_read_from_a_cells_info_and_the_log_by_cell() {
        let info = json!({
            "setup[0] tune@hdd": {"tune": [{"setting": "read_ahead_kb of loop3", "path": "/sys/x", "previous": "128", "applied": "16"}]},
            "setup[1] filesystem@hdd": {"mkfs_command": "mkfs.ext4"},
            "teardown[0] release@hdd": {"released": []},
        });
        assert_eq!(tuned(Some(&info)), ["hdd: read_ahead_kb of loop3 = 16 (was 128)"]);
        assert!(tuned(None).is_empty());
        let line = |text: &str| KernelLogLine { kind: KernelLogKind::IoError, usec: 5, seq: 9, text: text.into() };
        let rows = [
            KernelLogRow {
                cell_id: 1,
                host: "hdd".into(),
                line: line("critical space allocation error, dev loop3, sector 8"),
            },
            KernelLogRow {
                cell_id: 2,
                host: "old".into(),
                line: line("Buffer I/O error on dev loop4, logical block 0"),
            },
        ];
        let log = kernel_log(&rows, 1);
        assert_eq!(log.len(), 1);
        assert_eq!(kernel_log_text(&log[0]), "hdd: I/O error: critical space allocation error, dev loop3, sector 8");
        assert!(kernel_log(&rows, 3).is_empty());
    }
}
