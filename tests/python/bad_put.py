# A shmem4py program with a mistake, for tests/python/run.sh: PE 1 puts to
# PE 99 from inside a function. oneside must name this file, the line of
# the put and the function, as a C program's error names its line.
from shmem4py import shmem
import numpy as np

x = shmem.zeros(4, dtype='i')


def send(target):
    shmem.put(x, np.ones(4, dtype='i'), target)


if shmem.my_pe() == 1:
    send(99)
shmem.barrier_all()
print("bad_put: the put to PE 99 returned")
