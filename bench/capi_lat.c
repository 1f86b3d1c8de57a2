/* The C API's side of bench/compare_capi.sh: 8-byte put, get, fetch-add and
 * compare-and-swap latency through shmem.h, measured exactly as
 * examples/bench measures the Rust API (examples/bench/measure.rs, ops.rs):
 * PE 0 runs the op on PE 1's memory while PE 1 waits in a barrier; the
 * iteration count doubles until a batch lasts 10 ms (up to a cap); after a
 * warm-up batch, the figure is the median of 7 timed batches. Prints
 * "<metric> 8 <microseconds> us" lines like examples/bench.
 *
 *   oshcc -O2 -o capi_lat bench/capi_lat.c && oshrun -np 2 ./capi_lat
 */
#include <shmem.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#define BATCHES 7
#define BATCH_TARGET 0.010

static uint8_t buffer[8];
static uint64_t words[4];

typedef void (*op_fn)(size_t n);

static double now(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

static int by_value(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static void put_loop(size_t n) {
    static const uint8_t src[8] = {1, 1, 1, 1, 1, 1, 1, 1};
    for (size_t i = 0; i < n; i++) {
        shmem_putmem(buffer, src, sizeof src, 1);
        shmem_quiet();
    }
}

static void get_loop(size_t n) {
    uint8_t dst[8];
    for (size_t i = 0; i < n; i++) shmem_getmem(dst, buffer, sizeof dst, 1);
}

static void fadd_loop(size_t n) {
    for (size_t i = 0; i < n; i++) (void)shmem_uint64_atomic_fetch_add(&words[0], 1, 1);
}

static void cswap_loop(size_t n) {
    for (uint64_t i = 0; i < n; i++) (void)shmem_uint64_atomic_compare_swap(&words[1], i, i + 1, 1);
}

/* Calibrates, warms up, then returns the median microseconds per op. */
static double measure(op_fn op, size_t cap) {
    size_t n = 1;
    for (;;) {
        double start = now();
        op(n);
        if (now() - start >= BATCH_TARGET || n >= cap) break;
        n = n * 2 < cap ? n * 2 : cap;
    }
    op(n);
    double samples[BATCHES];
    for (int b = 0; b < BATCHES; b++) {
        double start = now();
        op(n);
        samples[b] = now() - start;
    }
    qsort(samples, BATCHES, sizeof samples[0], by_value);
    return samples[BATCHES / 2] * 1e6 / (double)n;
}

static void figure(const char *metric, op_fn op, size_t cap) {
    double us = 0;
    if (shmem_my_pe() == 0) us = measure(op, cap);
    shmem_barrier_all();
    if (shmem_my_pe() == 0) printf("%s 8 %.4f us\n", metric, us);
}

int main(void) {
    shmem_init();
    if (shmem_n_pes() < 2) {
        fprintf(stderr, "capi_lat: needs 2 PEs, e.g. oshrun -np 2 ./capi_lat\n");
        shmem_finalize();
        return 2;
    }
    figure("put_lat", put_loop, 1000000);
    figure("get_lat", get_loop, 1000000);
    figure("fadd_lat", fadd_loop, 10000000);
    figure("cswap_lat", cswap_loop, 10000000);
    shmem_finalize();
    return 0;
}
