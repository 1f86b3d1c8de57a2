//! The TCP path to a peer on another host (or any peer, when forced).
//!
//! The origin side ([`TcpPeer`]) is one blocking connection per peer, owned
//! by the application thread. The target side is the peer's
//! [`ProgressEngine`](engine::ProgressEngine), which applies requests to its
//! memory without help from its application thread.
//!
//! Small puts (up to [`BATCH_PUT_BYTES`]) are copied into a per-peer batch
//! that goes out with the next get, quiet, signal or when it fills; larger
//! puts are written with `writev(header, payload)` straight from the
//! caller's buffer. A get or a quiet waits for the peer's answer, which TCP's
//! ordering places after every earlier request to that peer.

pub mod engine;
mod request;

use crate::protocol::auth::Connector;
use crate::protocol::wire::{recv_blocking, send_blocking, Msg, MAX_UNAUTHENTICATED_FRAME};
use request::Request;
use std::io::{self, IoSlice, Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::time::Duration;

/// Puts up to this size are batched.
pub const BATCH_PUT_BYTES: usize = 1024;
/// A batch is sent once it holds this much.
const BATCH_LIMIT: usize = 64 * 1024;

/// The origin side of one peer's connection.
pub struct TcpPeer {
    stream: TcpStream,
    batch: Vec<u8>,
    /// Requests sent since the last quiet.
    unquieted: bool,
    next_token: u64,
}

impl TcpPeer {
    /// Connects to a peer's progress engine and runs the handshake.
    pub fn connect(rank: usize, addr: SocketAddr, secret: &[u8], timeout: Duration) -> io::Result<TcpPeer> {
        let mut stream = TcpStream::connect_timeout(&addr, timeout)?;
        stream.set_nodelay(true)?;
        stream.set_read_timeout(Some(timeout))?;
        let challenge = recv_blocking(&mut stream, MAX_UNAUTHENTICATED_FRAME)?;
        let (connector, response) = Connector::respond(secret, &challenge).map_err(refused)?;
        send_blocking(&mut stream, &response)?;
        let confirm = recv_blocking(&mut stream, MAX_UNAUTHENTICATED_FRAME)?;
        connector.finish(secret, &confirm).map_err(refused)?;
        send_blocking(&mut stream, &Msg::Hello { rank: rank as u32 })?;
        match recv_blocking(&mut stream, MAX_UNAUTHENTICATED_FRAME)? {
            Msg::Hello { .. } => {}
            other => {
                return Err(io::Error::new(
                    io::ErrorKind::InvalidData,
                    format!("expected Hello, got {}", other.kind()),
                ))
            }
        }
        stream.set_read_timeout(None)?;
        Ok(TcpPeer {
            stream,
            batch: Vec::with_capacity(BATCH_LIMIT),
            unquieted: false,
            next_token: 0,
        })
    }

    /// Sends `src` to heap offset `offset`; returns when `src` may be reused.
    pub fn put(&mut self, offset: usize, src: &[u8]) -> io::Result<()> {
        let header = Request::Put {
            offset: offset as u64,
            len: len32(src.len())?,
        }
        .encode();
        self.unquieted = true;
        if src.len() <= BATCH_PUT_BYTES {
            self.batch.extend_from_slice(&header);
            self.batch.extend_from_slice(src);
            if self.batch.len() >= BATCH_LIMIT {
                self.flush()?;
            }
            return Ok(());
        }
        self.flush()?;
        write_all_vectored(&mut self.stream, &mut [IoSlice::new(&header), IoSlice::new(src)])
    }

    /// Reads `dst.len()` bytes from heap offset `offset`.
    pub fn get(&mut self, offset: usize, dst: &mut [u8]) -> io::Result<()> {
        let header = Request::Get {
            offset: offset as u64,
            len: len32(dst.len())?,
        }
        .encode();
        self.batch.extend_from_slice(&header);
        self.flush()?;
        self.stream.read_exact(dst).map_err(closed_plainly)
    }

    /// Stores `epoch` into the peer's barrier flag for `round`.
    pub fn signal(&mut self, round: usize, epoch: u64) -> io::Result<()> {
        self.batch.extend_from_slice(
            &Request::Signal {
                round: round as u64,
                epoch,
            }
            .encode(),
        );
        self.flush()
    }

    /// First half of a quiet: asks for an acknowledgement if anything was
    /// sent since the last one. Returns whether an answer is now owed.
    pub fn start_quiet(&mut self) -> io::Result<bool> {
        if !self.unquieted {
            return Ok(false);
        }
        self.next_token += 1;
        self.batch
            .extend_from_slice(&Request::Quiet { token: self.next_token }.encode());
        self.flush()?;
        Ok(true)
    }

    /// Second half of a quiet: waits for the acknowledgement.
    pub fn finish_quiet(&mut self) -> io::Result<()> {
        let mut token = [0u8; 8];
        self.stream.read_exact(&mut token).map_err(closed_plainly)?;
        if u64::from_le_bytes(token) != self.next_token {
            return Err(io::Error::new(
                io::ErrorKind::InvalidData,
                "quiet acknowledgement out of order",
            ));
        }
        self.unquieted = false;
        Ok(())
    }

    /// Sends any batched puts now.
    pub fn flush(&mut self) -> io::Result<()> {
        if !self.batch.is_empty() {
            self.stream.write_all(&self.batch)?;
            self.batch.clear();
        }
        Ok(())
    }
}

/// std words an early EOF "failed to fill whole buffer"; say what it means.
fn closed_plainly(e: io::Error) -> io::Error {
    match e.kind() {
        io::ErrorKind::UnexpectedEof => io::Error::new(io::ErrorKind::UnexpectedEof, "the connection was closed"),
        _ => e,
    }
}

fn len32(len: usize) -> io::Result<u32> {
    u32::try_from(len).map_err(|_| io::Error::new(io::ErrorKind::InvalidInput, "a single transfer is limited to 4 GiB"))
}

fn refused(e: crate::protocol::auth::AuthError) -> io::Error {
    io::Error::new(io::ErrorKind::PermissionDenied, e.describe())
}

fn write_all_vectored(stream: &mut TcpStream, mut slices: &mut [IoSlice<'_>]) -> io::Result<()> {
    while !slices.is_empty() {
        match stream.write_vectored(slices) {
            Ok(0) => return Err(io::ErrorKind::WriteZero.into()),
            Ok(n) => IoSlice::advance_slices(&mut slices, n),
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(())
}
