
/* Direct paths. A put, get or atomic on a PE whose memory this process maps
 * (itself and the PEs on its node, over shared memory) is a load, a store or
 * a CPU atomic: the standard routines below do it inline, from the table the
 * library fills in at shmem_init (World::direct_map), and call the library for
 * everything else: other PEs, addresses outside symmetric memory, misaligned
 * atomics, calls before shmem_init or after shmem_finalize. They do exactly
 * what the library would do on that path (same copies, same orderings), so a
 * program sees no difference but the time. Define ONESIDE_NO_DIRECT before
 * including shmem.h to call the library for everything.
 *
 * They are functions, not macros, so a program may #define, #undef or take
 * the address of any standard name: each is an inline definition only
 * (GNU inline semantics, `gnu_inline`), which the compiler inlines where it
 * optimizes; every other use, and every call at -O0, is a call of the
 * library's routine of the same name. The library is called through a
 * second name for the same symbol (an asm label), so a routine's body never
 * calls itself and a profiling tool that defines the name still sees it. */
#include <string.h>

#ifdef __cplusplus
#define ONESIDE_INLINE inline __attribute__((__gnu_inline__))
#else
#define ONESIDE_INLINE extern __inline__ __attribute__((__gnu_inline__))
#endif
/* The helpers below are inline definitions too (a routine with external
 * linkage may name no static function), always inlined: no symbol of theirs
 * exists anywhere. */
#define ONESIDE_HELPER ONESIDE_INLINE __attribute__((__always_inline__))
#define ONESIDE_STR2(x) #x
#define ONESIDE_STR(x) ONESIDE_STR2(x)
/* oneside_library_NAME: the library's (or a tool's) symbol NAME. */
#define ONESIDE_LIBRARY(ret, fn, params) \
    extern ret oneside_library_##fn params __asm__(ONESIDE_STR(__USER_LABEL_PREFIX__) #fn);

struct oneside_direct {
    uintptr_t heap, heap_len;   /* this PE's symmetric heap */
    uintptr_t data, data_len;   /* its symmetric global data */
    char *const *bases;         /* per PE: where offsets start, or NULL */
    int n_pes;                  /* 0 outside shmem_init .. shmem_finalize */
    int cpu_atomics;            /* atomics on mapped memory are CPU atomics */
    int quiet_is_fence;         /* every PE is mapped: quiet is a fence */
};
extern struct oneside_direct oneside_direct;

/* PE `pe`'s copy of [addr, addr + bytes), or NULL when it is not mapped. */
ONESIDE_HELPER char *oneside_direct_at(const void *addr, size_t bytes, int pe) {
    const struct oneside_direct *d = &oneside_direct;
    uintptr_t a = (uintptr_t)addr;
    char *base;
    if ((unsigned)pe >= (unsigned)d->n_pes || (base = d->bases[pe]) == NULL) return NULL;
    if (a - d->heap < d->heap_len && bytes <= d->heap_len - (a - d->heap)) return base + (a - d->heap);
    if (a - d->data < d->data_len && bytes <= d->data_len - (a - d->data))
        return base + d->heap_len + (a - d->data);
    return NULL;
}

/* A copy into mapped memory; an aligned word is one store, so a PE waiting
 * on it never sees half of it. */
ONESIDE_HELPER void oneside_direct_copy(char *to, const void *from, size_t bytes) {
    if (bytes == 8 && ((uintptr_t)to & 7) == 0) {
        uint64_t v;
        memcpy(&v, from, 8);
        *(volatile uint64_t *)to = v;
    } else if (bytes == 4 && ((uintptr_t)to & 3) == 0) {
        uint32_t v;
        memcpy(&v, from, 4);
        *(volatile uint32_t *)to = v;
    } else {
        memcpy(to, from, bytes);
    }
}

/* A put of `bytes` into PE `pe`'s mapped copy of `dest`; 0 when that
 * memory is not mapped (the caller then calls the library). */
ONESIDE_HELPER int oneside_direct_put_bytes(void *dest, const void *source, size_t bytes, int pe) {
    char *at = oneside_direct_at(dest, bytes, pe);
    if (at) oneside_direct_copy(at, source, bytes);
    return at != NULL;
}

/* A get of `bytes` from PE `pe`'s mapped copy of `source`, with an Acquire
 * fence after it when `acquire` (a blocking get); 0 when not mapped. */
ONESIDE_HELPER int oneside_direct_get_bytes(void *dest, const void *source, size_t bytes, int pe, int acquire) {
    const char *at = oneside_direct_at(source, bytes, pe);
    if (!at) return 0;
    memcpy(dest, at, bytes);
    if (acquire) __atomic_thread_fence(__ATOMIC_ACQUIRE);
    return 1;
}

