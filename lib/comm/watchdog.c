/*
 * The watchdog: a thread started by erase_world_init that looks, a few
 * times per limit, at the operations running on each communicator. One that
 * has run longer than the limit (a peer died, or ranks disagree on the
 * collective sequence) makes it print what is stuck and the last
 * COMM_HISTORY operations of that communicator, then take the fatal path
 * (erase_fatal -> MPI_Abort), so that the job ends instead of hanging.
 *
 * NCCL operations (nccl_comm.c) complete on the GPU: each one issued outside
 * a graph capture is followed by an event that the watchdog polls through
 * comm_device_ops()->poll, which also polls NCCL's asynchronous errors.
 */
#include "lib/comm/comm_internal.h"

#include "lib/core/timer.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#define WATCHDOG_MAX_COMMS 8

static struct {
    pthread_t thread;
    int started;
    pthread_mutex_t lock;
    pthread_cond_t cv;  /* stop requests */
    int stop;
    erase_comm_t *comms[WATCHDOG_MAX_COMMS];
    int ncomms;
    double seconds;
} wd = { .lock = PTHREAD_MUTEX_INITIALIZER };

static const char *state_name(comm_op_state_t s)
{
    switch (s) {
    case COMM_ISSUED: return "issued, not started";
    case COMM_RUNNING_NOW: return "running";
    case COMM_DONE: return "done";
    case COMM_FAILED: return "failed";
    }
    return "?";
}

static int op_is_p2p(const comm_op_t *op)
{
    return op->kind == COMM_OP_SEND || op->kind == COMM_OP_RECV;
}

/* Print what is stuck and the comm's last operations, then end the job. */
void comm_watchdog_fire(erase_comm_t *c, const comm_op_t *stuck, double elapsed)
{
    comm_history_t hist[COMM_HISTORY];
    pthread_mutex_lock(&c->lock);
    uint64_t len = c->history_len, n = len < COMM_HISTORY ? len : COMM_HISTORY;
    for (uint64_t i = 0; i < n; i++)
        hist[i] = c->history[(len - n + i) % COMM_HISTORY];
    pthread_mutex_unlock(&c->lock);

    char what[160];
    comm_op_describe(stuck, what, sizeof what);
    char text[8192];
    size_t used = 0;
    int k = snprintf(text, sizeof text,
                     "[rank %d %s] watchdog: %s%s #%llu on %s has not completed after %.0f s; "
                     "last collectives issued:\n",
                     comm_world_rank, comm_host, what, op_is_p2p(stuck) ? " p2p" : "",
                     (unsigned long long)stuck->seq, c->name, elapsed);
    used = k > 0 ? (size_t)k : 0;
    for (uint64_t i = 0; i < n && used < sizeof text; i++) {
        char op[160];
        comm_op_describe(&hist[i].op, op, sizeof op);
        unsigned long long bytes = (unsigned long long)hist[i].op.count *
                                   erase_dtype_size((erase_dtype_t)hist[i].op.dtype);
        k = snprintf(text + used, sizeof text - used, "[rank %d %s]   %s#%llu %s, %llu bytes, %s\n",
                     comm_world_rank, comm_host, op_is_p2p(&hist[i].op) ? "p2p " : "",
                     (unsigned long long)hist[i].op.seq, op, bytes, state_name(hist[i].state));
        if (k > 0)
            used += (size_t)k;
    }
    if (n == 0)
        snprintf(text + used, sizeof text - used, "[rank %d %s]   (none)\n", comm_world_rank,
                 comm_host);
    fputs(text, stderr);
    fflush(stderr);
    erase_error_set(ERASE_ERR_COMM, __FILE__, __LINE__,
                    "%s #%llu on %s has not completed after %.0f s (limit %g s: "
                    "ERASE_WATCHDOG_SECONDS or erase_world_options_t.watchdog_seconds)",
                    what, (unsigned long long)stuck->seq, c->name, elapsed, wd.seconds);
    erase_fatal(__FILE__, __LINE__, "watchdog", ERASE_ERR_COMM);
}

