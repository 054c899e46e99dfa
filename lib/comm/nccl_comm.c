/*
 * The NCCL communicator on device buffers (builds with NCCL): one ncclComm_t
 * beside each MPI communicator of the world (world, dp, pp, emb), created by
 * erase_world_attach_device, and every collective of comm.h enqueued on
 * the CUDA stream by the calling thread:
 *
 *   all-reduce   ncclAllReduce (sum: ncclSum, max: ncclMax, mean: ncclAvg)
 *   broadcast    ncclBroadcast, in place
 *   all-gather   ncclAllGather
 *   all-gatherv  one group of ncclBroadcast, rank r's block from root r
 *                into recv + displs[r]
 *   all-to-all(v)  one group of ncclSend / ncclRecv to and from every rank
 *   send / recv  ncclSend / ncclRecv (no tags: issue order)
 *   barrier      ncclAllReduce of one int (a device word of the comm)
 *
 * Operations of zero elements are not handed to NCCL (every rank skips
 * them alike, as counts agree); they are still numbered and logged.
 *
 * Bookkeeping is the MPI path's (comm_log.c): numbers, history, the
 * sequence log. Outside a graph capture, each operation takes a watch slot
 * and is followed on its stream by an event of the comm's ring of
 * NCCL_PENDING events; the watchdog thread (and the issuing thread, when
 * the ring is full) retire completed events from the head. Inside a
 * capture the NCCL call becomes a graph node: nothing is watched, and when
 * the sequence check is on a host node before it logs the collective each
 * time the graph runs.
 *
 * Locks: `issue` serializes the NCCL calls of one comm (NCCL communicators
 * are not thread-safe) and is held across them; `ring` guards the event
 * ring and is never held across an NCCL call, so that the watchdog never
 * waits behind a blocked NCCL call. Order: issue, then ring, then the
 * comm's `lock` (comm_log_*).
 */
#include "config.h"

#include "lib/comm/comm_internal.h"

#include "lib/core/timer.h"
#include "lib/device/cuda/cuda.h"

#include <cuda_runtime_api.h>
/* nccl.h declares a few functions with () (not (void)) */
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wstrict-prototypes"
#include <nccl.h>
#pragma GCC diagnostic pop

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#if NCCL_VERSION_CODE < NCCL_VERSION(2, 14, 0)
#error "erase needs NCCL 2.14 or newer (ncclCommInitRankConfig, ncclGetLastError)"
#endif

#define NCCL_PENDING 256        /* operations of one comm watched at once */
#define NCCL_ABORT_SECONDS 10   /* fatal path: how long ncclCommAbort may take */

/* An operation in flight: its event follows it on its stream. */
typedef struct {
    comm_op_t op;
    int slot;                   /* comm_log_begin's watch slot (-1: none) */
    int64_t issued_ns;
} pending_t;

/* A collective captured into a graph while the sequence check is on; its
 * host node logs it on every replay (kept until finalize). */
typedef struct host_log {
    struct host_log *next;
    erase_comm_t *c;
    comm_op_t op;
} host_log_t;

typedef struct {
    erase_comm_t *c;            /* the MPI communicator it mirrors */
    ncclComm_t comm;            /* NULL: not created */
    char group[24];             /* "world", "dp0", "pp1": id file names, logs */
    pthread_mutex_t issue;      /* held across the NCCL calls of this comm */
    pthread_mutex_t ring_lock;  /* guards the ring and host_logs */
    cudaEvent_t events[NCCL_PENDING];
    pending_t ring[NCCL_PENDING];
    size_t head, len;           /* in-flight operations: ring[head .. head+len) */
    int *barrier_word;          /* device int for erase_barrier */
    host_log_t *host_logs;
    int locks_ready;
} nccl_comm_t;

static struct {
    erase_device_t *dev;        /* the attached CUDA device */
    int ordinal;
    char bus_id[32];
    int version;                /* ncclGetVersion */
    nccl_comm_t comms[4];       /* world, dp, pp, emb */
    int ncomms;
    int abort_started;          /* atomic: the fatal path began ncclCommAbort */
    int abort_done;             /* atomic: the abort thread finished */
} ng;

/* ---- errors ---------------------------------------------------------------- */

/* Turn an NCCL result into a status: ERASE_ERR_COMM for system and remote
 * errors (a peer or the network), ERASE_ERR_BACKEND otherwise, with
 * "what: <ncclGetErrorString> (<ncclGetLastError>)". */
