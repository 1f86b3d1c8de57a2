//! The bootstrap wire format: a closed set of messages, postcard-encoded,
//! each wrapped in an envelope that carries the protocol version, and framed
//! with a 4-byte little-endian length.
//!
//! [`FrameBuf`] does the framing for non-blocking (mio) sockets;
//! [`send_blocking`] and [`recv_blocking`] do it for blocking ones.

use serde::{Deserialize, Serialize};
use std::io::{self, Read, Write};

/// Bumped whenever [`Msg`] changes shape.
pub const PROTOCOL_VERSION: u16 = 5;

/// Largest frame accepted from a peer that has not yet authenticated.
pub const MAX_UNAUTHENTICATED_FRAME: usize = 256;
/// Largest frame accepted at all.
pub const MAX_FRAME: usize = 1 << 20;
/// Largest frame a rank accepts from the launcher once it has
/// authenticated it: a card table grows with the rank count.
pub const MAX_TABLE_FRAME: usize = 1 << 30;

/// Every rank's card in one buffer, indexed by rank.
pub fn encode_table(cards: &[Vec<u8>]) -> Vec<u8> {
    postcard::to_stdvec(cards).expect("postcard encoding into a Vec cannot fail")
}

/// Where the rank `writer` publishes job `job_id`'s card table for the
/// other ranks of its host (rlaunch picks the writer; under PMI-2 it is
/// each node's lowest rank).
pub fn card_table_path(job_id: &str, writer: usize) -> String {
    format!("/dev/shm/{}{job_id}-cards-{writer}", super::env::SHM_PREFIX)
}

/// The cards of an [`encode_table`] buffer, as slices of it: no copy, and
/// one allocation for the whole table (a rank of a large job reads N cards).
pub fn table_entries(table: &[u8]) -> Result<Vec<&[u8]>, postcard::Error> {
    postcard::from_bytes(table)
}

/// Random challenge/response nonce.
pub type Nonce = [u8; 32];
/// HMAC-SHA256 tag.
pub type Tag = [u8; 32];

/// Every message of the bootstrap protocol.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub enum Msg {
    /// Acceptor → connector: prove you know the job secret.
    Challenge { nonce: Nonce },
    /// Connector → acceptor: the proof, plus a challenge back.
    Response { nonce: Nonce, tag: Tag },
    /// Acceptor → connector: the acceptor's proof.
    Confirm { tag: Tag },
    /// Rank → launcher: "I am here; this is my transport card".
    Register {
        rank: u32,
        size: u32,
        card: Vec<u8>,
        host: String,
        pid: u32,
    },
    /// Launcher → rank: every rank's card, as one [`encode_table`]. With
    /// `publish`, the rank also writes the table to that file for its
    /// host's other ranks and answers `CardsPublished`.
    Cards { table: Vec<u8>, publish: Option<String> },
    /// Rank → launcher: the card table is at the `publish` path.
    CardsPublished,
    /// Launcher → rank: read every rank's card from this file (written by
    /// another rank of this host).
    CardsAt { path: String },
    /// Rank → launcher: that file is not readable here; send the table.
    NeedCards,
    /// Rank → a peer's progress engine, first message on a TCP link.
    Hello { rank: u32 },
    /// Rank → launcher: this rank is in `finalize`, its operations
    /// complete, and waits for `Goodbye`; `at` says where finalize was
    /// called (`file:line`, or how: "at exit ..."); `reached`, each team
    /// slot it uses and the furthest step it signalled there
    /// (`ThreadStall::step_of`); `races`, the data races the race checker
    /// reported on this rank (`--check-races`), which fail the job.
    Finalized {
        rank: u32,
        at: String,
        reached: Vec<(u32, u64)>,
        races: u32,
    },
    /// Rank → launcher: this rank called global exit (`shmem_global_exit`):
    /// stop the job and exit with `status`.
    GlobalExit { rank: u32, status: i32 },
    /// Launcher → rank: `Finalized` (or `GlobalExit`) was recorded; the rank may exit.
    Goodbye,
    /// Launcher → rank: the job is over, stop waiting.
    Abort { reason: String },
    /// Rank → launcher: every thread of this rank has been blocked in
    /// oneside for a while, in these calls.
    Stalled(super::stall::Stall),
    /// Rank → launcher: a thread the last `Stalled` named got going again.
    Moving { rank: u32 },
    /// Rank → launcher: this rank is dying of a fault `signal`, in the
    /// program's frame `at` (`in main at heat.c:42:5`).
    Crashed { rank: u32, signal: i32, at: String },
}

