"""The Python side of bench/compare_python.sh: 8-byte put+quiet and
fetch-add latency through shmem4py, measured as bench/capi_lat.c measures
the C API (PE 0 runs the op on PE 1's memory while PE 1 waits in a barrier;
the iteration count doubles until a batch lasts 10 ms; after a warm-up
batch, the figure is the median of 7 timed batches), and the cost of a
call that does no communication (shmem.my_pe), which is the binding's own
floor. Prints "<metric> 8 <microseconds> us" lines.

    oshrun -np 2 python bench/python_lat.py
"""
import time

import numpy as np
from shmem4py import shmem

BATCHES = 7
BATCH_TARGET = 0.010
CAP = 1 << 22

buffer = shmem.zeros(1, dtype=np.int64)
word = shmem.zeros(1, dtype=np.uint64)
source = np.ones(1, dtype=np.int64)


def put_loop(n):
    for _ in range(n):
        shmem.put(buffer, source, 1)
        shmem.quiet()


def fadd_loop(n):
    for _ in range(n):
        shmem.atomic_fetch_add(word, 1, 1)


def call_loop(n):
    for _ in range(n):
        shmem.my_pe()


def measure(op):
    n = 1
    while True:
        start = time.perf_counter()
        op(n)
        if time.perf_counter() - start >= BATCH_TARGET or n >= CAP:
            break
        n = min(n * 2, CAP)
    op(n)
    samples = []
    for _ in range(BATCHES):
        start = time.perf_counter()
        op(n)
        samples.append(time.perf_counter() - start)
    samples.sort()
    return samples[BATCHES // 2] * 1e6 / n


for metric, op in [("put_lat", put_loop), ("fadd_lat", fadd_loop), ("call_lat", call_loop)]:
    us = measure(op) if shmem.my_pe() == 0 else 0.0
    shmem.barrier_all()
    if shmem.my_pe() == 0:
        print(f"{metric} 8 {us:.4f} us", flush=True)

shmem.free(word)
shmem.free(buffer)
