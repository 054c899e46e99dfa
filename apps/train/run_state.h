/*
 * The state of one erase-train run (run_t) and the functions its files
 * share. train_run and train_score (apps/train/run.h) are the entry
 * points, in run.c with the step's executor; setup.c builds the run from
 * the options; evaluate.c copies batches in and outputs out and runs the
 * evaluation pass; loop.c is the training loop; report.c prints the
 * progress line, writes the trace and prints the summary. Private to
 * apps/train.
 */
#ifndef ERASE_APPS_TRAIN_RUN_STATE_H
#define ERASE_APPS_TRAIN_RUN_STATE_H

#include "apps/train/batch_ring.h"
#include "apps/train/checkpoint.h"
#include "apps/train/checkpoint_model.h"
#include "io/tok_data_tokenizer.h"
#include "io/vocab.h"
#include "apps/train/embeddings.h"
#include "apps/train/options.h"
#include "apps/train/pipeline.h"
#include "apps/train/run.h"
#include "apps/train/task.h"
#include "lib/sched/pipe.h"
#include "lib/sched/sched.h"
#include "lib/sched/trace.h"

#include <stdint.h>
#include <stdio.h>

/* A step enqueued and not yet finished: what its finish needs. */
typedef struct {
    erase_reader_batch_t b;          /* its batch (the reader's memory, or r->held's copy) */
    double issued_s;                 /* when the host began to enqueue it */
    int traffic;                     /* sharded tables: its all-to-alls are counted */
    int64_t bytes0;
    double emb_s0;
} in_flight_t;

/* One run of erase-train or erase-score on this rank, from set-up to its
 * end (train_score owns it and frees what it holds). */
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
    int64_t global_batch;            /* samples per step over all ranks (run_batch_sizes) */
    int64_t rank_batch;              /* the most samples a rank's share of a step has: ceil(G / D) */
    erase_batch_t batch;             /* the task's fixed device buffers of one rank's batch (the
                                      * reader's batches are in pinned staging memory: run_open_readers) */
    float *outputs;                  /* host copy of the last block's head output [rank_batch, width] */
    /* steps in flight (run_train_loop): under a pipeline but local the host
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
    FILE *metrics;                   /* --metrics on rank 0; NULL once a write failed (run_metrics_written) */
    long metrics_whole;              /* its bytes up to the last record written whole */
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
    int64_t progress_lines;          /* progress logs (lines, metrics train lines) of this run so far */
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
    char *ckpt_tokenizer;            /* its lm data's tokenizer file text (malloc), NULL when none */
    char ckpt_data_vocab[ERASE_CKPT_DATA_VOCAB_SIZE]; /* its meta data_vocab; "": unknown */
    /* ctr and dcn: the data's vocabulary (apps/train/ctr_vocab.h), read
     * once; data_vocab: its digest, "none" (hashed ids) or "" (unread) */
    erase_vocab_tag_t data_tag;
    int data_tag_read;               /* 1: data_tag holds every shard's tag; -1: unreadable; 0: not read */
    char data_tag_why[1024];         /* else why the shards could not be read */
    char data_vocab[ERASE_CKPT_DATA_VOCAB_SIZE];
    erase_tok_data_tokenizer_t tokenizer; /* lm: the training data's tokenizer (io/tok_data_tokenizer.h) */
    double eval_fraction;            /* of --train held out (--eval-only: the checkpoint's run's) */
    const train_score_hooks_t *score; /* erase-score's, or NULL */
    /* --resume / --init-from: the checkpoint's model read before set-up
     * (apps/train/checkpoint_model.h); NULL or empty: none */
    const train_ckpt_origin_t *origin;
} run_t;

#define TRY(call) ERASE_CHECK(call)

/* ---- the step's executor: the scheduler or the pipeline stage (run.c) ---- */

/* The stream the step computes on: the scheduler's main stream, or the
 * pipeline stage's compute stream. */
erase_stream_t *run_main_stream(const run_t *r);

