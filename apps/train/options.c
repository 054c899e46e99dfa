#include "apps/train/options.h"
#include "apps/train/checkpoint_model.h"

#include "lib/comm/comm.h"
#include "lib/core/config_text.h"
#include "lib/sched/sched.h"

#include <errno.h>
#include <float.h>
#include <limits.h>
#include <getopt.h>
#include <libconfig.h>
#include <math.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

typedef enum { T_STRING, T_INT, T_DOUBLE, T_FLAG } opt_type_t;

/* Bounds of a numeric option's value (flags of opt_def_t.bounds). */
enum { LO = 1, LO_OPEN = 2, HI = 4, HI_OPEN = 8 };

/* train_options_t.given: where an option was set */
enum { GIVEN_IN_RUN_FILE = 1, GIVEN_ON_COMMAND_LINE = 2 };

typedef struct {
    const char *name;           /* command line, with '-' (run file: '_') */
    opt_type_t type;
    size_t offset, size;        /* field of train_options_t */
    const char *def;
    const char *help;
    const char *choices;        /* string options with fixed values: "a|b|c" */
    int bounds;                 /* numeric options: which of lo, hi apply (none: any value) */
    double lo, hi;
} opt_def_t;

#define NO_BOUNDS .bounds = 0
#define AT_LEAST(x) .bounds = LO, .lo = (x)
#define ABOVE(x) .bounds = LO_OPEN, .lo = (x)
#define FROM_TO(a, b) .bounds = LO | HI, .lo = (a), .hi = (b)
#define FROM_BELOW(a, b) .bounds = LO | HI_OPEN, .lo = (a), .hi = (b)
#define ABOVE_TO(a, b) .bounds = LO_OPEN | HI, .lo = (a), .hi = (b)
/* Learning rates, one rule: > 0, and a float the kernels can hold. */
#define LR_RANGE ABOVE_TO(0, FLT_MAX)

#define S(field) T_STRING, offsetof(train_options_t, field), sizeof(((train_options_t *)0)->field)
#define I(field) T_INT, offsetof(train_options_t, field), 0
#define D(field) T_DOUBLE, offsetof(train_options_t, field), 0
#define F(field) T_FLAG, offsetof(train_options_t, field), 0

