//! Booting a host into a kernel under test, once, and back: what the agent
//! says of a host's boot setup ([`BootState`]), the order to boot a kernel
//! ([`BootOrder`]), and the record the host keeps of a boot under way
//! ([`BootRecord`]), which outlives the agent, the controller and the
//! reboot itself, so that whoever comes next brings the host back.

use serde::{Deserialize, Serialize};

/// The kernel command-line word that marks a boot benchrig asked for:
/// `benchrig.boot=<token>`. Its presence in `/proc/cmdline` proves that the
/// kernel running is the one this order booted, not a reboot of another.
pub const TOKEN_WORD: &str = "benchrig.boot";

/// How a kernel is booted once.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum BootMethod {
    /// `kexec -l` then a clean `kexec -e` (`systemctl kexec`): no firmware,
    /// no bootloader. Back the same way, into the baseline's own image.
    Kexec,
    /// A one-shot boot entry (`grub-reboot`) and a reboot: the default
    /// entry never changes, so any later reboot or power cycle comes back
    /// to the baseline.
    Reboot,
}

impl BootMethod {
    pub const NAMES: [&'static str; 2] = ["kexec", "reboot"];

    pub fn as_str(self) -> &'static str {
        match self {
            BootMethod::Kexec => "kexec",
            BootMethod::Reboot => "reboot",
        }
    }

    pub fn from_name(name: &str) -> Option<BootMethod> {
        match name {
            "kexec" => Some(BootMethod::Kexec),
            "reboot" => Some(BootMethod::Reboot),
            _ => None,
        }
    }
}

/// A host's boot as the agent reads it (`Request::BootState`).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct BootState {
    /// `/proc/sys/kernel/random/boot_id`: a new one proves a new boot.
    pub boot_id: String,
    /// `uname -r`.
    pub release: String,
    /// `/proc/cmdline`.
    pub cmdline: String,
    /// The kernels installed in `/boot`, newest first.
    pub kernels: Vec<InstalledKernel>,
    /// What the host can boot a kernel with, when asked for (it takes
    /// `grub-probe`, slow on a host just booted).
    pub means: Option<BootMeans>,
    /// A boot benchrig started and has not brought back from yet.
    pub pending: Option<BootRecord>,
    /// Kernel packages benchrig installed here and has not removed yet.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub packages: Vec<OurPackage>,
}

/// What a host can boot a kernel once with.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct BootMeans {
    /// Why this host cannot kexec (no kexec-tools, lockdown, a kernel
    /// without kexec), or none.
    pub no_kexec: Option<String>,
    /// Why this host cannot boot a kernel once and fall back (no
    /// bootloader benchrig knows, grubenv where GRUB cannot write it), or none.
    pub no_reboot: Option<String>,
    /// The bootloader, as a person reads it (`GRUB 2.06`), or none.
    pub bootloader: Option<String>,
}

impl BootState {
    /// The installed kernel of this release.
    pub fn kernel(&self, release: &str) -> Option<&InstalledKernel> {
        self.kernels.iter().find(|k| k.release == release)
    }

    /// The token of the boot that is running, when benchrig asked for it.
    pub fn token(&self) -> Option<&str> {
        cmdline_token(&self.cmdline)
    }
}

/// `benchrig.boot=<token>` in a command line, when there.
pub fn cmdline_token(cmdline: &str) -> Option<&str> {
    cmdline.split_whitespace().find_map(|w| w.strip_prefix(TOKEN_WORD)?.strip_prefix('='))
}

/// A kernel in `/boot`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct InstalledKernel {
    pub release: String,
    /// `/boot/vmlinuz-<release>`.
    pub image: String,
    /// The image's sha256: of the running kernel's only (the others' are
    /// read when one is armed).
    pub sha256: Option<String>,
    /// `/boot/initrd.img-<release>` (or `initramfs-<release>.img`), when there.
    pub initrd: Option<String>,
}

/// Boot a kernel once (`Request::Boot`). The agent arms the boot and
/// answers; it boots when the session ends (`Request::Shutdown`), after
/// everything the session set up is released.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct BootOrder {
    /// The kernel to boot (`uname -r`), or, with `back`, the baseline's.
    pub release: String,
    /// Words appended to the host's own command line.
    #[serde(default)]
    pub cmdline: String,
    pub method: BootMethod,
    /// Marks the boot on the command line ([`TOKEN_WORD`]).
    pub token: String,
    /// Back to the baseline: a plain reboot into the default entry (or a
    /// kexec into the baseline's image and command line, as recorded).
    #[serde(default)]
    pub back: bool,
}

/// The host's record of a boot under way, kept by the agent in its work dir
/// from before the boot until the host is back on its baseline.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct BootRecord {
    /// The kernel the host ran before (its default), and its command line.
    pub baseline: String,
    pub baseline_cmdline: String,
    /// The kernel booted and how.
    pub release: String,
    pub method: BootMethod,
    pub token: String,
    /// A one-shot boot entry benchrig added (GRUB's `custom.cfg`), to remove.
    #[serde(default)]
    pub entry: Option<String>,
}

/// A kernel package to install (`Request::InstallKernel`): a `.deb` or
/// `.rpm` the controller put in the agent's dir.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct KernelPackage {
    /// Its path on the host, in the agent's private dir.
    pub file: String,
    /// Its sha256, checked again on the host before it is installed.
    pub sha256: String,
    /// The file's name on the controller, as a person reads it.
    pub name: String,
}

/// A kernel package benchrig installed on a host, kept in the host's
/// record from before the install until it is removed again.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct OurPackage {
    /// The package's name (`linux-image-6.12.12-amd64`, `kernel-core`).
    pub package: String,
    pub version: String,
    /// The kernel it installs, as `uname -r` will name it.
    pub release: String,
    /// `dpkg` or `rpm`: what installed it and removes it.
    pub tool: String,
    /// Left installed after the play (`kernel.keep`).
    #[serde(default)]
    pub keep: bool,
}

/// What `InstallKernel` did.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Installed {
    pub package: OurPackage,
    /// False when the host had this very package already (then it is the
    /// host's, and never removed).
    pub installed_now: bool,
    /// How long the install took on the host (its hooks: initramfs, GRUB).
    pub seconds: f64,
}

/// What the agent says when a boot is armed: how the host will boot.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Armed {
    /// The image that boots and its sha256 (checked again once it is up).
    pub image: String,
    pub sha256: String,
    /// The whole command line the kernel gets.
    pub cmdline: String,
    /// What does the booting (`systemctl kexec`, `grub-reboot … && systemctl reboot`).
    pub how: String,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_boot_state_without_packages_reads_as_before() {
        let old = r#"{"boot_id":"b","release":"r","cmdline":"c","kernels":[],"means":null,"pending":null}"#;
        let st: BootState = serde_json::from_str(old).unwrap();
        assert!(st.packages.is_empty());
        assert!(!serde_json::to_string(&st).unwrap().contains("packages"));
    }

    #[test]
    fn the_token_is_read_from_anywhere_on_the_command_line() {
        assert_eq!(cmdline_token("BOOT_IMAGE=/vmlinuz root=/dev/vda benchrig.boot=ab12 quiet"), Some("ab12"));
        assert_eq!(cmdline_token("root=/dev/vda quiet"), None);
        assert_eq!(cmdline_token("benchrig.booted=1"), None);
    }
}