/* Wait for everything the step's executor enqueued (every step in
 * flight, under a pipeline); its first failure. */
erase_status_t run_synchronize(run_t *r);

/* The step's marker records, renumbered to its executor's streams. */
size_t run_trace_collect(run_t *r, erase_trace_record_t *out, size_t max);

/* After a record of --metrics (rank 0; nothing when there is no file): a
 * write that failed (a full disk) is said once in a `warn` line, the file
 * is cut back to its last whole record and closed, and no more records are
 * written; training goes on. `closing`: the run's end (the file is closed
 * here either way). */
void run_metrics_written(run_t *r, int closing);

/* The last block's head output is this rank's (the last stage's, in a pipeline). */
int run_has_outputs(const run_t *r);

/* Sums of the task's metrics over the ranks that have outputs: the dp
 * group, or in a pipeline the world (the other stages add zeros). */
erase_comm_t *run_metrics_comm(const run_t *r);

/* ---- set-up from the options (setup.c) --------------------------------- */

/* The model: its file (or reference sizes) and --cuts, or the
 * checkpoint's with --eval-only, and with --resume / --init-from when
 * r->origin holds it (a given --model or --cuts must then be the same
 * model). A setting that cannot be used with the model sets *usage: every
 * rank finds it alike, before anything is opened. */
erase_status_t run_setup_model(run_t *r, int *usage);

/* The global batch and the rank's share (batch_shares); a pipeline's
 * micro-batches hold at least one sample of the smallest share. */
erase_status_t run_batch_sizes(run_t *r);

/* How messages name the data: "--train", "--eval" (eval nonzero), or
 * erase-score's positional "DATA". */
const char *run_data_option(const run_t *r, int eval);

/* The inputs of --train or --eval: `text` ("a,b,c") split at commas into
 * `buf` [size]; items [max] point into it; *n inputs. An empty item is an
 * error naming the option (`opt`). */
#define MAX_INPUTS 512 /* a 1023-character list holds at most 512 names */
erase_status_t split_inputs(const char *opt, const char *text, char *buf, size_t size, const char **items,
                            int *n);

/* The training and evaluation readers of the task's row format (their
 * batches in staging memory), the data checked against the model. */
erase_status_t run_open_readers(run_t *r);

/* The total steps, the network (at the run's batch), the optimizer and the
 * step's executor (--schedule, --early-backward, --pp), the task's state,
 * the output buffers, the step times and MFU's basis. A bad option is an
 * error naming it. */
erase_status_t run_setup_training(run_t *r);

/*
 * After a resume with --epochs: count the steps left from the data cursor
 * in this run's global batch, which differs from the checkpoint's when the
 * number of data-parallel ranks changed (the step number continues; each
 * step now takes this run's global batch), so the run ends at the end of
 * its last epoch and the learning-rate schedule spans the new total.
 * Unchanged when the global batch is the checkpoint's.
 */
erase_status_t run_resume_total_steps(run_t *r);

/* --device: the CPU (its cores shared by the ranks of a host), or the GPU
 * numbered by the local rank. A failure names the option. */
erase_status_t run_open_device(run_t *r);

/*
 * The stream of host-side collectives (metrics, checkpoint agreement) works
 * on host buffers, so it is a CPU stream (MPI): the compute device's own on
 * the CPU backend; on a GPU, a stream of a one-core CPU device opened for
 * it, while the GPU's streams get NCCL communicators
 * (erase_world_attach_device) for the gradient collectives of the step.
 */
erase_status_t run_open_host_stream(run_t *r);

