/* The course's 1-D heat stencil, race-free (a barrier after the ghost
 * puts and after the update): the C course program of
 * bench/compare_races.sh. `heat [CELLS [STEPS]]` per PE (default 100000,
 * 100); prints the first cell of PE 0 so the work cannot be skipped.
 */
#include <shmem.h>
#include <stdio.h>
#include <stdlib.h>

int main(int argc, char **argv) {
    long cells = argc > 1 ? atol(argv[1]) : 100000;
    int steps = argc > 2 ? atoi(argv[2]) : 100;
    shmem_init();
    int me = shmem_my_pe(), n = shmem_n_pes();
    int left = (me + n - 1) % n, right = (me + 1) % n;
    double *u = shmem_calloc(cells + 2, sizeof(double));
    double *v = shmem_calloc(cells + 2, sizeof(double));
    if (me == 0)
        u[1] = 100.0;
    shmem_barrier_all();
    for (int step = 0; step < steps; step++) {
        shmem_double_put(&u[cells + 1], &u[1], 1, left);
        shmem_double_put(&u[0], &u[cells], 1, right);
        shmem_barrier_all();
        for (long i = 1; i <= cells; i++)
            v[i] = u[i] + 0.25 * (u[i - 1] - 2 * u[i] + u[i + 1]);
        shmem_barrier_all();
        for (long i = 1; i <= cells; i++)
            u[i] = v[i];
    }
    shmem_barrier_all();
    if (me == 0)
        printf("u[1] = %f\n", u[1]);
    shmem_free(u);
    shmem_free(v);
    shmem_finalize();
    return 0;
}
