/* oneside's OpenSHMEM extensions header. The specification requires that
 * <shmemx.h> exist, even where an implementation provides no extension;
 * oneside's are all standard routines today, so this includes shmem.h. */
#ifndef SHMEMX_H
#define SHMEMX_H
#include "shmem.h"
#endif
