"""A 1-D heat equation (Jacobi stencil) with halo puts and a barrier per
step, checked against the serial result (a course exercise).

CELLS cells between two fixed walls (1.0 on the left, 0.0 on the right) are
split into blocks, one per PE. Each step, every PE puts its edge cells into
its neighbours' halo slots and meets them in a barrier; then it updates
u' = u + ALPHA (left - 2u + right). At the end PE 0 gathers the blocks with
get and compares them bitwise with a serial run of the same operations.
Exits 1 on a mismatch.

    oshrun -np 4 python examples/python/heat.py [CELLS [STEPS]]
"""
import sys

import numpy as np
from shmem4py import shmem

ALPHA = 0.25
LEFT_WALL, RIGHT_WALL = 1.0, 0.0


def initial(cells: int) -> np.ndarray:
    u = np.zeros(cells)
    u[cells // 4 : cells // 2] = 2.0
    return u


def step(u: np.ndarray, left: float, right: float) -> np.ndarray:
    padded = np.concatenate(([left], u, [right]))
    return u + ALPHA * (padded[:-2] - 2.0 * u + padded[2:])


def serial(cells: int, steps: int) -> np.ndarray:
    u = initial(cells)
    for _ in range(steps):
        u = step(u, LEFT_WALL, RIGHT_WALL)
    return u


def main() -> int:
    cells = int(sys.argv[1]) if len(sys.argv) > 1 else 512
    steps = int(sys.argv[2]) if len(sys.argv) > 2 else 200
    me, npes = shmem.my_pe(), shmem.n_pes()
    if cells % npes:
        if me == 0:
            print(f"heat: {cells} cells do not split evenly over {npes} PEs")
        return 1
    block = cells // npes
    u = shmem.array(initial(cells)[me * block : (me + 1) * block], dtype=np.float64)
    halo = shmem.zeros(2, dtype=np.float64)  # [from the left, from the right]
    for _ in range(steps):
        if me > 0:
            shmem.put(halo[1:2], u[0:1], me - 1)
        if me < npes - 1:
            shmem.put(halo[0:1], u[block - 1 : block], me + 1)
        shmem.barrier_all()
        left = LEFT_WALL if me == 0 else halo[0]
        right = RIGHT_WALL if me == npes - 1 else halo[1]
        u[:] = step(np.array(u), left, right)
        shmem.barrier_all()
    ok = True
    if me == 0:
        whole = np.empty(cells)
        for pe in range(npes):
            part = np.empty(block)
            shmem.get(part, u, pe)
            whole[pe * block : (pe + 1) * block] = part
        ok = np.array_equal(whole, serial(cells, steps))
        print(f"heat: {cells} cells, {steps} steps on {npes} PEs: {'ok' if ok else 'WRONG'}, "
              f"heat left {whole.sum():.6f}")
    shmem.barrier_all()
    shmem.free(halo)
    shmem.free(u)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
