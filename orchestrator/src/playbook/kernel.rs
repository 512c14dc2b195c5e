//! A play's `kernel:`: the kernel its cells run under on each host, booted
//! once before them and left again after (`run::kernel`). Keys and literal
//! values are checked when the playbook is parsed; a templated value once
//! rendered for its cell (`render`), so the kernel can come from a host's
//! variables or its facts (`{{ facts.arch }}`).

use super::keys;
use crate::diagnostic::{did_you_mean, ConfigError};
use crate::template::Templates;
use crate::yaml::{unknown_key, Node};
use benchrig_wire::boot::BootMethod;
use serde_json::Value as Json;

/// `release: baseline`: the host's default kernel.
pub const BASELINE: &str = "baseline";

/// A play's kernel, rendered for one cell on one host.
#[derive(Clone, Debug, PartialEq, Eq, Hash, serde::Serialize)]
pub struct KernelSpec {
    /// A release as `uname -r` says it, or [`BASELINE`]; none: the one
    /// `package` installs.
    pub release: Option<String>,
    /// Words appended to the host's own command line.
    pub cmdline: String,
    pub boot: BootMethod,
    /// A kernel package on the controller, installed before the boot.
    pub package: Option<String>,
    /// Leave the package installed after the play.
    pub keep: bool,
}

impl KernelSpec {
    /// Whether the host runs this as it is, with no boot: its baseline,
    /// with nothing added to the command line.
    pub fn is_baseline(&self) -> bool {
        self.release.as_deref() == Some(BASELINE) && self.cmdline.is_empty() && self.package.is_none()
    }

    /// The kernel as a person names it: its release, or its package's file.
    pub fn name(&self) -> String {
        match (&self.release, &self.package) {
            (Some(r), _) => r.clone(),
            (None, Some(p)) => format!("from {}", p.rsplit('/').next().unwrap_or(p)),
            (None, None) => BASELINE.into(),
        }
    }

    /// `6.12.9+bpo-amd64 (kexec, + panic=10)`.
    pub fn describe(&self) -> String {
        let words = if self.cmdline.is_empty() { String::new() } else { format!(", + {}", self.cmdline) };
        let from = match (&self.release, &self.package) {
            (Some(_), Some(p)) => format!(", from {}", p.rsplit('/').next().unwrap_or(p)),
            _ => String::new(),
        };
        format!("{} ({}{words}{from})", self.name(), self.boot.as_str())
    }
}

/// `kernel:` checked: a mapping of known keys whose literal values are valid.
pub fn check(v: &Node) -> Result<Node, ConfigError> {
    let (mut saw_release, mut saw_package) = (false, false);
    for (k, val) in v.expect_map("`kernel`")? {
        let key = k.expect_str("a `kernel` key")?;
        if !keys::has(keys::KERNEL, key) {
            return Err(unknown_key(k, "`kernel`", &keys::names(keys::KERNEL)));
        }
        saw_release |= key == "release";
        saw_package |= key == "package";
        let json = val.to_json();
        if !is_template(&json) {
            check_value(key, &json).map_err(|e| {
                let e = val.error(e);
                match (key, val.as_str()) {
                    ("boot", Some(s)) => e.with_hint(did_you_mean(s, &BootMethod::NAMES)),
                    _ => e,
                }
            })?;
        }
    }
    if !saw_release && !saw_package {
        return Err(v.error(
            "`kernel` needs `release` (an installed kernel as `uname -r` names it, or `baseline`) or `package` (a .deb or .rpm to install)",
        ));
    }
    Ok(v.clone())
}

fn is_template(v: &Json) -> bool {
    matches!(v, Json::String(s) if Templates::is_template(s))
}

fn check_value(key: &str, v: &Json) -> Result<(), String> {
    match (key, v) {
        ("release", Json::String(s)) if release_ok(s) => Ok(()),
        ("release", _) => {
            Err("`kernel.release` is a kernel release as `uname -r` prints it (`6.12.9+bpo-amd64`), or `baseline`"
                .into())
        }
        ("cmdline", Json::String(s)) if !s.contains('\n') => Ok(()),
        ("cmdline", _) => Err("`kernel.cmdline` is one line of kernel parameters (`panic=10 mitigations=off`)".into()),
        ("boot", Json::String(s)) if BootMethod::from_name(s).is_some() => Ok(()),
        ("boot", _) => Err("`kernel.boot` is `kexec` or `reboot` (a one-shot boot entry)".into()),
        ("package", Json::String(s)) if !s.contains('\n') && (s.ends_with(".deb") || s.ends_with(".rpm")) => Ok(()),
        ("package", _) => {
            Err("`kernel.package` is the path of a kernel package on the controller: a .deb or an .rpm".into())
        }
        ("keep", Json::Bool(_)) => Ok(()),
        ("keep", _) => Err("`kernel.keep` is true or false".into()),
        _ => Err(format!("unknown key `{key}` in `kernel`")),
    }
}

/// A release names a file in /boot: no path, no space.
fn release_ok(s: &str) -> bool {
    !s.is_empty() && s.chars().all(|c| c.is_ascii_alphanumeric() || "._+-~".contains(c))
}

