//! `benchrig site`: a static site of the results, as pages that link to
//! each other by relative paths only (it works from `file://` and from any
//! sub-path of a web server) and fetch nothing (every page is the reports'
//! shell, `report::page`). This module is pure: where each page goes, what
//! the manifest remembers of what was written (`manifest`, so a new night
//! writes its own pages, the history pages and the index, not a year of
//! reports again), and the index (`index`). `commands::site` reads the
//! store and writes the files.

pub mod index;
pub mod manifest;

/// A run's report, from the site's root.
pub fn report_path(run: i64) -> String {
    format!("runs/{run}.html")
}

/// A run's comparison with its automatic baseline.
pub fn compare_path(run: i64) -> String {
    format!("compare/{run}.html")
}

/// A playbook's history page: its stored path made a file name, with six
/// hex digits of its SHA-256 so that paths the slug would make one
/// (`a/x.yml`, `a-x.yml`) get two pages:
/// `playbooks/quickstart.yml` → `history/playbooks-quickstart-yml-XXXXXX.html`.
pub fn history_path(playbook: &str) -> String {
    use sha2::{Digest, Sha256};
    let slug: String = playbook.chars().map(|c| if c.is_ascii_alphanumeric() || c == '_' { c } else { '-' }).collect();
    let hash: String = Sha256::digest(playbook).iter().take(3).map(|b| format!("{b:02x}")).collect();
    format!("history/{}-{hash}.html", slug.trim_matches('-'))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pages_get_file_names_a_web_server_serves_as_they_are() {
        let page = history_path("playbooks/quickstart.yml");
        assert!(page.starts_with("history/playbooks-quickstart-yml-") && page.ends_with(".html"), "{page}");
        assert_eq!(page.len(), "history/playbooks-quickstart-yml-123456.html".len());
        assert!(history_path("/home/a b/x.yml").starts_with("history/home-a-b-x-yml-"));
        assert_ne!(history_path("a/x.yml"), history_path("b/x.yml"));
        assert_ne!(history_path("a/x.yml"), history_path("a-x.yml"), "one slug, two pages");
        assert_eq!(report_path(12), "runs/12.html");
        assert_eq!(compare_path(12), "compare/12.html");
    }
}
