//! The ring all-gather, one non-blocking mio event loop per rank.
//!
//! Rank `r` connects to its right neighbour `r+1` and accepts one
//! authenticated link from its left neighbour `r-1`. It sends its own card
//! right, and forwards every card that arrives from the left unless the right
//! neighbour is that card's origin. After N−1 steps every rank holds N cards.
//! Connections that fail the secret handshake are dropped and never trusted.

use crate::error::{Error, Result};
use crate::protocol::auth::{Acceptor, Connector};
use crate::protocol::wire::{FrameBuf, Msg, MAX_FRAME, MAX_UNAUTHENTICATED_FRAME};
use mio::net::{TcpListener, TcpStream};
use mio::{Events, Interest, Poll, Token};
use std::io;
use std::net::SocketAddr;
use std::time::{Duration, Instant};

const LISTENER: Token = Token(0);
const RIGHT: Token = Token(1);
/// Inbound connections get tokens from here up, in accept order.
const FIRST_INBOUND: usize = 2;

pub struct RingSpec<'a> {
    pub rank: usize,
    pub size: usize,
    pub secret: &'a [u8],
    pub right: SocketAddr,
    pub timeout: Duration,
}

enum RightState {
    AwaitChallenge,
    AwaitConfirm(Connector),
    Ready,
}

enum InboundState {
    AwaitResponse(Acceptor),
    AwaitHello,
    Left,
}

struct Link<S> {
    stream: TcpStream,
    buf: FrameBuf,
    state: S,
}

pub fn allgather(spec: &RingSpec, listener: std::net::TcpListener, own: Vec<u8>) -> Result<Vec<Vec<u8>>> {
    let io_err = |stage: &'static str| {
        move |source: io::Error| Error::BootstrapLauncher {
            rank: spec.rank,
            addr: spec.right.to_string(),
            stage,
            source,
        }
    };
    let left_rank = (spec.rank + spec.size - 1) % spec.size;
    let right_rank = (spec.rank + 1) % spec.size;

    let mut poll = Poll::new().map_err(io_err("ring setup"))?;
    listener.set_nonblocking(true).map_err(io_err("ring setup"))?;
    let mut listener = TcpListener::from_std(listener);
    poll.registry()
        .register(&mut listener, LISTENER, Interest::READABLE)
        .map_err(io_err("ring setup"))?;
    let mut right = Link {
        stream: TcpStream::connect(spec.right).map_err(io_err("connect to the right neighbour"))?,
        buf: FrameBuf::default(),
        state: RightState::AwaitChallenge,
    };
    poll.registry()
        .register(&mut right.stream, RIGHT, Interest::READABLE | Interest::WRITABLE)
        .map_err(io_err("ring setup"))?;
    let mut inbound: Vec<Option<Link<InboundState>>> = Vec::new();

    let mut cards: Vec<Option<Vec<u8>>> = vec![None; spec.size];
    cards[spec.rank] = Some(own);
    let mut received = 0;
    // Origins of cards to pass on, held until the right link is authenticated.
    let mut to_forward: Vec<usize> = Vec::new();
    let deadline = Instant::now() + spec.timeout;
    let mut events = Events::with_capacity(64);

    loop {
        if matches!(right.state, RightState::Ready) {
            for origin in to_forward.drain(..) {
                let blob = cards[origin].clone().expect("forwarded cards are stored");
                right.buf.push(&Msg::Card {
                    origin: origin as u32,
                    blob,
                });
            }
        }
        let right_flushed = right
            .buf
            .flush_to(&mut right.stream)
            .map_err(io_err("send to the right neighbour"))?;
        if received == spec.size - 1 && right_flushed && matches!(right.state, RightState::Ready) {
            return Ok(cards.into_iter().map(|c| c.expect("every card arrived")).collect());
        }
        let now = Instant::now();
        if now >= deadline {
            let missing = (0..spec.size).filter(|&r| cards[r].is_none()).collect();
            return Err(Error::BootstrapTimeout {
                rank: spec.rank,
                stage: "ring all-gather of transport cards",
                waited: spec.timeout,
                missing,
            });
        }
        poll.poll(&mut events, Some(deadline - now))
            .or_else(|e| match e.kind() {
                io::ErrorKind::Interrupted => Ok(()),
                _ => Err(io_err("ring poll")(e)),
            })?;

        for event in events.iter() {
            match event.token() {
                LISTENER => loop {
                    match listener.accept() {
                        Ok((mut stream, _)) => {
                            let token = Token(FIRST_INBOUND + inbound.len());
                            poll.registry()
                                .register(&mut stream, token, Interest::READABLE | Interest::WRITABLE)
                                .map_err(io_err("ring accept"))?;
                            let (acceptor, buf) = Acceptor::start_buffered();
                            inbound.push(Some(Link {
                                stream,
                                buf,
                                state: InboundState::AwaitResponse(acceptor),
                            }));
                        }
                        Err(e) if e.kind() == io::ErrorKind::WouldBlock => break,
                        Err(e) => return Err(io_err("ring accept")(e)),
                    }
                },
                RIGHT => {
                    if !right
                        .buf
                        .fill_from(&mut right.stream)
                        .map_err(io_err("read from the right neighbour"))?
                    {
                        if !matches!(right.state, RightState::Ready) {
                            return Err(peer_gone(spec, right_rank, "during the handshake"));
                        }
                        continue;
                    }
                    while let Some(msg) = next(spec, &mut right.buf, right_rank, MAX_UNAUTHENTICATED_FRAME)? {
                        right.state = match (std::mem::replace(&mut right.state, RightState::Ready), msg) {
                            (RightState::AwaitChallenge, challenge) => {
                                let (connector, response) = Connector::respond(spec.secret, &challenge)
                                    .map_err(|e| auth(spec, right_rank, e.describe()))?;
                                right.buf.push(&response);
                                RightState::AwaitConfirm(connector)
                            }
                            (RightState::AwaitConfirm(connector), confirm) => {
                                connector
                                    .finish(spec.secret, &confirm)
                                    .map_err(|e| auth(spec, right_rank, e.describe()))?;
                                right.buf.push(&Msg::Hello { rank: spec.rank as u32 });
                                let own = cards[spec.rank].clone().expect("own card");
                                right.buf.push(&Msg::Card {
                                    origin: spec.rank as u32,
                                    blob: own,
                                });
                                RightState::Ready
                            }
                            (RightState::Ready, other) => {
                                return Err(protocol(spec, right_rank, format!("unexpected {}", other.kind())))
                            }
                        };
                    }
                }
                Token(t) => {
                    let index = t - FIRST_INBOUND;
                    let Some(link) = inbound.get_mut(index).and_then(Option::as_mut) else {
                        continue;
                    };
                    match serve_inbound(
                        spec,
                        link,
                        left_rank,
                        right_rank,
                        &mut cards,
                        &mut received,
                        &mut to_forward,
                    ) {
                        Ok(true) => {}
                        Ok(false) => {
                            if let Some(mut dropped) = inbound[index].take() {
                                let _ = poll.registry().deregister(&mut dropped.stream);
                            }
                        }
                        Err(e) => return Err(e),
                    }
                }
            }
        }
    }
}

