//! Forwarding ranks' output line by line, and rlaunch's stdin to rank 0.
//!
//! Each pipe has a reader thread that writes whole lines while holding the
//! lock on rlaunch's own stdout or stderr, so lines from different ranks
//! never interleave mid-line.

use std::io::{BufRead, BufReader, Read, Write};
use std::process::ChildStdin;
use std::thread::JoinHandle;

#[derive(Clone, Copy)]
pub enum Stream {
    Stdout,
    Stderr,
}

/// Copies `pipe` to rlaunch's `stream`, one whole line at a time, with an
/// optional tag before each line. Ends at EOF.
pub fn forward_lines(pipe: impl Read + Send + 'static, stream: Stream, tag: Option<String>) -> JoinHandle<()> {
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
            let written = match stream {
                Stream::Stdout => write_line(&mut std::io::stdout().lock(), tag.as_deref(), &line),
                Stream::Stderr => write_line(&mut std::io::stderr().lock(), tag.as_deref(), &line),
            };
            if written.is_err() {
                // rlaunch's own output is gone (e.g. a closed pipe): keep
                // draining so the rank never blocks on a full pipe.
                continue;
            }
        }
    })
}

fn write_line(out: &mut impl Write, tag: Option<&str>, line: &[u8]) -> std::io::Result<()> {
    if let Some(tag) = tag {
        out.write_all(tag.as_bytes())?;
    }
    out.write_all(line)?;
    out.flush()
}

/// Copies rlaunch's stdin to rank 0 until either side closes. Detached: a
/// read of a terminal never ends on its own, and process exit ends it.
pub fn forward_stdin(mut rank0: ChildStdin) {
    std::thread::spawn(move || {
        let _ = std::io::copy(&mut std::io::stdin().lock(), &mut rank0);
    });
}
