//! The HTML reports in a real browser: runs made on this machine (no lab),
//! their run report, history report and comparison loaded in headless Chromium. The
//! page must render (the DOM after load, a screenshot), hold the charts
//! the runs call for, give every chart with more than one series a legend
//! naming them, and fetch nothing: the CSP, no http(s) URL in the DOM, and
//! a proxy the browser is pointed at that sees every request it makes.
//! The checks are checked too: a copy of a report with its legend taken
//! out, and one with an external image put in, must fail them.
//!
//! `BENCHRIG_CHROMIUM` names the browser (default `chromium`, which
//! `.ci/run` installs); `BENCHRIG_SCREENSHOTS_TO` a directory to copy the
//! screenshots to. (docs/report-run.png, a 3-host quickstart on the lab,
//! and docs/report-history.png, nine nights of speed.yml, were taken with
//! the same Chromium from real runs.)

mod common;

use common::{repo, stdout, Bench};
use std::io::Read;
use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::{Arc, Mutex};

/// Chromium's own background requests (component updates, its clock,
/// sign-in), made whatever the page is: exact hosts, so a page asking
/// fonts.googleapis.com is still caught.
const BROWSER_OWN: [&str; 8] = [
    "clients2.google.com",
    "redirector.gvt1.com",
    "update.googleapis.com",
    "accounts.google.com",
    "edgedl.me.gvt1.com",
    "safebrowsing.googleapis.com",
    "optimizationguide-pa.googleapis.com",
    "content-autofill.googleapis.com",
];

/// A proxy that answers nothing and remembers the first line of every
/// request sent through it ("GET http://x/y HTTP/1.1", "CONNECT x:443");
/// a connection that sends nothing is not a request.
struct Proxy {
    port: u16,
    seen: Arc<Mutex<Vec<String>>>,
}

impl Proxy {
    fn start() -> Proxy {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        let seen = Arc::new(Mutex::new(Vec::new()));
        let log = seen.clone();
        std::thread::spawn(move || {
            for conn in listener.incoming().flatten() {
                let log = log.clone();
                std::thread::spawn(move || {
                    let mut conn = conn;
                    let _ = conn.set_read_timeout(Some(std::time::Duration::from_secs(5)));
                    let mut buf = [0u8; 1024];
                    let n = conn.read(&mut buf).unwrap_or(0);
                    // Chromium opens spare connections to its proxy ahead of
                    // need and may close them unused: no bytes, no request.
                    if n == 0 {
                        return;
                    }
                    let text = String::from_utf8_lossy(&buf[..n]);
                    log.lock().unwrap().push(text.lines().next().unwrap_or("").to_string());
                });
            }
        });
        Proxy { port, seen }
    }

    /// The requests seen since the last call, Chromium's own left out.
    fn page_requests(&self) -> Vec<String> {
        let all = std::mem::take(&mut *self.seen.lock().unwrap());
        all.into_iter()
            .filter(|line| {
                let target = line.split_whitespace().nth(1).unwrap_or("");
                let host = target.trim_start_matches("http://").trim_start_matches("https://");
                let host = host.split(['/', ':']).next().unwrap_or("");
                !BROWSER_OWN.contains(&host)
            })
            .collect()
    }
}

fn chromium() -> String {
    std::env::var("BENCHRIG_CHROMIUM").unwrap_or_else(|_| "chromium".into())
}

/// What the browser made of a page: its DOM after load and a screenshot.
struct Loaded {
    dom: String,
    screenshot: PathBuf,
}

/// Headless Chromium on `page` with `extra`, every request through `proxy`.
fn chrome(page: &Path, proxy: &Proxy, profile: &Path, height: u32, extra: &str) -> std::process::Output {
    let url = format!("file://{}", page.display());
    let out = Command::new(chromium())
        .args(["--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars", "--no-first-run"])
        .arg(format!("--user-data-dir={}", profile.display()))
        .arg(format!("--proxy-server=http://127.0.0.1:{}", proxy.port))
        // Through the proxy even for this machine's names.
        .arg("--proxy-bypass-list=<-loopback>")
        .arg(format!("--window-size=1280,{height}"))
        .arg(extra)
        .arg(&url)
        .output()
        .expect("run chromium (BENCHRIG_CHROMIUM, or `chromium` on PATH)");
    assert!(out.status.success(), "chromium {extra} {url}: {}", String::from_utf8_lossy(&out.stderr));
    out
}

