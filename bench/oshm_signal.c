/*
 * Peer of oneside's put-with-signal latency, for OpenSHMEM 1.4 (Open MPI's
 * oshmem), which has no shmem_put_signal: the emulation is a put, a fence,
 * then an atomic set of a signal word at the target, which waits for the
 * signal with shmem_long_wait_until and answers the same way (ping-pong,
 * 2 PEs). The signal carries a running count, so it never needs resetting;
 * the receiver also checks that the payload's last byte arrived before the
 * signal (the fence's promise) and counts violations on stderr.
 *
 * Same method as bench/mpi_rma.c: the iteration count doubles until a batch
 * lasts 10 ms (PE 0 decides and tells PE 1), one warm-up batch, then the
 * median of 7 batches. Prints half the round trip:
 *     put_signal_lat <bytes> <us> us
 *
 *   oshrun -np 2 oshm_signal [--smoke]
 */
#include <shmem.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define BATCHES 7
#define BATCH_TARGET 0.010
#define CAP 1000000L
#define MAXSIZE 65536

static const size_t sizes[] = {8, 4096, 65536};

static long signal_word;   /* symmetric: bumped by the peer, one per message */
static long shared;        /* symmetric: PE 0's decisions, read by PE 1 */
static char *dst;          /* symmetric payload target */
static char *src;          /* local payload source */
static int me, peer, smoke;
static long sent, received, violations;

static double now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

static int cmp(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* PE 0's value of v, on both PEs. */
static long share(long v) {
    if (me == 0) shmem_long_p(&shared, v, peer);
    shmem_barrier_all();
    long r = me == 0 ? v : shared;
    shmem_barrier_all();
    return r;
}

static void signal_put(size_t size) {
    src[size - 1] = (char)++sent;
    shmem_putmem(dst, src, size, peer);
    shmem_fence();
    shmem_long_atomic_set(&signal_word, sent, peer);
}

static void signal_wait(size_t size) {
    shmem_long_wait_until(&signal_word, SHMEM_CMP_GE, ++received);
    if (dst[size - 1] != (char)received) violations++;
}

/* n round trips on both PEs; the seconds they took. */
static double batch(size_t size, long n) {
    shmem_barrier_all();
    double start = now();
    for (long i = 0; i < n; i++) {
        if (me == 0) { signal_put(size); signal_wait(size); }
        else { signal_wait(size); signal_put(size); }
    }
    return now() - start;
}

static long calibrate(size_t size) {
    if (smoke) return 2;
    for (long n = 1;; n = n * 2 > CAP ? CAP : n * 2) {
        double t = batch(size, n);
        if (share(t >= BATCH_TARGET || n >= CAP)) return n;
    }
}

/* One warm-up batch, then BATCHES timed ones; PE 0's median seconds per batch. */
static double timed(size_t size, long n) {
    double samples[BATCHES];
    batch(size, n);
    for (int b = 0; b < BATCHES; b++) samples[b] = batch(size, n);
    qsort(samples, BATCHES, sizeof(double), cmp);
    return samples[BATCHES / 2];
}

int main(int argc, char **argv) {
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--smoke")) smoke = 1;
        else { fprintf(stderr, "oshm_signal: unknown argument '%s'\n", argv[i]); return 2; }
    }
    shmem_init();
    me = shmem_my_pe();
    if (shmem_n_pes() != 2) {
        if (me == 0) fprintf(stderr, "oshm_signal: needs exactly 2 PEs\n");
        shmem_global_exit(2);
    }
    peer = 1 - me;
    dst = shmem_malloc(MAXSIZE);
    src = malloc(MAXSIZE);
    memset(dst, 0, MAXSIZE);
    memset(src, 1, MAXSIZE);
    shmem_barrier_all();

    for (size_t k = 0; k < sizeof sizes / sizeof sizes[0]; k++) {
        long n = calibrate(sizes[k]);
        double t = timed(sizes[k], n);
        if (me == 0) {
            printf("put_signal_lat %zu %.4f us\n", sizes[k], t * 1e6 / n / 2);
            fflush(stdout);
        }
    }
    if (violations) fprintf(stderr, "oshm_signal: PE %d saw %ld signals before their data\n", me, violations);
    shmem_barrier_all();
    shmem_free(dst);
    free(src);
    shmem_finalize();
    return violations != 0;
}
