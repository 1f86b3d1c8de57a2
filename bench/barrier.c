/* A C barrier's latency, for bench/compare_races.sh: `barrier [N]` runs
 * 200 barriers to warm up, then times N (default 20000) and prints
 * "barrier <microseconds> us" on PE 0. */
#include <shmem.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static double now(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

int main(int argc, char **argv) {
    int n = argc > 1 ? atoi(argv[1]) : 20000;
    shmem_init();
    for (int i = 0; i < 200; i++)
        shmem_barrier_all();
    double t0 = now();
    for (int i = 0; i < n; i++)
        shmem_barrier_all();
    double us = (now() - t0) / n * 1e6;
    if (shmem_my_pe() == 0)
        printf("barrier %.3f us\n", us);
    shmem_finalize();
    return 0;
}
