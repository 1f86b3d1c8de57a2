/* Remote atomics and locks: a global counter at PE 0 incremented by every
 * PE, compare-swap with one winner, fetch-add, swap, set/fetch, and a
 * read-modify-write with shmem_long_g/p made atomic by shmem_set_lock. */
#include <shmem.h>
#include <stdio.h>

#define ITERS 500
#define LOCKED 50

static int me, n;
static long counter;
static long wins;
static long lock;
static long total;

#include "check.h"

int main(void) {
    shmem_init();
    me = shmem_my_pe();
    n = shmem_n_pes();
    int right = (me + 1) % n, left = (me - 1 + n) % n;

    /* fetch_inc on a global at PE 0: every ticket is unique and in range. */
    long last = -1;
    for (int i = 0; i < ITERS; i++) {
        long ticket = shmem_long_atomic_fetch_inc(&counter, 0);
        CHECK(ticket > last && ticket < (long)n * ITERS, "ticket %ld after %ld", ticket, last);
        last = ticket;
    }
    shmem_barrier_all();
    if (me == 0)
        CHECK(counter == (long)n * ITERS, "counter %ld, expected %ld", counter, (long)n * ITERS);

    int *x = shmem_malloc(3 * sizeof(int));
    long *z = shmem_malloc(2 * sizeof(long));
    double *d = shmem_malloc(sizeof(double));
    x[0] = 0, x[1] = 0, x[2] = 0;
    z[0] = -1, z[1] = 0;
    *d = 0.0;
    shmem_barrier_all();

    /* compare_swap: exactly one PE swaps 0 for its number. */
    int old = shmem_int_atomic_compare_swap(&x[0], 0, me + 1, 0);
    if (old == 0)
        shmem_long_atomic_inc(&wins, 0);
    else
        CHECK(old >= 1 && old <= n, "compare_swap saw %d", old);
    /* fetch_add: the sum of 1..n. */
    int before = shmem_int_atomic_fetch_add(&x[1], me + 1, 0);
    CHECK(before >= 0 && before < n * (n + 1) / 2, "fetch_add saw %d", before);
    shmem_int_atomic_add(&x[2], 2, 0);
    /* swap: the right neighbour's word held -1 and now holds this PE's number. */
    long was = shmem_long_atomic_swap(&z[0], me, right);
    CHECK(was == -1, "swap returned %ld", was);
    /* set, then fetch it back. */
    shmem_long_atomic_set(&z[1], 10 * me, right);
    shmem_double_atomic_set(d, 0.5 * me, right);
    shmem_barrier_all();
    if (me == 0) {
        CHECK(wins == 1, "%ld compare_swap winners", wins);
        CHECK(x[0] >= 1 && x[0] <= n, "compare_swap left %d", x[0]);
        CHECK(x[1] == n * (n + 1) / 2, "fetch_add total %d", x[1]);
        CHECK(x[2] == 2 * n, "add total %d", x[2]);
    }
    CHECK(z[0] == left, "swap: %ld, expected %d", z[0], left);
    CHECK(shmem_long_atomic_fetch(&z[1], me) == 10 * left, "fetch own: %ld", shmem_long_atomic_fetch(&z[1], me));
    CHECK(shmem_long_atomic_fetch(&z[1], right) == 10 * me, "fetch remote: %ld",
          shmem_long_atomic_fetch(&z[1], right));
    CHECK(shmem_double_atomic_fetch(d, right) == 0.5 * me, "double fetch: %g", shmem_double_atomic_fetch(d, right));
    CHECK(shmem_int_atomic_fetch(&x[1], 0) == n * (n + 1) / 2, "int fetch at PE 0");

    /* A lock around a non-atomic read-modify-write at PE 0. */
    for (int i = 0; i < LOCKED; i++) {
        shmem_set_lock(&lock);
        long v = shmem_long_g(&total, 0);
        shmem_long_p(&total, v + 1, 0);
        shmem_clear_lock(&lock);
    }
    shmem_barrier_all();
    if (me == 0)
        CHECK(total == (long)n * LOCKED, "locked total %ld, expected %ld", total, (long)n * LOCKED);
    /* test_lock: free now, so this PE gets it (0) and releases it. */
    if (me == 0) {
        CHECK(shmem_test_lock(&lock) == 0, "test_lock on a free lock");
        shmem_clear_lock(&lock);
    }
    shmem_barrier_all();

    shmem_free(x);
    shmem_free(z);
    shmem_free(d);
    if (me == 0)
        printf("atomics ok\n");
    shmem_finalize();
    return 0;
}
