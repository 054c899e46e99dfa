/*
 * erase-train's run, the same for every model: set-up, the loop, timing,
 * progress and ETA, evaluation passes, trace, checkpoints, signals and the
 * summary's frame. What is specific to a kind of data and model (row
 * format, device batch, metrics and their lines) is the model's task
 * (apps/train/task.h). Rank 0 prints; every rank trains its share of each
 * global batch (the reader splits it) and joins every collective.
 */
#include "apps/train/run.h"

#include "apps/train/json.h"

#include "apps/train/checkpoint.h"
#include "apps/train/batch_ring.h"
#include "apps/train/embeddings.h"
#include "apps/train/pipeline.h"
#include "apps/train/task.h"
#include "io/checkpoint.h"
#include "lib/core/checked.h"
#include "lib/core/stats.h"
#include "lib/core/timer.h"
#include "lib/sched/sched.h"
#include "lib/sched/trace.h"

#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* A step enqueued and not yet finished: what its finish needs. */
typedef struct {
    erase_reader_batch_t b;          /* its batch (the reader's memory, or r->held's copy) */
    double issued_s;                 /* when the host began to enqueue it */
    int traffic;                     /* sharded tables: its all-to-alls are counted */
    int64_t bytes0;
    double emb_s0;
} in_flight_t;

typedef struct {
    const train_options_t *o;
    const erase_world_t *w;
    int root;
    erase_device_t *dev;
    erase_device_t *host_dev;        /* a CPU device when dev's memory is not host memory */
    erase_stream_t *host;            /* host-side collectives (metrics, checkpoints): a CPU stream */
    erase_model_config_t cfg;
    const train_task_t *task;        /* the model's (apps/train/task.h) */
    erase_row_format_t rows;         /* the readers' row format when the task makes one (rows_for) */
    void *ts;                        /* the task's state */
    erase_network_t *net;
    erase_optimizer_t *opt;
    erase_sched_t *sched;            /* data parallel (--schedule none), or */
    train_embeddings_t emb;          /* --embeddings: the tables' placement (tables 0: replicated) */
    erase_embed_shard_t *shard;      /* sharded tables: their exchanges; else NULL */
    erase_pipe_t *pipe;              /* this rank's pipeline stage (apps/train/pipeline.h) */
    erase_pipe_options_t pipe_o;
    train_stages_t stages;
    erase_pipe_stats_t pipe_warm;    /* its figures after the warm-up steps (the timing excludes them) */
    train_batch_ring_t *behind;      /* --schedule local, last stage: the batches its outputs are of
                                      * (it trains in step t the batch of step t - (P-1)) */
    erase_reader_t *train, *eval;
    int64_t global_batch;            /* samples per step over all ranks (batch_sizes) */
    int64_t rank_batch;              /* the most samples a rank's share of a step has: ceil(G / D) */
    erase_batch_t batch;             /* the task's fixed device buffers of one rank's batch (the
                                      * reader's batches are in pinned staging memory: open_readers) */
    float *outputs;                  /* host copy of the last block's head output [rank_batch, width] */
    /* steps in flight (train_loop): under a pipeline but local the host
     * enqueues step t+1 before it finishes step t */
    int ahead;                       /* it may */
    float *outputs_ahead;            /* the odd steps' outputs then */
    train_batch_ring_t *held;        /* the host copies of the batches in flight then */
    erase_event_t *loaded;           /* after the last batch's copy into the device buffers */
    in_flight_t in_flight[2];        /* step i's at i mod 2 */
    int64_t issued;                  /* steps enqueued (r->step or r->step + 1) */
    int64_t epoch_end;               /* the reader's epoch ended after the steps enqueued: the new epoch */
    double done_s;                   /* when the last step was finished */
    int64_t warmup, trace_from, trace_to, trace_t0;
    int width;                       /* its width */
    /* throughput in the task's units and MFU */
    int64_t units;                   /* the task's units per sample (tokens of a window), 0: none */
    double flops;                    /* training FLOPs per sample (erase_network_flops_per_sample), 0: not counted */
    double peak_gflops;              /* this rank's SGEMM peak (erase_device_sgemm_peak) when flops > 0 */
    FILE *metrics;
    FILE *trace;                     /* --trace on rank 0: opened before the first step */
    int tty;
    /* progress */
    int64_t step, total_steps, epoch;
    double *step_s;                  /* per-step seconds */
    int64_t window_steps;
    int64_t window_skipped;          /* of them, skipped for non-finite gradients */
    struct {                         /* the window's, per block: */
        double loss[ERASE_MAX_BLOCKS];  /* sum of its local loss */
        double steps[ERASE_MAX_BLOCKS]; /* steps that trained it (local: not its stage's fill steps) */
    } block;                         /* a pipeline adds both over its stages in one all-reduce */
    int64_t window_global;           /* the window's samples (global batches) */
    double t_start;
    int64_t evals, eval_step;        /* evaluations done, step of the last one */
    double eval_s;                   /* seconds of all evaluations (not in step_s) */
    struct {                         /* sharded tables: the all-to-alls of the steps after the warm-up */
        int64_t steps, bytes;        /* (each step's own: the traffic counters before and after it) */
        double seconds, step_seconds;
    } emb_traffic;
    int64_t skipped;                 /* steps skipped for non-finite gradients */
    /* checkpoints (apps/train/checkpoint.h) */
    train_ckpt_t *ckpt;
    int64_t first_step;              /* step this run started at (> 0 when resumed) */
    int64_t samples_seen;            /* training samples consumed, all ranks, since step 0 */
    int stopped;                     /* the signal that stopped training, or 0 */
    /* evaluation only (--eval-only, erase-score): the checkpoint evaluated */
    char ckpt_path[1024];
    int64_t ckpt_step;
    double eval_fraction;            /* of --train held out (--eval-only: the checkpoint's run's) */
    const train_score_hooks_t *score; /* erase-score's, or NULL */
} run_t;

#define TRY(call) ERASE_CHECK(call)

/* ---- the step's executor: the scheduler or the pipeline stage --------------- */

static erase_stream_t *main_stream(const run_t *r)
{
    return r->pipe ? erase_pipe_stream(r->pipe) : erase_sched_main_stream(r->sched);
}

static erase_status_t synchronize(run_t *r)
{
    return r->pipe ? erase_pipe_synchronize(r->pipe) : erase_sched_synchronize(r->sched);
}

/* The step's marker records, renumbered to its executor's streams. */
static size_t trace_collect(run_t *r, erase_trace_record_t *out, size_t max)
{
    return r->pipe ? erase_pipe_trace_collect(r->pipe, out, max) : erase_sched_trace_collect(r->sched, out, max);
}

/* The last block's head output is this rank's (the last stage's, in a pipeline). */
static int has_outputs(const run_t *r)
{
    return !r->pipe || r->w->pp_rank == r->w->pp_size - 1;
}

/* Sums of the task's metrics over the ranks that have outputs: the dp
 * group, or in a pipeline the world (the other stages add zeros). */
static erase_comm_t *metrics_comm(const run_t *r)
{
    return r->pipe ? erase_world_comm() : erase_dp_comm();
}

/* ---- set-up ---------------------------------------------------------------- */

static erase_status_t parse_cuts(const char *text, int blocks, uint32_t *mask)
{
    if (!strcmp(text, "all")) {
        *mask = 0;
        for (int b = 1; b < blocks; b++)
            *mask |= 1u << b;
        return ERASE_OK;
    }
    if (!strcmp(text, "none")) {
        *mask = 0;
        return ERASE_OK;
    }
    *mask = 0;
    const char *p = text;
    while (*p) {
        char *end;
        long b = strtol(p, &end, 10);
        if (end == p || b < 1 || b >= blocks)
            return ERASE_ERROR(ERASE_ERR_INVALID, "--cuts %s: expected all, none or boundaries 1..%d separated by commas",
                               text, blocks - 1);
        if (*mask & 1u << b) /* as model files: a boundary listed twice is a mistake */
            return ERASE_ERROR(ERASE_ERR_INVALID, "--cuts %s: boundary %ld listed twice", text, b);
        *mask |= 1u << b;
        p = *end == ',' ? end + 1 : end;
        if (*end && *end != ',')
            return ERASE_ERROR(ERASE_ERR_INVALID, "--cuts %s: expected all, none or boundaries 1..%d separated by commas",
                               text, blocks - 1);
    }
    return ERASE_OK;
}

/*
 * Evaluation only: the model as the checkpoint of --init-from (a file or
 * a directory: its newest usable one, as the restore picks it) holds it
 * (its model text: cuts and sizes as trained); its path and step kept for
 * the lines. Every rank reads it (the checkpoint is on a file system every
 * rank sees). Errors: those of erase_ckpt_open / erase_ckpt_open_newest,
 * ERASE_ERR_FORMAT for a directory without checkpoints or bad model text.
 */
static erase_status_t model_from_checkpoint(run_t *r)
{
    const char *path = r->o->init_from;
    erase_ckpt_t *ck = NULL;
    TRY(erase_ckpt_open_path(path, NULL, NULL, &ck));
    const erase_ckpt_meta_t *m = erase_ckpt_meta(ck);
    snprintf(r->ckpt_path, sizeof r->ckpt_path, "%s", erase_ckpt_path(ck));
    r->ckpt_step = m->step;
    /* the part of --train its run held out, not this run's --eval-fraction:
     * another fraction would evaluate on rows it trained on */
    char held[64];
    if (!r->o->eval[0] && m->options && train_options_value(m->options, "eval_fraction", held, sizeof held) == 0) {
        double f = strtod(held, NULL);
        if (f > 0 && f < 1 && f != r->eval_fraction && r->root)
            printf("note   evaluating the part of --train that %s's run held out (eval_fraction %g), "
                   "not --eval-fraction %g\n", r->ckpt_path, f, r->eval_fraction);
        if (f > 0 && f < 1)
            r->eval_fraction = f;
    }
    erase_status_t st = m->model ? erase_model_config_parse(m->model, r->ckpt_path, &r->cfg)
                                 : ERASE_ERROR(ERASE_ERR_FORMAT, "%s: holds no model text", r->ckpt_path);
    erase_ckpt_close(ck);
    return st;
}

