//! Threads of one PE in an OpenMP team: each keeps its own *view*, the
//! stamp of the last of its PE's synchronizations that happens before its
//! next access, so that a thread's load is not taken as ordered by a
//! barrier another thread of its PE called (RMARaceBench's hybrid cases).
//!
//! Outside a team every thread follows the PE's count (`race::STAMP`), as
//! a single thread does. A team's threads begin with the view of the
//! thread that forked it; a synchronization a thread makes raises its own
//! view; and the team's own orderings carry views between its threads:
//! each thread *publishes* its view into a *sync word* when it releases
//! (enters a barrier, leaves a critical section, unlocks, ends a task,
//! makes an atomic) and *acquires* the word's largest view when it comes
//! out of the other half. A word stands for what was synchronized on: the
//! team (barriers, taskwaits), or an address (a lock, a critical
//! section's name, an atomic's object), hashed into a few words. The
//! largest view published there, not the one the matching release gave,
//! so a view can only ever be larger than the program ordered: an order
//! is never missed, so a correct program gets no report; a race hidden by
//! timing can be. The join gives the forking thread the PE's count back.
//! Each section of a `sections` construct begins in the view the thread
//! had at the construct, as sections are unordered with each other.
//!
//! The C library's OpenMP entry points (`capi`'s `omp`, and `ompt` for
//! libomp), its POSIX threads' calls (`pthread`: a started thread is a
//! team of its own until it is joined) and its atomics call these; a
//! construct it does not model (a taskloop, a doacross
//! loop) sends every thread back to the PE's count until the team ends.
//! Only a program built by `oshcc --check-races` keeps views: in another
//! its atomics, unseen, may be what orders two threads.
//!
//! Views say what a thread's access comes after. What it comes before is
//! said by *publications*: each release on a sync word (and each fork or
//! task creation) takes the next number, the word keeps its largest, and
//! a thread *learns* a word's number when it acquires it; a PE-level
//! acquire (a wait, a lock, a fetching atomic, a get, a collective) takes
//! a number and learns it, as it takes the PE's next stamp. An access is
//! stamped with the count of publications when it was made
//! (`counted`): another thread that has learned of no larger number has
//! nothing of its thread's since, so its releases do not order it
//! (`reach`).

use super::{log, on};
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering::Relaxed};

/// Teams running in this PE.
static ACTIVE: AtomicUsize = AtomicUsize::new(0);
/// The sync words: the largest view published on each (0: the team's).
static WORDS: [AtomicU64; 256] = [const { AtomicU64::new(0) }; 256];
/// The largest publication number on each sync word (the count is
/// `log::PUBLICATIONS`).
static NUMBERS: [AtomicU64; 256] = [const { AtomicU64::new(0) }; 256];
/// The largest number a fork or a task creation took.
static FORKS: AtomicU64 = AtomicU64::new(0);

/// What a team's barriers, taskwaits and task ends synchronize on.
pub const TEAM: usize = 0;

/// The sync word of `key` (an address, or [`TEAM`]): its view and its
/// publication number.
fn word(key: usize) -> (&'static AtomicU64, &'static AtomicU64) {
    let i = match key {
        TEAM => 0,
        k => 1 + (k ^ (k >> 7) ^ (k >> 15)) % (WORDS.len() - 1),
    };
    (&WORDS[i], &NUMBERS[i])
}

/// Takes the next publication number.
fn next_publication() -> u64 {
    log::PUBLICATIONS.fetch_add(1, Relaxed) + 1
}

/// A PE-level acquire on the calling thread: it learns of everything
/// before it, as its view takes the PE's count.
pub(super) fn acquired_all() {
    if super::reach::recording() {
        super::log::learn(next_publication());
    }
}

/// The program was built by `oshcc --check-races` (its `__tsan_init`
/// ran): its atomics are seen, so threads may keep views. A program
/// built without it has atomics the checker cannot see, which may be the
/// only thing ordering two of its threads.
static INSTRUMENTED: AtomicBool = AtomicBool::new(false);

/// Says the program's code is instrumented (`__tsan_init`).
pub fn set_instrumented() {
    INSTRUMENTED.store(true, Relaxed);
}

/// Whether the race checker is asked for in this process
/// (`ONESIDE_CHECK_RACES`), before it starts: an OpenMP runtime's tools
/// interface is kept only then.
pub fn requested() -> bool {
    super::requested().is_some()
}

/// A construct the checker does not model ran: views are off until no
/// team runs.
static UNMODELED: AtomicBool = AtomicBool::new(false);

/// Whether a team runs, views and all: the atomics' filter.
#[inline(always)]
pub fn active() -> bool {
    ACTIVE.load(Relaxed) != 0
}

/// The calling thread's view (`u64::MAX` outside a team), for [`joined`].
pub fn view() -> u64 {
    log::view()
}

/// What [`forked`] and [`task_created`] give while the checker is off.
pub const OFF: u64 = log::FOLLOW;

/// A team is forked by the calling thread: the stamp its threads begin
/// with ([`OFF`] while the checker is off).
pub fn forked() -> u64 {
    let stamp = task_created();
    if stamp != OFF {
        ACTIVE.fetch_add(1, Relaxed);
        log::set_counting(!UNMODELED.load(Relaxed));
    }
    stamp
}

/// The team forked with [`forked`]'s `stamp` is joined: the forking
/// thread's view is what it was (`prev`) and all the team published.
pub fn joined(stamp: u64, prev: u64) {
    if !on() || stamp == OFF {
        return;
    }
    if prev != log::FOLLOW {
        log::set_view(prev.max(word(TEAM).0.load(Relaxed)));
    }
    log::learn(word(TEAM).1.load(Relaxed));
    if ACTIVE.fetch_sub(1, Relaxed) == 1 {
        all_over();
    }
}

