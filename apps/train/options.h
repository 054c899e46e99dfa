/*
 * erase-train's options: one table gives every option's name, type,
 * default and help; the command line (--name value) and a run file
 * (--config FILE: libconfig, `name = value;` with '-' written '_') set
 * them, the command line overriding the run file. --train and --eval take
 * a comma-separated list; given again on the command line, the value is
 * appended to it (the command line's list replaces the run file's as a
 * whole). --batch and --global-batch exclude each other (both in the run
 * file, or both on the command line, is an error; one on the command line
 * wins over the other in the run file). A relative model path
 * in a run file is taken from the run file's folder.
 */
#ifndef ERASE_APPS_TRAIN_OPTIONS_H
#define ERASE_APPS_TRAIN_OPTIONS_H

#include <stdint.h>
#include <stdio.h>

#include "lib/core/status.h"

typedef struct {
    char config[1024];          /* run file */
    char model[1024];           /* model file, or "ctr" / "mlp" / "gpt" (reference sizes) */
    char train[1024];           /* training data: shard directories or files, comma-separated */
    char eval[1024];            /* evaluation data (the same); empty: hold out --eval-fraction of --train */
    double eval_fraction;
    char early_backward[16];    /* off | blocking | async | graph */
    char reduce[8];             /* early | end */
    char update[8];             /* early | end */
    int64_t side_streams;
    int64_t blas_threads;       /* CPU: BLAS threads per stream; 0: cores / streams computing at once */
    char cuts[256];             /* "" (the model file's), all, none, or a list "1,3" */
    /* pipelines (docs/pipelines.md; apps/train/pipeline.h) */
    int64_t pp;                 /* pipeline stages P (world size = dp x P) */
    char schedule[8];           /* auto | none | gpipe | 1f1b | paci | local */
    int64_t micro_batches;      /* M per global batch; 0: P */
    int64_t accumulate;         /* paci: backwards per stage update; 0: M */
    char stages[256];           /* even | auto | first blocks "0,3,5" */
    int64_t batch;              /* samples per rank per step (when global_batch is 0) */
    int64_t global_batch;       /* samples per step over all ranks; 0: batch x ranks */
    int64_t epochs;
    int64_t steps;              /* 0: epochs decide */
    char optimizer[16];         /* adamw | sgd | muon */
    double lr;
    double momentum;
    double beta1, beta2, eps;   /* adamw (and muon's AdamW groups) */
    double muon_momentum;       /* muon */
    int64_t muon_momentum_warmup; /* muon: steps of the momentum warm-up from 0.85 (0: none) */
    double embedding_matrix_lr, unembedding_lr, vector_lr; /* muon: its AdamW groups' rates */
    double weight_decay;
    double grad_clip;           /* max norm of each sub-graph's dense gradient; 0: off */
    char embedding_optimizer[24]; /* rowwise_adagrad | sgd */
    char embeddings[16];        /* replicated | table (row | auto: refused, not built yet) */
    double embedding_lr;
    int64_t warmup_steps;
    char lr_decay[16];          /* constant | cosine | wsd */
    double min_lr;              /* cosine: the rate at the last step */
    double warmdown_fraction;   /* wsd: share of the steps in the final linear warm-down */
    double final_lr_fraction;   /* wsd: the rate at the end of the warm-down / lr */
    int64_t eval_every;         /* steps; 0: at the end of every epoch */
    int64_t log_every;          /* steps between progress lines */
    char metrics[1024];         /* JSON-lines metrics file */
    char trace[1024];           /* Chrome trace of the first traced steps */
    int64_t trace_steps;
    char checkpoint_dir[1024];  /* "" : no checkpoints */
    int64_t checkpoint_every;   /* steps; 0: at the end and on signals only */
    int64_t keep_checkpoints;   /* K newest kept */
    char checkpoint_failure[16]; /* stop | continue: when a checkpoint cannot be written */
    char resume[1024];          /* "", auto, or a checkpoint file (or directory) */
    char init_from[1024];       /* warm start: a checkpoint file (or directory) */
    int init_from_optimizer;    /* with init_from: also the optimizer state */
    char init_format[16];       /* init_from FILE.safetensors: its names (apps/export_names.h); "": its metadata's */
    int eval_only;              /* evaluate the checkpoint of init_from / resume, no training */
    char device[8];             /* cpu | cuda */
    char gemm[8];               /* fp32 | tf32 | bf16 (erase_gemm_precision_t) */
    int64_t seed;
    int shuffle;
    int64_t shuffle_pool;       /* blocks whose rows are shuffled together (erase_reader_options_t.pool_blocks) */
    char nonfinite[8];          /* stop | skip: a step with a NaN or infinite gradient */
    int check_collectives;
    double watchdog;            /* seconds */
    int quiet;
    /* given[i]: option i of the table set by the run file (1) or the
     * command line (2) (train_options_given), not by its default (0) */
    unsigned char given[96];
    /* the run file's options that yielded to the command line's --optimizer
     * or --lr-decay ("--vector-lr (only with --optimizer muon; the command
     * line's is adamw), ..."), or "" */
    char yielded[1024];
} train_options_t;

