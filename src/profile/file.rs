//! The per-rank profile file (`rank-<rank>.prof`) a rank writes at
//! finalize and rlaunch merges: [`RankProfile`] as one versioned JSON
//! document (the envelope and why JSON: `versioned`), written by
//! [`RankProfile::write`] and read back by [`RankProfile::read`], which
//! refuses another version, or a file that is no profile, with a sentence
//! that says what to do.
//!
//! ```text
//! {"format":"oneside-profile","version":2,"rank":3,"size":8,"host":"node7",
//!  "elapsed_ns":123456,"families":[{"name":"put","calls":10,"bytes":80,
//!  "nanos":5230,"histogram":[0,0,...]},...],"target_bytes":[0,80,...],
//!  "target_ops":[0,10,...],"collective_bytes":[4096,0,...]}
//! ```
//! (one line in the file; `jq . rank-3.prof` shows it as above.)

use super::versioned::{self, PROFILE};
use serde::{Deserialize, Serialize};
use std::path::Path;

/// Latency histogram buckets: bucket `b` counts calls of `2^b ..
/// 2^(b+1)` ns (bucket 0 also takes 0 ns, the last everything longer).
pub const HISTOGRAM_BUCKETS: usize = 32;

/// One family's totals in a rank's profile.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct FamilyStats {
    pub name: String,
    pub calls: u64,
    pub bytes: u64,
    pub nanos: u64,
    /// [`HISTOGRAM_BUCKETS`] counts of the family's timed calls.
    pub histogram: Vec<u64>,
}

/// One rank's profile, as written at finalize.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RankProfile {
    pub rank: usize,
    pub size: usize,
    pub host: String,
    /// From start to finalize.
    pub elapsed_ns: u64,
    pub families: Vec<FamilyStats>,
    /// Bytes of the program's puts, gets and atomics per target rank.
    pub target_bytes: Vec<u64>,
    /// The program's operations per target rank.
    pub target_ops: Vec<u64>,
    /// Bytes collectives put to each rank.
    pub collective_bytes: Vec<u64>,
}

impl RankProfile {
    /// The name of rank `rank`'s file in the profile's directory.
    pub fn file_name(rank: usize) -> String {
        versioned::file_name(&PROFILE, rank)
    }

    /// Writes the file at `path`, streamed (the module docs).
    pub fn write(&self, path: &Path) -> std::io::Result<()> {
        versioned::write(path, &PROFILE, self)
    }

    /// Reads a file [`write`](RankProfile::write) wrote; an error is a
    /// sentence that names the file and says what to do.
    pub fn read(path: &Path) -> Result<RankProfile, String> {
        versioned::read(path, &PROFILE).and_then(|p: RankProfile| p.consistent(&path.display().to_string()))
    }

    /// [`read`](RankProfile::read) of a file's bytes; `file` names it in
    /// the errors.
    pub fn parse(bytes: &[u8], file: &str) -> Result<RankProfile, String> {
        versioned::decode(bytes, file, &PROFILE).and_then(|p: RankProfile| p.consistent(file))
    }

    /// The profile, if its rank and its per-rank lists fit its size (the
    /// merge indexes them by rank).
    fn consistent(self, file: &str) -> Result<RankProfile, String> {
        let lists = [
            ("target_bytes", self.target_bytes.len()),
            ("target_ops", self.target_ops.len()),
            ("collective_bytes", self.collective_bytes.len()),
        ];
        let wrong = lists.iter().find(|(_, len)| *len != self.size);
        let damaged = |what: String| Err(format!("{file} is damaged: {what}; run the job again"));
        match (self.rank < self.size, wrong) {
            (false, _) => damaged(format!("its rank {} is not below its size {}", self.rank, self.size)),
            (true, Some((list, len))) => damaged(format!("{list} has {len} entries for {} ranks", self.size)),
            (true, None) => Ok(self),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn profile() -> RankProfile {
        let family = |name: &str, calls: u64| FamilyStats {
            name: name.into(),
            calls,
            bytes: 8 * calls,
            nanos: 70 * calls,
            histogram: (0..HISTOGRAM_BUCKETS as u64).map(|b| b * calls).collect(),
        };
        RankProfile {
            rank: 1,
            size: 3,
            host: "node \"7\"".into(),
            elapsed_ns: u64::MAX,
            families: vec![family("put", 10), family("init_finalize", 1)],
            target_bytes: vec![0, 80, 16],
            target_ops: vec![0, 10, 2],
            collective_bytes: vec![4096, 0, 0],
        }
    }

    #[test]
    fn a_profile_reads_back_as_written() {
        let path = std::env::temp_dir().join(format!(
            "oneside-file-{}-{}",
            std::process::id(),
            RankProfile::file_name(1)
        ));
        profile().write(&path).expect("written");
        let read = RankProfile::read(&path);
        let text = std::fs::read_to_string(&path).expect("read back");
        let _ = std::fs::remove_file(&path);
        assert_eq!(read, Ok(profile()));
        assert!(
            text.starts_with("{\"format\":\"oneside-profile\",\"version\":2,\"rank\":1,"),
            "{text}"
        );
        let gone = RankProfile::read(&path).expect_err("no file");
        assert!(
            gone.ends_with(
                "was not written: its rank ended before finalize, or wrote it where this host cannot see it"
            ),
            "{gone}"
        );
    }

    #[test]
    fn a_profile_of_another_version_is_refused_by_its_version() {
        let refused = |text: &str| RankProfile::parse(text.as_bytes(), "rank-3.prof").expect_err("refused");
        let old_text = "oneside-profile 1\nrank 3 size 4 elapsed_ns 5 host h\nfamily put 1 8 70\n";
        let version_1 = "rank-3.prof is a oneside profile of version 1; this rlaunch reads version 2: \
                         run the job again with this build's rlaunch and library";
        assert_eq!(refused(old_text), version_1);
        assert_eq!(
            refused("{\"format\":\"oneside-profile\",\"version\":1,\"rank\":3}"),
            version_1
        );
        let newer = refused("{\"format\":\"oneside-profile\",\"version\":3,\"ranks\":[]}");
        assert!(
            newer.starts_with("rank-3.prof is a oneside profile of version 3; this rlaunch reads version 2"),
            "{newer}"
        );
    }

    #[test]
    fn garbage_and_inconsistent_profiles_are_refused_not_panics() {
        let refused = |bytes: &[u8]| RankProfile::parse(bytes, "rank-3.prof").expect_err("refused");
        assert!(refused(b"hello").starts_with("rank-3.prof is not a oneside profile"));
        assert!(refused(b"\x00\x01\x02").starts_with("rank-3.prof is not a oneside profile"));
        let mut json = serde_json::to_value(profile()).expect("a value");
        json["format"] = "oneside-profile".into();
        json["version"] = 2.into();
        json["target_ops"] = serde_json::json!([0, 10]);
        assert_eq!(
            refused(json.to_string().as_bytes()),
            "rank-3.prof is damaged: target_ops has 2 entries for 3 ranks; run the job again"
        );
        json["target_ops"] = serde_json::json!([0, 10, 2]);
        json["rank"] = 3.into();
        let why = refused(json.to_string().as_bytes());
        assert_eq!(
            why,
            "rank-3.prof is damaged: its rank 3 is not below its size 3; run the job again"
        );
        json["rank"] = 1.into();
        assert_eq!(RankProfile::parse(json.to_string().as_bytes(), "f"), Ok(profile()));
    }
}
