/* Races between the OpenMP threads of one PE, and their corrections, for
 * the race checker (oshcc --check-races -fopenmp, rlaunch --check-races):
 * `races_omp CASE` at 2 PEs, each PE with a team of 2 threads. PE 0 puts
 * into PE 1's `data` and completes the put; PE 1's threads read it.
 * tests/races.rs runs every case, built with GCC (libgomp) and Clang
 * (libomp), and checks the verdict.
 *
 * Racy: master-read (one thread's shmem_sync_all orders the put before
 * its own load, not before the other thread's), sections (a load in one
 * section, the sync_all in another: sections are unordered, whichever
 * thread runs them), flag-volatile (one thread waits for PE 0's flag, the
 * other spins on a volatile int and reads the data: a volatile is not a
 * synchronization), nbi-volatile (one thread's get_nbi and quiet, the
 * other thread reads the destination after a volatile spin),
 * nbi-read-first (one thread reads a buffer, the other then gets into it
 * after a volatile spin: the load came first, but nothing orders it),
 * origin-sync (on PE 0, one section puts and quiets, another calls the
 * shmem_sync_all that PE 1 reads after: nothing orders the put before
 * that sync) and origin-signal (one section puts and fences, another
 * signals PE 1 with a put to its flag: the fence orders the put only
 * before what its own thread, or one that synchronized with it, writes).
 *
 * Race-free: master-barrier-read (an omp barrier after the master's
 * sync_all), sections-end-read (the load after the sections construct),
 * flag-critical, flag-lock, flag-atomic (the waiting thread hands over
 * through a critical section, an omp lock, an atomic flag), nbi-barrier
 * (an omp barrier after the quiet), nbi-read-first-barrier (an omp
 * barrier between the load and the get), origin-sync-barrier and
 * origin-signal-barrier (PE 0's threads meet in an omp barrier between
 * the quiet or fence and the sync or signal).
 */
#include <omp.h>
#include <shmem.h>
#include <stdio.h>
#include <string.h>

long data[4];
long flag;

/* PE 0's side of the origin cases: one thread puts the data and quiets
 * (or fences, `signal`), another then tells PE 1 with a sync_all (or a
 * put to its flag). They meet in an omp barrier between only in the
 * -barrier cases; in the racy ones each is a section: unordered,
 * whichever thread runs them. */
static void put_data(int signal) {
    long v[4] = {1, 2, 3, 4};
    shmem_long_put(data, v, 4, 1);
    if (signal)
        shmem_fence();
    else
        shmem_quiet();
}

static void tell(int signal) {
    if (signal)
        shmem_long_p(&flag, 1, 1);
    else
        shmem_sync_all();
}

static void origin(const char *c) {
    int signal = !strncmp(c, "origin-signal", 13);
    if (!strcmp(c, "origin-sync") || !strcmp(c, "origin-signal")) {
#pragma omp parallel sections num_threads(2)
        {
#pragma omp section
            put_data(signal);
#pragma omp section
            tell(signal);
        }
        return;
    }
#pragma omp parallel num_threads(2)
    {
        if (omp_get_thread_num() == 1)
            put_data(signal);
#pragma omp barrier
        if (omp_get_thread_num() == 0)
            tell(signal);
    }
}

/* PE 0's side of every case: the data, completed, then PE 1 told. */
static void pe0(const char *c) {
    long v[4] = {1, 2, 3, 4};
    if (!strncmp(c, "nbi", 3))
        return;
    if (!strncmp(c, "origin", 6)) {
        origin(c);
        return;
    }
    shmem_long_put(data, v, 4, 1);
    if (!strncmp(c, "flag", 4)) {
        shmem_fence();
        shmem_long_p(&flag, 1, 1);
    } else {
        shmem_quiet();
        if (strncmp(c, "nbi", 3))
            shmem_sync_all();
    }
}

static long sum(const long *x) {
    return x[0] + x[1] + x[2] + x[3];
}

/* PE 1's team: thread 0 waits for the flag, then hands over to thread 1
 * as `how` says; thread 1 reads the data. */
