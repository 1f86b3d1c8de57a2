//! The launcher's bootstrap service: one mio event loop on an ephemeral TCP
//! port. Ranks connect, prove they know the job secret, and register their
//! transport card; once all have, the cards go out as one table
//! ([`CardExchange`]). The links then stay open to carry `Finalized`.
//!
//! The farewell is a barrier: `Goodbye` goes to every rank once all have
//! said `Finalized`. A rank has completed its own operations before it
//! says so, but its peers may still be completing theirs on it (over
//! libfabric, a write's completion waits for the target's provider to
//! acknowledge it); no rank may close its endpoint, by exiting, before
//! every rank is past that point.
//!
//! The clock for "every rank arrives" starts when the first rank registers,
//! so a program may work for a while before calling `init`.

use super::table::CardExchange;
use super::JobEvent;
use crossbeam::channel::Sender;
use mio::net::{TcpListener, TcpStream};
use mio::{Events, Interest, Poll, Token};
use oneside::protocol::auth::Acceptor;
use oneside::protocol::listen;
use oneside::protocol::wire::{FrameBuf, Msg, MAX_FRAME, MAX_UNAUTHENTICATED_FRAME};
use std::io;
use std::net::SocketAddr;
use std::time::{Duration, Instant};

const LISTENER: Token = Token(usize::MAX);
/// The supervisor has a message for some ranks ([`Mailbox`]).
const MAIL: Token = Token(usize::MAX - 1);

/// The supervisor's way to a rank's bootstrap link: messages queued here
/// and the service's poll woken to send them.
#[derive(Clone)]
pub struct Mailbox {
    waker: std::sync::Arc<mio::Waker>,
    queue: Sender<(usize, Msg)>,
}

impl Mailbox {
    /// Sends `msg` to `rank` (dropped if the rank has no link).
    pub fn send(&self, rank: usize, msg: Msg) {
        if self.queue.send((rank, msg)).is_ok() {
            let _ = self.waker.wake();
        }
    }
}

enum State {
    AwaitResponse(Acceptor),
    AwaitRegister,
    Registered(usize),
}

impl State {
    /// Whether the peer has proved it knows the job's secret.
    fn authenticated(&self) -> bool {
        matches!(self, State::Registered(_) | State::AwaitRegister)
    }

    /// The largest frame this peer may send now.
    fn limit(&self) -> usize {
        match self.authenticated() {
            true => MAX_FRAME,
            false => MAX_UNAUTHENTICATED_FRAME,
        }
    }
}

struct Conn {
    stream: TcpStream,
    buf: FrameBuf,
    state: State,
}

pub struct BootstrapServer {
    poll: Poll,
    listener: TcpListener,
    addr: SocketAddr,
    mail: crossbeam::channel::Receiver<(usize, Msg)>,
    mailbox: Mailbox,
}

impl BootstrapServer {
    /// Binds the service on an ephemeral port of `ip`.
    pub fn bind(ip: std::net::IpAddr) -> io::Result<BootstrapServer> {
        let poll = Poll::new()?;
        let mut listener = listen::bind_wide(SocketAddr::new(ip, 0))?;
        poll.registry().register(&mut listener, LISTENER, Interest::READABLE)?;
        let addr = listener.local_addr()?;
        let waker = std::sync::Arc::new(mio::Waker::new(poll.registry(), MAIL)?);
        let (queue, mail) = crossbeam::channel::unbounded();
        Ok(BootstrapServer {
            poll,
            listener,
            addr,
            mail,
            mailbox: Mailbox { waker, queue },
        })
    }

    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// How the supervisor sends messages to ranks through this service.
    pub fn mailbox(&self) -> Mailbox {
        self.mailbox.clone()
    }

