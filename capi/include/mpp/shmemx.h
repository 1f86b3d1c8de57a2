/* The deprecated location of <shmemx.h> (see <mpp/shmem.h>). */
#ifndef MPP_SHMEMX_H
#define MPP_SHMEMX_H
#include "../shmemx.h"
#endif
