//! The progress engine: serves peers' TCP requests against this rank's
//! memory, so a rank busy computing still answers puts and gets.
//!
//! Two kinds of thread serve the same connection table:
//!
//! * the **progress thread**, one per rank, sleeps in a mio loop and serves
//!   the connections that have news;
//! * a rank's **own thread while it waits** (every local wait holds a
//!   [`Driving`] guard and calls [`Driver::drive`] between polls):
//!   a rank waiting for a peer's flag reads the peer's request off the
//!   socket itself, as an MPI rank polls its own sockets. While any thread
//!   drives, the connection set is out of the progress thread's loop, so
//!   arrivals do not wake it: on a host whose cores are all busy that
//!   wake-up, and the progress thread's turn on a core, were most of a TCP
//!   hop's time (a 4-rank broadcast over TCP took 2.7x as long);
//! * a rank's **own thread in a loop of tests** (`shmem_test`, a program's
//!   own `World::progress`): each test that finds nothing drives once
//!   ([`Driver::drive_polled`]); one that comes within [`HAND_BACK`] of the
//!   last counts as a driver that just stopped, so while tests follow each
//!   other closely the loop serves arrivals itself, as a wait does, and the
//!   progress thread sleeps. A test between long stretches of computing
//!   leaves the connections with the progress thread.
//!
//! The table sits behind a mutex. A driving thread only `try_lock`s it,
//! so it never waits for the progress thread, and whoever holds the lock
//! serves a connection until its socket would block (`serve::serve`), so
//! neither leaves the other a request half read. A driving thread stops
//! driving when its wait turns into naps (see `backoff`), and the guard
//! hands the connections back to the progress thread when the wait ends,
//! by success, error or panic.

use super::ready::{ReadySet, BATCH};
use super::serve::{serve, Conn, Verdict};
use crate::protocol::listen;
use crate::segment::RawSegment;
use crate::transport::fault::Fault;
use mio::net::TcpListener;
use mio::unix::SourceFd;
use mio::{Events, Interest, Poll, Registry, Token, Waker};
use std::io;
use std::net::{IpAddr, SocketAddr};
use std::os::fd::{AsRawFd, RawFd};
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

const LISTENER: Token = Token(usize::MAX);
const WAKER: Token = Token(usize::MAX - 1);
const CONNECTIONS: Token = Token(usize::MAX - 2);

/// How long after the last waiting thread stopped driving the progress
/// thread takes the connections back, at the soonest: a request to a rank
/// that left a wait to compute waits this long, or up to [`LOOK_MAX`]
/// after a long stretch of waits.
pub const HAND_BACK: Duration = Duration::from_micros(200);

/// The longest the progress thread sleeps between two looks for idle
/// drivers while threads keep driving: it looks [`HAND_BACK`] after it
/// gave the connections away, then twice as late each time it finds a
/// driver still at work, up to this. Looking every 200 µs regardless woke
/// every rank's progress thread 5000 times a second through every
/// collective: across 2 namespace hosts x 2 ranks on 2 cores, all over
/// TCP, this took 0.98x, 0.91x and 0.95x as long as looking every 200 µs
/// (three runs, median of 41 figures each, 3-5 alternating rounds), and
/// looking every 5 ms 0.82x and 0.90x. A rank that leaves a long stretch
/// of waits to compute has its requests served at most this late at first.
const LOOK_MAX: Duration = Duration::from_millis(2);

/// The longest a wait sleeps for news before it checks its condition again.
const NEWS_TIMEOUT: Duration = Duration::from_millis(1);

/// A running progress engine. Dropping it stops and joins the thread.
pub struct ProgressEngine {
    addr: SocketAddr,
    stop: Arc<AtomicBool>,
    driver: Driver,
    thread: Option<JoinHandle<()>>,
}

/// What the progress thread and waiting threads share.
struct Table {
    conns: Mutex<Conns>,
    ready: ReadySet,
    /// The progress thread's registry, to take the connection set out of
    /// its loop and put it back.
    registry: Registry,
    waker: Waker,
    /// Whether the set is in the progress thread's loop; changed only
    /// while holding `arming`.
    armed: AtomicBool,
    arming: Mutex<()>,
    /// How many threads drive the engine now.
    drivers: AtomicUsize,
    /// When the last driving thread stopped, in ns since `epoch`.
    last_drive: AtomicU64,
    /// When the last test drove ([`Driver::drive_polled`]), in ns since
    /// `epoch`; 0 before the first.
    last_test: AtomicU64,
    epoch: Instant,
}

/// The connections and what serving them needs.
struct Conns {
    rank: usize,
    secret: Vec<u8>,
    memory: RawSegment,
    open: Vec<Option<Conn>>,
}

