/* Launch benchmark, OpenSHMEM side (built with our oshcc): every PE times
 * its shmem_init, the slowest time is reduced to PE 0, which prints
 * "wireup <PEs> <us> us". bench/launch_mpi.c is the same program over MPI. */
#include <shmem.h>
#include <stdio.h>
#include <time.h>

static double now_us(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec * 1e6 + t.tv_nsec / 1e3;
}

static double init_us, slowest_us;

int main(void) {
    double start = now_us();
    shmem_init();
    init_us = now_us() - start;
    shmem_double_max_reduce(SHMEM_TEAM_WORLD, &slowest_us, &init_us, 1);
    if (shmem_my_pe() == 0)
        printf("wireup %d %.0f us\n", shmem_n_pes(), slowest_us);
    shmem_finalize();
    return 0;
}
