//! The per-rank profile file (`rank-<rank>.prof`) a rank writes at
//! finalize and rlaunch merges: a small line format, written by
//! [`RankProfile::to_text`] and read back with [`RankProfile::parse`].
//!
//! ```text
//! oneside-profile 1
//! rank 3 size 8 elapsed_ns 123456 host node7
//! family put 10 80 5230
//! hist put 0 0 0 0 0 0 0 0 0 0 0 0 3 7 ...
//! target 0 80 10
//! collective 1 4096
//! ```

/// Latency histogram buckets: bucket `b` counts calls of `2^b ..
/// 2^(b+1)` ns (bucket 0 also takes 0 ns, the last everything longer).
pub const HISTOGRAM_BUCKETS: usize = 32;

const MAGIC: &str = "oneside-profile 1";

/// One family's totals in a rank's profile.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FamilyStats {
    pub name: String,
    pub calls: u64,
    pub bytes: u64,
    pub nanos: u64,
    /// [`HISTOGRAM_BUCKETS`] counts, all 0 unless the level was 2.
    pub histogram: Vec<u64>,
}

/// One rank's profile, as written at finalize.
#[derive(Debug, Clone, PartialEq, Eq)]
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
    /// The file's text (the module docs).
    pub fn to_text(&self) -> String {
        let mut out = format!(
            "{MAGIC}\nrank {} size {} elapsed_ns {} host {}\n",
            self.rank, self.size, self.elapsed_ns, self.host
        );
        for f in &self.families {
            out += &format!("family {} {} {} {}\n", f.name, f.calls, f.bytes, f.nanos);
            if f.histogram.iter().any(|&c| c > 0) {
                let counts: Vec<String> = f.histogram.iter().map(u64::to_string).collect();
                out += &format!("hist {} {}\n", f.name, counts.join(" "));
            }
        }
        for (t, (bytes, ops)) in self.target_bytes.iter().zip(&self.target_ops).enumerate() {
            if *ops > 0 {
                out += &format!("target {t} {bytes} {ops}\n");
            }
        }
        for (t, bytes) in self.collective_bytes.iter().enumerate() {
            if *bytes > 0 {
                out += &format!("collective {t} {bytes}\n");
            }
        }
        out
    }

    /// Reads a file written by [`to_text`](RankProfile::to_text).
    pub fn parse(text: &str) -> Result<RankProfile, String> {
        let mut lines = text.lines();
        if lines.next() != Some(MAGIC) {
            return Err(format!("not a profile file (the first line is not \"{MAGIC}\")"));
        }
        let head: Vec<&str> = lines.next().unwrap_or_default().split(' ').collect();
        let [_, rank, _, size, _, elapsed, _, host] = head[..] else {
            return Err("the second line is not \"rank R size N elapsed_ns T host H\"".into());
        };
        let number = |s: &str| s.parse::<u64>().map_err(|_| format!("\"{s}\" is not a number"));
        let size = number(size)? as usize;
        let mut profile = RankProfile {
            rank: number(rank)? as usize,
            size,
            host: host.to_string(),
            elapsed_ns: number(elapsed)?,
            families: Vec::new(),
            target_bytes: vec![0; size],
            target_ops: vec![0; size],
            collective_bytes: vec![0; size],
        };
        for line in lines {
            let words: Vec<&str> = line.split(' ').collect();
            let index = |s: &str| {
                number(s).map(|i| i as usize).and_then(|i| match i < size {
                    true => Ok(i),
                    false => Err(format!("rank {i} in \"{line}\" is not below the size {size}")),
                })
            };
            match words[..] {
                ["family", name, calls, bytes, nanos] => profile.families.push(FamilyStats {
                    name: name.to_string(),
                    calls: number(calls)?,
                    bytes: number(bytes)?,
                    nanos: number(nanos)?,
                    histogram: vec![0; HISTOGRAM_BUCKETS],
                }),
                ["hist", name, ref counts @ ..] => {
                    let family = profile.families.iter_mut().find(|f| f.name == name);
                    let family = family.ok_or_else(|| format!("a histogram for unknown family {name}"))?;
                    family.histogram = counts.iter().map(|c| number(c)).collect::<Result<_, _>>()?;
                }
                ["target", t, bytes, ops] => {
                    let t = index(t)?;
                    profile.target_bytes[t] = number(bytes)?;
                    profile.target_ops[t] = number(ops)?;
                }
                ["collective", t, bytes] => profile.collective_bytes[index(t)?] = number(bytes)?,
                _ => return Err(format!("unreadable line \"{line}\"")),
            }
        }
        Ok(profile)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn damaged_files_are_errors_not_panics() {
        assert!(RankProfile::parse("hello").is_err());
        let head = "oneside-profile 1\nrank 0 size 2 elapsed_ns 5 host h\n";
        assert!(RankProfile::parse(&format!("{head}target 7 1 1\n")).is_err());
        assert!(RankProfile::parse(&format!("{head}family put x 1 1\n")).is_err());
        assert!(RankProfile::parse(&format!("{head}what\n")).is_err());
    }
}