/* What a pipeline needs of the model, found alike on every rank: an
 * untied gpt head, stages at attached boundaries. */
static erase_status_t pipeline_model(run_t *r)
{
    int tied = 0, P = r->w->pp_size;
    if (r->cfg.kind == ERASE_MODEL_GPT)
        TRY(erase_model_config_tied_head(&r->cfg, &tied));
    if (tied && P > 1)
        return ERASE_ERROR(ERASE_ERR_INVALID, "--pp %d: the gpt model's LM head is tied to h0/wte, which would "
                           "join stage 0 and stage %d; set tie_head = false in the model file (docs/models.md; e.g. "
                           "jobs/gpt-shakespeare-pp.cfg)",
                           P, P - 1);
    return train_pipeline_stages(r->o->stages, &r->cfg, P, !strcmp(train_options_schedule(r->o), "local"),
                                 &r->stages);
}

/* The model: its file (or reference sizes) and --cuts, or with
 * --eval-only the checkpoint's. A setting that
 * cannot be used with the model sets *usage: every rank finds it alike,
 * before anything is opened. */
static erase_status_t setup_model(run_t *r, int *usage)
{
    const train_options_t *o = r->o;
    erase_model_kind_t kind;
    if (o->eval_only)
        TRY(model_from_checkpoint(r));
    else if (erase_model_config_kind(o->model, &kind))
        r->cfg = erase_model_config_default(kind);
    else
        TRY(erase_model_config_load(o->model, &r->cfg));
    *usage = 1;
    if (!(r->task = train_task_find(erase_model_config_task(&r->cfg))))
        return ERASE_ERROR(ERASE_ERR_INVALID, "--model %s: erase-train has no task %s for the %s model", o->model,
                           erase_model_config_task(&r->cfg), erase_model_config_name(&r->cfg));
    TRY(train_embeddings_plan(&r->cfg, o->embeddings, o->embedding_optimizer, erase_comm_size(erase_emb_comm()),
                              &r->emb));
    if (o->cuts[0] && !o->eval_only)
        TRY(parse_cuts(o->cuts, erase_model_config_blocks(&r->cfg), &r->cfg.cut_mask));
    if (train_options_pipeline(o))
        TRY(pipeline_model(r));
    *usage = 0;
    r->cfg.seed = (uint64_t)o->seed;
    return ERASE_OK;
}

/* The reader's batch memory: staging memory of the device (page-locked on
 * CUDA, so the per-step copies to the device overlap compute). */
static void *staging_alloc(void *dev, size_t bytes)
{
    void *ptr = NULL;
    if (erase_host_alloc(dev, bytes, &ptr) != ERASE_OK) {
        erase_error_clear();
        return NULL; /* the reader reports the missing memory */
    }
    return ptr;
}

/* Free what staging_alloc returned. */
static void staging_free(void *dev, void *ptr)
{
    erase_host_free(dev, ptr);
}

/* Room for the seconds of `steps` steps in *times (NULL or holding `had`
 * steps), the new ones zero. Errors: ERASE_ERR_NOMEM naming the steps,
 * when too many to hold. */
static erase_status_t alloc_step_times(int64_t had, int64_t steps, double **times)
{
    size_t bytes;
    double *grown = erase_bytes(sizeof(double), steps > 0 ? steps : 1, 1, &bytes) ? realloc(*times, bytes) : NULL;
    if (!grown)
        return ERASE_ERROR(ERASE_ERR_NOMEM, "%lld steps (--steps, or --epochs x steps per epoch): too many "
                           "to hold the time of each (%.3g bytes)", (long long)steps, 8.0 * (double)steps);
    for (int64_t i = had; i < steps; i++)
        grown[i] = 0;
    *times = grown;
    return ERASE_OK;
}

/* The inputs of --train or --eval: `text` ("a,b,c") split at commas into
 * `buf` [size]; items [max] point into it; *n inputs. An empty item is an
 * error naming the option. */
#define MAX_INPUTS 512 /* a 1023-character list holds at most 512 names */
static erase_status_t split_inputs(const char *opt, const char *text, char *buf, size_t size,
                                   const char **items, int *n)
{
    snprintf(buf, size, "%s", text);
    *n = 0;
    for (char *p = buf, *comma; *n < MAX_INPUTS; p = comma + 1) {
        comma = strchr(p, ',');
        if (comma)
            *comma = 0;
        if (!*p)
            return ERASE_ERROR(ERASE_ERR_INVALID, "--%s %s: an empty name in the list (expected DIR[,DIR...])",
                               opt, text);
        items[(*n)++] = p;
        if (!comma)
            break;
    }
    return ERASE_OK;
}

/* The data start-up line's name of a list: "a,b (2 inputs)", or "a". */
static void inputs_text(const char *list, char *buf, size_t size)
{
    int n = 1;
    for (const char *p = list; *p; p++)
        n += *p == ',';
    if (n > 1)
        snprintf(buf, size, "%s (%d inputs)", list, n);
    else
        snprintf(buf, size, "%s", list);
}

/*
 * The global batch G of every step, the one value the reader, the summary
 * and checkpoints use: --global-batch, or --batch x data-parallel ranks D.
 * The reader gives rank r positions [floor(rG/D), floor((r+1)G/D)) of each
 * step, so G need not be a multiple of D; buffers are sized by the largest
 * share, ceil(G/D), which must fit an int and be at least 1 sample.
 */
static erase_status_t batch_shares(run_t *r)
{
    const train_options_t *o = r->o;
    int64_t d = r->w->dp_size;
    if (o->global_batch == 0) {
        if (!erase_mul_i64(o->batch, d, &r->global_batch))
            return ERASE_ERROR(ERASE_ERR_INVALID, "--batch %lld x %lld ranks: the global batch is more than %lld",
                               (long long)o->batch, (long long)d, (long long)INT64_MAX);
        r->rank_batch = o->batch;
        return ERASE_OK;
    }
    r->global_batch = o->global_batch;
    if (o->global_batch < d)
        return ERASE_ERROR(ERASE_ERR_INVALID, "--global-batch %lld on %lld ranks: expected at least one sample per "
                           "rank (>= %lld)", (long long)o->global_batch, (long long)d, (long long)d);
    r->rank_batch = o->global_batch / d + (o->global_batch % d != 0);
    if (r->rank_batch > INT_MAX)
        return ERASE_ERROR(ERASE_ERR_INVALID, "--global-batch %lld on %lld ranks: %lld samples per rank, more than %d",
                           (long long)o->global_batch, (long long)d, (long long)r->rank_batch, INT_MAX);
    return ERASE_OK;
}

/* The global batch and the rank's share (batch_shares); a pipeline's
 * micro-batches hold at least one sample of the smallest share. */
static erase_status_t batch_sizes(run_t *r)
{
    const train_options_t *o = r->o;
    TRY(batch_shares(r));
    int64_t least = r->global_batch / r->w->dp_size, M = train_options_micro_batches(o);
    if (train_options_pipeline(o) && M > least)
        return ERASE_ERROR(ERASE_ERR_INVALID, "--micro-batches %lld: more than the %lld samples of a data-parallel "
                           "rank's share of each global batch (%lld over %d rank%s): a micro-batch holds at least "
                           "one", (long long)M, (long long)least, (long long)r->global_batch, r->w->dp_size,
                           r->w->dp_size == 1 ? "" : "s");
    return ERASE_OK;
}

/* The training and evaluation readers of the task's row format (their
 * batches in staging memory), the data checked against the model. */
static erase_status_t open_readers(run_t *r)
{
    const train_options_t *o = r->o;
    erase_reader_options_t ro = erase_reader_options_default();
    ro.global_batch = r->global_batch;
    ro.dp_rank = r->w->dp_rank;
    ro.dp_size = r->w->dp_size;
    ro.seed = (uint64_t)o->seed;
    ro.shuffle = o->shuffle;
    ro.drop_last = !o->eval_only; /* evaluation only takes no step from it */
    ro.batch_alloc = staging_alloc;
    ro.batch_free = staging_free;
    ro.batch_ctx = r->dev;
    char train_buf[sizeof o->train], eval_buf[sizeof o->eval];
    const char *train_list = o->train[0] ? o->train : o->eval; /* --eval-only may have no --train */
    const char *train_in[MAX_INPUTS], *eval_in[MAX_INPUTS];
    int n_train, n_eval;
    TRY(split_inputs("train", train_list, train_buf, sizeof train_buf, train_in, &n_train));
    TRY(split_inputs(o->eval[0] ? "eval" : "train", o->eval[0] ? o->eval : o->train, eval_buf, sizeof eval_buf,
                     eval_in, &n_eval));
    if (!o->eval[0]) {
        ro.part = ERASE_READER_PART_TRAIN;
        ro.eval_fraction = r->eval_fraction;
    }
    const erase_row_format_t *rows = r->task->rows;
    if (r->task->rows_for) {
        r->task->rows_for(&r->cfg, &r->rows);
        rows = &r->rows;
    }
    char why[2048];
    if (erase_reader_open(rows, train_in, n_train, &ro, &r->train) != ERASE_OK) {
        snprintf(why, sizeof why, "%s", erase_error_reason()); /* the message is rewritten below */
        return ERASE_ERROR(ERASE_ERR_INVALID, "--%s %s: %s", o->train[0] ? "train" : "eval", train_list, why);
    }
    erase_reader_options_t eo = ro;
    eo.shuffle = 0;
    eo.drop_last = 0;
    eo.part = o->eval[0] ? ERASE_READER_PART_ALL : ERASE_READER_PART_EVAL;
    if (erase_reader_open(rows, eval_in, n_eval, &eo, &r->eval) != ERASE_OK) {
        snprintf(why, sizeof why, "%s", erase_error_reason());
        return ERASE_ERROR(ERASE_ERR_INVALID, "--%s %s: %s", o->eval[0] ? "eval" : "train",
                           o->eval[0] ? o->eval : o->train, why);
    }
    TRY(r->task->check(r->train, &r->cfg));
    /* separate evaluation data too, before any step: not at the first evaluation, hours in */
    if (o->eval[0] && r->task->check(r->eval, &r->cfg) != ERASE_OK) {
        snprintf(why, sizeof why, "%s", erase_error_reason());
        return ERASE_ERROR(ERASE_ERR_INVALID, "--eval %s: %s", o->eval, why);
    }
    return ERASE_OK;
}

