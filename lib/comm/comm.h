/*
 * erase communicators. Every rank is an MPI process (mpirun, srun, sbatch).
 * A communicator is a group of ranks (the world, a data-parallel group, a
 * pipeline group) with collectives that are OPERATIONS ON A STREAM of the
 * device layer: erase_allreduce(c, s, ...) enqueues the all-reduce on
 * stream s (on the CPU backend, s's worker thread performs the MPI calls),
 * so it runs after whatever s waits on (e.g. the event of the block that
 * produced the gradients) and what follows on s runs after it. Collectives
 * are issued in the order the caller gives, which must be the same on
 * every rank of the communicator.
 *
 * Two implementations behind this interface: MPI on host buffers (the CPU
 * backend; lib/comm/mpi_comm.c) and NCCL on device buffers (bootstrapped
 * over MPI; with the CUDA backend, not written yet: a collective issued on
 * a non-CPU stream is ERASE_ERR_UNSUPPORTED).
 *
 * Ordering rule: the collectives of one communicator run one at a time on
 * a rank (they are serialized internally) and must RUN in the same order on
 * every rank, so issue them on one stream, or order the streams that issue
 * them with events. Collectives of different communicators may run at the
 * same time on different streams; their messages never mix. Sends and
 * receives are not serialized (a send and a receive of one communicator
 * may wait for each other on two streams).
 *
 * Failures inside a collective (an MPI error, sizes that differ between
 * ranks) become the stream's sticky error, reported by the next
 * erase_stream_synchronize with the operation, its number and the
 * communicator. A collective that never completes is ended by the
 * watchdog (see erase_world_init).
 *
 * Reductions are deterministic: the same inputs give bitwise the same
 * result on every rank and in every run, for a fixed number of ranks
 * (a fixed-order ring reduce-scatter + all-gather, not MPI_Allreduce,
 * whose summation order MPI does not promise).
 */
#ifndef ERASE_COMM_COMM_H
#define ERASE_COMM_COMM_H

#include <stddef.h>
#include <stdint.h>

#include "lib/core/status.h"
#include "lib/device/device.h"

typedef struct erase_comm erase_comm_t;

typedef enum {
    ERASE_DTYPE_F32 = 0,
    ERASE_DTYPE_F64,
    ERASE_DTYPE_I32,
    ERASE_DTYPE_I64,
    ERASE_DTYPE_U8
} erase_dtype_t;

typedef enum { ERASE_REDUCE_SUM = 0, ERASE_REDUCE_MEAN, ERASE_REDUCE_MAX } erase_reduce_t;

/* Bytes of one element (0 for an unknown dtype). */
size_t erase_dtype_size(erase_dtype_t t);

/* ---- the world ------------------------------------------------------------ */

typedef struct {
    int rank, size;             /* in MPI_COMM_WORLD */
    int local_rank, local_size; /* on this host (MPI_COMM_TYPE_SHARED split) */
    int dp_rank, dp_size;       /* data-parallel group: ranks holding the same stage */
    int pp_rank, pp_size;       /* pipeline group: the stages of one replica */
    char host[64];
    int thread_level;           /* MPI thread support provided (MPI_THREAD_MULTIPLE required) */
} erase_world_t;

typedef struct {
    int pp_size;                /* pipeline stages; dp_size = world size / pp_size */
    double watchdog_seconds;    /* a collective not done by then aborts the job; 0: 600 s */
    int check_sequence;         /* debug: compare every step's collective sequence across ranks */
} erase_world_options_t;

/*
 * Initialise MPI with MPI_THREAD_MULTIPLE (stream workers and the
 * scheduler call MPI from several threads; an MPI that provides less is
 * ERASE_ERR_UNSUPPORTED), find local ranks, split the world into dp and pp
 * groups (rank = dp_rank * pp_size + pp_rank; world size not a multiple of
 * pp_size is ERASE_ERR_INVALID with a message giving both), install the
 * fatal hook (MPI_Abort on the world) and start the watchdog.
 * If MPI is already initialised, its thread level is checked and MPI is
 * left to its owner at finalize. options may be NULL (pp_size 0 means 1).
 * Collective over MPI_COMM_WORLD; call once, from the main thread.
 *
 * Environment: ERASE_WATCHDOG_SECONDS overrides watchdog_seconds;
 * ERASE_CHECK_COLLECTIVES=1 (0) turns check_sequence on (off);
 * ERASE_VERBOSE: < 0 silent, 0 (default) one summary line from rank 0
 * on stderr (world size, dp x pp, MPI library, thread level), >= 1 also
 * one line per rank (host, rank, local rank, groups, pid, MPI library).
 *
 * The watchdog is a thread that watches the operations running on the
 * world's communicators: one running longer than watchdog_seconds makes
 * the rank print "[rank r host] watchdog: <op> #<n> on <comm> has not
 * completed after N s; last collectives issued:" and the last 16
 * operations of that communicator (operation, bytes, number, state), then
 * take erase_fatal's path (MPI_Abort).
 * Errors: ERASE_ERR_STATE (already initialised), ERASE_ERR_UNSUPPORTED,
 * ERASE_ERR_INVALID (pp_size, environment), ERASE_ERR_COMM (MPI). After a
 * failure the fatal hook is installed: erase_fatal ends the whole job.
 */
erase_status_t erase_world_init(int *argc, char ***argv, const erase_world_options_t *options,
                                erase_world_t *world);

/* Communicators of the world made by erase_world_init (do not destroy). */
erase_comm_t *erase_world_comm(void);
erase_comm_t *erase_dp_comm(void);
erase_comm_t *erase_pp_comm(void);