/// The last team, or thread the program started, is over: every thread
/// follows the PE's count again, after all of it.
fn all_over() {
    UNMODELED.store(false, Relaxed);
    log::set_counting(false);
    super::nbi::team_ended();
    super::trail::team_ended();
}

/// The program starts a thread of its own (`pthread_create`): the stamp
/// the thread begins with ([`OFF`] while off). Like a fork it keeps
/// views on until the thread is joined, and the starting thread, if it
/// had none, takes a view of its own, as a forking thread does in its team.
pub fn spawned() -> u64 {
    let stamp = forked();
    if stamp != OFF && log::view() == log::FOLLOW {
        log::set_view(stamp);
    }
    stamp
}

/// A thread the program started is done: it publishes its view on its
/// word `key` (its `pthread_t`), for its joiner, and takes back `prev`.
pub fn ended(key: usize, prev: u64) {
    if on() {
        publish(key);
        log::set_view(prev);
    }
}

/// The calling thread joined the thread of word `key`, started at
/// `stamp`: it acquires what that thread published. After the last
/// such thread (and team), every thread follows the PE's count again.
pub fn reaped(key: usize, stamp: u64) {
    if !on() || stamp == OFF {
        return;
    }
    acquire(key);
    if ACTIVE.fetch_sub(1, Relaxed) == 1 {
        all_over();
        log::follow_all();
    }
}

/// A thread begins its part of the team forked at `stamp`: returns the
/// view it had, for [`left`].
pub fn entered(stamp: u64) -> u64 {
    if !on() || stamp == OFF {
        return log::FOLLOW;
    }
    let prev = log::view();
    if !UNMODELED.load(Relaxed) {
        log::set_view(stamp);
        log::set_section_base(stamp);
    }
    log::learn(FORKS.load(Relaxed));
    prev
}

/// The thread's part is done: publishes its view, takes back `prev`.
pub fn left(prev: u64) {
    if on() {
        publish(TEAM);
        log::set_view(prev);
    }
}

/// A `sections` construct begins on the calling thread: each section it
/// runs begins in its view of now.
pub fn sections_began() {
    if active() {
        log::set_section_base(log::view());
        // What came before the construct is before every section, on
        // whichever strand it runs (`reach`).
        log::learn(next_publication());
    }
}

/// The calling thread asks for its next section: what it did in the last
/// is published for the construct's end, and the next begins afresh.
pub fn next_section() {
    if active() {
        publish(TEAM);
        log::new_strand();
        let base = log::section_base();
        if log::view() != log::FOLLOW && base != log::FOLLOW && !UNMODELED.load(Relaxed) {
            log::set_view(base);
        }
    }
}

/// libgomp answered the calling thread's request for its next section:
/// with none (`more` false), the thread is done with the construct and
/// goes on as itself, after every section it ran.
pub fn section_given(more: bool) {
    if active() && !more {
        log::end_strand();
        log::learn(next_publication());
    }
}

/// The calling thread's stamp, for a task (or team) it creates ([`OFF`]
/// while off, or in a program whose atomics are not seen).
pub fn task_created() -> u64 {
    match on() && INSTRUMENTED.load(Relaxed) {
        true => {
            super::reach::teamed();
            FORKS.fetch_max(next_publication(), Relaxed);
            super::thread_stamp()
        }
        false => OFF,
    }
}

/// A task created at `stamp` begins on the calling thread.
pub fn task_began(stamp: u64) {
    raise(stamp);
    log::learn(FORKS.load(Relaxed));
}

/// A release on `key`'s word between a team's threads: the first half of
/// a barrier, the end of a critical section, a lock's release, a task's
/// end, an atomic.
pub fn publish(key: usize) {
    if !active() {
        return;
    }
    let view = log::view();
    let (views, numbers) = word(key);
    if view != log::FOLLOW {
        views.fetch_max(view, Relaxed);
    }
    numbers.fetch_max(next_publication(), Relaxed);
}

/// An acquire on `key`'s word: the second half of a barrier, the start of
/// a critical section, a lock taken, a taskwait, an atomic.
pub fn acquire(key: usize) {
    if active() {
        let (views, numbers) = word(key);
        raise(views.load(Relaxed));
        log::learn(numbers.load(Relaxed));
    }
}

/// The calling thread made its PE's synchronization numbered `stamp`.
pub(super) fn synced(stamp: u64) {
    if active() {
        raise(stamp);
    }
}

/// Raises the calling thread's view to `stamp`, if it has one.
fn raise(stamp: u64) {
    let view = log::view();
    if view != log::FOLLOW && stamp > view && !UNMODELED.load(Relaxed) {
        log::set_view(stamp);
    }
}

/// A construct the checker does not model: every thread follows the PE's
/// count until the last team ends.
pub fn unmodeled() {
    if active() {
        UNMODELED.store(true, Relaxed);
        log::set_counting(false);
        super::reach::unmodeled();
        log::follow_all();
    }
}

/// An atomic of the program's on the object at `key` (or a fence, on the
/// team's word): a release before it, an acquire after (the value it
/// reads may be another thread's flag).
pub struct Edge(usize);

impl Edge {
    #[inline(always)]
    pub fn new(key: usize) -> Edge {
        if active() {
            publish(key);
        }
        Edge(key)
    }
}

impl Drop for Edge {
    #[inline(always)]
    fn drop(&mut self) {
        if active() {
            acquire(self.0);
        }
    }
}
