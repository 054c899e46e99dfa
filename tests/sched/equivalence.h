/* Shared by the schedule-equivalence tests (one rank and under mpirun). */
#ifndef ERASE_TESTS_SCHED_EQUIVALENCE_H
#define ERASE_TESTS_SCHED_EQUIVALENCE_H

#include <stddef.h>

#include "lib/nn/sharding.h"
#include "lib/sched/sched.h"

/* A small ctr (six cuts), mlp (three blocks, all cut) or gpt (6 layers
 * of width 16, cuts at 2 and 4: three sub-graphs) for the tests. */
erase_model_config_t equivalence_model(erase_model_kind_t kind);

/*
 * Train `steps` steps of `cfg` under `o` on this rank's share of fixed
 * random batches (global batch 64 split over `dp` ranks, rank `rank`) and
 * return every parameter value concatenated (malloc'd, *n floats).
 * Eager modes cycle through 4 batch buffers without synchronizing between
 * steps; graph mode copies each step's data into its one buffer.
 */
float *equivalence_train(erase_device_t *dev, const erase_model_config_t *cfg,
                         const erase_sched_options_t *o, int steps, int rank, int dp, size_t *n);
/* The same with gradient-norm clipping at `grad_clip` (0: none). */
float *equivalence_train_clipped(erase_device_t *dev, const erase_model_config_t *cfg,
                                 const erase_sched_options_t *o, float grad_clip, int steps,
                                 int rank, int dp, size_t *n);
/* The same with ctr's tables sharded as plan[ERASE_CTR_FIELDS] says
 * (lib/sched/embed_shard.h over erase_emb_comm(); NULL: replicated):
 * tables this rank does not own keep their initial values. */
float *equivalence_train_sharded(erase_device_t *dev, const erase_model_config_t *cfg,
                                 const erase_sched_options_t *o, const erase_shard_t *plan, int steps,
                                 int rank, int dp, size_t *n);

/*
 * The schedule changes timing, never the math: `steps` steps of `kind`
 * under blocking, async and graph (updates early or at the end, one or two
 * side streams) give bitwise the parameters of off (cmocka assertions;
 * also checks that off moved most parameters).
 */
void equivalence_check_modes(erase_device_t *dev, erase_model_kind_t kind, int steps);
/* The same for the model `cfg`, named `what` in the printed lines, with
 * gradient-norm clipping at `grad_clip` (0: off; each sub-graph by its own
 * norm); with clipping on, also checks that clipping changed the result
 * of off (it clipped). */
void equivalence_check_config(erase_device_t *dev, const erase_model_config_t *cfg, const char *what,
                              float grad_clip, int steps);

/* Number of floats of a and b (n each) whose bits differ. */
size_t equivalence_differ(const float *a, const float *b, size_t n);

#endif
