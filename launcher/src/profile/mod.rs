//! `rlaunch --profile[=DIR]`: each rank writes `DIR/rank-<r>.prof` at
//! finalize (`oneside::profile::RankProfile`, a versioned JSON document);
//! after the job, this reads them back with serde (a file of another
//! version, or no profile, is listed as missing with the reason) and
//! merges them into `DIR/profile.json`, `DIR/summary.txt` (also printed)
//! and `DIR/report.html`.

mod charts;
mod html;
mod nodes;
mod summary;
pub mod timeline;

use oneside::profile::{FamilyStats, RankProfile};
use serde::{Serialize, Serializer};
use std::path::{Path, PathBuf};

/// The family of the runtime's own collectives at init and finalize,
/// which the reports show apart from the program's operations.
pub const RUNTIME_OWN: &str = "init_finalize";

/// How a family's name reads in the reports.
pub fn display_name(name: &str) -> &str {
    match name {
        RUNTIME_OWN => "init/finalize",
        name => name,
    }
}

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
            let path = dir.join(RankProfile::file_name(rank));
            match RankProfile::read(&path) {
                Ok(profile) if profile.rank == rank && profile.size == size => merged.ranks.push(profile),
                Ok(p) => merged.missing.push((
                    rank,
                    format!(
                        "{} is rank {} of {} ranks, written by another job",
                        path.display(),
                        p.rank,
                        p.size
                    ),
                )),
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

    /// [`totals`](Self::totals) split in two: the program's own calls,
    /// those with any, most time first; and what init's and finalize's own
    /// collectives cost over all ranks, as a sentence, if they were
    /// profiled.
    pub fn program_totals(&self) -> (Vec<FamilyStats>, Option<String>) {
        let (own, mut program): (Vec<_>, Vec<_>) = self
            .totals()
            .into_iter()
            .filter(|t| t.calls > 0)
            .partition(|t| t.name == RUNTIME_OWN);
        program.sort_by_key(|t| std::cmp::Reverse(t.nanos));
        let own = own.first().map(|t| {
            format!(
                "init/finalize: {} across the ranks in {} calls: the runtime's own work at init \
                 and finalize (wire-up, the farewell), not the program's, so it is not in the table",
                summary::time(t.nanos),
                t.calls
            )
        });
        (program, own)
    }

    /// Time a rank spent blocked and communicating (ns), from its
    /// families, within its elapsed time: blocked time is measured (every
    /// blocking call is timed, the one a rank was in when the job ended
    /// too), communicating time is estimated from sampled calls, so it is
    /// clamped to what blocking leaves, and computing is the rest. The
    /// three then add up to the rank's elapsed time (threads that block at
    /// once would count twice, and an estimate can overshoot).
    pub fn split(profile: &RankProfile) -> (u64, u64) {
        let sum = |blocks: bool| {
            profile
                .families
                .iter()
                .filter(|f| oneside::profile::Family::blocks(&f.name) == blocks)
                .map(|f| f.nanos)
                .sum::<u64>()
        };
        let blocked = sum(true).min(profile.elapsed_ns);
        (blocked, sum(false).min(profile.elapsed_ns - blocked))
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

/// `profile.json`: `ranks`, the matrices (row = origin, column = target),
/// and `ops` per rank (docs/src/inside.md), written by serde_json.
pub fn to_json(m: &Merged) -> String {
    let ops = m
        .ranks
        .iter()
        .map(|p| {
            let (blocked_ns, communicating_ns) = Merged::split(p);
            RankJson {
                rank: p.rank,
                host: &p.host,
                elapsed_ns: p.elapsed_ns,
                blocked_ns,
                communicating_ns,
                ops: OpsJson(&p.families),
            }
        })
        .collect();
    let profile = ProfileJson {
        version: 1,
        ranks: m.size,
        missing_ranks: m.missing.iter().map(|(r, _)| *r).collect(),
        matrix_bytes: m.matrix(|p| &p.target_bytes),
        matrix_ops: m.matrix(|p| &p.target_ops),
        collective_matrix_bytes: m.matrix(|p| &p.collective_bytes),
        ops,
    };
    serde_json::to_string(&profile).expect("a profile serializes") + "\n"
}

#[derive(Serialize)]
struct ProfileJson<'a> {
    version: u32,
    ranks: usize,
    missing_ranks: Vec<usize>,
    matrix_bytes: Vec<Vec<u64>>,
    matrix_ops: Vec<Vec<u64>>,
    collective_matrix_bytes: Vec<Vec<u64>>,
    ops: Vec<RankJson<'a>>,
}

#[derive(Serialize)]
struct RankJson<'a> {
    rank: usize,
    host: &'a str,
    elapsed_ns: u64,
    blocked_ns: u64,
    communicating_ns: u64,
    ops: OpsJson<'a>,
}