static const opt_def_t defs[] = {
    { "config", S(config), "", "run file: these options as `name = value;` (libconfig), overridden by the command line", NULL, NO_BOUNDS },
    { "model", S(model), "ctr", "model file (docs/models.md; named in a run file: relative to its folder), or ctr / mlp / gpt / nanochat / dcn for the reference sizes", NULL, NO_BOUNDS },
    { "train", S(train), "", "training data: shard directories written by erase-convert or shard files, "
      "comma-separated or repeated, in global order (required)", NULL, NO_BOUNDS },
    { "eval", S(eval), "", "evaluation data (a list like --train); empty: the last --eval-fraction of --train "
      "in file order", NULL, NO_BOUNDS },
    { "eval-fraction", D(eval_fraction), "0.2", "share of --train held out for evaluation when --eval is empty", NULL, NO_BOUNDS },
    { "early-backward", S(early_backward), "graph", "off | blocking | async | graph (docs/pipelines.md)", "off|blocking|async|graph", NO_BOUNDS },
    { "reduce", S(reduce), "early", "per-block gradient all-reduce: early (after its backward) | end", "early|end", NO_BOUNDS },
    { "update", S(update), "early", "per-block optimizer update: early (when its gradients are ready) | end", "early|end", NO_BOUNDS },
    { "side-streams", I(side_streams), "1", "streams that run block backwards (early modes)", NULL, FROM_TO(1, ERASE_SCHED_MAX_SIDE_STREAMS) },
    { "blas-threads", I(blas_threads), "0", "CPU device: BLAS threads per stream (at most the rank's cores); 0: "
      "the rank's cores / the streams that compute at once. Equal values make every --early-backward mode "
      "bitwise equal on any CPU", NULL, FROM_TO(0, 1024) },
    { "pp", I(pp), "1", "pipeline stages: the model's blocks split into P stages of consecutive blocks on "
      "different ranks (world size = data-parallel ranks x P)", NULL, FROM_TO(1, 64) },
    { "schedule", S(schedule), "auto", "pipeline schedule: gpipe | 1f1b (flush every step) | paci (no flush, "
      "drift bounded by --accumulate) | local (stages begin at cuts and train by their local losses: only "
      "activations cross ranks) | none (data parallel, --early-backward); auto: 1f1b with --pp > 1, else none",
      "auto|none|gpipe|1f1b|paci|local", NO_BOUNDS },
    { "micro-batches", I(micro_batches), "0", "pipeline micro-batches per global batch (0: --pp)", NULL,
      FROM_TO(0, 65536) },
    { "accumulate", I(accumulate), "0", "paci: backwards each stage accumulates per optimizer step "
      "(0: --micro-batches); drift at stage s <= ceil((P-1-s)/a). Data parallel (no pipeline): micro-steps "
      "of --batch per optimizer step, gradients summed (global batch = accumulate x batch x ranks; --steps, "
      "--log-every and --checkpoint-every count optimizer steps; docs/accumulate.md); 0: 1", NULL,
      FROM_TO(0, 65536) },
    { "stages", S(stages), "even", "pipeline stage boundaries: even | auto (balanced by measured block times) | "
      "the first block of each stage, e.g. 0,3", NULL, NO_BOUNDS },
    { "cuts", S(cuts), "", "override the model's cuts: all | none | boundaries like 1,3", NULL, NO_BOUNDS },
    { "batch", I(batch), "256", "samples per rank per step, or per micro-step with --accumulate (global batch = batch x data-parallel ranks: ranks / --pp)", NULL, FROM_TO(1, INT_MAX) },
    { "global-batch", I(global_batch), "0", "samples per step over all ranks, instead of --batch: the same on any "
      "number of ranks (rank r of D takes [floor(rN/D), floor((r+1)N/D))); 0: --batch x ranks", NULL,
      FROM_TO(0, INT64_MAX) },
    { "epochs", I(epochs), "1", "epochs over the training data", NULL, FROM_TO(1, INT_MAX) },
    { "steps", I(steps), "0", "stop after this many (optimizer) steps (0: --epochs decides)", NULL, FROM_TO(0, INT64_MAX) },
    { "optimizer", S(optimizer), "adamw", "dense parameters: adamw | sgd | muon (Muon for hidden weight matrices, "
      "AdamW for embedding matrices, heads and 1-d parameters, as nanochat; docs/muon.md)", "adamw|sgd|muon",
      NO_BOUNDS },
    { "lr", D(lr), "0.001", "learning rate of dense parameters after warm-up (muon: of the hidden matrices, "
      "nanochat's matrix_lr)", NULL, LR_RANGE },
    { "muon-momentum", D(muon_momentum), "0.95", "muon: momentum (Nesterov)", NULL, FROM_BELOW(0, 1) },
    { "muon-momentum-warmup", I(muon_momentum_warmup), "0", "muon: steps over which the momentum rises linearly "
      "from 0.85 to --muon-momentum (nanochat: 300); 0: none", NULL, FROM_TO(0, INT64_MAX) },
    { "embedding-matrix-lr", D(embedding_matrix_lr), "0.2", "muon: AdamW rate of embedding matrices (gpt's wpe, "
      "and wte when the head is not tied to it; nanochat's embedding_lr), following the schedule as --lr does", NULL, LR_RANGE },
    { "unembedding-lr", D(unembedding_lr), "0.004", "muon: AdamW rate of heads, gpt's tied wte too (nanochat's unembedding_lr), "
      "following the schedule as --lr does", NULL, LR_RANGE },
    { "vector-lr", D(vector_lr), "0.004", "muon: AdamW rate of 1-d parameters (biases, norm gains), following "
      "the schedule as --lr does", NULL, LR_RANGE },
    { "momentum", D(momentum), "0.9", "sgd momentum", NULL, FROM_BELOW(0, 1) },
    { "beta1", D(beta1), "0.9", "adamw: decay rate of the gradient's running mean", NULL, FROM_BELOW(0, 1) },
    { "beta2", D(beta2), "0.999", "adamw: decay rate of the squared gradient's running mean", NULL, FROM_BELOW(0, 1) },
    { "eps", D(eps), "1e-8", "adamw: added to the root of the squared gradient's mean", NULL, ABOVE_TO(0, FLT_MAX) },
    { "weight-decay", D(weight_decay), "0", "weight decay of weight matrices (not biases or LayerNorm gains; decoupled for adamw)", NULL, FROM_TO(0, FLT_MAX) },
    { "grad-clip", D(grad_clip), "0", "clip the gradient norm of each sub-graph (blocks joined by attached "
      "boundaries; no cuts: the whole model) to this, as torch's clip_grad_norm_, after the all-reduce; "
      "dense gradients only, not embedding tables' rows (0: off)", NULL, FROM_TO(0, FLT_MAX) },
    { "embedding-optimizer", S(embedding_optimizer), "rowwise_adagrad", "embedding tables: rowwise_adagrad | sgd", "rowwise_adagrad|sgd", NO_BOUNDS },
    { "embeddings", S(embeddings), "replicated", "embedding tables: replicated (every rank holds every table) | "
      "table (each table on one rank, placed by bytes) | row (every table's rows split evenly over the ranks) | "
      "auto (row-wise the tables of more bytes than a rank's share, table-wise the rest); sharded tables are held "
      "only where placed, ids and vectors cross ranks by all-to-all; checkpoints hold every table whole, its rows "
      "written by their holders, and resume onto any placement and number of ranks; not with pipelines (--pp, "
      "--schedule) yet", "replicated|table|row|auto", NO_BOUNDS },
    { "embedding-lr", D(embedding_lr), "0.02", "learning rate of embedding tables after warm-up", NULL, LR_RANGE },
    { "warmup-steps", I(warmup_steps), "0", "linear learning-rate warm-up", NULL, FROM_TO(0, INT64_MAX) },
    { "lr-decay", S(lr_decay), "cosine", "after warm-up: cosine (from --lr, towards --min-lr after the last step) | constant | wsd "
      "(warm-up, stable, decay: constant, then linear to --final-lr-fraction x --lr over the last --warmdown-fraction "
      "of the steps, as nanochat)", "cosine|constant|wsd", NO_BOUNDS },
    { "min-lr", D(min_lr), "0", "cosine: the floor it decays towards, reached after the last step (nanoGPT's min_lr; at most --lr)", NULL, FROM_TO(0, FLT_MAX) },
    { "warmdown-fraction", D(warmdown_fraction), "0.2", "wsd: share of the steps in the final warm-down (nanochat's "
      "warmdown_ratio)", NULL, FROM_TO(0, 1) },
    { "final-lr-fraction", D(final_lr_fraction), "0", "wsd: the learning rate at the end of the warm-down, a fraction "
      "of --lr (nanochat's final_lr_frac)", NULL, FROM_TO(0, 1) },
    { "eval-every", I(eval_every), "0", "evaluate every N steps (0: at the end of every epoch)", NULL, FROM_TO(0, INT64_MAX) },
    { "log-every", I(log_every), "10", "steps between progress lines", NULL, FROM_TO(1, INT64_MAX) },
    { "metrics", S(metrics), "", "JSON-lines metrics file: one object per log interval, evaluation, checkpoint and summary, each with the time and samples so far", NULL, NO_BOUNDS },
    { "trace", S(trace), "", "Chrome trace-event JSON of the first --trace-steps steps after warm-up", NULL, NO_BOUNDS },
    { "trace-steps", I(trace_steps), "5", "steps to trace", NULL, FROM_TO(1, INT64_MAX) },
    { "checkpoint-dir", S(checkpoint_dir), "", "write checkpoints (io/checkpoint.h) here; also on SIGTERM/SIGINT/SIGUSR1, then exit 0 (empty: none); with --pp, one file per stage (ckpt-N.h5.stage<s>), paci drained first", NULL, NO_BOUNDS },
    { "checkpoint-every", I(checkpoint_every), "0", "steps between checkpoints (0: only at the end and on a signal)", NULL, FROM_TO(0, INT64_MAX) },
    { "keep-checkpoints", I(keep_checkpoints), "3", "keep the newest K checkpoints in --checkpoint-dir", NULL, FROM_TO(1, INT_MAX) },
    { "checkpoint-failure", S(checkpoint_failure), "stop", "a checkpoint that cannot be written (disk full, quota): "
      "stop (exit 1; the last good checkpoint stays) | continue (warn, remove the partial file, try again at the "
      "next checkpoint; exit 1 if the last one, at the end, failed)", "stop|continue", NO_BOUNDS },
    { "resume", S(resume), "", "continue a run: auto (the newest usable checkpoint of --checkpoint-dir, if any), a "
      "checkpoint file or a checkpoint directory; its model (a --model or --cuts on the command line that changes "
      "it is refused; a run file's yields), the training options of its run not given here and a pipeline "
      "checkpoint's --pp, --schedule, --stages, --micro-batches and --accumulate not on the command line are taken", NULL, NO_BOUNDS },
    { "init-from", S(init_from), "", "start a new run (step 0) from a checkpoint's parameters (a file or a checkpoint "
      "directory), its model (a --model or --cuts that changes it is refused) and the training options of its run not "
      "given here; a data-parallel checkpoint loads into any --pp and --stages", NULL, NO_BOUNDS },
    { "eval-only", F(eval_only), "0", "evaluate the checkpoint of --init-from or --resume on --eval (or the part of --train its run held out) "
      "without training: the model is the checkpoint's (a --model or --cuts on the command line that changes it is refused; a run file's yields), --epochs ignored", NULL, NO_BOUNDS },
    { "init-format", S(init_format), "", "with --init-from FILE.safetensors: the names of its tensors, erase | "
      "hf-gpt2 | torch | nanochat (docs/export.md; default: the format erase-export wrote in the file)", NULL, NO_BOUNDS },
    { "init-from-optimizer", F(init_from_optimizer), "0", "with --init-from: also load the optimizer state", NULL, NO_BOUNDS },
    { "device", S(device), "cpu", "cpu | cuda (GPU: each rank takes the one numbered by its local rank)", "cpu|cuda", NO_BOUNDS },
    { "gemm", S(gemm), "fp32", "GEMM arithmetic: fp32 | tf32 (~1e-3) | bf16 (~1e-2); the last two on cuda only", "fp32|tf32|bf16", NO_BOUNDS },
    { "seed", I(seed), "1", "seed of initialisation and data shuffling", NULL, FROM_TO(INT64_MIN, INT64_MAX) },
    { "shuffle", F(shuffle), "1", "shuffle the training data every epoch (--no-shuffle: file order)", NULL, NO_BOUNDS },
    { "shuffle-pool", I(shuffle_pool), "64", "blocks of 1024 rows (windows for lm) shuffled together: each batch is drawn from N "
      "blocks spread over all the data (N >= the data's blocks: a uniform shuffle of every row; 1: the order before "
      "pools); N x 1024 rows held in memory per rank", NULL, FROM_TO(1, 2097152) },
    { "nonfinite", S(nonfinite), "stop", "a step with a NaN or infinite gradient: stop (every rank, with a message) | skip it (needs --update end or --early-backward off)", "stop|skip", NO_BOUNDS },
    { "check-collectives", F(check_collectives), "0", "debug: compare every step's collectives across ranks", NULL, NO_BOUNDS },
    { "watchdog", D(watchdog), "600", "seconds a collective may take before the job is aborted", NULL, ABOVE_TO(0, ERASE_WATCHDOG_MAX_SECONDS) },
    { "quiet", F(quiet), "0", "no progress lines (start-up, evaluation and checkpoint lines and the summary remain)", NULL, NO_BOUNDS },
};
#define NDEFS (sizeof defs / sizeof defs[0])
_Static_assert(NDEFS <= sizeof(((train_options_t *)0)->given), "train_options_t.given holds a flag per option");

