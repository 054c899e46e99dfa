/*
 * The MPI communicator on host buffers: every collective of comm.h as an
 * operation on a CPU stream, whose worker thread makes the MPI calls. The
 * public entry points check their arguments here for both implementations
 * and send an operation on a CUDA stream to NCCL (nccl_comm.c, through
 * comm_device_ops()).
 *
 * The collectives' algorithms are in lib/comm/mpi_collectives.c.
 *
 * A send or receive (erase_send / erase_recv) waits with comm_wait
 * (lib/comm/mpi_wait.c): nonblocking requests polled with MPI_Testall,
 * between naps and by the compute streams between their operations, so
 * that a stream worker waiting for a peer does not take a core from the
 * compute streams (Open MPI's blocking calls busy-poll). Messages larger
 * than 1 GiB are sent in 1 GiB pieces (COMM_PIECE: MPI counts are int).
 */
#include "config.h"

#include "lib/comm/comm_internal.h"
#include "lib/comm/comm_mpi.h"

#include "lib/core/timer.h"
#include "lib/device/cpu/cpu.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Largest number of ranks whose v-collective counts fit an argument block. */
#define COMM_MAX_VEC ((ERASE_CPU_MAX_ARGS - sizeof(comm_args_t)) / sizeof(uint64_t))
_Static_assert(COMM_MAX_VEC / 2 >= 252 && COMM_MAX_VEC / 4 >= 126,
               "comm.h promises allgatherv on 252 ranks and alltoallv on 126");

/* ---- communicator lifetime ------------------------------------------------ */

erase_status_t comm_create(const char *name, MPI_Comm base, erase_comm_t **out)
{
    const char *algo = getenv("ERASE_ALLREDUCE");
    if (algo && *algo && strcmp(algo, "ring") && strcmp(algo, "auto"))
        return ERASE_ERROR(ERASE_ERR_INVALID, "environment ERASE_ALLREDUCE='%s': expected ring or auto", algo);
    erase_comm_t *c = calloc(1, sizeof *c);
    if (!c)
        return ERASE_ERROR(ERASE_ERR_NOMEM, "communicator %s: no memory", name);
    snprintf(c->name, sizeof c->name, "%s", name);
    c->coll = c->p2p = c->check = MPI_COMM_NULL;
    MPI_Comm *dups[3] = { &c->coll, &c->p2p, &c->check };
    static const char *const role[3] = { "collectives", "p2p", "check" };
    for (int i = 0; i < 3; i++) {
        int rc = MPI_Comm_dup(base, dups[i]);
        if (rc != MPI_SUCCESS) {
            erase_status_t st = comm_mpi_error(__FILE__, __LINE__, rc, "MPI_Comm_dup");
            comm_destroy(c);
            return st;
        }
        MPI_Comm_set_errhandler(*dups[i], MPI_ERRORS_RETURN);
        char mpi_name[MPI_MAX_OBJECT_NAME];
        snprintf(mpi_name, sizeof mpi_name, "erase %s %s", name, role[i]);
        MPI_Comm_set_name(*dups[i], mpi_name);
    }
    MPI_Comm_rank(c->coll, &c->rank);
    MPI_Comm_size(c->coll, &c->size);
    c->ring = algo && !strcmp(algo, "ring");
    int *ub = NULL, flag = 0;
    MPI_Comm_get_attr(MPI_COMM_WORLD, MPI_TAG_UB, &ub, &flag);
    c->tag_ub = flag && ub && *ub >= 32767 ? *ub : 32767; /* 32767: the least MPI promises */
    c->tag_seq_mod = ((uint64_t)c->tag_ub + 1) / 16;
    pthread_mutex_init(&c->exec, NULL);
    pthread_mutex_init(&c->lock, NULL);
    *out = c;
    return ERASE_OK;
}

void comm_destroy(erase_comm_t *c)
{
    if (!c)
        return;
    MPI_Comm *dups[3] = { &c->coll, &c->p2p, &c->check };
    for (int i = 0; i < 3; i++)
        if (*dups[i] != MPI_COMM_NULL)
            MPI_Comm_free(dups[i]);
    if (c->size) { /* mutexes were initialised */
        pthread_mutex_destroy(&c->exec);
        pthread_mutex_destroy(&c->lock);
    }
    free(c->scratch);
    free(c->stage);
    free(c->log);
    free(c);
}

