/*
 * erase-train's set-up from the options: the model, the global batch and
 * this rank's share, the readers, the optimizer and the step's executor
 * (the scheduler, or this rank's pipeline stage), the device and the host
 * stream (apps/train/run_state.h).
 */
#include "apps/train/run_state.h"
#include "apps/train/ctr_vocab.h"

#include "io/checkpoint.h"
#include "io/cls_shard.h"
#include "io/ctr_shard.h"
#include "io/tok_reader.h"
#include "io/tok_shard.h"
#include "lib/core/checked.h"
#include "lib/core/fs.h"
#include "lib/core/stats.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

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
    /* validated as the restore validates it (the same checkpoint of a
     * directory taken), no tensor held: a rank of a run with sharded
     * tables never holds a whole table (io/checkpoint.h) */
    TRY(erase_ckpt_open_path_flags(path, ERASE_CKPT_OPEN_LAZY_ROWS | ERASE_CKPT_OPEN_STREAM_WHOLE, NULL, NULL, &ck));
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
    erase_status_t st = m->model ? erase_model_config_parse_embedded(m->model, r->ckpt_path, &r->cfg)
                                 : ERASE_ERROR(ERASE_ERR_FORMAT, "%s: holds no model text", r->ckpt_path);
    if (st == ERASE_OK && m->tokenizer && *m->tokenizer && !(r->ckpt_tokenizer = strdup(m->tokenizer)))
        st = ERASE_ERROR(ERASE_ERR_NOMEM, "%s: no memory for its tokenizer", r->ckpt_path);
    snprintf(r->ckpt_data_vocab, sizeof r->ckpt_data_vocab, "%s", m->data_vocab ? m->data_vocab : "");
    erase_ckpt_close(ck);
    return st;
}

/* What a pipeline needs of the model, found alike on every rank: an
 * untied gpt head, stages at attached boundaries. `from`: the checkpoint
 * whose model this is (NULL: none), whose model the advice keeps. */
static erase_status_t pipeline_model(run_t *r, const char *from)
{
    int tied = 0, P = r->w->pp_size, local = !strcmp(train_options_schedule(r->o), "local");
    if (r->cfg.kind == ERASE_MODEL_GPT)
        TRY(erase_model_config_tied_head(&r->cfg, &tied));
    if (tied && P > 1 && from)
        return ERASE_ERROR(ERASE_ERR_INVALID, "--pp %d: the gpt model of %s ties its LM head to h0/wte, which "
                           "would join stage 0 and stage %d: this checkpoint's model trains without --pp", P, from,
                           P - 1);
    if (tied && P > 1)
        return ERASE_ERROR(ERASE_ERR_INVALID, "--pp %d: the gpt model's LM head is tied to h0/wte, which would "
                           "join stage 0 and stage %d; set tie_head = false in the model file (docs/models.md; e.g. "
                           "jobs/gpt-shakespeare-pp.cfg)",
                           P, P - 1);
    int most = train_pipeline_max_stages(&r->cfg, local), other = train_pipeline_max_stages(&r->cfg, !local);
    if (from && P > most) { /* the advice of train_pipeline_stages would change the model (--cuts) */
        char instead[96] = "";
        if (other >= P)
            snprintf(instead, sizeof instead, ", or %s (at most %d stages)",
                     local ? "--schedule 1f1b" : "--schedule local", other);
        return ERASE_ERROR(ERASE_ERR_INVALID, "--pp %d%s: the model of %s has %d %s: --pp at most %d%s", P,
                           local ? " --schedule local" : "", from, most - 1,
                           local ? "cuts (stage boundaries of local parallelism are cuts)"
                                 : "attached boundaries (stage boundaries carry the gradient)",
                           most, instead);
    }
    return train_pipeline_stages(r->o->stages, &r->cfg, P, local, &r->stages);
}

/* A run whose model is its checkpoint's (`path`): the model --model and
 * --cuts ask for, when given on the command line, must be the same
 * (train_ckpt_model_same); given by the run file alone, they yield to the
 * checkpoint's on --resume and --eval-only with a note
 * (train_ckpt_model_yield). */
