//! The TCP path to a peer on another host (or any peer, when forced).
//!
//! The origin side ([`TcpPeer`]) is one blocking connection per peer, owned
//! by the application thread. The target side is the peer's
//! [`ProgressEngine`](engine::ProgressEngine), which applies requests to its
//! memory without help from its application thread.
//!
//! Small puts (up to [`BATCH_PUT_BYTES`]) and non-fetching atomics are
//! copied into a per-peer batch that goes out with the next get, quiet,
//! signal or when it fills, or at the latest after a tick of the rank's
//! [`flusher`] when the rank makes no further call; larger puts are written with
//! `writev(header, payload)` straight from the caller's buffer, except
//! non-blocking ones, which join the batch. A get, a fetching atomic or a
//! quiet waits for the peer's answer, which TCP's ordering places after
//! every earlier request to that peer. Answers come back in request order,
//! so the replies of non-blocking gets still owed are read, into their
//! destinations, before any later answer. A link keeps a window of owed
//! answers and reads while it waits to send (`owed`), so no pattern of
//! outstanding operations can fill both directions and stall.

mod answer;
pub mod engine;
pub mod flusher;
mod input;
mod output;
mod owed;
pub mod path;
mod ready;
pub(crate) mod request;
mod serve;

use crate::protocol::auth::{self, HandshakeError};
use crate::protocol::wire::{recv_blocking, send_blocking, Msg, MAX_UNAUTHENTICATED_FRAME};
use crate::transport::amo::Amo;
use crate::transport::fault::Fault;
use answer::read_answer;
use engine::Driver;
use flusher::Nudge;
use owed::{send_all, Owed, OWED_BYTES};
use request::Request;
use std::io::{self, IoSlice};
use std::net::{SocketAddr, TcpStream};
use std::time::Duration;

/// What every operation of a link returns: a broken connection is a [`Fault`] naming the peer.
type Result<T> = std::result::Result<T, Fault>;

/// Puts up to this size are batched.
pub const BATCH_PUT_BYTES: usize = 1024;
/// A batch is sent once it holds this much.
const BATCH_LIMIT: usize = 64 * 1024;

/// What opening a connection to a peer's progress engine needs.
#[derive(Clone)]
pub struct Dial {
    pub secret: Vec<u8>,
    pub timeout: Duration,
    /// This rank's own engine, which a link drives while it waits for an
    /// answer (none in a rank that runs no engine).
    pub driver: Option<Driver>,
    /// The rank's flusher, which pushes out a batch its origin left.
    pub nudge: Option<Nudge>,
}

/// The origin side of one peer's connection.
pub struct TcpPeer {
    stream: TcpStream,
    /// The peer's rank, which a long wait for its answer names.
    peer: usize,
    driver: Option<Driver>,
    nudge: Option<Nudge>,
    batch: Vec<u8>,
    /// How many batches this link has started (the flusher tells a new
    /// batch from one left waiting by it).
    batches: u64,
    /// Requests sent since the last quiet.
    unquieted: bool,
    next_token: u64,
    /// Destinations of non-blocking gets whose replies are still owed, in
    /// order, within the link's window (`owed`).
    owed: Owed,
    /// Set once the connection failed: owed replies will never arrive, and
    /// nothing more is read or written. It keeps the error that broke it
    /// (its kind, which says why the peer was lost, and its text), said
    /// again at every later call.
    broken: Option<(io::ErrorKind, String)>,
}

// SAFETY: the raw pointers are the destinations of non-blocking gets,
// which their callers keep valid and untouched until a quiet on this link
// (`get_nbi`'s contract). Another thread may read a reply into one of them,
// but only while it holds the link's lock, which the issuing thread's quiet
// takes afterwards: the write happens before that quiet returns.
unsafe impl Send for TcpPeer {}

impl TcpPeer {
    /// Connects to a peer's progress engine and runs the handshake.
    /// `rank` is this rank, `peer` the one at `addr`.
    pub fn connect(rank: usize, peer: usize, addr: SocketAddr, dial: &Dial) -> Result<TcpPeer> {
        let stream = Self::handshake(rank, addr, dial).map_err(|e| Fault::io(peer, "connect", e))?;
        Ok(TcpPeer {
            stream,
            peer,
            driver: dial.driver.clone(),
            nudge: dial.nudge.clone(),
            batch: Vec::with_capacity(BATCH_LIMIT),
            batches: 0,
            unquieted: false,
            next_token: 0,
            owed: Owed::new(),
            broken: None,
        })
    }

    /// Dials `addr` and says hello, authenticated by the job's secret.
    fn handshake(rank: usize, addr: SocketAddr, dial: &Dial) -> io::Result<TcpStream> {
        let mut stream = TcpStream::connect_timeout(&addr, dial.timeout)?;
        stream.set_nodelay(true)?;
        crate::protocol::liveness::watch(&stream)?;
        stream.set_read_timeout(Some(dial.timeout))?;
        auth::connect_blocking(&mut stream, &dial.secret).map_err(|e| match e {
            HandshakeError::Io(e) => e,
            HandshakeError::Auth(e) => io::Error::new(io::ErrorKind::PermissionDenied, e.describe()),
        })?;
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
        Ok(stream)
    }