/* Stop the watchdog, free the communicators and finalize MPI (if
 * erase_world_init started it), after every stream using a communicator is
 * synchronized. Restores erase_fatal's plain abort(). No-op if the world
 * is not initialised. */
void erase_world_finalize(void);

/* Cores each rank of this host may use: online cores / ranks on the host
 * (at least 1), for erase_device_options_t.cores. */
int erase_world_cores_per_rank(const erase_world_t *world);

/* At ERASE_VERBOSE >= 1: print "[rank r host] device: <description>" for
 * the device this rank computes on (erase_device_describe). */
void erase_world_log_device(const erase_device_t *dev);

/* ---- collectives on a stream ------------------------------------------------ */

/* Rank in / size of the communicator (-1 / 0 for NULL). */
int erase_comm_rank(const erase_comm_t *c);
int erase_comm_size(const erase_comm_t *c);

/* Collectives issued on c by this rank so far (the number the last one got;
 * sends and receives not counted). For traces and tests. */
uint64_t erase_comm_issued(erase_comm_t *c);

/*
 * The collectives below return once the operation is enqueued on s (a CPU
 * stream); buffers must stay valid and untouched until it has run. count
 * is in elements of dtype and must be the same on every rank (for the
 * v-variants: the arrays must agree). Common errors: ERASE_ERR_INVALID (NULL
 * communicator or stream, NULL buffer with elements, bad root/peer/tag or
 * dtype, size overflow), ERASE_ERR_UNSUPPORTED (not a CPU stream),
 * ERASE_ERR_NOMEM.
 */

/* recv[i] = op over ranks of send[i], i < count; send == recv allowed (in
 * place), other overlaps are not. f32, f64, i32, i64 (u8 is
 * ERASE_ERR_INVALID). mean = sum, then times 1/size in floating point;
 * integer sums wrap modulo 2^bits and their mean is sum / size truncated.
 * max propagates NaN. Bitwise identical on every rank (see above). */
erase_status_t erase_allreduce(erase_comm_t *c, erase_stream_t *s, const void *send, void *recv,
                               size_t count, erase_dtype_t dtype, erase_reduce_t op);

/* buf[0..count) of `root` to every rank. */
erase_status_t erase_broadcast(erase_comm_t *c, erase_stream_t *s, void *buf, size_t count,
                               erase_dtype_t dtype, int root);

/* recv[r*count .. (r+1)*count) = send of rank r; send may be this rank's
 * own block of recv (in place). */
erase_status_t erase_allgather(erase_comm_t *c, erase_stream_t *s, const void *send, void *recv,
                               size_t count, erase_dtype_t dtype);

/* Variable sizes: rank r contributes counts[r] elements placed at displs[r]
 * (elements); counts and displs have one entry per rank and are copied
 * when the call is issued (at most 252 ranks: ERASE_ERR_UNSUPPORTED above). */
erase_status_t erase_allgatherv(erase_comm_t *c, erase_stream_t *s, const void *send, void *recv,
                                const size_t *counts, const size_t *displs, erase_dtype_t dtype);

/* Block r of send (count elements) goes to rank r; block r of recv came
 * from rank r. send and recv must not overlap. alltoallv: the counts and
 * displacements (elements, one per rank, copied when issued; at most 126
 * ranks) of what goes to and comes from each rank; recv_counts[r] must
 * equal rank r's send_counts[this rank]. */
erase_status_t erase_alltoall(erase_comm_t *c, erase_stream_t *s, const void *send, void *recv,
                              size_t count, erase_dtype_t dtype);
erase_status_t erase_alltoallv(erase_comm_t *c, erase_stream_t *s, const void *send,
                               const size_t *send_counts, const size_t *send_displs, void *recv,
                               const size_t *recv_counts, const size_t *recv_displs,
                               erase_dtype_t dtype);

/* Point to point (pipelines): matched by (peer, tag) in issue order; count
 * must equal the sender's (a difference is ERASE_ERR_COMM on the stream).
 * A send completes when its buffer may be reused (it may wait for the
 * receive: put sends and receives that depend on each other on different
 * streams). 0 <= tag <= MPI_TAG_UB. Not part of the collective sequence. */
erase_status_t erase_send(erase_comm_t *c, erase_stream_t *s, const void *buf, size_t count,
                          erase_dtype_t dtype, int peer, int tag);
erase_status_t erase_recv(erase_comm_t *c, erase_stream_t *s, void *buf, size_t count,
                          erase_dtype_t dtype, int peer, int tag);

/* Every rank of c has reached this point of its stream s. */
erase_status_t erase_barrier(erase_comm_t *c, erase_stream_t *s);

/*
 * Debug (erase_world_options_t.check_sequence): compare the hash of the
 * collectives each rank issued on `c` since the last check; on a mismatch
 * every rank fails with ERASE_ERR_COMM and a message naming the first
 * mismatching rank and its operation ("rank 1 issued broadcast(4 x f32,
 * root 0) as collective #12 where rank 0 issued allreduce(4 x f32, sum)
 * (communicator world)"; a rank that issued fewer collectives shows
 * "nothing"). Collectives are numbered from 1 per communicator; the count
 * of an alltoallv (this rank's elements sent) is not compared. Sends and
 * receives are not part of the sequence. A collective issued inside a
 * stream capture is logged each time the graph runs it.
 * Blocking (host), collective over c: call between steps, from one thread;
 * it works while stream workers wait in mismatched collectives (that is
 * what it is for). When the check is off it returns ERASE_OK at once, so
 * it can be called every step unconditionally.
 */
erase_status_t erase_comm_check_sequence(erase_comm_t *c);

#endif
