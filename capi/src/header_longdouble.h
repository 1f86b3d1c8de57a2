/* long double reductions: combined in C, gathered by the library */
#define ONESIDE_LD_COMBINER(op, expr) \
    static inline void oneside_ld_##op(void *acc, const void *x, size_t n) { \
        long double *a = (long double *)acc; \
        const long double *b = (const long double *)x; \
        for (size_t i = 0; i < n; i++) a[i] = (expr); \
    }
ONESIDE_LD_COMBINER(min, b[i] < a[i] ? b[i] : a[i])
ONESIDE_LD_COMBINER(max, b[i] > a[i] ? b[i] : a[i])
ONESIDE_LD_COMBINER(sum, a[i] + b[i])
ONESIDE_LD_COMBINER(prod, a[i] * b[i])
#define ONESIDE_LD_REDUCE(op) \
    static inline __attribute__((__always_inline__)) int shmem_longdouble_##op##_reduce(shmem_team_t team, long double *dest, \
                                                     const long double *source, size_t nreduce) { \
        return oneside_reduce_with(team, dest, source, nreduce, sizeof(long double), oneside_ld_##op); \
    } \
    SHMEM_DEPRECATED static inline __attribute__((__always_inline__)) void shmem_longdouble_##op##_to_all(long double *dest, const long double *source, \
            int nreduce, int PE_start, int logPE_stride, int PE_size, long double *pWrk, long *pSync) { \
        (void)pWrk; \
        oneside_to_all_with(dest, source, nreduce, sizeof(long double), PE_start, logPE_stride, PE_size, pSync, \
                            oneside_ld_##op); \
    }
ONESIDE_LD_REDUCE(min)
ONESIDE_LD_REDUCE(max)
ONESIDE_LD_REDUCE(sum)
ONESIDE_LD_REDUCE(prod)
