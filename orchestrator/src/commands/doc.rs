//! `benchrig doc [NAME]`, as `ansible-doc`: a line for each action,
//! workload and play key; one action or workload in full; `play`, every
//! level of a playbook; `--format md`, the same as markdown (without NAME,
//! docs/reference.md). What it says comes from `playbook::reference`.

use crate::cli::{DocArgs, DocFormat};
use crate::diagnostic::did_you_mean;
use crate::exit_code;
use crate::playbook::{reference, reference_text as text};
use benchrig_wire::steps::ACTION_NAMES;

/// What NAME may be besides an action or a workload: every playbook key.
const KEYS: &str = "play";

#[derive(Debug, thiserror::Error)]
pub enum DocError {
    #[error("`{name}` is no action, workload, `{KEYS}` or `{}`: {hint}", reference::SCRATCH_DEVICES)]
    Unknown { name: String, hint: String },
}

pub fn run(args: DocArgs) -> anyhow::Result<i32> {
    out!("{}", page(args.name.as_deref(), args.format)?)?;
    Ok(exit_code::OK)
}

/// What `benchrig doc [NAME] [--format …]` prints.
pub fn page(name: Option<&str>, format: DocFormat) -> Result<String, DocError> {
    let md = format == DocFormat::Md;
    Ok(match name {
        None if md => text::markdown(&reference::levels(), &reference::actions(), &reference::sizes()),
        None => {
            let levels = reference::levels();
            let play = levels.iter().find(|l| l.name == KEYS).expect("`play` is a level");
            text::index(&reference::actions(), play)
        }
        Some(KEYS) if md => text::levels_md(&reference::levels()),
        Some(KEYS) => text::levels(&reference::levels()),
        Some(reference::SCRATCH_DEVICES) if md => text::levels_md(&[reference::scratch_devices()]),
        Some(reference::SCRATCH_DEVICES) => text::levels(&[reference::scratch_devices()]),
        Some(name) => {
            let Some(action) = reference::action(name) else {
                let candidates: Vec<&str> =
                    ACTION_NAMES.iter().copied().chain([KEYS, reference::SCRATCH_DEVICES]).collect();
                return Err(DocError::Unknown { name: name.into(), hint: did_you_mean(name, &candidates) });
            };
            if md {
                text::action_md(&action, &reference::sizes())
            } else {
                text::action(&action, &reference::sizes())
            }
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::playbook::keys;

    #[test]
    fn an_unknown_name_is_an_error_with_the_nearest_ones() {
        let e = page(Some("seq_reed"), DocFormat::Text).unwrap_err();
        assert_eq!(
            e.to_string(),
            "`seq_reed` is no action, workload, `play` or `scratch_devices`: did you mean `seq_read`?"
        );
        let e = page(Some("plya"), DocFormat::Md).unwrap_err();
        assert!(e.to_string().ends_with("did you mean `play`?"), "{e}");
    }

    #[test]
    fn scratch_devices_shows_every_field_the_inventory_entry_takes() {
        let text = page(Some(reference::SCRATCH_DEVICES), DocFormat::Text).unwrap();
        // The fields serde reads an entry into: a renamed or new one shows here.
        let entry: benchrig_wire::scratch::ScratchDevice =
            serde_json::from_value(serde_json::json!({"path": "/dev/x", "name": "d"})).unwrap();
        let fields =
            serde_json::to_value(benchrig_wire::scratch::ScratchDevice { serial: Some("s".into()), ..entry }).unwrap();
        for field in fields.as_object().unwrap().keys() {
            assert!(text.contains(&format!("\n  {field} ")), "`{field}` is missing:\n{text}");
        }
        assert!(text.contains("`image`: A file benchrig owns"), "{text}");
        assert!(page(Some(reference::SCRATCH_DEVICES), DocFormat::Md).unwrap().contains("| `wipe` | boolean |"));
    }

    #[test]
    fn the_index_names_every_action_workload_and_play_key() {
        let index = page(None, DocFormat::Text).unwrap();
        for name in ACTION_NAMES.iter().chain(&keys::names(keys::PLAY)) {
            assert!(index.lines().any(|l| l.split_whitespace().next() == Some(name)), "{name}: {index}");
        }
        let workloads = index.split("Workloads").nth(1).unwrap().split("Play keys").next().unwrap();
        assert!(workloads.contains("seq_read") && !workloads.contains("drop_caches"), "{workloads}");
    }

    #[test]
    fn play_shows_every_level_and_the_whole_reference_every_action() {
        let levels = page(Some("play"), DocFormat::Text).unwrap();
        for name in keys::names(keys::TUNE).into_iter().chain(keys::names(keys::STEP)) {
            assert!(levels.contains(&format!("  {name} ")), "{name}");
        }
        let md = page(None, DocFormat::Md).unwrap();
        for name in ACTION_NAMES {
            assert!(md.contains(&format!("### `{name}`\n")), "{name}");
        }
        assert!(md.contains("| `JOB.DIRECTION.clat_p99` | µs | lower |"), "fio's metrics");
        assert_eq!(
            page(Some("seq_read"), DocFormat::Md).unwrap(),
            text::action_md(&reference::action("seq_read").unwrap(), &reference::sizes())
        );
    }
}
