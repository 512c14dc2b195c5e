//! The plan of a `tree`: which directories and files, of which sizes, from
//! the arguments alone. Pure and deterministic: the same [`TreeArgs`] give
//! the same names and sizes on every host and architecture, so a tree built
//! on one machine compares with one built on another.
//!
//! Shape: `dirs` directories (the top one included) in breadth-first order,
//! directory `i > 0` a child of directory `(i - 1) / fanout`, so none has more
//! than `fanout` subdirectories and the tree is as shallow as the fanout
//! allows. Files are spread evenly: each directory holds a contiguous run of
//! file numbers, the counts differing by at most one. `scale` multiplies both
//! counts (sizes stay), so a paper's shape can be grown toward its original.
//!
//! Sizes: `fixed` gives every file `size` bytes. `lognormal` draws
//! `exp(mu + sigma * z)` with `mu = ln(size) - sigma^2 / 2` (so the mean is
//! `size`), then scales the draws so that the total is exactly
//! `files * size`: a small tree's total does not wander with the seed, and
//! a large one's distribution is changed by a factor within a few percent
//! of 1. The rounding remainder goes to the largest file.

use crate::content::Rng;
use benchrig_wire::args::{SizeDist, TreeArgs};

#[derive(Clone, Debug, PartialEq)]
pub struct PlannedFile {
    /// Relative to the tree's top directory, `/`-separated.
    pub path: String,
    pub size: u64,
    /// The index of the directory holding it in [`Plan::dirs`].
    pub dir: usize,
}

#[derive(Clone, Debug, PartialEq)]
pub struct Plan {
    /// Relative paths in breadth-first order (every parent before its
    /// children); the first is the top directory itself, `""`.
    pub dirs: Vec<String>,
    /// In directory order, then by number.
    pub files: Vec<PlannedFile>,
    /// The seed the plan was made from (file contents derive from it).
    pub seed: u64,
}

impl Plan {
    pub fn total_bytes(&self) -> u64 {
        self.files.iter().map(|f| f.size).sum()
    }

    /// The seed of file `index`'s content stream: distinct per file and per
    /// tree seed, independent of the file's size and place.
    pub fn content_seed(&self, index: usize) -> u64 {
        content_seed(self.seed, index as u64)
    }
}

pub fn content_seed(seed: u64, index: u64) -> u64 {
    // Rng::new mixes its input (splitmix64); mixing the tree seed first keeps
    // (seed, index) pairs from colliding as `seed ^ index` would.
    Rng::new(seed).next_u64() ^ index.wrapping_mul(0x9E37_79B9_7F4A_7C15)
}

pub fn plan(args: &TreeArgs) -> Result<Plan, String> {
    let (n_files, n_dirs) = args.scaled_counts()?;
    if n_dirs > 1 && args.fanout == 0 {
        return Err("tree: fanout 0 allows no subdirectories, but more than one directory was asked for".into());
    }
    if args.dist == SizeDist::Lognormal && !(args.sigma.is_finite() && args.sigma >= 0.0) {
        return Err(format!("tree: sigma must be a non-negative number, not {}", args.sigma));
    }
    let dir_width = digits(n_dirs.saturating_sub(1)).max(4);
    let file_width = digits(n_files.saturating_sub(1)).max(6);

    let mut dirs: Vec<String> = Vec::with_capacity(n_dirs as usize);
    dirs.push(String::new());
    for i in 1..n_dirs {
        let parent = &dirs[((i - 1) / args.fanout) as usize];
        let name = format!("d{i:0dir_width$}");
        dirs.push(if parent.is_empty() { name } else { format!("{parent}/{name}") });
    }

    let sizes = sizes(args, n_files);
    let mut files = Vec::with_capacity(n_files as usize);
    for (d, dir) in dirs.iter().enumerate() {
        // Directory d holds files [d*n/nd, (d+1)*n/nd): even, contiguous.
        let lo = (d as u128 * n_files as u128 / n_dirs as u128) as u64;
        let hi = ((d as u128 + 1) * n_files as u128 / n_dirs as u128) as u64;
        for j in lo..hi {
            let name = format!("f{j:0file_width$}");
            let path = if dir.is_empty() { name } else { format!("{dir}/{name}") };
            files.push(PlannedFile { path, size: sizes[j as usize], dir: d });
        }
    }
    Ok(Plan { dirs, files, seed: args.seed })
}

fn digits(n: u64) -> usize {
    n.to_string().len()
}

fn sizes(args: &TreeArgs, n: u64) -> Vec<u64> {
    let mean = args.size.0;
    let n = n as usize;
    if args.dist == SizeDist::Fixed || args.sigma == 0.0 || n == 0 {
        return vec![mean; n];
    }
    let sigma = args.sigma;
    let mu = (mean.max(1) as f64).ln() - sigma * sigma / 2.0;
    // A stream of its own, so sizes do not depend on how contents are drawn.
    let mut rng = Rng::new(args.seed ^ 0x51A3_5EED);
    let raw: Vec<f64> = (0..n).map(|_| (mu + sigma * normal(&mut rng)).exp()).collect();
    let target = mean as f64 * n as f64;
    let sum: f64 = raw.iter().sum();
    let factor = if sum > 0.0 { target / sum } else { 0.0 };
    let mut sizes: Vec<u64> = raw.iter().map(|x| (x * factor).round() as u64).collect();
    // The rounding remainder (at most n/2 bytes either way) to the largest file.
    let total: u128 = sizes.iter().map(|&s| s as u128).sum();
    let want = mean as u128 * n as u128;
    let (big, _) = sizes.iter().enumerate().max_by_key(|(i, s)| (**s, std::cmp::Reverse(*i))).unwrap();
    if want >= total {
        sizes[big] += (want - total) as u64;
    } else {
        sizes[big] = sizes[big].saturating_sub((total - want) as u64);
    }
    sizes
}