/* put, get, put_nbi and get_nbi of elements of `size` bytes, calling the
 * library's routine when the memory is not mapped. */
#define ONESIDE_DIRECT_RMA(name, T, size)                                                           \
    ONESIDE_LIBRARY(void, shmem_##name##put, (T *, const T *, size_t, int))                         \
    ONESIDE_LIBRARY(void, shmem_##name##get, (T *, const T *, size_t, int))                         \
    ONESIDE_LIBRARY(void, shmem_##name##put_nbi, (T *, const T *, size_t, int))                     \
    ONESIDE_LIBRARY(void, shmem_##name##get_nbi, (T *, const T *, size_t, int))                     \
    ONESIDE_INLINE void shmem_##name##put(T *dest, const T *source, size_t nelems, int pe) {        \
        if (!oneside_direct_put_bytes(dest, source, nelems * (size), pe))                           \
            oneside_library_shmem_##name##put(dest, source, nelems, pe);                            \
    }                                                                                               \
    ONESIDE_INLINE void shmem_##name##get(T *dest, const T *source, size_t nelems, int pe) {        \
        if (!oneside_direct_get_bytes(dest, source, nelems * (size), pe, 1))                        \
            oneside_library_shmem_##name##get(dest, source, nelems, pe);                            \
    }                                                                                               \
    ONESIDE_INLINE void shmem_##name##put_nbi(T *dest, const T *source, size_t nelems, int pe) {    \
        if (!oneside_direct_put_bytes(dest, source, nelems * (size), pe))                           \
            oneside_library_shmem_##name##put_nbi(dest, source, nelems, pe);                        \
    }                                                                                               \
    ONESIDE_INLINE void shmem_##name##get_nbi(T *dest, const T *source, size_t nelems, int pe) {    \
        if (!oneside_direct_get_bytes(dest, source, nelems * (size), pe, 0))                        \
            oneside_library_shmem_##name##get_nbi(dest, source, nelems, pe);                        \
    }

/* The sized names put the size before the verb's suffix (shmem_put64), so
 * they get their own definitions on the same helpers. */
#define ONESIDE_DIRECT_SIZED(bits, size)                                                            \
    ONESIDE_LIBRARY(void, shmem_put##bits, (void *, const void *, size_t, int))                     \
    ONESIDE_LIBRARY(void, shmem_get##bits, (void *, const void *, size_t, int))                     \
    ONESIDE_INLINE void shmem_put##bits(void *dest, const void *source, size_t nelems, int pe) {    \
        if (!oneside_direct_put_bytes(dest, source, nelems * (size), pe))                           \
            oneside_library_shmem_put##bits(dest, source, nelems, pe);                              \
    }                                                                                               \
    ONESIDE_INLINE void shmem_get##bits(void *dest, const void *source, size_t nelems, int pe) {    \
        if (!oneside_direct_get_bytes(dest, source, nelems * (size), pe, 1))                        \
            oneside_library_shmem_get##bits(dest, source, nelems, pe);                              \
    }

/* p and g. */
#define ONESIDE_DIRECT_SCALAR(name, T)                                                              \
    ONESIDE_LIBRARY(void, shmem_##name##_p, (T *, T, int))                                          \
    ONESIDE_LIBRARY(T, shmem_##name##_g, (const T *, int))                                          \
    ONESIDE_INLINE void shmem_##name##_p(T *dest, T value, int pe) {                                \
        if (!oneside_direct_put_bytes(dest, &value, sizeof(T), pe))                                 \
            oneside_library_shmem_##name##_p(dest, value, pe);                                      \
    }                                                                                               \
    ONESIDE_INLINE T shmem_##name##_g(const T *source, int pe) {                                    \
        T value;                                                                                    \
        if (!oneside_direct_get_bytes(&value, source, sizeof(T), pe, 1))                            \
            return oneside_library_shmem_##name##_g(source, pe);                                    \
        return value;                                                                               \
    }

/* The word of an atomic on `pe`, or NULL: mapped, CPU atomics, aligned. */
ONESIDE_HELPER char *oneside_direct_word(const void *addr, size_t size, int pe) {
    if (!oneside_direct.cpu_atomics || ((uintptr_t)addr & (size - 1)) != 0) return NULL;
    return oneside_direct_at(addr, size, pe);
}