/* Defaults of every option. */
void train_options_default(train_options_t *o);

/* The schedule as run: --schedule, auto resolved (1f1b with --pp > 1,
 * else none). */
const char *train_options_schedule(const train_options_t *o);
/* Whether the options ask for a pipeline: --schedule gpipe, 1f1b or paci,
 * or auto with --pp > 1. */
int train_options_pipeline(const train_options_t *o);
/* A pipeline's micro-batches per step, M (--micro-batches; 0: --pp), and
 * its backwards per update, a (paci's --accumulate; 0, and gpipe and
 * 1f1b: M). */
int64_t train_options_micro_batches(const train_options_t *o);
int64_t train_options_accumulate(const train_options_t *o);
/* Data parallel (no pipeline): the micro-steps of --batch per optimizer
 * step, --accumulate (0: 1); a pipeline: 1. */
int64_t train_options_micro_steps(const train_options_t *o);

/*
 * Parse argv (and the run file it names with --config, read first), then
 * check the settings together (--train given, --eval-fraction in (0, 1)
 * without --eval, --nonfinite skip with --update end, the checkpoint
 * options that need one another). Returns ERASE_OK, or
 * ERASE_ERR_INVALID / ERASE_ERR_FORMAT with a message naming the option,
 * file and line (a value out of the option's range, a plain integer beyond
 * 32 bits, a NUL byte, @include of a directory), ERASE_ERR_IO (an
 * unreadable run file). *help is set to 1 when --help was given, 2 for
 * --version (the first of them; nothing else is read then).
 */
erase_status_t train_options_parse(int argc, char **argv, train_options_t *o, int *help);

/* --help text: every option with its default. */
void train_options_usage(FILE *f);

/* The options as run-file text (for logs and checkpoints). */
void train_options_print(const train_options_t *o, FILE *f);

/* Whether option `name` (as on the command line: "model", "global-batch")
 * was set by the command line or the run file; 0 for its default or an
 * unknown name. */
int train_options_given(const train_options_t *o, const char *name);
/* Whether option `name` was set by the command line (not the run file). */
int train_options_given_on_command_line(const train_options_t *o, const char *name);
/* Option `name` back to its default, as if not given (a run file's value
 * that yields to a checkpoint's: apps/train/checkpoint_model.h). */
void train_options_forget(train_options_t *o, const char *name);

/*
 * Take the values of the options `names` (NULL-terminated, as on the
 * command line) that were not given from run-options text `text`
 * (train_options_print's, as a checkpoint's /meta stores it), then check
 * the settings together as train_options_parse does. Options absent from
 * the text keep their values. Each option taken whose value changes is
 * appended to `taken` (size bytes, "name value; ..."), which may be NULL.
 * Returns ERASE_OK, or ERASE_ERR_INVALID naming the option (a value of
 * the text out of range, or settings that cannot be used together).
 */
erase_status_t train_options_adopt(train_options_t *o, const char *text, const char *const *names, char *taken,
                                   size_t size);

/* The value of `name = value;` in run-options text (train_options_print's,
 * as a checkpoint stores it), without the ';', into out (size bytes); 0, or
 * -1 when the option is not there. */
int train_options_value(const char *text, const char *name, char *out, size_t size);

#endif
