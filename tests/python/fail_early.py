"""A PE that fails while the others compute, the ways Python programs do:
`fail_early.py HOW SECS`. PE 1 calls sys.exit(3) (HOW "exit"), raises an
exception nobody catches ("raise"), or calls sys.exit(0) ("ok", a legal
early return). The others compute for SECS seconds with no call of the
library's, then meet in a barrier (or, for "ok", finish alone). A PE past
its work prints "PE N finished"."""
import sys
import time

from shmem4py import shmem

me = shmem.my_pe()
how, secs = sys.argv[1], float(sys.argv[2])
if me == 1:
    if how == "exit":
        sys.exit(3)
    if how == "raise":
        raise RuntimeError("PE 1 gives up")
    sys.exit(0)
until = time.time() + secs
x = 1
while time.time() < until:
    x = (x * 6364136223846793005 + 1) % (1 << 64)
if how != "ok":
    shmem.barrier_all()
print(f"PE {me} finished")