/// A rank's families with calls, as an object keyed by family name, in
/// the order they appear.
struct OpsJson<'a>(&'a [FamilyStats]);

#[derive(Serialize)]
struct FamilyJson<'a> {
    calls: u64,
    bytes: u64,
    ns: u64,
    histogram_log2_ns: &'a [u64],
}

impl Serialize for OpsJson<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_map(self.0.iter().filter(|f| f.calls > 0).map(|f| {
            let family = FamilyJson {
                calls: f.calls,
                bytes: f.bytes,
                ns: f.nanos,
                histogram_log2_ns: &f.histogram,
            };
            (&f.name, family)
        }))
    }
}

#[cfg(test)]
mod tests {
    use super::{to_json, Merged};
    use oneside::profile::{FamilyStats, RankProfile};

    #[test]
    fn profile_json_parses_back_with_its_strings_escaped() {
        let family = |name: &str, calls| FamilyStats {
            name: name.into(),
            calls,
            bytes: 8 * calls,
            nanos: 100,
            histogram: vec![0, calls],
        };
        let merged = Merged {
            size: 2,
            ranks: vec![RankProfile {
                rank: 0,
                size: 2,
                host: "odd \"host\"\n".into(),
                elapsed_ns: 1000,
                families: vec![family("put", 3), family("get", 0)],
                target_bytes: vec![0, 24],
                target_ops: vec![0, 3],
                collective_bytes: vec![0, 0],
            }],
            missing: vec![(1, "no file".into())],
        };
        let json: serde_json::Value = serde_json::from_str(&to_json(&merged)).expect("valid JSON");
        assert_eq!(json["ranks"], 2);
        assert_eq!(json["missing_ranks"], serde_json::json!([1]));
        assert_eq!(json["matrix_bytes"], serde_json::json!([[0, 24], [0, 0]]));
        let rank = &json["ops"][0];
        assert_eq!(rank["host"], "odd \"host\"\n");
        assert_eq!(rank["ops"]["put"]["calls"], 3);
        assert_eq!(rank["ops"]["put"]["histogram_log2_ns"], serde_json::json!([0, 3]));
        assert!(rank["ops"].get("get").is_none(), "families never called are left out");
    }

    #[test]
    fn a_profile_of_another_version_is_missing_with_the_reason() {
        let dir = std::env::temp_dir().join(format!("rlaunch-merge-{}", std::process::id()));
        std::fs::create_dir_all(&dir).expect("a directory");
        let old = "oneside-profile 1\nrank 1 size 2 elapsed_ns 5 host h\n";
        std::fs::write(dir.join("rank-1.prof"), old).expect("written");
        let merged = Merged::read(&dir, 2);
        let _ = std::fs::remove_dir_all(&dir);
        assert!(merged.ranks.is_empty());
        let (rank, why) = &merged.missing[1];
        assert_eq!(*rank, 1);
        assert!(
            why.ends_with(
                "rank-1.prof is a oneside profile of version 1; this rlaunch reads version 2: \
                 run the job again with this build's rlaunch and library"
            ),
            "{why}"
        );
        assert!(
            merged.missing[0].1.ends_with(
                "rank-0.prof was not written: its rank ended before finalize, \
                 or wrote it where this host cannot see it"
            ),
            "{:?}",
            merged.missing
        );
    }
}
