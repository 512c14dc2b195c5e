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
    /// `ansible_become`: run the agent as another user, through sudo.
    pub become_: Option<Become>,
    pub connect_timeout_s: u64,
    /// `ansible_ssh_retries`: how many more times an unreachable host is
    /// tried, with backoff (`DEFAULT_RETRIES` unless the host says).
    pub retries: u32,
}

/// Connection attempts after the first, when a host does not answer: a lab
/// machine rebooting or a switch flapping is worth a few seconds. (Ansible's
/// own default is 0; a night's run is worth more than an ad-hoc command.)
pub const DEFAULT_RETRIES: u32 = 2;

/// Who the agent runs as when a host says `ansible_become`, and the password
/// sudo asks for, if it asks.
#[derive(Clone, Debug, PartialEq)]
pub struct Become {
    pub user: String,
    pub password: Option<Secret>,
}

/// A password: kept out of `Debug` (and so out of every log line that
/// prints a spec), written only to the remote shell's stdin.
#[derive(Clone, PartialEq)]
pub struct Secret(String);

impl Secret {
    pub fn new(s: impl Into<String>) -> Secret {
        Secret(s.into())
    }

    pub fn expose(&self) -> &str {
        &self.0
    }
}

impl std::fmt::Debug for Secret {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Secret(..)")
    }
}

/// Where a host's become password is, in the order Ansible looks.
const BECOME_PASSWORD_VARS: [&str; 3] = ["ansible_become_password", "ansible_become_pass", "ansible_sudo_pass"];

/// The variables that hold a password, as Ansible spells them: never
/// stored with a run (`redact`).
pub const SECRET_VARS: &[&str] =
    &["ansible_become_password", "ansible_become_pass", "ansible_sudo_pass", "ansible_password", "ansible_ssh_pass"];

/// `vars` without its password variables, for the store (a resumed run
/// takes them again from the inventory or `--ask-become-pass`).
pub fn redact(vars: &Vars) -> Vars {
    let mut out = vars.clone();
    out.retain(|k, _| !SECRET_VARS.contains(&k.as_str()));
    out
}

/// Connection settings from the command line, as ansible's `-u`,
/// `--private-key`, `-b`/`--become-user` and `-K`: defaults under a host's
/// own `ansible_*` variables, which win, as in Ansible.
#[derive(Clone, Default)]
pub struct ConnectionDefaults {
    pub user: Option<String>,
    pub private_key: Option<String>,
    /// `-b`: become this user (root unless `--become-user`).
    pub become_user: Option<String>,
    /// What `-K` read.
    pub become_password: Option<Secret>,
}

impl ConnectionDefaults {
    /// Fill in what the host's variables leave out.
    pub fn apply(&self, vars: &mut Vars) {
        let mut default = |names: &[&str], value: Option<&String>| {
            if let (Some(v), None) = (value, get(vars, names)) {
                vars.insert(names[0].into(), Json::String(v.clone()));
            }
        };
        default(&["ansible_user", "ansible_ssh_user"], self.user.as_ref());
        default(&["ansible_ssh_private_key_file", "ansible_private_key_file"], self.private_key.as_ref());
        if let Some(user) = &self.become_user {
            vars.entry("ansible_become").or_insert(true.into());
            vars.entry("ansible_become_user").or_insert_with(|| user.clone().into());
        }
        with_become_password(vars, self.become_password.as_ref());
    }
}

