//! Wiring a rank's links, in the two halves the card exchange splits it
//! into. Before it, [`Offer::open`] opens what this rank offers its peers
//! (the NIC transport, the TCP progress engine) and [`Offer::card`] writes
//! the card that says how to reach them. After it, [`Offer::connect`] reads
//! every card once, connects each path and the NIC, and builds the
//! [`Links`] that own them. `init` only carries the card between the two.

use super::{CtxConnect, Links, Parts};
use crate::error::{Error, Result};
use crate::protocol::env::LaunchEnv;
use crate::segment::{RawSegment, ShmCard};
use crate::transport::cards::CardTable;
use crate::transport::ofi::Prepared as PreparedOfi;
use crate::transport::rdma::{self, RdmaLink};
use crate::transport::tcp::engine::{ProgressEngine, WaitPolicy};
use crate::transport::tcp::flusher::{Flusher, Nudge};
use crate::transport::tcp::Dial;
use crate::transport::{self, Card, JobNic, Path, TransportChoice};
use std::net::IpAddr;

/// What this rank opened for its peers, waiting for their cards.
pub(crate) struct Offer {
    rank: usize,
    size: usize,
    local_size: usize,
    host: String,
    secret: Vec<u8>,
    timeout: std::time::Duration,
    choice: TransportChoice,
    heap_bytes: u64,
    own: RawSegment,
    own_heap: *mut u8,
    shm: Option<ShmCard>,
    want_tcp: bool,
    verbs: Option<rdma::Pending>,
    ofi: Option<PreparedOfi>,
    engine: Option<ProgressEngine>,
}

/// The links, and what the `World` learns from wiring them.
pub(crate) struct Wired {
    pub links: Links,
    /// Each rank's node: the lowest rank whose heap it shares a mapping with.
    pub node_of: Vec<usize>,
    /// Whether the rank's waits may spin (the engine's verdict), if it has one.
    pub spin_waits: Option<bool>,
    /// Whether same-host peers map this rank's segment lazily, so that its
    /// file must outlive the first barrier.
    pub lazy_shm: bool,
}

impl Offer {
    /// Opens the NIC transport `choice` asks for (verbs first; under `auto`
    /// libfabric only where there is no verbs device), for the job `env`
    /// describes. `own` is this rank's segment, `shm` its card when
    /// same-host peers will map it.
    pub(crate) fn open(
        env: &LaunchEnv,
        choice: TransportChoice,
        (own, own_heap): (RawSegment, *mut u8),
        shm: Option<ShmCard>,
        heap_bytes: usize,
    ) -> Result<Offer> {
        let remote_peers = env.local_size < env.size;
        // What this rank prepares before the card exchange: a forced
        // transport only itself; auto, between hosts, verbs, else ofi, and TCP.
        let (try_verbs, try_ofi, want_tcp) = match choice {
            TransportChoice::Auto => (remote_peers, remote_peers, remote_peers),
            TransportChoice::Shm => (false, false, false),
            TransportChoice::Tcp => (false, false, true),
            TransportChoice::Verbs => (true, false, false),
            TransportChoice::Ofi => (false, true, false),
        };
        let verbs = match try_verbs {
            true => rdma::prepare(env.rank, env.size, own, choice == TransportChoice::Verbs)?,
            false => None,
        };
        let ofi = match try_ofi && verbs.is_none() {
            true => rdma::prepare_ofi(
                env.rank,
                (env.size, env.local_size),
                own,
                choice == TransportChoice::Ofi,
            )?,
            false => None,
        };
        Ok(Offer {
            rank: env.rank,
            size: env.size,
            local_size: env.local_size,
            host: env.host.clone(),
            secret: env.secret.clone(),
            timeout: std::time::Duration::from_secs(env.bootstrap_timeout_secs.max(1)),
            choice,
            heap_bytes: heap_bytes as u64,
            own,
            own_heap,
            shm,
            want_tcp,
            verbs,
            ofi,
            engine: None,
        })
    }

    /// This rank's card, encoded: starts the TCP progress engine on
    /// `local_ip` (the address peers reach this host by) if TCP is wanted.
    /// A rank with an engine spins in its waits only if every local rank
    /// and its engine have a core, and keeps polling in long waits if it
    /// has a core of its own (the engine's thread sleeps while it does).
    pub(crate) fn card(&mut self, local_ip: IpAddr) -> Result<Vec<u8>> {
        let mut tcp = None;
        if self.want_tcp {
            let waits = WaitPolicy {
                spin: crate::backoff::may_spin(self.local_size, 2),
                keep_polling: crate::backoff::may_spin(self.local_size, 1),
            };
            let engine =
                ProgressEngine::start(self.rank, local_ip, self.secret.clone(), self.own, waits).map_err(|fault| {
                    Error::TcpListen {
                        rank: self.rank,
                        source: fault.into_io(),
                    }
                })?;
            tcp = Some(engine.addr().to_string());
            self.engine = Some(engine);
        }
        let card = Card {
            host: self.host.clone(),
            heap_bytes: self.heap_bytes,
            shm: self.shm.clone(),
            tcp,
            verbs: self.verbs.as_ref().map(rdma::Pending::card),
            ofi: self.ofi.as_ref().map(PreparedOfi::card),
        };
        Ok(postcard::to_stdvec(&card).expect("postcard encoding into a Vec cannot fail"))
    }

