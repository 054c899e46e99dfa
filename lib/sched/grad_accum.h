/*
 * Gradient accumulation over the micro-batches of one optimizer step,
 * shared by the pipeline stage executor (pipe.c: gpipe, 1f1b, paci's
 * window) and the data-parallel scheduler's --accumulate (sched.c): each
 * micro-batch's forward and backward run on a replica of the network
 * (erase_network_create_replica); its dense block gradients are added into
 * the network's (which the all-reduce, clipping and optimizer read), its
 * embedding tables' sparse rows packed into the micro-batch's region of W
 * regions (erase_sparse_pack) and merged into the network's sparse
 * gradients before the update (erase_sparse_merge: ascending unique rows,
 * rows that several micro-batches touched summed as the pairwise tree
 * over the regions, the order of the dense sums under PAIRWISE).
 * The replicas' losses are scaled so that the sum is the step's mean
 * (erase_network_set_loss_scale: n_m / N).
 */
#ifndef ERASE_SCHED_GRAD_ACCUM_H
#define ERASE_SCHED_GRAD_ACCUM_H

#include "lib/nn/network.h"

typedef struct sched_accum sched_accum_t;

/* Flags of sched_accum_create. PAIRWISE: the dense gradients of a step's
 * W micro-batches are summed as the pairwise tree ((g0 + g1) + (g2 + g3))
 * + ... (the order of the power-of-two all-reduce, lib/comm/comm.h), which
 * makes A micro-batches on each of D ranks give bitwise the gradients of
 * A' on D' when A x D = A' x D' and all four are powers of two (the
 * data-parallel --accumulate; docs/accumulate.md). Each block's
 * micro-batches must then be added in order 0 .. W-1 every step, and
 * floor(log2(W + 1)) - 1 further copies of its gradients are held (none
 * for W <= 2, one for W = 3 .. 6). Without it (the pipelines) they are
 * added in arrival order into zeros. Embedding rows are merged in region
 * order either way. */
enum { SCHED_ACCUM_PAIRWISE = 1 };

/*
 * An accumulator into net's blocks [first, last) for W = windows
 * micro-batches of up to micro_size samples: grows net's sparse-gradient
 * rows to W x micro_size, zeroes those blocks' dense gradients (blocking)
 * and allocates the packs (and with SCHED_ACCUM_PAIRWISE in `flags` the
 * partial sums). Errors: ERASE_ERR_INVALID (tables that
 * sched_block_tables refuses, rows that overflow), ERASE_ERR_NOMEM.
 */
erase_status_t sched_accum_create(erase_network_t *net, int first, int last, int windows, int micro_size,
                                  int flags, sched_accum_t **out);
void sched_accum_destroy(sched_accum_t *a);

/* On stream s: add the replica's dense gradients of blocks [b0, b1) into
 * the network's, and pack their embedding rows into region `region`
 * (0 <= region < W: the micro-batch's place in its step's window).
 * PAIRWISE: ERASE_ERR_INVALID for a region out of order. */
erase_status_t sched_accum_add(sched_accum_t *a, erase_network_t *replica, int region, int b0, int b1,
                               erase_stream_t *s);

/* On stream s: merge block b's packed rows of all W regions into the
 * network's sparse gradients (regions no micro-batch filled hold count
 * 0), then empty the regions. Nothing for a block without tables. */
erase_status_t sched_accum_merge(sched_accum_t *a, int b, erase_stream_t *s);

/* On stream s: zero block b's dense gradients in the network (after its
 * update: the next step's micro-batches add into zeros). Nothing under
 * PAIRWISE, whose first add of a step copies. */
erase_status_t sched_accum_zero(sched_accum_t *a, int b, erase_stream_t *s);

#endif
