/*
 * MPI peer for oneside's team collectives (examples/bench --only-coll): the
 * MPI collectives on MPI_COMM_WORLD, timed the way the OSU Micro-Benchmarks
 * time their collective tests (osu_barrier, osu_bcast, osu_allreduce,
 * osu_allgather, osu_allgatherv, osu_alltoall, and the OpenSHMEM ones):
 *
 *   - each call is timed on its own with MPI_Wtime; calls after the first
 *     SKIP are summed; data collectives are followed by an untimed
 *     MPI_Barrier (as OSU does), back-to-back barriers are not;
 *   - the figure is OSU's "Avg Latency(us)": the mean over the ranks of each
 *     rank's mean time per call (not the max over ranks);
 *   - iterations: 1000 after 200 warm-up calls up to 8 KiB (and for the
 *     barrier), 100 after 10 above, as OSU; but a size whose first 10
 *     warm-up calls show that its calls would take more than --budget
 *     seconds (1 s; the slowest rank decides) runs fewer: at least 10 timed
 *     after those 10, and the rest of the warm-up within a quarter of the
 *     budget. Quiet, only the largest sizes at 8 ranks hit it; under load it
 *     keeps a run within minutes.
 *
 * Output, on rank 0 only, one line per figure:
 *     <metric> <bytes> <value> us
 *   coll_barrier_lat 0       MPI_Barrier
 *   bcast_lat N              MPI_Bcast of N bytes from rank 0
 *   reduce_f64_sum_lat N     MPI_Allreduce, N/8 doubles, MPI_SUM
 *   reduce_i64_sum_lat N     MPI_Allreduce, N/8 int64_t, MPI_SUM
 *   reduce_f32_sum_lat N     MPI_Allreduce, N/4 floats, MPI_SUM (what
 *                            osu_oshm_reduce measures: shmem_float_sum_to_all)
 *   fcollect_lat N           MPI_Allgather, N bytes from each rank
 *   collect_lat N            MPI_Allgatherv, N bytes from each rank (equal
 *                            counts; OpenSHMEM's collect is an allgatherv)
 *   alltoall_lat N           MPI_Alltoall, N bytes per destination block
 * N runs over the powers of two from 8 to --max (1 MiB by default).
 *
 *   mpi_coll [--smoke] [--max BYTES] [--budget SECONDS]
 */
#include <mpi.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define LARGE 8192
#define ITERS_SMALL 1000
#define SKIP_SMALL 200
#define ITERS_LARGE 100
#define SKIP_LARGE 10
#define ITERS_MIN 10

enum op { BARRIER, BCAST, RED_F64, RED_I64, RED_F32, FCOLLECT, COLLECT, ALLTOALL };
static const char *const names[] = {
    "coll_barrier_lat", "bcast_lat", "reduce_f64_sum_lat", "reduce_i64_sum_lat",
    "reduce_f32_sum_lat", "fcollect_lat", "collect_lat", "alltoall_lat",
};

static int rank, nranks, smoke;
static double budget = 1.0;
static char *sendbuf, *recvbuf;
static int *counts, *displs;

static void call(enum op op, int bytes) {
    switch (op) {
    case BARRIER: MPI_Barrier(MPI_COMM_WORLD); break;
    case BCAST: MPI_Bcast(sendbuf, bytes, MPI_BYTE, 0, MPI_COMM_WORLD); break;
    case RED_F64: MPI_Allreduce(sendbuf, recvbuf, bytes / 8, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD); break;
    case RED_I64: MPI_Allreduce(sendbuf, recvbuf, bytes / 8, MPI_INT64_T, MPI_SUM, MPI_COMM_WORLD); break;
    case RED_F32: MPI_Allreduce(sendbuf, recvbuf, bytes / 4, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD); break;
    case FCOLLECT: MPI_Allgather(sendbuf, bytes, MPI_BYTE, recvbuf, bytes, MPI_BYTE, MPI_COMM_WORLD); break;
    case COLLECT:
        for (int i = 0; i < nranks; i++) { counts[i] = bytes; displs[i] = i * bytes; }
        MPI_Allgatherv(sendbuf, bytes, MPI_BYTE, recvbuf, counts, displs, MPI_BYTE, MPI_COMM_WORLD);
        break;
    case ALLTOALL: MPI_Alltoall(sendbuf, bytes, MPI_BYTE, recvbuf, bytes, MPI_BYTE, MPI_COMM_WORLD); break;
    }
}