static erase_status_t parse_choice(const char *opt, const char *value, const char *const *names, int n, int *out)
{
    for (int i = 0; i < n; i++)
        if (!strcmp(value, names[i])) {
            *out = i;
            return ERASE_OK;
        }
    char list[128] = "";
    for (int i = 0; i < n; i++)
        snprintf(list + strlen(list), sizeof list - strlen(list), "%s%s", i ? ", " : "", names[i]);
    return ERASE_ERROR(ERASE_ERR_INVALID, "--%s %s: expected one of %s", opt, value, list);
}

/* The optimizer updates of `steps` training steps, the unit of its
 * learning-rate schedule: one per step, but M / a per step for each paci
 * stage (it updates after every a-th of its M backwards a step), rounded
 * up, so that the warm-up and the decay span the same training as with
 * one update per step. */
static int64_t optimizer_steps(const train_options_t *o, int64_t steps)
{
    int64_t M = train_options_micro_batches(o), a = train_options_accumulate(o), n;
    if (a == M) /* gpipe, 1f1b and paci's default: one update a step */
        return steps;
    if (!erase_mul_i64(steps, M, &n))
        return INT64_MAX / 2;
    return n / a + (n % a != 0);
}

/* Data parallel: the early-backward scheduler. */
static erase_status_t setup_sched(run_t *r, int mode, int reduce, int update)
{
    const train_options_t *o = r->o;
    erase_sched_options_t so = erase_sched_options_default();
    /* evaluation only: one stream computes, with every core's BLAS threads */
    so.mode = o->eval_only ? ERASE_EB_OFF : (erase_early_backward_t)mode;
    so.reduce = (erase_timing_t)reduce;
    so.update = (erase_timing_t)update;
    so.side_streams = (int)o->side_streams;
    so.blas_threads = (int)o->blas_threads;
    so.dp = erase_dp_comm();
    so.trace = o->trace[0] != 0;
    if (r->emb.tables) {
        TRY(erase_embed_shard_create(r->net, erase_emb_comm(), r->emb.plan, r->emb.tables, &r->shard));
        so.shard = r->shard;
    }
    TRY(erase_sched_create(r->net, r->opt, &so, &r->sched));
    return ERASE_OK;
}

/* A pipeline: this rank's stage (pp rank) of the stages --stages gives,
 * run by the stage executor (lib/sched/pipe.h) for the run's steps. */
static erase_status_t setup_pipeline(run_t *r, int M, int micro)
{
    const train_options_t *o = r->o;
    const erase_world_t *w = r->w;
    if (r->stages.measured && o->resume[0]) /* --stages auto: a resume takes its checkpoint's */
        TRY(train_pipeline_stages_resumed(strcmp(o->resume, "auto") ? o->resume : o->checkpoint_dir, &r->cfg,
                                          r->host, &r->stages));
    if (r->stages.measured == 1)
        TRY(train_pipeline_balance(&r->cfg, r->dev, micro, r->host, &r->stages));
    int kind = pipe_kind_parse(train_options_schedule(o));
    erase_pipe_options_t *po = &r->pipe_o;
    *po = (erase_pipe_options_t){ .kind = (pipe_kind_t)kind, .micro_batches = M, .micro_size = micro,
                                  .accumulate = (int)train_options_accumulate(o),
                                  .first = r->stages.first[w->pp_rank], .last = r->stages.first[w->pp_rank + 1],
                                  .pp = erase_pp_comm(), .dp = erase_dp_comm(), .trace = o->trace[0] != 0,
                                  .early_backward = strcmp(o->early_backward, "off") != 0 };
    TRY(erase_pipe_create(r->net, r->opt, po, r->total_steps - r->step > 0 ? r->total_steps - r->step : 1,
                          &r->pipe));
    erase_reader_info_t info = erase_reader_info(r->train);
    if (kind == PIPE_LOCAL && w->pp_size > 1 && w->pp_rank == w->pp_size - 1)
        TRY(train_batch_ring_create(&info.layout, r->rank_batch, w->pp_size, &r->behind));
    /* steps in flight (train_loop); local runs one at a time (lib/sched/pipe.h) */
    r->ahead = kind != PIPE_LOCAL;
    if (r->ahead) {
        TRY(train_batch_ring_create(&info.layout, r->rank_batch, 2, &r->held));
        TRY(erase_event_create(r->dev, &r->loaded));
    }
    return ERASE_OK;
}

static erase_status_t setup_training(run_t *r)
{
    const train_options_t *o = r->o;
    static const char *const timing[] = { "early", "end" };
    static const char *const dense_opt[] = { "sgd", "adamw" };
    static const char *const emb_opt[] = { "sgd", "rowwise_adagrad" };
    static const char *const decay[] = { "constant", "cosine" };
    static const char *const modes[] = { "off", "blocking", "async", "graph" };
    int mode, reduce, update, dense, emb, dec;
    TRY(parse_choice("early-backward", o->early_backward, modes, 4, &mode));
    TRY(parse_choice("reduce", o->reduce, timing, 2, &reduce));
    TRY(parse_choice("update", o->update, timing, 2, &update));
    TRY(parse_choice("optimizer", o->optimizer, dense_opt, 2, &dense));
    TRY(parse_choice("embedding-optimizer", o->embedding_optimizer, emb_opt, 2, &emb));
    TRY(parse_choice("lr-decay", o->lr_decay, decay, 2, &dec));

    erase_reader_info_t info = erase_reader_info(r->train);
    r->total_steps = o->steps;
    if (o->steps == 0 && !erase_mul_i64(o->epochs, info.steps_per_epoch, &r->total_steps))
        return ERASE_ERROR(ERASE_ERR_INVALID, "--epochs %lld of %lld steps: more than %lld steps",
                           (long long)o->epochs, (long long)info.steps_per_epoch, (long long)INT64_MAX);
    if (o->eval_only)
        r->total_steps = 0;
    else if (r->total_steps < 1)
        return ERASE_ERROR(ERASE_ERR_INVALID, "nothing to train: --epochs %lld of %lld steps",
                           (long long)o->epochs, (long long)info.steps_per_epoch);
    /* no buffer larger than the data can fill (an evaluation-only run or
     * erase-score with a --batch beyond its data: 64 GiB were asked for
     * 2,000 rows) */
    int64_t fill = erase_reader_info(r->train).max_local, eval_fill = erase_reader_info(r->eval).max_local;
    fill = fill > eval_fill ? fill : eval_fill;
    if (fill >= 1 && fill < r->rank_batch)
        r->rank_batch = fill;
    /* a pipeline's slots hold one micro-batch, ceil(rank batch / M); its
     * network (the optimizer's parameters) evaluates a rank batch at once */
    int pipeline = train_options_pipeline(o);
    int64_t M = train_options_micro_batches(o);
    int micro = (int)(pipeline ? (r->rank_batch + M - 1) / M : r->rank_batch);
    if (r->emb.tables) /* sharded tables: this rank's rows only */
        TRY(erase_network_create_placed(r->dev, &r->cfg, (int)r->rank_batch, r->emb.plan, r->emb.tables,
                                        erase_comm_rank(erase_emb_comm()), &r->net));
    else
        TRY(erase_network_create(r->dev, &r->cfg, (int)r->rank_batch, &r->net));
    erase_optim_config_t oc = erase_optim_config_default();
    oc.dense = dense == 0 ? ERASE_OPTIM_SGD : ERASE_OPTIM_ADAMW;
    oc.embedding = emb == 0 ? ERASE_OPTIM_SGD : ERASE_OPTIM_ROWWISE_ADAGRAD;
    oc.schedule.base = o->lr;
    oc.schedule.warmup_steps = optimizer_steps(o, o->warmup_steps);
    oc.schedule.decay = dec == 0 ? ERASE_LR_CONSTANT : ERASE_LR_COSINE;
    oc.schedule.total_steps = optimizer_steps(o, r->total_steps);
    oc.schedule.min = 0;
    oc.embedding_lr = o->embedding_lr;
    oc.momentum = (float)o->momentum;
    oc.weight_decay = (float)o->weight_decay;
    oc.grad_clip = (float)o->grad_clip;
    TRY(erase_optimizer_create(r->net, &oc, &r->opt));
    if (pipeline)
        TRY(setup_pipeline(r, (int)M, micro));
    else
        TRY(setup_sched(r, mode, reduce, update));

    TRY(r->task->create(r->dev, &r->cfg, r->rank_batch, &r->ts));
    if (r->task->data)
        r->task->data(r->ts, r->train, r->eval);
    erase_network_head_output(r->net, erase_network_blocks(r->net) - 1, &r->width);
    size_t bytes;
    if (!erase_bytes(sizeof(float), (size_t)r->rank_batch, (size_t)r->width, &bytes) ||
        !(r->outputs = malloc(bytes)) || (r->ahead && !(r->outputs_ahead = malloc(bytes))))
        return ERASE_ERROR(ERASE_ERR_NOMEM, "erase-train: no memory for the outputs of %lld samples per rank",
                           (long long)r->rank_batch);
    TRY(alloc_step_times(0, r->total_steps, &r->step_s));
    if (r->task->units_per_sample)
        r->units = r->task->units_per_sample(&r->cfg);
    r->flops = erase_network_flops_per_sample(r->net);
    /* every rank at once, as they train: the cores they share are busy alike */
    if (r->flops > 0 && !o->eval_only) {
        double gf[5];
        TRY(erase_device_sgemm_peak(r->dev, main_stream(r), 5, gf));
        r->peak_gflops = erase_quantile(gf, 5, 0.5);
    }
    return ERASE_OK;
}

