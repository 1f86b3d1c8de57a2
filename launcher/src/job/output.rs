//! Forwarding ranks' output line by line, and rlaunch's stdin to rank 0.
//!
//! Each pipe has a reader thread that hands whole lines to a sink: the
//! terminal (writing each line while holding the lock on rlaunch's stdout or
//! stderr, so lines never interleave mid-line) or, in proxy mode, a frame to
//! the launcher.

use std::io::{BufRead, BufReader, Read, Write};
use std::thread::JoinHandle;

#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub enum Stream {
    Stdout,
    Stderr,
}

/// Reads `pipe` to EOF and calls `sink` with every line, newline included
/// (one is added to a last line that lacks it).
pub fn forward_lines(pipe: impl Read + Send + 'static, mut sink: impl FnMut(&[u8]) + Send + 'static) -> JoinHandle<()> {
    std::thread::spawn(move || {
        let mut reader = BufReader::with_capacity(64 * 1024, pipe);
        let mut line = Vec::with_capacity(256);
        loop {
            line.clear();
            match reader.read_until(b'\n', &mut line) {
                Ok(0) | Err(_) => return,
                Ok(_) => {}
            }
            if line.last() != Some(&b'\n') {
                line.push(b'\n');
            }
            sink(&line);
        }
    })
}

/// Writes one line to rlaunch's own stdout or stderr, with an optional tag.
/// Errors (a closed terminal) are ignored: ranks must never block on output.
pub fn print_line(stream: Stream, tag: Option<&str>, line: &[u8]) {
    fn write(out: &mut impl Write, tag: Option<&str>, line: &[u8]) -> std::io::Result<()> {
        if let Some(tag) = tag {
            out.write_all(tag.as_bytes())?;
        }
        out.write_all(line)?;
        out.flush()
    }
    let _ = match stream {
        Stream::Stdout => write(&mut std::io::stdout().lock(), tag, line),
        Stream::Stderr => write(&mut std::io::stderr().lock(), tag, line),
    };
}

/// The `--tag-output` prefix of a rank's lines.
pub fn tag(enabled: bool, rank: usize) -> Option<String> {
    enabled.then(|| format!("[{rank}] "))
}

/// Copies rlaunch's stdin to rank 0 until either side closes. Detached: a
/// read of a terminal never ends on its own, and process exit ends it.
pub fn forward_stdin(mut rank0: std::fs::File) {
    std::thread::spawn(move || {
        let _ = std::io::copy(&mut std::io::stdin().lock(), &mut rank0);
    });
}
