//! Host ranges as Ansible writes them: `node[01:16]`, `db-[a:f].lab`, `x[0:10:2]`.

/// The most names one pattern may expand to. Far more than any lab has, and
/// small enough that a slip such as `h[0:999999999]` is refused at once
/// instead of allocating names until memory runs out.
pub const MAX_NAMES: usize = 10_000;

/// Expand every `[start:end(:step)]` in a host name; a name without one is itself.
pub fn expand(pattern: &str) -> Result<Vec<String>, String> {
    // Left to right, so the first range is outermost, without recursion
    // (a long line of ranges must not exhaust the stack).
    let mut out = vec![String::new()];
    let mut rest = pattern;
    while let Some(open) = rest.find('[') {
        let close = rest[open..].find(']').map(|c| c + open).ok_or_else(|| format!("`{pattern}`: unclosed `[`"))?;
        let (head, range) = (&rest[..open], &rest[open + 1..close]);
        let items = items(pattern, range)?;
        // An empty range (`[3:1]`) is no host, and Ansible's recursion then
        // never reads the ranges after it.
        if items.is_empty() {
            return Ok(vec![]);
        }
        if out.len().saturating_mul(items.len()) > MAX_NAMES {
            return Err(too_many(pattern));
        }
        out = out.iter().flat_map(|p| items.iter().map(move |i| format!("{p}{head}{i}"))).collect();
        rest = &rest[close + 1..];
    }
    for o in &mut out {
        o.push_str(rest);
    }
    Ok(out)
}

fn too_many(pattern: &str) -> String {
    format!("`{pattern}` expands to more than {MAX_NAMES} host names")
}

/// The names one `[start:end(:step)]` stands for, refused before they are made if too many.
fn items(pattern: &str, range: &str) -> Result<Vec<String>, String> {
    let parts: Vec<&str> = range.split(':').collect();
    if parts.len() < 2 || parts.len() > 3 {
        return Err(format!("`{pattern}`: a range is [start:end] or [start:end:step]"));
    }
    let step: u64 = match parts.get(2) {
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
    let step_by = usize::try_from(step).unwrap_or(usize::MAX);
    if let (Some(b), Some(e)) = (letter(beg), letter(end)) {
        if b > e {
            return Err(format!("`{pattern}`: range start is after its end"));
        }
        Ok(LETTERS[b..=e].chars().step_by(step_by).map(String::from).collect())
    } else if let (Ok(b), Ok(e)) = (beg.parse::<u64>(), end.parse::<u64>()) {
        let width = if beg.len() > 1 && beg.starts_with('0') { beg.len() } else { 0 };
        if width > 0 && end.len() != width {
            return Err(format!("`{pattern}`: a zero-padded range needs a start and an end of one width"));
        }
        // Counted before any is made.
        if b <= e && (e - b) / step >= MAX_NAMES as u64 {
            return Err(too_many(pattern));
        }
        // Python's range(): an end before the start is no host at all.
        Ok((b..=e).step_by(step_by).map(|n| format!("{n:0width$}")).collect())
    } else {
        Err(format!("`{pattern}`: `[{range}]` is neither a numeric nor an alphabetic range"))
    }
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
        // Python's range(): backwards is empty, and what follows is not read.
        assert!(expand("n[3:1]").unwrap().is_empty());
        assert!(expand("n[3:1]x[q:1]").unwrap().is_empty());
    }

    #[test]
    fn bad_ranges_are_errors() {
        for p in ["n[1:", "n[c:a]", "n[1:2:0]", "n[a:3]", "n[1]", "n[01:3]", "n[1:]"] {
            assert!(expand(p).is_err(), "{p}");
        }
    }

    #[test]
    fn huge_ranges_are_refused_before_they_are_made() {
        // These used to allocate names until memory ran out.
        for p in ["h[0:999999999]", "h[0:18446744073709551615]", "a[0:99]b[0:99]c[0:99]", "h[0:10000]"] {
            let e = expand(p).unwrap_err();
            assert!(e.contains("more than 10000 host names"), "{p}: {e}");
        }
        assert_eq!(expand("h[0:9999]").unwrap().len(), 10_000);
        assert_eq!(expand("h[0:99999999:10000]").unwrap().len(), 10_000);
        assert_eq!(expand("h[0:18446744073709551615:18446744073709551615]").unwrap(), ["h0", "h18446744073709551615"]);
        // A long run of ranges is no deeper than one.
        assert_eq!(expand(&"[0:0]".repeat(100_000)).unwrap(), ["0".repeat(100_000)]);
    }
}