int erase_comm_rank(const erase_comm_t *c)
{
    return c ? c->rank : -1;
}

int erase_comm_size(const erase_comm_t *c)
{
    return c ? c->size : 0;
}

uint64_t erase_comm_issued(erase_comm_t *c)
{
    if (!c)
        return 0;
    pthread_mutex_lock(&c->lock);
    uint64_t n = c->issued;
    pthread_mutex_unlock(&c->lock);
    return n;
}

/* ---- stream operations --------------------------------------------------------- */

static erase_status_t collective_kernel(const void *args)
{
    const comm_args_t *a = args;
    erase_comm_t *c = a->c;
    comm_op_t op = a->op;
    pthread_mutex_lock(&c->exec);
    if (a->captured)
        comm_log_issue(c, &op); /* a graph replay: it is issued now */
    uint64_t run = ++c->exec_seq;
    int tag = (int)(((run % c->tag_seq_mod) << 4) | op.kind);
    int slot = comm_log_begin(c, &op);
    erase_status_t st;
    c->run_sent = c->run_received = 0;
    int64_t start = erase_now_ns();
    st = comm_mpi_collective(c, a, tag);
    comm_traffic_t t = { c->run_sent, c->run_received, erase_now_ns() - start };
    comm_log_end(c, slot, &op, st == ERASE_OK, &t);
    pthread_mutex_unlock(&c->exec);
    return st == ERASE_OK ? ERASE_OK : comm_op_failed(c, &op, "", st);
}

/* Send or receive, in 1 GiB pieces, each posted nonblocking and waited for
 * with comm_wait; the receive must get exactly count elements. */
static erase_status_t p2p_kernel(const void *args)
{
    const comm_args_t *a = args;
    erase_comm_t *c = a->c;
    comm_op_t op = a->op;
    if (a->captured)
        comm_log_issue(c, &op);
    int slot = comm_log_begin(c, &op);
    size_t bytes = op.count * erase_dtype_size(op.dtype);
    erase_status_t st = ERASE_OK;
    int64_t start = erase_now_ns();
    for (size_t off = 0; off < bytes && st == ERASE_OK; off += COMM_PIECE) {
        int len = (int)(bytes - off < COMM_PIECE ? bytes - off : COMM_PIECE);
        MPI_Status stat;
        MPI_Request req;
        int send = op.kind == COMM_OP_SEND;
        int rc = send ? MPI_Isend((const char *)a->send + off, len, MPI_BYTE, op.peer, op.tag, c->p2p, &req)
                      : MPI_Irecv((char *)a->recv + off, len, MPI_BYTE, op.peer, op.tag, c->p2p, &req);
        const char *call = send ? "MPI_Isend" : "MPI_Irecv";
        if (rc == MPI_SUCCESS) {
            rc = comm_wait(1, &req, &stat, COMM_WAIT_SPIN_P2P_NS);
            call = "MPI_Testall";
            if (rc == MPI_ERR_IN_STATUS)
                rc = stat.MPI_ERROR;
        }
        int got = -1;
        if (rc == MPI_SUCCESS && !send && (MPI_Get_count(&stat, MPI_BYTE, &got), got != len))
            st = ERASE_ERROR(ERASE_ERR_COMM,
                             "received %d bytes where %d were expected (the sender's count "
                             "differs)", got, len);
        if (rc != MPI_SUCCESS)
            st = comm_mpi_error(__FILE__, __LINE__, rc, call);
    }
    comm_traffic_t t = { op.kind == COMM_OP_SEND ? bytes : 0, op.kind == COMM_OP_RECV ? bytes : 0,
                         erase_now_ns() - start };
    comm_log_end(c, slot, &op, st == ERASE_OK, &t);
    return st == ERASE_OK ? ERASE_OK : comm_op_failed(c, &op, "", st);
}

/* ---- issuing -------------------------------------------------------------------- */

