//! One connection's request state machine: the handshake, then requests
//! applied in order. Requests are taken from the connection's [`Input`]
//! (one read holds many of them); a large put payload is received straight
//! into the heap, get replies are sent straight from it, and a quiet is
//! answered only after every earlier request on that connection. Atomics
//! are applied with CPU atomics on this rank's memory (`amo::apply`), so
//! they are atomic with the atomics of same-host peers and of this rank
//! itself. Every offset is bounds-checked: a bad request closes the
//! connection, it never touches memory.
//!
//! [`serve`] makes as much progress as the socket allows without blocking,
//! so whichever thread holds the connection table (the progress thread, or
//! a rank's own thread while it waits) may call it whenever it likes.

use super::input::Input;
use super::output::Output;
use super::request::{atomic_from_code, Request, ATOMIC_TAIL, HEADER_BYTES};
use crate::protocol::auth::Acceptor;
use crate::protocol::wire::{FrameBuf, Msg, MAX_UNAUTHENTICATED_FRAME};
use crate::segment::RawSegment;
use crate::syscall::cvt;
use crate::transport::amo;
use mio::net::TcpStream;
use std::io;
use std::os::fd::AsRawFd;

enum Phase {
    AwaitResponse(Acceptor),
    AwaitHello,
    /// Reading a request header; `got` bytes so far.
    Header {
        header: [u8; HEADER_BYTES],
        got: usize,
    },
    /// Receiving a put's payload into the heap.
    Payload {
        at: usize,
        left: usize,
    },
    /// Sending bytes from `at` in the heap (a get reply).
    Reply {
        at: usize,
        left: usize,
    },
    /// Receiving an atomic's compare operand.
    AtomicTail {
        offset: u64,
        code: u32,
        operand: u64,
        tail: [u8; ATOMIC_TAIL],
        got: usize,
    },
    /// Sending one word back: a quiet's token or an atomic's old value.
    Word {
        word: [u8; 8],
        sent: usize,
    },
}

pub(super) struct Conn {
    pub(super) stream: TcpStream,
    frames: FrameBuf,
    input: Input,
    output: Output,
    phase: Phase,
}

impl Conn {
    /// A freshly accepted connection; its challenge goes out at once.
    pub(super) fn accepted(mut stream: TcpStream) -> Conn {
        let (acceptor, mut frames) = Acceptor::start_buffered();
        let _ = frames.flush_to(&mut stream);
        Conn {
            stream,
            frames,
            input: Input::new(),
            output: Output::new(),
            phase: Phase::AwaitResponse(acceptor),
        }
    }
}

/// What happened to a connection after serving it.
pub(super) enum Verdict {
    KeepOpen,
    Close,
}

/// Makes as much progress on one connection as the socket allows.
pub(super) fn serve(rank: usize, secret: &[u8], memory: RawSegment, conn: &mut Conn) -> Verdict {
    if matches!(conn.phase, Phase::AwaitResponse(_) | Phase::AwaitHello) {
        match handshake(rank, secret, conn) {
            Some(true) => {}
            Some(false) => return Verdict::KeepOpen,
            None => return Verdict::Close,
        }
    }
    conn.input.new_event();
    match conn.frames.flush_to(&mut conn.stream) {
        Ok(true) => {}
        Ok(false) => return Verdict::KeepOpen,
        Err(_) => return Verdict::Close,
    }
    // Answers gathered at the last event that the socket could not take
    // then; the loop gathers behind them up to the output's limit.
    if conn.output.flush(&conn.stream).is_err() {
        return Verdict::Close;
    }
    loop {
        let step = match &mut conn.phase {
            Phase::AwaitResponse(_) | Phase::AwaitHello => unreachable!("the handshake finished above"),
            // SAFETY: the rest of the header array.
            Phase::Header { header, got } => unsafe {
                let dst = header[*got..].as_mut_ptr();
                conn.input.read(&conn.stream, dst, HEADER_BYTES - *got)
            }
            .inspect(|&n| *got += n),
            // SAFETY: `start_request` checked that [at, at+left) lies in the heap.
            Phase::Payload { at, left } => unsafe {
                let dst = memory.heap_base().add(*at);
                conn.input.read(&conn.stream, dst, *left)
            }
            .inspect(|&n| {
                *at += n;
                *left -= n;
            }),
            Phase::Reply { at, left } => {
                // SAFETY: `start_request` checked that [at, at+left) lies in the heap.
                let src = unsafe { memory.heap_base().add(*at) };
                if conn.output.has_room(*left) {
                    // SAFETY: as above.
                    unsafe { conn.output.gather(src, *left) };
                    Ok(std::mem::take(left))
                } else {
                    // Gathered answers go first.
                    match conn.output.flush(&conn.stream) {
                        Ok(true) => send_from(&conn.stream, src, *left).inspect(|&n| {
                            *at += n;
                            *left -= n;
                        }),
                        Ok(false) => Err(io::ErrorKind::WouldBlock.into()),
                        Err(e) => Err(e),
                    }
                }
            }
            // SAFETY: the rest of the tail array.
            Phase::AtomicTail { tail, got, .. } => unsafe {
                let dst = tail[*got..].as_mut_ptr();
                conn.input.read(&conn.stream, dst, ATOMIC_TAIL - *got)
            }
            .inspect(|&n| *got += n),
            Phase::Word { word, sent } => match conn.output.has_room(8 - *sent) {
                true => {
                    let rest = 8 - *sent;
                    // SAFETY: the rest of the word array.
                    unsafe { conn.output.gather(word[*sent..].as_ptr(), rest) };
                    *sent = 8;
                    Ok(rest)
                }
                false => send_from(&conn.stream, word[*sent..].as_ptr(), 8 - *sent).inspect(|&n| {
                    *sent += n;
                }),
            },
        };
        match step {
            Ok(0) => return Verdict::Close,
            Ok(_) => {}
            // Nothing more to read (or no room to answer): the gathered
            // answers leave now; what the socket cannot take yet leaves at
            // its next event (the set watches for room too).
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => {
                return match conn.output.flush(&conn.stream) {
                    Ok(_) => Verdict::KeepOpen,
                    Err(_) => Verdict::Close,
                }
            }
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(_) => return Verdict::Close,
        }
        let next = match &conn.phase {
            Phase::Header {
                header,
                got: HEADER_BYTES,
            } => match start_request(memory, header) {
                Some(phase) => phase,
                None => {
                    eprintln!(
                        "oneside: rank {rank}: a peer sent an invalid or out-of-bounds request; connection closed"
                    );
                    return Verdict::Close;
                }
            },
            &Phase::AtomicTail {
                offset,
                code,
                operand,
                tail,
                got: ATOMIC_TAIL,
            } => match apply_atomic(memory, offset, code, operand, u64::from_le_bytes(tail)) {
                Some(phase) => phase,
                None => {
                    eprintln!("oneside: rank {rank}: a peer sent an invalid or misaligned atomic; connection closed");
                    return Verdict::Close;
                }
            },
            Phase::Payload { left: 0, .. } | Phase::Reply { left: 0, .. } | Phase::Word { sent: 8, .. } => {
                fresh_header()
            }
            _ => continue,
        };
        conn.phase = next;
    }
}

