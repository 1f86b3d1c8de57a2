//! `World`: this rank's view of the job. Owns the segment, the per-peer
//! paths, the heap allocator and the launcher link; `init` builds it and
//! `finalize` (or `Drop`) tears it down.

use crate::bootstrap::{self, LauncherLink};
use crate::error::{Error, Result};
use crate::heap::reserve::Reservation;
use crate::heap::Allocator;
use crate::links::wire::{Offer, Wired};
use crate::links::{Channel, Links};
use crate::protocol::env::heap_cap_from_env;
use crate::segment::Segment;
use crate::sym::{Pod, Sym};
use crate::team::layout::{Layout, MAX_TEAMS};
use crate::team::Team;
use crate::transport::TransportChoice;
use std::sync::atomic::AtomicU64;
use std::sync::Mutex;

/// This rank's handle on the job. See the crate docs for the memory model.
pub struct World {
    pub(crate) rank: usize,
    pub(crate) size: usize,
    local_rank: usize,
    local_size: usize,
    host: String,
    // Fields drop in order: the links (whose engine writes into `own`, and
    // whose NIC transport registered parts of it: every MR is deregistered
    // with them) stop before this rank's segment is unmapped.
    /// The paths to every rank and the transports behind them (`links`).
    pub(crate) links: Links,
    pub(crate) own: Segment,
    pub(crate) heap: Mutex<Allocator>,
    /// Which heap offsets have memory (`heap::extent`); locked after `heap`.
    pub(crate) extent: Mutex<crate::heap::extent::Extent>,
    /// Heap offset of the two words of a growing allocation's vote.
    pub(crate) vote_at: usize,
    /// Where a heap growth's keys are exchanged (`alloc`): one
    /// [`KEY_ROOM`] to send from and one per rank, when the NIC registers
    /// the heap; in the areas committed (and registered) at start.
    pub(crate) keys_at: Option<usize>,
    /// The heap's cap, when the user set one.
    pub(crate) heap_cap: Option<usize>,
    /// Whether freed memory goes back to the host (not when a NIC
    /// registered it); the same on every rank.
    pub(crate) heap_releases: bool,
    /// The team area at the start of the heap (`team::layout`).
    layout: Layout,
    /// Each world rank's node: the lowest rank whose heap it shares a
    /// mapping with (same host, shared memory), for node-aware collectives.
    pub(crate) node_of: Vec<usize>,
    pub(crate) world_team: Team,
    /// Team slots not used by any team of this rank, one bit each.
    pub(crate) free_slots: AtomicU64,
    /// The furthest step this rank has signalled to a member of the team
    /// in each slot, as its flags encode it (`(call << 24) | step`,
    /// `Coll::notify`): finalize reports the used slots', so rlaunch can
    /// tell a peer's step still in flight from one that will never come
    /// (`bootstrap::Link::send_finalized`).
    pub(crate) slot_reached: [AtomicU64; MAX_TEAMS],
    pub(crate) id: u64,
    /// Whether local waits may spin (`backoff`): not when this host runs
    /// more ranks than it has cores.
    pub(crate) spin_waits: bool,
    /// The executable's global data, when it is symmetric (`globals`):
    /// offset `alloc_len + (address - start)` in every rank's segment.
    pub(crate) data: Option<crate::globals::DataRange>,
    launcher: Option<LauncherLink>,
    /// How this rank joined its job, for the finalize-time MPI check
    /// (`bootstrap::mpi_agree::joined`).
    joined: String,
    finalized: bool,
    /// The thread of this rank in a collective, if any.
    pub(crate) collective: crate::sync::CollectiveOwner,
    /// The checking mode's state (`rlaunch --debug`), when it is on.
    pub(crate) debug: Option<crate::debug::Checks>,
    /// The race checker's mode and area (`rlaunch --check-races`), when
    /// it is asked for; `start_races` turns it on once the world is whole.
    races: Option<(crate::race::Mode, usize)>,
}