impl Msg {
    /// The message's name, for error messages (payloads can be large or secret).
    pub fn kind(&self) -> &'static str {
        match self {
            Msg::Challenge { .. } => "Challenge",
            Msg::Response { .. } => "Response",
            Msg::Confirm { .. } => "Confirm",
            Msg::Register { .. } => "Register",
            Msg::Cards { .. } => "Cards",
            Msg::CardsPublished => "CardsPublished",
            Msg::CardsAt { .. } => "CardsAt",
            Msg::NeedCards => "NeedCards",
            Msg::Hello { .. } => "Hello",
            Msg::Finalized { .. } => "Finalized",
            Msg::GlobalExit { .. } => "GlobalExit",
            Msg::Goodbye => "Goodbye",
            Msg::Abort { .. } => "Abort",
            Msg::Stalled(_) => "Stalled",
            Msg::Moving { .. } => "Moving",
            Msg::Crashed { .. } => "Crashed",
        }
    }
}

#[derive(Serialize, Deserialize)]
struct Envelope<T> {
    version: u16,
    msg: T,
}

/// Why a frame could not be decoded.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum DecodeError {
    TooLarge { len: usize, limit: usize },
    Version { got: u16 },
    Malformed(String),
}

impl std::fmt::Display for DecodeError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            DecodeError::TooLarge { len, limit } => write!(f, "frame of {len} bytes exceeds the limit of {limit}"),
            DecodeError::Version { got } => write!(
                f,
                "protocol version {got}, expected {PROTOCOL_VERSION} (are rlaunch and the program built from the same oneside?)"
            ),
            DecodeError::Malformed(e) => write!(f, "malformed message: {e}"),
        }
    }
}

/// Encodes `msg` as one length-prefixed frame.
pub fn encode(msg: &Msg) -> Vec<u8> {
    encode_any(msg)
}

/// Encodes any serializable message as one versioned, length-prefixed frame
/// (rlaunch uses this for its proxy protocol too).
pub fn encode_any<T: Serialize>(msg: &T) -> Vec<u8> {
    let envelope = Envelope {
        version: PROTOCOL_VERSION,
        msg,
    };
    let body = postcard::to_stdvec(&envelope).expect("postcard encoding into a Vec cannot fail");
    let mut frame = Vec::with_capacity(4 + body.len());
    frame.extend_from_slice(&(body.len() as u32).to_le_bytes());
    frame.extend_from_slice(&body);
    frame
}

/// Decodes one frame body (without its length prefix).
pub fn decode(body: &[u8]) -> Result<Msg, DecodeError> {
    decode_any(body)
}

/// Decodes one frame body of any message type.
pub fn decode_any<T: serde::de::DeserializeOwned>(body: &[u8]) -> Result<T, DecodeError> {
    // The version is the first field, so it decodes even if `Msg` changed shape.
    let (version, _) = postcard::take_from_bytes::<u16>(body).map_err(|e| DecodeError::Malformed(e.to_string()))?;
    if version != PROTOCOL_VERSION {
        return Err(DecodeError::Version { got: version });
    }
    let envelope: Envelope<T> = postcard::from_bytes(body).map_err(|e| DecodeError::Malformed(e.to_string()))?;
    Ok(envelope.msg)
}

/// How many frames of the largest size a peer may send ahead of the reader
/// (a rank's messages to rlaunch come unasked; a handshake's one at a time).
pub const BACKLOG_FRAMES: usize = 4;

/// Reassembles frames from a non-blocking byte stream.
#[derive(Default)]
pub struct FrameBuf {
    inbox: Vec<u8>,
    outbox: Vec<u8>,
}

impl FrameBuf {
    /// Reads whatever is available, from a peer whose frames may be up to
    /// `limit` bytes. Returns `Ok(false)` when the peer closed, and an
    /// `InvalidData` error, without reading on, once the peer has sent more
    /// than it may: a first frame declared over `limit`, or more than
    /// [`BACKLOG_FRAMES`] frames of that size unread. So a stranger's
    /// stream costs at most that much memory, however fast it comes.
    pub fn fill_from(&mut self, src: &mut impl Read, limit: usize) -> io::Result<bool> {
        let mut chunk = [0u8; 8192];
        loop {
            if let Some(why) = self.overflow(limit) {
                return Err(io::Error::new(io::ErrorKind::InvalidData, why));
            }
            match src.read(&mut chunk) {
                Ok(0) => return Ok(false),
                Ok(n) => self.inbox.extend_from_slice(&chunk[..n]),
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => return Ok(true),
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(e) => return Err(e),
            }
        }
    }

