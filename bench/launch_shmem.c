/* Launch benchmark, OpenSHMEM side (built with our oshcc): every PE times
 * its shmem_init, the slowest time is reduced to PE 0, which prints
 * "wireup <PEs> <us> us". bench/launch_mpi.c is the same program over MPI.
 *
 * It also prints "after-last <PEs> <us> us": from the moment the last PE
 * entered shmem_init to the moment the last one left it. On one machine
 * (namespace hosts share a kernel and its monotonic clock) that is the
 * wire-up proper, without the launcher's spread in starting processes. */
#include <shmem.h>
#include <stdio.h>
#include <time.h>

static double now_us(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec * 1e6 + t.tv_nsec / 1e3;
}

static double times[3], latest[3];

int main(void) {
    double start = now_us();
    shmem_init();
    double end = now_us();
    times[0] = end - start;
    times[1] = start;
    times[2] = end;
    shmem_double_max_reduce(SHMEM_TEAM_WORLD, latest, times, 3);
    if (shmem_my_pe() == 0) {
        printf("wireup %d %.0f us\n", shmem_n_pes(), latest[0]);
        printf("after-last %d %.0f us\n", shmem_n_pes(), latest[2] - latest[1]);
    }
    shmem_finalize();
    return 0;
}