/* Model FLOPs utilization of `qps` samples/s over all ranks: the FLOPs
 * done over the ranks' SGEMM peaks (as rank 0 measured its own); 0 when
 * not counted. */
static double mfu(const run_t *r, double qps)
{
    return r->flops > 0 && r->peak_gflops > 0 ? qps * r->flops / (r->w->size * r->peak_gflops * 1e9) : 0;
}

/* ", 3072 tokens/s, MFU 12.3%" after a progress line's samples/s ("" without units). */
static void units_text(const run_t *r, double qps, char *buf, size_t size)
{
    int n = 0;
    buf[0] = 0;
    if (r->units > 0)
        n = snprintf(buf, size, " (%.0f %s/s", qps * (double)r->units, r->task->unit);
    if (n > 0 && (size_t)n < size)
        snprintf(buf + n, size - (size_t)n, r->flops > 0 && r->peak_gflops > 0 ? ", MFU %.1f%%)" : ")",
                 100 * mfu(r, qps));
}

/* Copy this rank's batch from the reader's staging memory into the task's
 * fixed device buffers, on the main stream before the step that reads
 * them. The reader reuses that memory at its next call: every caller
 * synchronizes the main stream (the step, or read_outputs) before asking
 * for the next batch, so the copy has run by then. */
static erase_status_t load_batch(run_t *r, const erase_reader_batch_t *b)
{
    return r->task->load(r->ts, main_stream(r), b, &r->batch);
}

/* Host copy of the last block's head output [n, width] (after the stream finished). */
static erase_status_t read_outputs(run_t *r, int n)
{
    int width;
    const float *z = erase_network_head_output(r->net, erase_network_blocks(r->net) - 1, &width);
    erase_stream_t *s = main_stream(r);
    TRY(erase_memcpy_async(s, r->outputs, z, (size_t)n * (size_t)width * sizeof(float)));
    TRY(erase_stream_synchronize(s));
    return ERASE_OK;
}

/* Sum the task's metric words of `part` over the data-parallel ranks, in
 * place, and summarize them. */
static erase_status_t reduce_metrics(run_t *r, train_task_part_t part)
{
    size_t words;
    int64_t *m = r->task->sums(r->ts, part, &words);
    TRY(erase_allreduce(metrics_comm(r), r->host, m, m, words, ERASE_DTYPE_I64, ERASE_REDUCE_SUM));
    TRY(erase_stream_synchronize(r->host));
    r->task->summarize(r->ts, part);
    return ERASE_OK;
}

/* ---- evaluation ---------------------------------------------------------------- */

/*
 * One evaluation pass over the eval reader with the network as it is (it
 * needs nothing of training: an evaluation-only run can call it): the
 * task's metrics summed over the ranks, the eval line and metrics-file line
 * from rank 0. Collective.
 */
static erase_status_t evaluate(run_t *r)
{
    /* local: stage s is s batches behind stage 0; drained, the stages
     * hold the weights the model trained on one rank would */
    if (r->pipe && r->pipe_o.kind == PIPE_LOCAL)
        TRY(erase_pipe_drain(r->pipe, r->total_steps - r->step > 0 ? r->total_steps - r->step : 1));
    double t0 = erase_now_s();
    r->task->clear(r->ts, TRAIN_TASK_EVAL);
    erase_status_t st = erase_reader_seek(r->eval, (erase_reader_cursor_t){ 0, 0 });
    erase_stream_t *s = main_stream(r);
    TRY(synchronize(r));
    while (st == ERASE_OK) {
        erase_reader_batch_t b;
        st = erase_reader_next(r->eval, &b);
        if (st != ERASE_OK || b.end_of_epoch)
            break;
        if (b.size > 0) /* else this rank's share of the last batch is empty */
            st = load_batch(r, &b);
        if (b.size > 0 && st == ERASE_OK && r->pipe)
            st = erase_pipe_predict(r->pipe, &r->batch, has_outputs(r) ? r->outputs : NULL);
        else if (b.size > 0 && st == ERASE_OK)
            st = erase_network_forward_predict(r->net, s, &r->batch);
        else if (st == ERASE_OK && r->shard) { /* sharded tables: every rank takes part in every all-to-all */
            erase_batch_t none = r->batch;
            none.size = 0;
            st = erase_network_forward_predict(r->net, s, &none);
        }
        if (b.size > 0 && st == ERASE_OK && !r->pipe)
            st = read_outputs(r, (int)b.size);
        if (b.size > 0 && st == ERASE_OK && has_outputs(r))
            r->task->add(r->ts, TRAIN_TASK_EVAL, r->outputs, r->width, &b);
        if (r->score && st == ERASE_OK) /* collective: every global batch, an empty share too */
            st = r->score->batch(r->score->ctx, r->outputs, &b);
    }
    if (st == ERASE_OK)
        st = reduce_metrics(r, TRAIN_TASK_EVAL);
    if (st == ERASE_OK) {
        r->evals++;
        r->eval_step = r->step;
        double sec = erase_now_s() - t0;
        r->eval_s += sec;
        if (r->root) {
            printf("%seval   step %lld: ", r->tty ? "\r\033[K" : "", (long long)r->step);
            r->task->eval_print(r->ts, stdout);
            printf(" in %.3f s\n", sec);
            fflush(stdout);
            if (r->metrics) {
                json_line_start(r->metrics, "eval", r->step, r->samples_seen);
                fprintf(r->metrics, ",\"epoch\":%lld", (long long)r->epoch);
                r->task->eval_json(r->ts, r->metrics);
                fprintf(r->metrics, ",\"seconds\":%.6f}\n", sec);
                fflush(r->metrics);
            }
        }
    }
    if (st != ERASE_OK)
        erase_error_trail(__FILE__, __LINE__);
    return st;
}

/* ---- progress ---------------------------------------------------------------- */

static erase_status_t log_progress(run_t *r, int force)
{
    if (r->window_steps == 0 || (!force && r->step % r->o->log_every != 0))
        return ERASE_OK;
    TRY(reduce_metrics(r, TRAIN_TASK_WINDOW));
    if (r->pipe) { /* each stage summed its own blocks' losses (read_losses) and steps */
        _Static_assert(sizeof r->block == 2 * ERASE_MAX_BLOCKS * sizeof(double), "block: two arrays of doubles");
        TRY(erase_allreduce(erase_pp_comm(), r->host, &r->block, &r->block, sizeof r->block / sizeof(double),
                            ERASE_DTYPE_F64, ERASE_REDUCE_SUM));
        TRY(erase_stream_synchronize(r->host));
    }
    train_task_counts_t counts = r->task->window_counts(r->ts);
    /* samples/s: a pipeline's of its first stage (local's last stage
     * scores nothing while it fills after a drain) */
    double n = r->pipe ? (double)r->window_global : (double)counts.samples;
    int all_skipped = r->window_skipped == r->window_steps;
    int64_t from = r->step - r->window_steps;
    double sec = 0;
    for (int64_t i = from; i < r->step; i++)
        sec += r->step_s[i];
    double qps = sec > 0 ? n / sec : 0;
    double elapsed = erase_now_s() - r->t_start;
    int64_t done = r->step - r->first_step;
    double eta = done > 0 ? elapsed / (double)done * (double)(r->total_steps - r->step) : 0;
    erase_optim_clock_t clock;
    if (r->pipe) /* as the step left it: the next may be running (train_loop) */
        clock = erase_pipe_clock(r->pipe);
    else
        TRY(erase_optimizer_read_clock(r->opt, &clock)); /* the step is synchronized */
    float lr = clock.lr;
    if (r->root && !r->o->quiet) {
        /* the task's metrics of the window, e.g. "loss 0.5123, NE 0.9876" */
        char stats[224];
        if (all_skipped)
            snprintf(stats, sizeof stats, "all %lld steps of this window skipped (non-finite gradients)",
                     (long long)r->window_steps);
        else if (r->pipe && counts.samples == 0) /* local's last stage, filling after each drain */
            snprintf(stats, sizeof stats, "no batch scored: the last stage trains the batch of step t-%d and "
                     "filled again after each drain (checkpoint, evaluation)", r->w->pp_size - 1);
        else
            r->task->window_text(r->ts, r->tty ? " " : ",", stats, sizeof stats);
        char units[64];
        units_text(r, qps, units, sizeof units);
        if (r->tty)
            printf("\r\033[Kstep %lld/%lld  %.0f samples/s%s  %s  lr %.3g  ETA %.0f s", (long long)r->step,
                   (long long)r->total_steps, qps, units, stats, lr, eta);
        else
            printf("train  step %lld/%lld epoch %lld: %.0f samples/s%s, %s, lr %.3g, ETA %.0f s\n",
                   (long long)r->step, (long long)r->total_steps, (long long)r->epoch, qps, units, stats, lr, eta);
        fflush(stdout);
    }
    if (r->root && r->metrics) {
        char v[48];
        json_line_start(r->metrics, "train", r->step, r->samples_seen);
        fprintf(r->metrics, ",\"epoch\":%lld,\"window_samples\":%lld,\"nonfinite\":%lld,\"skipped\":%lld,"
                            "\"qps\":%.1f", (long long)r->epoch, (long long)counts.samples,
                (long long)counts.nonfinite, (long long)r->window_skipped, qps);
        if (r->units > 0)
            fprintf(r->metrics, ",\"%s_per_s\":%.1f", r->task->unit, qps * (double)r->units);
        if (r->flops > 0 && r->peak_gflops > 0)
            fprintf(r->metrics, ",\"mfu\":%.4f", mfu(r, qps));
        r->task->window_json(r->ts, r->metrics, all_skipped);
        fprintf(r->metrics, ",\"lr\":%s,\"block_losses\":[", json_number(v, "%.6g", lr));
        for (int b = 0; b < erase_network_blocks(r->net); b++) /* null: not trained in the window */
            fprintf(r->metrics, "%s%s", b ? "," : "",
                    r->block.steps[b] > 0 ? json_number(v, "%.6f", r->block.loss[b] / r->block.steps[b]) : "null");
        fprintf(r->metrics, "]}\n");
        fflush(r->metrics);
    }
    r->task->clear(r->ts, TRAIN_TASK_WINDOW);
    r->window_steps = 0;
    r->window_skipped = 0;
    memset(&r->block, 0, sizeof r->block);
    r->window_global = 0;
    return ERASE_OK;
}

