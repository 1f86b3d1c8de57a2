
/* long double reductions, inline as in shmem.h, on the profiling names */
#define ONESIDE_PLD_REDUCE(op) \
    static inline int pshmem_longdouble_##op##_reduce(shmem_team_t team, long double *dest, \
                                                      const long double *source, size_t nreduce) { \
        return oneside_reduce_with(team, dest, source, nreduce, sizeof(long double), oneside_ld_##op); \
    } \
    SHMEM_DEPRECATED static inline void pshmem_longdouble_##op##_to_all(long double *dest, const long double *source, \
            int nreduce, int PE_start, int logPE_stride, int PE_size, long double *pWrk, long *pSync) { \
        (void)pWrk; \
        oneside_to_all_with(dest, source, nreduce, sizeof(long double), PE_start, logPE_stride, PE_size, pSync, \
                            oneside_ld_##op); \
    }
ONESIDE_PLD_REDUCE(min)
ONESIDE_PLD_REDUCE(max)
ONESIDE_PLD_REDUCE(sum)
ONESIDE_PLD_REDUCE(prod)
