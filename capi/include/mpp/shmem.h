/* The deprecated location of the OpenSHMEM header, kept by the
 * specification's deprecated-API chapter for programs that still include
 * <mpp/shmem.h>: the same declarations as <shmem.h>. */
#ifndef MPP_SHMEM_H
#define MPP_SHMEM_H
#include "../shmem.h"
#endif