/// Handles traffic on one inbound link. `Ok(false)` means "drop this stranger".
fn serve_inbound(
    spec: &RingSpec,
    link: &mut Link<InboundState>,
    left_rank: usize,
    right_rank: usize,
    cards: &mut [Option<Vec<u8>>],
    received: &mut usize,
    to_forward: &mut Vec<usize>,
) -> Result<bool> {
    if link.buf.flush_to(&mut link.stream).is_err() {
        return Ok(matches!(link.state, InboundState::Left));
    }
    let open = link.buf.fill_from(&mut link.stream).unwrap_or(false);
    loop {
        let limit = match link.state {
            InboundState::Left => MAX_FRAME,
            _ => MAX_UNAUTHENTICATED_FRAME,
        };
        let msg = match link.buf.next_msg(limit) {
            Ok(Some(msg)) => msg,
            Ok(None) => break,
            Err(_) if !matches!(link.state, InboundState::Left) => return Ok(false),
            Err(e) => return Err(protocol(spec, left_rank, e.to_string())),
        };
        match (&link.state, msg) {
            (InboundState::AwaitResponse(acceptor), response) => match acceptor.finish(spec.secret, &response) {
                Ok(confirm) => {
                    link.buf.push(&confirm);
                    let _ = link.buf.flush_to(&mut link.stream);
                    link.state = InboundState::AwaitHello;
                }
                // A stranger: drop it silently and keep listening.
                Err(_) => return Ok(false),
            },
            (InboundState::AwaitHello, Msg::Hello { rank }) if rank as usize == left_rank => {
                link.state = InboundState::Left;
            }
            (InboundState::AwaitHello, other) => {
                return Err(protocol(
                    spec,
                    left_rank,
                    format!("expected Hello from rank {left_rank}, got {}", other.kind()),
                ))
            }
            (InboundState::Left, Msg::Card { origin, blob }) => {
                let origin = origin as usize;
                if origin >= spec.size || origin == spec.rank || cards[origin].is_some() {
                    return Err(protocol(
                        spec,
                        left_rank,
                        format!("duplicate or invalid card origin {origin}"),
                    ));
                }
                if origin != right_rank {
                    to_forward.push(origin);
                }
                cards[origin] = Some(blob);
                *received += 1;
            }
            (InboundState::Left, other) => {
                return Err(protocol(spec, left_rank, format!("unexpected {}", other.kind())))
            }
        }
    }
    if !open && !matches!(link.state, InboundState::Left) {
        return Ok(false);
    }
    if !open && *received < spec.size - 1 {
        return Err(peer_gone(spec, left_rank, "before sending every card"));
    }
    Ok(true)
}

fn next(spec: &RingSpec, buf: &mut FrameBuf, peer: usize, limit: usize) -> Result<Option<Msg>> {
    buf.next_msg(limit).map_err(|e| protocol(spec, peer, e.to_string()))
}

fn auth(spec: &RingSpec, peer: usize, detail: &'static str) -> Error {
    Error::BootstrapAuth {
        rank: spec.rank,
        peer: format!("rank {peer}"),
        detail,
    }
}

fn protocol(spec: &RingSpec, peer: usize, detail: String) -> Error {
    Error::BootstrapProtocol {
        rank: spec.rank,
        peer: format!("rank {peer}"),
        detail,
    }
}

fn peer_gone(spec: &RingSpec, peer: usize, when: &str) -> Error {
    protocol(
        spec,
        peer,
        format!("closed the connection {when} (did rank {peer} exit or crash?)"),
    )
}
