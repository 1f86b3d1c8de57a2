/* What the growing heap costs, beside what it replaces (bench/compare_heap.sh
 * runs it under this tree and an earlier checkout, alternating):
 *
 * - "alloc_free <bytes> <us> us": one shmem_malloc + shmem_free of 8 B to
 *   1 MiB that does not grow the heap (a warm-up allocation grew it
 *   first), the median of 7 batches of 200;
 * - "grow <bytes> <us> us": one shmem_malloc of 8, 64 or 256 MiB that grows
 *   the heap by that much (then freed, which gives it back), the median
 *   of 5, and "faults <bytes> <us> us": the page faults of as much fresh
 *   anonymous memory, touched once (mmap + memset), the same way; the
 *   goal is grow <= faults + 100 us per peer.
 *
 *   oshcc -O2 -o heap_cost bench/heap_cost.c && oshrun -np 2 ./heap_cost
 */
#include <shmem.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>

static double now(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

static int by_value(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static double median(double *v, int n) {
    qsort(v, n, sizeof *v, by_value);
    return v[n / 2];
}

int main(void) {
    shmem_init();
    int me = shmem_my_pe();
    /* Grow the heap once past what the loop uses, and keep it. */
    void *keep = shmem_malloc(4 << 20);
    for (size_t bytes = 8; bytes <= (1 << 20); bytes *= 8) {
        double t[7];
        for (int b = 0; b < 7; b++) {
            shmem_barrier_all();
            double start = now();
            for (int i = 0; i < 200; i++)
                shmem_free(shmem_malloc(bytes));
            t[b] = (now() - start) / 200 * 1e6;
        }
        if (me == 0)
            printf("alloc_free %zu %.3f us\n", bytes, median(t, 7));
    }
    for (size_t mib = 8; mib <= 256; mib *= (mib == 8 ? 8 : 4)) {
        size_t bytes = mib << 20;
        double g[5], f[5];
        for (int r = 0; r < 5; r++) {
            shmem_barrier_all();
            double start = now();
            void *p = shmem_malloc(bytes);
            g[r] = (now() - start) * 1e6;
            if (p == NULL) {
                fprintf(stderr, "heap_cost: shmem_malloc(%zu) returned NULL\n", bytes);
                shmem_global_exit(1);
            }
            shmem_free(p);
            shmem_barrier_all();
            start = now();
            char *q = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
            memset(q, 1, bytes);
            f[r] = (now() - start) * 1e6;
            munmap(q, bytes);
        }
        if (me == 0) {
            printf("grow %zu %.1f us\n", bytes, median(g, 5));
            printf("faults %zu %.1f us\n", bytes, median(f, 5));
        }
    }
    shmem_free(keep);
    shmem_finalize();
    return 0;
}
