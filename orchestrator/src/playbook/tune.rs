//! A play's `tune:`: kernel settings for each visit (see `actions::tune`
//! in the agent). Keys and literal values are checked when the playbook is
//! parsed, a templated value once rendered for its cell, each error at the
//! value's file:line:column.

use super::keys;
use crate::diagnostic::{did_you_mean, ConfigError};
use crate::template::Templates;
use crate::yaml::{unknown_key, Node};
use benchrig_wire::steps::TuneArgs;
use serde_json::Value as Json;

/// `tune:` checked: a mapping of known keys whose literal values are valid.
pub fn check(v: &Node) -> Result<Node, ConfigError> {
    for (k, val) in v.expect_map("`tune`")? {
        let key = k.expect_str("a `tune` key")?;
        if !keys::has(keys::TUNE, key) {
            return Err(unknown_key(k, "`tune`", &keys::names(keys::TUNE)));
        }
        if key == "sysctl" {
            for (name, value) in val.expect_map("`tune.sysctl`")? {
                let n = name.expect_str("a sysctl name")?;
                TuneArgs::check_sysctl_name(n).map_err(|e| name.error(e))?;
                if !is_template(&value.to_json()) {
                    sysctl_value(n, &value.to_json()).map_err(|e| value.error(e))?;
                }
            }
        } else if !is_template(&val.to_json()) {
            check_value(key, &val.to_json()).map_err(|e| {
                let hint = val.as_str().and_then(|s| match key {
                    "thp" => Some(did_you_mean(s.split('/').next().unwrap_or(s), benchrig_wire::steps::THP_ENABLED)),
                    _ => None,
                });
                let e = val.error(e);
                match hint {
                    Some(h) => e.with_hint(h),
                    None => e,
                }
            })?;
        }
    }
    Ok(v.clone())
}

fn is_template(v: &Json) -> bool {
    match v {
        Json::String(s) => Templates::is_template(s),
        Json::Object(m) => m.values().any(is_template),
        _ => false,
    }
}

/// One setting's value as the agent takes it.
fn check_value(key: &str, v: &Json) -> Result<(), String> {
    let word = |s: &str| !s.is_empty() && s.chars().all(|c| c.is_ascii_alphanumeric() || "_-+".contains(c));
    match key {
        "governor" | "scheduler" => match v.as_str() {
            Some(s) if word(s) => Ok(()),
            _ => Err(format!("`tune.{key}` is one word, as the kernel lists them (`performance`, `mq-deadline`)")),
        },
        "boost" => v.as_bool().map(|_| ()).ok_or_else(|| "`tune.boost` is true or false".to_string()),
        "thp" => match v.as_str() {
            Some(s) => TuneArgs::thp_parts(s).map(|_| ()).map_err(|e| format!("`tune.thp`: {e}")),
            None => Err("`tune.thp` is `enabled` or `enabled/defrag` (`madvise/defer`)".into()),
        },
        "read_ahead_kb" | "nr_requests" => match v.as_u64() {
            Some(n) if key == "read_ahead_kb" || n > 0 => Ok(()),
            _ => Err(format!("`tune.{key}` is a whole number{}", if key == "nr_requests" { " above 0" } else { "" })),
        },
        "swappiness" => match v.as_u64() {
            Some(n) if n <= 200 => Ok(()),
            _ => Err("`tune.swappiness` is a whole number from 0 to 200".into()),
        },
        _ => Err(format!("unknown key `{key}` in `tune`")),
    }
}

/// A sysctl's value as /proc/sys takes it: a number or a string.
fn sysctl_value(name: &str, v: &Json) -> Result<String, String> {
    match v {
        Json::String(s) if !s.contains('\n') => Ok(s.clone()),
        Json::Number(n) => Ok(n.to_string()),
        _ => Err(format!("sysctl `{name}` takes a number or a one-line string")),
    }
}

