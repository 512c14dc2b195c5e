//! Which agent build a host gets, from what its CPU and kernel can do, and
//! the plain "no" for a host below the floor.
//!
//! `uname -m` alone does not say it: a 32-bit x86 kernel reports i686 on a
//! Pentium III and on a Core 2 alike, and Rust's i686 build needs SSE2
//! (a Pentium 4). So for 32-bit x86 the start script reads the flags in
//! `/proc/cpuinfo` and takes the first build in [`BUILDS`] whose needs they
//! meet; the shell test it runs is made from the same table
//! ([`shell_choice`]), and [`choose`] applies it here to explain a host
//! that got none.

/// 32-bit x86 as `uname -m` names it (i686 also under `linux32` on a 64-bit kernel).
const X86_32: &[&str] = &["i386", "i486", "i586", "i686", "x86"];

/// One agent build: the `uname -m` values it serves, the `/proc/cpuinfo`
/// flags a CPU needs for it, and its Rust target.
#[derive(Debug)]
pub struct Build {
    pub machines: &'static [&'static str],
    pub needs: &'static [&'static str],
    pub triple: &'static str,
    /// Which CPUs it is for, in a user's words.
    pub for_cpus: &'static str,
}

/// Every build, in order of preference: a host gets the first it can run.
pub const BUILDS: &[Build] = &[
    Build { machines: &["x86_64", "amd64"], needs: &[], triple: "x86_64-unknown-linux-musl", for_cpus: "64-bit x86" },
    // SSE2 floats and copies: a Pentium 4, Athlon 64 or later.
    Build { machines: X86_32, needs: &["sse2"], triple: "i686-unknown-linux-musl", for_cpus: "x86 with SSE2" },
    // x87 floats, no CMOV, no SSE: a Pentium, Pentium II/III, Athlon (K7),
    // VIA C3, Geode, Vortex86. CMPXCHG8B (64-bit atomics) and an FPU it
    // cannot do without.
    Build {
        machines: X86_32,
        needs: &["fpu", "cx8"],
        triple: "i586-unknown-linux-musl",
        for_cpus: "x86 without SSE2 (Pentium to Pentium III, Athlon)",
    },
    Build { machines: &["aarch64", "arm64"], needs: &[], triple: "aarch64-unknown-linux-musl", for_cpus: "64-bit ARM" },
    // armv8l: a 32-bit userland's view of an ARMv8 CPU.
    Build {
        machines: &["armv7l", "armv8l"],
        needs: &[],
        triple: "armv7-unknown-linux-musleabihf",
        for_cpus: "32-bit ARMv7 with VFP (Raspberry Pi 2 and later on a 32-bit OS)",
    },
];

/// The oldest kernel the agent runs on: Rust's standard library needs 3.2.
pub const KERNEL_FLOOR: (u32, u32) = (3, 2);

/// What the start script reports of the host's machine.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Platform {
    /// `uname -m`.
    pub machine: String,
    /// `uname -r`.
    pub kernel: String,
    /// `/proc/cpuinfo`'s first `model name`, read for 32-bit x86 only.
    pub cpu_model: String,
    /// `/proc/cpuinfo`'s first `flags`, read for 32-bit x86 only.
    pub flags: Vec<String>,
}

/// Why a host gets no agent. Said before anything is uploaded.
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
pub enum Refusal {
    #[error("{0}")]
    Cpu(String),
    #[error(
        "the host runs Linux {release}, older than {major}.{minor}, the oldest kernel the agent runs on (Rust's standard library needs it)",
        major = KERNEL_FLOOR.0,
        minor = KERNEL_FLOOR.1,
        release = .0
    )]
    Kernel(String),
    #[error("host architecture `{machine}` has no agent build (there are builds for {list})", machine = .0, list = supported())]
    Machine(String),
}

fn supported() -> String {
    let mut names: Vec<&str> = Vec::new();
    for b in BUILDS {
        if !names.contains(&b.machines[0]) {
            names.push(b.machines[0]);
        }
    }
    names.join(", ")
}

/// A CPU feature the agent needs, as a person knows it.
fn feature_name(flag: &str) -> &str {
    match flag {
        "cx8" => "CMPXCHG8B",
        "fpu" => "a floating-point unit",
        "sse2" => "SSE2",
        other => other,
    }
}

/// The CPU's generation as people say it, for the message: "a 486".
fn generation(machine: &str) -> Option<&'static str> {
    match machine {
        "i386" => Some("a 386"),
        "i486" => Some("a 486"),
        _ => None,
    }
}

/// `3.2.0-4-686-pae` → (3, 2); `None` when it does not start with digits.
pub fn kernel_version(release: &str) -> Option<(u32, u32)> {
    let mut parts = release.split(['.', '-', '+']);
    let major = parts.next()?.parse().ok()?;
    let minor = parts.next().and_then(|m| m.parse().ok()).unwrap_or(0);
    Some((major, minor))
}

