/* OpenSHMEM 1.6's routines and rules, each checked against a computed
 * expectation: multi-init with shmem_query_initialized; ibput/ibget in
 * their typed, sized, ctx and C11 generic forms, with positive, negative
 * and zero strides; signal_set/signal_add (and ctx forms); pe_quiet and
 * ctx_pe_quiet; a communication session; an invalid parent team; test_*
 * on an empty set; const comparison values. */
#include <shmem.h>
#include <stdint.h>
#include <string.h>

static int me, n;
static long src[64], dst[64];
static uint32_t src32[64], dst32[64];
static uint64_t sig[2];
static long flags[4];

#include "check.h"

static void reset(void) {
    for (int i = 0; i < 64; i++) {
        src[i] = 1000 * me + i;
        dst[i] = -1;
        src32[i] = (uint32_t)(2000 * me + i);
        dst32[i] = 0;
    }
    shmem_barrier_all();
}

static void blocks(void) {
    int right = (me + 1) % n, left = (me + n - 1) % n;
    shmem_ctx_t ctx;
    CHECK(shmem_ctx_create(0, &ctx) == 0, "ctx_create");

    /* ibput: 4 blocks of 3 from stride 5 to stride 7 */
    reset();
    shmem_long_ibput(dst, src, 7, 5, 3, 4, right);
    shmem_barrier_all();
    for (int b = 0; b < 4; b++)
        for (int j = 0; j < 7; j++)
            CHECK(dst[b * 7 + j] == (j < 3 ? 1000 * left + b * 5 + j : -1), "ibput dst[%d] = %ld", b * 7 + j, dst[b * 7 + j]);

    /* ibget, ctx form: 3 blocks of 2 from the right's stride 4 to stride 3 */
    reset();
    shmem_ctx_long_ibget(ctx, dst, src, 3, 4, 2, 3, right);
    for (int b = 0; b < 3; b++)
        for (int j = 0; j < 3; j++)
            CHECK(dst[b * 3 + j] == (j < 2 ? 1000 * right + b * 4 + j : -1), "ctx ibget dst[%d] = %ld", b * 3 + j, dst[b * 3 + j]);

    /* negative strides: blocks taken from the end of the source, backwards */
    reset();
    shmem_long_ibget(dst, src + 60, 4, -6, 2, 5, right);
    for (int b = 0; b < 5; b++)
        for (int j = 0; j < 2; j++)
            CHECK(dst[b * 4 + j] == 1000 * right + 60 - 6 * b + j, "negative ibget dst[%d] = %ld", b * 4 + j, dst[b * 4 + j]);

    /* stride 0 with one element: iput and iget move that element */
    reset();
    shmem_long_iput(dst + 9, src + 3, 0, 0, 1, right);
    shmem_barrier_all();
    CHECK(dst[9] == 1000 * left + 3 && dst[8] == -1 && dst[10] == -1, "iput stride 0: %ld", dst[9]);
    reset();
    shmem_long_iget(dst + 2, src + 11, 0, 0, 1, right);
    CHECK(dst[2] == 1000 * right + 11 && dst[3] == -1, "iget stride 0: %ld", dst[2]);

    /* sized forms and the C11 generic names */
    reset();
    shmem_ibput32(dst32, src32, 3, 2, 2, 4, right);
    shmem_barrier_all();
    for (int b = 0; b < 4; b++)
        for (int j = 0; j < 3; j++)
            CHECK(dst32[b * 3 + j] == (j < 2 ? (uint32_t)(2000 * left + b * 2 + j) : 0), "ibput32 dst32[%d]", b * 3 + j);
    reset();
    shmem_ibget(dst, src, 2, 3, 1, 6, right);
    for (int b = 0; b < 6; b++) CHECK(dst[2 * b] == 1000 * right + 3 * b && dst[2 * b + 1] == -1, "generic ibget block %d", b);
    reset();
    shmem_ibput(ctx, dst, src, 1, 2, 1, 8, right);
    shmem_ctx_quiet(ctx);
    shmem_barrier_all();
    for (int b = 0; b < 8; b++) CHECK(dst[b] == 1000 * left + 2 * b, "generic ctx ibput dst[%d] = %ld", b, dst[b]);
    shmem_ctx_destroy(ctx);
}

static void signals(void) {
    int right = (me + 1) % n;
    shmem_ctx_t ctx;
    CHECK(shmem_ctx_create(SHMEM_CTX_PRIVATE, &ctx) == 0, "ctx_create");
    sig[0] = sig[1] = 0;
    shmem_barrier_all();
    shmem_signal_set(&sig[0], 40, right);
    shmem_signal_add(&sig[0], 2, right);
    shmem_ctx_signal_add(ctx, &sig[1], 5, right);
    shmem_ctx_signal_add(ctx, &sig[1], 6, right);
    shmem_quiet();
    shmem_ctx_quiet(ctx);
    CHECK(shmem_signal_wait_until(&sig[0], SHMEM_CMP_EQ, 42) == 42, "set then add");
    shmem_barrier_all();
    CHECK(shmem_signal_fetch(&sig[1]) == 11, "ctx adds: %llu", (unsigned long long)shmem_signal_fetch(&sig[1]));
    shmem_barrier_all();
    shmem_ctx_signal_set(ctx, &sig[1], 100, me);
    shmem_ctx_quiet(ctx);
    CHECK(shmem_signal_fetch(&sig[1]) == 100, "ctx set on itself");
    shmem_ctx_destroy(ctx);
    /* Every PE adds 1 to PE 0's word: n in all. */
    sig[0] = 0;
    shmem_barrier_all();
    shmem_signal_add(&sig[0], 1, 0);
    if (me == 0) CHECK(shmem_signal_wait_until(&sig[0], SHMEM_CMP_EQ, (uint64_t)n) == (uint64_t)n, "sum of adds");
    shmem_barrier_all();
}