    /// Sends `src` to heap offset `offset`; returns when `src` may be reused.
    pub fn put(&mut self, offset: usize, src: &[u8]) -> Result<()> {
        if src.len() <= BATCH_PUT_BYTES {
            return self.put_nbi(offset, src);
        }
        let header = Request::Put {
            offset: offset as u64,
            len: self.len32(src.len())?,
        }
        .encode();
        self.unquieted = true;
        self.flush()?;
        let sent = send_all(
            &self.stream,
            self.peer,
            &mut [IoSlice::new(&header), IoSlice::new(src)],
            &mut self.owed,
            self.driver.as_ref(),
        );
        self.check(sent)
    }

    /// Adds a put of any size to the batch, which leaves when it fills, at
    /// the next operation that waits, or at the flusher's next tick.
    pub fn put_nbi(&mut self, offset: usize, src: &[u8]) -> Result<()> {
        self.note_batching();
        self.append_put(offset, src)
    }

    /// Whether requests wait in the batch.
    pub fn has_batch(&self) -> bool {
        !self.batch.is_empty()
    }

    /// The number of the batch waiting now (see `has_batch`).
    pub fn batch_number(&self) -> u64 {
        self.batches
    }

    /// Counts a new batch, and tells the flusher, before a request joins
    /// an empty batch.
    #[inline]
    fn note_batching(&mut self) {
        if self.batch.is_empty() {
            self.batches = self.batches.wrapping_add(1);
            if let Some(nudge) = &self.nudge {
                nudge.batched();
            }
        }
    }

    /// Appends a put to the batch; sends it once it is full.
    fn append_put(&mut self, offset: usize, src: &[u8]) -> Result<()> {
        let header = Request::Put {
            offset: offset as u64,
            len: self.len32(src.len())?,
        }
        .encode();
        self.unquieted = true;
        self.batch.extend_from_slice(&header);
        self.batch.extend_from_slice(src);
        if self.batch.len() >= BATCH_LIMIT {
            self.flush()?;
        }
        Ok(())
    }

    /// A put that a flag to the same peer follows at once (a collective's
    /// step): batched up to [`BATCH_LIMIT`], so that the data and the flag
    /// leave in one write and arrive in one segment train, and written
    /// straight from `src` above that.
    pub fn put_before_flag(&mut self, offset: usize, src: &[u8]) -> Result<()> {
        match src.len() <= BATCH_LIMIT {
            true => self.append_put(offset, src),
            false => self.put(offset, src),
        }
    }

    /// Reads `dst.len()` bytes from heap offset `offset`.
    pub fn get(&mut self, offset: usize, dst: &mut [u8]) -> Result<()> {
        self.request_answer(Request::Get {
            offset: offset as u64,
            len: self.len32(dst.len())?,
        })?;
        let got = self.read_answer(dst.as_mut_ptr(), dst.len());
        self.check(got)
    }

    /// Asks for `len` bytes from heap offset `offset`, to be read into
    /// `dst` when the answer is next needed (at the latest, at quiet). The
    /// request joins the batch. A get that would pass the link's window of
    /// owed answers first reads the oldest ones; one larger than the whole
    /// window is done at once (see `owed`).
    ///
    /// # Safety
    /// `dst` must stay valid for `len` bytes of writes, and untouched, until
    /// the next `finish_quiet` on this link returns or the link breaks.
    pub unsafe fn get_nbi(&mut self, offset: usize, dst: *mut u8, len: usize) -> Result<()> {
        let request = Request::Get {
            offset: offset as u64,
            len: self.len32(len)?,
        };
        if len > OWED_BYTES {
            self.unquieted = true;
            self.request_answer(request)?;
            let got = self.read_answer(dst, len);
            return self.check(got);
        }
        if !self.owed.fits(len) {
            self.flush()?;
            let got = self.owed.make_room(&self.stream, self.peer, self.driver.as_ref());
            self.check(got)?;
            if !self.owed.fits(len) {
                self.drain_pending_gets()?;
            }
        }
        self.note_batching();
        self.unquieted = true;
        self.batch.extend_from_slice(&request.encode());
        self.owed.push(dst, len);
        if self.batch.len() >= BATCH_LIMIT {
            self.flush()?;
        }
        Ok(())
    }

    /// Applies an atomic at heap offset `offset`; waits for the old value
    /// only when `amo.fetch` (a non-fetching one joins the batch).
    pub fn amo(&mut self, offset: usize, amo: Amo) -> Result<u64> {
        if !amo.fetch {
            self.note_batching();
        }
        self.append_amo(offset, amo)
    }

    /// A non-fetching atomic sent at once with the batch before it (a
    /// collective's flag, a context's signal): nothing is left to flush.
    pub fn amo_now(&mut self, offset: usize, amo: Amo) -> Result<()> {
        debug_assert!(!amo.fetch, "a fetching atomic waits for its answer in `amo`");
        self.append_amo(offset, amo)?;
        self.flush()
    }

