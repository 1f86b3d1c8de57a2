/* Progress at the origin (OpenSHMEM 1.5 section 4.1): a put, a signal and
 * a non-fetching atomic, on a context and on the default context, reach PE
 * 1 while PE 0 sleeps 2 s without another OpenSHMEM call; PE 1's waits for
 * all of them end within 50 ms (or the milliseconds given as the first
 * argument: the Soft-RoCE guest, emulated, passes 500). Then a private context's put is complete
 * after shmem_barrier_all, as users of other libraries expect. */
#define _POSIX_C_SOURCE 200809L
#include <shmem.h>
#include <stdint.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

static int me, n;
static long on_ctx, on_default, counter;
static uint64_t sig;
static long block[1024];

#include "check.h"

static double now(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec + 1e-9 * t.tv_nsec;
}

int main(int argc, char **argv) {
    shmem_init();
    me = shmem_my_pe();
    n = shmem_n_pes();
    CHECK(n == 2, "run at 2 PEs");
    double limit = (argc > 1 ? atof(argv[1]) : 50.0) / 1e3;
    shmem_ctx_t ctx;
    CHECK(shmem_ctx_create(0, &ctx) == 0, "ctx_create");
    shmem_barrier_all();
    if (me == 0) {
        shmem_ctx_long_p(ctx, &on_ctx, 42, 1);
        shmem_long_p(&on_default, 43, 1);
        shmem_ctx_long_atomic_add(ctx, &counter, 5, 1);
        shmem_signal_set(&sig, 7, 1);
        sleep(2);
    } else {
        double start = now();
        shmem_long_wait_until(&on_ctx, SHMEM_CMP_EQ, 42);
        shmem_long_wait_until(&on_default, SHMEM_CMP_EQ, 43);
        shmem_long_wait_until(&counter, SHMEM_CMP_EQ, 5);
        shmem_signal_wait_until(&sig, SHMEM_CMP_EQ, 7);
        double took = now() - start;
        CHECK(took < limit, "the origin's operations took %.1f ms to arrive while it slept (limit %.0f ms)", 1e3 * took,
              1e3 * limit);
    }
    shmem_ctx_destroy(ctx);
    shmem_barrier_all();

    shmem_ctx_t mine;
    CHECK(shmem_ctx_create(SHMEM_CTX_PRIVATE, &mine) == 0, "private ctx_create");
    for (int round = 1; round <= 3; round++) {
        if (me == 0)
            for (int i = 0; i < 1024; i++) shmem_ctx_long_p(mine, &block[i], round * 10000 + i, 1);
        shmem_barrier_all();
        if (me == 1)
            for (int i = 0; i < 1024; i++) CHECK(block[i] == round * 10000 + i, "round %d: block[%d] = %ld after the barrier", round, i, block[i]);
        shmem_barrier_all();
    }
    shmem_ctx_destroy(mine);
    if (me == 0) printf("progress ok\n");
    shmem_finalize();
    return 0;
}
