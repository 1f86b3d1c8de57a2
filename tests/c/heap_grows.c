/* The symmetric heap grows with no size set: each PE allocates TOTAL_MIB
 * (default 256) in pieces from 8 bytes doubling up to LARGEST_MIB (default
 * 64), then more of the largest, writes every piece locally and puts a
 * tagged word at both ends of each piece on the right neighbour, checks
 * what the left one put, frees everything (the heap gives its memory
 * back: shmemx_heap_size shrinks) and does it all again. Typed puts,
 * gets and atomics go to the first and the last piece (the first and the
 * last part of the heap to grow). Prints one line from PE 0:
 * "heap_grows: ok: <MiB> MiB per PE in <pieces> pieces, heap <MiB> MiB at
 * its peak, <MiB> MiB after freeing, cap <GiB> GiB".
 *
 * `heap_grows cap` allocates past SHMEM_SYMMETRIC_SIZE: every PE gets
 * NULL, and a smaller allocation works after it.
 * `heap_grows pause SECONDS` sleeps after the first round's allocations
 * (for a test that kills the job while its heap is large). A last
 * argument `kept` says the heap keeps its memory when freed (a NIC
 * registered it: verbs, ofi in parts), which is checked instead. */
#include <shmem.h>
#include <shmemx.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static int me, n;

#include "check.h"

#define MAX_PIECES 4096
#define MIB ((size_t)1 << 20)

static char *pieces[MAX_PIECES];
static size_t sizes[MAX_PIECES];

static uint64_t tag(int pe, int round, int i, int end) {
    return ((uint64_t)round << 56) | ((uint64_t)pe << 32) | ((uint64_t)i << 1) | (uint64_t)end;
}

/* Allocates `total` bytes in pieces; returns how many. */
static int allocate(size_t total, size_t largest, int round) {
    size_t size = 8, sum = 0;
    int count = 0;
    while (sum < total && count < MAX_PIECES) {
        char *p = shmem_malloc(size);
        CHECK(p != NULL, "round %d: shmem_malloc(%zu) returned NULL after %zu bytes", round, size, sum);
        for (size_t k = 0; k < size; k += 4096)
            CHECK(p[k] == 0, "round %d: a new piece of %zu bytes is not zero at %zu", round, size, k);
        memset(p, 0x5a, size);
        pieces[count] = p;
        sizes[count++] = size;
        sum += size;
        if (size < largest)
            size *= 2;
    }
    return count;
}

/* Tags both ends of every piece on the right neighbour, checks the left's. */
static void exchange(int count, int round) {
    int right = (me + 1) % n, left = (me + n - 1) % n;
    shmem_barrier_all();
    for (int i = 0; i < count; i++) {
        uint64_t a = tag(me, round, i, 0), b = tag(me, round, i, 1);
        shmem_putmem(pieces[i], &a, sizeof a, right);
        if (sizes[i] > sizeof a)
            shmem_putmem(pieces[i] + sizes[i] - sizeof b, &b, sizeof b, right);
    }
    shmem_barrier_all();
    for (int i = 0; i < count; i++) {
        uint64_t a, b;
        memcpy(&a, pieces[i], sizeof a);
        memcpy(&b, pieces[i] + sizes[i] - sizeof b, sizeof b);
        if (sizes[i] == sizeof a)
            b = tag(left, round, i, 1);
        CHECK(a == tag(left, round, i, 0) && b == tag(left, round, i, 1),
              "round %d: piece %d (%zu bytes) holds %#llx %#llx", round, i, sizes[i], (unsigned long long)a,
              (unsigned long long)b);
    }
    /* Typed traffic into the first and last parts: a long put and get, a
     * fetch-add from every PE on PE 0. */
    long *first = (long *)(pieces[2] + sizeof(long)), *last = (long *)(pieces[count - 1] + sizes[count - 1] - 2 * sizeof(long));
    shmem_long_p(last, me + 1000, right);
    shmem_long_atomic_add(first, 1, 0);
    shmem_barrier_all();
    CHECK(shmem_long_g(last, right) == me + 1000, "a get from the last piece");
    CHECK(*last == left + 1000, "a put into the last piece holds %ld", *last);
    if (me == 0) {
        /* 0x5a5a... plus one add per PE. */
        long base;
        memset(&base, 0x5a, sizeof base);
        CHECK(*first == base + n, "the fetch-adds into the first piece: %ld", *first - base);
    }
    shmem_barrier_all();
}

int main(int argc, char **argv) {
    int kept = argc > 1 && strcmp(argv[argc - 1], "kept") == 0;
    argc -= kept;
    shmem_init();
    me = shmem_my_pe();
    n = shmem_n_pes();
    if (argc > 1 && strcmp(argv[1], "cap") == 0) {
        size_t cap = shmemx_heap_cap();
        void *p = shmem_malloc(cap + MIB);
        CHECK(p == NULL, "an allocation past the cap of %zu bytes worked", cap);
        long *q = shmem_malloc(MIB);
        CHECK(q != NULL, "an allocation within the cap failed after one past it");
        shmem_long_p(q, me, (me + 1) % n);
        shmem_barrier_all();
        CHECK(*q == (me + n - 1) % n, "a put after the refusal");
        if (me == 0)
            printf("heap_grows: the cap held\n");
        shmem_finalize();
        return 0;
    }
    int pause = argc > 2 && strcmp(argv[1], "pause") == 0 ? atoi(argv[2]) : 0;
    size_t total = (argc > 1 && !pause ? strtoull(argv[1], NULL, 10) : 256) * MIB;
    size_t largest = (argc > 2 && !pause ? strtoull(argv[2], NULL, 10) : 64) * MIB;
    size_t start = shmemx_heap_size(), peak = 0, after = 0;
    int count = 0;
    for (int round = 0; round < 2; round++) {
        count = allocate(total, largest, round);
        CHECK(shmemx_heap_size() >= start + total, "the heap has %zu bytes for %zu allocated", shmemx_heap_size(), total);
        CHECK(shmemx_heap_free() <= shmemx_heap_cap() - total, "free %zu of cap %zu", shmemx_heap_free(), shmemx_heap_cap());
        if (pause && round == 0) {
            shmem_barrier_all();
            if (me == 0) {
                printf("heap_grows: allocated, pausing\n");
                fflush(stdout);
            }
            sleep(pause);
        }
        exchange(count, round);
        if (shmemx_heap_size() > peak)
            peak = shmemx_heap_size();
        for (int i = count - 1; i >= 0; i--)
            shmem_free(pieces[i]);
        after = shmemx_heap_size();
        if (kept)
            CHECK(after == peak, "a registered heap gave memory back: %zu bytes of %zu", after, peak);
        else
            CHECK(after < peak / 2, "freeing everything left the heap at %zu bytes of %zu", after, peak);
    }
    if (me == 0)
        printf("heap_grows: ok: %zu MiB per PE in %d pieces, heap %zu MiB at its peak, %zu MiB after freeing, cap %zu GiB\n",
               total / MIB, count, peak / MIB, after / MIB, shmemx_heap_cap() >> 30);
    shmem_finalize();
    return 0;
}
