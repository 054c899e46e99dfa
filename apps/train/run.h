/* erase-train's run: set-up from the options, the training loop,
 * evaluation, progress, metrics file, trace and summary. */
#ifndef ERASE_APPS_TRAIN_RUN_H
#define ERASE_APPS_TRAIN_RUN_H

#include "apps/train/options.h"
#include "apps/train/task.h"
#include "lib/comm/comm.h"

/* Train as the options say on this rank of `world` (with o->eval_only:
 * evaluate the checkpoint of --init-from / --resume on --eval, or on
 * --train's --eval-fraction held-out part, without training: the model
 * is the checkpoint's model text, the eval line is printed at the
 * checkpoint's step, a summary says "evaluation only", the checkpoint
 * directory is not touched); ERASE_OK or the first failure. *alike is set when the failure was found alike on every rank
 * after start-up (erase_world_agree), before the first step: 2 for a usage
 * error (an option the model cannot take, e.g. --cuts 7 for a 7-block
 * model; a --device or --gemm this machine lacks; --train data missing, of
 * another task or smaller than a global batch; an unwritable --metrics or
 * --trace, found by rank 0 alone), 1 for a bad model file; every rank can
 * then end with that status and finalize MPI instead of aborting the job,
 * rank 0 printing the one line; else 0. */
erase_status_t train_run(const train_options_t *o, const erase_world_t *world, int *alike);

/* What erase-score's hooks are told before the pass (all outlive it). */
typedef struct {
    const erase_world_t *w;
    erase_stream_t *host;     /* host-side collectives: a CPU stream (MPI) */
    const train_task_t *task; /* the model's task: its per-sample prediction */
    int width;                /* the last block's head output width (ctr 1, classify C) */
    int64_t samples;          /* rows of the data, all ranks */
    const char *ckpt_path;    /* the checkpoint scored, and its step */
    int64_t ckpt_step;
} train_score_env_t;

/* erase-score's part of an evaluation-only pass; each returns ERASE_OK or
 * its failure (the run then stops with it). All are collective. */
typedef struct {
    void *ctx;
    erase_status_t (*begin)(void *ctx, const train_score_env_t *env);
    /* Every global batch of the data in order, on every rank: the head
     * output z [b->size, width] (host memory) of this rank's share b
     * (b->size may be 0: the share of a short last batch). */
    erase_status_t (*batch)(void *ctx, const float *z, const erase_reader_batch_t *b);
    erase_status_t (*end)(void *ctx); /* after the eval line and the summary */
} train_score_hooks_t;

/* An evaluation-only run (o->eval_only set: the checkpoint of --init-from
 * or --resume on --eval) that hands every batch's outputs to `hooks` (NULL:
 * none, as train_run). Errors and *alike as train_run's. */
erase_status_t train_score(const train_options_t *o, const train_score_hooks_t *hooks, const erase_world_t *world,
                           int *alike);

/* The rank a launcher gave this process in its environment (Open MPI's
 * OMPI_COMM_WORLD_RANK, PMIX_RANK, PMI_RANK, Slurm's SLURM_PROCID), or -1
 * when no launcher started it. Usable before MPI start-up. */
int train_launcher_rank(void);
/* The number of ranks the launcher started (OMPI_COMM_WORLD_SIZE, PMI_SIZE,
 * SLURM_NTASKS), or -1 when no launcher says (a singleton: 1 rank). */
int train_launcher_size(void);

#endif