/// How [`init_with`] sets a rank up.
#[derive(Debug, Clone, Default)]
#[non_exhaustive]
pub struct Options {
    /// Make the executable's global and static variables symmetric, as
    /// OpenSHMEM does for C programs: their addresses become valid targets
    /// of [`World::sym_at`] on every transport. Must be set before the
    /// program starts threads of its own.
    pub symmetric_globals: bool,
}

impl Options {
    /// The defaults: only the heap is symmetric.
    pub fn new() -> Options {
        Options::default()
    }

    /// Sets [`Options::symmetric_globals`].
    pub fn symmetric_globals(mut self, on: bool) -> Options {
        self.symmetric_globals = on;
        self
    }
}

/// Joins the job `rlaunch` started (or another launcher, through its PMI:
/// `srun`, `mpirun`, `mpiexec.hydra`, Flux), or runs as a singleton when
/// started alone. When the program's MPI is already initialized, the PE
/// number is checked to equal the `MPI_COMM_WORLD` rank.
#[track_caller]
pub fn init() -> Result<World> {
    crate::error::located(|| init_with(Options::new()))
}

/// [`init`] with [`Options`].
#[track_caller]
pub fn init_with(options: Options) -> Result<World> {
    crate::error::located(|| {
        let cap = heap_cap_from_env()?;
        let data = match options.symmetric_globals {
            true => crate::globals::executable_data(),
            false => None,
        };
        let Some((env, pmi)) = bootstrap::launched()? else {
            bootstrap::mpi_agree::check_world(0, 1, bootstrap::mpi_agree::ALONE)?;
            let plan = Reservation::plan(cap, 1, areas(1, false));
            let (own, _) = Segment::create(0, None, (plan.reserve, plan.initial), data)?;
            let host = crate::protocol::host_addr::hostname();
            let links = Links::alone(own.heap_base());
            let mut world = World::assemble(0, 1, 0, 1, host, (own, plan), links, vec![0], None);
            world.data = data;
            world.start_races();
            return Ok(world);
        };
        let joined = bootstrap::mpi_agree::joined(pmi.as_ref().map(|p| p.server()));
        bootstrap::mpi_agree::check_world(env.rank, env.size, &joined)?;
        crate::protocol::limits::raise_open_files();
        let choice = TransportChoice::from_env(env.rank)?;
        // A segment file is only for same-host peers that shared memory will reach.
        let plan = Reservation::plan(
            cap,
            env.size,
            areas(env.size, choice.may_register((env.local_size, env.size))),
        );
        let shared = env.local_size > 1 && choice.maps_same_host_peers();
        let job = shared.then_some(env.job_id.as_str());
        let (own, shm) = Segment::create(env.rank, job, (plan.reserve, plan.initial), data)?;
        let mut offer = Offer::open(&env, choice, (own.raw(), own.heap_base()), shm, plan.reserve)?;
        let (table, launcher) = match pmi {
            Some(pmi) => pmi.exchange_cards(&env, offer.card(bootstrap::under_pmi::local_ip())?)?,
            None => bootstrap::exchange_cards(&env, |local_ip| offer.card(local_ip))?,
        };
        let launcher = Some(launcher);
        let Wired {
            links,
            node_of,
            spin_waits,
            lazy_shm,
        } = offer.connect(table)?;
        let mut world = World::assemble(
            env.rank,
            env.size,
            env.local_rank,
            env.local_size,
            env.host,
            (own, plan),
            links,
            node_of,
            launcher,
        );
        if let Some(spin) = spin_waits {
            world.spin_waits = spin;
        }
        world.data = data;
        world.joined = joined;
        world.start_races();
        // Every peer reads the host's card table, and maps our segment unless
        // it maps lazily, before entering this barrier, so after it those files
        // are no longer needed: unlink them now so a crash leaves nothing.
        crate::profile::runtime_own(|| world.barrier())?;
        if !lazy_shm {
            world.own.unlink();
        }
        if let Some(launcher) = world.launcher.as_mut() {
            launcher.remove_card_table();
        }
        Ok(world)
    })
}

