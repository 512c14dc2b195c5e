//! The limits the agent's own cgroups put on it, cgroup v1 and v2 alike.
//!
//! The agent's cgroup per hierarchy comes from `/proc/self/cgroup` (v1
//! lines `N:controller[,controller]:/path`, the v2 line `0::/path`), each
//! hierarchy's mount from `/proc/self/mountinfo` (wherever it is: the lab
//! mounts its v1 hierarchies on a tmpfs inside each host's mount namespace,
//! and a container may see only a subtree, the mount's root). A limit set on
//! any ancestor applies too, so each one is the tightest found walking from
//! the agent's cgroup up to the mount's root. Limits above what is visible
//! (outside a container's cgroup namespace) cannot be seen.

use crate::sysfs::{unescape, SysView};
use std::fs;
use std::path::{Path, PathBuf};

/// What the cgroups say, before comparing with the machine's totals.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct CgroupLimits {
    /// v1 `memory.limit_in_bytes`, v2 `memory.max`.
    pub memory_bytes: Option<u64>,
    /// v1 `memory.memsw.limit_in_bytes`, v2 `memory.max` + `memory.swap.max`.
    pub memory_swap_bytes: Option<u64>,
    /// v1 `cpu.cfs_quota_us / cpu.cfs_period_us`, v2 `cpu.max`, in CPUs.
    pub cpu_quota: Option<f64>,
    /// v1 `cpuset.effective_cpus` (or `cpuset.cpus`), v2 `cpuset.cpus.effective`.
    pub cpuset: Option<String>,
}

/// v1 writes "no limit" as the largest page-aligned i64; anything this
/// large (4 EiB) is no limit either.
const UNLIMITED: u64 = 1 << 62;

/// One line of `/proc/self/cgroup`.
#[derive(Debug, PartialEq)]
struct Membership {
    /// Empty for the v2 (unified) hierarchy.
    controllers: Vec<String>,
    path: String,
}

fn parse_proc_cgroup(text: &str) -> Vec<Membership> {
    text.lines()
        .filter_map(|l| {
            let mut parts = l.splitn(3, ':');
            let (_, ctrls, path) = (parts.next()?, parts.next()?, parts.next()?);
            let controllers = ctrls.split(',').filter(|c| !c.is_empty()).map(str::to_string).collect();
            Some(Membership { controllers, path: path.to_string() })
        })
        .collect()
}

/// A cgroup filesystem in mountinfo.
#[derive(Debug, PartialEq)]
struct CgroupMount {
    /// The directory of the hierarchy this mount shows at its mount point.
    root: String,
    target: String,
    /// `None` for cgroup2; else the v1 controllers (super options) of the hierarchy.
    controllers: Option<Vec<String>>,
}

fn parse_cgroup_mounts(mountinfo: &str) -> Vec<CgroupMount> {
    mountinfo
        .lines()
        .filter_map(|line| {
            let (left, right) = line.split_once(" - ")?;
            let l: Vec<&str> = left.split(' ').collect();
            let r: Vec<&str> = right.split(' ').collect();
            let controllers = match *r.first()? {
                "cgroup2" => None,
                "cgroup" => Some(r.get(2)?.split(',').map(str::to_string).collect()),
                _ => return None,
            };
            Some(CgroupMount { root: unescape(l.get(3)?), target: unescape(l.get(4)?), controllers })
        })
        .collect()
}

/// The agent's cgroup directories in one hierarchy (v1 `controller`, or v2
/// when `None`), its own first, then each parent up to the mount's root.
fn chain(view: &SysView, members: &[Membership], mounts: &[CgroupMount], controller: Option<&str>) -> Vec<PathBuf> {
    let member = members.iter().find(|m| match controller {
        Some(c) => m.controllers.iter().any(|x| x == c),
        None => m.controllers.is_empty(),
    });
    let Some(member) = member else { return Vec::new() };
    let path = Path::new(&member.path);
    for m in mounts {
        let ours = match (&m.controllers, controller) {
            (Some(opts), Some(c)) => opts.iter().any(|o| o == c),
            (None, None) => true,
            _ => false,
        };
        // A mount showing a subtree that does not hold our cgroup (another
        // container's, or ours outside our cgroup namespace) tells nothing.
        let Some(rel) = ours.then(|| path.strip_prefix(&m.root).ok()).flatten() else { continue };
        let base = view.host_path(&m.target);
        if !base.is_dir() {
            continue;
        }
        return rel.ancestors().map(|a| base.join(a)).collect();
    }
    Vec::new()
}

