"""A symmetric array larger than the heap's cap, from every PE: shmem4py
raises MemoryError; the library's one line, from PE 0 only, says why (the
cap and how to raise it) at this file's line. Then the program goes on:
`big_alloc.py catch` catches the error and allocates again."""
import sys

from shmem4py import shmem

caught = len(sys.argv) > 1 and sys.argv[1] == "catch"
try:
    big = shmem.zeros(64 << 20, dtype="b")
except MemoryError:
    if not caught:
        raise
    small = shmem.zeros(1 << 20, dtype="b")
    print(f"PE {shmem.my_pe()} caught MemoryError and allocated again")
    shmem.free(small)
