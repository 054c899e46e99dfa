/*
 * What each rank remembers about its operations: issue numbers, the last
 * COMM_HISTORY operations (printed by the watchdog), the operations running
 * now (watched by the watchdog) and the collectives issued since the last
 * sequence check.
 */
#include "lib/comm/comm_internal.h"

#include "lib/core/timer.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

size_t erase_dtype_size(erase_dtype_t t)
{
    switch (t) {
    case ERASE_DTYPE_F32: return 4;
    case ERASE_DTYPE_F64: return 8;
    case ERASE_DTYPE_I32: return 4;
    case ERASE_DTYPE_I64: return 8;
    case ERASE_DTYPE_U8: return 1;
    }
    return 0;
}

const char *comm_dtype_name(int dtype)
{
    switch (dtype) {
    case ERASE_DTYPE_F32: return "f32";
    case ERASE_DTYPE_F64: return "f64";
    case ERASE_DTYPE_I32: return "i32";
    case ERASE_DTYPE_I64: return "i64";
    case ERASE_DTYPE_U8: return "u8";
    }
    return "?";
}

static const char *reduce_name(int op)
{
    switch (op) {
    case ERASE_REDUCE_SUM: return "sum";
    case ERASE_REDUCE_MEAN: return "mean";
    case ERASE_REDUCE_MAX: return "max";
    }
    return "?";
}

void comm_op_describe(const comm_op_t *op, char *text, size_t size)
{
    unsigned long long n = (unsigned long long)op->count;
    const char *t = comm_dtype_name(op->dtype);
    switch ((comm_op_kind_t)op->kind) {
    case COMM_OP_ALLREDUCE:
        snprintf(text, size, "allreduce(%llu x %s, %s)", n, t, reduce_name(op->reduce));
        return;
    case COMM_OP_BROADCAST:
        snprintf(text, size, "broadcast(%llu x %s, root %d)", n, t, (int)op->peer);
        return;
    case COMM_OP_ALLGATHER: snprintf(text, size, "allgather(%llu x %s)", n, t); return;
    case COMM_OP_ALLGATHERV: snprintf(text, size, "allgatherv(%llu x %s)", n, t); return;
    case COMM_OP_ALLTOALL: snprintf(text, size, "alltoall(%llu x %s)", n, t); return;
    case COMM_OP_ALLTOALLV: snprintf(text, size, "alltoallv(%llu x %s)", n, t); return;
    case COMM_OP_ALLTOALL_SLOTS:
        snprintf(text, size, "alltoall_slots(%d slots x %llu x %s, unit %d)", (int)op->tag,
                 op->tag > 0 ? n / (unsigned long long)op->tag : 0, t, (int)op->unit);
        return;
    case COMM_OP_BARRIER: snprintf(text, size, "barrier()"); return;
    case COMM_OP_SEND:
        snprintf(text, size, "send(%llu x %s, peer %d, tag %d)", n, t, (int)op->peer, (int)op->tag);
        return;
    case COMM_OP_RECV:
        snprintf(text, size, "recv(%llu x %s, peer %d, tag %d)", n, t, (int)op->peer, (int)op->tag);
        return;
    case COMM_OP_CHECK: snprintf(text, size, "check_sequence()"); return;
    case COMM_OP_NCCL_INIT: snprintf(text, size, "nccl_init()"); return;
    }
    snprintf(text, size, "unknown operation %d", (int)op->kind);
}

erase_status_t comm_op_failed(const erase_comm_t *c, const comm_op_t *op, const char *transport, erase_status_t st)
{
    char what[160], why[1024];
    comm_op_describe(op, what, sizeof what);
    snprintf(why, sizeof why, "%s", erase_error_message()[0] ? erase_error_message() : erase_status_name(st));
    return ERASE_ERROR(st, "%s #%llu on %s (rank %d of %d%s): %s", what, (unsigned long long)op->seq, c->name,
                       c->rank, c->size, transport, why);
}

static int is_p2p(const comm_op_t *op)
{
    return op->kind == COMM_OP_SEND || op->kind == COMM_OP_RECV;
}

void comm_log_issue(erase_comm_t *c, comm_op_t *op)
{
    pthread_mutex_lock(&c->lock);
    op->seq = is_p2p(op) ? ++c->p2p_issued : ++c->issued;
    comm_history_t *h = &c->history[c->history_len++ % COMM_HISTORY];
    h->op = *op;
    h->state = COMM_ISSUED;
    if (comm_check_enabled && !is_p2p(op) && !c->log_failed) {
        if (c->log_len == c->log_cap) {
            size_t cap = c->log_cap ? 2 * c->log_cap : 64;
            comm_op_t *grown = realloc(c->log, cap * sizeof *grown);
            if (grown) {
                c->log = grown;
                c->log_cap = cap;
            } else {
                c->log_failed = 1; /* reported by the next check, on every rank */
            }
        }
        if (!c->log_failed)
            c->log[c->log_len++] = *op;
    }
    pthread_mutex_unlock(&c->lock);
}

