//! A lab's mornings, from the real binary on nights stored with their
//! dates (imported, as a central database gets them): `history --alert`
//! posts each regression once to a webhook (a receiver this test runs:
//! refused and failing posts stamp nothing, so the next night retries),
//! `history ack` takes a change out of the gate, and `benchrig site`
//! writes a site whose every link resolves, incrementally (a new night
//! writes its own pages, the history and the index, not every report
//! again), keeping the reports of nights pruned since.

mod common;

use common::receiver::Receiver;
use common::{night, stored, Bench};
use serde_json::Value as Json;
use std::path::Path;
use std::process::Output;

fn text(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

fn err(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

/// The ids of a history's changes, by the night they arrived with.
fn changes(b: &Bench) -> Vec<(String, String, Json)> {
    let out = b.run(&["history", "--playbook", "speed.yml", "--format", "json", "--max-pvalue", "0.01"]);
    assert_eq!(out.status.code(), Some(0), "{}", err(&out));
    let doc: Json = serde_json::from_str(&text(&out)).unwrap();
    doc["series"]
        .as_array()
        .unwrap()
        .iter()
        .flat_map(|s| s["changes"].as_array().unwrap().clone())
        .map(|c| (c["run"]["name"].as_str().unwrap().to_string(), c["id"].as_str().unwrap().to_string(), c))
        .collect()
}

#[test]
fn each_regression_is_posted_once_and_an_acknowledged_one_no_longer_fails_the_gate() {
    let b = Bench::new();
    let db = b.db();
    let hook = Receiver::start();
    let url = format!("{}/hook", hook.base);
    let bodies = || -> Vec<Json> {
        let taken = hook.taken();
        for r in &taken {
            assert!(r.line.starts_with("POST /hook ") && r.header("content-type") == Some("application/json"), "{r:?}");
        }
        taken.iter().map(|r| r.json()).collect()
    };
    // Twelve nights at 100 MB/s, then 80 from night 13.
    stored(&db, (0..14).map(|i| night(i, if i < 12 { 100.0 } else { 80.0 }, 5)));
    let gate = |extra: &[&str]| {
        let mut args = vec!["history", "--playbook", "speed.yml", "--max-pvalue", "0.01", "--fail-on-regression"];
        args.extend(extra);
        b.run(&args)
    };
    let alert = |extra: &[&str]| {
        let mut args = vec!["--alert", "--webhook", url.as_str()];
        args.extend(extra);
        gate(&args)
    };

    // Nobody listening: an error that names the webhook, and nothing stamped.
    let closed = "http://127.0.0.1:9/hook";
    let out = gate(&["--alert", "--webhook", closed]);
    assert_eq!(out.status.code(), Some(1), "{}", err(&out));
    assert!(err(&out).contains(&format!("webhook {closed}:")), "{}", err(&out));
    assert!(text(&out).contains("night-013"), "the history is printed all the same: {}", text(&out));
    // A receiver that fails: what it said is said, and nothing stamped.
    hook.answers.lock().unwrap().push(503);
    let out = alert(&[]);
    assert_eq!(out.status.code(), Some(1));
    assert!(err(&out).contains("answered 503") && err(&out).contains("nope"), "{}", err(&out));
    assert!(bodies().is_empty());

    // Taken: posted once, with the change, and the gate fails (night 13
    // is not among the newest --since 1, but it is reported tonight).
    let out = alert(&[]);
    assert_eq!(out.status.code(), Some(3), "{}", err(&out));
    let posted = bodies();
    assert_eq!(posted.len(), 1);
    let first = &posted[0]["changes"].as_array().unwrap()[0];
    assert_eq!((first["run"]["name"].as_str(), first["direction"].as_str()), (Some("night-013"), Some("regression")));
    assert!(first["change_pct"].as_f64().unwrap() < -15.0, "{first}");
    assert!(posted[0]["text"].as_str().unwrap().contains("1 new regression(s)"), "{}", posted[0]);
    let id = first["id"].as_str().unwrap().to_string();
    assert!(changes(&b).iter().any(|(_, i, c)| *i == id && c["alerted"].is_string()), "stamped reported");

    // The next nights, at 80: nothing new to post, and the gate passes.
    stored(&db, (14..17).map(|i| night(i, 80.0, 5)));
    let out = alert(&[]);
    assert_eq!(out.status.code(), Some(0), "{}", err(&out));
    assert!(bodies().is_empty(), "reported once");
    // A second step down, at night 21: posted, by itself.
    stored(&db, (17..24).map(|i| night(i, if i < 20 { 80.0 } else { 60.0 }, 5)));
    assert_eq!(alert(&[]).status.code(), Some(3));
    let posted = bodies();
    let runs: Vec<&str> = posted
        .iter()
        .flat_map(|p| p["changes"].as_array().unwrap())
        .map(|c| c["run"]["name"].as_str().unwrap())
        .collect();
    assert_eq!(runs, ["night-021"]);
    let second = posted[0]["changes"][0]["id"].as_str().unwrap().to_string();
    assert_ne!(second, id);

    // Acknowledged, a regression no longer fails the gate; the other does.
    let all_nights = ["--since", "100"];
    assert_eq!(gate(&all_nights).status.code(), Some(3));
    let out = b.run(&["history", "ack", "0123456789", "--playbook", "speed.yml", "--max-pvalue", "0.01"]);
    assert_eq!(out.status.code(), Some(1));
    assert!(
        err(&out).contains("no change 0123456789 in this history") && err(&out).contains("nothing was acknowledged"),
        "{}",
        err(&out)
    );
    let out = b.run(&[
        "history",
        "ack",
        &id,
        "--note",
        "the new firmware",
        "--playbook",
        "speed.yml",
        "--max-pvalue",
        "0.01",
    ]);
    assert_eq!(out.status.code(), Some(0), "{}", err(&out));
    assert!(text(&out).starts_with(&format!("acknowledged {id}: h · speed")), "{}", text(&out));
    assert_eq!(gate(&all_nights).status.code(), Some(3), "night 21's is still open");
    let table = text(&gate(&all_nights));
    assert!(table.contains(&format!("{id} (acked by ")) && table.contains(": the new firmware)"), "{table}");
    assert_eq!(
        b.run(&["history", "ack", &second, "--playbook", "speed.yml", "--max-pvalue", "0.01"]).status.code(),
        Some(0)
    );
    assert_eq!(gate(&all_nights).status.code(), Some(0), "both acknowledged");
    // An acknowledged change is not posted either.
    assert_eq!(alert(&all_nights).status.code(), Some(0));
    assert!(bodies().is_empty());
}

/// Every relative link of a page in the site: (the link, whether its file is there).
fn links(site: &Path, page: &str) -> Vec<(String, bool)> {
    let html = std::fs::read_to_string(site.join(page)).unwrap();
    let base = site.join(page).parent().unwrap().to_path_buf();
    let href = regex::Regex::new(r#"href="([^"]+)""#).unwrap();
    href.captures_iter(&html).map(|c| (c[1].to_string(), base.join(&c[1]).is_file())).collect()
}

#[test]
fn the_site_links_every_page_it_has_and_a_new_night_writes_only_its_own() {
    let b = Bench::new();
    let db = b.db();
    stored(&db, (0..10).map(|i| night(i, if i < 7 { 100.0 } else { 80.0 }, 5)));
    let site = b.dir.path().join("site");
    let build = || {
        let out = b.run(&["site", "-o", site.to_str().unwrap(), "--max-pvalue", "0.01"]);
        assert_eq!(out.status.code(), Some(0), "{}", err(&out));
        err(&out)
    };
    let said = build();
    assert!(
        said.contains(
            "site: 10 run(s) written, 0 kept from before, 0 taken out (--keep-last 30); 1 of 1 history page(s) changed"
        ),
        "{said}"
    );
    let index = std::fs::read_to_string(site.join("index.html")).unwrap();
    assert!(!index.contains("href=\"/") && !index.contains("href=\"http"), "relative links only");
    let from_index = links(&site, "index.html");
    // A report per night, a comparison for each but the first, the history page.
    assert_eq!(from_index.iter().filter(|(l, _)| l.starts_with("runs/")).count(), 10);
    assert_eq!(from_index.iter().filter(|(l, _)| l.starts_with("compare/")).count(), 9);
    assert!(from_index.iter().all(|(_, there)| *there), "{from_index:?}");
    assert!(index.contains("1 regression(s)"), "night 8's change is on the index");
    let history = from_index.iter().find(|(l, _)| l.starts_with("history/")).unwrap().0.clone();
    let from_history = links(&site, &history);
    assert!(from_history.contains(&("../runs/8.html".into(), true)), "{from_history:?}");
    assert!(from_history.contains(&("../compare/8.html".into(), true)), "{from_history:?}");

    // Nothing new: nothing written, not even the index's time.
    let stamp = |p: &str| std::fs::metadata(site.join(p)).unwrap().modified().unwrap();
    let (report_1, index_t) = (stamp("runs/1.html"), stamp("index.html"));
    assert!(build().contains(
        "0 run(s) written, 10 kept from before, 0 taken out (--keep-last 30); 0 of 1 history page(s) changed"
    ));
    assert_eq!((stamp("runs/1.html"), stamp("index.html")), (report_1, index_t));

    // A new night, then old nights pruned: the new night's pages, the
    // history and the index are written; the old reports stay and are linked.
    stored(&db, (10..11).map(|i| night(i, 80.0, 5)));
    assert_eq!(b.run(&["prune", "--older-than", "1d", "--keep-last", "3"]).status.code(), Some(0));
    let said = build();
    assert!(
        said.contains(
            "1 run(s) written, 10 kept from before, 0 taken out (--keep-last 30); 1 of 1 history page(s) changed"
        ),
        "{said}"
    );
    assert_eq!(stamp("runs/1.html"), report_1);
    assert!(links(&site, "index.html").iter().all(|(_, there)| *there));
    assert!(links(&site, "index.html").iter().any(|(l, _)| l == "runs/11.html"));

    // Keeping the newest 4 takes the older nights' pages out (still listed,
    // still linked nowhere dead); keeping all again cannot write them back:
    // those nights are pruned.
    let keep = |n: &str| {
        let out = b.run(&["site", "-o", site.to_str().unwrap(), "--max-pvalue", "0.01", "--keep-last", n]);
        assert_eq!(out.status.code(), Some(0), "{}", err(&out));
        err(&out)
    };
    let said = keep("4");
    assert!(said.contains("0 run(s) written, 4 kept from before, 7 taken out (--keep-last 4)"), "{said}");
    assert!(!site.join("runs/1.html").exists() && !site.join("compare/7.html").exists());
    assert!(site.join("runs/8.html").exists() && site.join("compare/8.html").exists());
    let index = std::fs::read_to_string(site.join("index.html")).unwrap();
    assert!(index.contains("night-005 (report not kept)"), "{index}");
    assert!(links(&site, "index.html").iter().all(|(_, there)| *there));
    assert!(links(&site, &history).iter().all(|(_, there)| *there), "the history page links no page taken out");
    let said = keep("0");
    assert!(said.contains("0 run(s) written, 4 kept from before, 0 taken out"), "pruned: not written back: {said}");

    // A site pruned before it was first written names what it cannot show.
    let fresh = b.dir.path().join("fresh");
    let out = b.run(&["site", "-o", fresh.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(0), "{}", err(&out));
    let index = std::fs::read_to_string(fresh.join("index.html")).unwrap();
    assert!(index.contains("night-001 (pruned)") && !index.contains("runs/1.html"), "{index}");
    assert!(links(&fresh, "index.html").iter().all(|(_, there)| *there));
    // A directory that is not a site is refused, and left as it is.
    std::fs::write(fresh.join("site.json"), "not json").unwrap();
    let out = b.run(&["site", "-o", fresh.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(1));
    assert!(err(&out).contains("site.json") && err(&out).contains("not a site benchrig wrote"), "{}", err(&out));
}

#[test]
fn a_playbook_run_from_two_directories_gets_a_history_page_for_each() {
    let b = Bench::new();
    let elsewhere = |mut doc: Json| {
        doc["run"]["playbook"] = "lab/speed.yml".into();
        doc
    };
    // Nights 1-3 of speed.yml, 4-6 of lab/speed.yml: stored ids 1-6.
    stored(&b.db(), (0..3).map(|i| night(i, 100.0, 5)).chain((3..6).map(|i| elsewhere(night(i, 50.0, 5)))));
    let site = b.dir.path().join("site");
    let out = b.run(&["site", "-o", site.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(0), "{}", err(&out));
    assert!(err(&out).contains("2 of 2 history page(s) changed"), "{}", err(&out));
    let page_of = |playbook: &str| std::fs::read_to_string(site.join(benchrig::site::history_path(playbook))).unwrap();
    let nights = |page: &str| (1..=6).filter(|i| page.contains(&format!("night-{i:03}"))).collect::<Vec<_>>();
    // Before, speed.yml's page took lab/speed.yml's nights too, by file name.
    let (own, other) = (page_of("speed.yml"), page_of("lab/speed.yml"));
    // Each titled with its own path alone (a mixed page named both: `speed.yml, lab/speed.yml`).
    assert!(own.contains("history — speed.yml<"), "{own}");
    assert!(other.contains("history — lab/speed.yml<"), "{other}");
    assert!(nights(&own).iter().all(|i| *i <= 3) && nights(&own).contains(&3), "nights 1 to 3 alone: {own}");
    assert!(nights(&other).iter().all(|i| *i >= 4) && nights(&other).contains(&6), "nights 4 to 6 alone: {other}");
}
