/* oneside's OpenSHMEM extensions header. The specification requires that
 * <shmemx.h> exist; it includes shmem.h and declares oneside's
 * extensions, each named shmemx_ (and pshmemx_ for tools). */
#ifndef SHMEMX_H
#define SHMEMX_H
#include "shmem.h"

#ifdef __cplusplus
extern "C" {
#endif

/* The symmetric heap grows as the program allocates: shmem_malloc and
 * its kin commit memory on every PE when they need it, and a large
 * shmem_free gives it back. SHMEM_SYMMETRIC_SIZE, when set, is a cap.
 * Each query returns the same on every PE and may be called at any time
 * after shmem_init (a proposal: see the guide's "The symmetric heap"). */
/* Bytes the heap has now. */
size_t shmemx_heap_size(void);
/* The most it may grow to: SHMEM_SYMMETRIC_SIZE when set, else the
 * address space reserved for it. */
size_t shmemx_heap_cap(void);
/* The cap less what live objects hold: what may still be allocated if
 * the hosts have the memory (in one piece or several). */
size_t shmemx_heap_free(void);

size_t pshmemx_heap_size(void);
size_t pshmemx_heap_cap(void);
size_t pshmemx_heap_free(void);

#ifdef __cplusplus
}
#endif
#endif
