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
 * over MPI; with the CUDA backend).
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

/* Bytes of one element. */
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
 */
erase_status_t erase_world_init(int *argc, char ***argv, const erase_world_options_t *options,
                                erase_world_t *world);

/* Communicators of the world made by erase_world_init (do not destroy). */
erase_comm_t *erase_world_comm(void);
erase_comm_t *erase_dp_comm(void);
erase_comm_t *erase_pp_comm(void);

/* Finalize MPI (after every stream using a communicator is synchronized). */
void erase_world_finalize(void);

/* ---- collectives on a stream ------------------------------------------------ */

int erase_comm_rank(const erase_comm_t *c);
int erase_comm_size(const erase_comm_t *c);

/* recv[i] = op over ranks of send[i], i < count; send == recv allowed (in place). */
erase_status_t erase_allreduce(erase_comm_t *c, erase_stream_t *s, const void *send, void *recv,
                               size_t count, erase_dtype_t dtype, erase_reduce_t op);

/* buf[0..count) of `root` to every rank. */
erase_status_t erase_broadcast(erase_comm_t *c, erase_stream_t *s, void *buf, size_t count,
                               erase_dtype_t dtype, int root);

/* recv[r*count .. (r+1)*count) = send of rank r. */
erase_status_t erase_allgather(erase_comm_t *c, erase_stream_t *s, const void *send, void *recv,
                               size_t count, erase_dtype_t dtype);

/* Variable sizes: rank r contributes counts[r] elements placed at displs[r]. */
erase_status_t erase_allgatherv(erase_comm_t *c, erase_stream_t *s, const void *send, void *recv,
                                const size_t *counts, const size_t *displs, erase_dtype_t dtype);

/* Block r of send (count elements) goes to rank r; block r of recv came from rank r. */
erase_status_t erase_alltoall(erase_comm_t *c, erase_stream_t *s, const void *send, void *recv,
                              size_t count, erase_dtype_t dtype);
erase_status_t erase_alltoallv(erase_comm_t *c, erase_stream_t *s, const void *send,
                               const size_t *send_counts, const size_t *send_displs, void *recv,
                               const size_t *recv_counts, const size_t *recv_displs,
                               erase_dtype_t dtype);

/* Point to point (pipelines): matched by (peer, tag) in issue order. */
erase_status_t erase_send(erase_comm_t *c, erase_stream_t *s, const void *buf, size_t count,
                          erase_dtype_t dtype, int peer, int tag);
erase_status_t erase_recv(erase_comm_t *c, erase_stream_t *s, void *buf, size_t count,
                          erase_dtype_t dtype, int peer, int tag);

erase_status_t erase_barrier(erase_comm_t *c, erase_stream_t *s);

/*
 * Debug (erase_world_options_t.check_sequence): compare the hash of the
 * collectives each rank issued on `c` since the last check; on a mismatch
 * every rank fails with ERASE_ERR_COMM and a message naming the first
 * mismatching rank and its operation ("rank 1 issued broadcast(4 x f32,
 * root 0) as collective #12 where rank 0 issued allreduce(4 x f32, sum)").
 * Blocking (host); call between steps.
 */
erase_status_t erase_comm_check_sequence(erase_comm_t *c);

#endif