static erase_status_t check_common(const erase_comm_t *c, erase_stream_t *s, int dtype,
                                   const char *what)
{
    if (!c)
        return ERASE_ERROR(ERASE_ERR_INVALID, "%s: no communicator (is erase_world_init done?)", what);
    if (!s)
        return ERASE_ERROR(ERASE_ERR_INVALID, "%s: no stream", what);
    if (dtype < ERASE_DTYPE_F32 || dtype > ERASE_DTYPE_U8)
        return ERASE_ERROR(ERASE_ERR_INVALID, "%s: unknown dtype %d", what, dtype);
    return ERASE_OK;
}

/* count elements of `dtype`, times `blocks`, fit in size_t bytes */
static erase_status_t check_bytes(size_t count, int dtype, size_t blocks, const char *what)
{
    size_t es = erase_dtype_size((erase_dtype_t)dtype);
    if (blocks == 0)
        blocks = 1;
    if (count > SIZE_MAX / es / blocks)
        return ERASE_ERROR(ERASE_ERR_INVALID, "%s: %zu x %zu elements of %zu bytes overflow",
                           what, blocks, count, es);
    return ERASE_OK;
}

/* A stream of a device other than the CPU: the NCCL communicator attached
 * by erase_world_attach_device, or ERASE_ERR_UNSUPPORTED saying why not. */
static erase_status_t issue_device(erase_comm_t *c, erase_stream_t *s, comm_args_t *a)
{
    char what[160];
    comm_op_describe(&a->op, what, sizeof what);
    if (erase_device_kind(erase_stream_device(s)) != ERASE_DEVICE_CUDA)
        return ERASE_ERROR(ERASE_ERR_UNSUPPORTED, "%s on %s: a stream of an unknown device kind %d",
                           what, c->name, (int)erase_device_kind(erase_stream_device(s)));
    const comm_device_ops_t *ops = comm_device_ops();
#ifdef HAVE_NCCL
    if (!ops)
        return ERASE_ERROR(ERASE_ERR_UNSUPPORTED,
                           "%s on %s: a CUDA stream needs the NCCL communicators; call "
                           "erase_world_attach_device with the CUDA device first", what, c->name);
#else
    if (!ops)
        return ERASE_ERROR(ERASE_ERR_UNSUPPORTED,
                           "%s on %s: a CUDA stream needs the NCCL communicators, and this build "
                           "of erase has no NCCL (configure --with-nccl)", what, c->name);
#endif
    a->c = c;
    ERASE_CHECK(ops->issue(c, s, a));
    return ERASE_OK;
}

/* Enqueue the operation described by a (args_size bytes) on s: a CPU
 * stream runs fn on its worker (MPI), a CUDA stream goes to NCCL. */
static erase_status_t issue(erase_comm_t *c, erase_stream_t *s, comm_args_t *a, size_t args_size,
                            erase_cpu_kernel_fn fn)
{
    if (erase_device_kind(erase_stream_device(s)) != ERASE_DEVICE_CPU) {
        ERASE_CHECK(issue_device(c, s, a));
        return ERASE_OK;
    }
    a->c = c;
    a->captured = erase_stream_is_capturing(s);
    if (!a->captured)
        comm_log_issue(c, &a->op);
    ERASE_CHECK(erase_cpu_launch(s, fn, a, args_size));
    return ERASE_OK;
}

/* An argument block with room for the v-collectives' arrays. */
typedef union {
    comm_args_t a;
    _Alignas(16) unsigned char bytes[ERASE_CPU_MAX_ARGS];
} comm_args_buf_t;

/* comm.h */
const char *erase_allreduce_algorithm(const erase_comm_t *c)
{
    return comm_mpi_uses_ring(c) ? "ring reduce-scatter + all-gather" : "recursive halving + doubling";
}

