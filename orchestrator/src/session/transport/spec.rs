//! Ansible's connection variables, read from a host's merged vars.

use crate::inventory::Vars;
use serde_json::Value as Json;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ConnectionKind {
    Ssh,
    Local,
}

#[derive(Clone, Debug, PartialEq)]
pub struct ConnectionSpec {
    pub kind: ConnectionKind,
    /// `ansible_host`, or the inventory name.
    pub address: String,
    pub port: Option<u16>,
    pub user: Option<String>,
    pub private_key: Option<String>,
    /// `ansible_ssh_common_args` then `ansible_ssh_extra_args`, shell-split.
    pub ssh_args: Vec<String>,
    /// Ansible checks host keys unless told not to.
    pub host_key_checking: bool,
    /// `ansible_become`: run the agent as this user (through `sudo -n`).
    pub become_user: Option<String>,
    pub connect_timeout_s: u64,
    /// `ansible_ssh_retries`: how many more times an unreachable host is
    /// tried, with backoff ([`DEFAULT_RETRIES`] unless the host says).
    pub retries: u32,
}

/// Connection attempts after the first, when a host does not answer: a lab
/// machine rebooting or a switch flapping is worth a few seconds. (Ansible's
/// own default is 0; a night's run is worth more than an ad-hoc command.)
pub const DEFAULT_RETRIES: u32 = 2;

fn get<'a>(vars: &'a Vars, names: &[&str]) -> Option<&'a Json> {
    names.iter().find_map(|n| vars.get(*n)).filter(|v| !v.is_null())
}

fn text(v: &Json) -> String {
    match v {
        Json::String(s) => s.clone(),
        other => other.to_string(),
    }
}

/// Ansible's truthiness for booleans written as strings (`no`, `False`, `0`).
pub fn truthy(v: &Json) -> bool {
    match v {
        Json::Bool(b) => *b,
        Json::Number(n) => n.as_f64() != Some(0.0),
        Json::String(s) => matches!(s.trim().to_ascii_lowercase().as_str(), "yes" | "y" | "true" | "t" | "on" | "1"),
        _ => false,
    }
}

impl ConnectionSpec {
    pub fn from_vars(host: &str, vars: &Vars) -> Result<Self, String> {
        let kind = match get(vars, &["ansible_connection"]).map(text).as_deref() {
            None | Some("ssh") | Some("smart") | Some("paramiko") => ConnectionKind::Ssh,
            Some("local") => ConnectionKind::Local,
            Some(other) => {
                return Err(format!("host `{host}`: ansible_connection `{other}` is not supported (ssh or local)"))
            }
        };
        let port = match get(vars, &["ansible_port", "ansible_ssh_port"]) {
            None => None,
            Some(v) => Some(
                text(v)
                    .parse::<u16>()
                    .map_err(|_| format!("host `{host}`: ansible_port `{}` is not a port", text(v)))?,
            ),
        };
        let mut ssh_args = Vec::new();
        for name in ["ansible_ssh_common_args", "ansible_ssh_extra_args"] {
            if let Some(v) = get(vars, &[name]) {
                let s = text(v);
                ssh_args
                    .extend(shlex::split(&s).ok_or_else(|| format!("host `{host}`: {name} has unbalanced quotes"))?);
            }
        }
        let env_check = std::env::var("ANSIBLE_HOST_KEY_CHECKING").ok().map(Json::String);
        let host_key_checking = get(vars, &["ansible_host_key_checking", "ansible_ssh_host_key_checking"])
            .or(env_check.as_ref())
            .map(truthy)
            .unwrap_or(true);
        let become_user = get(vars, &["ansible_become"])
            .filter(|v| truthy(v))
            .map(|_| get(vars, &["ansible_become_user"]).map(text).unwrap_or_else(|| "root".into()));
        let connect_timeout_s = get(vars, &["ansible_timeout"]).and_then(|v| text(v).parse().ok()).unwrap_or(10);
        let retries = match get(vars, &["ansible_ssh_retries"]) {
            None => DEFAULT_RETRIES,
            Some(v) => text(v)
                .parse()
                .map_err(|_| format!("host `{host}`: ansible_ssh_retries must be a count, not `{}`", text(v)))?,
        };
        Ok(ConnectionSpec {
            kind,
            address: get(vars, &["ansible_host", "ansible_ssh_host"]).map(text).unwrap_or_else(|| host.to_string()),
            port,
            user: get(vars, &["ansible_user", "ansible_ssh_user"]).map(text),
            private_key: get(vars, &["ansible_ssh_private_key_file", "ansible_private_key_file"]).map(text),
            ssh_args,
            host_key_checking,
            become_user,
            connect_timeout_s,
            retries,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn ansible_variables_map_to_ssh_options() {
        let vars: Vars = json!({
            "ansible_host": "10.0.0.5", "ansible_port": "2222", "ansible_user": "lab",
            "ansible_ssh_private_key_file": "~/.ssh/lab",
            "ansible_ssh_common_args": "-o ProxyJump=bastion -o 'UserKnownHostsFile=/x y'",
            "ansible_ssh_extra_args": "-C", "ansible_host_key_checking": "False",
            "ansible_become": "yes"
        })
        .as_object()
        .unwrap()
        .clone();
        let s = ConnectionSpec::from_vars("n1", &vars).unwrap();
        assert_eq!(s.kind, ConnectionKind::Ssh);
        assert_eq!((s.address.as_str(), s.port, s.user.as_deref()), ("10.0.0.5", Some(2222), Some("lab")));
        assert_eq!(s.ssh_args, ["-o", "ProxyJump=bastion", "-o", "UserKnownHostsFile=/x y", "-C"]);
        assert!(!s.host_key_checking);
        assert_eq!(s.become_user.as_deref(), Some("root"));
    }

    #[test]
    fn defaults_and_errors() {
        let s = ConnectionSpec::from_vars("n1", &Vars::new()).unwrap();
        assert_eq!((s.address.as_str(), s.port, s.host_key_checking), ("n1", None, true));
        let bad: Vars = json!({"ansible_connection": "winrm"}).as_object().unwrap().clone();
        assert!(ConnectionSpec::from_vars("w", &bad).unwrap_err().contains("winrm"));
        let bad: Vars = json!({"ansible_port": "ssh"}).as_object().unwrap().clone();
        assert!(ConnectionSpec::from_vars("w", &bad).is_err());
        assert_eq!(s.retries, DEFAULT_RETRIES);
        let none: Vars = json!({"ansible_ssh_retries": "0"}).as_object().unwrap().clone();
        assert_eq!(ConnectionSpec::from_vars("w", &none).unwrap().retries, 0);
        let bad: Vars = json!({"ansible_ssh_retries": "many"}).as_object().unwrap().clone();
        assert!(ConnectionSpec::from_vars("w", &bad).unwrap_err().contains("ansible_ssh_retries must be a count"));
    }
}