/// Give a host the password `--ask-become-pass` read, unless its own
/// variables name one (as in Ansible, the host's variable wins).
pub fn with_become_password(vars: &mut Vars, password: Option<&Secret>) {
    if let Some(p) = password {
        if !BECOME_PASSWORD_VARS.iter().any(|n| vars.contains_key(*n)) {
            vars.insert("ansible_become_password".into(), Json::String(p.expose().to_string()));
        }
    }
}

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
        let become_ = match get(vars, &["ansible_become"]).filter(|v| truthy(v)) {
            None => None,
            Some(_) => {
                // Only sudo: su wants its password at a terminal, and the
                // agent's stdin is its protocol channel.
                if let Some(m) = get(vars, &["ansible_become_method"]).map(text).filter(|m| m != "sudo") {
                    return Err(format!(
                        "host `{host}`: ansible_become_method `{m}` is not supported (benchrig becomes through sudo; \
                         set ansible_become_method: sudo or leave it out)"
                    ));
                }
                Some(Become {
                    user: get(vars, &["ansible_become_user"]).map(text).unwrap_or_else(|| "root".into()),
                    password: get(vars, &BECOME_PASSWORD_VARS).map(|v| Secret(text(v))),
                })
            }
        };
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
            become_,
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
        assert_eq!(s.become_, Some(Become { user: "root".into(), password: None }));
    }

    #[test]
    fn command_line_connection_settings_are_defaults_a_host_s_variables_override() {
        let cli = ConnectionDefaults {
            user: Some("bench".into()),
            private_key: Some("~/.ssh/lab".into()),
            become_user: Some("root".into()),
            become_password: Some(Secret::new("typed")),
        };
        let spec = |vars: serde_json::Value| {
            let mut vars = vars.as_object().unwrap().clone();
            cli.apply(&mut vars);
            ConnectionSpec::from_vars("h", &vars).unwrap()
        };
        let bare = spec(json!({}));
        assert_eq!((bare.user.as_deref(), bare.private_key.as_deref()), (Some("bench"), Some("~/.ssh/lab")));
        assert_eq!(bare.become_.as_ref().map(|b| b.user.as_str()), Some("root"));
        let own = spec(json!({"ansible_ssh_user": "lab", "ansible_private_key_file": "k", "ansible_become": false}));
        assert_eq!((own.user.as_deref(), own.private_key.as_deref()), (Some("lab"), Some("k")));
        assert!(own.become_.is_none(), "the host's ansible_become: false wins over -b");
        assert!(spec(json!({})).become_.unwrap().password.is_some_and(|p| p.expose() == "typed"));
    }

    #[test]
    fn become_takes_its_password_and_refuses_other_methods_by_name() {
        let vars = |extra: Json| {
            let mut v: Vars =
                json!({"ansible_become": true, "ansible_become_user": "bench"}).as_object().unwrap().clone();
            v.extend(extra.as_object().unwrap().clone());
            v
        };
        let s = ConnectionSpec::from_vars("n1", &vars(json!({"ansible_become_pass": "s3cret"}))).unwrap();
        let b = s.become_.unwrap();
        assert_eq!((b.user.as_str(), b.password.as_ref().map(Secret::expose)), ("bench", Some("s3cret")));
        assert!(!format!("{b:?}").contains("s3cret"), "a password never reaches Debug");
        let e = ConnectionSpec::from_vars("n1", &vars(json!({"ansible_become_method": "su"}))).unwrap_err();
        assert!(e.contains("host `n1`") && e.contains("ansible_become_method `su`"), "{e}");
        assert!(ConnectionSpec::from_vars("n1", &vars(json!({"ansible_become_method": "sudo"}))).is_ok());
        let off = ConnectionSpec::from_vars(
            "n1",
            &json!({"ansible_become": "no", "ansible_become_method": "su"}).as_object().unwrap().clone(),
        );
        assert_eq!(off.unwrap().become_, None, "the method of a become that is off does not matter");
        let r = redact(&vars(json!({"ansible_become_password": "s3cret", "size": "1G"})));
        assert_eq!((r.contains_key("ansible_become_password"), r["size"].as_str()), (false, Some("1G")));
        let mut asked = vars(json!({}));
        with_become_password(&mut asked, Some(&Secret::new("typed")));
        assert_eq!(asked["ansible_become_password"], "typed");
        let mut own = vars(json!({"ansible_become_pass": "own"}));
        with_become_password(&mut own, Some(&Secret::new("typed")));
        assert!(!own.contains_key("ansible_become_password"), "the host's own password wins");
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
