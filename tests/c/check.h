/* The self-check of the C test programs: on a failed condition, one line
 * naming the program, the PE and the condition, then the job ends with
 * status 1. Each program defines `static int me;` (its PE) before use. */
#ifndef CHECK_H
#define CHECK_H
#include <stdio.h>

#define CHECK(cond, ...)                                                                                     \
    do {                                                                                                     \
        if (!(cond)) {                                                                                       \
            fprintf(stderr, "%s: PE %d: check failed: %s: ", __FILE__, me, #cond);                           \
            fprintf(stderr, __VA_ARGS__);                                                                    \
            fprintf(stderr, "\n");                                                                           \
            shmem_global_exit(1);                                                                            \
        }                                                                                                    \
    } while (0)

#endif
