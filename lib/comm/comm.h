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
 * Two implementations behind this interface, chosen by the stream's device:
 *   - MPI on host buffers and CPU streams (lib/comm/mpi_comm.c);
 *   - NCCL on device buffers and CUDA streams (lib/comm/nccl_comm.c), in
 *     builds that found NCCL, once erase_world_attach_device has created
 *     an NCCL communicator beside each MPI one (bootstrapped over MPI or a
 *     shared directory). The collective is enqueued on the CUDA stream by
 *     the calling thread (ncclAllReduce, ...), so it is capturable in a CUDA
 *     graph. Without an attached NCCL communicator (or without NCCL in the
 *     build) a collective on a CUDA stream is ERASE_ERR_UNSUPPORTED.
 * Where the two differ, the functions below say so ("NCCL:").
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
 * (fixed-order point-to-point algorithms, not MPI_Allreduce, whose
 * summation order MPI does not promise). On a power-of-two number of
 * ranks every element is the pairwise tree ((x0 + x1) + (x2 + x3)) + ...
 * over the ranks in rank order (recursive halving and doubling), the
 * order in which a rank's gradient accumulation sums its micro-batches,
 * so gradients are bitwise the same across power-of-two rank counts
 * (docs/accumulate.md); on other counts a ring (lib/comm/mpi_collectives.c).
 * NCCL: the result is the same on every rank (NCCL's ring and tree
 * algorithms reduce each element once and copy it); across runs it is
 * bitwise the same only while NCCL picks the same algorithm, protocol and
 * channel count, which depend on the size, the topology and NCCL's version.
 * erase does not set them; for bitwise reproducible runs set
 * NCCL_ALGO=Ring and NCCL_PROTO=Simple (and keep the GPUs, the NCCL version
 * and the rank count fixed). The result differs from the MPI path's in the
 * last bits in general (another summation order).
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
    int hosts;                  /* hosts of the job: the ranks with local rank 0 */
    int dp_rank, dp_size;       /* data-parallel group: ranks holding the same stage */
    int pp_rank, pp_size;       /* pipeline group: the stages of one replica */
    char host[64];
    int thread_level;           /* MPI thread support provided (MPI_THREAD_MULTIPLE required) */
} erase_world_t;

/* The longest watchdog_seconds (about 32 years): its nanoseconds, added
 * to a monotonic clock reading, must fit an int64. */
#define ERASE_WATCHDOG_MAX_SECONDS 1e9