impl ProgressEngine {
    /// Listens on an ephemeral port of `ip` and serves `memory` for rank
    /// `rank`; `waits` is how the rank's waits that drive it pass the time.
    pub fn start(
        rank: usize,
        ip: IpAddr,
        secret: Vec<u8>,
        memory: RawSegment,
        waits: WaitPolicy,
    ) -> Result<ProgressEngine, Fault> {
        Self::listen(rank, ip, secret, memory, waits).map_err(|e| Fault::setup_io("start the TCP progress engine", e))
    }

    fn listen(
        rank: usize,
        ip: IpAddr,
        secret: Vec<u8>,
        memory: RawSegment,
        waits: WaitPolicy,
    ) -> io::Result<ProgressEngine> {
        let poll = Poll::new()?;
        let mut listener = listen::bind_wide(SocketAddr::new(ip, 0))?;
        poll.registry().register(&mut listener, LISTENER, Interest::READABLE)?;
        let addr = listener.local_addr()?;
        let stop = Arc::new(AtomicBool::new(false));
        let table = Arc::new(Table {
            conns: Mutex::new(Conns {
                rank,
                secret,
                memory,
                open: Vec::new(),
            }),
            ready: ReadySet::new()?,
            registry: poll.registry().try_clone()?,
            waker: Waker::new(poll.registry(), WAKER)?,
            armed: AtomicBool::new(false),
            arming: Mutex::new(()),
            drivers: AtomicUsize::new(0),
            last_drive: AtomicU64::new(0),
            last_test: AtomicU64::new(0),
            epoch: Instant::now(),
        });
        table.arm()?;
        let (stop_flag, shared) = (Arc::clone(&stop), Arc::clone(&table));
        let thread = crate::service::spawn(format!("oneside-progress-{rank}"), rank, "TCP progress", move || {
            crate::service::panic_if_asked("TCP progress");
            run(poll, listener, &shared, &stop_flag)
        })?;
        Ok(ProgressEngine {
            addr,
            stop,
            driver: Driver { table, waits },
            thread: Some(thread),
        })
    }

    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// How the rank's threads drive this engine while they wait: every
    /// local wait, and every TCP link's wait for an answer.
    pub fn driver(&self) -> &Driver {
        &self.driver
    }
}

/// A handle on an engine for the rank's waiting threads: a local wait or a
/// TCP link's wait for an answer holds a [`Driving`] guard and calls
/// [`drive`](Self::drive) between its polls.
#[derive(Clone)]
pub struct Driver {
    table: Arc<Table>,
    waits: WaitPolicy,
}

/// How a rank's waits that drive its engine pass the time, decided at
/// init from the rank's share of the cores (`backoff`).
#[derive(Clone, Copy, Debug)]
pub struct WaitPolicy {
    /// Spin before yielding: every local rank and its engine have a core.
    pub spin: bool,
    /// Keep polling however long the wait, never handing the connections
    /// back to the progress thread to sleep: the rank has a core of its
    /// own, so a peer's request is served the moment it arrives, as an MPI
    /// rank polls its sockets in a wait. The progress thread still serves
    /// while the rank computes.
    pub keep_polling: bool,
}

