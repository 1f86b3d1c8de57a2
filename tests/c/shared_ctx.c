/* Puts on a shared context (shmem_ctx_create(0, ...)) and on a private
 * one, then shmem_barrier_all: the values are at their targets after the
 * barrier, over every transport, as with shm, libfabric, verbs and Sandia
 * OpenSHMEM. 50 rounds, each on fresh contexts, each PE writing one word
 * and a block of 16 KiB (more than one message over TCP) into its right
 * neighbour. Then a
 * barrier timing with four idle contexts alive, printed by PE 0 as
 * "barrier with idle contexts: X us" beside the same with none. */
#define _POSIX_C_SOURCE 200809L
#include <shmem.h>
#include <stdio.h>
#include <time.h>

#define WORDS 2048
static int me, n;
static long shared_in[WORDS], private_in[WORDS], src[WORDS], shared_word;

#include "check.h"

static double now(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec + 1e-9 * t.tv_nsec;
}

static double barrier_us(int rounds) {
    double start = now();
    for (int i = 0; i < rounds; i++)
        shmem_barrier_all();
    return (now() - start) * 1e6 / rounds;
}

int main(void) {
    shmem_init();
    me = shmem_my_pe();
    n = shmem_n_pes();
    int right = (me + 1) % n, left = (me + n - 1) % n;
    for (long round = 1; round <= 50; round++) {
        /* A fresh context each round: its first put is the one that was
         * missing over TCP. */
        shmem_ctx_t shared, private_ctx;
        CHECK(shmem_ctx_create(0, &shared) == 0, "ctx_create(0)");
        CHECK(shmem_ctx_create(SHMEM_CTX_PRIVATE, &private_ctx) == 0, "ctx_create(PRIVATE)");
        for (int i = 0; i < WORDS; i++)
            src[i] = round * 100000 + me * 1000 + i % 1000;
        shmem_ctx_long_p(private_ctx, &private_in[round % WORDS], round, right);
        shmem_ctx_long_put(shared, shared_in, src, WORDS, right);
        shmem_ctx_long_p(shared, &shared_word, round, right);
        shmem_barrier_all();
        for (int i = 0; i < WORDS; i += 511) {
            long want = round * 100000 + left * 1000 + i % 1000;
            CHECK(shared_in[i] == want, "round %ld: shared context's word %d is %ld, not %ld", round, i,
                  shared_in[i], want);
        }
        CHECK(shared_word == round, "round %ld: shared context's single word is %ld", round, shared_word);
        CHECK(private_in[round % WORDS] == round, "round %ld: private context's word", round);
        shmem_ctx_destroy(shared);
        shmem_ctx_destroy(private_ctx);
        shmem_barrier_all();
    }
    double none = barrier_us(2000);
    shmem_ctx_t idle[4];
    for (int i = 0; i < 4; i++)
        CHECK(shmem_ctx_create(0, &idle[i]) == 0, "ctx_create");
    double four = barrier_us(2000);
    for (int i = 0; i < 4; i++)
        shmem_ctx_destroy(idle[i]);
    if (me == 0) {
        fprintf(stderr, "barrier with no context: %.2f us, with 4 idle contexts: %.2f us\n", none, four);
        printf("shared_ctx ok\n");
    }
    shmem_finalize();
    return 0;
}