static void completion(void) {
    int right = (me + 1) % n;
    shmem_ctx_t ctx;
    CHECK(shmem_ctx_create(0, &ctx) == 0, "ctx_create");
    reset();
    for (int i = 0; i < 16; i++) shmem_long_p(&dst[i], 7 * me + i, right);
    shmem_pe_quiet(&right, 1);
    shmem_pe_quiet(NULL, 0);
    shmem_long_p(&flags[0], 1, right);
    shmem_long_wait_until(&flags[0], SHMEM_CMP_EQ, 1);
    int left = (me + n - 1) % n;
    for (int i = 0; i < 16; i++) CHECK(dst[i] == 7 * left + i, "pe_quiet: dst[%d] = %ld", i, dst[i]);
    shmem_barrier_all();

    /* a session on a context: 200 small puts, then stop and ctx_pe_quiet */
    reset();
    flags[1] = 0;
    shmem_barrier_all();
    const shmem_ctx_session_config_t config = {.total_ops = 200};
    shmem_ctx_session_start(ctx, SHMEM_CTX_SESSION_BATCH, &config, SHMEM_CTX_SESSION_TOTAL_OPS);
    for (int i = 0; i < 200; i++) shmem_ctx_long_p(ctx, &dst[i % 64], 10000 * me + i, right);
    shmem_ctx_session_stop(ctx);
    shmem_ctx_pe_quiet(ctx, &right, 1);
    shmem_ctx_session_start(SHMEM_CTX_DEFAULT, SHMEM_CTX_SESSION_BATCH, NULL, 0);
    shmem_ctx_session_stop(SHMEM_CTX_DEFAULT);
    shmem_ctx_session_start(SHMEM_CTX_INVALID, SHMEM_CTX_SESSION_BATCH, NULL, 0);
    shmem_ctx_session_stop(SHMEM_CTX_INVALID);
    shmem_long_atomic_inc(&flags[1], right);
    shmem_long_wait_until(&flags[1], SHMEM_CMP_EQ, 1);
    for (int i = 136; i < 200; i++) CHECK(dst[i % 64] == 10000 * left + i, "session: dst[%d] = %ld", i % 64, dst[i % 64]);
    shmem_ctx_destroy(ctx);
    shmem_barrier_all();
}

static void rules(void) {
    /* an invalid parent team: nonzero, and the new team is invalid */
    shmem_team_t team = SHMEM_TEAM_WORLD;
    CHECK(shmem_team_split_strided(SHMEM_TEAM_INVALID, 0, 1, 1, NULL, 0, &team) != 0, "split of invalid");
    CHECK(team == SHMEM_TEAM_INVALID, "new team of an invalid parent is SHMEM_TEAM_INVALID");

    /* test_* on an empty set: all holds, none found */
    int status[4] = {1, 1, 1, 1};
    size_t idx[4];
    CHECK(shmem_long_test_all(flags, 0, NULL, SHMEM_CMP_EQ, 12345) == 1, "test_all of nothing");
    CHECK(shmem_long_test_any(flags, 0, NULL, SHMEM_CMP_EQ, 12345) == SIZE_MAX, "test_any of nothing");
    CHECK(shmem_long_test_some(flags, 0, idx, NULL, SHMEM_CMP_EQ, 12345) == 0, "test_some of nothing");
    CHECK(shmem_long_test_all(flags, 4, status, SHMEM_CMP_EQ, 12345) == 1, "test_all, all excluded");
    CHECK(shmem_long_test_any(flags, 4, status, SHMEM_CMP_EQ, 12345) == SIZE_MAX, "test_any, all excluded");

    /* const comparison values */
    flags[0] = 3, flags[1] = 4, flags[2] = 5, flags[3] = 6;
    const long wanted[4] = {3, 4, 5, 6};
    shmem_long_wait_until_all_vector(flags, 4, NULL, SHMEM_CMP_EQ, wanted);
    CHECK(shmem_long_test_all_vector(flags, 4, NULL, SHMEM_CMP_EQ, wanted) == 1, "const vector");
    shmem_barrier_all();
}

int main(void) {
    int initialized = -1;
    shmem_query_initialized(&initialized);
    if (initialized != 0) return 2;
    shmem_init();
    shmem_init();
    int provided = -1;
    shmem_init_thread(SHMEM_THREAD_MULTIPLE, &provided);
    me = shmem_my_pe();
    n = shmem_n_pes();
    shmem_query_initialized(&initialized);
    CHECK(initialized != 0, "initialized after init");
    int major, minor;
    shmem_info_get_version(&major, &minor);
    CHECK(major == 1 && minor == 6 && SHMEM_MAJOR_VERSION == 1 && SHMEM_MINOR_VERSION == 6, "version %d.%d", major, minor);

    blocks();
    signals();
    completion();
    rules();

    shmem_finalize();
    shmem_finalize();
    shmem_query_initialized(&initialized);
    CHECK(initialized != 0, "initialized until the last finalize");
    shmem_barrier_all();
    if (me == 0) printf("spec16 ok\n");
    fflush(stdout);
    shmem_finalize();
    shmem_query_initialized(&initialized);
    return initialized == 0 ? 0 : 3;
}