    /// Serves the job until the process exits, reporting to `events`.
    pub fn serve(
        mut self,
        mut table: CardExchange,
        secret: Vec<u8>,
        stage_timeout: Duration,
        events: Sender<JobEvent>,
    ) {
        let size = table.size();
        let mut conns: Vec<Option<Conn>> = Vec::new();
        let mut rank_conn: Vec<usize> = vec![usize::MAX; size];
        let mut deadline: Option<Instant> = None;
        let mut farewells = Farewells::new(size);
        let mut all_finalized = false;
        let mut poll_events = Events::with_capacity(128);

        loop {
            let wait = deadline
                .filter(|_| !table.sent())
                .map(|d| d.saturating_duration_since(Instant::now()));
            if wait == Some(Duration::ZERO) {
                let missing = table.missing();
                let _ = events.send(JobEvent::BootstrapTimeout {
                    missing,
                    waited: stage_timeout,
                });
                deadline = None;
            }
            if let Err(e) = self.poll.poll(&mut poll_events, wait) {
                if e.kind() == io::ErrorKind::Interrupted {
                    continue;
                }
                let _ = events.send(JobEvent::BootstrapFailed {
                    detail: format!("poll: {e}"),
                });
                return;
            }
            for event in poll_events.iter() {
                if event.token() == LISTENER {
                    let registry = self.poll.registry();
                    listen::accept_queued(&self.listener, |mut stream| {
                        let token = Token(conns.len());
                        // A rank whose host goes silent is heard of within
                        // liveness::SILENCE, not TCP's quarter of an hour.
                        let watched = oneside::protocol::liveness::watch(&stream);
                        if watched.is_ok() && registry.register(&mut stream, token, Interest::READABLE).is_ok() {
                            let (acceptor, buf) = Acceptor::start_buffered();
                            conns.push(Some(Conn {
                                stream,
                                buf,
                                state: State::AwaitResponse(acceptor),
                            }));
                        }
                    });
                    continue;
                }
                if event.token() == MAIL {
                    for (rank, msg) in self.mail.try_iter() {
                        if let Some(conn) = rank_conn
                            .get(rank)
                            .and_then(|&i| conns.get_mut(i))
                            .and_then(Option::as_mut)
                        {
                            conn.buf.push(&msg);
                        }
                    }
                    continue;
                }
                let index = event.token().0;
                let Some(conn) = conns.get_mut(index).and_then(Option::as_mut) else {
                    continue;
                };
                match serve_conn(conn, &mut table, &secret, &events) {
                    Ok(Served::Registered(rank)) => {
                        rank_conn[rank] = index;
                        deadline.get_or_insert_with(|| Instant::now() + stage_timeout);
                    }
                    Ok(Served::Finalized(rank)) => all_finalized |= farewells.arrived(rank),
                    Ok(Served::Nothing) => {}
                    Err(Drop::Stranger) => {
                        // Never trusted: dropped without a word.
                        if let Some(mut c) = conns[index].take() {
                            let _ = self.poll.registry().deregister(&mut c.stream);
                        }
                    }
                    Err(Drop::Fatal(detail)) => {
                        let _ = events.send(JobEvent::BootstrapFailed { detail });
                        return;
                    }
                }
            }
            table.send_when_complete();
            if std::mem::take(&mut all_finalized) {
                for &index in &rank_conn {
                    if let Some(conn) = conns.get_mut(index).and_then(Option::as_mut) {
                        conn.buf.push(&Msg::Goodbye);
                    }
                }
            }
            for (rank, msg) in table.take_outbox() {
                if let Some(conn) = conns[rank_conn[rank]].as_mut() {
                    conn.buf.push(&msg);
                }
            }
            for conn in conns.iter_mut().flatten() {
                // A write error means the rank is gone; its exit is reported by its waiter.
                let _ = conn.buf.flush_to(&mut conn.stream);
            }
        }
    }
}

enum Drop {
    Stranger,
    Fatal(String),
}

/// What one readable connection brought that the loop must act on.
enum Served {
    Nothing,
    /// The rank just registered.
    Registered(usize),
    /// The rank finalized, and waits for its `Goodbye`.
    Finalized(usize),
}

/// The farewell barrier: which ranks said `Finalized`. When the last one
/// has, every rank is answered at once.
struct Farewells {
    seen: Vec<bool>,
    /// Ranks not yet seen.
    missing: usize,
}

impl Farewells {
    fn new(size: usize) -> Farewells {
        Farewells {
            seen: vec![false; size],
            missing: size,
        }
    }

    /// Records `rank`'s farewell; true when it was the last one missing
    /// (a repeated or unknown rank changes nothing).
    fn arrived(&mut self, rank: usize) -> bool {
        match self.seen.get_mut(rank).filter(|seen| !**seen) {
            Some(seen) => {
                *seen = true;
                self.missing -= 1;
                self.missing == 0
            }
            None => false,
        }
    }
}

