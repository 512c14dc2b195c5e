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

/// The kernel a cell ran under, when its play named one (`kernel:`):
/// "6.12.9+bpo-amd64 by kexec in 38.2 s, sha256 1a2b3c4d5e6f, cmdline …";
/// for one that did not boot, the console's panic line.
pub fn kernel(info: Option<&Json>) -> Option<String> {
    let k = info?.get("kernel")?;
    let s = |key: &str| k.get(key).and_then(Json::as_str).unwrap_or_default();
    if let Some(why) = k.get("not_booted").and_then(Json::as_str) {
        return Some(match k.get("panic").and_then(Json::as_str) {
            Some(p) => format!("did not boot: {why}; console: {p}"),
            None => format!("did not boot: {why}"),
        });
    }
    let how = match (s("boot"), k.get("boot_seconds").and_then(Json::as_f64)) {
        ("none", _) | ("", _) => "as the host runs it".to_string(),
        (how, Some(secs)) => format!("by {how} in {secs:.1} s"),
        (how, None) => format!("by {how}"),
    };
    let sha = s("sha256").get(..12).unwrap_or_default().to_string();
    Some(format!("{} {how}, sha256 {sha}, cmdline {}", s("release"), s("cmdline")))
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
        assert_eq!(kernel(Some(&info)), None);
        let booted = json!({"kernel": {"release": "6.12.9", "boot": "kexec", "boot_seconds": 38.24,
            "sha256": "1a2b3c4d5e6f7a8b", "cmdline": "root=/dev/vda benchrig.boot=ab"}});
        assert_eq!(
            kernel(Some(&booted)).unwrap(),
            "6.12.9 by kexec in 38.2 s, sha256 1a2b3c4d5e6f, cmdline root=/dev/vda benchrig.boot=ab"
        );
        let failed = json!({"kernel": {"not_booted": "no SSH within 240 s", "panic": "Kernel panic - not syncing"}});
        assert_eq!(
            kernel(Some(&failed)).unwrap(),
            "did not boot: no SSH within 240 s; console: Kernel panic - not syncing"
        );
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
