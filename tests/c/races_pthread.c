/* Races between the POSIX threads of one PE, and their corrections, for
 * the race checker (oshcc --check-races -pthread, rlaunch --check-races):
 * `races_pthread CASE` at 2 PEs. tests/races.rs runs every case, built
 * with GCC and Clang, and checks the verdict.
 *
 * The handed cases: PE 0 puts into PE 1's `data`, quiets and calls
 * shmem_sync_all; on PE 1 a thread the program starts makes the matching
 * shmem_sync_all, then hands over to the main thread, which reads the
 * data. Racy: handed-volatile (through a volatile int, which orders
 * nothing). Race-free: handed-mutex, handed-cond, handed-sem,
 * handed-barrier, handed-atomic, handed-rwlock, handed-spin, handed-join
 * (the main thread reads after joining the thread).
 *
 * origin-volatile (racy): on PE 0 a started thread puts and quiets, and
 * the main thread, after a volatile spin, calls the shmem_sync_all that
 * PE 1 reads after: nothing orders the put before that sync.
 * origin-join (race-free): the main thread joins the thread first.
 *
 * nbi-volatile (racy): on PE 1 a started thread's get_nbi and quiet; the
 * main thread reads the destination after a volatile spin. nbi-join
 * (race-free): after joining the thread.
 */
#define _POSIX_C_SOURCE 200809L
#include <pthread.h>
#include <semaphore.h>
#include <shmem.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>

long data[4];

static const char *how;
static volatile int handed;
static int done;
static atomic_int done_atomic;
static pthread_mutex_t mutex = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t cond = PTHREAD_COND_INITIALIZER;
static sem_t sem;
static pthread_barrier_t barrier;
static pthread_rwlock_t rwlock = PTHREAD_RWLOCK_INITIALIZER;
static pthread_spinlock_t spin;
static long local[4];

static long sum(const long *x) {
    return x[0] + x[1] + x[2] + x[3];
}

/* The started thread's side of a handover. */
static void hand_over(void) {
    if (!strcmp(how, "volatile")) {
        handed = 1;
    } else if (!strcmp(how, "mutex") || !strcmp(how, "cond")) {
        pthread_mutex_lock(&mutex);
        done = 1;
        pthread_cond_signal(&cond);
        pthread_mutex_unlock(&mutex);
    } else if (!strcmp(how, "sem")) {
        sem_post(&sem);
    } else if (!strcmp(how, "barrier")) {
        pthread_barrier_wait(&barrier);
    } else if (!strcmp(how, "atomic")) {
        atomic_store(&done_atomic, 1);
    } else if (!strcmp(how, "rwlock")) {
        pthread_rwlock_wrlock(&rwlock);
        done = 1;
        pthread_rwlock_unlock(&rwlock);
    } else if (!strcmp(how, "spin")) {
        pthread_spin_lock(&spin);
        done = 1;
        pthread_spin_unlock(&spin);
    }
}

/* The main thread's side: it waits for the handover (or joins). */
static void take_over(pthread_t t) {
    if (!strcmp(how, "volatile")) {
        while (!handed)
            ;
    } else if (!strcmp(how, "mutex")) {
        for (int seen = 0; !seen;) {
            pthread_mutex_lock(&mutex);
            seen = done;
            pthread_mutex_unlock(&mutex);
        }
    } else if (!strcmp(how, "cond")) {
        pthread_mutex_lock(&mutex);
        while (!done)
            pthread_cond_wait(&cond, &mutex);
        pthread_mutex_unlock(&mutex);
    } else if (!strcmp(how, "sem")) {
        sem_wait(&sem);
    } else if (!strcmp(how, "barrier")) {
        pthread_barrier_wait(&barrier);
    } else if (!strcmp(how, "atomic")) {
        while (!atomic_load(&done_atomic))
            ;
    } else if (!strcmp(how, "rwlock")) {
        for (int seen = 0; !seen;) {
            pthread_rwlock_rdlock(&rwlock);
            seen = done;
            pthread_rwlock_unlock(&rwlock);
        }
    } else if (!strcmp(how, "spin")) {
        for (int seen = 0; !seen;) {
            pthread_spin_lock(&spin);
            seen = done;
            pthread_spin_unlock(&spin);
        }
    } else if (!strcmp(how, "join")) {
        pthread_join(t, NULL);
    }
}

static void *syncer(void *arg) {
    (void)arg;
    shmem_sync_all();
    hand_over();
    return NULL;
}

static void *putter(void *arg) {
    (void)arg;
    long v[4] = {1, 2, 3, 4};
    shmem_long_put(data, v, 4, 1);
    shmem_quiet();
    hand_over();
    return NULL;
}

static void *getter(void *arg) {
    (void)arg;
    shmem_long_get_nbi(local, data, 4, 0);
    shmem_quiet();
    hand_over();
    return NULL;
}

/* Starts `body` and waits for its handover (joined, for `join`). */
static pthread_t run(void *(*body)(void *)) {
    pthread_t t;
    if (pthread_create(&t, NULL, body, NULL)) {
        printf("races_pthread: pthread_create failed\n");
        shmem_global_exit(2);
    }
    take_over(t);
    return t;
}

/* Joins `t` after the case's own accesses, unless it was joined before. */
static void finish(pthread_t t) {
    if (strcmp(how, "join"))
        pthread_join(t, NULL);
}

int main(int argc, char **argv) {
    const char *c = argc > 1 ? argv[1] : "";
    int provided;
    shmem_init_thread(SHMEM_THREAD_MULTIPLE, &provided);
    int me = shmem_my_pe();
    how = strchr(c, '-') ? strchr(c, '-') + 1 : "";
    sem_init(&sem, 0, 0);
    pthread_barrier_init(&barrier, NULL, 2);
    pthread_spin_init(&spin, PTHREAD_PROCESS_PRIVATE);
    long got = 10;
    if (me == 0)
        for (int i = 0; i < 4; i++)
            data[i] = i + 1;
    shmem_barrier_all();
    if (!strncmp(c, "handed-", 7)) {
        if (me == 0) {
            long v[4] = {1, 2, 3, 4};
            shmem_long_put(data, v, 4, 1);
            shmem_quiet();
            shmem_sync_all();
        } else {
            pthread_t t = run(syncer);
            got = sum(data);
            finish(t);
        }
    } else if (!strncmp(c, "origin-", 7)) {
        if (me == 0) {
            pthread_t t = run(putter);
            shmem_sync_all();
            finish(t);
        } else {
            shmem_sync_all();
            got = sum(data);
        }
    } else if (!strncmp(c, "nbi-", 4)) {
        if (me == 1) {
            pthread_t t = run(getter);
            got = sum(local);
            finish(t);
        }
    } else {
        printf("races_pthread: no case '%s'\n", c);
        return 2;
    }
    shmem_barrier_all();
    if (me == 1 && got != 10)
        printf("races_pthread: PE 1 read a sum of %ld (a race's wrong answer)\n", got);
    shmem_finalize();
    return 0;
}
