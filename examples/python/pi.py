"""Pi by numerical integration, one sum reduction (a course exercise).

Each PE integrates 4 / (1 + x^2) over its share of [0, 1] with the midpoint
rule, vectorised with NumPy, and one sum reduction combines the shares.
PE 0 prints the estimate and exits 1 if it is off by more than the rule's
error bound.

    oshrun -np 4 python examples/python/pi.py [INTERVALS]
"""
import sys

import numpy as np
from shmem4py import shmem


def main() -> int:
    intervals = int(sys.argv[1]) if len(sys.argv) > 1 else 1_000_000
    me, npes = shmem.my_pe(), shmem.n_pes()
    mine = np.arange(me, intervals, npes, dtype=np.float64)
    x = (mine + 0.5) / intervals
    partial = shmem.array([np.sum(4.0 / (1.0 + x * x)) / intervals], dtype=np.float64)
    total = shmem.zeros(1, dtype=np.float64)
    shmem.sum_reduce(total, partial)
    ok = True
    if me == 0:
        error = abs(total[0] - np.pi)
        ok = error < 1.0 / intervals**2 + 1e-12
        print(f"pi: {total[0]:.12f} from {intervals} intervals on {npes} PEs, error {error:.1e}: {'ok' if ok else 'WRONG'}")
    shmem.free(total)
    shmem.free(partial)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