/* ---- trace ------------------------------------------------------------------ */

/* Gather every rank's trace events to rank 0, which writes the JSON file. */
static erase_status_t write_trace(run_t *r, int64_t t0_ns)
{
    size_t cap = (size_t)1 << 18;
    erase_trace_record_t *rec = malloc(cap * sizeof *rec);
    char *text = NULL;
    size_t len = 0;
    FILE *mem = open_memstream(&text, &len);
    if (!rec || !mem)
        return ERASE_ERROR(ERASE_ERR_NOMEM, "trace: no memory");
    size_t n = trace_collect(r, rec, cap);
    const char *names[32];
    int streams = r->pipe ? ERASE_PIPE_STREAMS : erase_sched_streams(r->sched);
    for (int k = 0; k < streams; k++)
        names[k] = r->pipe ? erase_pipe_stream_name(k) : erase_sched_stream_name(r->sched, k);
    erase_trace_write_events(mem, rec, n, r->w->rank, names, streams, t0_ns, r->w->rank == 0);
    fclose(mem);
    erase_trace_overlap_t ov = erase_trace_overlap(rec, n);
    free(rec);
    int ranks = r->w->size;
    int64_t mine = (int64_t)len, *lens = calloc((size_t)ranks, sizeof *lens);
    size_t *counts = calloc((size_t)ranks, sizeof *counts), *displs = calloc((size_t)ranks, sizeof *displs);
    erase_status_t st = erase_allgather(erase_world_comm(), r->host, &mine, lens, 1, ERASE_DTYPE_I64);
    if (st == ERASE_OK)
        st = erase_stream_synchronize(r->host);
    size_t total = 0;
    for (int i = 0; st == ERASE_OK && i < ranks; i++) {
        counts[i] = (size_t)lens[i];
        displs[i] = total;
        total += counts[i];
    }
    char *all = malloc(total + 1);
    if (st == ERASE_OK)
        st = erase_allgatherv(erase_world_comm(), r->host, text, all, counts, displs, ERASE_DTYPE_U8);
    if (st == ERASE_OK)
        st = erase_stream_synchronize(r->host);
    if (st == ERASE_OK && r->root) {
        FILE *f = r->trace;
        r->trace = NULL;
        fputs("[\n", f);
        fwrite(all, 1, total, f);
        fputs("\n]\n", f);
        if (fclose(f) != 0) {
            st = ERASE_ERROR(ERASE_ERR_IO, "--trace %s: cannot write the trace: %s", r->o->trace, strerror(errno));
        } else {
            if (r->pipe)
                printf("%strace  %s: %d ranks, each stage's compute, side and point-to-point streams; the "
                       "bubble is the gap on compute (jobs/trace-svg draws it)\n", r->tty ? "\r\033[K" : "",
                       r->o->trace, ranks);
            else
                printf("%strace  %s: %d ranks, %.0f%% of backward time overlapped a forward on rank 0 "
                       "(jobs/trace-svg draws it)\n", r->tty ? "\r\033[K" : "", r->o->trace, ranks,
                       100 * ov.overlap_fraction);
        }
    }
    free(all);
    free(text);
    free(lens);
    free(counts);
    free(displs);
    return st;
}

/* The last step's per-block mean losses [blocks] on this rank: the
 * network's, or in a pipeline its stage's blocks' (others 0; the log
 * window's sums are added over the pipeline group in log_progress, not
 * every step: a per-step collective would hold every stage at every
 * step's end until the slowest is done, its idle time out of the
 * stream's wall). */
static erase_status_t read_losses(run_t *r, float *losses)
{
    return r->pipe ? erase_pipe_read_losses(r->pipe, losses) : erase_network_read_losses(r->net, losses);
}

/* A step whose gradients were not finite updated nothing (lib/sched);
 * every rank found it alike, so every rank stops or goes on alike. */
static erase_status_t check_nonfinite(run_t *r)
{
    int b = r->pipe ? erase_pipe_nonfinite_block(r->pipe) : erase_sched_nonfinite_block(r->sched);
    if (r->pipe && b >= 0)
        /* a stage checks its own blocks only (paci and local pass no
         * gradient that would carry the NaN to the other stages): they
         * cannot know, and this stage's messages in flight will not
         * complete, so it ends the job now (MPI_Abort) rather than wait
         * for a step collective every step to tell them */
        erase_fatal(__FILE__, __LINE__, "erase-train",
                    ERASE_ERROR(ERASE_ERR_INVALID, "step %lld: non-finite gradient in block %s (stage %d); stopping "
                                "the pipeline before any further update", (long long)r->step,
                                erase_network_block_name(r->net, b), r->w->pp_rank));
    if (b < 0)
        return ERASE_OK;
    float losses[ERASE_MAX_BLOCKS]; /* this rank's (a pipeline's other stages may have found none) */
    TRY(read_losses(r, losses));
    if (!strcmp(r->o->nonfinite, "skip")) {
        r->skipped++;
        r->window_skipped++;
        if (r->root)
            printf("%sstep %lld skipped: non-finite gradient in block %s (its loss %g)\n", r->tty ? "\r\033[K" : "",
                   (long long)r->step, erase_network_block_name(r->net, b), (double)losses[b]);
        return ERASE_OK;
    }
    return ERASE_ERROR(ERASE_ERR_INVALID, "step %lld: non-finite gradient in block %s (its loss on rank %d: %g); "
                       "stopping before any further update (--nonfinite skip would skip such steps)",
                       (long long)r->step, erase_network_block_name(r->net, b), r->w->rank, (double)losses[b]);
}

/* ---- the loop ------------------------------------------------------------------ */

/* The head outputs of step i: each step in flight has its own buffer. */
static float *outputs_of(const run_t *r, int64_t i)
{
    return i % 2 && r->outputs_ahead ? r->outputs_ahead : r->outputs;
}

/* Start --trace's window: forget the warm-up's records and take one
 * origin for every rank. Nothing in flight (may_look_ahead). */
static erase_status_t trace_start(run_t *r)
{
    TRY(synchronize(r));
    erase_trace_record_t scratch[64];
    while (trace_collect(r, scratch, 64) == 64)
        ; /* forget the warm-up's records */
    /* one timeline for every rank: rank 0's time now on the wall clock is
     * the origin (stages reach a step at different times; each rank's own
     * origin put them milliseconds apart) */
    int64_t offset = erase_wall_offset_ns(), origin = erase_now_ns() + offset;
    TRY(erase_broadcast(erase_world_comm(), r->host, &origin, 1, ERASE_DTYPE_I64, 0));
    TRY(erase_stream_synchronize(r->host));
    r->trace_t0 = origin - offset;
    return ERASE_OK;
}

/*
 * Read the next batch and enqueue its step (step r->issued); *ended: the
 * reader's epoch ended instead (r->epoch_end, nothing enqueued). With a
 * step enqueued ahead the batch's host copy is kept (r->held) for the
 * scoring of its outputs, since the reader reuses its memory at its next
 * call, and that call first waits for the copy into the device buffers.
 */
static erase_status_t issue_step(run_t *r, int *ended)
{
    *ended = 0;
    if (r->ahead) /* the last load has read the reader's and the task's host memory */
        TRY(erase_event_synchronize(r->loaded));
    erase_reader_batch_t b;
    TRY(erase_reader_next(r->train, &b));
    if (b.end_of_epoch) {
        r->epoch_end = b.epoch + 1;
        *ended = 1;
        return ERASE_OK;
    }
    if (r->o->trace[0] && r->issued == r->trace_from)
        TRY(trace_start(r));
    train_ckpt_log_samples(r->ckpt, &b);
    in_flight_t *f = &r->in_flight[r->issued % 2];
    f->traffic = r->shard && r->issued >= r->warmup; /* like QPS, after the warm-up */
    if (f->traffic) /* the last step and evaluation have ended: what follows is this step's */
        TRY(erase_embed_shard_traffic(r->shard, &f->bytes0, &f->emb_s0));
    f->issued_s = erase_now_s();
    TRY(load_batch(r, &b));
    if (r->ahead)
        TRY(erase_event_record(r->loaded, main_stream(r)));
    if (r->pipe)
        TRY(erase_pipe_step(r->pipe, &r->batch, has_outputs(r) ? outputs_of(r, r->issued) : NULL));
    else
        TRY(erase_sched_step(r->sched, &r->batch));
    if (r->held) {
        TRY(train_batch_ring_push(r->held, &b));
        b = *train_batch_ring_get(r->held, 0);
    }
    f->b = b;
    r->issued++;
    return ERASE_OK;
}

