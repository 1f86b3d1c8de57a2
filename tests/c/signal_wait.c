/* Put-with-signal (SET to the next PE, ADD into PE 0), signal_wait_until and
 * signal_fetch; point-to-point waits and tests on a flag array at PE 0. */
#include <shmem.h>
#include <stdint.h>
#include <stdio.h>

#define N 32
#define MAXPES 64

static int me, n;
static long data[N];
static uint64_t sig;
static uint64_t arrivals;
static long slots[MAXPES];
static int flags[MAXPES];
static int evens[MAXPES];
static int never;

#include "check.h"

int main(void) {
    shmem_init();
    me = shmem_my_pe();
    n = shmem_n_pes();
    CHECK(n <= MAXPES, "at most %d PEs", MAXPES);
    int right = (me + 1) % n, left = (me - 1 + n) % n;

    /* put_signal SET: no barrier, the signal says the data is there. */
    long src[N];
    for (int i = 0; i < N; i++)
        src[i] = 10 * me + i;
    shmem_long_put_signal(data, src, N, &sig, 1, SHMEM_SIGNAL_SET, right);
    uint64_t seen = shmem_signal_wait_until(&sig, SHMEM_CMP_EQ, 1);
    CHECK(seen == 1, "signal_wait_until returned %llu", (unsigned long long)seen);
    for (int i = 0; i < N; i++)
        CHECK(data[i] == 10 * left + i, "data[%d] = %ld after the signal", i, data[i]);
    CHECK(shmem_signal_fetch(&sig) == 1, "signal_fetch %llu", (unsigned long long)shmem_signal_fetch(&sig));

    /* put_signal ADD: every PE adds 1 to PE 0's counter, putting into its own slot. */
    shmem_putmem_signal(&slots[me], &src[0], sizeof(long), &arrivals, 1, SHMEM_SIGNAL_ADD, 0);
    if (me == 0) {
        seen = shmem_signal_wait_until(&arrivals, SHMEM_CMP_GE, (uint64_t)n);
        CHECK(seen == (uint64_t)n, "arrivals %llu", (unsigned long long)seen);
        for (int p = 0; p < n; p++)
            CHECK(slots[p] == 10 * p, "slots[%d] = %ld with its signal", p, slots[p]);
    }
    shmem_barrier_all();

    /* Flags at PE 0: every PE sets its own; PE 0 waits for any, some, all. */
    CHECK(shmem_int_test(&never, SHMEM_CMP_NE, 0) == 0, "test on an unset flag");
    shmem_int_atomic_set(&flags[me], 1, 0);
    if (me % 2 == 0)
        shmem_int_p(&evens[me], 1, 0);
    shmem_quiet();
    if (me == 0) {
        size_t any = shmem_int_wait_until_any(flags, n, NULL, SHMEM_CMP_EQ, 1);
        CHECK(any < (size_t)n && flags[any] == 1, "wait_until_any returned %zu", any);
        size_t idx[MAXPES];
        size_t some = shmem_int_wait_until_some(flags, n, idx, NULL, SHMEM_CMP_EQ, 1);
        CHECK(some >= 1 && some <= (size_t)n, "wait_until_some returned %zu", some);
        for (size_t k = 0; k < some; k++)
            CHECK(idx[k] < (size_t)n && flags[idx[k]] == 1, "wait_until_some index %zu", idx[k]);
        shmem_int_wait_until_all(flags, n, NULL, SHMEM_CMP_EQ, 1);
        for (int p = 0; p < n; p++)
            CHECK(flags[p] == 1, "wait_until_all returned with flags[%d] = %d", p, flags[p]);
        /* status: skip the odd PEs, which never set evens[]. */
        int status[MAXPES];
        for (int p = 0; p < n; p++)
            status[p] = p % 2;
        shmem_int_wait_until_all(evens, n, status, SHMEM_CMP_EQ, 1);
        for (int p = 0; p < n; p += 2)
            CHECK(evens[p] == 1, "evens[%d] = %d", p, evens[p]);
        CHECK(shmem_int_test(&flags[n - 1], SHMEM_CMP_EQ, 1) == 1, "test on a set flag");
        CHECK(shmem_int_test_all(flags, n, NULL, SHMEM_CMP_GT, 0) == 1, "test_all");
        CHECK(shmem_int_test_any(evens, n, status, SHMEM_CMP_EQ, 0) == SIZE_MAX, "test_any of no match");
        shmem_int_wait_until(&flags[0], SHMEM_CMP_GE, 1);
    }
    shmem_barrier_all();
    if (me == 0)
        printf("signal_wait ok\n");
    shmem_finalize();
    return 0;
}
