/* Team collectives on SHMEM_TEAM_WORLD (reductions, broadcasts, fcollect,
 * collect, alltoall), a strided team of the even PEs with a reduction on it,
 * and the deprecated active-set forms with pSync arrays. */
#include <shmem.h>
#include <stdio.h>

#define N 16

static int me, n;
static long lsrc[N], ldst[N];
static int isrc[N], idst[N];
static double dsrc[N], ddst[N];
static long pSync_red[SHMEM_REDUCE_SYNC_SIZE];
static long pSync_bar[SHMEM_BARRIER_SYNC_SIZE];
static long pSync_bc[SHMEM_BCAST_SYNC_SIZE];
static long pSync_odd[SHMEM_REDUCE_SYNC_SIZE];
static long pWrk[N / 2 + 1 + SHMEM_REDUCE_MIN_WRKDATA_SIZE];

#include "check.h"

int main(void) {
    shmem_init();
    me = shmem_my_pe();
    n = shmem_n_pes();
    CHECK(shmem_team_my_pe(SHMEM_TEAM_WORLD) == me && shmem_team_n_pes(SHMEM_TEAM_WORLD) == n, "world team");

    /* Reductions. */
    for (int i = 0; i < N; i++) {
        lsrc[i] = me + i;
        isrc[i] = me * i;
        dsrc[i] = 0.5 * me + i;
    }
    CHECK(shmem_long_sum_reduce(SHMEM_TEAM_WORLD, ldst, lsrc, N) == 0, "long_sum_reduce failed");
    CHECK(shmem_int_max_reduce(SHMEM_TEAM_WORLD, idst, isrc, N) == 0, "int_max_reduce failed");
    CHECK(shmem_double_sum_reduce(SHMEM_TEAM_WORLD, ddst, dsrc, N) == 0, "double_sum_reduce failed");
    for (int i = 0; i < N; i++) {
        CHECK(ldst[i] == (long)n * (n - 1) / 2 + (long)n * i, "long sum [%d] = %ld", i, ldst[i]);
        CHECK(idst[i] == (n - 1) * i, "int max [%d] = %d", i, idst[i]);
        CHECK(ddst[i] == 0.25 * n * (n - 1) + (double)n * i, "double sum [%d] = %g", i, ddst[i]);
    }
    /* In place. A collective may write a PE's dest as soon as any PE enters
     * it, so every dest is ready (written and read locally) before a barrier. */
    for (int i = 0; i < N; i++)
        lsrc[i] = 1;
    shmem_barrier_all();
    CHECK(shmem_long_sum_reduce(SHMEM_TEAM_WORLD, lsrc, lsrc, N) == 0, "in-place reduce failed");
    CHECK(lsrc[0] == n && lsrc[N - 1] == n, "in-place sum %ld", lsrc[0]);

    /* Broadcasts: from the last PE (bytes) and from PE 0 (longs); the root's dest is written too. */
    int root = n - 1;
    for (int i = 0; i < N; i++) {
        isrc[i] = 1000 * me + i;
        idst[i] = -1;
        lsrc[i] = 7 * me + i;
        ldst[i] = -1;
    }
    shmem_barrier_all();
    CHECK(shmem_broadcastmem(SHMEM_TEAM_WORLD, idst, isrc, sizeof isrc, root) == 0, "broadcastmem failed");
    CHECK(shmem_long_broadcast(SHMEM_TEAM_WORLD, ldst, lsrc, N, 0) == 0, "long_broadcast failed");
    for (int i = 0; i < N; i++) {
        CHECK(idst[i] == 1000 * root + i, "broadcastmem [%d] = %d", i, idst[i]);
        CHECK(ldst[i] == i, "long_broadcast [%d] = %ld", i, ldst[i]);
    }

    /* fcollect, collect (PE p gives p + 1 elements), alltoall (2 per pair). */
    long *all = shmem_malloc(N * n * sizeof(long));
    for (int i = 0; i < N; i++)
        lsrc[i] = 100 * me + i;
    CHECK(shmem_long_fcollect(SHMEM_TEAM_WORLD, all, lsrc, N) == 0, "fcollect failed");
    for (int p = 0; p < n; p++)
        for (int i = 0; i < N; i++)
            CHECK(all[p * N + i] == 100 * p + i, "fcollect [%d][%d] = %ld", p, i, all[p * N + i]);
    shmem_barrier_all();
    CHECK(shmem_long_collect(SHMEM_TEAM_WORLD, all, lsrc, me + 1) == 0, "collect failed");
    for (int p = 0, at = 0; p < n; at += ++p)
        for (int i = 0; i <= p; i++)
            CHECK(all[at + i] == 100 * p + i, "collect from %d [%d] = %ld", p, i, all[at + i]);
    long *to = shmem_malloc(2 * n * sizeof(long)), *from = shmem_malloc(2 * n * sizeof(long));
    for (int p = 0; p < n; p++)
        for (int i = 0; i < 2; i++)
            to[2 * p + i] = 1000 * me + 10 * p + i;
    CHECK(shmem_long_alltoall(SHMEM_TEAM_WORLD, from, to, 2) == 0, "alltoall failed");
    for (int p = 0; p < n; p++)
        for (int i = 0; i < 2; i++)
            CHECK(from[2 * p + i] == 1000 * p + 10 * me + i, "alltoall from %d [%d] = %ld", p, i, from[2 * p + i]);

    /* The even PEs as a team. */
    shmem_barrier_all();
    shmem_team_t evens;
    int size = (n + 1) / 2;
    CHECK(shmem_team_split_strided(SHMEM_TEAM_WORLD, 0, 2, size, NULL, 0, &evens) == 0, "split_strided failed");
    if (me % 2 == 0) {
        CHECK(evens != SHMEM_TEAM_INVALID, "even PE without the team");
        CHECK(shmem_team_n_pes(evens) == size && shmem_team_my_pe(evens) == me / 2, "team size %d, my pe %d",
              shmem_team_n_pes(evens), shmem_team_my_pe(evens));
        CHECK(shmem_team_translate_pe(evens, size - 1, SHMEM_TEAM_WORLD) == 2 * (size - 1), "translate_pe %d",
              shmem_team_translate_pe(evens, size - 1, SHMEM_TEAM_WORLD));
        lsrc[0] = me;
        CHECK(shmem_long_sum_reduce(evens, ldst, lsrc, 1) == 0, "reduce on the team failed");
        CHECK(ldst[0] == (long)size * (size - 1), "even sum %ld, expected %ld", ldst[0], (long)size * (size - 1));
        shmem_team_sync(evens);
        shmem_team_destroy(evens);
    } else {
        CHECK(evens == SHMEM_TEAM_INVALID, "odd PE in the even team");
        CHECK(shmem_team_translate_pe(SHMEM_TEAM_WORLD, me, evens) == -1, "translate into no team");
    }

    /* Deprecated active-set forms (shmem.h marks them deprecated, as it should). */
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wdeprecated-declarations"
    for (int i = 0; i < SHMEM_REDUCE_SYNC_SIZE; i++)
        pSync_red[i] = pSync_odd[i] = SHMEM_SYNC_VALUE;
    for (int i = 0; i < SHMEM_BARRIER_SYNC_SIZE; i++)
        pSync_bar[i] = SHMEM_SYNC_VALUE;
    for (int i = 0; i < SHMEM_BCAST_SYNC_SIZE; i++)
        pSync_bc[i] = SHMEM_SYNC_VALUE;
    for (int i = 0; i < N; i++)
        lsrc[i] = me * i, ldst[i] = -1;
    shmem_barrier_all(); /* every pSync is initialised before its first use */
    shmem_long_sum_to_all(ldst, lsrc, N, 0, 0, n, pWrk, pSync_red);
    for (int i = 0; i < N; i++)
        CHECK(ldst[i] == (long)n * (n - 1) / 2 * i, "sum_to_all [%d] = %ld", i, ldst[i]);
    shmem_barrier(0, 0, n, pSync_bar);
    for (int i = 0; i < N; i++)
        lsrc[i] = 3 * me + i, ldst[i] = -1;
    shmem_barrier(0, 0, n, pSync_bar);
    shmem_broadcast64(ldst, lsrc, N, 0, 0, 0, n, pSync_bc);
    for (int i = 0; i < N; i++)
        CHECK(ldst[i] == (me == 0 ? -1 : i), "broadcast64 [%d] = %ld (the root's dest is not written)", i, ldst[i]);
    /* An active set with a stride: the odd PEs (1, 3, ...), log2 stride 1. */
    shmem_barrier_all();
    if (me % 2 == 1) {
        lsrc[0] = me;
        shmem_long_sum_to_all(ldst, lsrc, 1, 1, 1, n / 2, pWrk, pSync_odd);
        CHECK(ldst[0] == (long)(n / 2) * (n / 2), "odd sum_to_all %ld", ldst[0]);
    }
#pragma GCC diagnostic pop
    shmem_sync_all();

    shmem_free(all);
    shmem_free(to);
    shmem_free(from);
    if (me == 0)
        printf("coll ok\n");
    shmem_finalize();
    return 0;
}