/// A byte limit: a number, or none for `max` and v1's huge "unlimited".
fn bytes(text: &str) -> Option<u64> {
    text.trim().parse::<u64>().ok().filter(|&b| b < UNLIMITED)
}

/// v2 `cpu.max`: "max 100000" (none) or "12000 100000", in CPUs.
fn cpu_max(text: &str) -> Option<f64> {
    let mut it = text.split_whitespace();
    let quota: f64 = it.next()?.parse().ok()?;
    let period: f64 = it.next().unwrap_or("100000").parse().ok()?;
    (quota > 0.0 && period > 0.0).then(|| quota / period)
}

/// v1 `cpu.cfs_quota_us` (-1: none) over `cpu.cfs_period_us`, in CPUs.
fn cfs(view: &SysView, dir: &Path) -> Option<f64> {
    let quota: f64 = view.read(&dir.join("cpu.cfs_quota_us"))?.parse().ok()?;
    let period: f64 = view.read(&dir.join("cpu.cfs_period_us"))?.parse().ok()?;
    (quota > 0.0 && period > 0.0).then(|| quota / period)
}

fn min_u64(values: impl IntoIterator<Item = u64>) -> Option<u64> {
    values.into_iter().min()
}

fn min_f64(values: impl IntoIterator<Item = f64>) -> Option<f64> {
    values.into_iter().reduce(f64::min)
}

/// Every limit file `name` on a chain, parsed by `parse`.
fn along<T>(view: &SysView, dirs: &[PathBuf], name: &str, parse: impl Fn(&str) -> Option<T>) -> Vec<T> {
    dirs.iter().filter_map(|d| view.read(&d.join(name))).filter_map(|t| parse(&t)).collect()
}

/// The tightest limits of the agent's cgroups in every hierarchy it is in.
pub fn limits(view: &SysView) -> CgroupLimits {
    let members = fs::read_to_string(view.proc_.join("self/cgroup")).map(|t| parse_proc_cgroup(&t)).unwrap_or_default();
    let mounts =
        fs::read_to_string(view.proc_.join("self/mountinfo")).map(|t| parse_cgroup_mounts(&t)).unwrap_or_default();
    let v2 = chain(view, &members, &mounts, None);
    let (mem1, cpu1, set1) = (
        chain(view, &members, &mounts, Some("memory")),
        chain(view, &members, &mounts, Some("cpu")),
        chain(view, &members, &mounts, Some("cpuset")),
    );

    let mem_v2 = min_u64(along(view, &v2, "memory.max", bytes));
    let memory_bytes = min_u64(along(view, &mem1, "memory.limit_in_bytes", bytes).into_iter().chain(mem_v2));
    let swap_v2 = min_u64(along(view, &v2, "memory.swap.max", bytes));
    let memsw_v2 = mem_v2.zip(swap_v2).map(|(m, s)| m.saturating_add(s));
    let memory_swap_bytes =
        min_u64(along(view, &mem1, "memory.memsw.limit_in_bytes", bytes).into_iter().chain(memsw_v2));

    let cpu_quota = min_f64(cpu1.iter().filter_map(|d| cfs(view, d)).chain(along(view, &v2, "cpu.max", cpu_max)));

    // The innermost cpuset that says: the kernel has already narrowed it to
    // what its parents allow (`effective`), and v1's plain `cpuset.cpus` must
    // be a subset of its parent's.
    let cpuset = set1
        .iter()
        .find_map(|d| view.read(&d.join("cpuset.effective_cpus")).or_else(|| view.read(&d.join("cpuset.cpus"))))
        .or_else(|| v2.iter().find_map(|d| view.read(&d.join("cpuset.cpus.effective"))));

    CgroupLimits { memory_bytes, memory_swap_bytes, cpu_quota, cpuset }
}

