/* Run without oshrun: one PE, whose puts, atomics and collectives are local. */
#include <shmem.h>
#include <stdio.h>

static long box;

int main(void) {
    shmem_init();
    int me = shmem_my_pe(), n = shmem_n_pes();
    long *heap = shmem_malloc(4 * sizeof(long));
    shmem_long_p(&box, 42, 0);
    heap[0] = 5;
    long before = shmem_long_atomic_fetch_add(heap, 2, 0);
    shmem_barrier_all();
    long sum = 0;
    shmem_long_sum_reduce(SHMEM_TEAM_WORLD, &heap[1], &heap[0], 1);
    sum = heap[1];
    if (me != 0 || n != 1 || box != 42 || before != 5 || sum != 7) {
        fprintf(stderr, "singleton: me %d n %d box %ld fetch_add %ld sum %ld\n", me, n, box, before, sum);
        shmem_global_exit(1);
    }
    shmem_free(heap);
    printf("singleton ok: %d of %d\n", me, n);
    shmem_finalize();
    return 0;
}
