/*
 * Internal types of the MPI communicators (lib/comm only).
 *
 * One erase_comm_t wraps three duplicates of one MPI communicator, so that
 * the three kinds of traffic never match each other's messages:
 *   coll   collectives run by stream workers (tags: kind + sequence number),
 *   p2p    erase_send / erase_recv (the caller's tags),
 *   check  erase_comm_check_sequence, run by a host thread.
 *
 * Locks: `exec` is held by the worker that runs a collective on the comm,
 * for its whole duration (collectives of one comm never overlap on one
 * rank); `lock` guards the bookkeeping the host, the workers and the
 * watchdog share (issue numbers, history, running operations, the
 * sequence log). `lock` is never held across an MPI call, and never taken
 * before `exec`.
 */
#ifndef ERASE_COMM_INTERNAL_H
#define ERASE_COMM_INTERNAL_H

#include <mpi.h>
#include <pthread.h>
#include <stdint.h>

#include "lib/comm/comm.h"

/* What an operation is; also the low 4 bits of its MPI tag on `coll`. */
typedef enum {
    COMM_OP_ALLREDUCE = 1,
    COMM_OP_BROADCAST,
    COMM_OP_ALLGATHER,
    COMM_OP_ALLGATHERV,
    COMM_OP_ALLTOALL,
    COMM_OP_ALLTOALLV,
    COMM_OP_BARRIER,
    COMM_OP_SEND,       /* point to point: not part of the collective sequence */
    COMM_OP_RECV,
    COMM_OP_CHECK       /* erase_comm_check_sequence (host) */
} comm_op_kind_t;

/*
 * One operation as the sequence check and the watchdog see it. Exchanged
 * between ranks as bytes (every rank runs the same binary).
 */
typedef struct {
    uint8_t kind;       /* comm_op_kind_t */
    uint8_t dtype;      /* erase_dtype_t */
    uint8_t reduce;     /* erase_reduce_t (allreduce) */
    uint8_t pad;
    int32_t peer;       /* root (broadcast), peer (send/recv); else 0 */
    int32_t tag;        /* send/recv */
    int32_t pad2;
    uint64_t count;     /* elements: per rank (allgather, alltoall block), total
                           (allgatherv), this rank's total sent (alltoallv) */
    uint64_t seq;       /* collective number on the comm, from 1 (p2p: own count) */
} comm_op_t;

#define COMM_HISTORY 16  /* operations the watchdog prints */
#define COMM_RUNNING 8   /* operations of one comm watched at once */

typedef enum { COMM_ISSUED = 0, COMM_RUNNING_NOW, COMM_DONE, COMM_FAILED } comm_op_state_t;

typedef struct {
    comm_op_t op;
    comm_op_state_t state;
} comm_history_t;

typedef struct {
    int active;
    comm_op_t op;
    int64_t start_ns;
} comm_running_t;

struct erase_comm {
    char name[16];              /* "world", "dp", "pp" */
    MPI_Comm coll, p2p, check;
    int rank, size;
    uint64_t tag_seq_mod;       /* sequence numbers in a tag: (tag_ub + 1) / 16 */
    int tag_ub;

    pthread_mutex_t exec;       /* held while a collective of this comm runs */
    uint64_t exec_seq;          /* under exec: collectives run (tags) */
    void *scratch;              /* under exec: all-reduce receive chunk */
    size_t scratch_bytes;

    pthread_mutex_t lock;       /* guards everything below */
    uint64_t issued;            /* collectives issued (numbers them) */
    uint64_t p2p_issued;        /* sends and receives issued */
    comm_history_t history[COMM_HISTORY];
    uint64_t history_len;       /* entries ever pushed; slot = n % COMM_HISTORY */
    comm_running_t running[COMM_RUNNING];
    comm_op_t *log;             /* collectives issued since the last check */
    size_t log_len, log_cap;
    int log_failed;             /* an append ran out of memory */
};

/* World state shared by the files of lib/comm (world.c owns it). */
extern int comm_check_enabled;  /* erase_world_options_t.check_sequence or env */
extern int comm_world_rank;     /* for "[rank r host]" prefixes */
extern char comm_host[64];

/* Create a comm over duplicates of `base` (collective over base). */
erase_status_t comm_create(const char *name, MPI_Comm base, erase_comm_t **out);
void comm_destroy(erase_comm_t *c);

/* "allreduce(4 x f32, sum)" into text (always NUL-terminated). */
void comm_op_describe(const comm_op_t *op, char *text, size_t size);

/* Short name of a dtype ("f32"). */
const char *comm_dtype_name(int dtype);

/*
 * Bookkeeping (comm_log.c). comm_log_issue numbers a collective or p2p
 * operation, pushes it to the history and, for collectives with the check
 * enabled, to the sequence log; fills op->seq.
 */
void comm_log_issue(erase_comm_t *c, comm_op_t *op);
/* Mark an operation as running (returns a watch slot, or -1 if all are busy). */
int comm_log_begin(erase_comm_t *c, const comm_op_t *op);
/* Mark it done (ok) or failed and free its watch slot. */
void comm_log_end(erase_comm_t *c, int slot, const comm_op_t *op, int ok);

/* Turn an MPI error code into ERASE_ERR_COMM with its text. */
erase_status_t comm_mpi_error(const char *file, int line, int code, const char *what);
#define COMM_MPI_CHECK(call, what)                                             \
    do {                                                                       \
        int comm_rc_ = (call);                                                 \
        if (comm_rc_ != MPI_SUCCESS)                                           \
            return comm_mpi_error(__FILE__, __LINE__, comm_rc_, (what));       \
    } while (0)

/* Watchdog thread (watchdog.c). */
erase_status_t comm_watchdog_start(erase_comm_t *const *comms, int n, double seconds);
void comm_watchdog_stop(void);

#endif
