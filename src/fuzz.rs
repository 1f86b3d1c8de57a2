//! Property-based fuzzing of every decoder that reads bytes from outside
//! the process: bootstrap frames (whole, and streamed in pieces), card
//! tables and cards, PMI-2 reply frames, `PMI_process_mapping`, TCP
//! request headers and atomic codes, and the environment's values (sizes,
//! hex secrets). Each property runs [`cases`] inputs (100 000 unless
//! `ONESIDE_FUZZ_CASES` says otherwise) and checks that the decoder
//! returns (no panic), and that what it allocated stayed under a bound set
//! by its input's size, measured by this test binary's allocator
//! ([`Counting`]). Inputs are a mix of random bytes and mutated valid
//! encodings, so the decoders' deep paths are reached too.

use crate::protocol::wire::{self, FrameBuf, Msg, MAX_FRAME, MAX_UNAUTHENTICATED_FRAME};
use proptest::prelude::*;
use proptest::test_runner::{Config, TestRunner};
use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;

/// The system allocator, counting each thread's live bytes and their peak.
struct Counting;

thread_local! {
    static LIVE: Cell<usize> = const { Cell::new(0) };
    static PEAK: Cell<usize> = const { Cell::new(0) };
}

// SAFETY: every call is forwarded to the system allocator unchanged; the
// counters are plain thread-locals without destructors.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        let _ = LIVE.try_with(|live| {
            live.set(live.get() + layout.size());
            let _ = PEAK.try_with(|peak| peak.set(peak.get().max(live.get())));
        });
        // SAFETY: forwarded with the caller's layout.
        unsafe { System.alloc(layout) }
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        let _ = LIVE.try_with(|live| live.set(live.get().saturating_sub(layout.size())));
        // SAFETY: `ptr` came from `alloc` with this layout.
        unsafe { System.dealloc(ptr, layout) }
    }
}

#[global_allocator]
static ALLOCATOR: Counting = Counting;

/// Runs `f` and returns how many bytes it had allocated at most at once.
fn peak_of(f: impl FnOnce()) -> usize {
    let base = LIVE.with(Cell::get);
    PEAK.with(|peak| peak.set(base));
    f();
    PEAK.with(Cell::get) - base
}

/// Cases per property: 100 000, or `ONESIDE_FUZZ_CASES`.
fn cases() -> u32 {
    std::env::var("ONESIDE_FUZZ_CASES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(100_000)
}

/// Runs `check` on `cases()` inputs from `strategy`; fails with the
/// smallest failing input.
fn fuzz<S: Strategy>(strategy: S, check: impl Fn(S::Value) -> Result<(), TestCaseError>)
where
    S::Value: std::fmt::Debug,
{
    let config = Config {
        cases: cases(),
        failure_persistence: None,
        max_shrink_iters: 2000,
        ..Config::default()
    };
    let mut runner = TestRunner::new(config);
    if let Err(e) = runner.run(&strategy, check) {
        panic!("{e}");
    }
}

/// Random bytes, or a valid encoding with a few bytes changed, cut or
/// extended: most inputs get past the first check.
fn bytes_near(valid: Vec<Vec<u8>>, max: usize) -> impl Strategy<Value = Vec<u8>> {
    let mutated = (
        proptest::sample::select(valid),
        proptest::collection::vec((any::<prop::sample::Index>(), any::<u8>()), 0..4),
        0usize..16,
        proptest::collection::vec(any::<u8>(), 0..16),
    )
        .prop_map(|(mut bytes, changes, cut, tail)| {
            for (at, value) in changes {
                if !bytes.is_empty() {
                    let i = at.index(bytes.len());
                    bytes[i] = value;
                }
            }
            bytes.truncate(bytes.len().saturating_sub(cut));
            bytes.extend(tail);
            bytes
        });
    prop_oneof![proptest::collection::vec(any::<u8>(), 0..max), mutated]
}

fn sample_messages() -> Vec<Msg> {
    vec![
        Msg::Challenge { nonce: [7; 32] },
        Msg::Register {
            rank: 3,
            size: 8,
            card: vec![1, 2, 3],
            host: "node-1".into(),
            pid: 4242,
        },
        Msg::Cards {
            table: vec![9; 40],
            publish: Some("/dev/shm/x".into()),
        },
        Msg::Finalized {
            rank: 1,
            at: "prog.rs:3:5".into(),
            reached: vec![(0, 12 << 24 | 1)],
            races: 0,
        },
        Msg::Stalled(crate::protocol::stall::Stall {
            rank: 2,
            for_ms: 400,
            threads: vec![crate::protocol::stall::ThreadStall {
                call: "barrier".into(),
                at: "a.rs:1:1".into(),
                waits: "rank 1".into(),
                on: vec![1],
                anyone: false,
                answer: false,
                finalizing: false,
                step_of: Some((0, 12 << 24 | 1)),
            }],
        }),
        Msg::Abort { reason: "why".into() },
    ]
}

/// A frame body is at most its limit; what decoding allocates beyond the
/// body is bounded by serde's cautious preallocation (1 MiB a sequence).
const DECODE_SLACK: usize = 4 << 20;

#[test]
fn bootstrap_frames_never_panic_and_allocate_in_proportion() {
    let valid: Vec<Vec<u8>> = sample_messages()
        .iter()
        .map(|m| wire::encode(m)[4..].to_vec())
        .collect();
    fuzz(bytes_near(valid, 512), |body| {
        let peak = peak_of(|| {
            let _ = wire::decode(&body);
        });
        prop_assert!(
            peak <= 16 * body.len() + DECODE_SLACK,
            "{peak} bytes for a {}-byte body",
            body.len()
        );
        Ok(())
    });
}

#[test]
fn streamed_frames_are_refused_past_their_limit_and_never_panic() {
    let valid: Vec<Vec<u8>> = sample_messages().iter().map(wire::encode).collect();
    let input = (bytes_near(valid, 600), 1usize..64, prop::bool::ANY);
    fuzz(input, |(stream, piece, authenticated)| {
        let limit = if authenticated {
            MAX_FRAME
        } else {
            MAX_UNAUTHENTICATED_FRAME
        };
        let mut frames = FrameBuf::default();
        let peak = peak_of(|| {
            for chunk in stream.chunks(piece) {
                let _ = frames.fill_from(&mut PieceThenBlock(Some(chunk)), limit);
                while let Ok(Some(_)) = frames.next_msg(limit) {}
            }
            let _ = wire::recv_blocking(&mut &stream[..], limit);
        });
        prop_assert!(peak <= 16 * stream.len() + DECODE_SLACK + 8192);
        Ok(())
    });
}

/// A reader that gives one piece, then says it would block.
struct PieceThenBlock<'a>(Option<&'a [u8]>);