/*
 * May the host enqueue step r->issued before it finishes step r->step
 * (pipelines but local, r->ahead)? Not when what follows step r->step
 * needs the pipeline quiet: the end, an evaluation, a periodic checkpoint,
 * --trace's window, the end of an epoch; and not when a rank got a
 * signal (train_ckpt_poll: collective, so every rank decides alike).
 */
static erase_status_t may_look_ahead(run_t *r, int *ok)
{
    const train_options_t *o = r->o;
    int64_t done = r->step + 1; /* steps finished once the one in flight is */
    *ok = 0;
    if (!r->ahead || r->issued != done || r->issued >= r->total_steps || r->epoch_end)
        return ERASE_OK;
    if ((o->eval_every > 0 && done % o->eval_every == 0) || train_ckpt_due(r->ckpt, done) ||
        (o->trace[0] && (r->issued == r->trace_from || done == r->trace_to)))
        return ERASE_OK;
    int stop;
    TRY(train_ckpt_poll(r->ckpt, done, &stop));
    *ok = !stop;
    return ERASE_OK;
}

/* Wait for step r->step (the oldest in flight) and do what follows it:
 * its time, scores, losses, progress, evaluation and checkpoint. */
static erase_status_t finish_step(run_t *r)
{
    const train_options_t *o = r->o;
    int64_t t = r->step;
    in_flight_t *f = &r->in_flight[t % 2];
    const erase_reader_batch_t *b = &f->b;
    if (r->pipe)
        TRY(erase_pipe_wait(r->pipe));
    else
        TRY(synchronize(r));
    /* with a step enqueued ahead, a step's time begins when the one before ended */
    double now = erase_now_s();
    r->step_s[t] = now - (f->issued_s > r->done_s ? f->issued_s : r->done_s);
    r->done_s = now;
    if (f->traffic) {
        int64_t bytes1 = 0;
        double emb_s1 = 0;
        TRY(erase_embed_shard_traffic(r->shard, &bytes1, &emb_s1));
        r->emb_traffic.steps++;
        r->emb_traffic.bytes += bytes1 - f->bytes0;
        r->emb_traffic.seconds += emb_s1 - f->emb_s0;
        r->emb_traffic.step_seconds += r->step_s[t];
    }
    r->step++;
    if (r->pipe && r->step == r->warmup) /* its bubble, like QPS, after the warm-up */
        erase_pipe_stats(r->pipe, &r->pipe_warm);
    r->samples_seen += b->global_size;
    r->window_global += b->global_size;
    TRY(check_nonfinite(r));
    if (!r->pipe)
        TRY(read_outputs(r, (int)b->size));
    const erase_reader_batch_t *scored = b; /* the batch the outputs are of */
    if (r->behind) {
        TRY(train_batch_ring_push(r->behind, b));
        scored = erase_pipe_step_samples(r->pipe) ? train_batch_ring_get(r->behind, r->w->pp_size - 1) : NULL;
    }
    if (has_outputs(r) && scored)
        r->task->add(r->ts, TRAIN_TASK_WINDOW, outputs_of(r, t), r->width, scored);
    float losses[ERASE_MAX_BLOCKS];
    TRY(read_losses(r, losses)); /* a pipeline stage's own blocks' (summed over the stages at the log) */
    int blocks = erase_network_blocks(r->net);
    int from = r->pipe ? r->pipe_o.first : 0, to = r->pipe ? r->pipe_o.last : blocks;
    int trained = !r->pipe || erase_pipe_step_samples(r->pipe) > 0; /* local: not a fill step */
    for (int k = 0; k < blocks; k++)
        r->block.loss[k] += losses[k];
    for (int k = from; k < to; k++)
        r->block.steps[k] += trained;
    r->window_steps++;
    if (o->trace[0] && r->step == r->trace_to)
        TRY(write_trace(r, r->trace_t0));
    TRY(log_progress(r, 0));
    if (o->eval_every > 0 && r->step % o->eval_every == 0)
        TRY(evaluate(r));
    /* every N steps and on SIGTERM/SIGUSR1 (all ranks agree): a checkpoint */
    TRY(train_ckpt_after_step(r->ckpt, &(train_ckpt_pos_t){ r->step, r->epoch, r->samples_seen }, &r->stopped));
    return ERASE_OK;
}

/*
 * The training loop. Under a pipeline (but local) the host enqueues step
 * t+1 before it finishes step t (may_look_ahead), so that the stages'
 * streams do not wait for the host's work between steps (the scoring of
 * outputs, the progress line's collectives, reading a batch): the same
 * arithmetic in the same stream order, bitwise the same run.
 */
static erase_status_t train_loop(run_t *r)
{
    const train_options_t *o = r->o;
    int64_t left = r->total_steps - r->first_step;
    r->warmup = r->first_step + (left >= 20 ? 5 : left / 4);
    /* a run shorter than the warm-up and --trace-steps traces what it has */
    r->trace_from = r->warmup;
    r->trace_to = o->trace_steps > r->total_steps - r->warmup ? r->total_steps : r->warmup + o->trace_steps;
    r->issued = r->step;
    r->t_start = erase_now_s();
    while (r->step < r->total_steps) {
        int ended;
        if (r->issued == r->step && r->epoch_end) {
            r->epoch = r->epoch_end;
            r->epoch_end = 0;
            if (o->eval_every == 0)
                TRY(evaluate(r));
            if (o->steps == 0 && r->epoch >= o->epochs)
                break;
            continue;
        }
        if (r->issued == r->step) {
            TRY(issue_step(r, &ended));
            if (ended)
                continue;
        }
        int ahead;
        TRY(may_look_ahead(r, &ahead));
        if (ahead)
            TRY(issue_step(r, &ended)); /* an epoch's end waits until this step is finished */
        TRY(finish_step(r));
        if (r->stopped)
            return log_progress(r, 1);
    }
    if (r->pipe) /* paci: what the epochs' end left in flight */
        TRY(erase_pipe_drain(r->pipe, 1));
    TRY(train_ckpt_final(r->ckpt, &(train_ckpt_pos_t){ r->step, r->epoch, r->samples_seen }));
    TRY(log_progress(r, 1));
    if (r->evals == 0 || r->eval_step != r->step) /* the trained model is always evaluated */
        TRY(evaluate(r));
    return ERASE_OK;
}

