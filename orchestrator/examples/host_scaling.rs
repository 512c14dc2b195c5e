//! How selecting, grouping and planning scale with the number of hosts:
//! figures for 1 000 to 8 000 hosts of one group (or the sizes given), each
//! size double the last, so a linear step takes about twice as long as the
//! one before and a quadratic one four times. Figures, not a test (a loaded machine would make
//! a timing assertion flaky):
//!
//!     cargo run --release -p benchrig --example host_scaling [SIZES...]

use benchrig::inventory::{pattern, Inventory, Vars};
use benchrig::playbook::TagFilter;
use benchrig::run::check::check_playbook;
use std::time::Instant;

/// `n` hosts in `lab`, each also in one of ten smaller groups, with a
/// scratch device so the quickstart plans on every one of them.
fn inventory(n: usize) -> String {
    let mut text = String::from("[lab]\n");
    for i in 0..n {
        text += &format!("h{i:05} scratch_devices=\"[{{'path': '/dev/sdb', 'name': 'd0'}}]\"\n");
    }
    for g in 0..10 {
        text += &format!("[g{g}]\n");
        for i in (g..n).step_by(10) {
            text += &format!("h{i:05}\n");
        }
    }
    text
}

fn timed<T>(f: impl FnOnce() -> T) -> (T, f64) {
    let start = Instant::now();
    let out = f();
    (out, start.elapsed().as_secs_f64() * 1e3)
}

fn main() -> anyhow::Result<()> {
    let quickstart = include_str!("../../playbooks/quickstart.yml");
    let dir = tempfile::tempdir()?;
    println!(
        "{:>6}  {:>10}  {:>10}  {:>12}  {:>14}  {:>16}",
        "hosts", "parse ms", "select ms", "groups_of ms", "host_vars ms", "check+plan ms"
    );
    let mut sizes: Vec<usize> = std::env::args().skip(1).map(|a| a.parse()).collect::<Result<_, _>>()?;
    if sizes.is_empty() {
        sizes = vec![1_000, 2_000, 4_000, 8_000];
    }
    let mut last: Option<[f64; 5]> = None;
    for n in sizes {
        let text = inventory(n);
        let (inv, parse) = timed(|| Inventory::parse_str("lab.ini", &text).expect("inventory"));
        let (selected, select) = timed(|| {
            let all = pattern::select(&inv, "all").expect("pattern").len();
            let some = pattern::select(&inv, "lab:!g0:&g*").expect("pattern").len();
            (all, some)
        });
        assert_eq!(selected, (n, n - n / 10));
        let (_, groups_of) = timed(|| inv.hosts.keys().map(|h| inv.groups_of(h).len()).sum::<usize>());
        let (_, host_vars) = timed(|| inv.hosts.keys().map(|h| inv.host_vars(h).len()).sum::<usize>());
        // What `benchrig run` and `benchrig plan` do before touching a host:
        // select, read every host's variables, plan every host.
        let path = dir.path().join(format!("lab{n}.ini"));
        std::fs::write(&path, &text)?;
        let pb = benchrig::playbook::parse("quickstart.yml", quickstart)?;
        let (checked, check) = timed(|| check_playbook(pb, &[path], None, &Vars::new(), &TagFilter::default()));
        assert_eq!(checked?.hosts.len(), n);
        let now = [parse, select, groups_of, host_vars, check];
        print!("{n:>6}  {parse:>10.1}  {select:>10.1}  {groups_of:>12.1}  {host_vars:>14.1}  {check:>16.1}");
        if let Some(before) = last {
            let ratios: Vec<String> = now.iter().zip(before).map(|(a, b)| format!("{:.1}", a / b)).collect();
            print!("   ×{} vs the size before", ratios.join(" ×"));
        }
        println!();
        last = Some(now);
    }
    Ok(())
}
