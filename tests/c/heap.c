/* The symmetric heap: malloc, calloc, align, realloc, free; putmem/getmem and
 * typed put/get/p/g; shmem_ptr; shmem_addr_accessible. */
#include <shmem.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#define N 100

static int me, n;
static long global_var;

#include "check.h"

int main(void) {
    shmem_init();
    me = shmem_my_pe();
    n = shmem_n_pes();
    int right = (me + 1) % n, left = (me - 1 + n) % n;

    long *a = shmem_malloc(N * sizeof(long));
    int *zeros = shmem_calloc(N, sizeof(int));
    double *aligned = shmem_align(4096, N * sizeof(double));
    CHECK(a && zeros && aligned, "allocations %p %p %p", (void *)a, (void *)zeros, (void *)aligned);
    CHECK((uintptr_t)aligned % 4096 == 0, "shmem_align(4096) gave %p", (void *)aligned);
    for (int i = 0; i < N; i++)
        CHECK(zeros[i] == 0, "shmem_calloc element %d is %d", i, zeros[i]);
    CHECK(shmem_malloc(0) == NULL, "shmem_malloc(0) is not NULL");

    /* Large alignments are aligned on every PE and symmetric: each PE
     * tells its right neighbour where its object is, as an offset from a
     * symmetric object allocated before (every PE's heap base differs). */
    for (size_t align = 1 << 16; align <= (1 << 23); align <<= 1) {
        long *big = shmem_align(align, 64);
        CHECK(big != NULL && (uintptr_t)big % align == 0, "shmem_align(%zu) gave %p", align, (void *)big);
        long offset = (long)((char *)big - (char *)a), theirs;
        shmem_long_p(big, offset, right);
        shmem_barrier_all();
        theirs = *big;
        CHECK(theirs == offset, "shmem_align(%zu): offset %ld here, %ld on PE %d", align, offset, theirs, left);
        shmem_barrier_all();
        shmem_free(big);
    }

    /* putmem into the right neighbour, getmem from it. */
    long src[N], got[N];
    for (int i = 0; i < N; i++)
        src[i] = me * 1000 + i;
    shmem_putmem(a, src, sizeof src, right);
    shmem_barrier_all();
    for (int i = 0; i < N; i++)
        CHECK(a[i] == left * 1000 + i, "putmem: a[%d] = %ld, expected %d", i, a[i], left * 1000 + i);
    shmem_getmem(got, a, sizeof got, right);
    for (int i = 0; i < N; i++)
        CHECK(got[i] == me * 1000 + i, "getmem: got[%d] = %ld, expected %d", i, got[i], me * 1000 + i);

    /* Typed put/get, int and double, and single elements. */
    int isrc[N];
    for (int i = 0; i < N; i++)
        isrc[i] = -(me * 100 + i);
    for (int i = 0; i < N; i++)
        aligned[i] = me + i * 0.25;
    shmem_int_put(zeros, isrc, N, right);
    shmem_barrier_all();
    for (int i = 0; i < N; i++)
        CHECK(zeros[i] == -(left * 100 + i), "int_put: [%d] = %d", i, zeros[i]);
    double dgot[N];
    shmem_double_get(dgot, aligned, N, left);
    for (int i = 0; i < N; i++)
        CHECK(dgot[i] == left + i * 0.25, "double_get: [%d] = %g, expected %g", i, dgot[i], left + i * 0.25);
    shmem_barrier_all();
    shmem_double_p(&aligned[3], 0.5 + me, right);
    shmem_int_p(&zeros[7], 77 + me, right);
    shmem_barrier_all();
    CHECK(aligned[3] == 0.5 + left, "double_p: %g", aligned[3]);
    CHECK(zeros[7] == 77 + left, "int_p: %d", zeros[7]);
    CHECK(shmem_int_g(&zeros[7], right) == 77 + me, "int_g: %d", shmem_int_g(&zeros[7], right));
    CHECK(shmem_double_g(&aligned[3], left) == 0.5 + (left - 1 + n) % n, "double_g: %g",
          shmem_double_g(&aligned[3], left));

    /* realloc keeps the contents; the new part is usable remotely. */
    shmem_barrier_all();
    a = shmem_realloc(a, 2 * N * sizeof(long));
    CHECK(a != NULL, "shmem_realloc returned NULL");
    for (int i = 0; i < N; i++)
        CHECK(a[i] == left * 1000 + i, "realloc lost a[%d] = %ld", i, a[i]);
    shmem_long_p(&a[2 * N - 1], me, right);
    shmem_barrier_all();
    CHECK(a[2 * N - 1] == left, "put past the old size: %ld", a[2 * N - 1]);

    /* shmem_ptr: this PE's own address; a peer's, if mapped, reads its data. */
    CHECK(shmem_ptr(a, me) == a, "shmem_ptr(a, me) = %p, a = %p", shmem_ptr(a, me), (void *)a);
    long *peer = shmem_ptr(a, right);
    if (peer)
        CHECK(peer[0] == me * 1000, "through shmem_ptr to PE %d: %ld", right, peer[0]);

    /* shmem_addr_accessible: heap and globals are symmetric, the stack is not. */
    long on_stack = 0;
    CHECK(shmem_addr_accessible(a, right) == 1, "heap not accessible");
    CHECK(shmem_addr_accessible(&global_var, right) == 1, "global not accessible");
    CHECK(shmem_addr_accessible(&on_stack, right) == 0, "stack variable accessible");

    shmem_barrier_all();
    shmem_free(a);
    shmem_free(zeros);
    shmem_free(aligned);
    shmem_free(NULL);
    /* Freed space is reused and still symmetric. */
    long *again = shmem_malloc(N * sizeof(long));
    shmem_long_p(again, me, right);
    shmem_barrier_all();
    CHECK(*again == left, "after free: %ld", *again);
    shmem_free(again);

    if (me == 0)
        printf("heap ok\n");
    shmem_finalize();
    return 0;
}
