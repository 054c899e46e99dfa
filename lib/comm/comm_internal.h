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
    COMM_OP_ALLTOALL_SLOTS, /* erase_alltoall_slots */
    COMM_OP_BARRIER,
    COMM_OP_SEND,       /* point to point: not part of the collective sequence */
    COMM_OP_RECV,
    COMM_OP_CHECK,      /* erase_comm_check_sequence (host) */
    COMM_OP_NCCL_INIT   /* erase_world_attach_device: ncclCommInitRank (host) */
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
    int32_t tag;        /* send/recv; slots (alltoall_slots) */
    int32_t unit;       /* alltoall_slots: elements per count; else 0 */
    uint64_t count;     /* elements: per rank (allgather, alltoall block, alltoall_slots
                           block: slots x slot_elems), total (allgatherv), this rank's
                           total sent (alltoallv) */
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
    int ring;                   /* all-reduce by the ring on any size (ERASE_ALLREDUCE=ring) */
    uint64_t tag_seq_mod;       /* sequence numbers in a tag: (tag_ub + 1) / 16 */
    int tag_ub;

    pthread_mutex_t exec;       /* held while a collective of this comm runs */
    uint64_t exec_seq;          /* under exec: collectives run (tags) */
    void *scratch;              /* under exec: all-reduce receive chunk */
    size_t scratch_bytes;
    void *stage;                /* under exec: alltoall_slots' counts and packed slots */
    size_t stage_bytes;
    uint64_t run_sent, run_received; /* under exec: bytes of the running collective */

    pthread_mutex_t lock;       /* guards everything below */
    uint64_t issued;            /* collectives issued (numbers them) */
    uint64_t p2p_issued;        /* sends and receives issued */
    comm_history_t history[COMM_HISTORY];
    uint64_t history_len;       /* entries ever pushed; slot = n % COMM_HISTORY */
    comm_running_t running[COMM_RUNNING];
    comm_op_t *log;             /* collectives issued since the last check */
    size_t log_len, log_cap;
    int log_failed;             /* an append ran out of memory */
    erase_comm_stats_t stats;   /* erase_comm_stats */
};

/* The argument block of every comm operation (mpi_comm.c copies it into a
 * CPU stream operation; the NCCL path reads it when the call is issued). */
typedef struct {
    erase_comm_t *c;
    comm_op_t op;
    int captured;       /* issued into a stream capture: numbered when it runs */
    const void *send;
    void *recv;
    uint64_t vec[];     /* allgatherv: counts[n], displs[n];
                           alltoallv: send_counts, send_displs, recv_counts, recv_displs;
                           alltoall_slots: the addresses of send_counts, recv_counts */
} comm_args_t;

/*
 * The device-buffer implementation (NCCL, lib/comm/nccl_comm.c), installed
 * by erase_world_attach_device for a CUDA device. world.c, mpi_comm.c and
 * watchdog.c reach it only through this table, so that programs that never
 * attach a CUDA device do not link NCCL or the CUDA backend.
 *   issue      enqueue a validated operation (a->op, buffers, a->vec) on
 *              the CUDA stream s; bookkeeping (numbers, history, watch)
 *              included. Errors: ERASE_ERR_INVALID (a stream of another
 *              device), ERASE_ERR_BACKEND / ERASE_ERR_COMM (CUDA, NCCL).
 *   poll       watchdog thread, every period: retire completed operations
 *              of c, take the fatal path on an asynchronous NCCL error;
 *              returns 1 with the oldest unfinished operation and its age
 *              (seconds) when one is older than limit_s, else 0.
 *   abort_all  fatal hook: ncclCommAbort every communicator (bounded in
 *              time; safe from any thread, even inside an NCCL call).
 *   finalize   erase_world_finalize: destroy the NCCL communicators (the
 *              caller has synchronized the streams).
 */
typedef struct {
    erase_status_t (*issue)(erase_comm_t *c, erase_stream_t *s, const comm_args_t *a);
    int (*poll)(erase_comm_t *c, double limit_s, comm_op_t *stuck, double *age_s);
    void (*abort_all)(void);
    void (*finalize)(void);
} comm_device_ops_t;