static long flag_case(const char *how) {
    volatile int handed = 0;
    int done = 0;
    omp_lock_t lock;
    omp_init_lock(&lock);
    long got = 0;
#pragma omp parallel num_threads(2)
    {
        if (omp_get_thread_num() == 0) {
            shmem_long_wait_until(&flag, SHMEM_CMP_EQ, 1);
            if (!strcmp(how, "critical")) {
#pragma omp critical
                done = 1;
            } else if (!strcmp(how, "lock")) {
                omp_set_lock(&lock);
                done = 1;
                omp_unset_lock(&lock);
            } else if (!strcmp(how, "atomic")) {
#pragma omp atomic write
                done = 1;
            } else {
                handed = 1;
            }
        } else {
            for (int seen = 0; !seen;) {
                if (!strcmp(how, "critical")) {
#pragma omp critical
                    seen = done;
                } else if (!strcmp(how, "lock")) {
                    omp_set_lock(&lock);
                    seen = done;
                    omp_unset_lock(&lock);
                } else if (!strcmp(how, "atomic")) {
#pragma omp atomic read
                    seen = done;
                } else {
                    seen = handed;
                }
            }
            got = sum(data);
        }
    }
    omp_destroy_lock(&lock);
    return got;
}

int main(int argc, char **argv) {
    const char *c = argc > 1 ? argv[1] : "";
    shmem_init();
    int me = shmem_my_pe();
    long got = 10, local[4] = {0};
    if (me == 0)
        for (int i = 0; i < 4; i++)
            data[i] = i + 1;
    shmem_barrier_all();
    if (me == 0) {
        pe0(c);
    } else if (!strcmp(c, "master-read") || !strcmp(c, "master-barrier-read")) {
#pragma omp parallel num_threads(2)
        {
#pragma omp master
            shmem_sync_all();
            if (!strcmp(c, "master-barrier-read")) {
#pragma omp barrier
            }
            if (omp_get_thread_num() == 1)
                got = sum(data);
        }
    } else if (!strcmp(c, "sections") || !strcmp(c, "sections-end-read")) {
#pragma omp parallel num_threads(2)
        {
#pragma omp sections
            {
#pragma omp section
                shmem_sync_all();
#pragma omp section
                if (!strcmp(c, "sections"))
                    got = sum(data);
            }
            if (!strcmp(c, "sections-end-read") && omp_get_thread_num() == 0)
                got = sum(data);
        }
    } else if (!strncmp(c, "flag-", 5)) {
        got = flag_case(c + 5);
    } else if (!strncmp(c, "origin-signal", 13)) {
        shmem_long_wait_until(&flag, SHMEM_CMP_EQ, 1);
        got = sum(data);
    } else if (!strncmp(c, "origin-sync", 11)) {
        shmem_sync_all();
        got = sum(data);
    } else if (!strcmp(c, "nbi-volatile") || !strcmp(c, "nbi-barrier")) {
        /* PE 1 gets PE 0's own data into `local`. */
        volatile int handed = 0;
#pragma omp parallel num_threads(2)
        {
            if (omp_get_thread_num() == 0) {
                shmem_long_get_nbi(local, data, 4, 0);
                shmem_quiet();
                handed = 1;
            } else {
                while (!handed)
                    ;
            }
            if (!strcmp(c, "nbi-barrier")) {
#pragma omp barrier
            }
            if (omp_get_thread_num() == 1)
                got = sum(local);
        }
    } else if (!strncmp(c, "nbi-read-first", 14)) {
        /* Thread 1 reads `local`; thread 0 then gets PE 0's data into it. */
        volatile int handed = 0;
        long before = 0;
#pragma omp parallel num_threads(2)
        {
            if (omp_get_thread_num() == 1) {
                before = sum(local);
                handed = 1;
            } else {
                while (!handed)
                    ;
            }
            if (!strcmp(c, "nbi-read-first-barrier")) {
#pragma omp barrier
            }
            if (omp_get_thread_num() == 0) {
                shmem_long_get_nbi(local, data, 4, 0);
                shmem_quiet();
            }
        }
        got = before + sum(local);
    } else {
        printf("races_omp: no case '%s'\n", c);
        return 2;
    }
    shmem_barrier_all();
    if (me == 1 && got != 10)
        printf("races_omp: PE 1 read a sum of %ld (a race's wrong answer)\n", got);
    shmem_finalize();
    return 0;
}
