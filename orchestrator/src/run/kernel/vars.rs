//! A host's boot settings, from its variables as Ansible's `ansible_*`
//! are: `benchrig_boot_timeout`, `benchrig_power_cycle` and
//! `benchrig_console`. Checked for every host a play boots a kernel on
//! before any host is touched (`run::check`).

use crate::inventory::Vars;
use serde_json::Value as Json;
use std::time::Duration;

/// How long a host may take to come back when its inventory does not say
/// (`benchrig_boot_timeout`): old machines take minutes to POST.
pub const DEFAULT_BOOT_TIMEOUT: Duration = Duration::from_secs(300);

/// A host's boot settings from its variables.
#[derive(Clone, Debug, PartialEq)]
pub struct BootVars {
    pub timeout: Duration,
    /// A command run on the controller that power-cycles the host.
    pub power_cycle: Option<String>,
    /// A command run on the controller for each boot: the host's console.
    pub console: Option<String>,
}

impl BootVars {
    /// `benchrig_boot_timeout` (seconds), `benchrig_power_cycle` and
    /// `benchrig_console` (templates over the host's variables).
    pub fn of(host: &str, vars: &Vars, t: &crate::template::Templates) -> Result<BootVars, String> {
        let timeout = match vars.get("benchrig_boot_timeout") {
            None => DEFAULT_BOOT_TIMEOUT,
            Some(v) => {
                let secs = v.as_u64().or_else(|| v.as_str().and_then(|s| s.trim().parse().ok()));
                match secs {
                    Some(s) if s > 0 => Duration::from_secs(s),
                    _ => {
                        return Err(format!(
                            "host `{host}`: benchrig_boot_timeout is a number of seconds above 0, not `{v}`"
                        ))
                    }
                }
            }
        };
        let ctx = Json::Object(vars.clone());
        let command = |name: &str| -> Result<Option<String>, String> {
            let Some(v) = vars.get(name) else { return Ok(None) };
            let s = v.as_str().ok_or_else(|| format!("host `{host}`: {name} is a command (a string), not `{v}`"))?;
            let rendered = t.render_str(s, &ctx).map_err(|e| format!("host `{host}`: {name}: {e}"))?;
            let text = match rendered {
                Json::String(s) => s,
                other => other.to_string(),
            };
            Ok(Some(text).filter(|s| !s.trim().is_empty()))
        };
        Ok(BootVars { timeout, power_cycle: command("benchrig_power_cycle")?, console: command("benchrig_console")? })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn boot_settings_come_from_the_hosts_variables_templated() {
        let t = crate::template::Templates::default();
        let vars: Vars = json!({"bmc": "10.0.0.9", "benchrig_boot_timeout": "90",
            "benchrig_power_cycle": "ipmitool -H {{ bmc }} chassis power cycle"})
        .as_object()
        .unwrap()
        .clone();
        let b = BootVars::of("h", &vars, &t).unwrap();
        assert_eq!(b.timeout, Duration::from_secs(90));
        assert_eq!(b.power_cycle.as_deref(), Some("ipmitool -H 10.0.0.9 chassis power cycle"));
        assert_eq!(b.console, None);
        let bad: Vars = json!({"benchrig_boot_timeout": "soon"}).as_object().unwrap().clone();
        assert!(BootVars::of("h", &bad, &t).unwrap_err().contains("benchrig_boot_timeout is a number of seconds"));
        assert_eq!(BootVars::of("h", &Vars::new(), &t).unwrap().timeout, DEFAULT_BOOT_TIMEOUT);
    }
}