erase_status_t erase_allreduce(erase_comm_t *c, erase_stream_t *s, const void *send, void *recv,
                               size_t count, erase_dtype_t dtype, erase_reduce_t op)
{
    ERASE_CHECK(check_common(c, s, dtype, "erase_allreduce"));
    if (dtype == ERASE_DTYPE_U8)
        return ERASE_ERROR(ERASE_ERR_INVALID, "erase_allreduce: reductions are defined for f32, "
                           "f64, i32 and i64, not u8");
    if (op < ERASE_REDUCE_SUM || op > ERASE_REDUCE_MAX)
        return ERASE_ERROR(ERASE_ERR_INVALID, "erase_allreduce: unknown reduction %d", (int)op);
    ERASE_CHECK(check_bytes(count, dtype, 1, "erase_allreduce"));
    if (count && (!send || !recv))
        return ERASE_ERROR(ERASE_ERR_INVALID, "erase_allreduce: NULL buffer for %zu elements", count);
    comm_args_t a = { .op = { .kind = COMM_OP_ALLREDUCE, .dtype = (uint8_t)dtype,
                              .reduce = (uint8_t)op, .count = count },
                      .send = send, .recv = recv };
    ERASE_CHECK(issue(c, s, &a, sizeof a, collective_kernel));
    return ERASE_OK;
}

erase_status_t erase_broadcast(erase_comm_t *c, erase_stream_t *s, void *buf, size_t count,
                               erase_dtype_t dtype, int root)
{
    ERASE_CHECK(check_common(c, s, dtype, "erase_broadcast"));
    if (root < 0 || root >= c->size)
        return ERASE_ERROR(ERASE_ERR_INVALID, "erase_broadcast: root %d is not a rank of %s "
                           "(size %d)", root, c->name, c->size);
    ERASE_CHECK(check_bytes(count, dtype, 1, "erase_broadcast"));
    if (count && !buf)
        return ERASE_ERROR(ERASE_ERR_INVALID, "erase_broadcast: NULL buffer for %zu elements", count);
    comm_args_t a = { .op = { .kind = COMM_OP_BROADCAST, .dtype = (uint8_t)dtype, .peer = root,
                              .count = count },
                      .send = buf, .recv = buf };
    ERASE_CHECK(issue(c, s, &a, sizeof a, collective_kernel));
    return ERASE_OK;
}

erase_status_t erase_allgather(erase_comm_t *c, erase_stream_t *s, const void *send, void *recv,
                               size_t count, erase_dtype_t dtype)
{
    ERASE_CHECK(check_common(c, s, dtype, "erase_allgather"));
    ERASE_CHECK(check_bytes(count, dtype, (size_t)c->size, "erase_allgather"));
    if (count && (!send || !recv))
        return ERASE_ERROR(ERASE_ERR_INVALID, "erase_allgather: NULL buffer for %zu elements", count);
    comm_args_t a = { .op = { .kind = COMM_OP_ALLGATHER, .dtype = (uint8_t)dtype, .count = count },
                      .send = send, .recv = recv };
    ERASE_CHECK(issue(c, s, &a, sizeof a, collective_kernel));
    return ERASE_OK;
}

erase_status_t erase_allgatherv(erase_comm_t *c, erase_stream_t *s, const void *send, void *recv,
                                const size_t *counts, const size_t *displs, erase_dtype_t dtype)
{
    ERASE_CHECK(check_common(c, s, dtype, "erase_allgatherv"));
    int n = c->size;
    if ((size_t)n * 2 > COMM_MAX_VEC)
        return ERASE_ERROR(ERASE_ERR_UNSUPPORTED, "erase_allgatherv: %d ranks; the counts of at "
                           "most %zu ranks fit a stream operation", n, COMM_MAX_VEC / 2);
    if (!counts || !displs)
        return ERASE_ERROR(ERASE_ERR_INVALID, "erase_allgatherv: NULL counts or displacements");
    comm_args_buf_t b;
    memset(&b.a, 0, sizeof b.a);
    uint64_t total = 0;
    for (int i = 0; i < n; i++) {
        ERASE_CHECK(check_bytes(counts[i], dtype, 1, "erase_allgatherv"));
        ERASE_CHECK(check_bytes(displs[i], dtype, 1, "erase_allgatherv"));
        b.a.vec[i] = counts[i];
        b.a.vec[n + i] = displs[i];
        total += counts[i];
    }
    if ((counts[c->rank] && !send) || (total && !recv))
        return ERASE_ERROR(ERASE_ERR_INVALID, "erase_allgatherv: NULL buffer");
    b.a.op = (comm_op_t){ .kind = COMM_OP_ALLGATHERV, .dtype = (uint8_t)dtype, .count = total };
    b.a.send = send;
    b.a.recv = recv;
    ERASE_CHECK(issue(c, s, &b.a, sizeof b.a + 2 * (size_t)n * sizeof(uint64_t), collective_kernel));
    return ERASE_OK;
}