/* Whether `text` is one of the '|'-separated `choices`. */
static int is_choice(const char *choices, const char *text)
{
    size_t n = strlen(text);
    for (const char *p = choices; *p;) {
        const char *bar = strchr(p, '|');
        size_t len = bar ? (size_t)(bar - p) : strlen(p);
        if (len == n && !strncmp(p, text, n))
            return 1;
        p += len + (bar != NULL);
    }
    return 0;
}

/* A bound as it reads in a message: integers in full (INT64_MAX, held
 * as the double 2^63, as 9223372036854775807), numbers as %g. */
static void bound_text(const opt_def_t *d, double x, char *buf, size_t size)
{
    if (d->type != T_INT)
        snprintf(buf, size, "%g", x);
    else
        snprintf(buf, size, "%lld", x >= 0x1p63 ? LLONG_MAX : x <= -0x1p63 ? LLONG_MIN : (long long)x);
}

/* A numeric option's value `v` (as given: `text`; an integer beyond int64:
 * +-inf) against its bounds: "--batch 0: expected an integer in [1,
 * 2147483647]" and the like. Every numeric option has both bounds but
 * --eval-fraction (checked where it applies); an upper bound that is only
 * int64's own is named when the value is beyond int64 ("--log-every 0: expected an
 * integer >= 1" otherwise). */
