/* A PE that leaves early while the others wait for it, the ways C
 * programs do: argv[1] picks how, argv[2] the status (or seconds).
 * "return": PE 1 returns the status from main; "exit": PE 1 calls
 * exit(status); "global_exit": PE 1 calls shmem_global_exit(status). The
 * others call shmem_barrier_all, which must never complete for them:
 * a PE past it prints "passed the barrier". "compute": PE 1 returns 0
 * at once, the others compute for the given seconds with no call that
 * needs PE 1, then finalize: a legal program, which must succeed. With
 * argv[3], the others compute that many seconds before their barrier
 * (PE 1 fails while they compute). */
#define _POSIX_C_SOURCE 200809L
#include <shmem.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static double now(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec + t.tv_nsec * 1e-9;
}

int main(int argc, char **argv) {
    const char *how = argc > 1 ? argv[1] : "return";
    int status = argc > 2 ? atoi(argv[2]) : 2;
    shmem_init();
    int me = shmem_my_pe();
    if (me == 1) {
        if (!strcmp(how, "return") || !strcmp(how, "compute"))
            return strcmp(how, "compute") ? status : 0;
        if (!strcmp(how, "exit"))
            exit(status);
        if (!strcmp(how, "global_exit"))
            shmem_global_exit(status);
    }
    if (!strcmp(how, "compute")) {
        double until = now() + status;
        volatile unsigned long x = 1;
        while (now() < until)
            x = x * 6364136223846793005UL + 1;
        printf("PE %d computed\n", me);
    } else {
        double until = now() + (argc > 3 ? atof(argv[3]) : 0);
        volatile unsigned long x = 1;
        while (now() < until)
            x = x * 6364136223846793005UL + 1;
        shmem_barrier_all();
        printf("PE %d passed the barrier\n", me);
    }
    shmem_finalize();
    return 0;
}