/* The table installed by erase_world_attach_device (NULL: none). Atomic:
 * the watchdog thread and the fatal hook read it. */
const comm_device_ops_t *comm_device_ops(void);
void comm_device_ops_set(const comm_device_ops_t *ops);

/* World state shared by the files of lib/comm (world.c owns it). */
extern int comm_check_enabled;  /* erase_world_options_t.check_sequence or env */
extern int comm_verbose;        /* ERASE_VERBOSE */
extern int comm_world_rank;     /* for "[rank r host]" prefixes */
extern char comm_host[64];

/* Create a comm over duplicates of `base` (collective over base). */
erase_status_t comm_create(const char *name, MPI_Comm base, erase_comm_t **out);
void comm_destroy(erase_comm_t *c);

/* "allreduce(4 x f32, sum)" into text (always NUL-terminated). */
void comm_op_describe(const comm_op_t *op, char *text, size_t size);

/* Re-state a failure `st` of `op` on `c` with what, which and where:
 * "allreduce(4 x f32, sum) #7 on world (rank 0 of 2<transport>): <why>"
 * (transport "" for MPI, ", NCCL"); why is this thread's message, or the
 * status name when there is none. Returns st. */
erase_status_t comm_op_failed(const erase_comm_t *c, const comm_op_t *op, const char *transport, erase_status_t st);

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
/* What an operation moved on this rank (erase_comm_stats). */
typedef struct {
    uint64_t sent, received; /* bytes to and from other ranks */
    int64_t ns;              /* time inside it */
} comm_traffic_t;

/* Mark it done (ok) or failed and free its watch slot; t (NULL: none)
 * is added to c's counters under the same lock. */
void comm_log_end(erase_comm_t *c, int slot, const comm_op_t *op, int ok, const comm_traffic_t *t);
/* Add one operation `op` that moved `t` to c's counters (takes `lock`). */
void comm_stats_add(erase_comm_t *c, const comm_op_t *op, const comm_traffic_t *t);

/*
 * Wait for the n requests `req` as MPI_Waitall does (the same return code
 * and statuses), without busy-polling a core (lib/comm/mpi_wait.c): it
 * polls without sleeping for the first spin_ns nanoseconds, then naps.
 * For a stream worker's send or receive (COMM_WAIT_SPIN_P2P_NS) and a
 * collective's exchange of small messages (COMM_WAIT_SPIN_SMALL_NS); n >= 1.
 */
int comm_wait(int n, MPI_Request *req, MPI_Status *stat, int64_t spin_ns);
#define COMM_WAIT_SPIN_P2P_NS 5000 /* a pipeline's messages: their peer is usually late by a whole operation */
/* A collective's step of at most COMM_SMALL_BYTES each way (sent eagerly:
 * no handshake that a nap would hold up) spins 100 us, about a message's
 * latency over TCP between hosts, before it naps: a peer that has not
 * reached the collective yet (ranks finish a step's work at different
 * times) then costs no core. */
#define COMM_WAIT_SPIN_SMALL_NS 100000
#define COMM_SMALL_BYTES 4096

/* The largest piece of a message (MPI counts are int): larger ones are
 * sent in pieces of this many bytes. */
#define COMM_PIECE ((size_t)1 << 30)

/* Run the collective a->op (all-reduce, broadcast, all-gather(v),
 * all-to-all(v), counted all-to-all, barrier) of c with the MPI tag `tag`
 * (lib/comm/mpi_collectives.c); on the stream worker, c->exec held.
 * Errors: ERASE_ERR_COMM (an MPI call, a peer's count), ERASE_ERR_NOMEM,
 * ERASE_ERR_INVALID (not a collective). */
erase_status_t comm_mpi_collective(erase_comm_t *c, const comm_args_t *a, int tag);
/* The all-reduce of c takes the ring, not recursive halving: a size not a
 * power of two, or ERASE_ALLREDUCE=ring. */
int comm_mpi_uses_ring(const erase_comm_t *c);