/* The standard atomics, sequentially consistent as the library's. */
#define ONESIDE_DIRECT_AMO(name, T)                                                              \
    ONESIDE_LIBRARY(T, shmem_##name##_atomic_fetch_add, (T *, T, int))                           \
    ONESIDE_LIBRARY(void, shmem_##name##_atomic_add, (T *, T, int))                              \
    ONESIDE_LIBRARY(T, shmem_##name##_atomic_fetch_inc, (T *, int))                              \
    ONESIDE_LIBRARY(void, shmem_##name##_atomic_inc, (T *, int))                                 \
    ONESIDE_LIBRARY(T, shmem_##name##_atomic_compare_swap, (T *, T, T, int))                     \
    ONESIDE_LIBRARY(T, shmem_##name##_atomic_swap, (T *, T, int))                                \
    ONESIDE_LIBRARY(T, shmem_##name##_atomic_fetch, (const T *, int))                            \
    ONESIDE_LIBRARY(void, shmem_##name##_atomic_set, (T *, T, int))                              \
    ONESIDE_INLINE T shmem_##name##_atomic_fetch_add(T *dest, T value, int pe) {                 \
        T *w = (T *)oneside_direct_word(dest, sizeof(T), pe);                                    \
        if (!w) return oneside_library_shmem_##name##_atomic_fetch_add(dest, value, pe);         \
        return __atomic_fetch_add(w, value, __ATOMIC_SEQ_CST);                                   \
    }                                                                                            \
    ONESIDE_INLINE void shmem_##name##_atomic_add(T *dest, T value, int pe) {                    \
        T *w = (T *)oneside_direct_word(dest, sizeof(T), pe);                                    \
        if (!w) oneside_library_shmem_##name##_atomic_add(dest, value, pe);                      \
        else (void)__atomic_fetch_add(w, value, __ATOMIC_SEQ_CST);                               \
    }                                                                                            \
    ONESIDE_INLINE T shmem_##name##_atomic_fetch_inc(T *dest, int pe) {                          \
        T *w = (T *)oneside_direct_word(dest, sizeof(T), pe);                                    \
        if (!w) return oneside_library_shmem_##name##_atomic_fetch_inc(dest, pe);                \
        return __atomic_fetch_add(w, (T)1, __ATOMIC_SEQ_CST);                                    \
    }                                                                                            \
    ONESIDE_INLINE void shmem_##name##_atomic_inc(T *dest, int pe) {                             \
        T *w = (T *)oneside_direct_word(dest, sizeof(T), pe);                                    \
        if (!w) oneside_library_shmem_##name##_atomic_inc(dest, pe);                             \
        else (void)__atomic_fetch_add(w, (T)1, __ATOMIC_SEQ_CST);                                \
    }                                                                                            \
    ONESIDE_INLINE T shmem_##name##_atomic_compare_swap(T *dest, T cond, T value, int pe) {      \
        T *w = (T *)oneside_direct_word(dest, sizeof(T), pe);                                    \
        if (!w) return oneside_library_shmem_##name##_atomic_compare_swap(dest, cond, value, pe); \
        __atomic_compare_exchange_n(w, &cond, value, 0, __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST);     \
        return cond;                                                                             \
    }                                                                                            \
    ONESIDE_INLINE T shmem_##name##_atomic_swap(T *dest, T value, int pe) {                      \
        T *w = (T *)oneside_direct_word(dest, sizeof(T), pe);                                    \
        if (!w) return oneside_library_shmem_##name##_atomic_swap(dest, value, pe);              \
        return __atomic_exchange_n(w, value, __ATOMIC_SEQ_CST);                                  \
    }                                                                                            \
    ONESIDE_INLINE T shmem_##name##_atomic_fetch(const T *source, int pe) {                      \
        T *w = (T *)oneside_direct_word(source, sizeof(T), pe);                                  \
        if (!w) return oneside_library_shmem_##name##_atomic_fetch(source, pe);                  \
        return __atomic_load_n(w, __ATOMIC_SEQ_CST);                                             \
    }                                                                                            \
    ONESIDE_INLINE void shmem_##name##_atomic_set(T *dest, T value, int pe) {                    \
        T *w = (T *)oneside_direct_word(dest, sizeof(T), pe);                                    \
        if (!w) oneside_library_shmem_##name##_atomic_set(dest, value, pe);                      \
        else __atomic_store_n(w, value, __ATOMIC_SEQ_CST);                                       \
    }

/* quiet and fence: fences when every PE is mapped. */
ONESIDE_LIBRARY(void, shmem_quiet, (void))
ONESIDE_LIBRARY(void, shmem_fence, (void))
ONESIDE_INLINE void shmem_quiet(void) {
    if (oneside_direct.quiet_is_fence) __atomic_thread_fence(__ATOMIC_SEQ_CST);
    else oneside_library_shmem_quiet();
}
ONESIDE_INLINE void shmem_fence(void) {
    if (oneside_direct.quiet_is_fence) __atomic_thread_fence(__ATOMIC_RELEASE);
    else oneside_library_shmem_fence();
}
