/*
 * comm_wait (lib/comm/comm_internal.h): a stream worker's wait for its MPI
 * send or receive, without busy-polling a core. Open MPI's blocking
 * MPI_Recv / MPI_Waitall spin at 100% of a core however long they wait,
 * and a pipeline stage has up to 4 comm streams waiting while its compute
 * stream runs.
 *
 * The requests are tested with MPI_Testall (which also drives Open MPI's
 * progress) from three places:
 *   - the waiting worker, for the caller's spin_ns, then after every nap;
 *   - while another stream's worker is blocked waiting for this one
 *     (erase_cpu_stream_awaited: the compute stream needs this receive, so
 *     its core idles), naps of WAIT_AWAITED_NS, and a longer nap ends as
 *     soon as the stream becomes awaited (erase_cpu_stream_nap): the
 *     message is seen within a few microseconds;
 *   - otherwise naps doubling from WAIT_SLEEP_MIN_NS to WAIT_SLEEP_MAX_NS,
 *     and meanwhile every CPU stream worker, between its operations, at
 *     most every PROGRESS_EVERY_NS (progress_hook, installed with
 *     erase_cpu_set_progress_hook): it tests every waiting worker's
 *     requests and wakes the worker whose requests completed.
 * Why the last: each nap's end is a timer interrupt and two context
 * switches on the core that runs compute. With naps of at most 100 us and
 * no hook, a 1f1b stage 0 (gpt, P = 2, M = 4) ran its forwards and
 * backwards 1.2-1.45x slower than alone, its pending gradient receive
 * waking ~5,000 times a second; with naps of 1-4 ms and no hook the
 * stages were even, but a send seen complete late held up the next send
 * queued behind it on the stream, which the other stage waited for (the
 * bubble grew with M). Progress from the compute thread's own operation
 * boundaries costs neither a wake-up nor a switch (bench/RESULTS.md,
 * "Pipelines: comm progress between operations").
 * The waiting thread's timer slack is set to WAIT_SLACK_NS (Linux's 50 us
 * default would stretch every short sleep to ~50 us). The caller's
 * comm_log_begin / comm_log_end around it keep the operation visible to
 * the watchdog, which ends the job if it never completes (the loop itself
 * has no time limit). Requests are tested only under `waiters_lock`: MPI
 * forbids two threads testing one request at once.
 */
#include "config.h"

#include "lib/comm/comm_internal.h"

#include "lib/core/timer.h"
#include "lib/device/cpu/cpu.h"

#include <pthread.h>
#include <stdatomic.h>
#include <time.h>
#ifdef __linux__
#include <sys/prctl.h>
#endif

#define WAIT_SLEEP_MIN_NS 1000    /* after the spin, sleep 1 us, 2, 4, ... */
#define WAIT_SLEEP_MAX_NS 1000000 /* ... up to 1 ms between polls */
#define WAIT_AWAITED_NS 2000      /* while a stream waits for this one: every 2 us */
#define WAIT_SLACK_NS 1000UL      /* the waiting thread's timer slack */
#define PROGRESS_EVERY_NS 20000   /* the hook tests at most every 20 us */

typedef struct waiter {
    int n;
    MPI_Request *req;
    MPI_Status *stat;
    int done, rc;          /* guarded by waiters_lock */
    erase_stream_t *stream; /* the waiting worker's stream; NULL off a worker */
    struct waiter *next;
} waiter_t;

static pthread_mutex_t waiters_lock = PTHREAD_MUTEX_INITIALIZER;
static waiter_t *waiters;             /* guarded by waiters_lock */
static atomic_int waiting;            /* how many are in the list */
static _Atomic int64_t progress_last; /* the hook's last test (ns) */
static pthread_once_t hook_once = PTHREAD_ONCE_INIT;

/* Test w's requests unless done; 1 once done. Caller holds waiters_lock. */
static int test_locked(waiter_t *w)
{
    if (!w->done) {
        int done = 0;
        w->rc = MPI_Testall(w->n, w->req, &done, w->stat);
        w->done = done || w->rc != MPI_SUCCESS;
    }
    return w->done;
}

/* Run by CPU stream workers between operations (erase_cpu_set_progress_hook),
 * at most every PROGRESS_EVERY_NS: never waits for the list's lock (a
 * waiter testing holds it), only MPI's and a woken stream's short locks. */
static void progress_hook(void)
{
    if (atomic_load_explicit(&waiting, memory_order_relaxed) == 0)
        return;
    int64_t t = erase_now_ns();
    if (t - atomic_load_explicit(&progress_last, memory_order_relaxed) < PROGRESS_EVERY_NS)
        return;
    if (pthread_mutex_trylock(&waiters_lock) != 0)
        return; /* a waiter is testing right now */
    atomic_store_explicit(&progress_last, t, memory_order_relaxed);
    for (waiter_t *w = waiters; w; w = w->next)
        if (!w->done && test_locked(w) && w->stream)
            erase_cpu_stream_wake(w->stream);
    pthread_mutex_unlock(&waiters_lock);
}

static void install_hook(void) { erase_cpu_set_progress_hook(progress_hook); }

/* Test w (listed); unlist it once done. */
static int test_listed(waiter_t *w)
{
    pthread_mutex_lock(&waiters_lock);
    int done = test_locked(w);
    if (done) {
        waiter_t **p = &waiters;
        while (*p != w)
            p = &(*p)->next;
        *p = w->next;
        atomic_fetch_sub(&waiting, 1);
    }
    pthread_mutex_unlock(&waiters_lock);
    return done;
}

int comm_wait(int n, MPI_Request *req, MPI_Status *stat, int64_t spin_ns)
{
    static _Thread_local int slack_set;
    waiter_t w = { n, req, stat, 0, MPI_SUCCESS, erase_cpu_stream_current(), NULL };
    pthread_mutex_lock(&waiters_lock);
    if (test_locked(&w)) {
        pthread_mutex_unlock(&waiters_lock);
        return w.rc;
    }
    w.next = waiters;
    waiters = &w;
    atomic_fetch_add(&waiting, 1);
    pthread_mutex_unlock(&waiters_lock);
    pthread_once(&hook_once, install_hook);

    int64_t start = erase_now_ns();
    int64_t nap_ns = WAIT_SLEEP_MIN_NS;
    while (!test_listed(&w)) {
        if (erase_now_ns() - start < spin_ns)
            continue;
#ifdef PR_SET_TIMERSLACK
        if (!slack_set)
            prctl(PR_SET_TIMERSLACK, WAIT_SLACK_NS, 0, 0, 0);
#endif
        slack_set = 1;
        if (erase_cpu_stream_awaited()) {
            struct timespec nap = { 0, WAIT_AWAITED_NS };
            nanosleep(&nap, NULL);
        } else {
            erase_cpu_stream_nap(nap_ns); /* ends early: awaited, or the hook saw it done */
            nap_ns = nap_ns * 2 < WAIT_SLEEP_MAX_NS ? nap_ns * 2 : WAIT_SLEEP_MAX_NS;
        }
    }
    return w.rc;
}
