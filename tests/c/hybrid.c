/* A hybrid MPI + OpenSHMEM program: both libraries initialized and
 * finalized in the orders argv names, the PE number checked to equal the
 * MPI_COMM_WORLD rank, then work through both: a ring of puts, an MPI
 * allreduce of what arrived, and a shmem reduction of the same.
 *
 *   hybrid mpi-first|shmem-first mpi-last|shmem-last [print]
 *
 * With "print", every rank first prints what each library says of it and
 * the MPI_Allreduce of every rank's number, "rank R of N (PE P of M) sum
 * S", the line a program run as a silent singleton would get wrong.
 * Prints "hybrid ok" on PE 0 when every check held; exits 1 otherwise. */
#include <mpi.h>
#include <shmem.h>
#include <stdio.h>
#include <string.h>

static long got = -1;
static long sum_src, sum_dst;

int main(int argc, char **argv) {
    int shmem_first = argc > 1 && strcmp(argv[1], "shmem-first") == 0;
    int mpi_last = argc > 2 && strcmp(argv[2], "mpi-last") == 0;
    int print = argc > 3 && strcmp(argv[3], "print") == 0;
    if (shmem_first) shmem_init();
    MPI_Init(&argc, &argv);
    if (!shmem_first) shmem_init();

    int rank, size, bad = 0;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    int me = shmem_my_pe(), npes = shmem_n_pes();
    if (print) {
        int ranks = 0;
        MPI_Allreduce(&rank, &ranks, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
        printf("rank %d of %d (PE %d of %d) sum %d\n", rank, size, me, npes, ranks);
        fflush(stdout);
    }
    if (me != rank || npes != size) {
        fprintf(stderr, "PE %d of %d is MPI rank %d of %d\n", me, npes, rank, size);
        bad = 1;
    }
    /* OpenSHMEM: each PE puts its number to the next. */
    long mine = 100 + me;
    shmem_long_put(&got, &mine, 1, (me + 1) % npes);
    shmem_barrier_all();
    long want = 100 + (me + npes - 1) % npes;
    if (got != want) {
        fprintf(stderr, "PE %d: got %ld from the ring, want %ld\n", me, got, want);
        bad = 1;
    }
    /* MPI: the sum of what every rank received is the sum of every number. */
    long total = 0, expect = 0;
    for (int p = 0; p < size; p++) expect += 100 + p;
    MPI_Allreduce(&got, &total, 1, MPI_LONG, MPI_SUM, MPI_COMM_WORLD);
    if (total != expect) {
        fprintf(stderr, "rank %d: MPI_Allreduce gave %ld, want %ld\n", rank, total, expect);
        bad = 1;
    }
    /* And OpenSHMEM agrees. */
    sum_src = got;
    shmem_long_sum_reduce(SHMEM_TEAM_WORLD, &sum_dst, &sum_src, 1);
    if (sum_dst != expect) {
        fprintf(stderr, "PE %d: shmem sum %ld, want %ld\n", me, sum_dst, expect);
        bad = 1;
    }
    int any_bad = 0;
    MPI_Allreduce(&bad, &any_bad, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
    if (mpi_last) {
        shmem_finalize();
        MPI_Finalize();
    } else {
        MPI_Finalize();
        shmem_finalize();
    }
    if (me == 0 && !any_bad) printf("hybrid ok\n");
    return any_bad;
}
