/* Hangs on purpose, for oshrun --hang-timeout's tests: argv[1] picks the
 * bug. "wait": PE 0 waits for a word nobody writes while the others
 * finalize. "cycle": PEs 0 and 1 each wait for a word only the other
 * would write after its own wait. "die": the last PE kills itself while
 * the others wait for it in shmem_barrier_all. "heap": PE 0 waits for
 * element 2 of a shmem_calloc'd array nobody writes. */
#define _POSIX_C_SOURCE 200809L
#include <shmem.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

static long flag;

int main(int argc, char **argv) {
    const char *bug = argc > 1 ? argv[1] : "wait";
    shmem_init();
    int me = shmem_my_pe(), n = shmem_n_pes();
    if (!strcmp(bug, "wait") && me == 0) {
        shmem_long_wait_until(&flag, SHMEM_CMP_EQ, 1);
    } else if (!strcmp(bug, "cycle") && me < 2) {
        shmem_long_wait_until(&flag, SHMEM_CMP_EQ, 1);
        shmem_long_p(&flag, 1, 1 - me);
    } else if (!strcmp(bug, "heap")) {
        long *flags = shmem_calloc(4, sizeof(long));
        if (me == 0)
            shmem_long_wait_until(&flags[2], SHMEM_CMP_EQ, 1);
        shmem_barrier_all();
    } else if (!strcmp(bug, "die")) {
        if (me == n - 1) {
            struct timespec pause = {1, 500000000};
            nanosleep(&pause, NULL);
            raise(SIGKILL);
        }
        shmem_barrier_all();
    } else if (!strcmp(bug, "poll")) {
        /* PE 0 polls with tests for a word nobody writes; the others wait
         * for it in a barrier. */
        if (me == 0)
            while (!shmem_long_test(&flag, SHMEM_CMP_EQ, 1))
                ;
        shmem_barrier_all();
    }
    shmem_finalize();
    return 0;
}
