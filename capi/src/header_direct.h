
/* Direct paths. A put, get or atomic on a PE whose memory this process maps
 * (itself and the PEs on its node, over shared memory) is a load, a store or
 * a CPU atomic: the functions below do it inline, from the table the library
 * fills in at shmem_init (World::direct_map), and call the library for
 * everything else: other PEs, addresses outside symmetric memory, misaligned
 * atomics, calls before shmem_init or after shmem_finalize. They do exactly
 * what the library would do on that path (same copies, same orderings), so a
 * program sees no difference but the time. Define ONESIDE_NO_DIRECT before
 * including shmem.h to call the library for everything. */
#include <string.h>

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
static inline char *oneside_direct_at(const void *addr, size_t bytes, int pe) {
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
static inline void oneside_direct_copy(char *to, const void *from, size_t bytes) {
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
static inline int oneside_direct_put_bytes(void *dest, const void *source, size_t bytes, int pe) {
    char *at = oneside_direct_at(dest, bytes, pe);
    if (at) oneside_direct_copy(at, source, bytes);
    return at != NULL;
}

/* A get of `bytes` from PE `pe`'s mapped copy of `source`, with an Acquire
 * fence after it when `acquire` (a blocking get); 0 when not mapped. */
static inline int oneside_direct_get_bytes(void *dest, const void *source, size_t bytes, int pe, int acquire) {
    const char *at = oneside_direct_at(source, bytes, pe);
    if (!at) return 0;
    memcpy(dest, at, bytes);
    if (acquire) __atomic_thread_fence(__ATOMIC_ACQUIRE);
    return 1;
}

/* put, get, put_nbi and get_nbi of elements of `size` bytes, calling the
 * library's function when the memory is not mapped. */
#define ONESIDE_DIRECT_RMA(name, T, size)                                                           \
    static inline void oneside_direct_##name##put(T *dest, const T *source, size_t n, int pe) {     \
        if (!oneside_direct_put_bytes(dest, source, n * (size), pe)) (shmem_##name##put)(dest, source, n, pe); \
    }                                                                                               \
    static inline void oneside_direct_##name##get(T *dest, const T *source, size_t n, int pe) {     \
        if (!oneside_direct_get_bytes(dest, source, n * (size), pe, 1)) (shmem_##name##get)(dest, source, n, pe); \
    }                                                                                               \
    static inline void oneside_direct_##name##put_nbi(T *dest, const T *source, size_t n, int pe) { \
        if (!oneside_direct_put_bytes(dest, source, n * (size), pe)) (shmem_##name##put_nbi)(dest, source, n, pe); \
    }                                                                                               \
    static inline void oneside_direct_##name##get_nbi(T *dest, const T *source, size_t n, int pe) { \
        if (!oneside_direct_get_bytes(dest, source, n * (size), pe, 0)) (shmem_##name##get_nbi)(dest, source, n, pe); \
    }

/* The sized names put the size before the verb's suffix (shmem_put64), so
 * they get their own wrappers on the same helpers. */
#define ONESIDE_DIRECT_SIZED(bits, size)                                                            \
    static inline void oneside_direct_put##bits(void *dest, const void *source, size_t n, int pe) {  \
        if (!oneside_direct_put_bytes(dest, source, n * (size), pe)) (shmem_put##bits)(dest, source, n, pe); \
    }                                                                                               \
    static inline void oneside_direct_get##bits(void *dest, const void *source, size_t n, int pe) {  \
        if (!oneside_direct_get_bytes(dest, source, n * (size), pe, 1)) (shmem_get##bits)(dest, source, n, pe); \
    }

/* p and g. */
#define ONESIDE_DIRECT_SCALAR(name, T)                                                              \
    static inline void oneside_direct_##name##_p(T *dest, T value, int pe) {                        \
        if (!oneside_direct_put_bytes(dest, &value, sizeof(T), pe)) (shmem_##name##_p)(dest, value, pe); \
    }                                                                                               \
    static inline T oneside_direct_##name##_g(const T *source, int pe) {                            \
        T value;                                                                                    \
        if (!oneside_direct_get_bytes(&value, source, sizeof(T), pe, 1)) return (shmem_##name##_g)(source, pe); \
        return value;                                                                               \
    }

/* The word of an atomic on `pe`, or NULL: mapped, CPU atomics, aligned. */
static inline char *oneside_direct_word(const void *addr, size_t size, int pe) {
    if (!oneside_direct.cpu_atomics || ((uintptr_t)addr & (size - 1)) != 0) return NULL;
    return oneside_direct_at(addr, size, pe);
}

/* The standard atomics, sequentially consistent as the library's. */
#define ONESIDE_DIRECT_AMO(name, T)                                                              \
    static inline T oneside_direct_##name##_atomic_fetch_add(T *dest, T value, int pe) {         \
        T *w = (T *)oneside_direct_word(dest, sizeof(T), pe);                                    \
        if (!w) return (shmem_##name##_atomic_fetch_add)(dest, value, pe);                       \
        return __atomic_fetch_add(w, value, __ATOMIC_SEQ_CST);                                   \
    }                                                                                            \
    static inline void oneside_direct_##name##_atomic_add(T *dest, T value, int pe) {            \
        T *w = (T *)oneside_direct_word(dest, sizeof(T), pe);                                    \
        if (!w) (shmem_##name##_atomic_add)(dest, value, pe);                                    \
        else (void)__atomic_fetch_add(w, value, __ATOMIC_SEQ_CST);                               \
    }                                                                                            \
    static inline T oneside_direct_##name##_atomic_fetch_inc(T *dest, int pe) {                  \
        T *w = (T *)oneside_direct_word(dest, sizeof(T), pe);                                    \
        if (!w) return (shmem_##name##_atomic_fetch_inc)(dest, pe);                              \
        return __atomic_fetch_add(w, (T)1, __ATOMIC_SEQ_CST);                                    \
    }                                                                                            \
    static inline void oneside_direct_##name##_atomic_inc(T *dest, int pe) {                     \
        T *w = (T *)oneside_direct_word(dest, sizeof(T), pe);                                    \
        if (!w) (shmem_##name##_atomic_inc)(dest, pe);                                           \
        else (void)__atomic_fetch_add(w, (T)1, __ATOMIC_SEQ_CST);                                \
    }                                                                                            \
    static inline T oneside_direct_##name##_atomic_compare_swap(T *dest, T cond, T value, int pe) { \
        T *w = (T *)oneside_direct_word(dest, sizeof(T), pe);                                    \
        if (!w) return (shmem_##name##_atomic_compare_swap)(dest, cond, value, pe);              \
        __atomic_compare_exchange_n(w, &cond, value, 0, __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST);     \
        return cond;                                                                             \
    }                                                                                            \
    static inline T oneside_direct_##name##_atomic_swap(T *dest, T value, int pe) {              \
        T *w = (T *)oneside_direct_word(dest, sizeof(T), pe);                                    \
        if (!w) return (shmem_##name##_atomic_swap)(dest, value, pe);                            \
        return __atomic_exchange_n(w, value, __ATOMIC_SEQ_CST);                                  \
    }                                                                                            \
    static inline T oneside_direct_##name##_atomic_fetch(const T *source, int pe) {              \
        T *w = (T *)oneside_direct_word(source, sizeof(T), pe);                                  \
        if (!w) return (shmem_##name##_atomic_fetch)(source, pe);                                \
        return __atomic_load_n(w, __ATOMIC_SEQ_CST);                                             \
    }                                                                                            \
    static inline void oneside_direct_##name##_atomic_set(T *dest, T value, int pe) {            \
        T *w = (T *)oneside_direct_word(dest, sizeof(T), pe);                                    \
        if (!w) (shmem_##name##_atomic_set)(dest, value, pe);                                    \
        else __atomic_store_n(w, value, __ATOMIC_SEQ_CST);                                       \
    }

/* quiet and fence: fences when every PE is mapped. */
static inline void oneside_direct_quiet(void) {
    if (oneside_direct.quiet_is_fence) __atomic_thread_fence(__ATOMIC_SEQ_CST);
    else (shmem_quiet)();
}
static inline void oneside_direct_fence(void) {
    if (oneside_direct.quiet_is_fence) __atomic_thread_fence(__ATOMIC_RELEASE);
    else (shmem_fence)();
}