/// CPUs in a kernel CPU list ("0-3,8,10-11"); `None` if it does not parse.
pub fn cpu_list_count(list: &str) -> Option<u32> {
    let mut n = 0u32;
    for part in list.trim().split(',').filter(|p| !p.is_empty()) {
        n += match part.split_once('-') {
            Some((a, b)) => {
                let (a, b): (u32, u32) = (a.parse().ok()?, b.parse().ok()?);
                b.checked_sub(a)? + 1
            }
            None => {
                part.parse::<u32>().ok()?;
                1
            }
        };
    }
    Some(n)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn write(root: &Path, rel: &str, text: &str) {
        let p = root.join(rel);
        fs::create_dir_all(p.parent().unwrap()).unwrap();
        fs::write(p, text).unwrap();
    }

    #[test]
    fn proc_cgroup_lines_of_both_versions_parse() {
        let m = parse_proc_cgroup("12:cpu,cpuacct:/a/b\n4:name=systemd:/\n0::/user.slice/x.scope\n");
        assert_eq!(m[0], Membership { controllers: vec!["cpu".into(), "cpuacct".into()], path: "/a/b".into() });
        assert_eq!(m[1].controllers, ["name=systemd"]);
        assert!(m[2].controllers.is_empty());
        assert_eq!(m[2].path, "/user.slice/x.scope");
    }

    #[test]
    fn cgroup_mounts_are_found_wherever_they_are() {
        let m = parse_cgroup_mounts(
            "22 1 254:0 / / rw - ext4 /dev/vda rw\n\
             53 52 0:40 / /sys/fs/cgroup rw,relatime - tmpfs cgroup rw,mode=755\n\
             54 53 0:29 / /sys/fs/cgroup/cpu,cpuacct rw,relatime - cgroup cgroup rw,cpu,cpuacct\n\
             60 22 0:38 /docker/abc /cg\\040two rw - cgroup2 cgroup2 rw,nsdelegate\n",
        );
        assert_eq!(m.len(), 2);
        assert_eq!(m[0].target, "/sys/fs/cgroup/cpu,cpuacct");
        assert_eq!(m[0].controllers.as_deref(), Some(&["rw".to_string(), "cpu".into(), "cpuacct".into()][..]));
        assert_eq!((m[1].root.as_str(), m[1].target.as_str(), &m[1].controllers), ("/docker/abc", "/cg two", &None));
    }

    #[test]
    fn cpu_lists_count() {
        assert_eq!(cpu_list_count("0-3,8,10-11\n"), Some(7));
        assert_eq!(cpu_list_count("0"), Some(1));
        assert_eq!(cpu_list_count(""), Some(0));
        assert_eq!(cpu_list_count("3-1"), None);
        assert_eq!(cpu_list_count("x"), None);
    }

    #[test]
    fn value_parsers() {
        assert_eq!(bytes("536870912\n"), Some(536870912));
        assert_eq!(bytes("9223372036854771712"), None, "v1's unlimited");
        assert_eq!(bytes("max"), None);
        assert_eq!(cpu_max("12000 100000"), Some(0.12));
        assert_eq!(cpu_max("max 100000"), None);
        assert_eq!(cpu_max("250000 100000"), Some(2.5));
    }

    /// The lab's `old` host: v1 hierarchies on a tmpfs at a place of their
    /// own, a parent without limits, the host's cgroup with them, and a
    /// hybrid unified hierarchy that limits nothing.
    #[test]
    fn v1_limits_are_the_tightest_from_the_agents_cgroup_to_the_root() {
        let dir = tempfile::tempdir().unwrap();
        let r = dir.path();
        write(
            r,
            "proc/self/cgroup",
            "7:blkio:/lab/old\n4:memory:/lab/old/s\n1:cpu,cpuacct:/lab/old/s\n3:cpuset:/\n0::/\n",
        );
        write(
            r,
            "proc/self/mountinfo",
            "53 52 0:40 / /cg rw - tmpfs cgroup rw\n\
             54 53 0:29 / /cg/cpu rw - cgroup cgroup rw,cpu,cpuacct\n\
             56 53 0:32 / /cg/memory rw - cgroup cgroup rw,memory\n\
             57 53 0:33 / /cg/cpuset rw - cgroup cgroup rw,cpuset\n\
             58 53 0:34 / /cg/unified rw - cgroup2 cgroup2 rw\n",
        );
        for (d, limit) in [
            ("", "9223372036854771712"),
            ("lab", "9223372036854771712"),
            ("lab/old", "536870912"),
            ("lab/old/s", "1073741824"),
        ] {
            write(r, &format!("cg/memory/{d}/memory.limit_in_bytes"), limit);
        }
        write(r, "cg/memory/lab/old/memory.memsw.limit_in_bytes", "805306368");
        for (d, quota) in [("", "-1"), ("lab", "50000"), ("lab/old", "12000"), ("lab/old/s", "-1")] {
            write(r, &format!("cg/cpu/{d}/cpu.cfs_quota_us"), quota);
            write(r, &format!("cg/cpu/{d}/cpu.cfs_period_us"), "100000");
        }
        write(r, "cg/cpuset/cpuset.effective_cpus", "0-1\n");
        fs::create_dir_all(r.join("cg/unified")).unwrap();
        let l = limits(&SysView::at(r));
        assert_eq!(
            l,
            CgroupLimits {
                memory_bytes: Some(536870912),
                memory_swap_bytes: Some(805306368),
                cpu_quota: Some(0.12),
                cpuset: Some("0-1".into())
            }
        );
    }

    /// A Debian 12 guest or a container: cgroup v2 only, the mount showing
    /// a subtree, limits at two levels, `max` on others.
    #[test]
    fn v2_limits_are_the_tightest_on_the_path_below_the_mounts_root() {
        let dir = tempfile::tempdir().unwrap();
        let r = dir.path();
        write(r, "proc/self/cgroup", "0::/box/system.slice/ssh.service\n");
        write(r, "proc/self/mountinfo", "30 22 0:26 /box /sys/fs/cgroup rw - cgroup2 cgroup2 rw,nsdelegate\n");
        let cg = "sys/fs/cgroup";
        write(r, &format!("{cg}/cpu.max"), "max 100000\n"); // the mount's root: /box
        write(r, &format!("{cg}/memory.max"), "2147483648\n");
        write(r, &format!("{cg}/memory.swap.max"), "max\n");
        write(r, &format!("{cg}/system.slice/cpu.max"), "40000 100000\n");
        write(r, &format!("{cg}/system.slice/memory.max"), "max\n");
        write(r, &format!("{cg}/system.slice/memory.swap.max"), "0\n");
        write(r, &format!("{cg}/system.slice/ssh.service/cpu.max"), "150000 100000\n");
        write(r, &format!("{cg}/system.slice/ssh.service/memory.max"), "3221225472\n");
        write(r, &format!("{cg}/system.slice/ssh.service/cpuset.cpus.effective"), "2-3\n");
        // Above the mount's root (outside the namespace): not ours to see.
        write(r, "sys/fs/memory.max", "1\n");
        let l = limits(&SysView::at(r));
        assert_eq!(
            l,
            CgroupLimits {
                memory_bytes: Some(2147483648),
                memory_swap_bytes: Some(2147483648),
                cpu_quota: Some(0.4),
                cpuset: Some("2-3".into())
            }
        );
    }

    #[test]
    fn no_cgroups_no_limits() {
        let dir = tempfile::tempdir().unwrap();
        assert_eq!(limits(&SysView::at(dir.path())), CgroupLimits::default());
        // A cgroup the mount does not show (another namespace's subtree).
        write(dir.path(), "proc/self/cgroup", "0::/elsewhere\n");
        write(dir.path(), "proc/self/mountinfo", "30 22 0:26 /box /cg rw - cgroup2 cgroup2 rw\n");
        write(dir.path(), "cg/memory.max", "1024\n");
        assert_eq!(limits(&SysView::at(dir.path())), CgroupLimits::default());
    }
}
