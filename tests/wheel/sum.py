# The smallest shmem4py program with an answer to check: every PE adds its
# number + 1 into PE 0's counter; PE 0 prints "sum S on N PEs".
from shmem4py import shmem

total = shmem.zeros(1, dtype="i")
shmem.barrier_all()
shmem.atomic_add(total, shmem.my_pe() + 1, 0)
shmem.barrier_all()
if shmem.my_pe() == 0:
    print(f"sum {total[0]} on {shmem.n_pes()} PEs")
shmem.free(total)
