# A hybrid mpi4py + shmem4py program, as MPI users write one: PE number =
# MPI rank. Each PE puts its rank into its right neighbour, then MPI and
# OpenSHMEM each sum the ranks, and must agree. Prints one line per rank and
# exits non-zero on any wrong answer.
#   python hybrid.py [mpi-first | shmem-first]   which module is imported
#                                                (so initialized) first
import sys

if sys.argv[1:] == ["shmem-first"]:
    from shmem4py import shmem
    from mpi4py import MPI
else:
    from mpi4py import MPI
    from shmem4py import shmem

comm = MPI.COMM_WORLD
rank, size = comm.Get_rank(), comm.Get_size()
me, npes = shmem.my_pe(), shmem.n_pes()
ok = (me, npes) == (rank, size)

box = shmem.zeros(1, dtype="i")
src = shmem.zeros(1, dtype="i")
src[0] = me
shmem.barrier_all()
shmem.put(box, src, (me + 1) % npes)
shmem.barrier_all()
ok = ok and box[0] == (me - 1) % npes

total = shmem.zeros(1, dtype="i")
shmem.sum_reduce(total, src)
mpi_total = comm.allreduce(rank, op=MPI.SUM)
ok = ok and total[0] == mpi_total == size * (size - 1) // 2

print(f"rank {rank} of {size} (PE {me} of {npes}) sum {mpi_total} {'ok' if ok else 'WRONG'}", flush=True)
shmem.free(total)
shmem.free(src)
shmem.free(box)
comm.Barrier()
sys.exit(0 if ok else 1)
