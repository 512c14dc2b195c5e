//! What every HTML page benchrig writes shares: the head (a strict
//! Content-Security-Policy, so a page opened from a mail or a CI artifact
//! can fetch nothing — no script, font, image or style from anywhere but
//! itself), the style, a figure (caption, legend and chart in one element,
//! so a caption cannot drift to another chart), warnings folded by kind,
//! and escaping.

use super::charts::{colour, hex};

/// Nothing but the page's own inline style and `data:` images.
pub const CSP: &str = "default-src 'none'; style-src 'unsafe-inline'; img-src data:";

const STYLE: &str = "body{font-family:system-ui,sans-serif;font-size:16px;line-height:1.4;margin:1.5em 2em;color:#222;max-width:1200px}\
h1{font-size:1.6em;margin:.2em 0}h2{font-size:1.3em;margin-top:1.6em;border-bottom:1px solid #ddd}h3{font-size:1.1em}\
.meta{color:#555}\
table{border-collapse:collapse;margin:.6em 0 1.2em}td,th{border:1px solid #ccc;padding:3px 8px;text-align:left}\
td.n{text-align:right;font-variant-numeric:tabular-nums}th{background:#f3f3f3}\
.bad{color:#b00}.good{color:#070}\
figure{margin:1em 0 1.8em;padding:.6em .8em;border:1px solid #ddd;border-radius:4px;display:inline-block;vertical-align:top;max-width:100%;box-sizing:border-box}\
figcaption{font-weight:600;font-size:1.05em;margin-bottom:.3em}\
figure svg{display:block;max-width:100%;height:auto}\
.legend{margin:.2em 0 .4em;font-size:15px}.legend .key{margin-right:1.2em;white-space:nowrap}\
.legend .sw{display:inline-block;width:.9em;height:.9em;margin-right:.35em;vertical-align:-.1em;border-radius:2px}\
.grid{display:flex;flex-wrap:wrap;gap:.6em}.grid figure{margin:0;font-size:14px}\
details{margin:.4em 0}summary{cursor:pointer;font-weight:600}details details{margin-left:1.2em}";

/// The page up to its `<body>`, and its heading.
pub fn head(title: &str) -> String {
    format!(
        "<!doctype html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\
         <meta http-equiv=\"Content-Security-Policy\" content=\"{CSP}\">\
         <meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\
         <title>{t}</title><style>{STYLE}</style></head><body>\n<h1>{t}</h1>\n",
        t = esc(title)
    )
}

pub const TAIL: &str = "</body></html>\n";

/// A chart in its own figure: caption first, then the legend (when the
/// chart tells more than one series apart: `axis` is what their names are
/// values of), then the SVG.
pub fn figure(caption: &str, axis: Option<&str>, series: &[String], svg: &str) -> String {
    format!("<figure><figcaption>{}</figcaption>{}{svg}</figure>\n", esc(caption), legend(axis, series))
}

/// The key of a chart's colours; none for a single series.
pub fn legend(axis: Option<&str>, series: &[String]) -> String {
    if series.len() < 2 {
        return String::new();
    }
    let mut out = String::from("<div class=\"legend\">");
    if let Some(a) = axis {
        out += &format!("<b>{}</b>: ", esc(a));
    }
    for (i, s) in series.iter().enumerate() {
        out += &format!(
            "<span class=\"key\"><span class=\"sw\" style=\"background:{}\"></span>{}</span>",
            hex(colour(i)),
            esc(s)
        );
    }
    out + "</div>"
}

/// Warnings folded away: one line for all of them, opening to a line per
/// kind with its count, each opening to its list.
pub fn warnings<'a>(groups: impl IntoIterator<Item = (String, Vec<&'a str>)>) -> String {
    let groups: Vec<(String, Vec<&str>)> = groups.into_iter().collect();
    let total: usize = groups.iter().map(|(_, l)| l.len()).sum();
    if total == 0 {
        return String::new();
    }
    let kinds: Vec<String> = groups.iter().map(|(k, l)| format!("{} {k}", l.len())).collect();
    let mut out = format!(
        "<h2>Warnings</h2>\n<details class=\"warnings\"><summary>{total} warning{}: {}</summary>\n",
        if total == 1 { "" } else { "s" },
        esc(&kinds.join(", "))
    );
    for (kind, list) in &groups {
        out += &format!("<details><summary>{} ({})</summary><ul>\n", esc(kind), list.len());
        for w in list {
            out += &format!("<li>{}</li>\n", esc(w));
        }
        out += "</ul></details>\n";
    }
    out + "</details>\n"
}

/// An RFC 3339 stamp to the second, as a person reads it: "2026-12-01
/// 15:23:54 UTC" (anything else as it is).
pub fn when(stamp: &str) -> String {
    match (stamp.get(..19), stamp.ends_with('Z')) {
        (Some(s), true) if s.as_bytes().get(10) == Some(&b'T') => format!("{} UTC", s.replacen('T', " ", 1)),
        _ => stamp.to_string(),
    }
}

pub fn esc(s: &str) -> String {
    s.replace('&', "&amp;").replace('<', "&lt;").replace('>', "&gt;").replace('"', "&quot;")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_legend_only_for_more_than_one_series_and_warnings_fold_with_a_count_per_kind() {
        assert_eq!(legend(Some("fs"), &["ext4".into()]), "");
        let l = legend(Some("fs"), &["ext4".into(), "x<fs".into()]);
        assert_eq!(l.matches("class=\"key\"").count(), 2);
        assert!(l.starts_with("<div class=\"legend\"><b>fs</b>: ") && l.contains("x&lt;fs"), "{l}");
        assert_eq!(warnings(Vec::<(String, Vec<&str>)>::new()), "");
        let w = warnings([("high CV".to_string(), vec!["a", "b"]), ("few".to_string(), vec!["c"])]);
        assert!(w.contains("<summary>3 warnings: 2 high CV, 1 few</summary>"), "{w}");
        assert!(w.contains("<details><summary>high CV (2)</summary><ul>\n<li>a</li>\n<li>b</li>"), "{w}");
        assert!(!w.contains("<details open"), "folded");
    }

    #[test]
    fn the_head_forbids_every_request() {
        let h = head("run <1>");
        assert!(h.contains("content=\"default-src 'none'; style-src 'unsafe-inline'; img-src data:\""), "{h}");
        assert!(h.contains("<h1>run &lt;1&gt;</h1>"));
        assert_eq!(when("2026-12-01T15:23:54.800610916Z"), "2026-12-01 15:23:54 UTC");
        assert_eq!(when("yesterday"), "yesterday");
    }
}