    /// Connects every path, given every rank's card as gathered (`table`:
    /// received, or the host's mapped file).
    pub(crate) fn connect(self, table: impl AsRef<[u8]> + Send + Sync + 'static) -> Result<Wired> {
        let rank = self.rank;
        let cards = CardTable::new(Box::new(table)).map_err(|e| Error::BootstrapProtocol {
            rank,
            peer: "the card table".into(),
            detail: e.to_string(),
        })?;
        let dial = Dial {
            secret: self.secret,
            timeout: self.timeout,
            driver: self.engine.as_ref().map(|e| e.driver().clone()),
            nudge: Some(Nudge::new()),
        };
        let lazy_shm = self.local_size > transport::shm::eager_peers() + 1;
        let nic = transport::job_nic(self.choice, &cards);
        let transport::Wired { paths, nodes } =
            transport::connect_all(rank, (self.choice, nic), &cards, &dial, lazy_shm)?;
        let rdma = connect_nic(
            nic,
            (rank, self.size, self.local_size),
            (self.verbs, self.ofi),
            &cards,
            &paths,
        )?;
        let (mut flusher, mut ctx_connect) = (None, None);
        if paths.iter().any(|path| matches!(path, Path::Tcp(_))) {
            if let Some(nudge) = dial.nudge.clone() {
                flusher = Some(Flusher::start(rank, nudge).map_err(|fault| Error::ThreadStart {
                    rank,
                    thread: "TCP flusher",
                    source: fault.into_io(),
                })?);
            }
            ctx_connect = Some(CtxConnect {
                addrs: (0..self.size)
                    .map(|p| cards.view(p).ok().as_ref().and_then(transport::tcp_addr))
                    .collect(),
                dial,
                live: Default::default(),
            });
        }
        let spin_waits = self.engine.as_ref().map(|engine| engine.driver().spin());
        let links = Links::new(Parts {
            rank,
            size: self.size,
            paths,
            cards,
            own_heap: self.own_heap,
            block_waits: crate::backoff::block_waits(self.local_size),
            engine: self.engine,
            flusher,
            rdma,
            ctx_connect,
        });
        Ok(Wired {
            links,
            node_of: nodes,
            spin_waits,
            lazy_shm,
        })
    }
}

/// Connects the job's NIC transport, if it has one. A verbs job sends
/// every atomic through the NIC (the rule in the crate docs), so it needs
/// a queue pair to every rank, this one included, whatever the data path;
/// `connect_all` has checked every card has one. Likewise an ofi job:
/// every rank is in the address vector.
fn connect_nic(
    nic: JobNic,
    (rank, size, local_size): (usize, usize, usize),
    (verbs, ofi): (Option<rdma::Pending>, Option<PreparedOfi>),
    cards: &CardTable,
    paths: &[Path],
) -> Result<Option<RdmaLink>> {
    match (nic, verbs, ofi) {
        (JobNic::None, ..) => Ok(None),
        (JobNic::Verbs, Some(pending), _) => {
            let verbs_cards = (0..size)
                .map(|p| transport::read_card(rank, cards, p).map(|card| card.verbs))
                .collect::<Result<Vec<_>>>()?;
            let by_rdma: Vec<_> = paths.iter().map(|path| matches!(path, Path::Verbs)).collect();
            Ok(Some(pending.connect(rank, &verbs_cards, &by_rdma)?))
        }
        (JobNic::Verbs, None, _) => Err(Error::RdmaSetup {
            rank,
            detail: "the job uses verbs, but this rank opened no RDMA device".into(),
        }),
        (JobNic::Ofi, _, Some(pending)) => {
            let ofi_cards = (0..size)
                .map(|p| transport::read_card(rank, cards, p).map(|card| card.ofi))
                .collect::<Result<Vec<_>>>()?;
            Ok(Some(rdma::connect_ofi(pending, rank, local_size, &ofi_cards)?))
        }
        (JobNic::Ofi, _, None) => Err(Error::OfiSetup {
            rank,
            detail: "the job uses ofi, but this rank opened no libfabric endpoint".into(),
        }),
    }
}

impl Links {
    /// The links of a rank alone (no launcher): only its own heap.
    pub(crate) fn alone(own_heap: *mut u8) -> Links {
        Links::new(Parts {
            rank: 0,
            size: 1,
            paths: vec![Path::Local],
            cards: CardTable::empty(),
            own_heap,
            block_waits: crate::backoff::block_waits(1),
            engine: None,
            flusher: None,
            rdma: None,
            ctx_connect: None,
        })
    }
}
