/* Messages a student reads, pinned by tests/capi.rs: argv[1] "early" calls
 * shmem_my_pe before shmem_init; "negative" puts to PE -1; "frees"
 * allocates three objects and frees two (for the profile's rows). */
#include <shmem.h>
#include <stdio.h>
#include <string.h>

static long x;

int main(int argc, char **argv) {
    const char *what = argc > 1 ? argv[1] : "";
    if (!strcmp(what, "early"))
        return shmem_my_pe();
    shmem_init();
    if (!strcmp(what, "negative"))
        shmem_long_p(&x, 1, -1);
    if (!strcmp(what, "frees")) {
        long *a = shmem_malloc(64), *b = shmem_malloc(64), *c = shmem_malloc(64);
        shmem_free(a);
        shmem_free(b);
        (void)c;
    }
    shmem_finalize();
    return 0;
}
