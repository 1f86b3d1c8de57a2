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
 * (the main thread reads after joining the thread), handed-once (the
 * thread runs a pthread_once routine, then sets a volatile int; the main
 * thread, once it sees it, calls pthread_once too, whose return the
 * routine's completion orders), and C11's <threads.h>: handed-callonce
 * (call_once, likewise), handed-mtx, handed-cnd. handed-thrd-volatile
 * (racy) and handed-thrd-join (race-free) start the thread with
 * thrd_create, and join it with thrd_join.
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
#include <threads.h>

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
static pthread_once_t once = PTHREAD_ONCE_INIT;
static once_flag c11_once = ONCE_FLAG_INIT;
static mtx_t c11_mtx;
static cnd_t c11_cnd;
static int c11;
static pthread_t thread;
static thrd_t c11_thread;
static void *(*c11_body)(void *);

/* The routine of a one-time initialization: its end is what orders. */
static void initialized(void) {
}
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
    } else if (!strcmp(how, "once")) {
        pthread_once(&once, initialized);
        handed = 1;
    } else if (!strcmp(how, "callonce")) {
        call_once(&c11_once, initialized);
        handed = 1;
    } else if (!strcmp(how, "mtx") || !strcmp(how, "cnd")) {
        mtx_lock(&c11_mtx);
        done = 1;
        cnd_signal(&c11_cnd);
        mtx_unlock(&c11_mtx);
    }
}

/* Joins the started thread. */
static void join(void) {
    if (c11)
        thrd_join(c11_thread, NULL);
    else
        pthread_join(thread, NULL);
}

/* The main thread's side: it waits for the handover (or joins). */
static void take_over(void) {
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
    } else if (!strcmp(how, "once")) {
        while (!handed)
            ;
        pthread_once(&once, initialized);
    } else if (!strcmp(how, "callonce")) {
        while (!handed)
            ;
        call_once(&c11_once, initialized);
    } else if (!strcmp(how, "mtx")) {
        for (int seen = 0; !seen;) {
            mtx_lock(&c11_mtx);
            seen = done;
            mtx_unlock(&c11_mtx);
        }
    } else if (!strcmp(how, "cnd")) {
        mtx_lock(&c11_mtx);
        while (!done)
            cnd_wait(&c11_cnd, &c11_mtx);
        mtx_unlock(&c11_mtx);
    } else if (!strcmp(how, "join")) {
        join();
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

/* A C11 thread's routine: the case's body. */
static int c11_start(void *arg) {
    c11_body(arg);
    return 0;
}

/* Starts `body` (with thrd_create for the thrd- cases) and waits for its
 * handover (joined, for `join`). */
static void run(void *(*body)(void *)) {
    c11_body = body;
    if (c11 ? thrd_create(&c11_thread, c11_start, NULL) != thrd_success : pthread_create(&thread, NULL, body, NULL) != 0) {
        printf("races_pthread: the thread was not started\n");
        shmem_global_exit(2);
    }
    take_over();
}

/* Joins the thread after the case's own accesses, unless it was joined before. */
static void finish(void) {
    if (strcmp(how, "join"))
        join();
}

int main(int argc, char **argv) {
    const char *c = argc > 1 ? argv[1] : "";
    int provided;
    shmem_init_thread(SHMEM_THREAD_MULTIPLE, &provided);
    int me = shmem_my_pe();
    how = strchr(c, '-') ? strchr(c, '-') + 1 : "";
    if (!strncmp(how, "thrd-", 5)) {
        c11 = 1;
        how += 5;
    }
    mtx_init(&c11_mtx, mtx_plain);
    cnd_init(&c11_cnd);
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
            run(syncer);
            got = sum(data);
            finish();
        }
    } else if (!strncmp(c, "origin-", 7)) {
        if (me == 0) {
            run(putter);
            shmem_sync_all();
            finish();
        } else {
            shmem_sync_all();
            got = sum(data);
        }
    } else if (!strncmp(c, "nbi-", 4)) {
        if (me == 1) {
            run(getter);
            got = sum(local);
            finish();
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