static void summary(run_t *r)
{
    const train_options_t *o = r->o;
    int64_t done = r->step - r->first_step; /* steps of this run (after a resume: since it) */
    int64_t warmup = done >= 20 ? 5 : done / 4, n = done - warmup;
    double *qps = malloc(sizeof(double) * (size_t)(n > 0 ? n : 1));
    double global = (double)r->global_batch, total_s = 0;
    for (int64_t i = r->first_step; i < r->step; i++)
        total_s += r->step_s[i];
    for (int64_t i = 0; i < n; i++)
        qps[i] = global / r->step_s[r->first_step + warmup + i];
    double p50 = erase_quantile(qps, (size_t)n, 0.5), p90 = erase_quantile(qps, (size_t)n, 0.9);
    free(qps);
    /* sharded tables: per step after the warm-up, the all-to-alls' bytes, seconds and share of the
     * step's time, each the largest over the ranks (collective) */
    double emb[3] = { 0, 0, 0 };
    if (r->shard && r->emb_traffic.steps > 0) {
        emb[0] = (double)r->emb_traffic.bytes / (double)r->emb_traffic.steps;
        emb[1] = r->emb_traffic.seconds / (double)r->emb_traffic.steps;
        emb[2] = r->emb_traffic.step_seconds > 0 ? r->emb_traffic.seconds / r->emb_traffic.step_seconds : 0;
    }
    if (r->shard && (erase_allreduce(metrics_comm(r), r->host, emb, emb, 3, ERASE_DTYPE_F64, ERASE_REDUCE_MAX) != ERASE_OK ||
                     erase_stream_synchronize(r->host) != ERASE_OK))
        emb[0] = -1;
    double *stages = NULL; /* a pipeline's figures of every rank (collective) */
    if (r->pipe && train_pipeline_gather(r->pipe, &r->pipe_warm, r->w, r->host, &stages) != ERASE_OK && r->root)
        fprintf(stderr, "erase-train: the pipeline's figures: %s\n", erase_error_reason());
    if (!r->root) {
        free(stages);
        return;
    }
    int blocks = erase_network_blocks(r->net), cuts = 0;
    for (int b = 1; b < blocks; b++)
        cuts += erase_network_is_cut(r->net, b);
    double wait = erase_reader_wait_seconds(r->train);
    printf("%s\nerase-train summary\n", r->tty ? "\r\033[K" : "");
    printf("  model      %s, %d blocks, %d cut%s; %d rank%s (%s), global batch %.0f\n",
           erase_model_config_name(&r->cfg), blocks, cuts, cuts == 1 ? "" : "s", r->w->size,
           r->w->size == 1 ? "" : "s", r->pipe ? "pipeline" : "data parallel", global);
    if (r->pipe) {
        if (stages)
            train_pipeline_print(stages, &r->pipe_o, &r->stages, r->w, r->metrics, r->step, r->samples_seen);
        free(stages);
    } else if (!strcmp(o->early_backward, "off"))
        printf("  schedule   early backward off (one stream, backward at step end), %d BLAS thread%s\n",
               erase_device_blas_threads(r->dev), erase_device_blas_threads(r->dev) == 1 ? "" : "s");
    else
        printf("  schedule   early backward %s (reduce %s, update %s, %lld side stream%s), %d BLAS thread%s per stream\n",
               o->early_backward, o->reduce, o->update, (long long)o->side_streams, o->side_streams == 1 ? "" : "s",
               erase_device_blas_threads(r->dev), erase_device_blas_threads(r->dev) == 1 ? "" : "s");
    /* in samples: after a resume with another global batch, steps differ in size */
    double epochs = (double)r->samples_seen /
                    (double)(erase_reader_info(r->train).steps_per_epoch * global);
    printf("  steps      %lld (%.2f epochs), %.1f s of steps\n", (long long)r->step, epochs, total_s);
    printf("  QPS        p50 %.0f  p90 %.0f samples/s (all ranks, after %lld warm-up steps)\n", p50, p90,
           (long long)warmup);
    if (r->units > 0)
        printf("  %-10s p50 %.0f  p90 %.0f %s/s\n", r->task->unit, p50 * (double)r->units, p90 * (double)r->units,
               r->task->unit);
    if (r->flops > 0 && r->peak_gflops > 0)
        printf("  MFU        p50 %.1f%%  p90 %.1f%% (%.3g GFLOP per sample over %d x %.1f GFLOP/s, the SGEMM peak "
               "rank 0 measured at start)\n", 100 * mfu(r, p50), 100 * mfu(r, p90), r->flops / 1e9, r->w->size,
               r->peak_gflops);
    printf("  eval       ");
    r->task->eval_print(r->ts, stdout);
    printf("\n  eval time  %.2f s in %lld evaluation%s (not in the steps' time)\n", r->eval_s, (long long)r->evals,
           r->evals == 1 ? "" : "s");
    printf("  data wait  %.2f s (%.1f%% of training time)\n", wait, total_s > 0 ? 100 * wait / total_s : 0);
    char emb_kind[64] = "replicated";
    if (r->shard) {
        train_embeddings_kind_text(&r->emb, emb_kind, sizeof emb_kind);
        if (emb[0] >= 0 && r->emb_traffic.steps > 0)
            printf("  embed      %s: all-to-all %.3g MB sent per step per rank (at most %.3g MB), %.2f ms per step in "
                   "all-to-alls, %.1f%% of the step (after %lld warm-up steps; each the largest over the ranks)\n",
                   emb_kind, emb[0] / 1e6, (double)erase_embed_shard_bytes(r->shard) / 1e6, 1e3 * emb[1],
                   100 * emb[2], (long long)warmup);
        else if (emb[0] >= 0)
            printf("  embed      %s: no training step after the warm-up to measure the all-to-alls on\n", emb_kind);
        else
            printf("  embed      %s: the all-to-alls' traffic: %s\n", emb_kind, erase_error_reason());
    }
    if (r->skipped)
        printf("  skipped    %lld step%s with non-finite gradients\n", (long long)r->skipped, r->skipped == 1 ? "" : "s");
    int ckpts;
    double ckpt_s, ckpt_bytes;
    train_ckpt_stats(r->ckpt, &ckpts, &ckpt_s, &ckpt_bytes);
    if (r->first_step > 0)
        printf("  resumed    at step %lld\n", (long long)r->first_step);
    if (ckpts)
        printf("  checkpoint %d written, %.3f s each (%.0f MB/s), %.1f%% of training time; last %s\n", ckpts,
               ckpt_s / ckpts, ckpt_s > 0 ? ckpt_bytes / ckpt_s / 1e6 : 0, total_s > 0 ? 100 * ckpt_s / total_s : 0,
               train_ckpt_last_path(r->ckpt));
    if (r->metrics) {
        json_line_start(r->metrics, "summary", r->step, r->samples_seen);
        fprintf(r->metrics, ",\"qps_p50\":%.1f,\"qps_p90\":%.1f", p50, p90);
        if (r->units > 0)
            fprintf(r->metrics, ",\"%s_per_s_p50\":%.1f,\"%s_per_s_p90\":%.1f", r->task->unit,
                    p50 * (double)r->units, r->task->unit, p90 * (double)r->units);
        if (r->flops > 0 && r->peak_gflops > 0)
            fprintf(r->metrics, ",\"mfu_p50\":%.4f,\"mfu_p90\":%.4f,\"peak_gflops\":%.1f", mfu(r, p50),
                    mfu(r, p90), r->peak_gflops);
        r->task->eval_json(r->ts, r->metrics);
        fprintf(r->metrics, ",\"embeddings\":\"%s\"", o->embeddings);
        if (r->shard && emb[0] >= 0 && r->emb_traffic.steps > 0)
            fprintf(r->metrics, ",\"alltoall_bytes_per_step\":%.0f,\"alltoall_bytes_per_step_max\":%lld,"
                                "\"alltoall_ms_per_step\":%.4f,\"alltoall_step_fraction\":%.4f", emb[0],
                    (long long)erase_embed_shard_bytes(r->shard), 1e3 * emb[1], emb[2]);
        fprintf(r->metrics, ",\"step_seconds\":%.6f,\"eval_seconds\":%.6f,\"checkpoint_seconds\":%.6f,"
                            "\"skipped\":%lld,\"ranks\":%d,\"mode\":\"%s\"}\n",
                total_s, r->eval_s, ckpt_s, (long long)r->skipped, r->w->size, o->early_backward);
    }
}

/*
 * After a resume with --epochs: count the steps left from the data cursor
 * in this run's global batch, which differs from the checkpoint's when the
 * number of data-parallel ranks changed (the step number continues; each
 * step now takes this run's global batch), so the run ends at the end of
 * its last epoch and the learning-rate schedule spans the new total.
 * Unchanged when the global batch is the checkpoint's.
 */
static erase_status_t resume_total_steps(run_t *r)
{
    const train_options_t *o = r->o;
    erase_reader_info_t info = erase_reader_info(r->train);
    erase_reader_cursor_t c = erase_reader_cursor(r->train);
    int64_t global = r->global_batch;
    int64_t left = 0;
    if (c.epoch < o->epochs) {
        int64_t rest = info.samples - c.samples;
        left = (rest > 0 ? rest / global : 0) + (o->epochs - 1 - c.epoch) * info.steps_per_epoch;
    }
    int64_t total = r->step + left;
    if (total == r->total_steps)
        return ERASE_OK;
    TRY(alloc_step_times(r->total_steps, total, &r->step_s));
    r->total_steps = total;
    erase_optimizer_set_total_steps(r->opt, optimizer_steps(o, total));
    return ERASE_OK;
}

/* --device: the CPU (its cores shared by the ranks of a host), or the GPU
 * numbered by the local rank. A failure names the option. */
static erase_status_t open_device(run_t *r)
{
    const train_options_t *o = r->o;
    erase_device_options_t dopt = erase_device_options_default();
    dopt.cores = erase_world_cores_per_rank(r->w); /* ranks on one host share its cores */
    dopt.ordinal = r->w->local_rank;
    if (erase_gemm_precision_parse(o->gemm, &dopt.gemm) != 0)
        return ERASE_ERROR(ERASE_ERR_INVALID, "--gemm %s: expected fp32, tf32 or bf16", o->gemm);
    if (!strcmp(o->device, "cuda"))
        dopt.kind = ERASE_DEVICE_CUDA;
    else if (strcmp(o->device, "cpu"))
        return ERASE_ERROR(ERASE_ERR_INVALID, "--device %s: expected cpu or cuda", o->device);
    erase_status_t st = erase_device_open(&dopt, &r->dev);
    if (st == ERASE_OK)
        return ERASE_OK;
    char why[2048], gpu[48] = "";
    snprintf(why, sizeof why, "%s", erase_error_reason()); /* the message is rewritten below */
    if (dopt.kind == ERASE_DEVICE_CUDA)
        snprintf(gpu, sizeof gpu, " (GPU %d of this host)", dopt.ordinal);
    return ERASE_ERROR(st, "--device %s%s%s%s: %s", o->device, dopt.gemm != ERASE_GEMM_FP32 ? " --gemm " : "",
                       dopt.gemm != ERASE_GEMM_FP32 ? o->gemm : "", gpu, why);
}

/*
 * The stream of host-side collectives (metrics, checkpoint agreement) works
 * on host buffers, so it is a CPU stream (MPI): the compute device's own on
 * the CPU backend; on a GPU, a stream of a one-core CPU device opened for
 * it, while the GPU's streams get NCCL communicators
 * (erase_world_attach_device) for the gradient collectives of the step.
 */
static erase_status_t open_host_stream(run_t *r)
{
    erase_device_t *hd = r->dev;
    if (!erase_device_host_accessible(r->dev)) {
        ERASE_CHECK(erase_world_attach_device(r->dev));
        erase_device_options_t hopt = erase_device_options_default();
        hopt.cores = 1;
        ERASE_CHECK(erase_device_open(&hopt, &r->host_dev));
        hd = r->host_dev;
    }
    ERASE_CHECK(erase_stream_create(hd, &r->host));
    return ERASE_OK;
}

/* The first of the launchers' variables `vars` that is set, as a number;
 * -1 when none is. */
static int launcher_value(const char *const *vars, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        const char *v = getenv(vars[i]);
        if (v && *v)
            return atoi(v);
    }
    return -1;
}

int train_launcher_rank(void)
{
    static const char *const vars[] = { "OMPI_COMM_WORLD_RANK", "PMIX_RANK", "PMI_RANK", "SLURM_PROCID" };
    return launcher_value(vars, sizeof vars / sizeof vars[0]);
}

