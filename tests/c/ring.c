/* The C program of README and the guide: every PE puts its number into the next PE's
 * symmetric global with shmem_long_p; after the barrier each holds its left
 * neighbour's number. Checks a zero-initialised (.bss) and an initialised
 * (.data) global, and a global array. */
#include <shmem.h>
#include <stdio.h>

static long inbox;           /* .bss */
long labelled = -1;          /* .data */
static int seen[4] = {7, 7, 7, 7};

int main(void) {
    shmem_init();
    int me = shmem_my_pe(), n = shmem_n_pes();
    int right = (me + 1) % n;
    long left = (me - 1 + n) % n;

    shmem_long_p(&inbox, me, right);
    shmem_long_p(&labelled, 100 + me, right);
    shmem_int_p(&seen[me % 4], me, right);
    shmem_barrier_all();

    if (inbox != left || labelled != 100 + left || seen[left % 4] != left) {
        fprintf(stderr, "ring: PE %d: inbox %ld labelled %ld seen[%ld] %d, expected %ld, %ld, %ld\n", me, inbox,
                labelled, left % 4, seen[left % 4], left, 100 + left, left);
        shmem_global_exit(1);
    }
    if (me == 0)
        printf("ring ok\n");
    shmem_finalize();
    return 0;
}
