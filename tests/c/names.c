/* Programs written for other OpenSHMEMs build unchanged: the deprecated
 * <mpp/shmem.h> and <mpp/shmemx.h> and the extensions header <shmemx.h>
 * exist, and the standard routines are functions, not macros, so a program
 * may #define or #undef a standard name (as a suite's own compatibility
 * layer does), take a routine's address, and still reach the inline direct
 * path through a plain call. Built with -Wall -Werror: a redefined macro
 * fails the build. */
#include <mpp/shmem.h>
#include <mpp/shmemx.h>
#include <shmemx.h>
#include "check.h"

/* A program's own spelling of standard names, as real suites write them. */
#define shmem_int64_p(dest, value, pe) shmem_longlong_p((long long *)(dest), (value), (pe))
#define shmem_quiet() shmem_quiet()
#undef shmem_long_put
#undef shmem_long_atomic_fetch_add

static int me;
static long x[4];
static long y;
static long long z;

int main(void) {
    shmem_init();
    me = shmem_my_pe();
    int npes = shmem_n_pes(), next = (me + 1) % npes;
    void (*put)(long *, const long *, size_t, int) = shmem_long_put;
    long (*fadd)(long *, long, int) = shmem_long_atomic_fetch_add;
    long v[4] = {me, me + 1, me + 2, me + 3};
    put(x, v, 4, next);
    shmem_long_p(&y, 100 + me, next);
    shmem_int64_p(&z, 1000 + me, next);
    shmem_quiet();
    shmem_barrier_all();
    int prev = (me + npes - 1) % npes;
    for (int i = 0; i < 4; i++)
        CHECK(x[i] == prev + i, "x[%d] is %ld, want %d", i, x[i], prev + i);
    CHECK(y == 100 + prev, "y is %ld", y);
    CHECK(z == 1000 + prev, "z is %lld", z);
    shmem_barrier_all();
    long old = fadd(&y, 1, next);
    CHECK(old >= 100, "fetch_add through a pointer returned %ld", old);
    CHECK(shmem_long_g(&y, me) >= 100, "g of my own y");
    shmem_barrier_all();
    if (me == 0)
        printf("names ok\n");
    shmem_finalize();
    return 0;
}
