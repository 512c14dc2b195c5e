//! What README.md and docs/*.md tell a user to type or to open, held to the
//! tree: every `benchrig …` command line in their code blocks parses with
//! the real command line definition (`cli::Cli`), and every path into the
//! repository they name (in code or in backticks) exists. So a renamed
//! flag, file or example cannot leave the docs behind.

use benchrig::cli::Cli;
use clap::Parser;
use std::collections::HashMap;
use std::path::{Path, PathBuf};

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).parent().unwrap().to_path_buf()
}

/// README.md and every markdown file under docs/.
fn documents() -> Vec<PathBuf> {
    let mut docs = vec![repo().join("README.md")];
    let mut stack = vec![repo().join("docs")];
    while let Some(dir) = stack.pop() {
        for e in std::fs::read_dir(&dir).unwrap().flatten() {
            let p = e.path();
            if p.is_dir() {
                stack.push(p);
            } else if p.extension().is_some_and(|x| x == "md") {
                docs.push(p);
            }
        }
    }
    docs.sort();
    docs
}

/// (line number, text) of each line in a code block: indented by four
/// spaces after a blank line, or fenced as a shell (or untyped) block.
fn code_lines(text: &str) -> Vec<(usize, String)> {
    let mut out = Vec::new();
    let (mut fence, mut shell, mut indented, mut prev_blank) = (false, false, false, true);
    for (i, line) in text.lines().enumerate() {
        let t = line.trim_start();
        if t.starts_with("```") {
            if fence {
                fence = false;
            } else {
                fence = true;
                let lang = t.trim_start_matches('`').trim();
                shell = matches!(lang, "" | "sh" | "bash" | "console" | "shell");
            }
            continue;
        }
        if fence {
            if shell {
                out.push((i + 1, line.to_string()));
            }
            continue;
        }
        indented = line.starts_with("    ") && (indented || prev_blank);
        if indented {
            out.push((i + 1, line[4..].to_string()));
        }
        prev_blank = line.trim().is_empty();
        if prev_blank {
            indented = false;
        }
    }
    out
}

/// The `benchrig` invocations in one line of shell, as words, with the
/// block's simple variables (`I="-i a -i b"`) expanded.
fn invocations(line: &str, vars: &HashMap<String, String>) -> Vec<Vec<String>> {
    // A comment ends the command; a redirection or a pipe ends the
    // invocation (what follows is another program's).
    let code = match line.find(" #") {
        Some(at) => &line[..at],
        None => line,
    };
    let mut out = Vec::new();
    for part in code.split("&&").flat_map(|p| p.split("||")).flat_map(|p| p.split(';')) {
        let part = part.split(['|', '>']).next().unwrap_or_default().trim().trim_end_matches('\\').trim();
        let part = part.strip_prefix("sudo ").unwrap_or(part);
        if !part.starts_with("benchrig ") {
            continue;
        }
        let mut expanded = part.to_string();
        for (k, v) in vars {
            expanded = expanded.replace(&format!(" ${k} "), &format!(" {v} "));
        }
        if let Some(words) = shlex::split(&expanded) {
            out.push(words);
        }
    }
    out
}

/// A word that names a file of this repository: (the word, where it may be).
fn repo_path(word: &str) -> Option<Vec<PathBuf>> {
    const TOP: &[&str] =
        &["ci/", ".ci/", "docs/", "playbooks/", "inventories/", "orchestrator/", "node-agent/", "wire/", "fuzz/"];
    let w = word.trim_end_matches([',', '.', ':', ';', ')']);
    let w = w.split("::").next().unwrap_or(w);
    if w.contains(['<', '*', '{', '$', '…']) {
        return None;
    }
    let root = repo();
    if TOP.iter().any(|t| w.starts_with(t)) {
        return Some(vec![root.join(w)]);
    }
    // Test files are named from their crate.
    if w.starts_with("tests/") {
        return Some(vec![root.join("orchestrator").join(w), root.join("node-agent").join(w)]);
    }
    None
}

#[test]
fn every_command_line_in_the_docs_parses_and_every_path_they_name_exists() {
    let mut problems = Vec::new();
    let (mut commands, mut paths) = (0, 0);
    for doc in documents() {
        let text = std::fs::read_to_string(&doc).unwrap();
        let name = doc.strip_prefix(repo()).unwrap().display().to_string();
        let mut vars = HashMap::new();
        let mut check_path = |line: usize, word: &str, problems: &mut Vec<String>| {
            if let Some(candidates) = repo_path(word) {
                paths += 1;
                if !candidates.iter().any(|c| c.exists()) {
                    problems.push(format!("{name}:{line}: `{word}` does not exist in the repository"));
                }
            }
        };
        for (line, code) in code_lines(&text) {
            // `I="-i a -i b"`: expanded where `$I` is used below.
            if let Some((k, v)) = code.trim().split_once('=') {
                if !k.is_empty() && k.chars().all(|c| c.is_ascii_uppercase() || c == '_') {
                    vars.insert(k.to_string(), v.trim_matches('"').to_string());
                }
            }
            for words in invocations(&code, &vars) {
                commands += 1;
                if let Err(e) = Cli::try_parse_from(&words) {
                    let first = e.render().to_string();
                    let first = first.lines().next().unwrap_or_default().to_string();
                    problems.push(format!("{name}:{line}: `{}`: {first}", words.join(" ")));
                }
                for w in &words[1..] {
                    check_path(line, w, &mut problems);
                }
            }
        }
        for (i, l) in text.lines().enumerate() {
            for (at, quoted) in l.split('`').enumerate() {
                // `ci/lab.sh up`: the program is the path.
                if let (1, Some(first)) = (at % 2, quoted.split_whitespace().next()) {
                    check_path(i + 1, first, &mut problems);
                }
            }
        }
    }
    eprintln!("{commands} command lines and {paths} paths checked");
    assert!(commands > 30 && paths > 50, "the docs were read: {commands} commands, {paths} paths");
    assert!(problems.is_empty(), "the docs have drifted from the tree:\n{}", problems.join("\n"));
}

#[test]
fn the_checker_finds_a_bad_flag_and_a_missing_file() {
    let vars = HashMap::from([("I".to_string(), "-i inventories/simlab.yml -i inventories/simlab-vm.yml".to_string())]);
    let words = invocations("benchrig run playbooks/nfs-tree.yml $I -l vm --db x.db   # a comment", &vars);
    assert_eq!(words.len(), 1);
    assert!(Cli::try_parse_from(&words[0]).is_ok(), "{words:?}");
    let words = invocations("ci/build-agents.sh && sudo benchrig runs --no-such-flag | head", &vars);
    assert_eq!(words, [["benchrig", "runs", "--no-such-flag"]]);
    assert!(Cli::try_parse_from(&words[0]).is_err());
    assert!(repo_path("playbooks/quickstart.yml").unwrap()[0].exists());
    assert!(!repo_path("inventories/lab.yml").unwrap()[0].exists());
    assert!(repo_path("tests/lab/main.rs").unwrap().iter().any(|p| p.exists()));
    assert_eq!(repo_path("~/.cache/benchrig"), None);
    let code = code_lines(
        "text\n\n    benchrig runs\n    more\ntext\n\n```yaml\nbenchrig: no\n```\n```sh\nbenchrig show last\n```\n",
    );
    assert_eq!(
        code,
        [(3, "benchrig runs".to_string()), (4, "more".to_string()), (11, "benchrig show last".to_string())]
    );
}