impl std::io::Read for PieceThenBlock<'_> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        match self.0.take() {
            Some(piece) => {
                let n = piece.len().min(buf.len());
                buf[..n].copy_from_slice(&piece[..n]);
                Ok(n)
            }
            None => Err(std::io::ErrorKind::WouldBlock.into()),
        }
    }
}

#[test]
fn card_tables_and_cards_never_panic() {
    let card = crate::transport::Card {
        host: "h".into(),
        heap_bytes: 1 << 20,
        shm: None,
        tcp: Some("127.0.0.1:5".into()),
        verbs: None,
        ofi: None,
    };
    let one = postcard::to_stdvec(&card).expect("encodes");
    let table = wire::encode_table(&[one.clone(), one.clone()]);
    fuzz(bytes_near(vec![one, table], 256), |bytes| {
        let peak = peak_of(|| {
            if let Ok(entries) = wire::table_entries(&bytes) {
                for entry in entries {
                    let _ = postcard::from_bytes::<crate::transport::Card>(entry);
                }
            }
            let _ = postcard::from_bytes::<crate::transport::Card>(&bytes);
            // What a rank reads at init: the table in place, each card as a view.
            if let Ok(table) = crate::transport::cards::CardTable::new(Box::new(bytes.clone())) {
                for peer in 0..table.len() {
                    if let Ok(view) = table.view(peer) {
                        let _ = (view.host_name(), view.shm.map(|shm| shm.to_card()));
                    }
                }
            }
        });
        prop_assert!(peak <= 64 * bytes.len() + DECODE_SLACK);
        Ok(())
    });
}

#[test]
fn pmi_replies_and_process_mappings_never_panic() {
    use crate::bootstrap::pmi::message::read_reply;
    let valid = vec![
        b"20    cmd=fullinit-response;rc=0;pmi-version=2;rank=1;size=4;".to_vec(),
        b"34    cmd=kvs-get-response;rc=0;found=TRUE;value=abc;".to_vec(),
        b"(vector,(0,2,2),(2,1,3))".to_vec(),
    ];
    fuzz(bytes_near(valid, 96), |bytes| {
        let peak = peak_of(|| {
            let _ = read_reply(&mut &bytes[..]);
            let text = String::from_utf8_lossy(&bytes);
            let _ = crate::bootstrap::pmi::message::parse_reply(&text);
            let _ = crate::bootstrap::process_mapping::nodes_of(&text, 8);
        });
        // A frame's length is at most 999999 by its 6-digit header.
        prop_assert!(peak <= 1_000_000 + 64 * bytes.len() + 4096);
        Ok(())
    });
}

#[test]
fn tcp_request_headers_never_panic() {
    use crate::transport::tcp::request::{atomic_from_code, Request, HEADER_BYTES};
    fuzz(any::<[u8; HEADER_BYTES]>(), |header| {
        if let Some(Request::Atomic { code, operand, .. }) = Request::decode(&header) {
            let _ = atomic_from_code(code, operand, 0);
        }
        Ok(())
    });
}

#[test]
fn environment_values_never_panic() {
    use crate::protocol::env::{hex_decode, parse_size};
    let valid = vec![b"64M".to_vec(), b"1GiB".to_vec(), b"00ff7a".to_vec(), b"4096".to_vec()];
    fuzz(bytes_near(valid, 40), |bytes| {
        let text = String::from_utf8_lossy(&bytes);
        let _ = parse_size(&text);
        let _ = hex_decode(&text);
        Ok(())
    });
}
