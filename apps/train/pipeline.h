/*
 * erase-train's pipelines (--schedule gpipe | 1f1b | paci, --pp P,
 * --micro-batches M, --accumulate a, --stages): where the stages begin,
 * and the summary's and metrics file's per-stage accounting. The stage
 * executor itself is lib/sched/pipe.h.
 */
#ifndef ERASE_APPS_TRAIN_PIPELINE_H
#define ERASE_APPS_TRAIN_PIPELINE_H

#include <stdio.h>

#include "apps/train/options.h"
#include "lib/comm/comm.h"
#include "lib/sched/pipe.h"

/* Blocks [first[s], first[s+1]) form stage s; first[0] = 0, first[P] = blocks. */
typedef struct {
    int P;
    int first[ERASE_MAX_BLOCKS + 1];
    double block_ms[ERASE_MAX_BLOCKS];  /* --stages auto: each block's measured forward + backward */
    int measured;                       /* --stages auto: 1 measured (block_ms), 2 a resumed checkpoint's */
    int local;                          /* --schedule local: stages begin at cuts (else at attached
                                         * boundaries) */
    int inner_cuts;                     /* cuts inside the stages, over all stages (early backward
                                         * inside a stage needs one; set by erase-train's set-up) */
} train_stages_t;

/* The most stages `cfg`'s model (its cuts applied) splits into: 1 + its
 * attached block boundaries, or with `local` (--schedule local) 1 + its
 * cuts. */
int train_pipeline_max_stages(const erase_model_config_t *cfg, int local);

/*
 * The stages of `cfg`'s model (its cuts applied) over P stages as
 * --stages says: "even" (first[s] = floor(s B / P)), a list of each
 * stage's first block ("0,3,5": P entries, increasing, the first 0), or
 * "auto" (out->measured set; train_pipeline_balance chooses them). A
 * stage boundary must be attached, or with `local` (--schedule local) a
 * cut. Not collective. Errors: ERASE_ERR_INVALID (a bad list, P > blocks
 * or boundaries of the kind, a stage beginning at the other kind; naming
 * --stages / --pp and what was expected).
 */
erase_status_t train_pipeline_stages(const char *spec, const erase_model_config_t *cfg, int P, int local,
                                     train_stages_t *out);

/*
 * --stages auto: every rank times each block's forward and backward on a
 * random micro-batch of `micro` samples (one warm-up round, then the
 * median of 3), the times are averaged over the world so every rank
 * agrees, and the contiguous split at attached boundaries (local: at
 * cuts) that minimizes
 * the slowest stage's time is taken (exhaustive dynamic programming, B <=
 * 32). Collective over the world. Errors: those of the timing pass and
 * the collectives.
 */
erase_status_t train_pipeline_balance(const erase_model_config_t *cfg, erase_device_t *dev, int micro,
                                      erase_stream_t *host, train_stages_t *st);

/*
 * --stages auto with --resume: the stages of the checkpoint at `path` (a
 * file, or a directory: its newest usable checkpoint), as its /meta
 * pp_layout records them, so that a resumed run splits as the run that
 * wrote it did (measuring again may choose another split, which the
 * checkpoint refuses). Sets st->first and st->measured = 2 when every
 * rank read them; leaves *st when there is no usable checkpoint or its
 * layout is not st->P stages at attached boundaries (the restore then
 * says why, or the run starts fresh and measures). Collective over the
 * world. Errors: ERASE_ERR_STATE (some ranks could read it, others not),
 * those of the collectives.
 */
erase_status_t train_pipeline_stages_resumed(const char *path, const erase_model_config_t *cfg,
                                             erase_stream_t *host, train_stages_t *st);

/* "0-2 | 3-5": the stages' blocks. */
void train_pipeline_stages_text(const train_stages_t *st, char *buf, size_t size);

/*
 * Every rank's stage figures (erase_pipe_stats), gathered over the world
 * on `host`: *out [world size][fields] doubles (free it). The timing
 * (busy, wall, bubble) is since `since` (the figures after the run's
 * warm-up steps, which also hold the ranks' skew at the start; all zero:
 * the whole run). Collective. Errors: ERASE_ERR_NOMEM, those of the
 * collectives.
 */
erase_status_t train_pipeline_gather(erase_pipe_t *pipe, const erase_pipe_stats_t *since, const erase_world_t *w,
                                     erase_stream_t *host, double **out);

/*
 * The summary's pipeline lines from the gathered figures (rank 0): the
 * schedule, P x dp, M, a, the stages; then per stage (dp replica 0):
 * blocks, measured bubble beside the analytic (P-1)/(M+P-1) (gpipe,
 * 1f1b), the compute stream's wall ms per step and its busy ms per step
 * in forwards, backwards and updates (these since `since` of
 * train_pipeline_gather), the micro-batches by drift and the largest against its bound,
 * megabytes sent and received per step, activation slots and their
 * memory, paci's drains. With `metrics`, a "pipeline" record of the same.
 */
void train_pipeline_print(const double *all, const erase_pipe_options_t *po, const train_stages_t *st,
                          const erase_world_t *w, FILE *metrics, int64_t step, int64_t samples_seen);

#endif
