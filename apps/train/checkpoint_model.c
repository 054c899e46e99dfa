/*
 * The model and run options erase-train takes from the checkpoint it
 * starts from (apps/train/checkpoint_model.h).
 */
#include "apps/train/checkpoint_model.h"

#include "lib/comm/comm.h"
#include "lib/core/status.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* The options a run takes from its checkpoint's run when not given: what
 * its training was (not its data, layout, device or output). */
static const char *const training_options[] = {
    "eval-fraction", "epochs", "steps", "optimizer", "lr", "momentum", "beta1", "beta2", "eps", "weight-decay",
    "muon-momentum", "muon-momentum-warmup", "embedding-matrix-lr", "unembedding-lr", "vector-lr",
    "grad-clip", "embedding-optimizer", "embedding-lr", "warmup-steps", "lr-decay", "min-lr", "warmdown-fraction",
    "final-lr-fraction", "eval-every", "checkpoint-every",
    "keep-checkpoints", "seed", "shuffle", "shuffle-pool", "nonfinite", NULL
};

/* The checkpoint --resume or --init-from names, opened (tensors unread)
 * as the restore picks it; *ck NULL when there is none or it does not
 * open (the error cleared: the restore reports it). */
static void open_named(const train_options_t *o, erase_ckpt_t **ck)
{
    const char *want = o->resume[0] ? o->resume : o->init_from;
    if (o->resume[0] && !strcmp(want, "auto"))
        want = o->checkpoint_dir;
    struct stat sb;
    *ck = NULL;
    erase_status_t st = stat(want, &sb) == 0 && S_ISDIR(sb.st_mode)
                            ? erase_ckpt_open_newest_flags(want, ERASE_CKPT_OPEN_LAZY_ALL, NULL, NULL, ck)
                            : erase_ckpt_open_flags(want, ERASE_CKPT_OPEN_LAZY_ALL, ck);
    if (st != ERASE_OK) {
        erase_error_clear();
        *ck = NULL;
    }
}

/* Whether what --resume names holds a pipeline checkpoint, told by its
 * stage files (ckpt-N.h5.stage1) alone: the layout is read before MPI
 * starts, and a data-parallel checkpoint, the common case, then touches no
 * HDF5 before MPI_Init. */
static int names_pipeline(const train_options_t *o)
{
    const char *want = strcmp(o->resume, "auto") ? o->resume : o->checkpoint_dir;
    char stage[ERASE_CKPT_PATH_MAX + 16];
    struct stat sb;
    if (stat(want, &sb) != 0)
        return 0;
    if (!S_ISDIR(sb.st_mode)) {
        snprintf(stage, sizeof stage, "%s.stage1", want);
        return access(stage, F_OK) == 0;
    }
    char **paths;
    int n, found = 0;
    if (erase_ckpt_candidates(want, &paths, &n) != ERASE_OK) {
        erase_error_clear();
        return 0;
    }
    for (int i = 0; i < n && !found; i++) {
        snprintf(stage, sizeof stage, "%s.stage1", paths[i]);
        found = access(stage, F_OK) == 0;
    }
    erase_ckpt_candidates_free(paths, n);
    return found;
}

