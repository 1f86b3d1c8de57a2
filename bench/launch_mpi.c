/* Launch benchmark, MPI side (the peer; built with mpicc): every rank times
 * its MPI_Init, the slowest time is reduced to rank 0, which prints
 * "wireup <ranks> <us> us". bench/launch_shmem.c is the same program over
 * OpenSHMEM. */
#include <mpi.h>
#include <stdio.h>
#include <time.h>

static double now_us(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec * 1e6 + t.tv_nsec / 1e3;
}

int main(int argc, char **argv) {
    double start = now_us();
    MPI_Init(&argc, &argv);
    double init_us = now_us() - start, slowest_us = 0;
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    MPI_Reduce(&init_us, &slowest_us, 1, MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD);
    if (rank == 0)
        printf("wireup %d %.0f us\n", size, slowest_us);
    MPI_Finalize();
    return 0;
}