impl World {
    #[allow(clippy::too_many_arguments)]
    fn assemble(
        rank: usize,
        size: usize,
        local_rank: usize,
        local_size: usize,
        host: String,
        (own, plan): (Segment, Reservation),
        links: Links,
        node_of: Vec<usize>,
        launcher: Option<LauncherLink>,
    ) -> World {
        crate::profile::start(rank, size, &host);
        let own_core = crate::backoff::may_spin(local_size, 1);
        crate::watch::start(rank, launcher.as_ref().and_then(LauncherLink::reporter), own_core);
        crate::crash::install(rank);
        let layout = Layout::new(size);
        // A cap holds to the byte; the reservation is rounded to pages.
        let areas = areas(size, links.registers_memory());
        let limit = plan
            .cap
            .map_or(own.alloc_len(), |cap| (cap + areas).min(own.alloc_len()));
        let mut allocator = Allocator::new(limit);
        let area = allocator.alloc(layout.area_bytes());
        debug_assert_eq!(area, Ok(0), "the team area comes first");
        let debug = match crate::debug::requested() {
            true => {
                crate::watch::record_calls();
                let area = allocator.alloc(crate::debug::AREA_BYTES);
                area.ok().map(crate::debug::Checks::new)
            }
            false => None,
        };
        let races = crate::race::requested().and_then(|mode| {
            let area = allocator.alloc(crate::race::exchange::area_bytes(size));
            area.ok().map(|area| (mode, area))
        });
        let keys_at = match links.registers_memory() {
            true => allocator.alloc(KEY_ROOM * (size + 1)).ok(),
            false => None,
        };
        let vote_at = allocator.alloc(VOTE_BYTES).unwrap_or(0);
        let heap = Mutex::new(allocator);
        let heap_releases = !links.registers_memory();
        let id = u64::from_le_bytes(crate::protocol::auth::random_bytes());
        let world_team = Team::world(&node_of, id, rank);
        let all_but_world = ((1u64 << MAX_TEAMS) - 1) & !1;
        World {
            rank,
            size,
            local_rank,
            local_size,
            host,
            links,
            own,
            heap,
            extent: Mutex::new(plan.extent()),
            vote_at,
            keys_at,
            heap_cap: plan.cap,
            heap_releases,
            layout,
            node_of,
            world_team,
            free_slots: AtomicU64::new(all_but_world),
            slot_reached: Default::default(),
            id,
            spin_waits: crate::backoff::may_spin(local_size, 1),
            data: None,
            launcher,
            joined: crate::bootstrap::mpi_agree::ALONE.to_string(),
            finalized: false,
            collective: Default::default(),
            debug,
            races,
        }
    }

    /// Turns the race checker on, if it was asked for, once the world's
    /// memory (heap and globals) is known.
    fn start_races(&self) {
        if let Some((mode, area)) = self.races {
            let memory = crate::race::Memory {
                rank: self.rank,
                size: self.size,
                heap_base: self.own.heap_base() as usize,
                heap_len: self.own.alloc_len(),
                data: self.data.map(|d| (d.start, d.len)),
                area,
            };
            crate::race::start(memory, mode);
        }
    }

    /// Whether the checking mode (`rlaunch --debug`, `ONESIDE_DEBUG=1`) or
    /// the race checker (`--check-races`) is on: bindings then leave their
    /// inline fast paths off, so that every call is checked.
    pub fn checking(&self) -> bool {
        self.debug.is_some() || self.races.is_some()
    }

    /// This rank's number, `0..size()`.
    pub fn rank(&self) -> usize {
        self.rank
    }

    /// Number of ranks in the job.
    pub fn size(&self) -> usize {
        self.size
    }

