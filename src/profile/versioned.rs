//! The envelope of a rank's files, `rank-<r>.prof` ([`RankProfile`]) and
//! `rank-<r>.trace` ([`RankTrace`]): each is one JSON document, written
//! by serde_json from the serde types, whose first two fields say what it
//! is and in which version:
//!
//! ```text
//! {"format":"oneside-profile","version":2,"rank":3,"size":8,...}
//! {"format":"oneside-trace","version":2,"rank":3,"epoch_unix_ns":...,"threads":[...]}
//! ```
//!
//! JSON rather than postcard: a user reads a rank's file with `jq`, as the
//! merged `profile.json` and `trace.json` that rlaunch already writes with
//! serde_json; and JSON names its fields, so a reader finds the `format`
//! and `version` of a file of any version (or of none) and says which it
//! is, instead of misreading another version's bytes. The text formats
//! before these (first line `oneside-profile 1`, `oneside-trace 1`) are
//! version 1; they and any version but this build's are refused by name,
//! with what to do.
//!
//! Writing streams: serde_json writes into a buffered file, and no text of
//! the document is built in memory. Reading parses twice, the envelope
//! first (the rest skipped), then the whole document.
//!
//! [`RankProfile`]: super::RankProfile
//! [`RankTrace`]: super::RankTrace

use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};
use std::io::{BufWriter, Write as _};
use std::path::Path;

/// One kind of rank file.
pub(crate) struct Kind {
    /// Its `format` field, also the first word of its version 1 text.
    pub format: &'static str,
    /// What the messages call it.
    pub noun: &'static str,
    /// Its file name's extension.
    pub extension: &'static str,
    /// The version this build writes and reads.
    pub version: u32,
}

/// `rank-<r>.prof`; version 1 was the text format.
pub(crate) const PROFILE: Kind = Kind {
    format: "oneside-profile",
    noun: "profile",
    extension: "prof",
    version: 2,
};

/// `rank-<r>.trace`; version 1 was the text format.
pub(crate) const TRACE: Kind = Kind {
    format: "oneside-trace",
    noun: "trace",
    extension: "trace",
    version: 2,
};

const KINDS: [&Kind; 2] = [&PROFILE, &TRACE];

/// The name of rank `rank`'s file of `kind`: `rank-<r>.prof` or `.trace`.
pub(crate) fn file_name(kind: &Kind, rank: usize) -> String {
    format!("rank-{rank}.{}", kind.extension)
}

/// What a file is written as: the envelope's fields, then the body's.
#[derive(Serialize)]
struct Envelope<'a, T> {
    format: &'static str,
    version: u32,
    #[serde(flatten)]
    body: &'a T,
}

/// The envelope as read, from a file of any version or none.
#[derive(Deserialize)]
struct Head {
    format: Option<String>,
    version: Option<u64>,
}

/// Writes `body` to `path` as a file of `kind`; an error names the path.
pub(crate) fn write<T: Serialize>(path: &Path, kind: &Kind, body: &T) -> std::io::Result<()> {
    let named = |e: std::io::Error| std::io::Error::new(e.kind(), format!("{}: {e}", path.display()));
    let mut out = BufWriter::with_capacity(1 << 16, std::fs::File::create(path).map_err(named)?);
    let envelope = Envelope {
        format: kind.format,
        version: kind.version,
        body,
    };
    serde_json::to_writer(&mut out, &envelope).map_err(|e| named(e.into()))?;
    out.write_all(b"\n").map_err(named)?;
    out.flush().map_err(named)
}

/// Reads the file of `kind` at `path`; an error is a sentence for the
/// user, naming the file.
pub(crate) fn read<T: DeserializeOwned>(path: &Path, kind: &Kind) -> Result<T, String> {
    let file = path.display();
    match std::fs::read(path) {
        Ok(bytes) => decode(&bytes, &file.to_string(), kind),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Err(format!(
            "{file} was not written: its rank ended before finalize, or wrote it where this host cannot see it"
        )),
        Err(e) => Err(format!("{file} cannot be read: {e}")),
    }
}

/// Reads the bytes of a file of `kind`, named `file` in the errors.
pub(crate) fn decode<T: DeserializeOwned>(bytes: &[u8], file: &str, kind: &Kind) -> Result<T, String> {
    let noun = kind.noun;
    let anew = "run the job again to write it anew";
    let (format, version) = match version_1_text(bytes) {
        Some(head) => head,
        None => head(bytes, noun).map_err(|why| format!("{file} {why}"))?,
    };
    let Some(found) = KINDS.iter().find(|k| k.format == format) else {
        let wanted = kind.format;
        return Err(format!(
            "{file} is not a oneside {noun}: its format is \"{format}\", not \"{wanted}\"; {anew}"
        ));
    };
    if found.format != kind.format {
        let other = found.noun;
        let extension = kind.extension;
        return Err(format!(
            "{file} is a oneside {other}, not a {noun}: rlaunch reads a rank's {noun} from rank-<r>.{extension}"
        ));
    }
    if version != u64::from(kind.version) {
        let reads = kind.version;
        return Err(format!(
            "{file} is a oneside {noun} of version {version}; this rlaunch reads version {reads}: \
             run the job again with this build's rlaunch and library"
        ));
    }
    serde_json::from_slice(bytes)
        .map_err(|e| format!("{file}, a oneside {noun} of version {version}, is damaged ({e}); run the job again"))
}