/// `kernel:` rendered for a cell (its host's variables, facts and the
/// cell's parameters in `ctx`).
pub fn render(node: &Node, ctx: &Json, t: &Templates) -> Result<KernelSpec, ConfigError> {
    let v = t.render(&node.to_json(), ctx).map_err(|e| e.at(&node.loc))?;
    let at = |key: &str| node.get(key).map_or(&node.loc, |n| &n.loc).clone();
    let text = |key: &str| -> Result<Option<String>, ConfigError> {
        match v.get(key) {
            None | Some(Json::Null) => Ok(None),
            Some(val) => {
                let val = match val {
                    Json::Number(n) => Json::String(n.to_string()),
                    other => other.clone(),
                };
                check_value(key, &val).map_err(|e| ConfigError::at(&at(key), e))?;
                Ok(val.as_str().map(str::to_string))
            }
        }
    };
    let package = text("package")?;
    let release = text("release")?.or_else(|| package.is_none().then(|| BASELINE.into()));
    let cmdline = text("cmdline")?.unwrap_or_default().split_whitespace().collect::<Vec<_>>().join(" ");
    let boot = text("boot")?.and_then(|b| BootMethod::from_name(&b)).unwrap_or(BootMethod::Reboot);
    let keep = match v.get("keep") {
        None | Some(Json::Null) => false,
        Some(Json::Bool(b)) => *b,
        Some(Json::String(s)) if matches!(s.as_str(), "true" | "True") => true,
        Some(Json::String(s)) if matches!(s.as_str(), "false" | "False" | "") => false,
        Some(other) => {
            return Err(ConfigError::at(&at("keep"), format!("`kernel.keep` is true or false, not {other}")))
        }
    };
    Ok(KernelSpec { release, cmdline, boot, package, keep })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn kernel(text: &str) -> Result<Node, ConfigError> {
        let n = crate::yaml::parse_str("p.yml", text).unwrap();
        check(n.get("kernel").unwrap())
    }

    #[test]
    fn unknown_keys_and_bad_values_are_located() {
        let e = kernel("kernel:\n  release: 6.1.0-28-amd64\n  boot: kexex\n").unwrap_err();
        assert_eq!((e.line, e.col), (3, 9));
        assert_eq!(e.hint.as_deref(), Some("did you mean `kexec`?"));
        let e = kernel("kernel:\n  release: ../vmlinuz\n").unwrap_err();
        assert_eq!((e.line, e.col), (2, 12));
        let e = kernel("kernel:\n  relase: x\n").unwrap_err();
        assert!(e.message.contains("unknown key `relase` in `kernel`"), "{e}");
        assert_eq!(e.hint.as_deref(), Some("did you mean `release`?"));
        let e = kernel("kernel:\n  boot: kexec\n").unwrap_err();
        assert!(e.message.contains("needs `release`"), "{e}");
        let e = kernel("kernel:\n  package: kernels/bzImage\n").unwrap_err();
        assert_eq!((e.line, e.col), (2, 12));
        let e = kernel("kernel:\n  package: k.deb\n  keep: yes please\n").unwrap_err();
        assert_eq!((e.line, e.col), (3, 9));
        kernel("kernel:\n  package: \"builds/{{ rev }}/linux-image.deb\"\n  keep: true\n").unwrap();
        kernel("kernel:\n  release: baseline\n  cmdline: panic=10\n  boot: reboot\n").unwrap();
    }

    #[test]
    fn a_templated_kernel_is_rendered_per_cell_and_checked_then() {
        let node =
            kernel("kernel:\n  release: \"{{ k }}\"\n  cmdline: \"{{ extra }}  quiet\"\n  boot: kexec\n").unwrap();
        let t = Templates::default();
        let spec = render(&node, &serde_json::json!({"k": "6.12.9+bpo-amd64", "extra": "panic=10"}), &t).unwrap();
        assert_eq!(
            spec,
            KernelSpec {
                release: Some("6.12.9+bpo-amd64".into()),
                cmdline: "panic=10 quiet".into(),
                boot: BootMethod::Kexec,
                package: None,
                keep: false,
            }
        );
        assert_eq!(spec.describe(), "6.12.9+bpo-amd64 (kexec, + panic=10 quiet)");
        let e = render(&node, &serde_json::json!({"k": "a b", "extra": ""}), &t).unwrap_err();
        assert_eq!((e.line, e.col), (2, 12));
        let base = render(&kernel("kernel: {release: baseline}\n").unwrap(), &serde_json::json!({}), &t).unwrap();
        assert!(base.is_baseline());
        assert_eq!(base.boot, BootMethod::Reboot);
        let pkg = kernel("kernel:\n  package: \"k/linux-image-{{ v }}_amd64.deb\"\n  boot: kexec\n").unwrap();
        let spec = render(&pkg, &serde_json::json!({"v": "6.12.12"}), &t).unwrap();
        assert_eq!((spec.release.as_deref(), spec.package.as_deref()), (None, Some("k/linux-image-6.12.12_amd64.deb")));
        assert_eq!(spec.describe(), "from linux-image-6.12.12_amd64.deb (kexec)");
        assert!(!spec.is_baseline() && !spec.keep);
        let e = render(&pkg, &serde_json::json!({"v": "6.12.12\n"}), &t).unwrap_err();
        assert_eq!((e.line, e.col), (2, 12));
    }
}