/// `tune:` rendered for one host of a cell, its queue settings for `devices`.
pub fn render(node: &Node, ctx: &Json, t: &Templates, devices: Vec<String>) -> Result<TuneArgs, ConfigError> {
    let v = t.render(&node.to_json(), ctx).map_err(|e| e.at(&node.loc))?;
    let at = |key: &str| node.get(key).map_or(&node.loc, |n| &n.loc).clone();
    let mut m = v.as_object().cloned().unwrap_or_default();
    for (k, val) in m.iter_mut() {
        if k == "sysctl" {
            for (name, value) in val.as_object_mut().into_iter().flatten() {
                let s = sysctl_value(name, value).map_err(|e| ConfigError::at(&at(k), e))?;
                *value = Json::String(s);
            }
        } else {
            check_value(k, val).map_err(|e| ConfigError::at(&at(k), e))?;
        }
    }
    m.insert("devices".into(), devices.into());
    serde_json::from_value(Json::Object(m)).map_err(|e| ConfigError::at(&node.loc, format!("`tune`: {e}")))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tune(text: &str) -> Result<Node, ConfigError> {
        let n = crate::yaml::parse_str("p.yml", text).unwrap();
        check(n.get("tune").unwrap())
    }

    #[test]
    fn unknown_keys_and_bad_values_are_located() {
        let e = tune("tune:\n  read_ahead: 16\n").unwrap_err();
        assert_eq!((e.line, e.col), (2, 3));
        assert!(e.message.contains("unknown key `read_ahead` in `tune`"), "{e}");
        assert_eq!(e.hint.as_deref(), Some("did you mean `read_ahead_kb`?"));
        let e = tune("tune:\n  swappiness: 300\n").unwrap_err();
        assert_eq!((e.line, e.col, e.message.as_str()), (2, 15, "`tune.swappiness` is a whole number from 0 to 200"));
        let e = tune("tune:\n  thp: sometimes\n").unwrap_err();
        assert!(e.message.contains("thp `sometimes` is one of always, madvise, never"), "{e}");
        let e = tune("tune:\n  thp: madvise/lazy\n").unwrap_err();
        assert!(e.message.contains("defrag `lazy`"), "{e}");
        let e = tune("tune:\n  boost: maybe\n").unwrap_err();
        assert_eq!(e.message, "`tune.boost` is true or false");
        let e = tune("tune:\n  sysctl:\n    ../../etc/passwd: 1\n").unwrap_err();
        assert_eq!((e.line, e.col), (3, 5));
        let e = tune("tune:\n  sysctl:\n    vm.dirty_ratio: [1]\n").unwrap_err();
        assert!(e.message.contains("takes a number"), "{e}");
        let e = tune("tune: fast\n").unwrap_err();
        assert_eq!((e.line, e.col), (1, 7));
        tune("tune:\n  governor: performance\n  boost: false\n  thp: never/defer\n  read_ahead_kb: 16\n  nr_requests: 64\n  swappiness: 1\n  scheduler: none\n  sysctl: {vm.dirty_ratio: 10, kernel.sched_autogroup_enabled: '0'}\n").unwrap();
    }

    #[test]
    fn a_templated_value_is_checked_once_rendered() {
        let node = tune("tune:\n  read_ahead_kb: \"{{ ra }}\"\n  sysctl: {vm.dirty_ratio: \"{{ dr }}\"}\n").unwrap();
        let t = Templates::default();
        let a = render(&node, &serde_json::json!({"ra": 16, "dr": 5}), &t, vec!["hdd0".into()]).unwrap();
        assert_eq!(a.read_ahead_kb, Some(16));
        assert_eq!(a.sysctl.get("vm.dirty_ratio").map(String::as_str), Some("5"));
        assert_eq!(a.devices, ["hdd0"]);
        let e = render(&node, &serde_json::json!({"ra": "lots", "dr": 5}), &t, vec![]).unwrap_err();
        assert_eq!((e.line, e.col, e.message.as_str()), (2, 18, "`tune.read_ahead_kb` is a whole number"));
    }
}