/*
 * Every rank's status `st` of one set-up phase, agreed on before the phase
 * that follows (collective: every rank calls it, failed or not, and leaves
 * with ERASE_OK on every rank or a failure on every rank). When every rank
 * failed, *alike = 2 (usage set: a setting the user gave cannot be used,
 * e.g. a missing --train, a --gemm the device lacks) or 1, and the job ends
 * cleanly with rank 0's one line; so too when rank 0 alone failed with a
 * usage error (its own files: --metrics, --trace), the other ranks then
 * returning ERASE_ERR_INVALID "rank 0 could not WHAT". When only other
 * ranks failed, those that did not return ERASE_ERR_STATE "another rank
 * could not WHAT" (`what`: e.g. "open the device (--device cuda)") and the
 * error takes the fatal path. *alike is left as it was otherwise.
 */
erase_status_t run_agree_setup(const run_t *r, erase_status_t st, int usage, const char *what, int *alike);

/* A failure of run_setup_model, where every rank reads the same model file and
 * options: run_agree_setup's "set up the model (--model M)". */
erase_status_t run_agree_on_model(const run_t *r, erase_status_t st, int usage, int *alike);

/* Rank 0's output files, --metrics and --trace, can be written (each is
 * opened for appending, and removed again when this made it), so that a
 * path that cannot be is a usage error before the first step. Other ranks:
 * ERASE_OK. Errors: ERASE_ERR_IO "--metrics PATH: cannot write: REASON". */
erase_status_t run_check_outputs(const run_t *r);

/* ---- batches, outputs, metrics and the evaluation pass (evaluate.c) ---- */

/* Copy this rank's batch from the reader's staging memory into the task's
 * fixed device buffers, on the main stream before the step that reads
 * them. The reader reuses that memory at its next call: every caller
 * synchronizes the main stream (the step, or run_read_outputs) before asking
 * for the next batch, so the copy has run by then. */
erase_status_t run_load_batch(run_t *r, const erase_reader_batch_t *b);

/* Host copy of the last block's head output [n, width] (after the stream
 * finished): of the training step just finished when `step` (the
 * scheduler's: with --accumulate gathered over its micro-steps), else of
 * the network's last forward (evaluation). */
erase_status_t run_read_outputs(run_t *r, int n, int step);

/* Sum the task's metric words of `part` over the data-parallel ranks, in
 * place, and summarize them. */
erase_status_t run_reduce_metrics(run_t *r, train_task_part_t part);

/*
 * One evaluation pass over the eval reader with the network as it is (it
 * needs nothing of training: an evaluation-only run can call it): the
 * task's metrics summed over the ranks, the eval line and metrics-file line
 * from rank 0. Collective.
 */
erase_status_t run_evaluate(run_t *r);

/* ---- the training loop (loop.c) ---------------------------------------- */

/*
 * The training loop. Under a pipeline (but local) the host enqueues step
 * t+1 before it finishes step t (may_look_ahead), so that the stages'
 * streams do not wait for the host's work between steps (the scoring of
 * outputs, the progress line's collectives, reading a batch): the same
 * arithmetic in the same stream order, bitwise the same run.
 */
erase_status_t run_train_loop(run_t *r);

/* ---- start-up lines, progress line, trace and summary (report.c) -------- */

/* Rank 0's start-up lines: the ranks and hosts, the device, the data, the
 * sharded tables, the pipeline's stages and MFU's basis. */
void run_print_start(const run_t *r);

/* Every --log-every steps (force: now, if the window has steps), and once
 * about 10 s after the first step when no line came yet (not --quiet;
 * ERASE_DEBUG_FIRST_LOG_SECONDS sets the 10): the window's metrics summed
 * over the ranks, the progress line (rank 0) and the metrics file's train
 * line; the window is cleared. Collective. */
erase_status_t run_log_progress(run_t *r, int force);

/* Gather every rank's trace events to rank 0, which writes the JSON file. */
erase_status_t run_write_trace(run_t *r, int64_t t0_ns);

/* The end-of-run summary (rank 0 prints; the pipeline's and sharded
 * tables' figures are gathered from every rank first: collective) and
 * the metrics file's summary line. */
void run_summary(run_t *r);

/* The short summary of an evaluation-only run (rank 0). */
void run_summary_eval_only(const run_t *r, double seconds);

#endif