static erase_status_t check_range(const opt_def_t *d, double v, const char *text, const char *where)
{
    int b = d->bounds;
    if (!((b & LO) && v < d->lo) && !((b & LO_OPEN) && v <= d->lo) && !((b & HI) && v > d->hi) &&
        !((b & HI_OPEN) && v >= d->hi))
        return ERASE_OK;
    const char *kind = d->type == T_INT ? "an integer" : "a number";
    char lo[32], hi[32];
    bound_text(d, d->lo, lo, sizeof lo);
    bound_text(d, d->hi, hi, sizeof hi);
    int type_max = d->type == T_INT && d->hi >= 0x1p63;
    if ((b & (LO | LO_OPEN)) && (b & (HI | HI_OPEN)) && (!type_max || isinf(v)))
        return ERASE_ERROR(ERASE_ERR_INVALID, "%s--%s %s: expected %s in %c%s, %s%c", where, d->name, text, kind,
                           b & LO ? '[' : '(', lo, hi, b & HI ? ']' : ')');
    return ERASE_ERROR(ERASE_ERR_INVALID, "%s--%s %s: expected %s %s %s", where, d->name, text, kind,
                       b & LO ? ">=" : ">", lo);
}

static erase_status_t set_value(train_options_t *o, const opt_def_t *d, const char *text,
                                const char *where)
{
    char *field = (char *)o + d->offset;
    char *end;
    switch (d->type) {
    case T_STRING:
        if (strlen(text) >= d->size)
            return ERASE_ERROR(ERASE_ERR_INVALID, "%s--%s: value longer than %zu characters", where, d->name, d->size - 1);
        if (d->choices && !is_choice(d->choices, text))
            return ERASE_ERROR(ERASE_ERR_INVALID, "%s--%s %s: expected one of %s", where, d->name, text, d->choices);
        strcpy(field, text);
        return ERASE_OK;
    case T_INT: {
        errno = 0;
        long long v = strtoll(text, &end, 10);
        int beyond = errno == ERANGE; /* an integer, but not an int64 */
        if ((errno && !beyond) || end == text || *end)
            return ERASE_ERROR(ERASE_ERR_INVALID, "%s--%s: expected an integer, got '%s'", where, d->name, text);
        ERASE_CHECK(check_range(d, beyond ? (v < 0 ? -INFINITY : INFINITY) : (double)v, text, where));
        *(int64_t *)field = v;
        return ERASE_OK;
    }
    case T_DOUBLE: {
        errno = 0;
        double v = strtod(text, &end);
        if (errno || end == text || *end || !isfinite(v))
            return ERASE_ERROR(ERASE_ERR_INVALID, "%s--%s: expected a number, got '%s'", where, d->name, text);
        ERASE_CHECK(check_range(d, v, text, where));
        *(double *)field = v;
        return ERASE_OK;
    }
    case T_FLAG:
        if (!strcmp(text, "1") || !strcmp(text, "true") || !strcmp(text, "yes"))
            *(int *)field = 1;
        else if (!strcmp(text, "0") || !strcmp(text, "false") || !strcmp(text, "no"))
            *(int *)field = 0;
        else
            return ERASE_ERROR(ERASE_ERR_INVALID, "%s--%s: expected true or false, got '%s'", where, d->name, text);
        return ERASE_OK;
    }
    return ERASE_ERROR(ERASE_ERR_INVALID, "option --%s: unknown type", d->name);
}

void train_options_default(train_options_t *o)
{
    memset(o, 0, sizeof *o);
    for (size_t i = 0; i < NDEFS; i++)
        set_value(o, &defs[i], defs[i].def, "");
}

static const opt_def_t *find(const char *name)
{
    for (size_t i = 0; i < NDEFS; i++)
        if (!strcmp(defs[i].name, name))
            return &defs[i];
    return NULL;
}

/* A relative model file named in the run file `path` is taken from the run
 * file's directory (model = "m.cfg" in conf/run.cfg: conf/m.cfg); ctr, mlp,
 * gpt and absolute paths stay as they are. */
static erase_status_t model_beside(const char *path, const char *where, train_options_t *o)
{
    const char *slash = strrchr(path, '/');
    erase_model_kind_t kind;
    if (!slash || o->model[0] == '/' || erase_model_config_kind(o->model, &kind))
        return ERASE_OK;
    char joined[sizeof o->model];
    int n = snprintf(joined, sizeof joined, "%.*s/%s", (int)(slash - path), path, o->model);
    if (n < 0 || (size_t)n >= sizeof joined)
        return ERASE_ERROR(ERASE_ERR_FORMAT, "%smodel: the path beside the run file is longer than %zu "
                           "characters", where, sizeof joined - 1);
    memcpy(o->model, joined, (size_t)n + 1);
    return ERASE_OK;
}

/* --batch and --global-batch exclude each other where they are given (the
 * run file, the command line): given[0], given[1] record which one `d` set;
 * both is an error naming them. */
static erase_status_t batch_given(const train_options_t *o, const opt_def_t *d, const char *where, int given[2])
{
    int k = !strcmp(d->name, "batch") ? 0 : !strcmp(d->name, "global-batch") ? 1 : -1;
    if (k < 0)
        return ERASE_OK;
    given[k] = 1;
    if (given[0] && given[1])
        return ERASE_ERROR(ERASE_ERR_INVALID, "%s--batch %lld and --global-batch %lld: give one (--batch: samples "
                           "per rank, --global-batch: samples per step over all ranks)", where,
                           (long long)o->batch, (long long)o->global_batch);
    return ERASE_OK;
}

/* " (did you mean 'lr-decay'?)" for a misspelt option name, or "". */
static void suggest_option(const char *name, char *hint, size_t size)
{
    const char *names[NDEFS];
    for (size_t k = 0; k < NDEFS; k++)
        names[k] = defs[k].name;
    erase_config_suggest(name, names, (int)NDEFS, hint, size);
}