/// The build a host needs, or why it can have none.
pub fn choose(p: &Platform) -> Result<&'static Build, Refusal> {
    if kernel_version(&p.kernel).is_some_and(|v| v < KERNEL_FLOOR) {
        return Err(Refusal::Kernel(p.kernel.clone()));
    }
    let candidates: Vec<&Build> = BUILDS.iter().filter(|b| b.machines.contains(&p.machine.as_str())).collect();
    let Some(last) = candidates.last() else { return Err(Refusal::Machine(p.machine.clone())) };
    if let Some(b) = candidates.iter().find(|b| b.needs.iter().all(|f| p.flags.iter().any(|h| h == f))) {
        return Ok(b);
    }
    // It runs none of them: say what the least demanding one lacks.
    if p.flags.is_empty() {
        return Err(Refusal::Cpu(format!(
            "cannot tell which {} agent this CPU can run: /proc/cpuinfo has no flags line",
            p.machine
        )));
    }
    let missing: Vec<String> = last
        .needs
        .iter()
        .filter(|f| !p.flags.iter().any(|h| h == *f))
        .map(|f| format!("{} (`{f}` in /proc/cpuinfo)", feature_name(f)))
        .collect();
    let model = if p.cpu_model.is_empty() { "unknown model".to_string() } else { p.cpu_model.clone() };
    let who = generation(&p.machine).map(|g| format!("{g} ({model})")).unwrap_or_else(|| format!("this CPU ({model})"));
    Err(Refusal::Cpu(format!(
        "{who} cannot run the agent: it has no {}; a 32-bit x86 host needs a Pentium or later",
        missing.join(" and no ")
    )))
}

/// The shell that sets `m` (machine), `k` (kernel release), `c` (CPU model)
/// and `f` (flags, space-padded) and then `s` to the sha256 of the first
/// build in `present` (triple, sha256) the host can run, empty when none.
/// `/proc/cpuinfo` is read only for 32-bit x86, where the build depends on it:
/// one `sed` there, nothing more elsewhere.
pub fn shell_choice(present: &[(&str, &str)]) -> String {
    let mut s = String::from(
        "u=$(uname -rm); m=${u##* }; k=${u% *}; c=; f=; \
         has() { case \"$f\" in *\" $1 \"*) return 0;; esac; return 1; }; ",
    );
    s.push_str(&format!(
        "case \"$m\" in {}) x=$(sed -n -e '/^model name/{{s/^[^:]*: *//;h;}}' \
         -e '/^flags/{{s/^[^:]*://;H;x;s/\\n/|/;p;q;}}' /proc/cpuinfo 2>/dev/null); \
         c=${{x%%|*}}; f=\" ${{x#*|}} \";; esac; s=; ",
        X86_32.join("|")
    ));
    for b in BUILDS {
        let Some((_, sha)) = present.iter().find(|(t, _)| *t == b.triple) else { continue };
        let test: String = b.needs.iter().map(|f| format!("has {f} && ")).collect();
        s.push_str(&format!("[ -z \"$s\" ] && case \"$m\" in {}) {test}s={sha};; esac; ", b.machines.join("|")));
    }
    s
}