erase_status_t train_ckpt_origin_read(train_options_t *o, int root, train_ckpt_origin_t *origin)
{
    memset(origin, 0, sizeof *origin);
    if (!o->resume[0] && train_ckpt_is_safetensors(o->init_from)) { /* its model, if erase-export wrote it */
        snprintf(origin->path, sizeof origin->path, "%s", o->init_from);
        return train_ckpt_import_model(o->init_from, &origin->model); /* a file that does not open: refused now */
    }
    erase_ckpt_t *ck;
    open_named(o, &ck);
    if (!ck)
        return ERASE_OK;
    const erase_ckpt_meta_t *m = erase_ckpt_meta(ck);
    erase_status_t st = ERASE_OK;
    snprintf(origin->path, sizeof origin->path, "%s", erase_ckpt_path(ck));
    if (m->model && !(origin->model = strdup(m->model)))
        st = ERASE_ERROR(ERASE_ERR_NOMEM, "%s: no memory for its model text", origin->path);
    if (st == ERASE_OK && m->tokenizer && *m->tokenizer && !(origin->tokenizer = strdup(m->tokenizer)))
        st = ERASE_ERROR(ERASE_ERR_NOMEM, "%s: no memory for its tokenizer", origin->path);
    snprintf(origin->data_vocab, sizeof origin->data_vocab, "%s", m->data_vocab ? m->data_vocab : "");
    char taken[2048] = "";
    if (st == ERASE_OK && m->model && o->resume[0] && !train_options_given_on_command_line(o, "model") &&
        !train_options_given_on_command_line(o, "cuts")) { /* the run file's model yields to the checkpoint's */
        if (train_options_given(o, "model"))
            snprintf(origin->file_model, sizeof origin->file_model, "%s", o->model);
        snprintf(origin->file_cuts, sizeof origin->file_cuts, "%s", o->cuts);
        train_options_forget(o, "model");
        train_options_forget(o, "cuts");
    }
    static const char *const model_option[] = { "model", NULL }; /* the name its run gave the model */
    if (st == ERASE_OK && m->model && m->options)
        st = train_options_adopt(o, m->options, model_option, NULL, 0);
    if (st == ERASE_OK && m->options) {
        char why[1024];
        if (train_options_adopt(o, m->options, training_options, taken, sizeof taken) != ERASE_OK) {
            snprintf(why, sizeof why, "%s", erase_error_reason()); /* the message is rewritten below */
            st = ERASE_ERROR(ERASE_ERR_INVALID, "--%s %s: %s", o->resume[0] ? "resume" : "init-from",
                             o->resume[0] ? o->resume : o->init_from, why);
        }
    }
    /* data parallel: the micro-steps of its optimizer steps (a pipeline's
     * --accumulate is its layout's, train_ckpt_layout_adopt) */
    static const char *const micro_steps_option[] = { "accumulate", NULL };
    char micro[64] = "";
    if (st == ERASE_OK && m->options && m->pp_size <= 1 && !train_options_pipeline(o) &&
        train_options_adopt(o, m->options, micro_steps_option, micro, sizeof micro) != ERASE_OK) {
        char why[1024];
        snprintf(why, sizeof why, "%s", erase_error_reason()); /* the message is rewritten below */
        st = ERASE_ERROR(ERASE_ERR_INVALID, "--%s %s: %s", o->resume[0] ? "resume" : "init-from",
                         o->resume[0] ? o->resume : o->init_from, why);
    }
    if (micro[0])
        snprintf(taken + strlen(taken), sizeof taken - strlen(taken), "%s%s", taken[0] ? "; " : "", micro);
    /* a resumed run keeps its tables' placement (tables that fit a rank only
     * sharded stay sharded); not where this run could not shard them */
    static const char *const placement_option[] = { "embeddings", NULL };
    char placed[64] = "";
    if (st == ERASE_OK && m->options && o->resume[0] && !train_options_pipeline(o) &&
        train_options_micro_steps(o) == 1 &&
        train_options_adopt(o, m->options, placement_option, placed, sizeof placed) != ERASE_OK) {
        char why[1024];
        snprintf(why, sizeof why, "%s", erase_error_reason()); /* the message is rewritten below */
        st = ERASE_ERROR(ERASE_ERR_INVALID, "--resume %s: %s", o->resume, why);
    }
    if (placed[0])
        snprintf(taken + strlen(taken), sizeof taken - strlen(taken), "%s%s", taken[0] ? "; " : "", placed);
    char pool[32];
    if (st == ERASE_OK && m->options && !train_options_given(o, "shuffle-pool") &&
        train_options_value(m->options, "shuffle_pool", pool, sizeof pool) != 0 && o->shuffle_pool != 1) {
        /* a run from before shuffle pools: its order is that of pools of one block */
        size_t used = strlen(taken);
        snprintf(taken + used, sizeof taken - used, "%sshuffle-pool 1 (a checkpoint from before shuffle pools)",
                 used ? "; " : "");
        o->shuffle_pool = 1;
    }
    if (st == ERASE_OK && !train_options_given(o, "batch") &&
        !train_options_given(o, "global-batch") && m->global_batch > 0 && m->global_batch != o->global_batch) {
        size_t used = strlen(taken);
        snprintf(taken + used, sizeof taken - used, "%sglobal-batch %lld", used ? "; " : "",
                 (long long)m->global_batch);
        o->global_batch = m->global_batch;
    }
    if (st == ERASE_OK && root && taken[0]) {
        printf("note   taken from the run of %s (not given here): %s\n", origin->path, taken);
        fflush(stdout);
    }
    erase_ckpt_close(ck);
    if (st != ERASE_OK)
        train_ckpt_origin_free(origin);
    return st;
}

erase_status_t train_ckpt_origin_agree(const train_options_t *given, train_options_t *o,
                                       train_ckpt_origin_t *origin)
{
    int all, any;
    ERASE_CHECK(erase_world_agree(origin->model == NULL, &all, &any));
    if (!any || all) /* every rank read it, or none did */
        return ERASE_OK;
    train_ckpt_origin_free(origin);
    *o = *given; /* nothing taken from it, on any rank */
    if (train_options_given(o, "model"))
        return ERASE_OK;
    return ERASE_ERROR(ERASE_ERR_INVALID, "--%s %s: the checkpoint is not readable on every rank: give --model "
                       "(and the run's options), or put the checkpoint where every rank reads it",
                       o->resume[0] ? "resume" : "init-from", o->resume[0] ? o->resume : o->init_from);
}