impl Driver {
    /// Starts driving the engine from this thread for the length of a
    /// wait: arrivals stop waking the progress thread, and the waiting
    /// thread must call [`drive`](Self::drive) between its polls. The
    /// progress thread takes the connections back [`HAND_BACK`] (up to
    /// [`LOOK_MAX`]) after the last driver stopped, so waits in quick
    /// succession (a collective's rounds, a loop of collectives) cost no
    /// system call here.
    #[inline]
    pub fn start_driving(&self) -> Driving<'_> {
        let table = &*self.table;
        table.drivers.fetch_add(1, Ordering::SeqCst);
        if table.armed.load(Ordering::SeqCst) {
            table.disarm();
        }
        Driving { table }
    }

    /// Serves the connections that have news, unless another thread is
    /// serving already: one step of a wait. Costs one `epoll_wait` with a
    /// zero timeout when nothing has arrived.
    #[inline]
    pub fn drive(&self) {
        if let Ok(mut conns) = self.table.conns.try_lock() {
            conns.serve_ready(&self.table.ready);
        }
    }

    /// One step of a test, or of a program's own poll: drives once, as a
    /// wait's step does. A test within [`HAND_BACK`] of the previous one
    /// (a loop of tests) also counts as a driver that stopped just now, so
    /// the progress thread leaves the connections to the loop, which then
    /// serves what arrives itself instead of waking the progress thread
    /// for each arrival and contending with it (a peer's put+quiet took
    /// 1.48x as long against a test loop as against a wait). A test after
    /// a longer stretch of computing leaves them with the progress thread,
    /// which serves while the program computes. Costs a clock read; the
    /// second test of a loop also takes the connections out of the
    /// progress thread's loop.
    #[inline]
    pub fn drive_polled(&self) {
        let table = &*self.table;
        let now = table.now_ns();
        let previous = table.last_test.swap(now, Ordering::Relaxed);
        if previous != 0 && now.saturating_sub(previous) < HAND_BACK.as_nanos() as u64 {
            table.last_drive.store(now, Ordering::SeqCst);
            if table.armed.load(Ordering::SeqCst) {
                table.disarm();
            }
        }
        self.drive();
    }

    /// Whether the waits that drive may spin (every local rank and its
    /// engine have a core).
    pub fn spin(&self) -> bool {
        self.waits.spin
    }

    /// Whether the waits that drive keep polling, past where others nap, for as long as they
    /// last ([`WaitPolicy::keep_polling`]).
    pub fn keeps_polling(&self) -> bool {
        self.waits.keep_polling
    }

    /// The descriptor that becomes readable when a connection of the
    /// engine has news (for a caller's own `poll`).
    pub fn news_fd(&self) -> RawFd {
        self.table.ready.as_raw_fd()
    }

    /// Sleeps until a connection of the engine has news, or `socket` (a
    /// link waiting for an answer) has input, at most [`NEWS_TIMEOUT`]:
    /// how a wait for a peer behind TCP passes the time when it may not
    /// spin, instead of yielding its core in a loop.
    pub fn sleep_until_news(&self, socket: Option<RawFd>) {
        let watch = |fd| libc::pollfd {
            fd,
            events: libc::POLLIN,
            revents: 0,
        };
        let mut fds = [watch(self.table.ready.as_raw_fd()), watch(socket.unwrap_or(-1))];
        let ms = NEWS_TIMEOUT.as_millis() as i32;
        // SAFETY: `fds` holds two valid pollfd entries for the call's
        // duration (poll skips a negative descriptor); an error or a
        // timeout just ends the sleep.
        unsafe { libc::poll(fds.as_mut_ptr(), fds.len() as libc::nfds_t, ms) };
    }
}

/// A thread's turn at driving the engine (see [`Driver::start_driving`]).
pub struct Driving<'e> {
    table: &'e Table,
}

impl Drop for Driving<'_> {
    fn drop(&mut self) {
        let now = self.table.now_ns();
        self.table.last_drive.store(now, Ordering::SeqCst);
        self.table.drivers.fetch_sub(1, Ordering::SeqCst);
    }
}

impl Table {
    /// Now, in ns since `epoch` (the clock of `last_drive` and `last_test`).
    #[inline]
    fn now_ns(&self) -> u64 {
        self.epoch.elapsed().as_nanos() as u64
    }

    /// Puts the connection set into the progress thread's loop. A set
    /// that already has news wakes the thread at once (epoll checks
    /// readiness when a descriptor is added).
    fn arm(&self) -> io::Result<()> {
        let _arming = crate::sync::lock(&self.arming);
        if !self.armed.load(Ordering::SeqCst) {
            let fd = self.ready.as_raw_fd();
            self.registry
                .register(&mut SourceFd(&fd), CONNECTIONS, Interest::READABLE)?;
            self.armed.store(true, Ordering::SeqCst);
        }
        Ok(())
    }

    /// Takes the connection set out of the progress thread's loop, and
    /// wakes the thread, which may be asleep without a timeout, so that it
    /// starts looking for idle drivers.
    fn disarm(&self) {
        let _arming = crate::sync::lock(&self.arming);
        if self.armed.load(Ordering::SeqCst) {
            let fd = self.ready.as_raw_fd();
            let _ = self.registry.deregister(&mut SourceFd(&fd));
            self.armed.store(false, Ordering::SeqCst);
            let _ = self.waker.wake();
        }
    }

    /// How long the progress thread sleeps before it looks again: for
    /// ever while it has the connections, `look_after` while drivers may.
    fn nap(&self, look_after: Duration) -> Option<Duration> {
        (!self.armed.load(Ordering::SeqCst)).then_some(look_after)
    }

    /// Takes the connections back if no thread has driven for
    /// [`HAND_BACK`]; returns whether the progress thread has them.
    fn take_back_if_idle(&self) -> bool {
        if self.armed.load(Ordering::SeqCst) {
            return true;
        }
        if self.drivers.load(Ordering::SeqCst) > 0 {
            return false;
        }
        // A driver may stop between the two reads: its time is then later.
        let now = self.now_ns();
        let idle = now.saturating_sub(self.last_drive.load(Ordering::SeqCst));
        if idle < HAND_BACK.as_nanos() as u64 {
            return false;
        }
        if let Err(e) = self.arm() {
            let rank = lock(&self.conns).rank;
            eprintln!("oneside: rank {rank}: progress engine cannot watch its connections: {e}");
        }
        self.armed.load(Ordering::SeqCst)
    }
}

