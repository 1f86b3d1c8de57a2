/* The course's race mistakes in C, and their corrections, for the race
 * checker (oshcc --check-races, rlaunch --check-races): `races CASE`, at 2
 * PEs or more. tests/races.rs runs every case, built with GCC and with
 * Clang, and checks the verdict: a report naming both lines for the racy
 * ones, nothing for their race-free twins.
 *
 * Racy: halo-early (ghost cells read before the barrier that orders the
 * neighbour's put), no-fence (data and flag put with nothing between),
 * get-put (a counter's read-modify-write with get and put), atomic-mix (a
 * plain store and a remote atomic on one word), nbi-reuse (a put_nbi's
 * source overwritten before the quiet), get-nbi-early (a get_nbi's
 * destination read before the quiet), signal-nbi-reuse (the same for
 * put_signal_nbi), get-nbi-twice (two get_nbi into one buffer),
 * fetch-nbi-early (a fetching atomic's nbi destination read before the
 * quiet), atomic-types (one PE's int and float atomics on one word),
 * put-get (a get of bytes the same PE's put, not completed, writes),
 * put-put (two puts to the same bytes with no fence between),
 * get-nbi-fence-put (a put to bytes a pending get_nbi reads: a fence
 * does not order a get), reduce-put (a put into a member's reduction
 * destination, which that member may still be writing), ctx-put-get (a
 * context's put, then shmem_quiet, which completes only the default
 * context's, then a get of the same bytes), pong-unasked (ping-pong's
 * source reused after a "pong" that PE 1 sent without waiting for the
 * ping, so it answers nothing), wide-early (a long double read while
 * another PE's put writes it), atomic-teams (two PEs' atomic increments
 * of one word on contexts of two teams: not atomic with each other),
 * lock-late (PE 1's store after it released a lock that PE 0 takes next).
 *
 * Race-free: halo, fence-flag, quiet-flag, signal, atomic, lock,
 * nbi-quiet, get-nbi-quiet, atomic-fetch-load (an atomic fetch and a
 * plain load: both read), ping-pong (a put_signal_nbi's source reused once
 * the answer to its signal arrived), put-quiet-get, put-fence-put,
 * get-nbi-quiet-put, reduce-barrier-put, ctx-quiet-get (the context's
 * own quiet), wide-neighbour (a put to the byte after a long double that
 * is being read), atomic-contexts (the same increments on two contexts
 * of one team), lock-order (that store inside the critical section).
 */
#include <shmem.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define N 64

long grid[N + 2];
long data[8];
long flag;
long counter;
long lock;
long total, one = 1;
uint64_t sig;
union {
    int i;
    float f;
} word;
/* A long double's load is 10 bytes: Clang checks its two ends apart. */
struct {
    long double w;
    char c;
} wide;

static void halo(int early) {
    int me = shmem_my_pe(), n = shmem_n_pes();
    for (int i = 1; i <= N; i++)
        grid[i] = me * 1000 + i;
    shmem_barrier_all();
    /* my last cell is my right neighbour's left ghost */
    shmem_long_put(&grid[0], &grid[N], 1, (me + 1) % n);
    if (!early)
        shmem_barrier_all();
    long sum = 0;
    for (int i = 0; i <= N; i++)
        sum += grid[i];
    shmem_barrier_all();
    if (!early && grid[0] != ((me + n - 1) % n) * 1000 + N)
        printf("PE %d: wrong ghost %ld (sum %ld)\n", me, grid[0], sum);
}

static void flagged(const char *how) {
    int me = shmem_my_pe();
    long src[8] = {7, 7, 7, 7, 7, 7, 7, 7};
    if (me == 0) {
        shmem_long_put(data, src, 8, 1);
        if (!strcmp(how, "fence"))
            shmem_fence();
        if (!strcmp(how, "quiet"))
            shmem_quiet();
        shmem_long_p(&flag, 1, 1);
    } else if (me == 1) {
        shmem_long_wait_until(&flag, SHMEM_CMP_EQ, 1);
        long seen = data[3];
        flag = 0;
        if (strcmp(how, "none") && seen != 7)
            printf("PE 1: saw %ld\n", seen);
    }
    shmem_barrier_all();
}

