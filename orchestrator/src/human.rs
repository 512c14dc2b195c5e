//! Numbers and parameters as people read them, for every report, the
//! terminal table, `compare` and capacity messages alike.

/// Text from a host (an agent's log line or error, a tool's output, a
/// host name) made safe for a terminal: every control character but a
/// newline and a tab is shown as its escape (`\u{1b}`), so a host cannot
/// move the cursor, retitle the window or hide a line with `\r`.
pub fn printable(text: &str) -> std::borrow::Cow<'_, str> {
    if !text.chars().any(|c| c.is_control() && c != '\n' && c != '\t') {
        return std::borrow::Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(text.len() + 8);
    for c in text.chars() {
        if c.is_control() && c != '\n' && c != '\t' {
            out.extend(c.escape_default());
        } else {
            out.push(c);
        }
    }
    std::borrow::Cow::Owned(out)
}

/// A word as a POSIX shell reads it back: as it is when it needs no
/// quoting, else in single quotes.
pub fn shell_word(w: &str) -> String {
    let plain = !w.is_empty() && w.bytes().all(|b| b.is_ascii_alphanumeric() || b"_-./:@%+=,".contains(&b));
    match plain {
        true => w.to_string(),
        false => format!("'{}'", w.replace('\'', "'\\''")),
    }
}

/// A parameter value as people read it: strings bare, everything else as JSON.
pub fn scalar_text(v: &serde_json::Value) -> String {
    match v {
        serde_json::Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}

/// A cell's parameters in one line: `fs=ext4 bs=4k`, or `-` for none.
pub fn describe_params(params: &serde_json::Value) -> String {
    match params.as_object() {
        Some(m) if !m.is_empty() => {
            m.iter().map(|(k, v)| format!("{k}={}", scalar_text(v))).collect::<Vec<_>>().join(" ")
        }
        _ => "-".into(),
    }
}

/// Three significant decimals for small values, one for large: what a person compares.
pub fn fmt_num(v: f64) -> String {
    if v.abs() >= 100.0 {
        format!("{v:.1}")
    } else if v.abs() >= 1.0 {
        format!("{v:.2}")
    } else {
        format!("{v:.4}")
    }
}

/// Memory as people size cgroups: MiB below 1 GiB, else GiB.
pub fn mem(b: u64) -> String {
    if b < 1 << 30 {
        format!("{} MiB", b >> 20)
    } else {
        format!("{:.1} GiB", b as f64 / (1u64 << 30) as f64)
    }
}

/// A stored RFC 3339 stamp to the second, "2026-12-05T02:00:00Z": enough
/// to tell runs apart at a glance (anything shorter as it is).
pub fn stamp_to_the_second(stamp: &str) -> String {
    stamp.get(..19).map_or_else(|| stamp.to_string(), |t| format!("{t}Z"))
}

/// A number of CPUs: 0.12, 1.5, 2.
pub fn cpus(n: f64) -> String {
    let s = format!("{n:.2}");
    s.trim_end_matches('0').trim_end_matches('.').to_string()
}

#[cfg(test)]
mod printable_tests {
    use super::printable;

    #[test]
    fn text_from_a_host_cannot_drive_the_terminal() {
        assert_eq!(printable("ok\tfine\nnext"), "ok\tfine\nnext");
        assert_eq!(printable("\u{1b}]0;owned\u{7}done\rfake"), "\\u{1b}]0;owned\\u{7}done\\rfake");
        assert_eq!(printable("c1 \u{9b}31m"), "c1 \\u{9b}31m");
    }
}
