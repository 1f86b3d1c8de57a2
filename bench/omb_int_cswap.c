/* Open MPI 4.1.4's atomic/ucx writes 8 bytes into the 4-byte result of a
 * 32-bit cswap (open-mpi/ompi#11257): this definition, linked into the OSU
 * program, replaces the library's with a 64-bit cswap on the aligned word
 * that holds the int (little-endian). */
#include <shmem.h>
#include <stdint.h>
int shmem_int_cswap(int *target, int cond, int value, int pe) {
    long *word = (long *)((uintptr_t)target & ~(uintptr_t)7);
    int shift = (int)((uintptr_t)target & 4) * 8;
    unsigned long mask = 0xffffffffUL << shift;
    for (;;) {
        unsigned long old = (unsigned long)shmem_long_atomic_fetch(word, pe);
        int cur = (int)(uint32_t)(old >> shift);
        if (cur != cond) return cur;
        unsigned long upd = (old & ~mask) | ((unsigned long)(uint32_t)value << shift);
        if ((unsigned long)shmem_long_atomic_compare_swap(word, (long)old, (long)upd, pe) == old) return cond;
    }
}
