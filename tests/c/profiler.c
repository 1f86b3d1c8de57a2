/* A profiling tool of the kind TAU and Score-P build on the profiling
 * interface: a shared library that defines five OpenSHMEM routines, counts
 * each call and does the work through pshmem_. It is preloaded
 * (LD_PRELOAD) or linked ahead of liboneside_shmem; the program it watches
 * is compiled with plain oshcc and knows nothing of it. At shmem_finalize
 * each PE prints one line of counts, and the profiling level that
 * shmem_pcontrol set. */
#include <pshmem.h>
#include <stdio.h>

static long putmem_calls, long_p_calls, fetch_add_calls, barrier_all_calls, pcontrol_calls;
static int level = 1;

void shmem_putmem(void *dest, const void *source, size_t nelems, int pe) {
    putmem_calls++;
    pshmem_putmem(dest, source, nelems, pe);
}

void shmem_long_p(long *dest, long value, int pe) {
    long_p_calls++;
    pshmem_long_p(dest, value, pe);
}

long shmem_long_atomic_fetch_add(long *dest, long value, int pe) {
    fetch_add_calls++;
    return pshmem_long_atomic_fetch_add(dest, value, pe);
}

void shmem_barrier_all(void) {
    barrier_all_calls++;
    pshmem_barrier_all();
}

void shmem_pcontrol(const int new_level, ...) {
    pcontrol_calls++;
    level = new_level;
    pshmem_pcontrol(new_level);
}

void shmem_finalize(void) {
    printf("profiler: PE %d: putmem %ld, long_p %ld, long_atomic_fetch_add %ld, barrier_all %ld, pcontrol %ld (level %d)\n",
           pshmem_my_pe(), putmem_calls, long_p_calls, fetch_add_calls, barrier_all_calls, pcontrol_calls, level);
    fflush(stdout);
    pshmem_finalize();
}
