/*
 * The reference training step on one stream: forward of every block in
 * order, backward of every block in reverse, then one optimizer update of
 * every block. This is the arithmetic every schedule must reproduce (the
 * schedules of lib/sched change when and where these ops run, never what
 * they compute), and the step of single-stream tests and benchmarks.
 */
#ifndef ERASE_NN_TRAIN_STEP_H
#define ERASE_NN_TRAIN_STEP_H

#include "lib/nn/optim.h"

/* Enqueue one training step of `net` on `batch`; opt may be NULL
 * (forward and backward only). */
erase_status_t erase_train_step_serial(erase_network_t *net, erase_optimizer_t *opt,
                                       erase_stream_t *s, const erase_batch_t *batch);

/*
 * Random inputs of the network's model in device memory, for tests and
 * benchmarks: ctr dense features in [0, 5) with ~10% zeros, ids uniform
 * 32-bit with ~5% missing, labels Bernoulli(0.25), and for a multi-hot
 * model (lib/nn/batch.h) lengths uniform in 1 .. hotness[f] (drawn after
 * the labels; the ids past a length set to 0xFFFFFFFF); mlp features in [-1, 1)
 * and uniform classes; gpt windows of context+1 uniform tokens in
 * [0, vocab) (tokens: positions 0..T-1, targets: 1..T). Deterministic in
 * `seed`. Free with
 * erase_batch_free_random.
 */
erase_status_t erase_batch_random(erase_network_t *net, int size, uint64_t seed, erase_batch_t *out);
void erase_batch_free_random(erase_network_t *net, erase_batch_t *batch);

#endif