erase_status_t erase_alltoall(erase_comm_t *c, erase_stream_t *s, const void *send, void *recv,
                              size_t count, erase_dtype_t dtype)
{
    ERASE_CHECK(check_common(c, s, dtype, "erase_alltoall"));
    ERASE_CHECK(check_bytes(count, dtype, (size_t)c->size, "erase_alltoall"));
    if (count && (!send || !recv))
        return ERASE_ERROR(ERASE_ERR_INVALID, "erase_alltoall: NULL buffer for %zu elements", count);
    if (count && send == recv)
        return ERASE_ERROR(ERASE_ERR_INVALID, "erase_alltoall: send and recv must not overlap");
    comm_args_t a = { .op = { .kind = COMM_OP_ALLTOALL, .dtype = (uint8_t)dtype, .count = count },
                      .send = send, .recv = recv };
    ERASE_CHECK(issue(c, s, &a, sizeof a, collective_kernel));
    return ERASE_OK;
}

erase_status_t erase_alltoallv(erase_comm_t *c, erase_stream_t *s, const void *send,
                               const size_t *send_counts, const size_t *send_displs, void *recv,
                               const size_t *recv_counts, const size_t *recv_displs,
                               erase_dtype_t dtype)
{
    ERASE_CHECK(check_common(c, s, dtype, "erase_alltoallv"));
    int n = c->size;
    if ((size_t)n * 4 > COMM_MAX_VEC)
        return ERASE_ERROR(ERASE_ERR_UNSUPPORTED, "erase_alltoallv: %d ranks; the counts of at "
                           "most %zu ranks fit a stream operation", n, COMM_MAX_VEC / 4);
    if (!send_counts || !send_displs || !recv_counts || !recv_displs)
        return ERASE_ERROR(ERASE_ERR_INVALID, "erase_alltoallv: NULL counts or displacements");
    comm_args_buf_t b;
    memset(&b.a, 0, sizeof b.a);
    const size_t *arrays[4] = { send_counts, send_displs, recv_counts, recv_displs };
    uint64_t sent = 0, received = 0;
    for (int w = 0; w < 4; w++)
        for (int i = 0; i < n; i++) {
            ERASE_CHECK(check_bytes(arrays[w][i], dtype, 1, "erase_alltoallv"));
            b.a.vec[w * n + i] = arrays[w][i];
        }
    for (int i = 0; i < n; i++) {
        sent += send_counts[i];
        received += recv_counts[i];
    }
    if ((sent && !send) || (received && !recv))
        return ERASE_ERROR(ERASE_ERR_INVALID, "erase_alltoallv: NULL buffer");
    b.a.op = (comm_op_t){ .kind = COMM_OP_ALLTOALLV, .dtype = (uint8_t)dtype, .count = sent };
    b.a.send = send;
    b.a.recv = recv;
    ERASE_CHECK(issue(c, s, &b.a, sizeof b.a + 4 * (size_t)n * sizeof(uint64_t), collective_kernel));
    return ERASE_OK;
}