impl Drop for ProgressEngine {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Release);
        let _ = self.driver.table.waker.wake();
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

/// The progress thread's loop.
fn run(mut poll: Poll, listener: TcpListener, table: &Table, stop: &AtomicBool) {
    let mut events = Events::with_capacity(64);
    // How long to sleep before looking for idle drivers again (see LOOK_MAX).
    let mut look_after = HAND_BACK;
    while !stop.load(Ordering::Acquire) {
        if let Err(e) = poll.poll(&mut events, table.nap(look_after)) {
            if e.kind() == io::ErrorKind::Interrupted {
                continue;
            }
            let rank = lock(&table.conns).rank;
            eprintln!("oneside: rank {rank}: progress engine stopped: {e}");
            return;
        }
        if !events.is_empty() {
            let mut conns = lock(&table.conns);
            for event in events.iter() {
                match event.token() {
                    LISTENER => conns.accept_all(&listener, &table.ready),
                    CONNECTIONS => conns.serve_ready(&table.ready),
                    _ => {}
                }
            }
        }
        look_after = match table.take_back_if_idle() {
            true => HAND_BACK,
            false => (look_after * 2).min(LOOK_MAX),
        };
    }
}

/// Locks the table; a thread that panicked while serving left no
/// half-applied state that matters more than the job's own failure report.
fn lock(conns: &Mutex<Conns>) -> MutexGuard<'_, Conns> {
    crate::sync::lock(conns)
}

impl Conns {
    /// Accepts every queued connection and watches it for news.
    fn accept_all(&mut self, listener: &TcpListener, ready: &ReadySet) {
        listen::accept_queued(listener, |stream| {
            let index = self.open.len();
            let watched = stream
                .set_nodelay(true)
                .and_then(|()| crate::protocol::liveness::watch(&stream));
            if watched.is_ok() && ready.add(stream.as_raw_fd(), index).is_ok() {
                self.open.push(Some(Conn::accepted(stream)));
            }
        });
    }

    /// Serves every connection the set reports, until it reports none.
    fn serve_ready(&mut self, ready: &ReadySet) {
        let mut indices = [0; BATCH];
        loop {
            let taken = ready.take(&mut indices);
            for &index in taken {
                self.serve(index, ready);
            }
            if taken.len() < BATCH {
                return;
            }
        }
    }

    /// Serves connection `index` as far as its socket allows; closes it if
    /// it ended or misbehaved.
    fn serve(&mut self, index: usize, ready: &ReadySet) {
        let Some(conn) = self.open.get_mut(index).and_then(Option::as_mut) else {
            return;
        };
        if let Verdict::Close = serve(self.rank, &self.secret, self.memory, conn) {
            if let Some(closed) = self.open[index].take() {
                ready.remove(closed.stream.as_raw_fd());
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::segment::Segment;
    use std::net::Ipv4Addr;

    fn armed(engine: &ProgressEngine) -> bool {
        engine.driver.table.armed.load(Ordering::SeqCst)
    }

    #[test]
    fn a_loop_of_tests_keeps_the_connections_and_a_lone_test_leaves_them() {
        let (segment, _) = Segment::create(0, None, (1 << 16, 1 << 16), None).unwrap();
        let waits = WaitPolicy {
            spin: false,
            keep_polling: false,
        };
        let ip = IpAddr::V4(Ipv4Addr::LOCALHOST);
        let engine = ProgressEngine::start(0, ip, vec![7; 16], segment.raw(), waits).unwrap();
        let driver = engine.driver();
        assert!(armed(&engine), "a new engine's thread watches the connections");
        driver.drive_polled();
        assert!(armed(&engine), "a first test leaves them with the progress thread");
        // Tests in quick succession take them (two calls a few µs apart;
        // retried in case this thread lost its core between them).
        for _ in 0..100 {
            driver.drive_polled();
            driver.drive_polled();
            if !armed(&engine) {
                break;
            }
            std::thread::sleep(HAND_BACK * 2);
        }
        assert!(!armed(&engine), "a loop of tests drives the connections itself");
        // When the tests stop, the progress thread takes them back.
        let deadline = Instant::now() + Duration::from_secs(5);
        while !armed(&engine) && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(1));
        }
        assert!(armed(&engine), "the progress thread took the connections back");
        // A test after a pause longer than HAND_BACK leaves them there.
        std::thread::sleep(HAND_BACK * 5);
        driver.drive_polled();
        assert!(
            armed(&engine),
            "a lone test after computing leaves them with the progress thread"
        );
        drop(engine);
    }
}
