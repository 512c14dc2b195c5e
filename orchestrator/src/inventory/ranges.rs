//! Host ranges as Ansible writes them: `node[01:16]`, `db-[a:f].lab`, `x[0:10:2]`.

/// Expand every `[start:end(:step)]` in a host name; a name without one is itself.
pub fn expand(pattern: &str) -> Result<Vec<String>, String> {
    let Some(open) = pattern.find('[') else { return Ok(vec![pattern.to_string()]) };
    let close = pattern[open..].find(']').map(|c| c + open).ok_or_else(|| format!("`{pattern}`: unclosed `[`"))?;
    let (head, range, tail) = (&pattern[..open], &pattern[open + 1..close], &pattern[close + 1..]);
    let parts: Vec<&str> = range.split(':').collect();
    if parts.len() < 2 || parts.len() > 3 {
        return Err(format!("`{pattern}`: a range is [start:end] or [start:end:step]"));
    }
    let step: usize = match parts.get(2) {
        Some(s) => s.parse().ok().filter(|&s| s > 0).ok_or_else(|| format!("`{pattern}`: bad step `{s}`"))?,
        None => 1,
    };
    // As Ansible's `expand_hostname_range`: an empty start is 0; a start
    // with a leading zero fixes the width, and the end must have it too;
    // letters run through a-z then A-Z.
    let (beg, end) = (if parts[0].is_empty() { "0" } else { parts[0] }, parts[1]);
    if end.is_empty() {
        return Err(format!("`{pattern}`: a range needs an end"));
    }
    const LETTERS: &str = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ";
    let letter = |s: &str| (s.len() == 1).then(|| LETTERS.find(s)).flatten();
    let items: Vec<String> = if let (Some(b), Some(e)) = (letter(beg), letter(end)) {
        if b > e {
            return Err(format!("`{pattern}`: range start is after its end"));
        }
        LETTERS[b..=e].chars().step_by(step).map(String::from).collect()
    } else if let (Ok(b), Ok(e)) = (beg.parse::<u64>(), end.parse::<u64>()) {
        let width = if beg.len() > 1 && beg.starts_with('0') { beg.len() } else { 0 };
        if width > 0 && end.len() != width {
            return Err(format!("`{pattern}`: a zero-padded range needs a start and an end of one width"));
        }
        // Python's range(): an end before the start is no host at all.
        (b..=e).step_by(step).map(|n| format!("{n:0width$}")).collect()
    } else {
        return Err(format!("`{pattern}`: `[{range}]` is neither a numeric nor an alphabetic range"));
    };
    let mut out = Vec::new();
    for item in items {
        for rest in expand(tail)? {
            out.push(format!("{head}{item}{rest}"));
        }
    }
    Ok(out)
}

/// `host:2222` or `node[01:04]:2222` sets the port; an IPv6 address keeps its colons.
pub fn split_port(pattern: &str) -> (&str, Option<u16>) {
    // `[2001:db8::1]:2222`: a bracketed IPv6 address and its port.
    if let Some((v6, port)) = pattern.strip_prefix('[').and_then(|r| r.split_once("]:")) {
        if let (true, Ok(port)) = (v6.parse::<std::net::Ipv6Addr>().is_ok(), port.parse()) {
            return (v6, Some(port));
        }
    }
    let mut depth = 0i32;
    let outside: Vec<usize> = pattern
        .char_indices()
        .filter_map(|(i, c)| {
            match c {
                '[' => depth += 1,
                ']' => depth -= 1,
                ':' if depth == 0 => return Some(i),
                _ => {}
            }
            None
        })
        .collect();
    if let [i] = outside[..] {
        if let Ok(port) = pattern[i + 1..].parse() {
            return (&pattern[..i], Some(port));
        }
    }
    (pattern, None)
}

#[cfg(test)]
mod tests {
    use super::expand;

    #[test]
    fn numeric_alpha_step_and_nested() {
        assert_eq!(expand("node[01:03]").unwrap(), ["node01", "node02", "node03"]);
        assert_eq!(expand("db-[a:c].lab").unwrap(), ["db-a.lab", "db-b.lab", "db-c.lab"]);
        assert_eq!(expand("x[0:6:3]").unwrap(), ["x0", "x3", "x6"]);
        assert_eq!(expand("r[1:2]c[1:2]").unwrap(), ["r1c1", "r1c2", "r2c1", "r2c2"]);
        assert_eq!(expand("plain").unwrap(), ["plain"]);
        assert_eq!(expand("e[:2]").unwrap(), ["e0", "e1", "e2"]);
        assert_eq!(expand("m[y:B]").unwrap(), ["my", "mz", "mA", "mB"]);
    }

    #[test]
    fn bad_ranges_are_errors() {
        for p in ["n[1:", "n[c:a]", "n[1:2:0]", "n[a:3]", "n[1]", "n[01:3]", "n[1:]"] {
            assert!(expand(p).is_err(), "{p}");
        }
    }
}
