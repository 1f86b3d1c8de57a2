/* Wire-up inside an MPI program: every rank times its MPI_Init, then its
 * shmem_init (oneside joining the job through the same launcher's PMI);
 * the slowest of each is reduced to rank 0, which prints
 * "wireup <ranks> mpi_init <us> shmem_init <us>". Built with
 * ONESIDE_CC=mpicc oshcc; run by bench/compare_wireup_mpi.sh. */
#include <mpi.h>
#include <shmem.h>
#include <stdio.h>
#include <time.h>

static double now_us(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec * 1e6 + t.tv_nsec / 1e3;
}

int main(int argc, char **argv) {
    double t0 = now_us();
    MPI_Init(&argc, &argv);
    double t1 = now_us();
    shmem_init();
    double t2 = now_us();
    double mine[2] = {t1 - t0, t2 - t1}, slowest[2];
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    MPI_Reduce(mine, slowest, 2, MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD);
    if (rank == 0)
        printf("wireup %d mpi_init %.0f shmem_init %.0f\n", size, slowest[0], slowest[1]);
    shmem_finalize();
    MPI_Finalize();
    return 0;
}
