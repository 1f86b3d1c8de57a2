"""PE 0 waits for a word nobody writes, while PE 1 leaves: rlaunch's
deadlock report must name this file's lines, not shmem4py's generated C."""
from shmem4py import shmem

flag = shmem.zeros(1, dtype='i')
if shmem.my_pe() == 0:
    shmem.wait_until(flag, shmem.CMP.EQ, 1)