static erase_status_t check_asked_model(const run_t *r, const char *path)
{
    const train_options_t *o = r->o;
    const train_ckpt_origin_t *origin = r->origin;
    const char *model = NULL, *cuts = NULL;
    int yield;
    if (origin && (origin->file_model[0] || origin->file_cuts[0])) { /* --resume: set aside for the checkpoint's */
        model = origin->file_model[0] ? origin->file_model : NULL;
        cuts = origin->file_cuts[0] ? origin->file_cuts : NULL;
        yield = 1;
    } else {
        model = train_options_given(o, "model") ? o->model : NULL;
        cuts = o->cuts[0] ? o->cuts : NULL;
        yield = o->eval_only && !train_options_given_on_command_line(o, "model") &&
                !train_options_given_on_command_line(o, "cuts");
    }
    if (!model && !cuts)
        return ERASE_OK;
    erase_model_config_t asked = r->cfg;
    erase_model_kind_t kind;
    if (model && erase_model_config_kind(model, &kind))
        asked = erase_model_config_default(kind);
    else if (model)
        TRY(erase_model_config_load(model, &asked));
    if (model && erase_model_config_has_tables(&asked) && asked.ctr.table_rows_from_data)
        TRY(ctr_vocab_tables_of(r, &asked)); /* "data": the sizes the data's vocabulary gives */
    if (cuts)
        TRY(parse_cuts(cuts, erase_model_config_blocks(&asked), &asked.cut_mask));
    char given[2300];
    snprintf(given, sizeof given, "%s%s%s%s%s", model ? (yield ? "model " : "--model ") : "", model ? model : "",
             model && cuts ? " " : "", cuts ? (yield ? "cuts " : "--cuts ") : "", cuts ? cuts : "");
    if (yield)
        return train_ckpt_model_yield(&r->cfg, &asked, given, path, r->root,
                                      o->eval_only ? "evaluating" : "resuming");
    return train_ckpt_model_same(&r->cfg, &asked, given, path);
}