static erase_status_t nccl_error(const char *file, int line, ncclResult_t rc, ncclComm_t comm,
                                 const char *what)
{
    const char *last = ncclGetLastError(comm);
    int has_last = last && *last;
    erase_status_t st = rc == ncclSystemError || rc == ncclRemoteError ? ERASE_ERR_COMM
                                                                        : ERASE_ERR_BACKEND;
    return erase_error_set(st, file, line, "%s: %s%s%s%s", what, ncclGetErrorString(rc),
                           has_last ? " (" : "", has_last ? last : "", has_last ? ")" : "");
}

#define NCCL_CHECK(call, comm)                                                      \
    do {                                                                            \
        ncclResult_t nccl_rc_ = (call);                                             \
        if (nccl_rc_ != ncclSuccess)                                                \
            return nccl_error(__FILE__, __LINE__, nccl_rc_, (comm), #call);         \
    } while (0)

/* Inside ncclGroupStart: on failure close the group (its result is not
 * interesting any more) before returning the call's error. */
#define NCCL_CHECK_GROUP(call, comm)                                                \
    do {                                                                            \
        ncclResult_t nccl_rc_ = (call);                                             \
        if (nccl_rc_ != ncclSuccess) {                                              \
            erase_status_t nccl_st_ = nccl_error(__FILE__, __LINE__, nccl_rc_, (comm), #call); \
            (void)ncclGroupEnd();                                                   \
            return nccl_st_;                                                        \
        }                                                                           \
    } while (0)

/* "NCCL 2.28.9" from a version code (2.9 and later: major*10000+minor*100+patch). */
static void version_text(int v, char *text, size_t size)
{
    if (v >= 10000)
        snprintf(text, size, "NCCL %d.%d.%d", v / 10000, (v / 100) % 100, v % 100);
    else
        snprintf(text, size, "NCCL %d.%d.%d", v / 1000, (v / 100) % 10, v % 100);
}

static nccl_comm_t *find(const erase_comm_t *c)
{
    for (int i = 0; i < ng.ncomms; i++)
        if (ng.comms[i].c == c && ng.comms[i].comm)
            return &ng.comms[i];
    return NULL;
}

/* Make the attached GPU current on the calling thread from its ordinal
 * alone: the watchdog and erase_world_finalize may run after the
 * application closed the erase device (erase-train and erase-bench close
 * it before erase_world_finalize), so ng.dev must not be dereferenced
 * there. */
static erase_status_t use_ordinal(void)
{
    int cur = -1;
    if (cudaGetDevice(&cur) == cudaSuccess && cur == ng.ordinal)
        return ERASE_OK;
    ERASE_CUDA_CHECK(cudaSetDevice(ng.ordinal));
    return ERASE_OK;
}

/* ---- the event ring (watchdog) --------------------------------------------- */

/* Retire completed operations from the head (ring_lock held). Stops at the
 * first one not done. Errors: ERASE_ERR_BACKEND when CUDA reports a fault
 * (a sticky error of the context: nothing on this GPU can go on). */
static erase_status_t ring_retire(nccl_comm_t *n)
{
    while (n->len > 0) {
        size_t i = n->head;
        cudaError_t q = cudaEventQuery(n->events[i]);
        if (q == cudaErrorNotReady)
            break;
        if (q != cudaSuccess) {
            char what[200];
            comm_op_describe(&n->ring[i].op, what, sizeof what);
            comm_log_end(n->c, n->ring[i].slot, &n->ring[i].op, 0, NULL);
            n->head = (n->head + 1) % NCCL_PENDING;
            n->len--;
            char text[300];
            snprintf(text, sizeof text, "cudaEventQuery after %s #%llu on %s", what,
                     (unsigned long long)n->ring[i].op.seq, n->c->name);
            return erase_cuda_error(__FILE__, __LINE__, q, text);
        }
        comm_log_end(n->c, n->ring[i].slot, &n->ring[i].op, 1, NULL);
        n->head = (n->head + 1) % NCCL_PENDING;
        n->len--;
    }
    return ERASE_OK;
}

/* Follow the operation just enqueued on cs with the next event of the ring
 * (issue lock held). A full ring (NCCL_PENDING operations of this comm in
 * flight) first waits for its oldest operation: the host is throttled
 * rather than an operation left unwatched. */
static erase_status_t ring_push(nccl_comm_t *n, const comm_op_t *op, int slot, cudaStream_t cs)
{
    pthread_mutex_lock(&n->ring_lock);
    erase_status_t st = ring_retire(n);
    while (st == ERASE_OK && n->len == NCCL_PENDING) {
        cudaEvent_t oldest = n->events[n->head];
        pthread_mutex_unlock(&n->ring_lock); /* the watchdog keeps polling meanwhile */
        cudaError_t e = cudaEventSynchronize(oldest);
        pthread_mutex_lock(&n->ring_lock);
        if (e != cudaSuccess) {
            st = erase_cuda_error(__FILE__, __LINE__, e, "cudaEventSynchronize (NCCL ring full)");
            break;
        }
        st = ring_retire(n);
    }
    if (st == ERASE_OK) {
        size_t i = (n->head + n->len) % NCCL_PENDING;
        cudaError_t e = cudaEventRecord(n->events[i], cs);
        if (e == cudaSuccess) {
            n->ring[i] = (pending_t){ .op = *op, .slot = slot, .issued_ns = erase_now_ns() };
            n->len++;
        } else {
            st = erase_cuda_error(__FILE__, __LINE__, e, "cudaEventRecord (NCCL watch)");
        }
    }
    pthread_mutex_unlock(&n->ring_lock);
    return st;
}

/* ---- operations ------------------------------------------------------------- */

static ncclDataType_t nccl_type(int dtype)
{
    switch (dtype) {
    case ERASE_DTYPE_F32: return ncclFloat32;
    case ERASE_DTYPE_F64: return ncclFloat64;
    case ERASE_DTYPE_I32: return ncclInt32;
    case ERASE_DTYPE_I64: return ncclInt64;
    default: return ncclUint8; /* ERASE_DTYPE_U8; others are rejected when issued */
    }
}

static ncclRedOp_t nccl_op(int reduce)
{
    switch (reduce) {
    case ERASE_REDUCE_MAX: return ncclMax;
    case ERASE_REDUCE_MEAN: return ncclAvg;
    default: return ncclSum;
    }
}

/* Block r of an all-to-all(v), in elements: which = 0 send count, 1 send
 * displacement, 2 receive count, 3 receive displacement. */
static size_t a2a_get(const comm_args_t *a, int n, int which, int r)
{
    if (a->op.kind == COMM_OP_ALLTOALLV)
        return (size_t)a->vec[which * n + r];
    return (which & 1) ? (size_t)r * (size_t)a->op.count : (size_t)a->op.count;
}

/* The bytes an operation moves to and from other ranks (erase_comm_stats;
 * NCCL: the fixed-size transfers, a counted all-to-all's whole slots). */
static comm_traffic_t nominal_traffic(const erase_comm_t *c, const comm_args_t *a)
{
    const comm_op_t *op = &a->op;
    uint64_t n = (uint64_t)c->size, es = erase_dtype_size((erase_dtype_t)op->dtype);
    uint64_t bytes = op->count * es;
    comm_traffic_t t = { 0, 0, 0 };
    switch ((comm_op_kind_t)op->kind) {
    case COMM_OP_ALLREDUCE: t.sent = t.received = 2 * (n - 1) * bytes / n; break;
    case COMM_OP_BROADCAST:
        if (op->peer == c->rank)
            t.sent = (n - 1) * bytes;
        else
            t.received = bytes;
        break;
    case COMM_OP_ALLGATHER:
    case COMM_OP_ALLTOALL:
    case COMM_OP_ALLTOALL_SLOTS: t.sent = t.received = (n - 1) * bytes; break;
    case COMM_OP_ALLGATHERV:
        t.sent = (n - 1) * a->vec[c->rank] * es;
        t.received = bytes - a->vec[c->rank] * es;
        break;
    case COMM_OP_ALLTOALLV:
        for (int r = 0; r < c->size; r++)
            if (r != c->rank) {
                t.sent += a2a_get(a, c->size, 0, r) * es;
                t.received += a2a_get(a, c->size, 2, r) * es;
            }
        break;
    case COMM_OP_SEND: t.sent = bytes; break;
    case COMM_OP_RECV: t.received = bytes; break;
    default: break;
    }
    return t;
}

/* Enqueue the NCCL calls of one operation on cs (issue lock held). */
static erase_status_t enqueue(nccl_comm_t *n, const comm_args_t *a, cudaStream_t cs)
{
    const comm_op_t *op = &a->op;
    ncclComm_t comm = n->comm;
    int size = n->c->size, rank = n->c->rank;
    size_t es = erase_dtype_size((erase_dtype_t)op->dtype), count = (size_t)op->count;
    ncclDataType_t t = nccl_type(op->dtype);
    char *recv = a->recv;
    const char *send = a->send;
    switch ((comm_op_kind_t)op->kind) {
    case COMM_OP_ALLREDUCE:
        if (count)
            NCCL_CHECK(ncclAllReduce(send, recv, count, t, nccl_op(op->reduce), comm, cs), comm);
        return ERASE_OK;
    case COMM_OP_BROADCAST:
        if (count)
            NCCL_CHECK(ncclBroadcast(recv, recv, count, t, op->peer, comm, cs), comm);
        return ERASE_OK;
    case COMM_OP_ALLGATHER:
        if (count)
            NCCL_CHECK(ncclAllGather(send, recv, count, t, comm, cs), comm);
        return ERASE_OK;
    case COMM_OP_ALLGATHERV:
        if (count == 0) /* total elements: the same on every rank */
            return ERASE_OK;
        NCCL_CHECK(ncclGroupStart(), comm);
        for (int r = 0; r < size; r++) {
            size_t cnt = (size_t)a->vec[r], displ = (size_t)a->vec[size + r];
            char *dst = recv + displ * es;
            if (cnt) /* the root's send buffer is read only on the root */
                NCCL_CHECK_GROUP(ncclBroadcast(r == rank ? (const void *)send : dst, dst, cnt, t,
                                               r, comm, cs), comm);
        }
        NCCL_CHECK(ncclGroupEnd(), comm);
        return ERASE_OK;
    case COMM_OP_ALLTOALL:
    case COMM_OP_ALLTOALLV:
    case COMM_OP_ALLTOALL_SLOTS: /* whole slots: a2a_get's fixed block of slots x slot_elems */
        NCCL_CHECK(ncclGroupStart(), comm);
        for (int r = 0; r < size; r++) {
            size_t sc = a2a_get(a, size, 0, r), rc = a2a_get(a, size, 2, r);
            if (sc)
                NCCL_CHECK_GROUP(ncclSend(send + a2a_get(a, size, 1, r) * es, sc, t, r, comm, cs),
                                 comm);
            if (rc)
                NCCL_CHECK_GROUP(ncclRecv(recv + a2a_get(a, size, 3, r) * es, rc, t, r, comm, cs),
                                 comm);
        }
        NCCL_CHECK(ncclGroupEnd(), comm);
        return ERASE_OK;
    case COMM_OP_BARRIER:
        NCCL_CHECK(ncclAllReduce(n->barrier_word, n->barrier_word, 1, ncclInt32, ncclSum, comm,
                                 cs), comm);
        return ERASE_OK;
    case COMM_OP_SEND:
        if (count)
            NCCL_CHECK(ncclSend(send, count, t, op->peer, comm, cs), comm);
        return ERASE_OK;
    case COMM_OP_RECV:
        if (count)
            NCCL_CHECK(ncclRecv(recv, count, t, op->peer, comm, cs), comm);
        return ERASE_OK;
    case COMM_OP_CHECK:
    case COMM_OP_NCCL_INIT:
        break;
    }
    return ERASE_ERROR(ERASE_ERR_INVALID, "not a stream operation: %d", (int)op->kind);
}

/* Host node of a captured collective: log it as issued now (no CUDA call). */
static void CUDART_CB host_log_run(void *arg)
{
    host_log_t *h = arg;
    comm_op_t op = h->op;
    comm_log_issue(h->c, &op);
}

/* While capturing with the sequence check on: a host node that logs `op`
 * on every replay, before the collective. */
static erase_status_t add_host_log(nccl_comm_t *n, const comm_op_t *op, cudaStream_t cs)
{
    host_log_t *h = calloc(1, sizeof *h);
    if (!h)
        return ERASE_ERROR(ERASE_ERR_NOMEM, "NCCL: no memory for a captured collective's log");
    h->c = n->c;
    h->op = *op;
    cudaError_t e = cudaLaunchHostFunc(cs, host_log_run, h);
    if (e != cudaSuccess) {
        free(h);
        return erase_cuda_error(__FILE__, __LINE__, e, "cudaLaunchHostFunc (sequence log)");
    }
    pthread_mutex_lock(&n->ring_lock);
    h->next = n->host_logs;
    n->host_logs = h;
    pthread_mutex_unlock(&n->ring_lock);
    return ERASE_OK;
}

/* comm_device_ops_t.issue */
static erase_status_t nccl_issue(erase_comm_t *c, erase_stream_t *s, const comm_args_t *a)
{
    nccl_comm_t *n = find(c);
    if (!n)
        return ERASE_ERROR(ERASE_ERR_STATE, "NCCL: communicator %s has no NCCL communicator",
                           c->name);
    if (erase_stream_device(s) != ng.dev)
        return ERASE_ERROR(ERASE_ERR_INVALID, "NCCL: the stream belongs to another device than "
                           "the one attached with erase_world_attach_device (CUDA device %d)",
                           ng.ordinal);
    cudaStream_t cs = erase_cuda_stream(s);
    ERASE_CHECK(erase_cuda_make_current(ng.dev));
    enum cudaStreamCaptureStatus cap = cudaStreamCaptureStatusNone;
    ERASE_CUDA_CHECK(cudaStreamIsCapturing(cs, &cap));
    int capturing = cap != cudaStreamCaptureStatusNone;
    comm_op_t op = a->op;
    int slot = -1;
    if (!capturing) {
        comm_log_issue(c, &op);
        slot = comm_log_begin(c, &op);
    }
    erase_status_t st = ERASE_OK;
    pthread_mutex_lock(&n->issue);
    if (capturing && comm_check_enabled && op.kind != COMM_OP_SEND && op.kind != COMM_OP_RECV)
        st = add_host_log(n, &op, cs);
    if (st == ERASE_OK)
        st = enqueue(n, a, cs);
    if (st == ERASE_OK && !capturing)
        st = ring_push(n, &op, slot, cs);
    pthread_mutex_unlock(&n->issue);
    if (st == ERASE_OK && !capturing) {
        comm_traffic_t t = nominal_traffic(c, a);
        comm_stats_add(c, &op, &t);
    }
    if (st != ERASE_OK) {
        if (!capturing)
            comm_log_end(c, slot, &op, 0, NULL);
        return comm_op_failed(c, &op, ", NCCL", st);
    }
    return ERASE_OK;
}

/* comm_device_ops_t.poll (watchdog thread). */
static int nccl_poll(erase_comm_t *c, double limit_s, comm_op_t *stuck, double *age_s)
{
    static __thread int thread_ready;
    /* the fatal path is aborting (ncclCommAbort frees the communicators):
     * polling them now would touch freed memory; the job is ending anyway */
    if (__atomic_load_n(&ng.abort_started, __ATOMIC_ACQUIRE))
        return 0;
    nccl_comm_t *n = find(c);
    if (!n)
        return 0;
    erase_status_t st = use_ordinal();
    if (st != ERASE_OK)
        erase_fatal(__FILE__, __LINE__, "NCCL watchdog", st);
    if (!thread_ready) {
        /* the watchdog's queries must not disturb (or be refused by) a
         * capture in cudaStreamCaptureModeGlobal on another thread */
        enum cudaStreamCaptureMode mode = cudaStreamCaptureModeRelaxed;
        cudaError_t e = cudaThreadExchangeStreamCaptureMode(&mode);
        if (e != cudaSuccess)
            erase_fatal(__FILE__, __LINE__, "NCCL watchdog",
                        erase_cuda_error(__FILE__, __LINE__, e,
                                         "cudaThreadExchangeStreamCaptureMode"));
        thread_ready = 1;
    }
    ncclResult_t async = ncclSuccess;
    ncclResult_t rc = ncclCommGetAsyncError(n->comm, &async);
    if (rc != ncclSuccess)
        erase_fatal(__FILE__, __LINE__, "NCCL watchdog",
                    nccl_error(__FILE__, __LINE__, rc, n->comm, "ncclCommGetAsyncError"));
    if (async != ncclSuccess && async != ncclInProgress) {
        char what[96];
        snprintf(what, sizeof what, "asynchronous NCCL error on communicator %s", c->name);
        erase_fatal(__FILE__, __LINE__, "NCCL watchdog",
                    nccl_error(__FILE__, __LINE__, async, n->comm, what));
    }
    pthread_mutex_lock(&n->ring_lock);
    st = ring_retire(n);
    int late = 0;
    if (st == ERASE_OK && n->len > 0) {
        const pending_t *p = &n->ring[n->head];
        double age = (double)(erase_now_ns() - p->issued_ns) * 1e-9;
        if (age > limit_s) {
            *stuck = p->op;
            *age_s = age;
            late = 1;
        }
    }
    pthread_mutex_unlock(&n->ring_lock);
    if (st != ERASE_OK)
        erase_fatal(__FILE__, __LINE__, "NCCL watchdog", st);
    return late;
}

/* The fatal path's ncclCommAbort of every communicator, on its own thread. */
static void *abort_main(void *arg)
{
    (void)arg;
    (void)cudaSetDevice(ng.ordinal);
    for (int i = ng.ncomms - 1; i >= 0; i--)
        if (ng.comms[i].comm)
            (void)ncclCommAbort(ng.comms[i].comm); /* the job is going down: no report */
    __atomic_store_n(&ng.abort_done, 1, __ATOMIC_RELEASE);
    return NULL;
}

/* comm_device_ops_t.abort_all: ncclCommAbort on every communicator, so that
 * no kernel of this rank keeps waiting for a peer, but at most
 * NCCL_ABORT_SECONDS: MPI_Abort follows either way. Any thread, once (a
 * second fatal goes straight on). */
static void nccl_abort_all(void)
{
    if (__atomic_exchange_n(&ng.abort_started, 1, __ATOMIC_ACQ_REL))
        return;
    pthread_t t;
    if (pthread_create(&t, NULL, abort_main, NULL) != 0) {
        abort_main(NULL);
        return;
    }
    pthread_detach(t);
    for (int i = 0; i < NCCL_ABORT_SECONDS * 100; i++) {
        if (__atomic_load_n(&ng.abort_done, __ATOMIC_ACQUIRE))
            return;
        struct timespec ts = { 0, 10000000L };
        nanosleep(&ts, NULL);
    }
    fprintf(stderr, "[rank %d %s] nccl: ncclCommAbort has not returned after %d s; going on "
            "with MPI_Abort\n", comm_world_rank, comm_host, NCCL_ABORT_SECONDS);
}

/* Free what attach made for one comm; `abort`: ncclCommAbort (a failed
 * attach, non-collective) rather than finalize + destroy (collective). */
static void teardown(nccl_comm_t *n, int abort)
{
    if (n->comm) {
        ncclResult_t rc = ncclSuccess;
        const char *call = "ncclCommAbort";
        if (abort) {
            rc = ncclCommAbort(n->comm);
        } else {
            call = "ncclCommFinalize";
            rc = ncclCommFinalize(n->comm);
            if (rc == ncclSuccess) {
                call = "ncclCommDestroy";
                rc = ncclCommDestroy(n->comm);
            } else {
                (void)ncclCommAbort(n->comm);
            }
        }
        if (rc != ncclSuccess)
            fprintf(stderr, "[rank %d %s] nccl: %s (communicator %s): %s\n", comm_world_rank,
                    comm_host, call, n->group, ncclGetErrorString(rc));
        n->comm = NULL;
    }
    for (int i = 0; i < NCCL_PENDING; i++)
        if (n->events[i]) {
            (void)cudaEventDestroy(n->events[i]);
            n->events[i] = NULL;
        }
    if (n->barrier_word)
        (void)cudaFree(n->barrier_word);
    n->barrier_word = NULL;
    while (n->host_logs) {
        host_log_t *next = n->host_logs->next;
        free(n->host_logs);
        n->host_logs = next;
    }
    if (n->locks_ready) {
        pthread_mutex_destroy(&n->issue);
        pthread_mutex_destroy(&n->ring_lock);
        n->locks_ready = 0;
    }
}

/* comm_device_ops_t.finalize: the streams are synchronized; retire what is
 * left, then ncclCommFinalize + ncclCommDestroy (collective: every rank
 * finalizes). */
static void nccl_finalize(void)
{
    if (use_ordinal() != ERASE_OK) {
        fprintf(stderr, "[rank %d %s] nccl: finalize: %s\n", comm_world_rank, comm_host,
                erase_error_message());
        erase_error_clear();
    }
    for (int i = ng.ncomms - 1; i >= 0; i--) {
        nccl_comm_t *n = &ng.comms[i];
        pthread_mutex_lock(&n->ring_lock);
        while (n->len > 0) {
            (void)cudaEventSynchronize(n->events[n->head]);
            if (ring_retire(n) != ERASE_OK) {
                fprintf(stderr, "[rank %d %s] nccl: finalize: %s\n", comm_world_rank, comm_host,
                        erase_error_message());
                erase_error_clear();
            }
        }
        pthread_mutex_unlock(&n->ring_lock);
        teardown(n, 0);
    }
    memset(&ng, 0, sizeof ng);
}

static const comm_device_ops_t nccl_ops = {
    .issue = nccl_issue,
    .poll = nccl_poll,
    .abort_all = nccl_abort_all,
    .finalize = nccl_finalize,
};

/* ---- attach ------------------------------------------------------------------ */

/* Every rank of this host on another GPU than the others (PCI bus ids over
 * the host's ranks), decided alike on every rank of the world. */
static erase_status_t check_gpus_distinct(erase_comm_t *world)
{
    MPI_Comm local;
    COMM_MPI_CHECK(MPI_Comm_split_type(world->check, MPI_COMM_TYPE_SHARED, world->rank,
                                       MPI_INFO_NULL, &local),
                   "MPI_Comm_split_type (ranks of this host)");
    int lsize = 0;
    MPI_Comm_size(local, &lsize);
    typedef struct {
        char bus[32];
        int rank, ordinal;
    } gpu_t;
    gpu_t mine = { .rank = world->rank, .ordinal = ng.ordinal };
    snprintf(mine.bus, sizeof mine.bus, "%s", ng.bus_id);
    gpu_t *all = calloc((size_t)lsize, sizeof *all);
    int bad = !all;
    int rc = MPI_SUCCESS;
    if (all)
        rc = MPI_Allgather(&mine, (int)sizeof mine, MPI_BYTE, all, (int)sizeof mine, MPI_BYTE,
                           local);
    MPI_Comm_free(&local);
    if (rc != MPI_SUCCESS) {
        free(all);
        return comm_mpi_error(__FILE__, __LINE__, rc, "MPI_Allgather (GPU bus ids)");
    }
    int a = -1, b = -1;
    for (int i = 0; all && i < lsize && a < 0; i++)
        for (int j = i + 1; j < lsize; j++)
            if (strcmp(all[i].bus, all[j].bus) == 0) {
                a = i;
                b = j;
                break;
            }
    bad |= a >= 0;
    int any = 0;
    rc = MPI_Allreduce(&bad, &any, 1, MPI_INT, MPI_MAX, world->check);
    erase_status_t st = ERASE_OK;
    if (rc != MPI_SUCCESS)
        st = comm_mpi_error(__FILE__, __LINE__, rc, "MPI_Allreduce (GPU check)");
    else if (!all)
        st = ERASE_ERROR(ERASE_ERR_NOMEM, "erase_world_attach_device: no memory for %d bus ids",
                         lsize);
    else if (a >= 0)
        st = ERASE_ERROR(ERASE_ERR_INVALID,
                         "erase_world_attach_device: ranks %d and %d on host %s both use the GPU "
                         "at PCI %s (CUDA devices %d and %d); NCCL needs one GPU per rank: open "
                         "device ordinal = local rank, or give each rank its own "
                         "CUDA_VISIBLE_DEVICES", all[a].rank, all[b].rank, comm_host, all[a].bus,
                         all[a].ordinal, all[b].ordinal);
    else if (any)
        st = ERASE_ERROR(ERASE_ERR_INVALID, "erase_world_attach_device: two ranks of another "
                         "host share a GPU (their message names them)");
    free(all);
    return st;
}

/* Create the NCCL communicator of one group: id from rank 0 of the group
 * (MPI_Bcast, or the id directory), then ncclCommInitRankConfig (blocking),
 * watched by the watchdog as "nccl_init()". */
static erase_status_t create_one(nccl_comm_t *n, const char *id_dir)
{
    erase_comm_t *c = n->c;
    pthread_mutex_init(&n->issue, NULL);
    pthread_mutex_init(&n->ring_lock, NULL);
    n->locks_ready = 1;
    for (int i = 0; i < NCCL_PENDING; i++)
        ERASE_CUDA_CHECK(cudaEventCreateWithFlags(&n->events[i], cudaEventDisableTiming));
    ERASE_CUDA_CHECK(cudaMalloc((void **)&n->barrier_word, sizeof(int)));
    ERASE_CUDA_CHECK(cudaMemset(n->barrier_word, 0, sizeof(int)));

    ncclUniqueId id;
    memset(&id, 0, sizeof id);
    if (c->rank == 0)
        NCCL_CHECK(ncclGetUniqueId(&id), NULL);
    if (id_dir)
        ERASE_CHECK(comm_id_exchange_fs(id_dir, n->group, c->rank == 0, &id, sizeof id, 0));
    else
        COMM_MPI_CHECK(MPI_Bcast(&id, (int)sizeof id, MPI_BYTE, 0, c->check),
                       "MPI_Bcast (NCCL unique id)");

    comm_op_t op = { .kind = COMM_OP_NCCL_INIT };
    int slot = comm_log_begin(c, &op); /* a rank that never joins: the watchdog ends the job */
    ncclConfig_t config = NCCL_CONFIG_INITIALIZER;
    config.blocking = 1;
    ncclResult_t rc = ncclCommInitRankConfig(&n->comm, c->size, id, c->rank, &config);
    comm_log_end(c, slot, &op, rc == ncclSuccess, NULL);
    if (rc != ncclSuccess) {
        n->comm = NULL;
        char what[96];
        snprintf(what, sizeof what, "ncclCommInitRankConfig (communicator %s, rank %d of %d)",
                 n->group, c->rank, c->size);
        return nccl_error(__FILE__, __LINE__, rc, NULL, what);
    }
    if (id_dir && c->rank == 0) /* every rank has joined: the id was read */
        comm_id_file_remove(id_dir, n->group);
    return ERASE_OK;
}

erase_status_t erase_world_attach_device(erase_device_t *dev)
{
    if (!dev)
        return ERASE_ERROR(ERASE_ERR_INVALID, "erase_world_attach_device: device is NULL");
    erase_comm_t *comms[4] = { erase_world_comm(), erase_dp_comm(), erase_pp_comm(), erase_emb_comm() };
    if (!comms[0])
        return ERASE_ERROR(ERASE_ERR_STATE, "erase_world_attach_device: call erase_world_init "
                           "first");
    erase_comm_t *world = comms[0];
    int kind = (int)erase_device_kind(dev);
    int mine[2] = { kind, -kind }, all[2];
    COMM_MPI_CHECK(MPI_Allreduce(mine, all, 2, MPI_INT, MPI_MAX, world->check),
                   "MPI_Allreduce (device kinds)");
    if (all[0] != -all[1])
        return ERASE_ERROR(ERASE_ERR_INVALID, "erase_world_attach_device: the ranks attach "
                           "devices of different kinds (CPU and CUDA); every rank must compute "
                           "on the same kind");
    if (kind == ERASE_DEVICE_CPU)
        return ERASE_OK; /* the MPI communicators serve CPU streams already */
    if (kind != ERASE_DEVICE_CUDA)
        return ERASE_ERROR(ERASE_ERR_UNSUPPORTED, "erase_world_attach_device: device kind %d "
                           "has no communicator", kind);
    if (comm_device_ops() || ng.dev) /* the same on every rank: no one is left waiting */
        return ERASE_ERROR(ERASE_ERR_STATE, "erase_world_attach_device: a CUDA device is "
                           "already attached");

    memset(&ng, 0, sizeof ng);
    ng.dev = dev;
    ng.ordinal = erase_cuda_ordinal(dev);
    erase_status_t st = ERASE_OK;
    ERASE_CHECK_GOTO(erase_cuda_make_current(dev), st, fail);
    cudaError_t e = cudaDeviceGetPCIBusId(ng.bus_id, (int)sizeof ng.bus_id, ng.ordinal);
    if (e != cudaSuccess) {
        st = erase_cuda_error(__FILE__, __LINE__, e, "cudaDeviceGetPCIBusId");
        goto fail;
    }
    ncclResult_t rc = ncclGetVersion(&ng.version);
    if (rc != ncclSuccess) {
        st = nccl_error(__FILE__, __LINE__, rc, NULL, "ncclGetVersion");
        goto fail;
    }
    ERASE_CHECK_GOTO(check_gpus_distinct(world), st, fail);

    const char *id_dir = getenv("ERASE_NCCL_ID_DIR");
    if (id_dir && !*id_dir)
        id_dir = NULL;
    if (id_dir) { /* fail before anything waits on a file that cannot be named */
        char job[128];
        ERASE_CHECK_GOTO(comm_job_id(job, sizeof job), st, fail);
    }
    /* dp groups are numbered by their stage (pp rank), pp groups by their
     * replica (dp rank): rank = dp_rank * pp_size + pp_rank */
    int pp_size = comms[2]->size;
    int pp_rank = world->rank % pp_size, dp_rank = world->rank / pp_size;
    snprintf(ng.comms[0].group, sizeof ng.comms[0].group, "world");
    snprintf(ng.comms[1].group, sizeof ng.comms[1].group, "dp%d", pp_rank);
    snprintf(ng.comms[2].group, sizeof ng.comms[2].group, "pp%d", dp_rank);
    snprintf(ng.comms[3].group, sizeof ng.comms[3].group, "emb%d", pp_rank); /* the dp group again */
    for (int i = 0; i < 4; i++) { /* the same order on every rank */
        ng.comms[i].c = comms[i];
        ng.ncomms = i + 1;
        ERASE_CHECK_GOTO(create_one(&ng.comms[i], id_dir), st, fail);
    }

    char version[48];
    version_text(ng.version, version, sizeof version);
    int local_rank = 0;
    {
        MPI_Comm local;
        if (MPI_Comm_split_type(world->check, MPI_COMM_TYPE_SHARED, world->rank, MPI_INFO_NULL,
                                &local) == MPI_SUCCESS) {
            MPI_Comm_rank(local, &local_rank);
            MPI_Comm_free(&local);
        }
    }
    if (comm_verbose >= 1)
        fprintf(stderr, "[rank %d %s] nccl: %s on CUDA device %d (PCI %s), local rank %d, world "
                "rank %d of %d, dp rank %d of %d, pp rank %d of %d, id over %s\n",
                comm_world_rank, comm_host, version, ng.ordinal, ng.bus_id, local_rank,
                comms[0]->rank, comms[0]->size, comms[1]->rank, comms[1]->size, comms[2]->rank,
                comms[2]->size, id_dir ? id_dir : "MPI");
    if (comm_verbose >= 0 && world->rank == 0)
        fprintf(stderr, "[rank 0 %s] erase: %s communicators world, dp, pp, emb on %d GPU%s (unique "
                "ids over %s)\n", comm_host, version, world->size, world->size == 1 ? "" : "s",
                id_dir ? "a shared directory" : "MPI");
    comm_device_ops_set(&nccl_ops);
    return ERASE_OK;

fail:
    for (int i = ng.ncomms - 1; i >= 0; i--)
        teardown(&ng.comms[i], 1);
    memset(&ng, 0, sizeof ng);
    return st;
}
