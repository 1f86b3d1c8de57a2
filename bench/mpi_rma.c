/*
 * The peer of examples/bench: the same measurements, the same way, with MPI
 * RMA (passive target: MPI_Win_allocate + MPI_Win_lock_all, MPI_Put/MPI_Get +
 * MPI_Win_flush, MPI_Fetch_and_op / MPI_Compare_and_swap + MPI_Win_flush,
 * MPI_Barrier). Same sizes, same calibration (the iteration
 * count doubles until a batch lasts 10 ms; counts that several ranks must
 * share are decided by rank 0), same warm-up and median of 7 batches, same
 * output lines:
 *     <metric> <bytes> <value> <unit>
 *
 *   mpi_rma [--smoke] [--max BYTES] [--only-barrier]
 *   mpi_rma trivial          (MPI_Init + MPI_Finalize, for launch timing)
 */
#include <mpi.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define WINDOW 64
#define BATCHES 7

static int smoke;
static MPI_Win win;
static int rank, nranks;

#define BATCH_TARGET 0.010

static size_t clamp(size_t v, size_t lo, size_t hi) { return v < lo ? lo : v > hi ? hi : v; }

static int cmp(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

typedef void (*batch_fn)(size_t size, size_t iters, char *buf, int target);

/* How many iterations make a batch last BATCH_TARGET (at most cap). */
static size_t calibrate(batch_fn fn, size_t size, size_t cap, char *buf, int target) {
    if (smoke) return 2;
    for (size_t n = 1;; n = n * 2 > cap ? cap : n * 2) {
        double start = MPI_Wtime();
        fn(size, n, buf, target);
        if (MPI_Wtime() - start >= BATCH_TARGET || n >= cap) return n;
    }
}

/* One warm-up batch, then BATCHES timed ones; the median seconds per batch. */
static double timed(batch_fn fn, size_t size, size_t iters, char *buf, int target) {
    double samples[BATCHES];
    fn(size, iters, buf, target);
    for (int b = 0; b < BATCHES; b++) {
        double start = MPI_Wtime();
        fn(size, iters, buf, target);
        samples[b] = MPI_Wtime() - start;
    }
    qsort(samples, BATCHES, sizeof(double), cmp);
    return samples[BATCHES / 2];
}

static void put_lat_batch(size_t size, size_t iters, char *buf, int target) {
    for (size_t i = 0; i < iters; i++) {
        MPI_Put(buf, (int)size, MPI_BYTE, target, 0, (int)size, MPI_BYTE, win);
        MPI_Win_flush(target, win);
    }
}

static void get_lat_batch(size_t size, size_t iters, char *buf, int target) {
    for (size_t i = 0; i < iters; i++) {
        MPI_Get(buf, (int)size, MPI_BYTE, target, 0, (int)size, MPI_BYTE, win);
        MPI_Win_flush(target, win);
    }
}

static void stream_batch(size_t size, size_t windows, char *buf, int target) {
    for (size_t w = 0; w < windows; w++) {
        for (int j = 0; j < WINDOW; j++)
            MPI_Put(buf, (int)size, MPI_BYTE, target, 0, (int)size, MPI_BYTE, win);
        MPI_Win_flush(target, win);
    }
}

static void rate_batch(size_t size, size_t windows, char *buf, int target) {
    (void)size;
    for (size_t w = 0; w < windows; w++) {
        for (int j = 0; j < WINDOW; j++)
            MPI_Put(buf, 8, MPI_BYTE, target, (MPI_Aint)(8 * (j % 8)), 8, MPI_BYTE, win);
        MPI_Win_flush(target, win);
    }
}
/* Atomics on the first 8 bytes of the target's window (examples/bench's
 * fadd_lat and cswap_lat): one fetching atomic + flush per iteration. */
static void fadd_batch(size_t size, size_t iters, char *buf, int target) {
    (void)size;
    uint64_t one = 1, old;
    for (size_t i = 0; i < iters; i++) {
        MPI_Fetch_and_op(&one, &old, MPI_UINT64_T, target, 0, MPI_SUM, win);
        MPI_Win_flush(target, win);
    }
    buf[0] = (char)old;
}

static void cswap_batch(size_t size, size_t iters, char *buf, int target) {
    (void)size;
    uint64_t compare = 0, value = 1, old;
    for (size_t i = 0; i < iters; i++) {
        MPI_Compare_and_swap(&value, &compare, &old, MPI_UINT64_T, target, 0, win);
        MPI_Win_flush(target, win);
    }
    buf[0] = (char)old;
}

static void barrier_batch(size_t size, size_t iters, char *buf, int target) {
    (void)size; (void)buf; (void)target;
    for (size_t i = 0; i < iters; i++) MPI_Barrier(MPI_COMM_WORLD);
}

static void report(const char *metric, size_t bytes, double value, const char *unit) {
    printf("%s %zu %.4f %s\n", metric, bytes, value, unit);
    fflush(stdout);
}

int main(int argc, char **argv) {
    size_t max = 4u << 20;
    int only_barrier = 0, trivial = 0;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--smoke")) smoke = 1;
        else if (!strcmp(argv[i], "--only-barrier")) only_barrier = 1;
        else if (!strcmp(argv[i], "trivial")) trivial = 1;
        else if (!strcmp(argv[i], "--max") && i + 1 < argc) max = strtoull(argv[++i], NULL, 10);
        else { fprintf(stderr, "mpi_rma: unknown argument '%s'\n", argv[i]); return 2; }
    }
    MPI_Init(&argc, &argv);
    if (trivial) { MPI_Finalize(); return 0; }
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &nranks);
    if (nranks < 2) { fprintf(stderr, "mpi_rma: needs at least 2 ranks\n"); MPI_Abort(MPI_COMM_WORLD, 2); }

    char *base;
    MPI_Win_allocate((MPI_Aint)max, 1, MPI_INFO_NULL, MPI_COMM_WORLD, &base, &win);
    MPI_Win_lock_all(MPI_MODE_NOCHECK, win);
    char *buf = malloc(max);
    memset(buf, 1, max);

    if (!only_barrier) {
        for (size_t size = 8; size <= max; size *= 2) {
            if (smoke && size != 8 && size != 4096 && size != 65536) continue;
            size_t n;
            if (rank == 0) {
                n = calibrate(put_lat_batch, size, 1000000, buf, 1);
                report("put_lat", size, timed(put_lat_batch, size, n, buf, 1) * 1e6 / n, "us");
            }
            MPI_Barrier(MPI_COMM_WORLD);
            if (rank == 0) {
                n = calibrate(get_lat_batch, size, 1000000, buf, 1);
                report("get_lat", size, timed(get_lat_batch, size, n, buf, 1) * 1e6 / n, "us");
            }
            MPI_Barrier(MPI_COMM_WORLD);
            if (rank == 0) {
                n = calibrate(stream_batch, size, 100000, buf, 1);
                report("put_bw", size, (double)(size * WINDOW * n) / timed(stream_batch, size, n, buf, 1) / 1e6, "MB/s");
            }
            MPI_Barrier(MPI_COMM_WORLD);
            unsigned long windows = rank == 0 ? calibrate(stream_batch, size, 100000, buf, 1) : 0;
            MPI_Bcast(&windows, 1, MPI_UNSIGNED_LONG, 0, MPI_COMM_WORLD);
            double mine = 0, both = 0;
            if (rank < 2) mine = (double)(size * WINDOW * windows) / timed(stream_batch, size, windows, buf, 1 - rank) / 1e6;
            MPI_Reduce(&mine, &both, 1, MPI_DOUBLE, MPI_SUM, 0, MPI_COMM_WORLD);
            if (rank == 0) report("put_bibw", size, both, "MB/s");
            MPI_Barrier(MPI_COMM_WORLD);
        }
        if (rank == 0) {
            size_t windows = calibrate(rate_batch, 8, 1000000, buf, 1);
            report("msg_rate", 8, (double)(windows * WINDOW) / timed(rate_batch, 8, windows, buf, 1), "msg/s");
        }
        MPI_Barrier(MPI_COMM_WORLD);
        if (rank == 0) {
            size_t n = calibrate(fadd_batch, 8, 10000000, buf, 1);
            report("fadd_lat", 8, timed(fadd_batch, 8, n, buf, 1) * 1e6 / n, "us");
            n = calibrate(cswap_batch, 8, 10000000, buf, 1);
            report("cswap_lat", 8, timed(cswap_batch, 8, n, buf, 1) * 1e6 / n, "us");
        }
        MPI_Barrier(MPI_COMM_WORLD);
    }
    /* Every rank runs a 64-barrier probe; rank 0 sizes the batches from it. */
    double start = MPI_Wtime();
    barrier_batch(0, 64, buf, 0);
    double per = (MPI_Wtime() - start) / 64;
    unsigned long bi = smoke ? 2 : (unsigned long)clamp((size_t)(BATCH_TARGET / (per > 1e-9 ? per : 1e-9)), 64, 1000000);
    MPI_Bcast(&bi, 1, MPI_UNSIGNED_LONG, 0, MPI_COMM_WORLD);
    double t = timed(barrier_batch, 0, bi, buf, 0);
    if (rank == 0) {
        char metric[32];
        snprintf(metric, sizeof metric, "barrier_n%d", nranks);
        report(metric, 0, t * 1e6 / bi, "us");
    }
    MPI_Win_unlock_all(win);
    MPI_Win_free(&win);
    free(buf);
    MPI_Finalize();
    return 0;
}