/* Apply the run file's settings; file_batch: batch_given's record of the file. */
static erase_status_t read_run_file(const char *path, train_options_t *o, int file_batch[2])
{
    snprintf(o->config, sizeof o->config, "%s", path); /* what messages about its settings name */
    char *file_text;
    erase_status_t st = erase_config_file_read(path, "run file", &file_text);
    if (st != ERASE_OK)
        return st;
    config_t cfg;
    config_init(&cfg);
    int read = config_read_string(&cfg, file_text);
    free(file_text);
    if (!read) {
        const char *file = config_error_file(&cfg); /* set inside an @include */
        st = ERASE_ERROR(ERASE_ERR_FORMAT, "%s:%d: %s", file ? file : path, config_error_line(&cfg),
                         config_error_text(&cfg));
        config_destroy(&cfg);
        return st;
    }
    config_setting_t *root = config_root_setting(&cfg);
    for (int i = 0; st == ERASE_OK && i < config_setting_length(root); i++) {
        config_setting_t *s = config_setting_get_elem(root, (unsigned)i);
        char name[64], where[1200], text[1100];
        snprintf(name, sizeof name, "%s", config_setting_name(s));
        for (char *p = name; *p; p++)
            if (*p == '_')
                *p = '-';
        snprintf(where, sizeof where, "%s:%d: ", path, config_setting_source_line(s));
        const opt_def_t *d = find(name);
        if (d && !strcmp(name, "config")) {
            st = ERASE_ERROR(ERASE_ERR_FORMAT, "%sconfig: a run file cannot name another run file (give one "
                             "--config on the command line)", where);
            break;
        }
        if (!d) {
            char hint[96];
            suggest_option(name, hint, sizeof hint);
            for (char *p = hint; *p; p++) /* a run file's spelling */
                if (*p == '-')
                    *p = '_';
            int group = config_setting_type(s) == CONFIG_TYPE_GROUP; /* "nanochat: { ... }": a model file's */
            st = ERASE_ERROR(ERASE_ERR_FORMAT, "%sunknown option '%s'%s (erase-train --help lists them)%s", where,
                             config_setting_name(s), hint,
                             group ? "; a group of keys is a model file's: give that file to --model" : "");
            break;
        }
        switch (config_setting_type(s)) {
        case CONFIG_TYPE_STRING:
            snprintf(text, sizeof text, "%s", config_setting_get_string(s));
            break;
        case CONFIG_TYPE_INT:
        case CONFIG_TYPE_INT64:
            snprintf(text, sizeof text, "%lld", config_setting_get_int64(s));
            break;
        case CONFIG_TYPE_FLOAT:
            snprintf(text, sizeof text, "%.17g", config_setting_get_float(s));
            break;
        case CONFIG_TYPE_BOOL:
            snprintf(text, sizeof text, "%d", config_setting_get_bool(s));
            break;
        default:
            st = ERASE_ERROR(ERASE_ERR_FORMAT, "%s%s: expected a value, got a group or list", where,
                             config_setting_name(s));
            continue;
        }
        if ((d->type == T_STRING) != (config_setting_type(s) == CONFIG_TYPE_STRING)) {
            st = ERASE_ERROR(ERASE_ERR_FORMAT, "%s%s: expected %s", where, config_setting_name(s),
                             d->type == T_STRING ? "a string in quotes" : "a number or true/false");
            continue;
        }
        st = set_value(o, d, text, where);
        if (st == ERASE_OK)
            o->given[d - defs] = GIVEN_IN_RUN_FILE;
        if (st == ERASE_OK)
            st = batch_given(o, d, where, file_batch);
        if (st == ERASE_OK && !strcmp(d->name, "model"))
            st = model_beside(path, where, o);
        if (st != ERASE_OK)
            st = ERASE_ERR_FORMAT;
    }
    config_destroy(&cfg);
    return st;
}

const char *train_options_schedule(const train_options_t *o)
{
    return strcmp(o->schedule, "auto") ? o->schedule : o->pp > 1 ? "1f1b" : "none";
}

int train_options_pipeline(const train_options_t *o)
{
    return strcmp(train_options_schedule(o), "none") != 0;
}

int64_t train_options_micro_batches(const train_options_t *o)
{
    return o->micro_batches ? o->micro_batches : o->pp;
}

int64_t train_options_accumulate(const train_options_t *o)
{
    return !strcmp(o->schedule, "paci") && o->accumulate ? o->accumulate : train_options_micro_batches(o);
}

int64_t train_options_micro_steps(const train_options_t *o)
{
    return !train_options_pipeline(o) && o->accumulate > 1 ? o->accumulate : 1;
}

/* Options that only one learning-rate schedule or optimizer takes: `name`
 * needs --`by` to be one of `values` ("a or b"). */
typedef struct {
    const char *name, *by, *values;
} owned_option_t;
static const owned_option_t owned[] = {
    { "min-lr", "lr-decay", "cosine" },
    { "warmdown-fraction", "lr-decay", "wsd" },
    { "final-lr-fraction", "lr-decay", "wsd" },
    { "beta1", "optimizer", "adamw or muon" },
    { "beta2", "optimizer", "adamw or muon" },
    { "eps", "optimizer", "adamw or muon" },
    { "muon-momentum", "optimizer", "muon" },
    { "muon-momentum-warmup", "optimizer", "muon" },
    { "embedding-matrix-lr", "optimizer", "muon" },
    { "unembedding-lr", "optimizer", "muon" },
    { "vector-lr", "optimizer", "muon" },
};

static const char *owner_value(const train_options_t *o, const owned_option_t *w)
{
    return !strcmp(w->by, "lr-decay") ? o->lr_decay : o->optimizer;
}

/* Whether this run's --lr-decay or --optimizer is one that takes w->name. */
static int owned_applies(const train_options_t *o, const owned_option_t *w)
{
    const char *v = owner_value(o, w), *at = strstr(w->values, v);
    size_t n = strlen(v);
    return at && (at == w->values || at[-1] == ' ') && (at[n] == '\0' || at[n] == ' ');
}

/* A run file's option of another schedule or optimizer than the one the
 * command line chose (jobs/nanochat.run's Muon rates under --optimizer
 * adamw): the command line overrides the run file, so the option yields,
 * back to its default, and o->yielded names it for the start's note. Set
 * together on either side, they are refused (check_together). */