/* The history entry of `op`, if it is still among the last COMM_HISTORY. */
static comm_history_t *history_find(erase_comm_t *c, const comm_op_t *op)
{
    uint64_t n = c->history_len < COMM_HISTORY ? c->history_len : COMM_HISTORY;
    for (uint64_t i = 0; i < n; i++) {
        comm_history_t *h = &c->history[(c->history_len - 1 - i) % COMM_HISTORY];
        if (h->op.seq == op->seq && is_p2p(&h->op) == is_p2p(op))
            return h;
    }
    return NULL;
}

int comm_log_begin(erase_comm_t *c, const comm_op_t *op)
{
    int64_t now = erase_now_ns();
    int slot = -1;
    pthread_mutex_lock(&c->lock);
    for (int i = 0; i < COMM_RUNNING; i++)
        if (!c->running[i].active) {
            c->running[i].active = 1;
            c->running[i].op = *op;
            c->running[i].start_ns = now;
            slot = i;
            break;
        }
    comm_history_t *h = op->kind >= COMM_OP_CHECK ? NULL : history_find(c, op);
    if (h)
        h->state = COMM_RUNNING_NOW;
    pthread_mutex_unlock(&c->lock);
    return slot;
}

/* The counters' kind of an operation (-1: none: check, NCCL init). */
static int stats_kind(int kind)
{
    switch ((comm_op_kind_t)kind) {
    case COMM_OP_ALLREDUCE: return ERASE_COMM_ALLREDUCE;
    case COMM_OP_BROADCAST: return ERASE_COMM_BROADCAST;
    case COMM_OP_ALLGATHER:
    case COMM_OP_ALLGATHERV: return ERASE_COMM_ALLGATHER;
    case COMM_OP_ALLTOALL:
    case COMM_OP_ALLTOALLV:
    case COMM_OP_ALLTOALL_SLOTS: return ERASE_COMM_ALLTOALL;
    case COMM_OP_BARRIER: return ERASE_COMM_BARRIER;
    case COMM_OP_SEND:
    case COMM_OP_RECV: return ERASE_COMM_P2P;
    case COMM_OP_CHECK:
    case COMM_OP_NCCL_INIT: break;
    }
    return -1;
}

/* Add t to c's counters (lock held). */
static void stats_add_locked(erase_comm_t *c, const comm_op_t *op, const comm_traffic_t *t)
{
    int k = stats_kind(op->kind);
    if (k < 0)
        return;
    erase_comm_counter_t *e = &c->stats.kind[k];
    e->ops++;
    e->bytes_sent += t->sent;
    e->bytes_received += t->received;
    e->seconds += (double)t->ns * 1e-9;
}

void comm_stats_add(erase_comm_t *c, const comm_op_t *op, const comm_traffic_t *t)
{
    pthread_mutex_lock(&c->lock);
    stats_add_locked(c, op, t);
    pthread_mutex_unlock(&c->lock);
}

erase_status_t erase_comm_stats(const erase_comm_t *c, erase_comm_stats_t *out)
{
    if (!c || !out)
        return ERASE_ERROR(ERASE_ERR_INVALID, "erase_comm_stats: NULL %s", c ? "out" : "communicator");
    erase_comm_t *m = (erase_comm_t *)c; /* the lock, not the counters, changes */
    pthread_mutex_lock(&m->lock);
    *out = m->stats;
    pthread_mutex_unlock(&m->lock);
    return ERASE_OK;
}

void erase_comm_stats_reset(erase_comm_t *c)
{
    if (!c)
        return;
    pthread_mutex_lock(&c->lock);
    memset(&c->stats, 0, sizeof c->stats);
    pthread_mutex_unlock(&c->lock);
}

void comm_log_end(erase_comm_t *c, int slot, const comm_op_t *op, int ok, const comm_traffic_t *t)
{
    pthread_mutex_lock(&c->lock);
    if (t)
        stats_add_locked(c, op, t);
    if (slot >= 0)
        c->running[slot].active = 0;
    comm_history_t *h = op->kind >= COMM_OP_CHECK ? NULL : history_find(c, op);
    if (h)
        h->state = ok ? COMM_DONE : COMM_FAILED;
    pthread_mutex_unlock(&c->lock);
}

erase_status_t comm_mpi_error(const char *file, int line, int code, const char *what)
{
    char text[MPI_MAX_ERROR_STRING] = "";
    int len = 0;
    if (MPI_Error_string(code, text, &len) != MPI_SUCCESS)
        snprintf(text, sizeof text, "MPI error %d", code);
    return erase_error_set(ERASE_ERR_COMM, file, line, "%s: %s", what, text);
}