int train_launcher_size(void)
{
    static const char *const vars[] = { "OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "SLURM_NTASKS" };
    return launcher_value(vars, sizeof vars / sizeof vars[0]);
}

/* A failure of setup_model, where every rank reads the same model file and
 * options: when every rank failed alike, *alike = 2 (a usage error) or 1 (a
 * bad model file) and the job ends cleanly; when only some did, the error
 * takes the fatal path. */
static erase_status_t agree_on_model(const run_t *r, erase_status_t st, int usage, int *alike)
{
    int all, any;
    ERASE_CHECK(erase_world_agree(st != ERASE_OK, &all, &any));
    if (any && all)
        *alike = usage ? 2 : 1;
    else if (any && st == ERASE_OK)
        return ERASE_ERROR(ERASE_ERR_STATE, "another rank could not set up the model (--model %s)", r->o->model);
    return st;
}

/* The short summary of an evaluation-only run (rank 0). */
static void summary_eval_only(const run_t *r, double seconds)
{
    if (!r->root)
        return;
    int64_t n = erase_reader_info(r->eval).samples;
    printf("erase-%s summary (evaluation only: no training steps)\n", r->score ? "score" : "train");
    printf("  model      %s, %d blocks; %d rank%s (data parallel), global batch %lld\n",
           erase_model_config_name(&r->cfg), erase_network_blocks(r->net), r->w->size, r->w->size == 1 ? "" : "s",
           (long long)r->global_batch);
    printf("  checkpoint %s (step %lld)\n", r->ckpt_path, (long long)r->ckpt_step);
    printf("  eval       ");
    r->task->eval_print(r->ts, stdout);
    printf("\n  eval time  %.2f s (%.0f samples/s, all ranks)\n", seconds, seconds > 0 ? (double)n / seconds : 0);
    fflush(stdout);
}

/* Evaluation only: one evaluation pass (with erase-score's hooks around
 * it), reported at the checkpoint's step. */
static erase_status_t eval_only(run_t *r)
{
    r->step = r->ckpt_step;
    if (r->score) {
        train_score_env_t env = { .w = r->w, .host = r->host, .task = r->task, .width = r->width,
                                  .samples = erase_reader_info(r->eval).samples,
                                  .ckpt_path = r->ckpt_path, .ckpt_step = r->ckpt_step };
        TRY(r->score->begin(r->score->ctx, &env));
    }
    TRY(evaluate(r));
    summary_eval_only(r, r->eval_s);
    if (r->score)
        TRY(r->score->end(r->score->ctx));
    return ERASE_OK;
}

erase_status_t train_run(const train_options_t *o, const erase_world_t *w, int *alike)
{
    return train_score(o, NULL, w, alike);
}

erase_status_t train_score(const train_options_t *given, const train_score_hooks_t *hooks, const erase_world_t *w,
                           int *alike)
{
    *alike = 0;
    int usage = 0;
    /* evaluation only takes the parameters alone (--resume loads as
     * --init-from does) and writes no checkpoint: the directory is left
     * as it is */
    train_options_t eo;
    const train_options_t *o = given;
    if (given->eval_only) {
        eo = *given;
        if (given->resume[0])
            snprintf(eo.init_from, sizeof eo.init_from, "%s",
                     strcmp(given->resume, "auto") ? given->resume : given->checkpoint_dir);
        eo.resume[0] = 0;
        eo.checkpoint_dir[0] = 0;
        o = &eo;
    }
    run_t r = { .o = o, .w = w, .root = w->rank == 0, .score = hooks, .eval_fraction = o->eval_fraction };
    /* a progress line redrawn in place only on a real terminal: launchers
     * (mpirun, srun) hand ranks a pseudo-terminal even when their own
     * output goes to a file or pipe */
    r.tty = r.root && isatty(STDOUT_FILENO) && train_launcher_rank() < 0 && !o->quiet;
    erase_status_t st = setup_model(&r, &usage);
    if (st == ERASE_OK && (st = batch_sizes(&r)) != ERASE_OK)
        usage = 1; /* the batch against the number of ranks: alike on every rank */
    st = agree_on_model(&r, st, usage, alike);
    if (st == ERASE_OK)
        st = open_device(&r);
    if (st == ERASE_OK)
        st = open_host_stream(&r);
    if (st == ERASE_OK)
        st = open_readers(&r);
    if (st == ERASE_OK)
        st = setup_training(&r);
    if (st == ERASE_OK) /* ERASE_VERBOSE >= 1: one line per rank, with the scheduler's BLAS threads per stream */
        erase_world_log_device(r.dev);
    if (st == ERASE_OK && r.root) {
        char dev[512];
        erase_device_describe(r.dev, dev, sizeof dev);
        erase_reader_info_t ti = erase_reader_info(r.train), ei = erase_reader_info(r.eval);
        char data[sizeof o->train + 32];
        inputs_text(o->train[0] ? o->train : o->eval, data, sizeof data);
        char where[sizeof w->host + 48];
        if (w->hosts > 1) /* the host of rank 0 alone read as a one-host run */
            snprintf(where, sizeof where, "%d hosts (rank 0 on %s)", w->hosts, w->host);
        else
            snprintf(where, sizeof where, "%s", w->host);
        printf("erase-%s: %d rank%s on %s\n  device %s\n", hooks ? "score" : "train", w->size, w->size == 1 ? "" : "s",
               where, dev);
        if (o->eval_only)
            printf("  data   %s: %lld eval samples%s\n", o->eval[0] ? o->eval : data, (long long)ei.samples,
                   o->eval[0] ? "" : " (held out of --train)");
        else
            printf("  data   %s: %lld train samples (%lld steps/epoch), %lld eval samples\n", data,
                   (long long)ti.samples, (long long)ti.steps_per_epoch, (long long)ei.samples);
        if (r.shard)
            train_embeddings_print(&r.emb, r.shard, erase_comm_size(erase_emb_comm()));
        if (r.pipe) {
            char stages[256];
            train_pipeline_stages_text(&r.stages, stages, sizeof stages);
            printf("  stages %s, %d stage%s x %d dp: blocks %s", pipe_kind_name(r.pipe_o.kind), r.stages.P,
                   r.stages.P == 1 ? "" : "s", w->dp_size, stages);
            if (r.stages.measured == 2)
                printf(" (auto: the resumed checkpoint's)");
            else if (r.stages.measured) {
                printf(" (auto, forward + backward ms per micro-batch of each block:");
                for (int b = 0; b < erase_network_blocks(r.net); b++)
                    printf(" %.3g", r.stages.block_ms[b]);
                printf(")");
            }
            printf("\n");
        }
        if (r.peak_gflops > 0)
            printf("  peak   %.1f GFLOP/s per rank (SGEMM 1024^3 on the main stream, median of 5): the basis of MFU\n",
                   r.peak_gflops);
        fflush(stdout);
    }
    /* checkpoints: --resume / --init-from load here, before the first step */
    train_ckpt_env_t ce = { .o = o, .w = w, .host = r.host, .cfg = &r.cfg, .net = r.net, .opt = r.opt,
                            .train = r.train, .global_batch = r.global_batch, .tty = r.tty,
                            .stage_first = r.pipe ? r.stages.first : NULL, .pipe = r.pipe,
                            .total_steps = &r.total_steps };
    train_ckpt_pos_t pos;
    int resumed = 0;
    if (st == ERASE_OK)
        st = train_ckpt_create(&ce, &r.ckpt);
    if (st == ERASE_OK)
        st = train_ckpt_restore(r.ckpt, &pos, &resumed);
    if (st == ERASE_OK && resumed) {
        r.step = r.first_step = pos.step;
        r.epoch = pos.epoch;
        r.samples_seen = pos.samples_seen;
        if (o->steps == 0)
            st = resume_total_steps(&r);
        /* the pipeline's segment: the steps left (nothing is in flight yet),
         * as after the drain of the checkpoint's run */
        if (st == ERASE_OK && r.pipe)
            st = erase_pipe_drain(r.pipe, r.total_steps - r.step > 0 ? r.total_steps - r.step : 1);
    }
    /* a resumed run continues its metrics file */
    if (st == ERASE_OK && r.root && o->metrics[0] && !(r.metrics = fopen(o->metrics, resumed ? "a" : "w")))
        st = ERASE_ERROR(ERASE_ERR_IO, "--metrics %s: cannot write: %s", o->metrics, strerror(errno));
    if (st == ERASE_OK && r.root && o->trace[0] && !(r.trace = fopen(o->trace, "w")))
        st = ERASE_ERROR(ERASE_ERR_IO, "--trace %s: cannot write: %s", o->trace, strerror(errno));
    if (st == ERASE_OK)
        train_ckpt_set_metrics(r.ckpt, r.metrics);
    if (st == ERASE_OK && o->eval_only)
        st = eval_only(&r);
    else if (st == ERASE_OK)
        st = train_loop(&r);
    if (st == ERASE_OK && !r.stopped && !o->eval_only)
        summary(&r);
    if (st == ERASE_OK && r.stopped && r.root) {
        printf("%serase-train: stopped by %s after step %lld; checkpoint %s (continue with --resume auto)\n",
               r.tty ? "\r\033[K" : "", train_ckpt_signal_name(r.stopped), (long long)r.step,
               train_ckpt_last_path(r.ckpt));
        fflush(stdout);
    }
    if (st != ERASE_OK)
        erase_error_trail(__FILE__, __LINE__);
    else if (r.sched || r.pipe)
        st = synchronize(&r);
    if (r.metrics)
        fclose(r.metrics);
    if (r.trace) { /* stopped before the trace was written: no empty file left */
        fclose(r.trace);
        remove(o->trace);
    }
    train_ckpt_destroy(r.ckpt);
    erase_sched_destroy(r.sched);
    erase_embed_shard_destroy(r.shard);
    erase_pipe_destroy(r.pipe);
    train_batch_ring_destroy(r.behind);
    train_batch_ring_destroy(r.held);
    erase_event_destroy(r.loaded);
    erase_optimizer_destroy(r.opt);
    if (r.task && r.task->destroy)
        r.task->destroy(r.ts);
    erase_network_destroy(r.net);
    erase_reader_close(r.train);
    erase_reader_close(r.eval);
    free(r.outputs);
    free(r.outputs_ahead);
    free(r.step_s);
    erase_stream_destroy(r.host);
    erase_device_close(r.host_dev);
    erase_device_close(r.dev);
    return st;
}