/// Handles one readable connection.
fn serve_conn(
    conn: &mut Conn,
    table: &mut CardExchange,
    secret: &[u8],
    events: &Sender<JobEvent>,
) -> Result<Served, Drop> {
    let _ = conn.buf.flush_to(&mut conn.stream);
    let open = match conn.buf.fill_from(&mut conn.stream, conn.state.limit()) {
        Ok(open) => open,
        // The rank's host has been silent for liveness::SILENCE.
        Err(e) if e.kind() == std::io::ErrorKind::TimedOut => {
            if let State::Registered(rank) = conn.state {
                let _ = events.send(JobEvent::Silent { rank });
            }
            false
        }
        // More than a peer may send ahead (wire::BACKLOG_FRAMES).
        Err(e) if e.kind() == std::io::ErrorKind::InvalidData => {
            return Err(match conn.state.authenticated() {
                true => Drop::Fatal(format!("a rank sent more than rlaunch reads ahead: {e}")),
                false => Drop::Stranger,
            })
        }
        Err(_) => false,
    };
    let mut served = Served::Nothing;
    loop {
        let authenticated = conn.state.authenticated();
        let msg = match conn.buf.next_msg(conn.state.limit()) {
            Ok(Some(msg)) => msg,
            Ok(None) => break,
            Err(e) if authenticated => return Err(Drop::Fatal(format!("a rank sent a bad frame: {e}"))),
            Err(_) => return Err(Drop::Stranger),
        };
        match (&conn.state, msg) {
            (State::AwaitResponse(acceptor), response) => {
                let confirm = acceptor.finish(secret, &response).map_err(|_| Drop::Stranger)?;
                conn.buf.push(&confirm);
                conn.state = State::AwaitRegister;
            }
            (
                State::AwaitRegister,
                Msg::Register {
                    rank,
                    size,
                    card,
                    host,
                    pid,
                },
            ) => {
                let rank = rank as usize;
                table
                    .register(rank, size as usize, card, host)
                    .map_err(|detail| Drop::Fatal(format!("rank {rank} (pid {pid}) {detail}")))?;
                conn.state = State::Registered(rank);
                served = Served::Registered(rank);
                let _ = events.send(JobEvent::Registered { rank });
            }
            (State::Registered(rank), Msg::CardsPublished) => table.published(*rank),
            (State::Registered(rank), Msg::NeedCards) => table.needs_cards(*rank),
            (
                State::Registered(rank),
                Msg::Finalized {
                    rank: said,
                    at,
                    reached,
                    races,
                },
            ) if said as usize == *rank => {
                // Report first, then say goodbye (when every rank has
                // finalized): the rank exits only after the supervisor has
                // seen this event (one channel keeps the order).
                let _ = events.send(JobEvent::Finalized {
                    rank: *rank,
                    at,
                    reached,
                    races,
                });
                served = Served::Finalized(*rank);
            }
            (State::Registered(rank), Msg::Stalled(stall)) if stall.rank as usize == *rank => {
                let _ = events.send(JobEvent::Stalled(stall));
            }
            (State::Registered(rank), Msg::Crashed { rank: said, at, .. }) if said as usize == *rank => {
                let _ = events.send(JobEvent::Crashed { rank: *rank, at });
            }
            (State::Registered(rank), Msg::Moving { rank: said }) if said as usize == *rank => {
                let _ = events.send(JobEvent::Moving { rank: *rank });
            }
            (State::Registered(rank), Msg::GlobalExit { rank: said, status }) if said as usize == *rank => {
                let _ = events.send(JobEvent::GlobalExit { rank: *rank, status });
                conn.buf.push(&Msg::Goodbye);
            }
            (_, other) => return Err(Drop::Fatal(format!("unexpected bootstrap message {}", other.kind()))),
        }
    }
    let _ = conn.buf.flush_to(&mut conn.stream);
    if !open && !matches!(conn.state, State::Registered(_)) {
        return Err(Drop::Stranger);
    }
    Ok(served)
}

#[cfg(test)]
mod tests {
    use super::Farewells;

    #[test]
    fn goodbyes_wait_for_the_last_rank() {
        let mut farewells = Farewells::new(3);
        assert!(!farewells.arrived(2));
        assert!(!farewells.arrived(0));
        assert!(!farewells.arrived(0));
        assert!(farewells.arrived(1));
        assert!(!farewells.arrived(1));
    }

    #[test]
    fn an_unknown_rank_changes_nothing() {
        let mut farewells = Farewells::new(1);
        assert!(!farewells.arrived(5));
        assert!(farewells.arrived(0));
    }
}