    fn append_amo(&mut self, offset: usize, amo: Amo) -> Result<u64> {
        let header = Request::Atomic {
            offset: offset as u64,
            code: request::atomic_code(&amo),
            operand: amo.operand,
        }
        .encode();
        self.batch.extend_from_slice(&header);
        self.batch.extend_from_slice(&amo.compare.to_le_bytes());
        if !amo.fetch {
            self.unquieted = true;
            if self.batch.len() >= BATCH_LIMIT {
                self.flush()?;
            }
            return Ok(0);
        }
        self.flush()?;
        self.drain_pending_gets()?;
        let mut old = [0u8; 8];
        let got = self.read_answer(old.as_mut_ptr(), 8);
        self.check(got)?;
        Ok(u64::from_le_bytes(old))
    }

    /// First half of a quiet: asks for an acknowledgement if anything was
    /// sent since the last one. Returns whether an answer is now owed.
    pub fn start_quiet(&mut self) -> Result<bool> {
        if !self.unquieted {
            return Ok(false);
        }
        self.next_token += 1;
        self.batch
            .extend_from_slice(&Request::Quiet { token: self.next_token }.encode());
        self.flush()?;
        Ok(true)
    }

    /// Second half of a quiet: reads the replies of non-blocking gets, then
    /// waits for the acknowledgement.
    pub fn finish_quiet(&mut self) -> Result<()> {
        self.drain_pending_gets()?;
        let mut token = [0u8; 8];
        let got = self.read_answer(token.as_mut_ptr(), 8);
        self.check(got)?;
        if u64::from_le_bytes(token) != self.next_token {
            return self.check(Err(io::Error::new(
                io::ErrorKind::InvalidData,
                "quiet acknowledgement out of order",
            )));
        }
        self.unquieted = false;
        Ok(())
    }

    /// Runs `ops` on this link without making the next quiet wait for
    /// them: for a collective's own traffic, whose completion nobody
    /// awaits (the receiver waits for the flag behind it instead). A
    /// request made earlier is still acknowledged at the next quiet.
    pub fn untracked<R>(&mut self, ops: impl FnOnce(&mut TcpPeer) -> Result<R>) -> Result<R> {
        let unquieted = self.unquieted;
        let result = ops(self);
        self.unquieted = unquieted;
        result
    }

    /// Sends any batched requests now.
    pub fn flush(&mut self) -> Result<()> {
        if let Some((kind, first)) = &self.broken {
            let e = io::Error::new(*kind, format!("the connection broke earlier: {first}"));
            return Err(Fault::io(self.peer, "the TCP link", e));
        }
        if !self.batch.is_empty() {
            let sent = send_all(
                &self.stream,
                self.peer,
                &mut [IoSlice::new(&self.batch)],
                &mut self.owed,
                self.driver.as_ref(),
            );
            self.check(sent)?;
            self.batch.clear();
        }
        Ok(())
    }

    /// Queues a request that is answered, sends it with the batch, and
    /// reads the answers owed to earlier non-blocking gets.
    fn request_answer(&mut self, request: Request) -> Result<()> {
        self.batch.extend_from_slice(&request.encode());
        self.flush()?;
        self.drain_pending_gets()
    }

    fn drain_pending_gets(&mut self) -> Result<()> {
        let got = self.owed.read_all(&self.stream, self.peer, self.driver.as_ref());
        self.check(got)
    }

    /// Reads `len` bytes of answer into `dst`, driving this rank's own
    /// engine meanwhile.
    fn read_answer(&self, dst: *mut u8, len: usize) -> io::Result<()> {
        // SAFETY: every caller passes a destination valid for `len` bytes
        // of writes: its own buffer, or a non-blocking get's (`get_nbi`).
        unsafe { read_answer(&self.stream, self.peer, dst, len, self.driver.as_ref()) }
    }

    /// A transfer's length as the wire carries it.
    fn len32(&self, len: usize) -> Result<u32> {
        u32::try_from(len).map_err(|_| {
            let e = io::Error::new(io::ErrorKind::InvalidInput, "a single transfer is limited to 4 GiB");
            Fault::io(self.peer, "the TCP link", e)
        })
    }

    /// Passes a result through; on an error, marks the link broken and
    /// forgets every owed destination, so nothing is ever written into them.
    fn check<T>(&mut self, result: io::Result<T>) -> Result<T> {
        result.map_err(|e| {
            let e = closed_plainly(e);
            if self.broken.is_none() {
                self.broken = Some((e.kind(), e.to_string()));
            }
            self.owed.clear();
            Fault::io(self.peer, "the TCP link", e)
        })
    }
}

/// std words an early EOF "failed to fill whole buffer"; say what it means.
fn closed_plainly(e: io::Error) -> io::Error {
    match e.kind() {
        io::ErrorKind::UnexpectedEof => io::Error::new(io::ErrorKind::UnexpectedEof, "the connection was closed"),
        _ => e,
    }
}
