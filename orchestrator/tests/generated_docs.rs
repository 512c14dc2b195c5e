//! What a release ships besides the binary, made by the binary itself from
//! its own command-line definition: `--version` with the commit, shell
//! completions, man pages. Each is checked by the tool that will read it
//! (bash, groff), not by comparing text with a copy.

use std::path::Path;
use std::process::Command;

fn benchrig(args: &[&str]) -> std::process::Output {
    let out = Command::new(env!("CARGO_BIN_EXE_benchrig")).args(args).output().unwrap();
    assert!(out.status.success(), "benchrig {args:?}: {}", String::from_utf8_lossy(&out.stderr));
    out
}

fn text(args: &[&str]) -> String {
    String::from_utf8(benchrig(args).stdout).unwrap()
}

/// Every subcommand `benchrig --help` lists.
fn subcommands() -> Vec<String> {
    let help = text(&["--help"]);
    let listed = help.split("Commands:").nth(1).unwrap().split("\n\n").next().unwrap();
    listed.lines().filter_map(|l| l.split_whitespace().next()).filter(|w| *w != "help").map(String::from).collect()
}

#[test]
fn the_version_names_the_commit_it_was_built_from() {
    let version = text(&["--version"]);
    let repo = Path::new(env!("CARGO_MANIFEST_DIR"));
    let head = Command::new("git").args(["rev-parse", "--short=12", "HEAD"]).current_dir(repo).output();
    let expected = match head {
        Ok(h) if h.status.success() => String::from_utf8_lossy(&h.stdout).trim().to_string(),
        _ => "unknown".to_string(), // a source tarball without git
    };
    assert_eq!(version.trim(), format!("benchrig {} (commit {expected})", env!("CARGO_PKG_VERSION")));
}

#[test]
fn bash_completion_parses_and_knows_every_command() {
    let script = text(&["completions", "bash"]);
    let check = Command::new("bash").args(["-n", "-c", &script]).output().unwrap();
    assert!(check.status.success(), "bash -n: {}", String::from_utf8_lossy(&check.stderr));
    let commands = subcommands();
    assert!(commands.len() >= 15, "{commands:?}");
    for c in &commands {
        assert!(script.contains(&format!("benchrig__subcmd__{c}")), "bash completion lacks `{c}`");
    }
    // Complete a subcommand's option as bash would.
    let complete = format!(
        "{script}\nCOMP_WORDS=(benchrig run --lease); COMP_CWORD=2; COMP_LINE='benchrig run --lease'; COMP_POINT=${{#COMP_LINE}}; _benchrig benchrig --lease run; printf '%s\\n' \"${{COMPREPLY[@]}}\""
    );
    let out = Command::new("bash").args(["-c", &complete]).output().unwrap();
    assert_eq!(String::from_utf8_lossy(&out.stdout).trim(), "--lease-term", "{}", String::from_utf8_lossy(&out.stderr));
    for shell in ["zsh", "fish"] {
        assert!(text(&["completions", shell]).contains("wait-for-hosts"), "{shell}");
    }
}

#[test]
fn man_pages_render_without_a_warning_one_per_command() {
    let dir = tempfile::tempdir().unwrap();
    let said = text(&["man", "--dir", dir.path().to_str().unwrap()]);
    let mut pages = vec!["benchrig.1".to_string()];
    pages.extend(subcommands().iter().map(|c| format!("benchrig-{c}.1")));
    for page in &pages {
        let path = dir.path().join(page);
        assert!(path.exists(), "no {page} (said: {said})");
        // -k: UTF-8 through preconv, as man(1) reads it; -ww: every warning.
        let check = Command::new("groff").args(["-k", "-man", "-z", "-ww"]).arg(&path).output().unwrap();
        assert!(check.stderr.is_empty(), "{page}: {}", String::from_utf8_lossy(&check.stderr));
    }
    let page = text(&["man"]);
    assert!(page.starts_with(".ie") && page.contains(".TH benchrig 1"), "{}", &page[..200.min(page.len())]);
    assert!(page.contains("Exit codes:"), "the exit codes are in the page");
}
