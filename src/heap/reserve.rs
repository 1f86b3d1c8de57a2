//! How much address space each rank reserves for its heap, and how much
//! of it `init` commits: decided from the job's size and the user's cap
//! alone, so that every rank of a job, on any host, reserves the same
//! (the global data's heap offsets start at the reservation's end).

use super::extent::Extent;

/// What `init` reserves and commits for the heap of each rank.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Reservation {
    /// Heap offsets reserved: the most the heap can grow to.
    pub reserve: usize,
    /// Heap offsets committed at start (the team and checking areas).
    pub initial: usize,
    /// The cap the user set, if any (`reserve` is it with the runtime's
    /// areas on top).
    pub cap: Option<usize>,
}

/// The address space all of a host's ranks may map: 64 TiB, half of
/// x86-64's user space, so each rank maps every same-host peer's whole
/// reservation (`ranks` bounds a host's ranks) and its own.
const MAPPED_PER_PROCESS: usize = 1 << 46;
/// The largest reservation without a cap: 1 TiB.
const LARGEST_RESERVE: usize = 1 << 40;

impl Reservation {
    /// The reservation of a job of `ranks` ranks: the `cap` (with the
    /// runtime's `areas` on top) when one is set, else
    /// [`MAPPED_PER_PROCESS`] shared among the ranks, at most
    /// [`LARGEST_RESERVE`], within `RLIMIT_AS`. `init` commits the areas.
    pub fn plan(cap: Option<usize>, ranks: usize, areas: usize) -> Reservation {
        let page = |n: usize| n.next_multiple_of(4096);
        let reserve = match cap {
            Some(cap) => page(cap.saturating_add(areas)),
            None => {
                let share = (MAPPED_PER_PROCESS / ranks.max(1)).min(LARGEST_RESERVE);
                let share = share.min(address_limit() / (2 * ranks.max(1)));
                // A power of two, so that every rank of the job, whatever
                // its host, reserves the same.
                (1usize << share.max(1 << 20).ilog2()).max(page(areas))
            }
        };
        let initial = page(areas).min(reserve);
        Reservation { reserve, initial, cap }
    }
}

/// This process's address-space limit (`RLIMIT_AS`), or no limit.
fn address_limit() -> usize {
    let mut limit = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: getrlimit fills the struct it is given.
    match unsafe { libc::getrlimit(libc::RLIMIT_AS, &mut limit) } {
        0 if limit.rlim_cur != libc::RLIM_INFINITY => limit.rlim_cur as usize,
        _ => usize::MAX,
    }
}

impl Reservation {
    /// The bookkeeping of what this reservation has committed at start.
    pub fn extent(self) -> Extent {
        Extent::new(self.initial, self.reserve)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reservations_are_powers_of_two_shared_by_the_job_unless_capped() {
        let one = Reservation::plan(None, 1, 10_000);
        assert!(
            one.reserve.is_power_of_two() && one.reserve <= LARGEST_RESERVE,
            "{one:?}"
        );
        assert_eq!(one.initial, 12_288, "only the areas are committed");
        let many = Reservation::plan(None, 2048, 10_000);
        assert!(many.reserve <= MAPPED_PER_PROCESS / 2048, "{many:?}");
        let capped = Reservation::plan(Some(1 << 30), 4, 10_000);
        assert_eq!((capped.reserve, capped.cap), ((1 << 30) + 12_288, Some(1 << 30)));
    }
}