/* n timed calls; returns this rank's summed seconds. */
static double run(enum op op, int bytes, int n) {
    double sum = 0;
    for (int i = 0; i < n; i++) {
        double t0 = MPI_Wtime();
        call(op, bytes);
        sum += MPI_Wtime() - t0;
        if (op != BARRIER) MPI_Barrier(MPI_COMM_WORLD);
    }
    return sum;
}

static void measure(enum op op, int bytes) {
    int large = bytes > LARGE && op != BARRIER;
    int iters = smoke ? 5 : large ? ITERS_LARGE : ITERS_SMALL;
    int skip = smoke ? 1 : large ? SKIP_LARGE : SKIP_SMALL;
    MPI_Barrier(MPI_COMM_WORLD);
    /* Warm-up: a probe whose slowest rank's time per call caps the counts. */
    int probe = skip < ITERS_MIN ? skip : ITERS_MIN;
    double warm = run(op, bytes, probe) / probe, slowest;
    MPI_Allreduce(&warm, &slowest, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
    int rest = skip - probe;
    if (!smoke && slowest * rest > budget / 4) rest = (int)(budget / 4 / slowest);
    if (!smoke && slowest * iters > budget) {
        iters = (int)(budget / slowest);
        if (iters < ITERS_MIN) iters = ITERS_MIN;
    }
    if (rest > 0) run(op, bytes, rest);
    double mean = run(op, bytes, iters) * 1e6 / iters, total = 0;
    MPI_Reduce(&mean, &total, 1, MPI_DOUBLE, MPI_SUM, 0, MPI_COMM_WORLD);
    if (rank == 0) {
        printf("%s %d %.4f us\n", names[op], bytes, total / nranks);
        fflush(stdout);
    }
}

int main(int argc, char **argv) {
    long max = 1 << 20;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--smoke")) smoke = 1;
        else if (!strcmp(argv[i], "--max") && i + 1 < argc) max = atol(argv[++i]);
        else if (!strcmp(argv[i], "--budget") && i + 1 < argc) budget = atof(argv[++i]);
        else { fprintf(stderr, "mpi_coll: unknown argument '%s'\n", argv[i]); return 2; }
    }
    if (max < 8 || max > (1L << 30)) { fprintf(stderr, "mpi_coll: --max must be in 8..2^30\n"); return 2; }
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &nranks);
    if ((long)nranks * max > (long)INT32_MAX) { fprintf(stderr, "mpi_coll: --max too large\n"); MPI_Abort(MPI_COMM_WORLD, 2); }

    size_t span = (size_t)max * (size_t)nranks;
    sendbuf = malloc(span);
    recvbuf = malloc(span);
    counts = malloc(sizeof(int) * (size_t)nranks);
    displs = malloc(sizeof(int) * (size_t)nranks);
    if (!sendbuf || !recvbuf || !counts || !displs) { fprintf(stderr, "mpi_coll: out of memory\n"); MPI_Abort(MPI_COMM_WORLD, 1); }
    /* Zeros: exact in every type, no overflow, no denormals. */
    memset(sendbuf, 0, span);
    memset(recvbuf, 0, span);

    measure(BARRIER, 0);
    for (enum op op = BCAST; op <= ALLTOALL; op++) {
        for (long bytes = 8; bytes <= max; bytes *= 2) {
            if (smoke && bytes != 8 && bytes != 4096 && bytes != 65536) continue;
            measure(op, (int)bytes);
        }
    }
    free(sendbuf); free(recvbuf); free(counts); free(displs);
    MPI_Finalize();
    return 0;
}
