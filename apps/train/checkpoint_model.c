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

/* The options a run takes from its checkpoint's run when not given: what
 * its training was (not its data, layout, device or output). */
static const char *const training_options[] = {
    "eval-fraction", "epochs", "steps", "optimizer", "lr", "momentum", "weight-decay", "grad-clip",
    "embedding-optimizer", "embedding-lr", "warmup-steps", "lr-decay", "eval-every", "checkpoint-every",
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

erase_status_t train_ckpt_origin_read(train_options_t *o, int root, train_ckpt_origin_t *origin)
{
    memset(origin, 0, sizeof *origin);
    erase_ckpt_t *ck;
    open_named(o, &ck);
    if (!ck)
        return ERASE_OK;
    const erase_ckpt_meta_t *m = erase_ckpt_meta(ck);
    erase_status_t st = ERASE_OK;
    snprintf(origin->path, sizeof origin->path, "%s", erase_ckpt_path(ck));
    if (m->model && !(origin->model = strdup(m->model)))
        st = ERASE_ERROR(ERASE_ERR_NOMEM, "%s: no memory for its model text", origin->path);
    char taken[2048] = "";
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

void train_ckpt_origin_free(train_ckpt_origin_t *origin)
{
    free(origin->model);
    origin->model = NULL;
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

erase_status_t train_ckpt_model_same(const erase_model_config_t *had, const erase_model_config_t *asked,
                                     const char *given, const char *path)
{
    enum { TEXT = 1 << 16 };
    erase_model_config_t a = *had, b = *asked;
    a.seed = b.seed = 0; /* the run's --seed sets it */
    char *ta = malloc(TEXT), *tb = malloc(TEXT);
    erase_status_t st = ERASE_OK;
    if (!ta || !tb || erase_model_config_format(&a, ta, TEXT) < 0 || erase_model_config_format(&b, tb, TEXT) < 0)
        st = ERASE_ERROR(ERASE_ERR_NOMEM, "%s: no memory to compare the models", path);
    else if (strcmp(ta, tb)) {
        char was[256], is[256];
        describe(&a, was, sizeof was);
        describe(&b, is, sizeof is);
        if (a.kind != b.kind)
            snprintf(is, sizeof is, "%s", erase_model_config_name(&b));
        else if (!strcmp(was, is)) { /* the first setting that differs */
            size_t i = 0;
            while (ta[i] && ta[i] == tb[i])
                i++;
            char sa[96], sb[96];
            setting_at(ta, ta + i, sa, sizeof sa);
            setting_at(tb, tb + i, sb, sizeof sb);
            size_t used = strlen(was);
            snprintf(was + used, sizeof was - used, ", %s", sa);
            used = strlen(is);
            snprintf(is + used, sizeof is - used, ", %s", sb);
        }
        st = ERASE_ERROR(ERASE_ERR_INVALID, "%s: the checkpoint is %s; this run asks for %s (%s; without --model "
                         "and --cuts the run takes the checkpoint's model)", given, was, is, path);
    }
    free(ta);
    free(tb);
    return st;
}
