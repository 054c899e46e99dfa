/* Shared by the schedule-equivalence tests (one rank and under mpirun). */
#ifndef ERASE_TESTS_SCHED_EQUIVALENCE_H
#define ERASE_TESTS_SCHED_EQUIVALENCE_H

#include <stddef.h>
#include <stdint.h>

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
 * (lib/sched/embed_shard.h over erase_emb_comm(); NULL: replicated), the
 * network placed (erase_network_create_placed with `rank`): a table's
 * values are the rows this rank holds (erase_network_copy_params). */
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
/* max |a - b| / max |b - b0| over n floats: how far a is from b relative
 * to how far training moved b from its initial values b0; -1 when b did
 * not move (the comparison would prove nothing). */
double equivalence_relative(const float *a, const float *b, const float *b0, size_t n);

/* Under mpirun (pp 1): the world, a CPU device and a host stream for the
 * tests' own collectives, set by equivalence_mpi_main. */
extern erase_device_t *eq_dev;
extern erase_world_t eq_world;
extern erase_stream_t *eq_host;

/* v summed over the world's ranks (cmocka assertions). */
int64_t equivalence_sum_ranks(int64_t v);

/* main of a test under mpirun: the world, then the cmocka group of n
 * tests named "<what> on <N> ranks" (only rank 0 prints), then finalize;
 * returns the failed tests' count. */
struct CMUnitTest;
int equivalence_mpi_main(int *argc, char ***argv, const char *what, const struct CMUnitTest *tests, size_t n);

#endif