/// The flags field of the probe line, back into a list (the shell pads it).
pub fn parse_flags(field: &str) -> Vec<String> {
    field.split_whitespace().map(str::to_string).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    const P3_FLAGS: &str = "fpu vme de pse tsc msr pae mce cx8 apic sep mtrr pge mca cmov pat pse36 mmx fxsr sse";
    const P4_FLAGS: &str =
        "fpu vme de pse tsc msr pae mce cx8 apic sep mtrr pge mca cmov pat pse36 clflush mmx fxsr sse sse2";

    fn x86(machine: &str, model: &str, flags: &str) -> Platform {
        Platform {
            machine: machine.into(),
            kernel: "6.1.0-28-686".into(),
            cpu_model: model.into(),
            flags: parse_flags(flags),
        }
    }

    #[test]
    fn a_32_bit_x86_host_gets_its_build_by_its_flags_not_its_uname() {
        let t = |p: &Platform| choose(p).map(|b| b.triple);
        assert_eq!(t(&x86("i686", "Intel(R) Pentium(R) 4 CPU 2.40GHz", P4_FLAGS)), Ok("i686-unknown-linux-musl"));
        assert_eq!(t(&x86("i686", "Pentium III (Coppermine)", P3_FLAGS)), Ok("i586-unknown-linux-musl"));
        // A P5 has neither CMOV nor SSE; the i586 build needs neither.
        assert_eq!(
            t(&x86("i586", "Pentium 75 - 200", "fpu vme de pse tsc msr mce cx8")),
            Ok("i586-unknown-linux-musl")
        );
        assert_eq!(t(&x86("x86_64", "", "")), Ok("x86_64-unknown-linux-musl"));
        assert_eq!(t(&x86("armv7l", "", "")), Ok("armv7-unknown-linux-musleabihf"));
    }

    #[test]
    fn a_486_or_a_cpu_without_an_fpu_is_refused_naming_the_cpu_and_why() {
        let e = choose(&x86("i486", "486 DX/4", "fpu vme")).unwrap_err().to_string();
        assert_eq!(
            e,
            "a 486 (486 DX/4) cannot run the agent: it has no CMPXCHG8B (`cx8` in /proc/cpuinfo); \
             a 32-bit x86 host needs a Pentium or later"
        );
        let e = choose(&x86("i586", "Vortex86SX", "vme de tsc cx8")).unwrap_err().to_string();
        assert!(e.starts_with("this CPU (Vortex86SX) cannot run the agent: it has no a floating-point unit"), "{e}");
        let e = choose(&x86("i686", "", "")).unwrap_err().to_string();
        assert!(e.contains("/proc/cpuinfo has no flags line"), "{e}");
    }

    #[test]
    fn a_kernel_older_than_3_2_or_an_unknown_machine_is_refused() {
        let mut p = x86("i686", "Pentium III", P3_FLAGS);
        p.kernel = "2.6.32-5-686".into();
        assert_eq!(
            choose(&p).unwrap_err().to_string(),
            "the host runs Linux 2.6.32-5-686, older than 3.2, the oldest kernel the agent runs on (Rust's standard library needs it)"
        );
        for ok in ["3.2.0-4-686-pae", "4.19.0", "10.0"] {
            p.kernel = ok.into();
            assert!(choose(&p).is_ok(), "{ok}");
        }
        let e = choose(&x86("sparc64", "", "")).unwrap_err().to_string();
        assert_eq!(
            e,
            "host architecture `sparc64` has no agent build (there are builds for x86_64, i386, aarch64, armv7l)"
        );
    }

    /// The shell picks what `choose` picks, among the builds present, under
    /// every shell hosts have (dash, busybox ash, bash).
    #[test]
    fn the_shell_choice_agrees_with_choose() {
        let present = [
            ("x86_64-unknown-linux-musl", "X64"),
            ("i686-unknown-linux-musl", "I686"),
            ("i586-unknown-linux-musl", "I586"),
            ("armv7-unknown-linux-musleabihf", "ARM7"),
        ];
        let script = shell_choice(&present);
        let cases = [
            ("i686", P4_FLAGS, "I686"),
            ("i686", P3_FLAGS, "I586"),
            ("i586", "fpu vme de pse tsc msr mce cx8", "I586"),
            ("i486", "fpu vme", ""),
            ("x86_64", "", "X64"),
            ("armv7l", "", "ARM7"),
            ("sparc64", "", ""),
        ];
        for (machine, flags, want) in cases {
            // The probe's own reading of uname and /proc/cpuinfo is the lab's
            // to test; here `m` and `f` are set as it sets them.
            let body = script.split("s=; ").nth(1).unwrap();
            let test = format!(
                "has() {{ case \"$f\" in *\" $1 \"*) return 0;; esac; return 1; }}; m={machine}; f=' {flags} '; s=; {body} echo \"$s\""
            );
            for shell in [&["sh"][..], &["busybox", "sh"], &["bash", "--posix"]] {
                let Ok(out) = std::process::Command::new(shell[0]).args(&shell[1..]).arg("-c").arg(&test).output()
                else {
                    continue;
                };
                assert_eq!(String::from_utf8_lossy(&out.stdout).trim(), want, "{shell:?} {machine} {flags}");
            }
            let chosen = choose(&x86(machine, "", flags)).ok().map(|b| b.triple);
            let by_shell = present.iter().find(|(_, s)| *s == want).map(|(t, _)| *t);
            assert_eq!(chosen, by_shell, "{machine} {flags}");
        }
    }

    /// The probe's reading of /proc/cpuinfo, on a Pentium III's as Debian's
    /// 686 kernel prints it.
    #[test]
    fn the_shell_reads_the_model_and_flags_of_the_first_cpu() {
        let dir = tempfile::tempdir().unwrap();
        let cpuinfo = dir.path().join("cpuinfo");
        let text = format!(
            "processor\t: 0\nvendor_id\t: GenuineIntel\nmodel name\t: Pentium III (Coppermine)\nflags\t\t: {P3_FLAGS}\n\n\
             processor\t: 1\nmodel name\t: Other\nflags\t\t: fpu\n"
        );
        std::fs::write(&cpuinfo, text).unwrap();
        let script = shell_choice(&[("i586-unknown-linux-musl", "I586")])
            .replace("u=$(uname -rm)", "u='6.1.0 i686'")
            .replace("/proc/cpuinfo", cpuinfo.to_str().unwrap());
        // GNU sed, and busybox's where this machine has it (busybox hosts).
        let busybox = std::process::Command::new("busybox").arg("sed").arg("--help").output().is_ok();
        for sed in ["sed", "busybox sed"].into_iter().filter(|s| *s == "sed" || busybox) {
            let out = std::process::Command::new("sh")
                .arg("-c")
                .arg(format!(
                    "{} printf '%s|%s|%s|%s' \"$m\" \"$c\" \"$s\" \"$f\"",
                    script.replace("x=$(sed ", &format!("x=$({sed} "))
                ))
                .output()
                .unwrap();
            let out = String::from_utf8(out.stdout).unwrap();
            assert_eq!(out, format!("i686|Pentium III (Coppermine)|I586|  {P3_FLAGS} "), "{sed}");
        }
    }
}