/* Fire if an operation of `c` has run too long. */
static void watchdog_look(erase_comm_t *c, int64_t now, int64_t limit_ns)
{
    comm_op_t stuck = { 0 };
    int64_t oldest = 0;
    int found = 0;
    pthread_mutex_lock(&c->lock);
    for (int i = 0; i < COMM_RUNNING; i++) {
        comm_running_t *r = &c->running[i];
        if (r->active && now - r->start_ns > limit_ns && (!found || r->start_ns < oldest)) {
            stuck = r->op;
            oldest = r->start_ns;
            found = 1;
        }
    }
    pthread_mutex_unlock(&c->lock);
    if (found)
        comm_watchdog_fire(c, &stuck, (double)(now - oldest) * 1e-9);
}

static void *watchdog_main(void *arg)
{
    int64_t limit_ns = (int64_t)(wd.seconds * 1e9);
    int64_t period_ns = limit_ns / 4;
    if (period_ns > 1000000000)
        period_ns = 1000000000;
    if (period_ns < 10000000)
        period_ns = 10000000;
    pthread_mutex_lock(&wd.lock);
    while (!wd.stop) {
        struct timespec until;
        clock_gettime(CLOCK_MONOTONIC, &until);
        int64_t ns = until.tv_nsec + period_ns;
        until.tv_sec += ns / 1000000000;
        until.tv_nsec = ns % 1000000000;
        while (!wd.stop && pthread_cond_timedwait(&wd.cv, &wd.lock, &until) != ETIMEDOUT) {
        }
        if (wd.stop)
            break;
        int n = wd.ncomms;
        erase_comm_t *comms[WATCHDOG_MAX_COMMS];
        memcpy(comms, wd.comms, sizeof comms);
        pthread_mutex_unlock(&wd.lock);
        /* NCCL operations first: retiring the completed ones frees their
         * watch slots before the look at what is still running */
        const comm_device_ops_t *ops = comm_device_ops();
        for (int i = 0; ops && i < n; i++) {
            comm_op_t stuck;
            double age;
            if (ops->poll(comms[i], wd.seconds, &stuck, &age))
                comm_watchdog_fire(comms[i], &stuck, age);
        }
        int64_t now = erase_now_ns();
        for (int i = 0; i < n; i++)
            watchdog_look(comms[i], now, limit_ns);
        pthread_mutex_lock(&wd.lock);
    }
    pthread_mutex_unlock(&wd.lock);
    return NULL;
}

erase_status_t comm_watchdog_start(erase_comm_t *const *comms, int n, double seconds)
{
    if (!(seconds > 0 && seconds <= ERASE_WATCHDOG_MAX_SECONDS)) /* its ns must fit an int64 */
        return ERASE_ERROR(ERASE_ERR_INVALID, "watchdog: %g seconds (expected (0, %g])", seconds,
                           ERASE_WATCHDOG_MAX_SECONDS);
    if (n > WATCHDOG_MAX_COMMS)
        return ERASE_ERROR(ERASE_ERR_INVALID, "watchdog: %d communicators (at most %d)", n,
                           WATCHDOG_MAX_COMMS);
    if (wd.started) /* start and stop: one host thread */
        return ERASE_ERROR(ERASE_ERR_STATE, "watchdog: already running");
    pthread_condattr_t attr;
    pthread_condattr_init(&attr);
    pthread_condattr_setclock(&attr, CLOCK_MONOTONIC);
    pthread_cond_init(&wd.cv, &attr);
    pthread_condattr_destroy(&attr);
    wd.stop = 0;
    wd.ncomms = n;
    for (int i = 0; i < n; i++)
        wd.comms[i] = comms[i];
    wd.seconds = seconds;
    int rc = pthread_create(&wd.thread, NULL, watchdog_main, NULL);
    if (rc != 0) {
        pthread_cond_destroy(&wd.cv);
        return ERASE_ERROR(ERASE_ERR_BACKEND, "watchdog: cannot start its thread (error %d)", rc);
    }
    wd.started = 1;
    return ERASE_OK;
}

void comm_watchdog_stop(void)
{
    if (!wd.started)
        return;
    pthread_mutex_lock(&wd.lock);
    wd.stop = 1;
    pthread_cond_signal(&wd.cv);
    pthread_mutex_unlock(&wd.lock);
    pthread_join(wd.thread, NULL);
    pthread_cond_destroy(&wd.cv);
    wd.started = 0;
    wd.ncomms = 0;
}
