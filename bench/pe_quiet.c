/* What pe_quiet saves over quiet (OpenSHMEM 1.6): PE 0 puts 8 bytes to
 * every other PE, then completes only PE 1's put with shmem_pe_quiet, or
 * all of them with shmem_quiet, alternating batches of each; the others'
 * puts are completed outside the timed part. Prints the median
 * microseconds per iteration of each and their ratio. Run with 4 PEs over
 * TCP, where a quiet asks every peer written to for an acknowledgement.
 *
 *   oshcc -O2 -o pe_quiet bench/pe_quiet.c && ONESIDE_TRANSPORT=tcp oshrun -np 4 ./pe_quiet
 */
#define _POSIX_C_SOURCE 200809L
#include <shmem.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#define ITERS 2000
#define BATCHES 9

static long word;

static double now(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

static int by_value(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* One batch: puts to every PE, then the completion under test; returns us per iteration. */
static double batch(int n, int only_one) {
    const int first = 1;
    double busy = 0;
    for (int i = 0; i < ITERS; i++) {
        for (int pe = 1; pe < n; pe++) (shmem_long_p)(&word, i, pe);
        double start = now();
        if (only_one) shmem_pe_quiet(&first, 1);
        else (shmem_quiet)();
        busy += now() - start;
        if (only_one) (shmem_quiet)();
    }
    return busy * 1e6 / ITERS;
}

int main(void) {
    shmem_init();
    int me = shmem_my_pe(), n = shmem_n_pes();
    if (n < 3) {
        if (me == 0) fprintf(stderr, "pe_quiet: needs 3 or more PEs\n");
        shmem_global_exit(1);
    }
    if (me == 0) {
        double quiet[BATCHES], pe_quiet[BATCHES];
        batch(n, 0);
        for (int b = 0; b < BATCHES; b++) {
            quiet[b] = batch(n, 0);
            pe_quiet[b] = batch(n, 1);
        }
        qsort(quiet, BATCHES, sizeof quiet[0], by_value);
        qsort(pe_quiet, BATCHES, sizeof pe_quiet[0], by_value);
        printf("quiet %.3f us, pe_quiet of 1 of %d targets %.3f us: pe_quiet / quiet %.2f\n", quiet[BATCHES / 2], n - 1,
               pe_quiet[BATCHES / 2], pe_quiet[BATCHES / 2] / quiet[BATCHES / 2]);
    }
    shmem_barrier_all();
    shmem_finalize();
    return 0;
}
