/* Mistakes oshrun --debug finds, for its tests: argv[1] picks one.
 * "mismatch": the last PE reduces where the others broadcast.
 * "reuse": a reduction's dest is the next broadcast's dest, no barrier.
 * "bounds": a put runs past the end of a shmem_malloc'd array.
 * "global": a put runs past the end of a global array, into the next.
 * "fine": the reduction and broadcast with a barrier between. */
#include <shmem.h>
#include <stdio.h>
#include <string.h>

long x[4];
long after_x[4];

int main(int argc, char **argv) {
    const char *mistake = argc > 1 ? argv[1] : "fine";
    shmem_init();
    int me = shmem_my_pe(), n = shmem_n_pes();
    long *src = shmem_malloc(4 * sizeof(long));
    long *dst = shmem_malloc(4 * sizeof(long));
    for (int i = 0; i < 4; i++)
        src[i] = me;
    shmem_barrier_all();
    if (!strcmp(mistake, "mismatch")) {
        if (me == n - 1)
            shmem_long_sum_reduce(SHMEM_TEAM_WORLD, dst, src, 4);
        else
            shmem_long_broadcast(SHMEM_TEAM_WORLD, dst, src, 4, 0);
    } else if (!strcmp(mistake, "reuse") || !strcmp(mistake, "fine")) {
        shmem_long_sum_reduce(SHMEM_TEAM_WORLD, dst, src, 4);
        if (!strcmp(mistake, "fine"))
            shmem_barrier_all();
        shmem_long_broadcast(SHMEM_TEAM_WORLD, dst, src, 4, 0);
    } else if (!strcmp(mistake, "bounds")) {
        long eight[8] = {0};
        shmem_long_put(dst, eight, 8, (me + 1) % n);
    } else if (!strcmp(mistake, "global")) {
        long four[4] = {1, 2, 3, 4};
        shmem_long_put(&x[3], four, 4, (me + 1) % n);
    }
    shmem_barrier_all();
    shmem_free(dst);
    shmem_free(src);
    shmem_finalize();
    printf("misuse %s: PE %d done\n", mistake, me);
    return 0;
}