/* Turn an MPI error code into ERASE_ERR_COMM with its text. */
erase_status_t comm_mpi_error(const char *file, int line, int code, const char *what);
#define COMM_MPI_CHECK(call, what)                                             \
    do {                                                                       \
        int comm_rc_ = (call);                                                 \
        if (comm_rc_ != MPI_SUCCESS)                                           \
            return comm_mpi_error(__FILE__, __LINE__, comm_rc_, (what));       \
    } while (0)

/* A number in [lo, hi] from the environment variable `name` (world.c):
 * *set = 0 when it is absent or empty. Errors: ERASE_ERR_INVALID
 * "environment NAME='text': expected a number in [lo, hi]" (not a number,
 * NaN, or out of range). */
erase_status_t comm_env_number(const char *name, double lo, double hi, double *value, int *set);

/* Watchdog thread (watchdog.c): seconds in (0, ERASE_WATCHDOG_MAX_SECONDS],
 * else ERASE_ERR_INVALID. */
erase_status_t comm_watchdog_start(erase_comm_t *const *comms, int n, double seconds);
void comm_watchdog_stop(void);
/* Print "<op> #n on <comm> has not completed after N s" and the comm's
 * history, then take erase_fatal's path (any thread). */
__attribute__((noreturn)) void comm_watchdog_fire(erase_comm_t *c, const comm_op_t *stuck,
                                                  double elapsed);

/*
 * File-system exchange of a bootstrap id (nccl_id.c; bytes in, bytes out:
 * no NCCL or MPI in it), for ERASE_NCCL_ID_DIR. The file of a group is
 * DIR/erase-nccl-<group>-<job>.id, <job> from comm_job_id.
 */
#define COMM_ID_TIMEOUT_DEFAULT 300.0  /* seconds; env ERASE_NCCL_ID_TIMEOUT */

/* The job's id for file names: ERASE_JOB_ID, else SLURM_JOB_ID[.SLURM_STEP_ID],
 * else Open MPI's OMPI_MCA_ess_base_jobid; characters other than
 * [A-Za-z0-9._-] become '_'. ERASE_ERR_INVALID when none is set (id files
 * of different jobs must not meet). */
erase_status_t comm_job_id(char *text, size_t size);

/* DIR/erase-nccl-<group>-<job>.id into path. Errors: comm_job_id's,
 * ERASE_ERR_INVALID (path longer than size). */
erase_status_t comm_id_file_path(const char *dir, const char *group, char *path, size_t size);

/* Write bytes to path atomically: path.tmp.<pid>, fsync, rename, fsync of
 * the directory. Errors: ERASE_ERR_IO naming the file and the errno text. */
erase_status_t comm_id_file_write(const char *path, const void *id, size_t bytes);

/* Wait up to timeout_s seconds for path to appear and read exactly bytes
 * from it (polling every 10..100 ms; open() each time, which revalidates
 * on NFS). Errors: ERASE_ERR_COMM "NCCL id exchange: no id file <path>
 * after <t> s (rank 0 of group <group> writes it; ERASE_NCCL_ID_DIR must be
 * a directory shared by every rank)"; ERASE_ERR_FORMAT when the file has
 * another size; ERASE_ERR_IO on a read error. */
erase_status_t comm_id_file_read(const char *path, const char *group, void *id, size_t bytes,
                                 double timeout_s);

/* The whole exchange for one group: the writer (rank 0 of the group)
 * writes `id`, the others read it into `id`. timeout_s <= 0: the
 * environment's ERASE_NCCL_ID_TIMEOUT or COMM_ID_TIMEOUT_DEFAULT. The
 * writer removes the file later with comm_id_file_remove, once every rank
 * has read it (e.g. after ncclCommInitRank, which returns on every rank
 * only when all have joined). */
erase_status_t comm_id_exchange_fs(const char *dir, const char *group, int writer, void *id,
                                   size_t bytes, double timeout_s);
/* Remove the group's id file (writer; errors ignored but ENOENT-safe). */
void comm_id_file_remove(const char *dir, const char *group);

#endif