erase_status_t erase_alltoall_slots(erase_comm_t *c, erase_stream_t *s, const void *send, void *recv,
                                    int slots, size_t slot_elems, const int *send_counts,
                                    const int *recv_counts, size_t unit, erase_dtype_t dtype)
{
    ERASE_CHECK(check_common(c, s, dtype, "erase_alltoall_slots"));
    if (slots < 0 || unit == 0 || unit > INT32_MAX || slot_elems % unit || slot_elems / unit > INT32_MAX)
        return ERASE_ERROR(ERASE_ERR_INVALID, "erase_alltoall_slots: %d slots of %zu elements in units of %zu "
                           "(expected slots >= 0, a unit of 1 to %d dividing the slot, at most %d units)",
                           slots, slot_elems, unit, INT32_MAX, INT32_MAX);
    size_t block;
    if (slots && slot_elems > SIZE_MAX / (size_t)slots)
        return ERASE_ERROR(ERASE_ERR_INVALID, "erase_alltoall_slots: %d slots x %zu elements overflow", slots,
                           slot_elems);
    block = (size_t)slots * slot_elems;
    /* the staging buffer: counts and two blocks */
    ERASE_CHECK(check_bytes(block, dtype, 2 * (size_t)c->size + 2, "erase_alltoall_slots"));
    if (block && (!send || !recv || !send_counts || !recv_counts))
        return ERASE_ERROR(ERASE_ERR_INVALID, "erase_alltoall_slots: NULL buffer or counts for %d slots", slots);
    if (block && send == recv)
        return ERASE_ERROR(ERASE_ERR_INVALID, "erase_alltoall_slots: send and recv must not overlap");
    comm_args_buf_t b;
    memset(&b.a, 0, sizeof b.a);
    b.a.op = (comm_op_t){ .kind = COMM_OP_ALLTOALL_SLOTS, .dtype = (uint8_t)dtype, .tag = slots,
                          .unit = (int32_t)unit, .count = block };
    b.a.send = send;
    b.a.recv = recv;
    b.a.vec[0] = (uint64_t)(uintptr_t)send_counts;
    b.a.vec[1] = (uint64_t)(uintptr_t)recv_counts;
    ERASE_CHECK(issue(c, s, &b.a, sizeof b.a + 2 * sizeof(uint64_t), collective_kernel));
    return ERASE_OK;
}

static erase_status_t p2p_issue(erase_comm_t *c, erase_stream_t *s, int kind, const void *send,
                                void *recv, size_t count, erase_dtype_t dtype, int peer, int tag,
                                const char *what)
{
    ERASE_CHECK(check_common(c, s, dtype, what));
    if (peer < 0 || peer >= c->size)
        return ERASE_ERROR(ERASE_ERR_INVALID, "%s: peer %d is not a rank of %s (size %d)", what,
                           peer, c->name, c->size);
    if (tag < 0 || tag > c->tag_ub)
        return ERASE_ERROR(ERASE_ERR_INVALID, "%s: tag %d outside 0..%d", what, tag, c->tag_ub);
    ERASE_CHECK(check_bytes(count, dtype, 1, what));
    if (count && !send && !recv)
        return ERASE_ERROR(ERASE_ERR_INVALID, "%s: NULL buffer for %zu elements", what, count);
    comm_args_t a = { .op = { .kind = (uint8_t)kind, .dtype = (uint8_t)dtype, .peer = peer,
                              .tag = tag, .count = count },
                      .send = send, .recv = recv };
    ERASE_CHECK(issue(c, s, &a, sizeof a, p2p_kernel));
    return ERASE_OK;
}

erase_status_t erase_send(erase_comm_t *c, erase_stream_t *s, const void *buf, size_t count,
                          erase_dtype_t dtype, int peer, int tag)
{
    ERASE_CHECK(p2p_issue(c, s, COMM_OP_SEND, buf, NULL, count, dtype, peer, tag, "erase_send"));
    return ERASE_OK;
}

erase_status_t erase_recv(erase_comm_t *c, erase_stream_t *s, void *buf, size_t count,
                          erase_dtype_t dtype, int peer, int tag)
{
    ERASE_CHECK(p2p_issue(c, s, COMM_OP_RECV, NULL, buf, count, dtype, peer, tag, "erase_recv"));
    return ERASE_OK;
}

erase_status_t erase_barrier(erase_comm_t *c, erase_stream_t *s)
{
    ERASE_CHECK(check_common(c, s, ERASE_DTYPE_U8, "erase_barrier"));
    comm_args_t a = { .op = { .kind = COMM_OP_BARRIER, .dtype = ERASE_DTYPE_U8 } };
    ERASE_CHECK(issue(c, s, &a, sizeof a, collective_kernel));
    return ERASE_OK;
}

MPI_Comm erase_comm_mpi(const erase_comm_t *c)
{
    return c->coll;
}
