//! `rlaunch --profile[=DIR]`: each rank writes `DIR/rank-<r>.prof` at
//! finalize (`oneside::profile`); after the job, this merges them into
//! `DIR/profile.json`, `DIR/summary.txt` (also printed) and
//! `DIR/report.html`.

mod html;
mod summary;
pub mod timeline;

use oneside::profile::{FamilyStats, RankProfile};
use std::fmt::Write as _;
use std::path::{Path, PathBuf};

/// The default directory of `--profile`.
pub const DEFAULT_DIR: &str = "oneside-profile";

/// Every rank's profile that could be read, and the ranks whose could not.
pub struct Merged {
    pub size: usize,
    pub ranks: Vec<RankProfile>,
    pub missing: Vec<(usize, String)>,
}

impl Merged {
    /// Reads `dir/rank-<r>.prof` for every rank of a job of `size`.
    pub fn read(dir: &Path, size: usize) -> Merged {
        let mut merged = Merged {
            size,
            ranks: Vec::new(),
            missing: Vec::new(),
        };
        for rank in 0..size {
            let path = dir.join(format!("rank-{rank}.prof"));
            let read = std::fs::read_to_string(&path).map_err(|e| e.to_string());
            match read.and_then(|text| RankProfile::parse(&text)) {
                Ok(profile) if profile.rank == rank && profile.size == size => merged.ranks.push(profile),
                Ok(_) => merged.missing.push((rank, "written by another job".into())),
                Err(why) => merged.missing.push((rank, why)),
            }
        }
        merged
    }

    /// The N x N matrix of one per-target figure, rows by origin rank.
    pub fn matrix(&self, row: impl Fn(&RankProfile) -> &[u64]) -> Vec<Vec<u64>> {
        let mut m = vec![vec![0; self.size]; self.size];
        for p in &self.ranks {
            m[p.rank].copy_from_slice(&row(p)[..self.size]);
        }
        m
    }

    /// Every family summed over the ranks (calls, bytes, time and
    /// histogram), in the order the families first appear.
    pub fn totals(&self) -> Vec<FamilyStats> {
        let mut totals: Vec<FamilyStats> = Vec::new();
        for f in self.ranks.iter().flat_map(|p| &p.families) {
            match totals.iter_mut().find(|t| t.name == f.name) {
                Some(t) => {
                    t.calls += f.calls;
                    t.bytes += f.bytes;
                    t.nanos += f.nanos;
                    t.histogram.iter_mut().zip(&f.histogram).for_each(|(a, b)| *a += b);
                }
                None => totals.push(f.clone()),
            }
        }
        totals
    }

    /// Time a rank spent blocked and communicating (ns), from its families.
    pub fn split(profile: &RankProfile) -> (u64, u64) {
        let blocked = |blocks: bool| {
            profile
                .families
                .iter()
                .filter(|f| oneside::profile::Family::blocks(&f.name) == blocks)
                .map(|f| f.nanos)
                .sum::<u64>()
        };
        (blocked(true), blocked(false))
    }
}

/// Removes an earlier job's rank files (profiles and traces) from `dir`,
/// creating it if needed.
pub fn prepare(dir: &Path) -> std::io::Result<()> {
    std::fs::create_dir_all(dir)?;
    for entry in std::fs::read_dir(dir)? {
        let path = entry?.path();
        let name = path.file_name().and_then(|n| n.to_str()).unwrap_or_default();
        if name.starts_with("rank-") && (name.ends_with(".prof") || name.ends_with(".trace")) {
            std::fs::remove_file(&path)?;
        }
    }
    Ok(())
}

/// Merges the job's profiles in `dir`, writes the three reports and
/// prints the summary to stderr. Returns the files written.
pub fn report(dir: &Path, size: usize) -> std::io::Result<Vec<PathBuf>> {
    let merged = Merged::read(dir, size);
    let files = [
        (dir.join("profile.json"), to_json(&merged)),
        (dir.join("summary.txt"), summary::render(&merged, dir)),
        (dir.join("report.html"), html::render(&merged)),
    ];
    for (path, text) in &files {
        std::fs::write(path, text)?;
    }
    eprint!("{}", files[1].1);
    Ok(files.into_iter().map(|(path, _)| path).collect())
}

fn list<T: std::fmt::Display>(items: impl IntoIterator<Item = T>) -> String {
    let items: Vec<String> = items.into_iter().map(|i| i.to_string()).collect();
    format!("[{}]", items.join(","))
}

fn matrix_json(m: &[Vec<u64>]) -> String {
    list(m.iter().map(list))
}

/// A JSON string literal.
pub fn quoted(s: &str) -> String {
    let mut out = String::from("\"");
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            c if (c as u32) < 0x20 => {
                let _ = write!(out, "\\u{:04x}", c as u32);
            }
            c => out.push(c),
        }
    }
    out + "\""
}

/// `profile.json`: `ranks`, the matrices (row = origin, column = target),
/// and `ops` per rank.
pub fn to_json(m: &Merged) -> String {
    let mut ops = Vec::new();
    for p in &m.ranks {
        let (blocked, communicating) = Merged::split(p);
        let families: Vec<String> = (p.families.iter().filter(|f| f.calls > 0))
            .map(|f| {
                format!(
                    "{}:{{\"calls\":{},\"bytes\":{},\"ns\":{},\"histogram_log2_ns\":{}}}",
                    quoted(&f.name),
                    f.calls,
                    f.bytes,
                    f.nanos,
                    list(&f.histogram)
                )
            })
            .collect();
        ops.push(format!(
            "{{\"rank\":{},\"host\":{},\"elapsed_ns\":{},\"blocked_ns\":{blocked},\"communicating_ns\":{communicating},\"ops\":{{{}}}}}",
            p.rank,
            quoted(&p.host),
            p.elapsed_ns,
            families.join(",")
        ));
    }
    format!(
        "{{\n\"version\":1,\n\"ranks\":{},\n\"missing_ranks\":{},\n\"matrix_bytes\":{},\n\"matrix_ops\":{},\n\"collective_matrix_bytes\":{},\n\"ops\":[\n{}\n]\n}}\n",
        m.size,
        list(m.missing.iter().map(|(r, _)| r)),
        matrix_json(&m.matrix(|p| &p.target_bytes)),
        matrix_json(&m.matrix(|p| &p.target_ops)),
        matrix_json(&m.matrix(|p| &p.collective_bytes)),
        ops.join(",\n")
    )
}
