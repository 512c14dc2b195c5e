//! The rules of a kernel boot, pure: what a kernel spec asks of a host
//! in its state (`decide`), and whether the host that came up is the boot
//! that was asked for (`verify`).

use crate::playbook::kernel::{KernelSpec, BASELINE};
use benchrig_wire::boot::{BootMethod, BootState};

/// What a kernel spec means on a host in its current state.
#[derive(Clone, Debug, PartialEq)]
pub enum Decision {
    /// The host runs it already: no boot.
    AsItIs,
    /// The host cannot (the reason says why); nothing was changed.
    Unsupported(String),
    /// Boot this release once, with these words appended.
    Boot { release: String, cmdline: String, method: BootMethod },
}

/// What `spec` asks of a host in `state` (pure); `installed`: the release
/// its `package` installed there.
pub fn decide(spec: &KernelSpec, installed: Option<&str>, state: &BootState) -> Decision {
    let release = match (spec.release.as_deref(), installed) {
        (Some(BASELINE), _) => state.release.clone(),
        (Some(asked), Some(got)) if asked != got => {
            return Decision::Unsupported(format!("the package installs kernel {got}, not {asked} (kernel.release)"))
        }
        (Some(asked), _) => asked.to_string(),
        (None, Some(got)) => got.to_string(),
        (None, None) => return Decision::Unsupported("no kernel was installed from the package".into()),
    };
    if release == state.release && spec.cmdline.is_empty() {
        return Decision::AsItIs;
    }
    let Some(means) = &state.means else {
        return Decision::Unsupported("the host did not say what it can boot with".into());
    };
    let why_not = match spec.boot {
        BootMethod::Kexec => &means.no_kexec,
        BootMethod::Reboot => &means.no_reboot,
    };
    if let Some(why) = why_not {
        return Decision::Unsupported(format!("cannot boot a kernel by {}: {why}", spec.boot.as_str()));
    }
    if state.kernel(&release).is_none() {
        let have: Vec<&str> = state.kernels.iter().map(|k| k.release.as_str()).collect();
        return Decision::Unsupported(format!(
            "kernel {release} is not installed (in /boot: {})",
            if have.is_empty() { "none".to_string() } else { have.join(", ") }
        ));
    }
    Decision::Boot { release, cmdline: spec.cmdline.clone(), method: spec.boot }
}

/// Whether the host that came up is the boot that was asked for: a new
/// boot, the release, our token; or why not.
pub fn verify(before_boot_id: &str, want_release: &str, token: Option<&str>, now: &BootState) -> Result<(), String> {
    if now.boot_id == before_boot_id {
        return Err("the host did not reboot (same boot id)".into());
    }
    if now.release != want_release {
        return Err(format!("the host came up on kernel {} instead of {want_release}", now.release));
    }
    match (token, now.token()) {
        (Some(t), Some(got)) if t == got => Ok(()),
        (Some(_), _) => Err(format!(
            "kernel {} came up without benchrig's token on its command line: not the boot asked for",
            now.release
        )),
        (None, Some(got)) => Err(format!("the host is still on benchrig's boot {got}, not its baseline")),
        (None, None) => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use benchrig_wire::boot::{BootMeans, InstalledKernel};

    fn state() -> BootState {
        let k = |r: &str| InstalledKernel {
            release: r.into(),
            image: format!("/boot/vmlinuz-{r}"),
            sha256: None,
            initrd: None,
        };
        BootState {
            boot_id: "b1".into(),
            release: "6.1.0-28-amd64".into(),
            cmdline: "root=/dev/vda ro".into(),
            kernels: vec![k("6.12.9+bpo-amd64"), k("6.1.0-28-amd64")],
            means: Some(BootMeans {
                no_kexec: Some("kexec is not installed on this host".into()),
                ..BootMeans::default()
            }),
            ..BootState::default()
        }
    }

    fn spec(release: &str, cmdline: &str, boot: BootMethod) -> KernelSpec {
        KernelSpec { release: Some(release.into()), cmdline: cmdline.into(), boot, package: None, keep: false }
    }

    fn decide_(spec: &KernelSpec, st: &BootState) -> Decision {
        decide(spec, None, st)
    }

    #[test]
    fn a_packages_kernel_is_the_one_it_installed_and_must_be_the_one_named() {
        let st = state();
        let mut pkg = spec("6.12.9+bpo-amd64", "", BootMethod::Reboot);
        pkg.package = Some("k.deb".into());
        assert_eq!(
            decide(&pkg, Some("6.12.9+bpo-amd64"), &st),
            Decision::Boot { release: "6.12.9+bpo-amd64".into(), cmdline: "".into(), method: BootMethod::Reboot }
        );
        assert_eq!(
            decide(&pkg, Some("6.12.10+bpo-amd64"), &st),
            Decision::Unsupported(
                "the package installs kernel 6.12.10+bpo-amd64, not 6.12.9+bpo-amd64 (kernel.release)".into()
            )
        );
        pkg.release = None;
        assert_eq!(decide(&pkg, Some("6.1.0-28-amd64"), &st), Decision::AsItIs, "the package's kernel runs already");
    }

    #[test]
    fn a_kernel_is_booted_only_when_the_host_is_not_on_it_and_can_boot_it() {
        let st = state();
        assert_eq!(decide_(&spec("baseline", "", BootMethod::Kexec), &st), Decision::AsItIs);
        assert_eq!(decide_(&spec("6.1.0-28-amd64", "", BootMethod::Reboot), &st), Decision::AsItIs);
        assert_eq!(
            decide_(&spec("baseline", "panic=10", BootMethod::Reboot), &st),
            Decision::Boot { release: "6.1.0-28-amd64".into(), cmdline: "panic=10".into(), method: BootMethod::Reboot }
        );
        assert_eq!(
            decide_(&spec("6.12.9+bpo-amd64", "", BootMethod::Kexec), &st),
            Decision::Unsupported("cannot boot a kernel by kexec: kexec is not installed on this host".into())
        );
        assert_eq!(
            decide_(&spec("6.13", "", BootMethod::Reboot), &st),
            Decision::Unsupported("kernel 6.13 is not installed (in /boot: 6.12.9+bpo-amd64, 6.1.0-28-amd64)".into())
        );
    }

    #[test]
    fn up_means_a_new_boot_of_the_release_asked_for_with_our_token() {
        let mut now = state();
        now.boot_id = "b2".into();
        now.release = "6.12.9+bpo-amd64".into();
        now.cmdline = "root=/dev/vda benchrig.boot=t1".into();
        assert_eq!(verify("b1", "6.12.9+bpo-amd64", Some("t1"), &now), Ok(()));
        assert!(verify("b2", "6.12.9+bpo-amd64", Some("t1"), &now).unwrap_err().contains("did not reboot"));
        assert!(verify("b1", "6.12.9+bpo-amd64", Some("t2"), &now).unwrap_err().contains("without benchrig's token"));
        assert!(verify("b1", "6.1.0-28-amd64", Some("t1"), &now).unwrap_err().contains("instead of 6.1.0-28-amd64"));
        // Back on the baseline: no token left.
        assert!(verify("b1", "6.12.9+bpo-amd64", None, &now).unwrap_err().contains("still on benchrig's boot t1"));
    }
}