    /// Why the unread input is more than a peer with frames of at most
    /// `limit` bytes may send ahead, if it is.
    fn overflow(&self, limit: usize) -> Option<String> {
        match self.first_len() {
            Some(len) if len > limit => Some(format!("a frame of {len} bytes, over the limit of {limit}")),
            _ if self.inbox.len() > BACKLOG_FRAMES * (4 + limit) => Some(format!(
                "{} bytes unread, more than {BACKLOG_FRAMES} frames of at most {limit} bytes",
                self.inbox.len()
            )),
            _ => None,
        }
    }

    /// The body length the first unread frame declares, once its header is in.
    fn first_len(&self) -> Option<usize> {
        let header = self.inbox.get(..4)?;
        Some(u32::from_le_bytes(header.try_into().expect("4-byte slice")) as usize)
    }

    /// Takes the next complete frame, if any, enforcing `limit` on its size.
    pub fn next_msg(&mut self, limit: usize) -> Result<Option<Msg>, DecodeError> {
        let Some(len) = self.first_len() else {
            return Ok(None);
        };
        if len > limit {
            return Err(DecodeError::TooLarge { len, limit });
        }
        if self.inbox.len() < 4 + len {
            return Ok(None);
        }
        let msg = decode(&self.inbox[4..4 + len]);
        self.inbox.drain(..4 + len);
        msg.map(Some)
    }

    /// Queues a message for sending.
    pub fn push(&mut self, msg: &Msg) {
        self.outbox.extend_from_slice(&encode(msg));
    }

    /// Writes as much queued output as the socket takes. `Ok(true)` when all is sent.
    pub fn flush_to(&mut self, dst: &mut impl Write) -> io::Result<bool> {
        while !self.outbox.is_empty() {
            match dst.write(&self.outbox) {
                Ok(0) => return Err(io::ErrorKind::WriteZero.into()),
                Ok(n) => {
                    self.outbox.drain(..n);
                }
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => return Ok(false),
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(e) => return Err(e),
            }
        }
        Ok(true)
    }
}

/// Sends one message on a blocking stream.
pub fn send_blocking(dst: &mut impl Write, msg: &Msg) -> io::Result<()> {
    dst.write_all(&encode(msg))
}

/// Receives one message from a blocking stream (honouring its read timeout).
pub fn recv_blocking(src: &mut impl Read, limit: usize) -> io::Result<Msg> {
    recv_any(src, limit)
}

/// Receives one message of any type from a blocking stream.
pub fn recv_any<T: serde::de::DeserializeOwned>(src: &mut impl Read, limit: usize) -> io::Result<T> {
    let mut header = [0u8; 4];
    src.read_exact(&mut header)?;
    let len = u32::from_le_bytes(header) as usize;
    if len > limit {
        return Err(invalid(DecodeError::TooLarge { len, limit }));
    }
    let mut body = vec![0u8; len];
    src.read_exact(&mut body)?;
    decode_any(&body).map_err(invalid)
}