int main(int argc, char **argv) {
    const char *c = argc > 1 ? argv[1] : "";
    shmem_init();
    int me = shmem_my_pe();
    /* Not on the stack: Clang's -fsanitize=thread leaves a stack array's
     * accesses uninstrumented, so only GCC would see them. */
    long *buf = malloc(8 * sizeof(long));
    for (int i = 0; i < 8; i++)
        buf[i] = i + 1;
    if (!strcmp(c, "halo-early") || !strcmp(c, "halo")) {
        halo(!strcmp(c, "halo-early"));
    } else if (!strcmp(c, "no-fence")) {
        flagged("none");
    } else if (!strcmp(c, "fence-flag")) {
        flagged("fence");
    } else if (!strcmp(c, "quiet-flag")) {
        flagged("quiet");
    } else if (!strcmp(c, "signal")) {
        if (me == 0)
            shmem_long_put_signal(data, buf, 8, &sig, 1, SHMEM_SIGNAL_SET, 1);
        else if (me == 1 && shmem_signal_wait_until(&sig, SHMEM_CMP_EQ, 1) == 1 && data[7] != 8)
            printf("PE 1: saw %ld\n", data[7]);
        shmem_barrier_all();
    } else if (!strcmp(c, "get-put") || !strcmp(c, "lock")) {
        if (!strcmp(c, "lock"))
            shmem_set_lock(&lock);
        long v = shmem_long_g(&counter, 0);
        shmem_long_p(&counter, v + 1, 0);
        if (!strcmp(c, "lock"))
            shmem_clear_lock(&lock);
        shmem_barrier_all();
    } else if (!strcmp(c, "atomic") || !strcmp(c, "atomic-mix")) {
        if (me != 0)
            shmem_long_atomic_inc(&counter, 0);
        else if (!strcmp(c, "atomic-mix"))
            counter = 100;
        shmem_barrier_all();
    } else if (!strcmp(c, "nbi-reuse") || !strcmp(c, "nbi-quiet")) {
        shmem_long_put_nbi(data, buf, 8, (me + 1) % shmem_n_pes());
        if (!strcmp(c, "nbi-quiet"))
            shmem_quiet();
        buf[2] = 99;
        shmem_barrier_all();
    } else if (!strcmp(c, "get-nbi-early") || !strcmp(c, "get-nbi-quiet")) {
        shmem_long_get_nbi(buf, data, 8, (me + 1) % shmem_n_pes());
        if (!strcmp(c, "get-nbi-quiet"))
            shmem_quiet();
        if (buf[5] == 12345)
            printf("PE %d: unlikely\n", me);
        shmem_barrier_all();
    } else if (!strcmp(c, "signal-nbi-reuse")) {
        shmem_long_put_signal_nbi(data, buf, 8, &sig, 1, SHMEM_SIGNAL_SET, (me + 1) % shmem_n_pes());
        buf[0] = 9;
        shmem_barrier_all();
    } else if (!strcmp(c, "get-nbi-twice")) {
        shmem_long_get_nbi(buf, data, 8, (me + 1) % shmem_n_pes());
        shmem_long_get_nbi(buf, grid, 8, (me + 1) % shmem_n_pes());
        shmem_barrier_all();
    } else if (!strcmp(c, "fetch-nbi-early")) {
        shmem_long_atomic_fetch_nbi(&buf[0], &counter, (me + 1) % shmem_n_pes());
        if (buf[0] == 12345)
            printf("PE %d: unlikely\n", me);
        shmem_barrier_all();
    } else if (!strcmp(c, "atomic-types")) {
        if (me == 0) {
            shmem_int_atomic_inc(&word.i, 1);
            shmem_float_atomic_set(&word.f, 1.0f, 1);
        }
        shmem_barrier_all();
    } else if (!strcmp(c, "atomic-fetch-load")) {
        if (me == 0 && shmem_long_atomic_fetch(&counter, 1) == 12345)
            printf("PE 0: unlikely\n");
        if (me == 1 && counter == 12345)
            printf("PE 1: unlikely\n");
        shmem_barrier_all();
    } else if (!strcmp(c, "ping-pong") || !strcmp(c, "pong-unasked")) {
        int asked = !strcmp(c, "ping-pong");
        if (me == 0) {
            shmem_long_put_signal_nbi(data, buf, 8, &sig, 1, SHMEM_SIGNAL_SET, 1);
            shmem_signal_wait_until(&sig, SHMEM_CMP_EQ, 2);
            buf[0] = 9;
        } else if (me == 1) {
            if (asked)
                shmem_signal_wait_until(&sig, SHMEM_CMP_EQ, 1);
            shmem_long_put_signal(data, buf, 8, &sig, 2, SHMEM_SIGNAL_SET, 0);
        }
        shmem_barrier_all();
    } else if (!strcmp(c, "put-get") || !strcmp(c, "put-quiet-get")) {
        if (me == 0) {
            shmem_long_put(data, buf, 8, 1);
            if (!strcmp(c, "put-quiet-get"))
                shmem_quiet();
            if (shmem_long_g(&data[3], 1) != 4)
                printf("PE 0: read before the put landed\n");
        }
        shmem_barrier_all();
    } else if (!strcmp(c, "ctx-put-get") || !strcmp(c, "ctx-quiet-get")) {
        shmem_ctx_t ctx;
        if (shmem_ctx_create(0, &ctx) != 0)
            return 3;
        if (me == 0) {
            shmem_ctx_long_put(ctx, data, buf, 8, 1);
            if (!strcmp(c, "ctx-quiet-get"))
                shmem_ctx_quiet(ctx);
            else
                shmem_quiet();
            if (shmem_long_g(&data[3], 1) != 4)
                printf("PE 0: read before the put landed\n");
        }
        shmem_ctx_destroy(ctx);
        shmem_barrier_all();
    } else if (!strcmp(c, "put-put") || !strcmp(c, "put-fence-put")) {
        if (me == 0) {
            shmem_long_put(data, buf, 8, 1);
            if (!strcmp(c, "put-fence-put"))
                shmem_fence();
            shmem_long_p(&data[7], 0, 1);
        }
        shmem_barrier_all();
    } else if (!strcmp(c, "get-nbi-fence-put") || !strcmp(c, "get-nbi-quiet-put")) {
        if (me == 0) {
            shmem_long_get_nbi(buf, data, 8, 1);
            if (!strcmp(c, "get-nbi-fence-put"))
                shmem_fence();
            else
                shmem_quiet();
            shmem_long_p(&data[0], 5, 1);
        }
        shmem_barrier_all();
    } else if (!strcmp(c, "reduce-put") || !strcmp(c, "reduce-barrier-put")) {
        shmem_long_sum_reduce(SHMEM_TEAM_WORLD, &total, &one, 1);
        if (!strcmp(c, "reduce-barrier-put"))
            shmem_barrier_all();
        if (me == 0)
            shmem_long_p(&total, 0, 1);
        shmem_barrier_all();
    } else if (!strcmp(c, "wide-early") || !strcmp(c, "wide-neighbour")) {
        if (me == 0 && !strcmp(c, "wide-early"))
            shmem_longdouble_p(&wide.w, 2.0L, 1);
        else if (me == 0)
            shmem_char_p(&wide.c, 1, 1);
        else if (me == 1 && wide.w > 1.0L)
            printf("PE 1: saw %Lf\n", wide.w);
        shmem_barrier_all();
    } else if (!strcmp(c, "atomic-teams") || !strcmp(c, "atomic-contexts")) {
        shmem_team_t all;
        shmem_ctx_t mine;
        shmem_team_split_strided(SHMEM_TEAM_WORLD, 0, 1, shmem_n_pes(), NULL, 0, &all);
        int made = !strcmp(c, "atomic-teams") ? shmem_team_create_ctx(all, 0, &mine)
                                              : shmem_ctx_create(0, &mine);
        if (made != 0) {
            printf("races: no context\n");
            return 1;
        }
        shmem_barrier_all(); /* a phase that begins with no acquire */
        shmem_ctx_long_atomic_inc(me == 0 ? SHMEM_CTX_DEFAULT : mine, &counter, 0);
        shmem_barrier_all();
        shmem_ctx_destroy(mine);
        shmem_team_destroy(all);
    } else if (!strcmp(c, "lock-late") || !strcmp(c, "lock-order")) {
        /* PE 1 holds the lock first: PE 0 takes it once told so. */
        int late = !strcmp(c, "lock-late");
        if (me == 1) {
            shmem_set_lock(&lock);
            if (!late)
                data[0] = 1337;
            shmem_clear_lock(&lock);
            shmem_long_atomic_set(&flag, 1, 0);
            if (late)
                data[0] = 1337;
        } else if (me == 0) {
            shmem_long_wait_until(&flag, SHMEM_CMP_EQ, 1);
            shmem_set_lock(&lock);
            shmem_long_p(&data[0], 42, 1);
            shmem_clear_lock(&lock);
        }
        shmem_barrier_all();
    } else {
        printf("races: no case '%s'\n", c);
        return 2;
    }
    free(buf);
    shmem_finalize();
    return 0;
}
