/* A PE that dies of a fault, for the crash report's tests. argv[1]:
 * "segv" (a write through NULL two calls deep), "fpe" (an integer
 * division by zero), "abort", or "thread" (a NULL write in a thread the
 * program made). PE 1 faults; the others wait in a barrier. */
#include <pthread.h>
#include <shmem.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static volatile int zero = 0;

static void store(volatile long *where, long value) {
    *where = value;
}

static void fill(volatile long *table, int n) {
    for (int i = 0; i < n; i++)
        store(&table[i], i);
}

static void *in_thread(void *arg) {
    fill(arg, 4);
    return NULL;
}

int main(int argc, char **argv) {
    const char *mode = argc > 1 ? argv[1] : "segv";
    shmem_init();
    if (shmem_my_pe() == 1 % shmem_n_pes()) {
        if (!strcmp(mode, "segv")) {
            fill(NULL, 4);
        } else if (!strcmp(mode, "fpe")) {
            printf("crash: %d\n", 7 / zero);
        } else if (!strcmp(mode, "abort")) {
            abort();
        } else if (!strcmp(mode, "thread")) {
            pthread_t thread;
            pthread_create(&thread, NULL, in_thread, NULL);
            pthread_join(thread, NULL);
        }
    }
    shmem_barrier_all();
    shmem_finalize();
    return 0;
}