fn invalid(e: DecodeError) -> io::Error {
    io::Error::new(io::ErrorKind::InvalidData, e.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_table_reads_back_as_slices_of_itself() {
        let cards: Vec<Vec<u8>> = (0..300).map(|r| vec![r as u8; r % 200]).collect();
        let table = encode_table(&cards);
        let entries = table_entries(&table).unwrap();
        assert_eq!(entries, cards.iter().map(Vec::as_slice).collect::<Vec<_>>());
        let inside = table.as_ptr_range();
        assert!(
            entries
                .iter()
                .filter(|e| !e.is_empty())
                .all(|e| inside.contains(&e.as_ptr())),
            "no copies"
        );
        assert!(
            table_entries(&table[..table.len() - 1]).is_err(),
            "a cut table is refused"
        );
    }

    /// An endless stream: frames that each declare `len` bytes.
    struct Endless {
        len: u32,
        read: usize,
    }

    impl Read for Endless {
        fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
            let frame = 4 + self.len as usize;
            for (i, b) in buf.iter_mut().enumerate() {
                let at = (self.read + i) % frame;
                *b = if at < 4 { self.len.to_le_bytes()[at] } else { 0xa5 };
            }
            self.read += buf.len();
            Ok(buf.len())
        }
    }

    #[test]
    fn a_stream_that_never_stops_is_cut_at_the_backlog() {
        for (len, limit) in [
            (100, MAX_UNAUTHENTICATED_FRAME),
            (4000, MAX_FRAME),
            (300, MAX_UNAUTHENTICATED_FRAME),
        ] {
            let mut frames = FrameBuf::default();
            let mut src = Endless { len, read: 0 };
            let e = frames.fill_from(&mut src, limit).unwrap_err();
            assert_eq!(e.kind(), io::ErrorKind::InvalidData, "{e}");
            assert!(
                src.read <= BACKLOG_FRAMES * (4 + limit) + 8192,
                "read {} bytes before stopping (limit {limit})",
                src.read
            );
        }
    }

    #[test]
    fn frames_within_the_backlog_all_arrive() {
        let msg = Msg::Challenge { nonce: [3; 32] };
        let frame = encode(&msg);
        let ahead = (BACKLOG_FRAMES * (4 + MAX_UNAUTHENTICATED_FRAME)) / frame.len();
        let stream: Vec<u8> = frame.iter().copied().cycle().take(ahead * frame.len()).collect();
        let mut frames = FrameBuf::default();
        assert!(frames.fill_from(&mut &stream[..], MAX_UNAUTHENTICATED_FRAME).is_ok());
        let mut got = 0;
        while let Ok(Some(m)) = frames.next_msg(MAX_UNAUTHENTICATED_FRAME) {
            assert_eq!(m, msg);
            got += 1;
        }
        assert_eq!(got, ahead);
    }

    #[test]
    fn every_message_round_trips_through_a_framebuf() {
        let msgs = vec![
            Msg::Challenge { nonce: [7; 32] },
            Msg::Response {
                nonce: [1; 32],
                tag: [2; 32],
            },
            Msg::Confirm { tag: [3; 32] },
            Msg::Register {
                rank: 3,
                size: 8,
                card: vec![4; 90],
                host: "n1".into(),
                pid: 42,
            },
            Msg::Cards {
                table: encode_table(&[vec![1, 2], vec![3; 300]]),
                publish: Some("/dev/shm/x".into()),
            },
            Msg::CardsPublished,
            Msg::CardsAt {
                path: "/dev/shm/x".into(),
            },
            Msg::NeedCards,
            Msg::Hello { rank: 2 },
            Msg::Finalized {
                rank: 1,
                at: "prog.rs:3:5".into(),
                reached: vec![(0, 9 << 24 | 2), (3, 2 << 24)],
                races: 2,
            },
            Msg::Goodbye,
            Msg::Abort { reason: "bye".into() },
        ];
        let mut wire = Vec::new();
        for m in &msgs {
            wire.extend_from_slice(&encode(m));
        }
        let mut buf = FrameBuf::default();
        // Feed the stream one byte at a time, as a slow socket would.
        let mut got = Vec::new();
        for byte in wire {
            buf.inbox.push(byte);
            while let Some(m) = buf.next_msg(MAX_FRAME).unwrap() {
                got.push(m);
            }
        }
        assert_eq!(got, msgs);
    }

    #[test]
    fn oversized_and_foreign_frames_are_rejected() {
        let mut buf = FrameBuf::default();
        buf.inbox.extend_from_slice(&encode(&Msg::Register {
            rank: 0,
            size: 1,
            card: vec![0; 1000],
            host: String::new(),
            pid: 0,
        }));
        assert!(matches!(
            buf.next_msg(MAX_UNAUTHENTICATED_FRAME),
            Err(DecodeError::TooLarge { .. })
        ));

        let mut body = postcard::to_stdvec(&(PROTOCOL_VERSION + 1)).unwrap();
        body.push(0);
        assert_eq!(
            decode(&body),
            Err(DecodeError::Version {
                got: PROTOCOL_VERSION + 1
            })
        );
        assert!(matches!(
            decode(&[PROTOCOL_VERSION as u8, 0xff, 0xff]),
            Err(DecodeError::Malformed(_))
        ));
    }

    #[test]
    fn blocking_helpers_match_the_framebuf() {
        let mut wire = Vec::new();
        send_blocking(&mut wire, &Msg::Hello { rank: 9 }).unwrap();
        assert_eq!(
            recv_blocking(&mut wire.as_slice(), MAX_FRAME).unwrap(),
            Msg::Hello { rank: 9 }
        );
        assert!(recv_blocking(&mut &wire[..3], MAX_FRAME).is_err());
    }
}