    /// This rank's index among the ranks on its host.
    pub fn local_rank(&self) -> usize {
        self.local_rank
    }

    /// Number of ranks on this rank's host.
    pub fn local_size(&self) -> usize {
        self.local_size
    }

    /// The host this rank runs on, as the launcher named it.
    pub fn host(&self) -> &str {
        &self.host
    }

    /// Which path reaches `target` ("self", "shm"), for reports and benchmarks.
    #[track_caller]
    pub fn transport_to(&self, target: usize) -> Result<&'static str> {
        crate::error::located(|| {
            self.check_rank("transport_to", target)?;
            Ok(self.links.path_name(target))
        })
    }

    /// The address of this rank's TCP progress engine, if it runs one
    /// (diagnostics: it is where peers' TCP requests arrive).
    pub fn tcp_engine_addr(&self) -> Option<std::net::SocketAddr> {
        self.links.tcp_engine_addr()
    }

    /// Whether every operation, on every context, is complete when its
    /// call returns: every peer is on this host's shared memory, so a
    /// quiet is a fence and nothing more, and one fence (a barrier's own)
    /// completes every context. The C API's `shmem_barrier_all` then need
    /// not quiet each context the program made.
    pub fn complete_on_return(&self) -> bool {
        self.links.quiet_is_a_fence()
    }

    /// The RDMA device this rank uses, if the job uses verbs.
    pub fn rdma_device(&self) -> Option<String> {
        self.links.rdma_device()
    }

    /// The team area's geometry.
    pub(crate) fn team_layout(&self) -> Layout {
        self.layout
    }

    /// Ends this rank's part in the job: a final barrier, quiet, and a
    /// farewell to the launcher that returns once every rank has said its
    /// own. Dropping the `World` does the same.
    #[track_caller]
    pub fn finalize(mut self) -> Result<()> {
        crate::error::located_call(|| {
            let _call = crate::watch::call("finalize");
            let at = format!("at {}", crate::site::call_site());
            self.finalize_once(&at)
        })
    }

    /// [`finalize`](Self::finalize) for a language binding, which says
    /// how its program came to finalize (`at`, for rlaunch's reports, read
    /// after "in finalize": "from shmem_finalize", "at exit ...").
    #[doc(hidden)]
    #[track_caller]
    pub fn finalize_from(mut self, at: &str) -> Result<()> {
        crate::error::located(|| self.finalize_once(at))
    }

    /// Ends the whole job with `status` (OpenSHMEM's `shmem_global_exit`):
    /// tells the launcher, which stops every other rank and exits with
    /// `status`, then exits this process without a farewell barrier.
    pub fn global_exit(&mut self, status: i32) -> ! {
        self.finalized = true;
        // The profile and trace asked for, as finalize would write them.
        let _ = crate::profile::finish();
        if let Some(link) = &mut self.launcher {
            let _ = link.send_global_exit(status);
        }
        std::process::exit(status)
    }

    fn finalize_once(&mut self, at: &str) -> Result<()> {
        if std::mem::replace(&mut self.finalized, true) {
            return Ok(());
        }
        if let Err(e) = crate::profile::finish() {
            eprintln!("oneside: rank {} could not write its profile: {e}", self.rank);
        }
        // No barrier of the program's here: a rank that left early (an
        // early return from main, a `?`) would pair it with the barrier
        // its peers wait in, and let them past a collective this rank
        // never called. The farewell is the barrier instead, and it is the
        // launcher's (or the PMI server's), outside the program's
        // collectives: each rank completes its own operations first, so
        // once every rank has said farewell nothing is in flight anywhere
        // and endpoints may close. A peer left waiting for this rank in a
        // collective is a deadlock the launcher sees and ends.
        // The farewell's time counts as the runtime's own (init/finalize)
        // in a profile written later: when rlaunch ends the job while this
        // rank waits in it, the files are written again then.
        let _farewell = crate::profile::span(crate::profile::Family::InitFinalize);
        if crate::race::on() {
            // Under the race checker only, a barrier ends the last phase so
            // that it is judged too (every rank calls finalize).
            self.barrier()?;
        }
        self.links.quiet_on(Channel::Default)?;
        // An MPI initialized after this world (shmem_init before MPI_Init)
        // and not found at init could not be checked then: a launcher that
        // gave MPI nothing makes it a singleton, and whatever it computed
        // was wrong.
        crate::bootstrap::mpi_agree::check_world(self.rank, self.size, &self.joined)?;
        let reached = self.steps_reached();
        match &mut self.launcher {
            Some(link) => link.send_finalized(at, reached),
            None => Ok(()),
        }
    }

    #[inline(always)]
    pub(crate) fn check_rank(&self, op: &'static str, target: usize) -> Result<()> {
        if target < self.size {
            return Ok(());
        }
        Err(self.bad_rank(op, target))
    }

    #[cold]
    fn bad_rank(&self, op: &'static str, target: usize) -> Error {
        Error::RankOutOfRange {
            rank: self.rank,
            op,
            target,
            size: self.size,
        }
    }

    #[inline(always)]
    pub(crate) fn check_object<T: Pod>(&self, op: &'static str, sym: &Sym<T>) -> Result<()> {
        if sym.world_id == self.id {
            Ok(())
        } else {
            Err(self.unknown(op, sym))
        }
    }

    #[cold]
    pub(crate) fn unknown<T: Pod>(&self, op: &'static str, sym: &Sym<T>) -> Error {
        Error::UnknownObject {
            rank: self.rank,
            op,
            offset: sym.offset,
            bytes: sym.len * std::mem::size_of::<T>(),
        }
    }
}