/// Load `page`: its DOM and a screenshot.
fn load(page: &Path, proxy: &Proxy, profile: &Path, height: u32) -> Loaded {
    let dom = stdout(&chrome(page, proxy, profile, height, "--dump-dom"));
    let screenshot = page.with_extension("png");
    chrome(page, proxy, profile, height, &format!("--screenshot={}", screenshot.display()));
    Loaded { dom, screenshot }
}

/// Only the DOM after load, for a page whose look another check covers.
fn dom(page: &Path, proxy: &Proxy, profile: &Path) -> String {
    stdout(&chrome(page, proxy, profile, 900, "--dump-dom"))
}

/// The files a page's links lead to, resolved as the browser resolves
/// them: relative to the page; a link that leaves the site or names no
/// file fails here.
fn hrefs(page: &Path, dom: &str) -> Vec<PathBuf> {
    let href = regex::Regex::new(r#"href="([^"]+)""#).unwrap();
    href.captures_iter(dom)
        .map(|c| {
            let target = page.parent().unwrap().join(&c[1]);
            assert!(!c[1].contains(':') && target.is_file(), "{page:?} links to {}: no such page", &c[1]);
            target.canonicalize().unwrap()
        })
        .collect()
}

/// The page rendered: its heading is in the DOM and the screenshot is a
/// PNG with something on it (a blank 1280-pixel page is a few KB).
fn check_rendered(l: &Loaded, heading: &str) -> Result<(), String> {
    if !l.dom.contains(&format!("<h1>{heading}")) {
        return Err(format!("no <h1>{heading}… in the DOM"));
    }
    let png = std::fs::read(&l.screenshot).map_err(|e| format!("no screenshot: {e}"))?;
    if !png.starts_with(b"\x89PNG") || png.len() < 20_000 {
        return Err(format!("the screenshot is not a PNG of a drawn page ({} bytes)", png.len()));
    }
    Ok(())
}

/// The figures of a DOM, each as its text.
fn figures(dom: &str) -> Vec<&str> {
    dom.split("<figure").skip(1).map(|f| f.split("</figure>").next().unwrap_or("")).collect()
}

/// The series a chart draws, told apart by colour: the distinct fills of
/// its bars and points (white, black and greys are backgrounds, whiskers
/// and marks).
fn series_colours(svg: &str) -> Vec<String> {
    let re = regex::Regex::new(r#"<(?:rect|circle)[^>]*\bfill="(#[0-9A-Fa-f]{6})""#).unwrap();
    let mut out: Vec<String> = Vec::new();
    for c in re.captures_iter(svg) {
        let hex = c[1].to_ascii_uppercase();
        let (r, g, b) = (&hex[1..3], &hex[3..5], &hex[5..7]);
        if r == g && g == b {
            continue;
        }
        if !out.contains(&hex) {
            out.push(hex);
        }
    }
    out
}

/// `want` charts, each in a figure of its own with its caption, and a
/// legend naming as many series as it draws when it draws more than one.
fn check_charts(dom: &str, want: usize) -> Result<(), String> {
    let svgs = dom.matches("<svg").count();
    if svgs != want {
        return Err(format!("{svgs} charts, expected {want}"));
    }
    let figs = figures(dom);
    if figs.iter().map(|f| f.matches("<svg").count()).sum::<usize>() != want {
        return Err("a chart outside a figure".into());
    }
    for f in figs {
        let caption = f.split("<figcaption>").nth(1).and_then(|c| c.split("</figcaption>").next()).unwrap_or("");
        if caption.trim().is_empty() {
            return Err("a figure without its caption".into());
        }
        let series = series_colours(f).len();
        let keys = f.matches("class=\"key\"").count();
        if series > 1 && keys != series {
            return Err(format!("\"{caption}\" draws {series} series and its legend names {keys}"));
        }
    }
    Ok(())
}

/// Nothing can leave the page: the CSP forbids it, no element points at
/// an http(s) URL, and the proxy saw no request but the browser's own.
fn check_no_request(dom: &str, proxy: &Proxy) -> Result<(), String> {
    let csp = "<meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; style-src 'unsafe-inline'; img-src data:\">";
    if !dom.contains(csp) {
        return Err("no strict Content-Security-Policy".into());
    }
    let url = regex::Regex::new(r#"(?i)(src|href)\s*=\s*["']?\s*https?:|url\(\s*["']?https?:"#).unwrap();
    if let Some(m) = url.find(dom) {
        return Err(format!("an external URL in the DOM: {}", m.as_str()));
    }
    let requests = proxy.page_requests();
    if !requests.is_empty() {
        return Err(format!("the page made requests: {requests:?}"));
    }
    Ok(())
}

fn run_ok(b: &Bench, args: &[&str]) {
    let out = b.run(args);
    assert_eq!(out.status.code(), Some(0), "benchrig {}", args.join(" "));
}

#[test]
#[ignore = "needs Chromium (.ci/run installs it) and the agent builds (ci/test.sh)"]
fn the_reports_render_in_chromium_with_their_charts_and_legends_and_fetch_nothing() {
    let b = Bench::new();
    let dir = b.dir.path();
    let profile = dir.join("chromium-profile");
    let proxy = Proxy::start();

    // The detector works: a page that does fetch is seen fetching.
    let leaky = b.write("leaky.html", "<!doctype html><h1>leaky</h1><img src=\"http://benchrig.invalid/pixel.png\">");
    let l = load(&leaky, &proxy, &profile, 400);
    let seen = proxy.page_requests();
    assert!(seen.iter().any(|r| r.contains("benchrig.invalid")), "the proxy must see the page's request: {seen:?}");
    assert!(check_no_request(&l.dom, &proxy).is_err());

    // A run with a two-axis matrix: bs along x, fs the colour (3 series).
    let matrix = repo().join("orchestrator/tests/data/html/matrix.yml");
    run_ok(&b, &["run", matrix.to_str().unwrap(), "--name", "matrix"]);
    let page = b.write("run.html", &stdout(&b.run(&["report", "matrix", "--format", "html"])));
    let l = load(&page, &proxy, &profile, 1700);
    check_rendered(&l, "benchrig run").unwrap();
    // Two steps (write, read) × two metrics (speed, and exec's time).
    check_charts(&l.dom, 4).unwrap();
    check_no_request(&l.dom, &proxy).unwrap();
    for f in figures(&l.dom) {
        assert_eq!(series_colours(f).len(), 3, "a colour per filesystem: {f}");
        for fs in ["ext4", "xfs", "btrfs"] {
            assert!(f.contains(&format!("</span>{fs}</span>")), "the legend names {fs}");
        }
    }
    assert!(l.dom.contains("<details class=\"warnings\">") || !l.dom.contains("<h2>Warnings"), "warnings folded");
    let charts_before_tables = l.dom.find("<svg").unwrap() < l.dom.find("<table").unwrap();
    assert!(charts_before_tables, "the report leads with its charts");
    let run_png = l.screenshot.clone();

    // The checks can fail: the same page without its legends, or with an
    // external image.
    let no_legend = regex::Regex::new(r#"<div class="legend">.*?</div>"#).unwrap().replace_all(&l.dom, "");
    let err = check_charts(&no_legend, 4).unwrap_err();
    assert!(err.contains("its legend names 0"), "{err}");
    let leak = l.dom.replace("</h1>", "</h1><img src=\"https://fonts.benchrig.invalid/x.png\">");
    // With the CSP the browser refuses to fetch it; the DOM check names it.
    let t = load(&b.write("leak-csp.html", &leak), &proxy, &profile, 400);
    let err = check_no_request(&t.dom, &proxy).unwrap_err();
    assert!(err.contains("an external URL in the DOM"), "{err}");
    assert_eq!(proxy.page_requests(), Vec::<String>::new(), "the CSP stopped the request");
    // Without it, the image is fetched and the proxy sees it.
    let bare = leak.replace("<meta http-equiv=\"Content-Security-Policy\"", "<meta name=\"x\"");
    let t = load(&b.write("leak-bare.html", &bare), &proxy, &profile, 400);
    let err = check_no_request(&t.dom, &proxy).unwrap_err();
    assert!(err.contains("Content-Security-Policy"), "{err}");
    let seen = proxy.page_requests();
    assert!(seen.iter().any(|r| r.contains("fonts.benchrig.invalid")), "{seen:?}");

    // A run with monitors: its step's result chart, then the timeline of
    // what the monitors saw, in a figure of its own with a legend naming
    // each of its series.
    let monitored = repo().join("orchestrator/tests/data/html/monitored.yml");
    run_ok(&b, &["run", monitored.to_str().unwrap(), "--name", "monitored"]);
    let page = b.write("monitored.html", &stdout(&b.run(&["report", "monitored", "--format", "html"])));
    let l = load(&page, &proxy, &profile, 1500);
    check_rendered(&l, "benchrig run").unwrap();
    // speed and exec's time, then the one step's timeline.
    check_charts(&l.dom, 3).unwrap();
    check_no_request(&l.dom, &proxy).unwrap();
    let timeline = figures(&l.dom).into_iter().find(|f| f.contains("over time")).expect("a timeline figure");
    assert!(timeline.contains("wait: repetition 1 over time (every 200 ms)"), "{timeline}");
    for series in ["%iowait", "%user+sys", "rMB/s", "wMB/s"] {
        assert!(timeline.contains(&format!("</span>{series}</span>")), "the legend names {series}");
    }
    assert!(series_colours(timeline).len() >= 4, "a colour per series: {timeline}");
    assert!(l.dom.contains("<details open"), "shown at once in a small run");

    // Nights of speed.yml, a step down after the fifth: a history with a change.
    let speed = repo().join("orchestrator/tests/data/compare/speed.yml");
    for (i, s) in ["100", "100", "101", "100", "100", "80", "80", "81", "80"].iter().enumerate() {
        let name = format!("night-{}", i + 1);
        run_ok(&b, &["run", speed.to_str().unwrap(), "-e", &format!("speed={s}"), "--name", &name]);
    }
    let json: serde_json::Value =
        serde_json::from_str(&stdout(&b.run(&["history", "--playbook", "speed.yml", "--format", "json"]))).unwrap();
    let series = json["series"].as_array().unwrap();
    let changed = series.iter().filter(|s| !s["changes"].as_array().unwrap().is_empty()).count();
    assert!(changed >= 1, "the step down is found: {json}");
    let page = b.write("history.html", &stdout(&b.run(&["history", "--playbook", "speed.yml", "--format", "html"])));
    let l = load(&page, &proxy, &profile, 1300);
    check_rendered(&l, "benchrig history").unwrap();
    check_charts(&l.dom, series.len() + changed).unwrap();
    check_no_request(&l.dom, &proxy).unwrap();
    assert!(l.dom.contains("night-6") && l.dom.contains("p="), "the change is annotated");

    // The same nights compared: a figure per metric (speed, exec's time)
    // with a bar per run, BASE first, and the step down marked.
    let page = dir.join("compare.html");
    run_ok(&b, &["compare", "night-1", "night-5", "night-9", "--format", "html", "-o", page.to_str().unwrap()]);
    let l = load(&page, &proxy, &profile, 1100);
    check_rendered(&l, "benchrig compare").unwrap();
    check_charts(&l.dom, 2).unwrap();
    check_no_request(&l.dom, &proxy).unwrap();
    let speed = figures(&l.dom).into_iter().find(|f| f.contains("measure: speed")).expect("a speed figure");
    assert_eq!(series_colours(speed).len(), 3, "a colour per run: {speed}");
    assert!(speed.contains(", 1 regressed"), "{speed}");
    assert!(l.dom.contains("<td class=\"n bad\">"), "the regression is marked in the table");

    // The same nights as a site: the index renders, and every page it
    // links to, and every page the history page links to, loads from
    // file:// by its relative link, renders with its charts and fetches
    // nothing.
    let site = dir.join("site");
    run_ok(&b, &["site", "-o", site.to_str().unwrap()]);
    let l = load(&site.join("index.html"), &proxy, &profile, 900);
    check_rendered(&l, "benchrig results").unwrap();
    check_no_request(&l.dom, &proxy).unwrap();
    let mut followed = std::collections::BTreeSet::new();
    let mut history_page = None;
    for target in hrefs(&site.join("index.html"), &l.dom) {
        if target.to_string_lossy().contains("/history/") && target.to_string_lossy().contains("speed-yml") {
            history_page = Some(target.clone());
        }
        followed.insert(target);
    }
    let history_page = history_page.expect("the index links speed.yml's history");
    let history_dom = dom(&history_page, &proxy, &profile);
    followed.extend(hrefs(&history_page, &history_dom));
    // The 11 runs' reports (two single runs, nine nights), the nights'
    // comparisons (all but the first), the three playbooks' histories.
    assert_eq!(followed.len(), 11 + 8 + 3, "{followed:?}");
    for page in &followed {
        let dom = dom(page, &proxy, &profile);
        let kind = page.parent().unwrap().file_name().unwrap().to_str().unwrap();
        let heading = match kind {
            "runs" => "benchrig run",
            "compare" => "benchrig compare",
            "history" => "benchrig history",
            other => panic!("a link to {other}/: {page:?}"),
        };
        assert!(dom.contains(&format!("<h1>{heading}")), "{page:?} rendered");
        assert!(dom.contains("<svg"), "{page:?} has its charts");
        check_no_request(&dom, &proxy).unwrap_or_else(|e| panic!("{page:?}: {e}"));
    }

    if let Ok(to) = std::env::var("BENCHRIG_SCREENSHOTS_TO") {
        std::fs::copy(&run_png, Path::new(&to).join("report-run.png")).unwrap();
        std::fs::copy(&l.screenshot, Path::new(&to).join("report-history.png")).unwrap();
    }
}
