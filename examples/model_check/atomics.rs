//! The atomic half of the model check: in every phase each rank issues
//! random fetch-adds, adds, swaps and compare-and-swaps on a few words of
//! every rank, concurrently with the others, and logs what each returned
//! into the target's log. After the phase, each rank checks its own words:
//!
//! * **add words** take only fetch-add and add with positive increments.
//!   The final value must be exactly the initial one plus every increment,
//!   and the fetched old values must fit one order: sorted, each leaves room
//!   for its own increment before the next, and the room left over is
//!   exactly what the non-fetching adds contributed.
//! * **swap words** take only swap and compare-and-swap, each writing a
//!   value unique to the job. The successful ones (every swap, and every
//!   compare-and-swap that returned its expected value) must form one chain
//!   of states from the initial value to the final one, each state left
//!   once; a failed compare-and-swap must have returned some state of that
//!   chain other than the one it expected. That is a valid linearization.

use crate::Rng;
use oneside::{Atomics as _, Rma as _};
use oneside::{Sym, World};

/// Atomic words per rank.
pub const WORDS: usize = 4;
/// Atomics each rank issues per phase.
pub const OPS: usize = 10;
/// u64s per log record: kind, word, operand, expected, returned.
const RECORD: usize = 5;

const FETCH_ADD: u64 = 1;
const ADD: u64 = 2;
const SWAP: u64 = 3;
const CSWAP: u64 = 4;

/// The symmetric objects the atomic check uses.
pub struct Atomics {
    words: Sym<u64>,
    /// On each target: one block of `OPS` records per issuing rank.
    log: Sym<u64>,
    size: usize,
}

/// Whether word `w` of `target` is an add word in `phase` (the same answer on every rank).
fn is_add_word(seed: u64, phase: usize, target: usize, w: usize) -> bool {
    let mut rng = Rng(seed ^ ((phase * 1_000_003 + target * 131 + w) as u64).wrapping_mul(0x9e37_79b9));
    rng.below(2) == 0
}

impl Atomics {
    pub fn new(world: &World) -> oneside::Result<Atomics> {
        Ok(Atomics {
            words: world.alloc::<u64>(WORDS)?,
            log: world.alloc::<u64>(world.size() * OPS * RECORD)?,
            size: world.size(),
        })
    }

    /// One random atomic of this rank's phase; `seq` numbers it within the phase.
    pub fn issue(&self, world: &World, rng: &mut Rng, seed: u64, phase: usize, seq: usize) -> oneside::Result<()> {
        let me = world.rank();
        let target = rng.below(self.size);
        let w = rng.below(WORDS);
        let record = if is_add_word(seed, phase, target, w) {
            let inc = 1 + rng.below(1000) as u64;
            if rng.below(3) == 0 {
                world.atomic_add(&self.words, target, w, inc)?;
                [ADD, w as u64, inc, 0, 0]
            } else {
                let old = world.atomic_fetch_add(&self.words, target, w, inc)?;
                [FETCH_ADD, w as u64, inc, 0, old]
            }
        } else {
            // Unique in the job: never 0, never a value of another phase.
            let fresh = (me as u64 + 1) << 48 | (phase as u64 + 1) << 24 | (seq as u64 + 1);
            if rng.below(2) == 0 {
                let old = world.atomic_swap(&self.words, target, w, fresh)?;
                [SWAP, w as u64, fresh, 0, old]
            } else {
                // Guess the current value: what this rank last saw there, often right.
                let expected = world.atomic_fetch(&self.words, target, w)?;
                let old = world.atomic_compare_swap(&self.words, target, w, expected, fresh)?;
                [CSWAP, w as u64, fresh, expected, old]
            }
        };
        world.put(&self.log, target, (me * OPS + seq) * RECORD, &record)
    }

    /// This rank's words, read before a phase starts.
    pub fn snapshot(&self, world: &World) -> oneside::Result<Vec<u64>> {
        world.local_to_vec(&self.words)
    }

    /// Checks this rank's words after a phase against `before`; `Err` describes a violation.
    pub fn check(
        &self,
        world: &World,
        seed: u64,
        phase: usize,
        before: &[u64],
    ) -> oneside::Result<Result<usize, String>> {
        let after = world.local_to_vec(&self.words)?;
        let log = world.local_to_vec(&self.log)?;
        let records: Vec<&[u64]> = log.chunks(RECORD).filter(|r| r[0] != 0).collect();
        for w in 0..WORDS {
            let ops: Vec<&[u64]> = records.iter().copied().filter(|r| r[1] == w as u64).collect();
            let verdict = match is_add_word(seed, phase, world.rank(), w) {
                true => check_adds(before[w], after[w], &ops),
                false => check_swaps(before[w], after[w], &ops),
            };
            if let Err(e) = verdict {
                return Ok(Err(format!("word {w}: {e}")));
            }
        }
        Ok(Ok(records.len()))
    }

