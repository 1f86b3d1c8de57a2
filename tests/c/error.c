/* A deliberate error on PE 1 while the others wait in a barrier: the job must
 * end at once with a non-zero status and one line naming the function.
 * argv[1]: "pe" (shmem_long_p to PE 99) or "stack" (to a stack address). */
#include <shmem.h>
#include <stdio.h>
#include <string.h>

static long target;

int main(int argc, char **argv) {
    shmem_init();
    int me = shmem_my_pe(), n = shmem_n_pes();
    long on_stack = 0;
    if (me == 1 % n) {
        if (argc > 1 && strcmp(argv[1], "stack") == 0)
            shmem_long_p(&on_stack, 1, 0);
        else
            shmem_long_p(&target, 1, 99);
        shmem_quiet();
        fprintf(stderr, "error: PE %d: the bad shmem_long_p returned\n", me);
    }
    shmem_barrier_all();
    printf("error: PE %d passed the barrier (%ld)\n", me, on_stack);
    shmem_finalize();
    return 0;
}