static void yield_run_file_options(train_options_t *o)
{
    o->yielded[0] = '\0';
    for (size_t i = 0; i < sizeof owned / sizeof owned[0]; i++) {
        const opt_def_t *d = find(owned[i].name), *by = find(owned[i].by);
        if (o->given[d - defs] != GIVEN_IN_RUN_FILE || o->given[by - defs] != GIVEN_ON_COMMAND_LINE ||
            owned_applies(o, &owned[i]))
            continue;
        size_t n = strlen(o->yielded);
        snprintf(o->yielded + n, sizeof o->yielded - n, "%s--%s (only with --%s %s; the command line's is %s)",
                 n ? ", " : "", owned[i].name, owned[i].by, owned[i].values, owner_value(o, &owned[i]));
        train_options_forget(o, owned[i].name);
    }
}

/* Settings that parse one by one but cannot be used as given, each naming
 * its options (usage errors, found before MPI start-up). */
static erase_status_t check_together(const train_options_t *o)
{
    if (train_options_given(o, "cuts") && !o->cuts[0]) /* "" is the default: the model's cuts */
        return ERASE_ERROR(ERASE_ERR_INVALID, "--cuts '': expected all, none or boundaries like 1,3 (without "
                           "--cuts the model's own cuts are kept)");
    if (o->eval_only && !o->resume[0] && !o->init_from[0])
        return ERASE_ERROR(ERASE_ERR_INVALID, "--eval-only: needs a checkpoint to evaluate (--init-from CKPT or --resume CKPT|auto)");
    if (o->eval_only && o->steps)
        return ERASE_ERROR(ERASE_ERR_INVALID, "--eval-only and --steps %lld: an evaluation-only run takes no training steps",
                           (long long)o->steps);
    if (o->eval_only && o->accumulate > 1)
        return ERASE_ERROR(ERASE_ERR_INVALID, "--eval-only and --accumulate %lld: an evaluation-only run takes no "
                           "optimizer steps (drop --accumulate)", (long long)o->accumulate);
    if (o->eval_only && !o->train[0] && !o->eval[0])
        return ERASE_ERROR(ERASE_ERR_INVALID, "--eval-only: no data given (--eval DIR, or --train DIR whose "
                           "--eval-fraction held-out part is evaluated)");
    if (!o->train[0] && !o->eval_only)
        return ERASE_ERROR(ERASE_ERR_INVALID, "--train: no training data given (a directory written by erase-convert)");
    if (!o->eval[0] && !(o->eval_fraction > 0 && o->eval_fraction < 1))
        return ERASE_ERROR(ERASE_ERR_INVALID, "--eval-fraction %g: expected a fraction in (0, 1) "
                           "of --train held out for evaluation (or give --eval)", o->eval_fraction);
    int pipeline = train_options_pipeline(o);
    const char *schedule = train_options_schedule(o); /* the one a message names: auto's choice */
    if (!pipeline && (o->micro_batches || strcmp(o->stages, "even")))
        return ERASE_ERROR(ERASE_ERR_INVALID, "%s: only with a pipeline (--pp P, P > 1; --schedule gpipe, 1f1b, "
                           "paci or local chooses its schedule)", o->micro_batches ? "--micro-batches" : "--stages");
    if (o->pp > 1 && !strcmp(o->schedule, "none"))
        return ERASE_ERROR(ERASE_ERR_INVALID, "--pp %lld with --schedule none: stages need a pipeline schedule "
                           "(gpipe, 1f1b, paci or local)", (long long)o->pp);
    if (pipeline && o->eval_only)
        return ERASE_ERROR(ERASE_ERR_INVALID, "--eval-only: evaluates data-parallel checkpoints on data-parallel "
                           "ranks; drop --pp and --schedule");
    if (pipeline && o->grad_clip > 0 && !strcmp(schedule, "local"))
        return ERASE_ERROR(ERASE_ERR_INVALID, "--grad-clip with --schedule local: the stage executor does not clip "
                           "(each sub-graph's norm would be its stage's own; not built); clip without a pipeline");
    if (pipeline && o->grad_clip > 0)
        return ERASE_ERROR(ERASE_ERR_INVALID, "--grad-clip with --schedule %s: the gradient norm spans the stages "
                           "(a synchronisation paci does without); clip without a pipeline", schedule);
    if (pipeline && !strcmp(o->nonfinite, "skip"))
        return ERASE_ERROR(ERASE_ERR_INVALID, "--nonfinite skip with --schedule %s: stages find non-finite "
                           "gradients on their own; use --nonfinite stop", schedule);
    if (pipeline && strcmp(o->early_backward, "graph") && strcmp(o->early_backward, "off"))
        return ERASE_ERROR(ERASE_ERR_INVALID, "--early-backward %s with --schedule %s: inside a pipeline stage "
                           "early backward is on (graph, the default) or off; blocking and async are modes of the "
                           "data-parallel scheduler", o->early_backward, schedule);
    if (pipeline && (strcmp(o->reduce, "early") || strcmp(o->update, "early") || o->side_streams != 1))
        return ERASE_ERROR(ERASE_ERR_INVALID, "--%s with --schedule %s: --reduce, --update and --side-streams set "
                           "the data-parallel scheduler; a pipeline stage's executor has its own order "
                           "(docs/pipelines.md)", strcmp(o->reduce, "early") ? "reduce end"
                           : strcmp(o->update, "early") ? "update end" : "side-streams", schedule);
    if (pipeline && strcmp(schedule, "paci") && o->accumulate)
        return ERASE_ERROR(ERASE_ERR_INVALID, "--accumulate %lld with --schedule %s: gpipe, 1f1b and local update "
                           "once per step over their --micro-batches (--accumulate: paci's backwards per update, or "
                           "data-parallel micro-steps without a pipeline)", (long long)o->accumulate, schedule);
    /* a block's early update would apply before a later block's gradient
     * of the same step is found non-finite: that step could not be skipped */
    if (!strcmp(o->nonfinite, "skip") && strcmp(o->update, "end") && strcmp(o->early_backward, "off"))
        return ERASE_ERROR(ERASE_ERR_INVALID, "--nonfinite skip needs --update end (or --early-backward off): "
                           "an early update could apply before a later block's gradient is found non-finite");
    int sharded = strcmp(o->embeddings, "replicated") != 0;
    if (sharded && pipeline)
        return ERASE_ERROR(ERASE_ERR_INVALID, "--embeddings %s with a pipeline (--pp %lld, --schedule %s): sharded "
                           "tables with pipelines are not built yet; drop --pp and --schedule, or use --embeddings "
                           "replicated", o->embeddings, (long long)o->pp, schedule);
    if (sharded && !pipeline && o->accumulate > 1)
        return ERASE_ERROR(ERASE_ERR_INVALID, "--accumulate %lld with --embeddings %s: micro-steps over sharded "
                           "tables are not built; use --embeddings replicated, or one step of the whole batch",
                           (long long)o->accumulate, o->embeddings);
    if (o->resume[0] && o->init_from[0])
        return ERASE_ERROR(ERASE_ERR_INVALID, "--resume %s and --init-from %s: give one (resume continues a run, "
                           "--init-from starts a new one from its parameters)", o->resume, o->init_from);
    if (!strcmp(o->resume, "auto") && !o->checkpoint_dir[0])
        return ERASE_ERROR(ERASE_ERR_INVALID, "--resume auto: needs --checkpoint-dir (where to look)");
    if (o->min_lr > o->lr && !strcmp(o->lr_decay, "cosine"))
        return ERASE_ERROR(ERASE_ERR_INVALID, "--min-lr %g above --lr %g: cosine decays from --lr to --min-lr",
                           o->min_lr, o->lr);
    for (size_t i = 0; i < sizeof owned / sizeof owned[0]; i++)
        if (train_options_given(o, owned[i].name) && !owned_applies(o, &owned[i])) {
            const opt_def_t *d = find(owned[i].name);
            return ERASE_ERROR(ERASE_ERR_INVALID, "--%s: only with --%s %s (this run's is %s)%s%s", owned[i].name,
                               owned[i].by, owned[i].values, owner_value(o, &owned[i]),
                               o->given[d - defs] == GIVEN_IN_RUN_FILE ? "; set in the run file " : "",
                               o->given[d - defs] == GIVEN_IN_RUN_FILE ? o->config : "");
        }
    if (o->init_from_optimizer && !o->init_from[0])
        return ERASE_ERROR(ERASE_ERR_INVALID, "--init-from-optimizer: needs --init-from CKPT");
    int safetensors = o->init_from[0] && train_ckpt_is_safetensors(o->init_from); /* issue 37 */
    if (o->init_format[0] && !safetensors)
        return ERASE_ERROR(ERASE_ERR_INVALID, "--init-format %s: only with --init-from FILE.safetensors",
                           o->init_format);
    if (safetensors && o->eval_only)
        return ERASE_ERROR(ERASE_ERR_INVALID, "--eval-only --init-from %s: evaluates checkpoints; a run started from "
                           "the file (--steps 1 and --checkpoint-dir) makes one", o->init_from);
    if (pipeline && o->pp == 1) /* it would train as data parallel with early backward off */
        return ERASE_ERROR(ERASE_ERR_INVALID, "--schedule %s without --pp: a pipeline needs 2 stages or more "
                           "(--pp P); one stage would only turn early backward off (data parallel: --schedule "
                           "none, the default)", schedule);
    return ERASE_OK;
}