typedef struct {
    int pp_size;                /* pipeline stages; dp_size = world size / pp_size */
    double watchdog_seconds;    /* a collective not done by then aborts the job; 0: 600 s;
                                 * at most ERASE_WATCHDOG_MAX_SECONDS */
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
 * Environment: ERASE_WATCHDOG_SECONDS overrides watchdog_seconds (a number
 * in [1e-9, ERASE_WATCHDOG_MAX_SECONDS]);
 * ERASE_CHECK_COLLECTIVES=1 (0) turns check_sequence on (off);
 * ERASE_VERBOSE (-100..100): < 0 silent, 0 (default) one summary line from rank 0
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
 * ERASE_ERR_INVALID (pp_size, watchdog_seconds, environment), ERASE_ERR_COMM (MPI). After a
 * failure the fatal hook is installed: erase_fatal ends the whole job.
 */
erase_status_t erase_world_init(int *argc, char ***argv, const erase_world_options_t *options,
                                erase_world_t *world);

/* Communicators of the world made by erase_world_init (do not destroy). */
erase_comm_t *erase_world_comm(void);
erase_comm_t *erase_dp_comm(void);
erase_comm_t *erase_pp_comm(void);
/* The data-parallel group again, as a communicator of its own: the
 * sharded embeddings' forward all-to-alls (lib/sched/embed_shard.h) run
 * on the main stream while the dp group's gradient collectives run on the
 * comm stream; one communicator's collectives must run in one order on
 * every rank, two communicators' never mix. */
erase_comm_t *erase_emb_comm(void);

/* Stop the watchdog, free the communicators and finalize MPI (if
 * erase_world_init started it), after every stream using a communicator is
 * synchronized. Restores erase_fatal's plain abort(). No-op if the world
 * is not initialised. */
void erase_world_finalize(void);

/*
 * Whether a start-up check failed on every rank alike: each rank passes
 * `failed` (0 or 1); *any = 1 when some rank failed, *all = 1 when every
 * rank did. Checks that every rank makes on the same inputs (a model file,
 * options the model cannot take) then end the job cleanly when all agree,
 * and through erase_fatal when only some failed (a file one host cannot
 * read). Blocking, on MPI_COMM_WORLD, from the main thread. Errors:
 * ERASE_ERR_COMM.
 */
erase_status_t erase_world_agree(int failed, int *all, int *any);

/* Cores each rank of this host may use: online cores / ranks on the host
 * (at least 1), for erase_device_options_t.cores. */
int erase_world_cores_per_rank(const erase_world_t *world);

/* At ERASE_VERBOSE >= 1: print "[rank r host] device: <description>" for
 * the device this rank computes on (erase_device_describe). */
void erase_world_log_device(const erase_device_t *dev);

/*
 * Let the world's communicators (world, dp, pp, emb) run collectives on streams
 * of `dev`. A CPU device: nothing to do (ERASE_OK). A CUDA device (builds
 * with NCCL): for each communicator, rank 0 of its group calls
 * ncclGetUniqueId and sends the id to the group with MPI_Bcast, or, when
 * ERASE_NCCL_ID_DIR is set, through a file in that shared directory
 * (DIR/erase-nccl-<group>-<job>.id, written atomically by rank 0 of the
 * group and removed once every rank has joined; <group> is world, dp<i>,
 * pp<i> or emb<i>, <job> from ERASE_JOB_ID, SLURM_JOB_ID or Open MPI's job id; the
 * others wait up to ERASE_NCCL_ID_TIMEOUT seconds, default 300); then every
 * rank calls ncclCommInitRankConfig (blocking) on the device.
 * Device choice: one GPU per rank. The ordinal is the caller's (e.g.
 * erase_world_t.local_rank, or 0 when the launcher gives each rank its own
 * CUDA_VISIBLE_DEVICES); it is not required to equal the local rank, but
 * two ranks of one host on the same physical GPU (same PCI bus id) are
 * ERASE_ERR_INVALID naming both, as NCCL would hang on them.
 * Collective over the world, from the main thread, once, after
 * erase_world_init; every rank passes a device of the same kind
 * (ERASE_ERR_INVALID otherwise, on every rank).
 * Afterwards: the fatal path calls ncclCommAbort on each communicator
 * before MPI_Abort; erase_world_finalize destroys them (synchronize the
 * streams first). At ERASE_VERBOSE >= 1 each rank prints "[rank r host]
 * nccl: NCCL x.y.z on CUDA device <ordinal> (PCI <bus id>), local rank l,
 * world rank a of n, dp rank ..., pp rank ..., id over <MPI | DIR>"; rank 0
 * prints one summary line at ERASE_VERBOSE >= 0.
 * Watchdog: each NCCL operation issued outside a graph capture is followed
 * by an event that the watchdog polls; one not completed watchdog_seconds
 * after it was ISSUED (it may wait behind earlier work on its stream)
 * fires as for MPI. Operations inside a capture are not watched one by one
 * (a graph replay is one unit to CUDA); NCCL's asynchronous errors
 * (ncclCommGetAsyncError) are polled for every communicator all the time
 * and take the fatal path.
 * Errors: ERASE_ERR_STATE (world not initialised, or already attached),
 * ERASE_ERR_INVALID (NULL device, kinds differ, shared GPU, no job id for
 * ERASE_NCCL_ID_DIR), ERASE_ERR_UNSUPPORTED (a CUDA device in a build
 * without NCCL), ERASE_ERR_BACKEND (CUDA or NCCL), ERASE_ERR_COMM (MPI, the
 * id file never came), ERASE_ERR_IO (the id file cannot be written).
 */
erase_status_t erase_world_attach_device(erase_device_t *dev);

/* ---- collectives on a stream ------------------------------------------------ */

/* Rank in / size of the communicator (-1 / 0 for NULL). */
int erase_comm_rank(const erase_comm_t *c);
int erase_comm_size(const erase_comm_t *c);

/* Collectives issued on c by this rank so far (the number the last one got;
 * sends and receives not counted). For traces and tests. */
uint64_t erase_comm_issued(erase_comm_t *c);

/*
 * The collectives below return once the operation is enqueued on s (a CPU
 * stream: host buffers; a CUDA stream: device buffers of the attached
 * device); buffers must stay valid and untouched until it has run. count
 * is in elements of dtype and must be the same on every rank (for the
 * v-variants: the arrays must agree). Common errors: ERASE_ERR_INVALID (NULL
 * communicator or stream, NULL buffer with elements, bad root/peer/tag or
 * dtype, size overflow), ERASE_ERR_UNSUPPORTED (a CUDA stream without an
 * attached NCCL communicator), ERASE_ERR_NOMEM; on a CUDA stream also
 * ERASE_ERR_INVALID (a stream of a device other than the attached one),
 * ERASE_ERR_BACKEND / ERASE_ERR_COMM (NCCL or CUDA refused the operation:
 * "<nccl call>: <NCCL error string> (<ncclGetLastError>)"). NCCL reports
 * failures while the operation runs asynchronously: the watchdog polls them
 * and takes the fatal path (there is no per-stream sticky error for them).
 */

/* recv[i] = op over ranks of send[i], i < count; send == recv allowed (in
 * place), other overlaps are not. f32, f64, i32, i64 (u8 is
 * ERASE_ERR_INVALID). mean = sum, then times 1/size in floating point;
 * integer sums wrap modulo 2^bits and their mean is sum / size truncated.
 * max propagates NaN. Bitwise identical on every rank (see above).
 * NCCL: sum and max are ncclSum and ncclMax; mean is ncclAvg, which for
 * floats multiplies each rank's value by 1/size before the sum (exact when
 * size is a power of two and nothing underflows, else it may differ from
 * the MPI path in the last bit) and for integers is the wrapping sum
 * divided by size, truncated, as above; NaN in max follows NCCL. */
erase_status_t erase_allreduce(erase_comm_t *c, erase_stream_t *s, const void *send, void *recv,
                               size_t count, erase_dtype_t dtype, erase_reduce_t op);

/* The MPI path's all-reduce algorithm on c, for logs and benchmarks:
 * "recursive halving + doubling" (a power-of-two size) or "ring
 * reduce-scatter + all-gather" (other sizes, or ERASE_ALLREDUCE=ring). */
const char *erase_allreduce_algorithm(const erase_comm_t *c);

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

/*
 * Counted all-to-all (TorchRec's all-to-all-v, with sizes known only when
 * the operation runs): send and recv are [size][slots][slot_elems]
 * elements of dtype (block r: to / from rank r; slot k of it). For every
 * rank r and slot k, the first send_counts[r*slots + k] x unit elements of
 * send's slot (r, k) go to rank r's recv slot (this rank, k), and
 * recv_counts[r*slots + k] x unit elements from rank r arrive in recv's
 * slot (r, k); the rest of every recv slot is left as it was.
 * send_counts and recv_counts are int [size][slots] in memory of the
 * stream's device (a CPU stream: host memory, read by its worker), READ
 * WHEN THE OPERATION RUNS, not when it is issued: earlier operations on
 * the stream may write them (data-dependent sizes), and a captured graph
 * moves the counts current at each replay. Every count must be in
 * [0, slot_elems / unit], and recv_counts[r*slots + k] must equal rank r's
 * send_counts[this rank*slots + k]; otherwise the stream's sticky error is
 * ERASE_ERR_COMM "counted all-to-all: rank r sends a x u elements in slot
 * k where this rank expects b" or "counted all-to-all: <send|receive>
 * count c of rank r slot k is outside [0, m]" (the exchange completes
 * first, so no rank hangs; the recv slots concerned are left as they were).
 * slots, slot_elems, unit and dtype must be the same on every rank
 * (the sequence check compares slots x slot_elems, never the counts).
 * MPI: each pair of ranks exchanges its slots' counts (slots ints each
 * way), then the counted prefixes packed contiguously (a staging buffer of
 * the communicator, grown once to 2 x slots x slot_elems elements + the
 * counts); the bytes moved are the counted ones + 4 x slots per peer.
 * NCCL: moves whole slots (the counts are device memory the host cannot
 * read without a synchronisation): the padded all-to-all of slots x
 * slot_elems elements per rank; the counts are neither read nor checked.
 * Errors at the call: ERASE_ERR_INVALID (slots < 0, unit 0 or not
 * dividing slot_elems, slot_elems / unit above INT_MAX, NULL buffers or
 * counts, send == recv, sizes that overflow).
 */
erase_status_t erase_alltoall_slots(erase_comm_t *c, erase_stream_t *s, const void *send, void *recv,
                                    int slots, size_t slot_elems, const int *send_counts,
                                    const int *recv_counts, size_t unit, erase_dtype_t dtype);

/* Point to point (pipelines): matched by (peer, tag) in issue order; count
 * must equal the sender's (a difference is ERASE_ERR_COMM on the stream).
 * A send completes when its buffer may be reused (it may wait for the
 * receive: put sends and receives that depend on each other on different
 * streams). 0 <= tag <= MPI_TAG_UB. Not part of the collective sequence.
 * MPI (CPU streams): the stream's worker waits without spinning
 * (lib/comm/mpi_wait.c, comm_wait): it polls every 2 us while another
 * stream's worker waits for its stream, and otherwise naps up to 1 ms,
 * while every CPU stream worker tests the pending requests between its
 * operations; so a completion is seen within microseconds when compute
 * waits for it or runs operations, and up to ~1 ms late when neither
 * (e.g. only the host waits). NCCL: ncclSend / ncclRecv have no tags
 * (the tag is range-checked, not matched): sends and receives between two ranks match in issue order, and
 * NCCL runs a communicator's operations one after the other in issue order
 * whatever the stream, so two ranks that exchange must order their calls
 * to match (rank a: send then receive; rank b: receive then send), or use
 * erase_alltoallv. */
erase_status_t erase_send(erase_comm_t *c, erase_stream_t *s, const void *buf, size_t count,
                          erase_dtype_t dtype, int peer, int tag);
erase_status_t erase_recv(erase_comm_t *c, erase_stream_t *s, void *buf, size_t count,
                          erase_dtype_t dtype, int peer, int tag);

/*
 * Traffic counters of a communicator, per kind of operation (all-to-all:
 * erase_alltoall, erase_alltoallv and erase_alltoall_slots; all-gather:
 * with allgatherv; p2p: sends and receives), summed since the
 * communicator was made or erase_comm_stats_reset: the operations run, the
 * bytes this rank sent to and received from other ranks (its own block of
 * an all-to-all or all-gather, copied locally, is not counted; a counted
 * all-to-all counts its counts and counted prefixes), and the seconds
 * spent inside them (MPI: measured by the stream worker from the start to
 * the end of the exchange, waits for peers included; operations of one
 * communicator on several streams add up).
 * NCCL: operations are counted when issued outside a graph capture (a
 * replayed graph's are not), with the bytes the fixed-size transfers move
 * (all-reduce: the ring's 2 (n-1)/n x the buffer each way; all-to-all-v:
 * the counts given; a counted all-to-all: whole slots); seconds are 0 (the
 * operations run asynchronously on the GPU).
 */
typedef enum {
    ERASE_COMM_ALLREDUCE = 0,
    ERASE_COMM_BROADCAST,
    ERASE_COMM_ALLGATHER,
    ERASE_COMM_ALLTOALL,
    ERASE_COMM_BARRIER,
    ERASE_COMM_P2P,
    ERASE_COMM_KINDS
} erase_comm_kind_t;

typedef struct {
    uint64_t ops;
    uint64_t bytes_sent, bytes_received;
    double seconds;
} erase_comm_counter_t;

typedef struct {
    erase_comm_counter_t kind[ERASE_COMM_KINDS]; /* indexed by erase_comm_kind_t */
} erase_comm_stats_t;

/* A copy of c's counters (consistent: taken under the communicator's
 * lock, so an operation ending meanwhile is in it whole or not at all).
 * Errors: ERASE_ERR_INVALID (NULL c or out). */
erase_status_t erase_comm_stats(const erase_comm_t *c, erase_comm_stats_t *out);
/* Zero c's counters (operations running now count in the new period). */
void erase_comm_stats_reset(erase_comm_t *c);

/* Every rank of c has reached this point of its stream s. (NCCL: an
 * all-reduce of one int on a device word of the communicator.) */
erase_status_t erase_barrier(erase_comm_t *c, erase_stream_t *s);

/*
 * Debug (erase_world_options_t.check_sequence): compare the hash of the
 * collectives each rank issued on `c` since the last check; on a mismatch
 * every rank fails with ERASE_ERR_COMM and a message naming the first
 * mismatching rank and its operation ("rank 1 issued broadcast(4 x f32,
 * root 0) as collective #12 where rank 0 issued allreduce(4 x f32, sum)
 * (communicator world)"; a rank that issued fewer collectives shows
 * "nothing"). Collectives are numbered from 1 per communicator; the count
 * of an alltoallv (this rank's elements sent) is not compared, nor are a
 * counted all-to-all's counts (only its slots x slot_elems). Sends and
 * receives are not part of the sequence. A collective issued inside a
 * stream capture is logged each time the graph runs it (NCCL: through a
 * host node added to the graph while the check is on).
 * Blocking (host), collective over c: call between steps, from one thread;
 * it works while stream workers wait in mismatched collectives (that is
 * what it is for). When the check is off it returns ERASE_OK at once, so
 * it can be called every step unconditionally.
 */
erase_status_t erase_comm_check_sequence(erase_comm_t *c);

#endif
