/* The program the profiler (profiler.c) watches: a known number of calls
 * of each routine it wraps, all to PEs whose memory is mapped over shared
 * memory, where shmem.h would do them inline. It checks its own results,
 * so stepping aside for the tool changes nothing but who sees the calls:
 * 3 putmem, 5 long_p, 7 long_atomic_fetch_add and 4 barrier_all per PE
 * (and the one in shmem_finalize is the library's own, not the program's). */
#include <shmem.h>

static int me, n;
static char text[8];
static long words[5];
static long counter;

#include "check.h"

int main(void) {
    shmem_init();
    me = shmem_my_pe();
    n = shmem_n_pes();
    int right = (me + 1) % n;
    shmem_pcontrol(2);
    for (int i = 0; i < 3; i++) shmem_putmem(text, "abcdefg", 8, right);
    for (int i = 0; i < 5; i++) shmem_long_p(&words[i], 10 * me + i, right);
    shmem_barrier_all();
    int left = (me + n - 1) % n;
    for (int i = 0; i < 5; i++) CHECK(words[i] == 10 * left + i, "words[%d] = %ld", i, words[i]);
    CHECK(text[0] == 'a' && text[6] == 'g', "text %s", text);
    shmem_barrier_all();
    long sum = 0;
    for (int i = 0; i < 7; i++) sum += shmem_long_atomic_fetch_add(&counter, 1, 0) >= 0;
    CHECK(sum == 7, "%ld fetches", sum);
    shmem_barrier_all();
    if (me == 0) CHECK(counter == 7L * n, "counter %ld of %ld", counter, 7L * n);
    shmem_barrier_all();
    shmem_pcontrol(1);
    shmem_finalize();
    return 0;
}