erase_status_t train_options_parse(int argc, char **argv, train_options_t *o, int *help)
{
    train_options_default(o);
    *help = 0;
    int file_batch[2] = { 0, 0 }, line_batch[2] = { 0, 0 }; /* --batch, --global-batch given (batch_given) */
    for (int i = 1; i < argc; i++) { /* the run file first, whatever its place */
        if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) {
            *help = 1;
            return ERASE_OK;
        }
        if (!strcmp(argv[i], "--version")) {
            *help = 2;
            return ERASE_OK;
        }
        if (!strcmp(argv[i], "--config") && i + 1 < argc)
            ERASE_CHECK(read_run_file(argv[i + 1], o, file_batch));
        else if (!strncmp(argv[i], "--config=", 9))
            ERASE_CHECK(read_run_file(argv[i] + 9, o, file_batch));
    }
    int listed[2] = { 0, 0 }; /* --train, --eval given on the command line: they replace the run file's */
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (strncmp(a, "--", 2) != 0)
            return ERASE_ERROR(ERASE_ERR_INVALID, "unexpected argument '%s' (options are --name value)", a);
        char name[64];
        const char *value = NULL, *eq = strchr(a + 2, '=');
        snprintf(name, sizeof name, "%.*s", eq ? (int)(eq - a - 2) : (int)strlen(a + 2), a + 2);
        if (eq)
            value = eq + 1;
        const opt_def_t *d = find(name);
        int negated = 0;
        if (!d && !strncmp(name, "no-", 3) && (d = find(name + 3)) && d->type == T_FLAG)
            negated = 1;
        if (!d) {
            char hint[96];
            suggest_option(name, hint, sizeof hint);
            return ERASE_ERROR(ERASE_ERR_INVALID, "unknown option --%s%s (erase-train --help lists them)", name, hint);
        }
        o->given[d - defs] = GIVEN_ON_COMMAND_LINE;
        if (d->type == T_FLAG) {
            ERASE_CHECK(set_value(o, d, value ? value : negated ? "0" : "1", ""));
            continue;
        }
        if (!value) {
            if (i + 1 >= argc)
                return ERASE_ERROR(ERASE_ERR_INVALID, "--%s needs a value", name);
            value = argv[++i];
        }
        if (!strcmp(name, "config"))
            continue; /* read above */
        int list = !strcmp(name, "train") ? 0 : !strcmp(name, "eval") ? 1 : -1;
        if (list >= 0 && listed[list]++) { /* repeated: appended to the command line's list */
            char joined[sizeof o->train];
            const char *have = list == 0 ? o->train : o->eval;
            int n = snprintf(joined, sizeof joined, "%s,%s", have, value);
            if (n < 0 || (size_t)n >= sizeof joined)
                return ERASE_ERROR(ERASE_ERR_INVALID, "--%s: the inputs together are longer than %zu characters",
                                   name, sizeof joined - 1);
            ERASE_CHECK(set_value(o, d, joined, ""));
            continue;
        }
        ERASE_CHECK(set_value(o, d, value, ""));
        ERASE_CHECK(batch_given(o, d, "", line_batch));
    }
    if (line_batch[0] && file_batch[1]) /* the command line's --batch wins over the run file's global_batch */
        o->global_batch = 0;
    yield_run_file_options(o);
    return check_together(o);
}