erase_status_t train_ckpt_layout_adopt(train_options_t *o, int root, char *from, size_t size)
{
    static const char *const layout_options[] = { "pp", "schedule", "stages", "micro-batches", "accumulate", NULL };
    from[0] = '\0';
    if (!o->resume[0] || o->eval_only || !names_pipeline(o))
        return ERASE_OK;
    erase_ckpt_t *ck;
    open_named(o, &ck);
    if (!ck)
        return ERASE_OK;
    const erase_ckpt_meta_t *m = erase_ckpt_meta(ck);
    erase_status_t st = ERASE_OK;
    char taken[1024] = "";
    if (m->pp_size > 1 && m->options) {
        for (int i = 0; layout_options[i]; i++) /* a run file's setting yields to the checkpoint's */
            if (train_options_given(o, layout_options[i]) &&
                !train_options_given_on_command_line(o, layout_options[i]))
                train_options_forget(o, layout_options[i]);
        if (train_options_adopt(o, m->options, layout_options, taken, sizeof taken) != ERASE_OK) {
            char why[1024];
            snprintf(why, sizeof why, "%s", erase_error_reason()); /* the message is rewritten below */
            st = ERASE_ERROR(ERASE_ERR_INVALID, "--resume %s: %s", o->resume, why);
        }
    }
    if (st == ERASE_OK && taken[0]) {
        snprintf(from, size, "%s", erase_ckpt_path(ck));
        if (root) {
            printf("note   the pipeline layout taken from %s (not given here): %s\n", from, taken);
            fflush(stdout);
        }
    }
    erase_ckpt_close(ck);
    return st;
}

void train_ckpt_origin_free(train_ckpt_origin_t *origin)
{
    free(origin->model);
    free(origin->tokenizer);
    origin->model = NULL;
    origin->tokenizer = NULL;
    origin->path[0] = '\0';
}

/* "ctr, 3 blocks, 2 cuts" */
static void describe(const erase_model_config_t *cfg, char *out, size_t size)
{
    int blocks = erase_model_config_blocks(cfg), cuts = __builtin_popcount(cfg->cut_mask);
    snprintf(out, size, "%s, %d block%s, %d cut%s", erase_model_config_name(cfg), blocks, blocks == 1 ? "" : "s",
             cuts, cuts == 1 ? "" : "s");
}

/* The line of model-file text `text` at `at`, its indentation and ';'
 * dropped, into out. */
static void setting_at(const char *text, const char *at, char *out, size_t size)
{
    while (at > text && at[-1] != '\n')
        at--;
    while (*at == ' ' || *at == '\t')
        at++;
    size_t n = strcspn(at, ";\n");
    snprintf(out, size, "%.*s", (int)n, at);
}

/* Whether models a and b differ (the seed aside: the run's --seed sets
 * it): *differ, and when they do, each described in was and is (kind,
 * blocks and cuts; the kind alone for `is` when the kinds differ; else
 * the first model-file setting that differs). Errors: ERASE_ERR_NOMEM. */
static erase_status_t compare(erase_model_config_t a, erase_model_config_t b, const char *path, int *differ,
                              char *was, char *is, size_t size)
{
    enum { TEXT = 1 << 16 };
    a.seed = b.seed = 0;
    char *ta = malloc(TEXT), *tb = malloc(TEXT);
    erase_status_t st = ERASE_OK;
    *differ = 0;
    if (!ta || !tb || erase_model_config_format(&a, ta, TEXT) < 0 || erase_model_config_format(&b, tb, TEXT) < 0)
        st = ERASE_ERROR(ERASE_ERR_NOMEM, "%s: no memory to compare the models", path);
    else if (strcmp(ta, tb)) {
        *differ = 1;
        describe(&a, was, size);
        describe(&b, is, size);
        if (a.kind != b.kind)
            snprintf(is, size, "%s", erase_model_config_name(&b));
        else if (!strcmp(was, is)) { /* the first setting that differs */
            size_t i = 0;
            while (ta[i] && ta[i] == tb[i])
                i++;
            char sa[400], sb[400]; /* a whole line: 26 table sizes fit */
            setting_at(ta, ta + i, sa, sizeof sa);
            setting_at(tb, tb + i, sb, sizeof sb);
            size_t used = strlen(was);
            snprintf(was + used, size - used, ", %s", sa);
            used = strlen(is);
            snprintf(is + used, size - used, ", %s", sb);
        }
    }
    free(ta);
    free(tb);
    return st;
}

erase_status_t train_ckpt_model_same(const erase_model_config_t *had, const erase_model_config_t *asked,
                                     const char *given, const char *path)
{
    char was[600], is[600];
    int differ;
    ERASE_CHECK(compare(*had, *asked, path, &differ, was, is, sizeof was));
    if (!differ)
        return ERASE_OK;
    return ERASE_ERROR(ERASE_ERR_INVALID, "%s: the checkpoint is %s; this run asks for %s (%s; without --model "
                       "and --cuts the run takes the checkpoint's model)", given, was, is, path);
}

erase_status_t train_ckpt_model_yield(const erase_model_config_t *had, const erase_model_config_t *asked,
                                      const char *given, const char *path, int root, const char *doing)
{
    char was[600], is[600];
    int differ;
    ERASE_CHECK(compare(*had, *asked, path, &differ, was, is, sizeof was));
    if (differ && root) {
        printf("note   the run file's %s differs from the checkpoint's (%s is %s; the run file's %s): %s the "
               "checkpoint's\n", given, path, was, is, doing);
        fflush(stdout);
    }
    return ERASE_OK;
}
