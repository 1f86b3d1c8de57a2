/* The direct paths of shmem.h (header_direct.h): the table the library
 * publishes agrees with shmem_ptr about which PEs are mapped (all of them
 * over shared memory, this PE alone over tcp); puts, gets and atomics done
 * inline and the same calls made through the library (the parenthesized
 * names skip the macros) land on the same words; after shmem_finalize the
 * table is empty. */
#include <shmem.h>
#include <stdlib.h>
#include <string.h>

static int me, n;
static long global_word;
static int global_ints[4];

#include "check.h"

int main(void) {
    shmem_init();
    me = shmem_my_pe();
    n = shmem_n_pes();
    const char *transport = getenv("ONESIDE_TRANSPORT");
    int shm = transport && strcmp(transport, "shm") == 0;
    long *heap_words = shmem_calloc(n, sizeof(long));

    CHECK(oneside_direct.n_pes == n, "table has %d PEs of %d", oneside_direct.n_pes, n);
    for (int pe = 0; pe < n; pe++) {
        int mapped = oneside_direct.bases[pe] != NULL;
        CHECK(mapped == (shmem_ptr(heap_words, pe) != NULL), "PE %d: table and shmem_ptr disagree", pe);
        CHECK(mapped == (pe == me || shm), "PE %d mapped %d over %s", pe, mapped, transport ? transport : "?");
    }
    CHECK(oneside_direct.quiet_is_fence == (shm || n == 1), "quiet_is_fence %d", oneside_direct.quiet_is_fence);

    /* Every PE adds to PE 0's words half inline, half through the library. */
    for (int i = 0; i < 100; i++) {
        shmem_long_atomic_add(&global_word, 1, 0);
        (shmem_long_atomic_add)(&global_word, 1, 0);
        shmem_long_atomic_fetch_inc(&heap_words[me], 0);
        (shmem_long_atomic_fetch_inc)(&heap_words[me], 0);
    }
    int right = (me + 1) % n;
    int mine[2] = {me + 10, me + 20};
    shmem_int_put(&global_ints[0], mine, 1, right);
    (shmem_int_put)(&global_ints[1], &mine[1], 1, right);
    shmem_int_p(&global_ints[2], me + 30, right);
    shmem_putmem(&global_ints[3], &mine[0], sizeof(int), right);
    shmem_quiet();
    shmem_barrier_all();

    if (me == 0) {
        CHECK(global_word == 200L * n, "global_word %ld", global_word);
        for (int pe = 0; pe < n; pe++) CHECK(heap_words[pe] == 200, "heap_words[%d] %ld", pe, heap_words[pe]);
    }
    int left = (me - 1 + n) % n;
    CHECK(global_ints[0] == left + 10 && global_ints[1] == left + 20 && global_ints[2] == left + 30 &&
              global_ints[3] == left + 10,
          "global_ints %d %d %d %d from PE %d", global_ints[0], global_ints[1], global_ints[2], global_ints[3], left);
    int got[2];
    shmem_int_get(got, &global_ints[0], 2, right);
    CHECK(got[0] == me + 10 && got[1] == me + 20, "get %d %d", got[0], got[1]);
    CHECK(shmem_int_g(&global_ints[2], right) == me + 30, "g");
    CHECK((shmem_int_g)(&global_ints[2], right) == me + 30, "library g");
    CHECK(shmem_long_atomic_fetch(&global_word, 0) == 200L * n, "fetch");
    shmem_barrier_all();
    long old = shmem_long_atomic_compare_swap(&heap_words[me], 200, 7, 0);
    CHECK(old == 200, "compare_swap saw %ld", old);
    shmem_barrier_all();
    if (me == 0)
        for (int pe = 0; pe < n; pe++) CHECK(heap_words[pe] == 7, "after cswap heap_words[%d] %ld", pe, heap_words[pe]);

    shmem_free(heap_words);
    shmem_finalize();
    CHECK(oneside_direct.n_pes == 0, "table still has %d PEs after shmem_finalize", oneside_direct.n_pes);
    if (me == 0) printf("direct ok\n");
    return 0;
}