/// The vote's words (`alloc`), on their own cache line.
pub(crate) const VOTE_BYTES: usize = 64;

/// Each rank's room in a heap growth's exchange of keys (`Links::grown`).
pub(crate) const KEY_ROOM: usize = 256;

/// The runtime's areas at the start of every heap: the team area, then
/// the checking mode's, the exchange of a growth's keys (when a NIC may
/// register the heap: `registers`), then the vote's words. All of them
/// are committed at start, so a NIC registers them at start.
fn areas(ranks: usize, registers: bool) -> usize {
    let debug = match crate::debug::requested() {
        true => crate::debug::AREA_BYTES,
        false => 0,
    };
    let keys = match registers {
        true => KEY_ROOM * (ranks + 1),
        false => 0,
    };
    let races = match crate::race::requested() {
        Some(_) => crate::race::exchange::area_bytes(ranks),
        None => 0,
    };
    Layout::new(ranks).area_bytes() + debug + races + keys + VOTE_BYTES
}

impl Drop for World {
    fn drop(&mut self) {
        // A panicking rank must not wait in a barrier for peers that may be
        // waiting for it, and a rank that lost a peer cannot finish one: it
        // leaves without a farewell and rlaunch aborts the job. So does a
        // rank whose last call returned an error, which a `?` is carrying
        // out of main: its farewell would wait for peers that may compute
        // for an hour, and its error would be printed (by main's return)
        // only then. It exits with main's failure status, and rlaunch ends
        // the job at once with that error first.
        if std::thread::panicking() || self.links.broken() || crate::error::failed_last() {
            // No farewell, but the profile and trace asked for are still
            // written: they show where a rank that lived spent its time.
            if let Err(e) = crate::profile::finish() {
                eprintln!("oneside: rank {} could not write its profile: {e}", self.rank);
            }
            return;
        }
        let _call = crate::watch::call_unplaced("finalize");
        match self.finalize_once("when its World was dropped (main returned, or `?` or an early return left it)") {
            // The launcher says why; the process goes on to its own exit
            // and exit status.
            Err(Error::FinalizeAbandoned { .. }) | Ok(()) => {}
            Err(e) => eprintln!("oneside: {e}"),
        }
    }
}