void train_options_usage(FILE *f)
{
    fprintf(f, "usage: [mpirun -np N | srun] erase-train --train DIR [options]\n\n"
               "Trains a model of detached blocks on every rank (data parallel): ctr on CTR\n"
               "shards, mlp on classification shards, gpt on token shards (erase-convert);\n"
               "evaluates it, and prints QPS and the model's metrics (NE, AUC; loss, accuracy;\n"
               "loss, perplexity, bits per byte, tokens/s, MFU). Options (default, if any):\n");
    for (size_t i = 0; i < NDEFS; i++) {
        char left[64];
        snprintf(left, sizeof left, "--%s%s", defs[i].name,
                 defs[i].type == T_FLAG ? "" : defs[i].type == T_STRING ? " S" : " N");
        fprintf(f, "  %-26s %s", left, defs[i].help);
        if (defs[i].type == T_FLAG)
            fprintf(f, " (%s)\n", atoi(defs[i].def) ? "on; --no-" : "off");
        else if (defs[i].def[0])
            fprintf(f, " (%s)\n", defs[i].def);
        else
            fputc('\n', f); /* not set unless given ("none" is a value of some options) */
    }
    fprintf(f, "\nA flag F is turned off with --no-F. A run file sets the same options,\n"
               "e.g. `early_backward = \"async\"; lr = 0.002;`; the command line wins.\n");
}

/* Option d's value in o as run-file text: strings in quotes, flags as
 * true / false, numbers exact (a run taken from a checkpoint's text
 * gets bitwise the same learning rates). */
static void option_text(const train_options_t *o, const opt_def_t *d, char *buf, size_t size)
{
    const char *field = (const char *)o + d->offset;
    switch (d->type) {
    case T_STRING: snprintf(buf, size, "\"%s\"", field); break;
    case T_INT: snprintf(buf, size, "%lld", (long long)*(const int64_t *)field); break;
    case T_DOUBLE: { /* the fewest digits that read back as the same double */
        const double v = *(const double *)field;
        for (int digits = 15; digits <= 17; digits++) {
            snprintf(buf, size, "%.*g", digits, v);
            if (strtod(buf, NULL) == v)
                break;
        }
        break;
    }
    case T_FLAG: snprintf(buf, size, "%s", *(const int *)field ? "true" : "false"); break;
    }
}

void train_options_print(const train_options_t *o, FILE *f)
{
    for (size_t i = 0; i < NDEFS; i++) {
        char name[64], value[1100];
        snprintf(name, sizeof name, "%s", defs[i].name);
        for (char *p = name; *p; p++)
            if (*p == '-')
                *p = '_';
        option_text(o, &defs[i], value, sizeof value);
        fprintf(f, "%s = %s;\n", name, value);
    }
}

int train_options_given(const train_options_t *o, const char *name)
{
    const opt_def_t *d = find(name);
    return d && o->given[d - defs];
}

int train_options_given_on_command_line(const train_options_t *o, const char *name)
{
    const opt_def_t *d = find(name);
    return d && o->given[d - defs] == GIVEN_ON_COMMAND_LINE;
}

void train_options_forget(train_options_t *o, const char *name)
{
    const opt_def_t *d = find(name);
    if (!d)
        return;
    (void)set_value(o, d, d->def ? d->def : "", ""); /* a default is a valid value */
    o->given[d - defs] = 0;
}

erase_status_t train_options_adopt(train_options_t *o, const char *text, const char *const *names, char *taken,
                                   size_t size)
{
    if (taken && size)
        taken[0] = '\0';
    for (int i = 0; names[i]; i++) {
        const opt_def_t *d = find(names[i]);
        char key[64], value[1100], before[1100], after[1100];
        if (!d || o->given[d - defs])
            continue;
        snprintf(key, sizeof key, "%s", d->name);
        for (char *p = key; *p; p++)
            if (*p == '-')
                *p = '_';
        if (train_options_value(text, key, value, sizeof value) != 0)
            continue;
        size_t len = strlen(value);
        if (d->type == T_STRING && len >= 2 && value[0] == '"' && value[len - 1] == '"') {
            memmove(value, value + 1, len - 2);
            value[len - 2] = '\0';
        }
        if (taken)
            option_text(o, d, before, sizeof before);
        ERASE_CHECK(set_value(o, d, value, "the checkpoint's run options: "));
        if (taken) {
            option_text(o, d, after, sizeof after);
            size_t used = strlen(taken);
            if (strcmp(before, after) && used < size)
                snprintf(taken + used, size - used, "%s%s %s", used ? "; " : "", d->name, value);
        }
    }
    return check_together(o);
}

/* The value of `name = value;` in run-options text (train_options_print),
 * without the ';', into out; 0, or -1 when the option is not there. */
int train_options_value(const char *text, const char *name, char *out, size_t size)
{
    size_t n = strlen(name);
    for (const char *line = text; line && *line;) {
        const char *end = strchr(line, '\n');
        size_t len = end ? (size_t)(end - line) : strlen(line);
        if (len > n + 3 && !strncmp(line, name, n) && !strncmp(line + n, " = ", 3)) {
            size_t v = len - n - 3;
            if (v > 0 && line[n + 3 + v - 1] == ';')
                v--;
            snprintf(out, size, "%.*s", (int)v, line + n + 3);
            return 0;
        }
        line = end ? end + 1 : NULL;
    }
    return -1;
}
