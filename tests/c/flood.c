/* Floods of non-blocking operations, as a graph code or a histogram issues
 * them: `flood KIND PATTERN N`. Each origin issues N operations of KIND
 * (get, put, add, fadd, signal, mixed) without waiting between them, then
 * one quiet (gets are checked in rounds that each end with a quiet, since
 * a get's buffer is only defined then). PATTERN says who floods whom: one
 * (PE 0 floods PE 1 while PE 1 waits in a barrier), all (every PE floods
 * PE 0, which floods PE 1), both (every PE floods the next one: every
 * link carries requests both ways). Every result is checked. */
#include <shmem.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include "check.h"

#define W 4096         /* words per origin in a target's sink */
#define MAXPES 64

static int me;
static long src[W];                 /* what gets read: src[i] = me * 2^32 + i */
static long sink[MAXPES][W];        /* what origin o puts lands in sink[o] */
static long counter[MAXPES];        /* origin o's atomics */
static uint64_t sig[MAXPES];        /* origin o's signals */
static long fetched[W];

static long expected_src(int pe, long i) { return ((long)pe << 32) + i; }

/* Operation i of an origin: its kind under `mixed`. */
static const char *kind_of(const char *kind, long i) {
    static const char *mix[] = {"get", "put", "add", "signal", "put", "get", "fadd"};
    return strcmp(kind, "mixed") ? kind : mix[i % 7];
}

int main(int argc, char **argv) {
    if (argc != 4) {
        fprintf(stderr, "usage: flood get|put|add|fadd|signal|mixed one|all|both N\n");
        return 2;
    }
    const char *kind = argv[1], *pattern = argv[2];
    long n = atol(argv[3]);
    shmem_init();
    me = shmem_my_pe();
    int npes = shmem_n_pes();
    CHECK(npes >= 2 && npes <= MAXPES, "needs 2 to %d PEs, has %d", MAXPES, npes);
    for (long i = 0; i < W; i++)
        src[i] = expected_src(me, i);
    shmem_barrier_all();

    int floods = 1, target = (me + 1) % npes;
    if (!strcmp(pattern, "one"))
        floods = me == 0;
    else if (!strcmp(pattern, "all"))
        target = me == 0 ? 1 : 0;
    else
        CHECK(!strcmp(pattern, "both"), "unknown pattern %s", pattern);

    long gets = 0, puts = 0, adds = 0, signals = 0;
    long *got = malloc(sizeof(long) * W);
    long *where = malloc(sizeof(long) * W);
    long round = 0; /* gets issued since the last quiet */
    for (long i = 0; floods && i < n; i++) {
        const char *k = kind_of(kind, i);
        long slot = i % W;
        if (!strcmp(k, "get")) {
            where[round] = (i * 7) % W;
            shmem_long_get_nbi(&got[round], &src[where[round]], 1, target);
            gets++;
            if (++round == W || i + 1 == n) {
                shmem_quiet();
                for (long r = 0; r < round; r++)
                    CHECK(got[r] == expected_src(target, where[r]), "get %ld of a round read %ld, want %ld", r,
                          got[r], expected_src(target, where[r]));
                round = 0;
            }
        } else if (!strcmp(k, "put")) {
            long value = i + 1;
            shmem_long_put_nbi(&sink[me][slot], &value, 1, target);
            puts++;
        } else if (!strcmp(k, "add")) {
            shmem_long_atomic_add(&counter[me], 1, target);
            adds++;
        } else if (!strcmp(k, "fadd")) {
            shmem_long_atomic_fetch_add_nbi(&fetched[slot], &counter[me], 1, target);
            adds++;
        } else if (!strcmp(k, "signal")) {
            long value = i + 1;
            shmem_long_put_signal_nbi(&sink[me][slot], &value, 1, &sig[me], 1, SHMEM_SIGNAL_ADD, target);
            signals++;
            puts++;
        } else {
            CHECK(0, "unknown kind %s", k);
        }
    }
    shmem_quiet();
    if (round) {
        for (long r = 0; r < round; r++)
            CHECK(got[r] == expected_src(target, where[r]), "get read %ld, want %ld", got[r],
                  expected_src(target, where[r]));
    }
    /* Tell the target what to expect, after the flood (a put orders after
     * the quiet above). */
    static long expect[MAXPES][3];
    long mine[3] = {floods ? puts : 0, floods ? adds : 0, floods ? signals : 0};
    shmem_long_put(expect[me], mine, 3, target);
    shmem_barrier_all();

    for (int o = 0; o < npes; o++) {
        long want_puts = expect[o][0], want_adds = expect[o][1], want_signals = expect[o][2];
        CHECK(counter[o] == want_adds, "origin %d's atomics: counter %ld, want %ld", o, counter[o], want_adds);
        CHECK((long)sig[o] == want_signals, "origin %d's signals: %lu, want %ld", o, (unsigned long)sig[o],
              want_signals);
        if (want_puts == 0)
            continue;
        /* The last put of each slot holds i + 1 for the last i of that slot
         * the origin put to (every kind that puts writes i + 1). */
        for (long slot = 0; slot < W; slot++) {
            long last = -1;
            for (long i = n - 1 - ((n - 1 - slot) % W + W) % W; i >= 0 && last < 0; i -= W) {
                const char *k = kind_of(kind, i);
                if (!strcmp(k, "put") || !strcmp(k, "signal"))
                    last = i;
            }
            long want = last < 0 ? 0 : last + 1;
            CHECK(sink[o][slot] == want, "origin %d's slot %ld holds %ld, want %ld", o, slot, sink[o][slot], want);
        }
    }
    shmem_barrier_all();
    if (me == 0)
        printf("flood ok\n");
    shmem_finalize();
    return 0;
}
