/*
 * A cost model of data-parallel training steps (issue 18): from per-block
 * compute times, per-block gradient bytes and a link model, the time of one
 * step of N nodes x G ranks under erase's early-backward plan and under
 * `off`, and the data-parallel efficiency (weak scaling: the per-rank
 * batch fixed). Pure functions: no device, no MPI; what
 * `erase-bench scale` prints.
 *
 * Links (the alpha-beta model, Hockney 1994): a message of m bytes takes
 * alpha + m * beta seconds (alpha: latency, beta: seconds per byte =
 * 1 / bandwidth). Collectives over n ranks, S bytes (Thakur, Rabenseifner
 * and Gropp, "Optimization of Collective Communication Operations in
 * MPICH", IJHPCA 2005; Patarasuk and Yuan, "Bandwidth optimal all-reduce
 * algorithms for clusters of workstations", JPDC 2009):
 *   ring all-reduce (reduce-scatter then all-gather, erase's MPI
 *   communicator and NCCL's ring):   2(n-1) alpha + 2(n-1)/n S beta
 *   tree all-reduce (pipelined double binary tree, NCCL's tree; Sanders,
 *   Speck and Traeff, "Two-tree algorithms for full bandwidth broadcast,
 *   reduction and scan", Parallel Computing 2009: each tree carries S/2,
 *   a rank is inner in one and a leaf in the other, so it sends and
 *   receives S in the reduction and S in the broadcast):
 *                                    2 ceil(log2 n) alpha + 2 S beta
 *   ring all-gather of m bytes per rank:    (n-1) alpha + (n-1) m beta
 * Hierarchical, N nodes x G ranks (intra-node link `intra`, e.g. NVLink;
 * one network link per rank between nodes, `inter`): all-reduce =
 * reduce-scatter within the node (ring of G: (G-1) alpha_i + (G-1)/G S
 * beta_i), all-reduce of each rank's S/G across the N nodes (ring or tree
 * with `inter`), all-gather within the node (as the reduce-scatter);
 * all-gather = across the nodes among ranks of one local index ((N-1)
 * (alpha_e + m beta_e)), then within the node of the N m gathered
 * ((G-1)(alpha_i + N m beta_i)). N = 1 or G = 1 leave out the missing
 * level. A flat layout (every rank on the ring, erase's MPI ring over
 * hosts) is nodes = n, gpus = 1 with the slowest link as `inter`.
 *
 * The step (DESIGN.md, Schedules; lib/sched/plan.c, `graph` mode: the
 * step ends when every stream is done, no overlap across steps):
 *   early  main stream: forward of blocks 0 .. B-1; a segment (blocks
 *          between cuts) is backwarded in reverse as soon as its last
 *          forward is done; on the comm stream, in the plan's fixed order
 *          (segments in block order, each in reverse), block b's
 *          reduction (its dense all-reduce and its gathers) starts when
 *          its backward is done and the comm stream is free, followed on
 *          the comm stream by its optimizer update.
 *          Compute `concurrent`: forwards (main) and backwards (the side
 *          stream, one) run at once, each at its measured speed (a
 *          device with room for both); not concurrent: they share one
 *          compute resource in the plan's issue order (F0 B0 F1 B1 ...:
 *          a device the kernels fill, or ranks sharing cores), the
 *          updates too (each after its reduction, in the comm stream's
 *          order), so only the communication overlaps compute: with no
 *          communication early = off.
 *   off    forwards, backwards in reverse, the reductions (in reverse),
 *          the updates, one after the other on one stream.
 */
#ifndef ERASE_SCHED_SCALE_H
#define ERASE_SCHED_SCALE_H

#include "lib/core/status.h"

typedef enum { ERASE_SCALE_RING = 0, ERASE_SCALE_TREE = 1 } erase_scale_algo_t;

typedef struct {
    double alpha_s;           /* latency per message, seconds (>= 0) */
    double beta_s_per_byte;   /* seconds per byte (>= 0): 1 / bandwidth */
} erase_scale_link_t;

typedef struct {
    int nodes, gpus;          /* N >= 1 nodes x G >= 1 ranks per node */
    erase_scale_link_t intra; /* between the ranks of one node */
    erase_scale_link_t inter; /* a rank's link between nodes */
    erase_scale_algo_t algo;  /* the all-reduce across nodes (within a node: ring) */
} erase_scale_cluster_t;

typedef struct {
    double forward_s, backward_s, update_s; /* one rank's compute for its batch, seconds */
    double grad_bytes;        /* dense gradients all-reduced (bytes) */
    double gather_bytes;      /* per rank, all-gathered (sparse embedding rows), bytes */
    int gathers;              /* all-gathers that carry gather_bytes (each pays its latency) */
} erase_scale_block_t;

typedef struct {
    double compute_s;         /* sum of forward, backward and update over the blocks */
    double comm_s;            /* sum of the blocks' reduction times */
    double early_s;           /* step time, early-backward plan */
    double off_s;             /* step time, off (reductions after the backward) */
    double gain;              /* off_s / early_s */
    double exposed_s;         /* early_s - the same plan's step with no communication (>= 0) */
    double efficiency;        /* early_s of one rank (no communication) / early_s */
} erase_scale_step_t;

/* Seconds of an all-reduce of `bytes` over the cluster (formulas above);
 * 0 for one rank or 0 bytes. */
double erase_scale_allreduce_s(const erase_scale_cluster_t *c, double bytes);

/* Seconds of an all-gather of `bytes` per rank over the cluster
 * (formulas above); 0 for one rank or 0 bytes. */
double erase_scale_allgather_s(const erase_scale_cluster_t *c, double bytes);

/* Seconds of block `b`'s reduction: its dense all-reduce plus `gathers`
 * all-gathers that carry gather_bytes between them (each pays the
 * latency; the bytes once). */
double erase_scale_reduce_s(const erase_scale_cluster_t *c, const erase_scale_block_t *b);

/*
 * One step of `nblocks` blocks (1 .. 64) with cuts cut[b] (boundary b
 * between blocks b-1 and b; cut[0] ignored; NULL: every boundary a cut)
 * on the cluster `c`, the compute `concurrent` or not (see the top):
 * *out. Errors (ERASE_ERR_INVALID, naming the value): nblocks out of
 * range, nodes or gpus < 1, a negative or non-finite time, byte count or
 * link figure, gathers < 0.
 */
erase_status_t erase_scale_step(const erase_scale_block_t *blocks, int nblocks, const int *cut,
                                 const erase_scale_cluster_t *c, int concurrent, erase_scale_step_t *out);

#endif