/// The `format` and `version` of a JSON document, or what is wrong with
/// it, said of a `noun` after the file's name.
fn head(bytes: &[u8], noun: &str) -> Result<(String, u64), String> {
    let anew = "run the job again to write it anew";
    match serde_json::from_slice::<Head>(bytes) {
        Ok(Head {
            format: Some(format),
            version: Some(version),
        }) => Ok((format, version)),
        Ok(_) => Err(format!(
            "is not a oneside {noun}: it has no \"format\" and \"version\"; {anew}"
        )),
        Err(e) if e.is_eof() => Err(format!(
            "is cut short ({e}): its rank was ended while writing it; run the job again"
        )),
        Err(e) => Err(format!("is not a oneside {noun} ({e}); {anew}")),
    }
}

/// The format and version of a version 1 file, whose first line was
/// `<format> 1`: known by its first word, so that it is refused by name.
fn version_1_text(bytes: &[u8]) -> Option<(String, u64)> {
    let line = bytes.split(|&b| b == b'\n').next()?;
    let (word, version) = std::str::from_utf8(line).ok()?.split_once(' ')?;
    let kind = KINDS.iter().find(|k| k.format == word)?;
    Some((kind.format.to_string(), version.trim().parse().ok()?))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Debug, PartialEq, Serialize, Deserialize)]
    struct Body {
        rank: usize,
        names: Vec<String>,
    }

    fn body() -> Body {
        Body {
            rank: 3,
            names: vec!["a \"b\"\n".into(), String::new()],
        }
    }

    fn bytes(kind: &Kind, body: &Body) -> Vec<u8> {
        let path = std::env::temp_dir().join(format!("oneside-versioned-{}-{}", std::process::id(), kind.noun));
        write(&path, kind, body).expect("written");
        let bytes = std::fs::read(&path).expect("read back");
        let _ = std::fs::remove_file(&path);
        bytes
    }

    #[test]
    fn the_envelope_comes_first_and_the_body_reads_back() {
        let written = bytes(&PROFILE, &body());
        assert!(written.starts_with(b"{\"format\":\"oneside-profile\",\"version\":2,\"rank\":3,"));
        assert!(written.ends_with(b"}\n"), "one document, one line");
        assert_eq!(decode::<Body>(&written, "f", &PROFILE), Ok(body()));
    }

    #[test]
    fn another_kind_or_a_damaged_file_is_refused_by_name() {
        let trace = bytes(&TRACE, &body());
        let refused = |bytes: &[u8]| decode::<Body>(bytes, "rank-3.prof", &PROFILE).expect_err("refused");
        assert_eq!(
            refused(&trace),
            "rank-3.prof is a oneside trace, not a profile: rlaunch reads a rank's profile from rank-<r>.prof"
        );
        assert_eq!(
            refused(b"oneside-trace 1\nrank 0 epoch_unix_ns 5 host h\n"),
            "rank-3.prof is a oneside trace, not a profile: rlaunch reads a rank's profile from rank-<r>.prof"
        );
        let profile = bytes(&PROFILE, &body());
        let cut = refused(&profile[..profile.len() / 2]);
        assert!(cut.starts_with("rank-3.prof is cut short (EOF while parsing"), "{cut}");
        assert!(
            cut.ends_with("its rank was ended while writing it; run the job again"),
            "{cut}"
        );
        assert!(
            refused(b"").starts_with("rank-3.prof is cut short"),
            "created, then killed"
        );
        for garbage in [
            &b"hello"[..],
            b"\xff\xfe\x00",
            b"[1, 2]",
            b"{\"rank\": 3}",
            b"{\"format\": 7}",
        ] {
            let why = refused(garbage);
            assert!(
                why.starts_with("rank-3.prof is not a oneside profile"),
                "{garbage:?}: {why}"
            );
            assert!(
                why.ends_with("run the job again to write it anew"),
                "{garbage:?}: {why}"
            );
        }
        let why = refused(b"{\"format\":\"csv\",\"version\":2}");
        assert!(why.contains("its format is \"csv\", not \"oneside-profile\""), "{why}");
        let damaged = refused(b"{\"format\":\"oneside-profile\",\"version\":2,\"rank\":\"three\"}");
        assert!(
            damaged.starts_with("rank-3.prof, a oneside profile of version 2, is damaged (invalid type"),
            "{damaged}"
        );
    }
}