erase_status_t run_setup_model(run_t *r, int *usage)
{
    const train_options_t *o = r->o;
    erase_model_kind_t kind;
    erase_status_t st;
    const char *from = NULL; /* the checkpoint whose model this is */
    if (o->eval_only) {
        TRY(model_from_checkpoint(r));
        from = r->ckpt_path;
    } else if (r->origin && r->origin->model) {
        TRY(erase_model_config_parse_embedded(r->origin->model, r->origin->path, &r->cfg));
        from = r->origin->path;
    } else if (erase_model_config_kind(o->model, &kind))
        r->cfg = erase_model_config_default(kind);
    else if ((st = erase_model_config_load(o->model, &r->cfg)) != ERASE_OK) {
        *usage = st != ERASE_ERR_NOMEM; /* the file the user named: unreadable, or a value it cannot take */
        char why[2048];
        snprintf(why, sizeof why, "%s", erase_error_reason());
        if (!strncmp(why, o->model, strlen(o->model))) /* "FILE:LINE: key: ..." names the file already */
            return st;
        return ERASE_ERROR(st, "--model %s: %s", o->model, why); /* "cannot read model file FILE: why" */
    }
    *usage = 1;
    if (erase_model_config_has_tables(&r->cfg)) { /* before the models are compared: ids first */
        TRY(ctr_vocab_read(r)); /* shards of several vocabularies: a usage error, as it was */
        *usage = 0;             /* the data and the checkpoint differ: a failure */
        TRY(ctr_vocab_against_checkpoint(r));
        *usage = 1;
    }
    if (from)
        TRY(check_asked_model(r, from));
    if (!(r->task = train_task_find(erase_model_config_task(&r->cfg))))
        return ERASE_ERROR(ERASE_ERR_INVALID, "--model %s: erase-train has no task %s for the %s model", o->model,
                           erase_model_config_task(&r->cfg), erase_model_config_name(&r->cfg));
    if (erase_model_config_has_tables(&r->cfg)) /* ctr and dcn: table_rows = "data" */
        TRY(ctr_vocab_tables(r));
    TRY(train_embeddings_plan(&r->cfg, o->embeddings, o->embedding_optimizer, erase_comm_size(erase_emb_comm()),
                              &r->emb));
    if (o->cuts[0] && !from)
        TRY(parse_cuts(o->cuts, erase_model_config_blocks(&r->cfg), &r->cfg.cut_mask));
    if (train_options_pipeline(o))
        TRY(pipeline_model(r, from));
    *usage = 0;
    /* initialisation's seed: a model file's `seed`, unless --seed is given
     * (a checkpoint's model: the run's --seed, as it always was) */
    if (from || !r->cfg.seed_given || train_options_given(o, "seed"))
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

/* (run_state.h) */
erase_status_t split_inputs(const char *opt, const char *text, char *buf, size_t size,
                                   const char **items, int *n)
{
    snprintf(buf, size, "%s", text);
    *n = 0;
    for (char *p = buf, *comma; *n < MAX_INPUTS; p = comma + 1) {
        comma = strchr(p, ',');
        if (comma)
            *comma = 0;
        if (!*p)
            return ERASE_ERROR(ERASE_ERR_INVALID, "%s %s: an empty name in the list (expected DIR[,DIR...])",
                               opt, text);
        items[(*n)++] = p;
        if (!comma)
            break;
    }
    return ERASE_OK;
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
    int64_t d = r->w->dp_size, A = train_options_micro_steps(o);
    if (o->global_batch == 0) { /* --accumulate A: A micro-batches of --batch per rank */
        if (!erase_mul_i64(o->batch, A, &r->rank_batch) || r->rank_batch > INT_MAX ||
            !erase_mul_i64(r->rank_batch, d, &r->global_batch))
            return ERASE_ERROR(ERASE_ERR_INVALID, "--batch %lld x --accumulate %lld x %lld ranks: the global batch "
                               "is more than %lld, or a rank's more than %d", (long long)o->batch, (long long)A,
                               (long long)d, (long long)INT64_MAX, INT_MAX);
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

/* " (the global batch: --batch B x D data-parallel ranks)", or
 * " (--global-batch G)": where the global batch came from. */
/* What the shards of data format `format` are, and which models read them;
 * NULL for a format erase-train does not train on. */
static const char *shard_kind(const char *format)
{
    static const struct {
        const char *format, *what;
    } kinds[] = {
        { ERASE_CTR_FORMAT, "CTR shards (models ctr and dcn)" },
        { ERASE_CTR_FORMAT_MULTI, "multi-hot CTR shards (models ctr and dcn)" },
        { ERASE_TOK_FORMAT, "token shards (models gpt and nanochat)" },
        { ERASE_CLS_FORMAT, "classification shards (model mlp)" },
    };
    for (size_t i = 0; i < sizeof kinds / sizeof kinds[0]; i++)
        if (!strcmp(format, kinds[i].format))
            return kinds[i].what;
    return NULL;
}

/* The reader's refusal of another data format (why ends "attribute format:
 * expected \"E\", got \"G\"") in the user's terms, to append: "; these are
 * token shards (models gpt and nanochat), and the model ctr (the default:
 * no --model) reads CTR shards"; "" for any other error. */
static void format_hint(const run_t *r, const char *why, char *hint, size_t size)
{
    hint[0] = '\0';
    const char *at = strstr(why, "attribute format: expected \"");
    char expected[32], got[32];
    if (!at || sscanf(at, "attribute format: expected \"%31[^\"]\", got \"%31[^\"]\"", expected, got) != 2 ||
        !shard_kind(expected) || !shard_kind(got))
        return;
    char source[sizeof r->origin->path + sizeof r->o->model + 32];
    if (r->origin && r->origin->model) /* the model came with --resume or --init-from */
        snprintf(source, sizeof source, "of %s", r->origin->path);
    else if (r->o->eval_only)
        snprintf(source, sizeof source, "of the checkpoint");
    else if (train_options_given(r->o, "model"))
        snprintf(source, sizeof source, "--model %s", r->o->model);
    else
        snprintf(source, sizeof source, "the default: no --model");
    snprintf(hint, size, "; these are %s, and the model %s (%s) reads %s", shard_kind(got),
             erase_model_config_name(&r->cfg), source, shard_kind(expected));
}

static void batch_text(const run_t *r, char *buf, size_t size)
{
    if (r->o->global_batch)
        snprintf(buf, size, " (--global-batch %lld)", (long long)r->o->global_batch);
    else
        snprintf(buf, size, " (the global batch: --batch %lld x %d data-parallel rank%s)", (long long)r->o->batch,
                 r->w->dp_size, r->w->dp_size == 1 ? "" : "s");
}

erase_status_t run_batch_sizes(run_t *r)
{
    const train_options_t *o = r->o;
    TRY(batch_shares(r));
    int64_t least = r->global_batch / r->w->dp_size, M = train_options_micro_batches(o);
    int64_t A = train_options_micro_steps(o);
    if (A > least)
        return ERASE_ERROR(ERASE_ERR_INVALID, "--accumulate %lld: more micro-steps than the %lld samples of a "
                           "data-parallel rank's share of each global batch (%lld over %d rank%s): a micro-batch "
                           "holds at least one", (long long)A, (long long)least, (long long)r->global_batch,
                           r->w->dp_size, r->w->dp_size == 1 ? "" : "s");
    if (train_options_pipeline(o) && M > least && !o->micro_batches) /* the default: one per stage */
        return ERASE_ERROR(ERASE_ERR_INVALID, "--%s %lld: %lld sample%s per data-parallel rank, fewer than the "
                           "pipeline's %lld micro-batches (--micro-batches not given: one per stage of --pp %lld); "
                           "a micro-batch holds at least one: give a larger batch or fewer --micro-batches",
                           o->global_batch ? "global-batch" : "batch", (long long)(o->global_batch ? o->global_batch
                           : o->batch), (long long)least, least == 1 ? "" : "s", (long long)M, (long long)o->pp);
    if (train_options_pipeline(o) && M > least)
        return ERASE_ERROR(ERASE_ERR_INVALID, "--micro-batches %lld: more than the %lld samples of a data-parallel "
                           "rank's share of each global batch (%lld over %d rank%s): a micro-batch holds at least "
                           "one", (long long)M, (long long)least, (long long)r->global_batch, r->w->dp_size,
                           r->w->dp_size == 1 ? "" : "s");
    return ERASE_OK;
}

/*
 * Token data: the tokenizer of the training data into r->tokenizer (its
 * shards agree), the same as the evaluation data's and as the checkpoint's
 * the run starts from or evaluates (--resume, --init-from, --eval-only).
 */
static erase_status_t check_tokenizers(run_t *r, const char *train_list, const char *const *train_in, int n_train,
                                       const char *const *eval_in, int n_eval)
{
    const train_options_t *o = r->o;
    const char *train_opt = o->train[0] ? "train" : "eval";
    char why[2048], a[80], b[80];
    if (erase_tok_data_tokenizer(train_in, n_train, &r->tokenizer) != ERASE_OK) {
        snprintf(why, sizeof why, "%s", erase_error_reason());
        return ERASE_ERROR(ERASE_ERR_INVALID, "--%s %s: %s", train_opt, train_list, why);
    }
    if (o->eval[0] && o->train[0]) {
        erase_tok_data_tokenizer_t e;
        if (erase_tok_data_tokenizer(eval_in, n_eval, &e) != ERASE_OK) {
            snprintf(why, sizeof why, "%s", erase_error_reason());
            return ERASE_ERROR(ERASE_ERR_INVALID, "--eval %s: %s", o->eval, why);
        }
        erase_status_t st = ERASE_OK;
        if (strcmp(e.identity, r->tokenizer.identity) != 0)
            st = ERASE_ERROR(ERASE_ERR_INVALID, "--eval %s: %s (%s), the training data's is %s (%s): evaluate on "
                             "data of the same tokenizer", o->eval, erase_tok_tokenizer_name(e.identity, a, sizeof a),
                             e.path, erase_tok_tokenizer_name(r->tokenizer.identity, b, sizeof b),
                             r->tokenizer.path);
        erase_tok_data_tokenizer_free(&e);
        TRY(st);
    }
    /* the checkpoint's: read before set-up (--resume, --init-from) or evaluated (--eval-only) */
    const char *path = o->eval_only ? r->ckpt_path : r->origin && r->origin->path[0] ? r->origin->path : NULL;
    if (!path || !path[0])
        return ERASE_OK;
    char had[17];
    erase_tok_tokenizer_identity_of(o->eval_only ? r->ckpt_tokenizer : r->origin->tokenizer, had);
    if (!strcmp(had, r->tokenizer.identity))
        return ERASE_OK;
    const char *opt = o->resume[0] ? "resume" : "init-from";
    return ERASE_ERROR(ERASE_ERR_INVALID, "--%s %s: the checkpoint %s was trained on %s, the data (%s) has %s: "
                       "use shards converted with the checkpoint's tokenizer (erase-convert text --tokenizer)",
                       opt, o->resume[0] ? o->resume : o->init_from, path, erase_tok_tokenizer_name(had, a, sizeof a),
                       r->tokenizer.path, erase_tok_tokenizer_name(r->tokenizer.identity, b, sizeof b));
}

const char *run_data_option(const run_t *r, int eval)
{
    return r->score ? "DATA" : eval ? "--eval" : "--train";
}

erase_status_t run_open_readers(run_t *r)
{
    const train_options_t *o = r->o;
    erase_reader_options_t ro = erase_reader_options_default();
    ro.global_batch = r->global_batch;
    ro.dp_rank = r->w->dp_rank;
    ro.dp_size = r->w->dp_size;
    ro.seed = (uint64_t)o->seed;
    ro.shuffle = o->shuffle;
    ro.pool_blocks = o->shuffle_pool;
    ro.drop_last = !o->eval_only; /* evaluation only takes no step from it */
    ro.batch_alloc = staging_alloc;
    ro.batch_free = staging_free;
    ro.batch_ctx = r->dev;
    char train_buf[sizeof o->train], eval_buf[sizeof o->eval];
    const char *train_list = o->train[0] ? o->train : o->eval; /* --eval-only may have no --train */
    const char *train_in[MAX_INPUTS], *eval_in[MAX_INPUTS];
    int n_train, n_eval;
    TRY(split_inputs(run_data_option(r, !o->train[0]), train_list, train_buf, sizeof train_buf, train_in, &n_train));
    TRY(split_inputs(run_data_option(r, o->eval[0] != 0), o->eval[0] ? o->eval : o->train, eval_buf,
                     sizeof eval_buf, eval_in, &n_eval));
    if (!o->eval[0]) {
        ro.part = ERASE_READER_PART_TRAIN;
        ro.eval_fraction = r->eval_fraction;
    }
    const erase_row_format_t *rows = r->task->rows;
    if (r->task->rows_for) {
        r->task->rows_for(&r->cfg, &r->rows);
        rows = &r->rows;
    }
    char why[2048], batch[96] = "", hint[sizeof r->origin->path + sizeof r->o->model + 256];
    erase_status_t st = erase_reader_open(rows, train_in, n_train, &ro, &r->train);
    if (st != ERASE_OK) { /* its status kept: no memory is not the user's setting */
        snprintf(why, sizeof why, "%s", erase_error_reason()); /* the message is rewritten below */
        if (!strncmp(why, "global batch ", 13)) /* the reader's "global batch G is larger than the N samples" */
            batch_text(r, batch, sizeof batch);
        format_hint(r, why, hint, sizeof hint);
        return ERASE_ERROR(st, "%s %s: %s%s%s", run_data_option(r, !o->train[0]), train_list, why, batch, hint);
    }
    erase_reader_options_t eo = ro;
    int64_t A = o->eval_only ? 1 : train_options_micro_steps(o);
    if (A > 1) /* the network holds one micro-batch per rank: evaluations take as many */
        eo.global_batch = (r->rank_batch + A - 1) / A * r->w->dp_size;
    eo.shuffle = 0;
    eo.drop_last = 0;
    eo.part = o->eval[0] ? ERASE_READER_PART_ALL : ERASE_READER_PART_EVAL;
    if ((st = erase_reader_open(rows, eval_in, n_eval, &eo, &r->eval)) != ERASE_OK) {
        snprintf(why, sizeof why, "%s", erase_error_reason());
        return ERASE_ERROR(st, "%s %s: %s", run_data_option(r, o->eval[0] != 0), o->eval[0] ? o->eval : o->train,
                           why);
    }
    if (erase_tok_rows_is(rows))
        TRY(check_tokenizers(r, train_list, train_in, n_train, eval_in, n_eval));
    TRY(r->task->check(r->train, &r->cfg));
    /* separate evaluation data too, before any step: not at the first evaluation, hours in */
    if (o->eval[0] && r->task->check(r->eval, &r->cfg) != ERASE_OK) {
        snprintf(why, sizeof why, "%s", erase_error_reason());
        return ERASE_ERROR(ERASE_ERR_INVALID, "%s %s: %s", run_data_option(r, 1), o->eval, why);
    }
    return ERASE_OK;
}

/* One output file of rank 0 (`opt` names its option) can be written. */
static erase_status_t check_writable(const char *opt, const char *path)
{
    struct stat sb;
    int existed = stat(path, &sb) == 0;
    if (existed && !S_ISREG(sb.st_mode) && !S_ISCHR(sb.st_mode)) /* a FIFO would block open(); /dev/null is fine */
        return ERASE_ERROR(ERASE_ERR_INVALID, "--%s %s: is %s, expected a regular file", opt, path,
                           erase_mode_not_regular(sb.st_mode));
    FILE *f = fopen(path, "a");
    if (!f)
        return ERASE_ERROR(ERASE_ERR_IO, "--%s %s: cannot write: %s", opt, path, strerror(errno));
    fclose(f);
    if (!existed)
        remove(path);
    return ERASE_OK;
}

erase_status_t run_check_outputs(const run_t *r)
{
    if (!r->root)
        return ERASE_OK;
    if (r->o->metrics[0])
        TRY(check_writable("metrics", r->o->metrics));
    if (r->o->trace[0])
        TRY(check_writable("trace", r->o->trace));
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
    so.accumulate = o->eval_only ? 1 : (int)train_options_micro_steps(o);
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
    r->stages.inner_cuts = 0;
    for (int s = 0; s < r->stages.P; s++)
        for (int b = r->stages.first[s] + 1; b < r->stages.first[s + 1]; b++)
            r->stages.inner_cuts += (int)(r->cfg.cut_mask >> b & 1u);
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
    /* steps in flight (run_train_loop); local runs one at a time (lib/sched/pipe.h) */
    r->ahead = kind != PIPE_LOCAL;
    if (r->ahead) {
        TRY(train_batch_ring_create(&info.layout, r->rank_batch, 2, &r->held));
        TRY(erase_event_create(r->dev, &r->loaded));
    }
    return ERASE_OK;
}

erase_status_t run_setup_training(run_t *r)
{
    const train_options_t *o = r->o;
    static const char *const timing[] = { "early", "end" };
    static const char *const dense_opt[] = { "sgd", "adamw", "muon" };
    static const char *const emb_opt[] = { "sgd", "rowwise_adagrad" };
    static const char *const decay[] = { "constant", "cosine", "wsd" };
    static const char *const modes[] = { "off", "blocking", "async", "graph" };
    int mode, reduce, update, dense, emb, dec;
    TRY(parse_choice("early-backward", o->early_backward, modes, 4, &mode));
    TRY(parse_choice("reduce", o->reduce, timing, 2, &reduce));
    TRY(parse_choice("update", o->update, timing, 2, &update));
    TRY(parse_choice("optimizer", o->optimizer, dense_opt, 3, &dense));
    TRY(parse_choice("embedding-optimizer", o->embedding_optimizer, emb_opt, 2, &emb));
    TRY(parse_choice("lr-decay", o->lr_decay, decay, 3, &dec));

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
     * network (the optimizer's parameters) evaluates a rank batch at once.
     * Data parallel --accumulate A: the network holds one micro-batch,
     * ceil(rank batch / A), and at least an evaluation batch (their
     * reader's, run_open_readers) */
    int pipeline = train_options_pipeline(o);
    int64_t M = train_options_micro_batches(o), A = o->eval_only ? 1 : train_options_micro_steps(o);
    int micro = (int)(pipeline ? (r->rank_batch + M - 1) / M : r->rank_batch);
    int64_t net_batch = A > 1 ? (r->rank_batch + A - 1) / A : r->rank_batch;
    if (A > 1 && eval_fill > net_batch)
        net_batch = eval_fill < r->rank_batch ? eval_fill : r->rank_batch;
    if (r->emb.tables) /* sharded tables: this rank's rows only */
        TRY(erase_network_create_placed(r->dev, &r->cfg, (int)r->rank_batch, r->emb.plan, r->emb.tables,
                                        erase_comm_rank(erase_emb_comm()), &r->net));
    else
        TRY(erase_network_create(r->dev, &r->cfg, (int)net_batch, &r->net));
    erase_optim_config_t oc = erase_optim_config_default();
    oc.dense = dense == 0 ? ERASE_OPTIM_SGD : dense == 1 ? ERASE_OPTIM_ADAMW : ERASE_OPTIM_MUON;
    oc.embedding = emb == 0 ? ERASE_OPTIM_SGD : ERASE_OPTIM_ROWWISE_ADAGRAD;
    oc.schedule.base = o->lr;
    oc.schedule.warmup_steps = optimizer_steps(o, o->warmup_steps);
    oc.schedule.decay = dec == 0 ? ERASE_LR_CONSTANT : dec == 1 ? ERASE_LR_COSINE : ERASE_LR_WSD;
    oc.schedule.min = dec == 2 ? o->final_lr_fraction * o->lr : o->min_lr;
    oc.schedule.warmdown_fraction = dec == 2 ? o->warmdown_fraction : 0;
    erase_lr_schedule_set_total(&oc.schedule, optimizer_steps(o, r->total_steps));
    oc.beta1 = (float)o->beta1;
    oc.beta2 = (float)o->beta2;
    oc.eps = (float)o->eps;
    oc.embedding_lr = o->embedding_lr;
    oc.momentum = (float)o->momentum;
    oc.muon_momentum = (float)o->muon_momentum;
    oc.muon_momentum_warmup = optimizer_steps(o, o->muon_momentum_warmup);
    oc.embedding_matrix_lr = o->embedding_matrix_lr;
    oc.unembedding_lr = o->unembedding_lr;
    oc.vector_lr = o->vector_lr;
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
    if (r->task->tokenizer)
        TRY(r->task->tokenizer(r->ts, r->tokenizer.file));
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
        TRY(erase_device_sgemm_peak(r->dev, run_main_stream(r), 5, gf));
        r->peak_gflops = erase_quantile(gf, 5, 0.5);
    }
    return ERASE_OK;
}

erase_status_t run_resume_total_steps(run_t *r)
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

erase_status_t run_open_device(run_t *r)
{
    const train_options_t *o = r->o;
    erase_device_options_t dopt = erase_device_options_default();
    dopt.cores = erase_world_cores_per_rank(r->w); /* ranks on one host share its cores */
    dopt.ordinal = r->w->local_rank;
    dopt.blas_threads = (int)o->blas_threads; /* a pipeline stage's (the scheduler sets its own again) */
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

erase_status_t run_open_host_stream(run_t *r)
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

erase_status_t run_agree_setup(const run_t *r, erase_status_t st, int usage, const char *what, int *alike)
{
    int all, any, root_usage, unused;
    ERASE_CHECK(erase_world_agree(st != ERASE_OK, &all, &any));
    ERASE_CHECK(erase_world_agree(r->root && st != ERASE_OK && usage, &unused, &root_usage));
    if (any && all)
        *alike = usage ? 2 : 1;
    else if (root_usage) /* rank 0's own files (--metrics, --trace): it prints, the others end alike */
        *alike = 2;
    if (any && st == ERASE_OK)
        return root_usage ? ERASE_ERROR(ERASE_ERR_INVALID, "rank 0 could not %s", what)
                          : ERASE_ERROR(ERASE_ERR_STATE, "another rank could not %s", what);
    return st;
}

erase_status_t run_agree_on_model(const run_t *r, erase_status_t st, int usage, int *alike)
{
    char what[sizeof r->o->model + 32];
    snprintf(what, sizeof what, "set up the model (--model %s)", r->o->model);
    return run_agree_setup(r, st, usage, what, alike);
}