    /// Clears this rank's log for the next phase (before the phase's barrier).
    pub fn clear_log(&self, world: &World) -> oneside::Result<()> {
        world.local_write(&self.log, 0, &vec![0; self.size * OPS * RECORD])
    }
}

fn check_adds(before: u64, after: u64, ops: &[&[u64]]) -> Result<(), String> {
    let total: u64 = ops.iter().map(|r| r[2]).sum();
    if after != before + total {
        return Err(format!(
            "holds {after}, but {before} + {total} (every increment) was expected"
        ));
    }
    let mut fetched: Vec<(u64, u64)> = ops.iter().filter(|r| r[0] == FETCH_ADD).map(|r| (r[4], r[2])).collect();
    fetched.sort_unstable();
    let mut state = before;
    let mut slack = 0;
    for &(old, inc) in &fetched {
        if old < state {
            return Err(format!(
                "a fetch-add returned {old}, a value the word had already passed ({state})"
            ));
        }
        slack += old - state;
        state = old + inc;
    }
    slack += after - state;
    let silent: u64 = ops.iter().filter(|r| r[0] == ADD).map(|r| r[2]).sum();
    match slack == silent {
        true => Ok(()),
        false => Err(format!(
            "fetched values leave {slack} for the non-fetching adds, which added {silent}"
        )),
    }
}

fn check_swaps(before: u64, after: u64, ops: &[&[u64]]) -> Result<(), String> {
    let mut transitions = std::collections::HashMap::new();
    for r in ops.iter().filter(|r| r[0] == SWAP || r[4] == r[3]) {
        if transitions.insert(r[4], r[2]).is_some() {
            return Err(format!("two operations both replaced the value {}", r[4]));
        }
    }
    let mut states = std::collections::HashSet::from([before]);
    let mut state = before;
    while let Some(next) = transitions.remove(&state) {
        state = next;
        states.insert(state);
    }
    if !transitions.is_empty() {
        return Err(format!(
            "{} successful swap(s) are not on the chain of states",
            transitions.len()
        ));
    }
    if state != after {
        return Err(format!(
            "the chain of swaps ends at {state}, but the word holds {after}"
        ));
    }
    match ops
        .iter()
        .find(|r| r[0] == CSWAP && r[4] != r[3] && !states.contains(&r[4]))
    {
        Some(r) => Err(format!(
            "a failed compare-and-swap saw {}, which the word never held",
            r[4]
        )),
        None => Ok(()),
    }
}

/// Checks the checkers on made-up histories: a valid one must pass and
/// broken ones must fail (`model_check --self-test`, run by tests/model.rs).
pub fn self_test() -> Result<(), String> {
    let refs = |records: &[[u64; 5]]| -> Vec<Vec<u64>> { records.iter().map(|r| r.to_vec()).collect() };
    let adds = refs(&[[FETCH_ADD, 0, 5, 0, 10], [ADD, 0, 3, 0, 0], [FETCH_ADD, 0, 2, 0, 18]]);
    let adds: Vec<&[u64]> = adds.iter().map(Vec::as_slice).collect();
    check_adds(10, 20, &adds)?;
    let lost = refs(&[[FETCH_ADD, 0, 5, 0, 10], [FETCH_ADD, 0, 2, 0, 10]]);
    let lost: Vec<&[u64]> = lost.iter().map(Vec::as_slice).collect();
    let swaps = refs(&[[SWAP, 0, 100, 0, 1], [CSWAP, 0, 200, 100, 100], [CSWAP, 0, 300, 1, 200]]);
    let swaps: Vec<&[u64]> = swaps.iter().map(Vec::as_slice).collect();
    check_swaps(1, 200, &swaps)?;
    let must_fail = [
        ("a lost increment", check_adds(10, 19, &adds)),
        ("two fetch-adds that saw one value", check_adds(10, 17, &lost)),
        ("a chain that ends elsewhere", check_swaps(1, 100, &swaps)),
    ];
    match must_fail.into_iter().find(|(_, verdict)| verdict.is_ok()) {
        Some((what, _)) => Err(format!("the checker accepted {what}")),
        None => Ok(()),
    }
}