/// A standard normal draw (Box-Muller; one of the pair is enough here).
fn normal(rng: &mut Rng) -> f64 {
    let u1 = 1.0 - rng.next_f64(); // (0, 1]: ln is finite
    let u2 = rng.next_f64();
    (-2.0 * u1.ln()).sqrt() * (2.0 * std::f64::consts::PI * u2).cos()
}

#[cfg(test)]
mod tests {
    use super::*;
    use benchrig_wire::units::ByteSize;
    use std::collections::HashSet;

    fn args(files: u64, dirs: u64, size: u64) -> TreeArgs {
        serde_json::from_value(serde_json::json!({"files": files, "dirs": dirs, "size": size})).unwrap()
    }

    #[test]
    fn deterministic_and_seed_dependent() {
        let a = args(2876, 115, 2100);
        assert_eq!(plan(&a).unwrap(), plan(&a).unwrap());
        let b = TreeArgs { seed: 2, ..a.clone() };
        let (pa, pb) = (plan(&a).unwrap(), plan(&b).unwrap());
        assert_eq!(pa.dirs, pb.dirs);
        assert_ne!(
            pa.files.iter().map(|f| f.size).collect::<Vec<_>>(),
            pb.files.iter().map(|f| f.size).collect::<Vec<_>>()
        );
        assert_ne!(pa.content_seed(0), pb.content_seed(0));
        assert_ne!(pa.content_seed(0), pa.content_seed(1));
        // Pinned: the plan must not change silently between agent versions.
        assert_eq!(pa.files[0].path, "f000000");
        assert_eq!(pa.files.last().unwrap().path, "d0007/d0114/f002875");
    }

    #[test]
    fn exact_counts_fanout_and_even_spread() {
        for (files, dirs, fanout) in [(11_351u64, 608u64, 16u64), (2876, 115, 16), (10, 1, 16), (0, 5, 2), (7, 20, 3)] {
            let a = TreeArgs { fanout, ..args(files, dirs, 12_000) };
            let p = plan(&a).unwrap();
            assert_eq!((p.files.len() as u64, p.dirs.len() as u64), (files, dirs));
            assert_eq!(p.dirs[0], "");
            // Parents first, at most `fanout` children each, unique names.
            let mut children = vec![0u64; p.dirs.len()];
            let index: std::collections::HashMap<&str, usize> =
                p.dirs.iter().enumerate().map(|(i, d)| (d.as_str(), i)).collect();
            for (i, d) in p.dirs.iter().enumerate().skip(1) {
                let parent = d.rsplit_once('/').map(|(p, _)| p).unwrap_or("");
                let pi = index[parent];
                assert!(pi < i, "{d} before its parent");
                children[pi] += 1;
            }
            assert!(children.iter().all(|&c| c <= fanout));
            let paths: HashSet<&str> = p.files.iter().map(|f| f.path.as_str()).collect();
            assert_eq!(paths.len(), p.files.len());
            let mut per_dir = vec![0u64; p.dirs.len()];
            for f in &p.files {
                per_dir[f.dir] += 1;
                assert!(f.path.starts_with(&p.dirs[f.dir]));
            }
            let (lo, hi) = (per_dir.iter().min().unwrap(), per_dir.iter().max().unwrap());
            assert!(hi - lo <= 1, "{files}/{dirs}: {lo}..{hi} files per directory");
        }
    }

    #[test]
    fn lognormal_mean_total_and_spread() {
        // The paper's first tree: 11,351 files, 608 dirs, 137 MB (12 KB mean).
        let a = args(11_351, 608, 12_070);
        let p = plan(&a).unwrap();
        assert_eq!(p.total_bytes(), 11_351 * 12_070);
        let sizes: Vec<f64> = p.files.iter().map(|f| f.size as f64).collect();
        let mut sorted = sizes.clone();
        sorted.sort_by(f64::total_cmp);
        // Lognormal with sigma 1: median = mean * e^(-1/2) ≈ 0.61 mean.
        let median = sorted[sorted.len() / 2] / 12_070.0;
        assert!((0.55..0.67).contains(&median), "median/mean {median}");
        // Many small files and a few large ones.
        assert!(sorted[sorted.len() - 1] > 8.0 * 12_070.0);
        // Without normalisation the raw draws' mean would be within a few %:
        // the factor applied is close to 1, checked through the log-mean.
        let log_mean = sizes.iter().filter(|s| **s > 0.0).map(|s| s.ln()).sum::<f64>() / sizes.len() as f64;
        let mu = (12_070f64).ln() - 0.5;
        assert!((log_mean - mu).abs() < 0.05, "log mean {log_mean} vs mu {mu}");
    }

    #[test]
    fn fixed_sizes_and_scale() {
        let a = TreeArgs { dist: SizeDist::Fixed, size: ByteSize(4096), ..args(96_183, 6_323, 0) };
        let p = plan(&a).unwrap();
        assert!(p.files.iter().all(|f| f.size == 4096));
        let half = plan(&TreeArgs { scale: 0.01, ..a.clone() }).unwrap();
        assert_eq!((half.files.len(), half.dirs.len()), (962, 63));
        let tiny = plan(&TreeArgs { scale: 0.0001, ..a.clone() }).unwrap();
        assert_eq!((tiny.files.len(), tiny.dirs.len()), (10, 1));
        assert!(plan(&TreeArgs { scale: 0.0, ..a.clone() }).is_err());
        assert!(plan(&TreeArgs { fanout: 0, ..a }).is_err());
    }
}
