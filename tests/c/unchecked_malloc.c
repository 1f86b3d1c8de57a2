/* A program that does not check shmem_malloc, as ISx does: it asks for
 * more than the symmetric heap holds (1 TiB) and writes through the NULL
 * it gets. With an argument it checks the result instead and goes on. */
#include <shmem.h>
#include <stdio.h>

int main(int argc, char **argv) {
    shmem_init();
    volatile long *big = shmem_malloc((size_t)1 << 40);
    if (argc > 1) {
        if (shmem_my_pe() == 0)
            printf("unchecked_malloc: %s\n", big ? "allocated" : "NULL, as the specification says");
        shmem_finalize();
        return 0;
    }
    big[0] = 1;
    shmem_finalize();
    return 0;
}