fn fresh_header() -> Phase {
    Phase::Header {
        header: [0; HEADER_BYTES],
        got: 0,
    }
}

/// Runs the secret handshake: `Some(true)` when done, `Some(false)` when it
/// needs more input, `None` to drop a stranger.
fn handshake(rank: usize, secret: &[u8], conn: &mut Conn) -> Option<bool> {
    let open = conn
        .frames
        .fill_from(&mut conn.stream, MAX_UNAUTHENTICATED_FRAME)
        .unwrap_or(false);
    while let Some(msg) = conn.frames.next_msg(MAX_UNAUTHENTICATED_FRAME).ok()? {
        match (&conn.phase, msg) {
            (Phase::AwaitResponse(acceptor), response) => {
                let confirm = acceptor.finish(secret, &response).ok()?;
                conn.frames.push(&confirm);
                conn.phase = Phase::AwaitHello;
            }
            (Phase::AwaitHello, Msg::Hello { .. }) => {
                // The client sends nothing more until it has this reply, so
                // no request bytes can be sitting in the frame buffer.
                conn.frames.push(&Msg::Hello { rank: rank as u32 });
                conn.phase = fresh_header();
                return Some(true);
            }
            _ => return None,
        }
    }
    conn.frames.flush_to(&mut conn.stream).ok()?;
    open.then_some(false)
}

/// Decodes a header and checks it against this rank's memory; `None` if invalid.
fn start_request(memory: RawSegment, header: &[u8; HEADER_BYTES]) -> Option<Phase> {
    let in_heap = |offset: u64, len: u32| {
        let at = usize::try_from(offset).ok()?;
        let left = len as usize;
        memory.reachable(at, left).then_some((at, left))
    };
    Some(match Request::decode(header)? {
        Request::Put { offset, len } => match in_heap(offset, len)? {
            (_, 0) => fresh_header(),
            (at, left) => Phase::Payload { at, left },
        },
        Request::Get { offset, len } => match in_heap(offset, len)? {
            (_, 0) => fresh_header(),
            (at, left) => Phase::Reply { at, left },
        },
        Request::Quiet { token } => Phase::Word {
            word: token.to_le_bytes(),
            sent: 0,
        },
        Request::Atomic { offset, code, operand } => Phase::AtomicTail {
            offset,
            code,
            operand,
            tail: [0; ATOMIC_TAIL],
            got: 0,
        },
    })
}

/// Checks and applies an atomic; the next phase sends the old value back
/// if it was asked for. `None` if the request is invalid.
fn apply_atomic(memory: RawSegment, offset: u64, code: u32, operand: u64, compare: u64) -> Option<Phase> {
    let amo = atomic_from_code(code, operand, compare)?;
    let at = usize::try_from(offset).ok()?;
    let width = amo.width.bytes();
    if at % width != 0 || !memory.reachable(at, width) {
        return None;
    }
    // SAFETY: the word lies in the heap and is aligned (checked above, the
    // heap base is page aligned); all atomics on it in this job are CPU
    // atomics (a job with verbs routes atomics through the NIC instead).
    let old = unsafe { amo::apply(memory.heap_base().add(at), amo) };
    Some(match amo.fetch {
        true => Phase::Word {
            word: old.to_le_bytes(),
            sent: 0,
        },
        false => fresh_header(),
    })
}

/// send(2) from raw memory, without SIGPIPE.
fn send_from(stream: &TcpStream, src: *const u8, len: usize) -> io::Result<usize> {
    // SAFETY: callers pass a source valid for `len` bytes of reads.
    cvt(unsafe { libc::send(stream.as_raw_fd(), src.cast(), len, libc::MSG_NOSIGNAL) }).map(|n| n as usize)
}
